"""The README is a guide a user follows: its schema example loads, and every module, script and config file its
commands name exists."""
import importlib.util
import re
from pathlib import Path

from ie.config import load_config

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(kind: str | None = None) -> list[str]:
    """The fenced code blocks (of one info string, e.g. "yaml"), in order."""
    blocks, lines, info = [], None, ""
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```") and lines is None:
            lines, info = [], line[3:].strip()
        elif line.startswith("```"):
            if kind is None or info == kind:
                blocks.append("\n".join(lines) + "\n")
            lines = None
        elif lines is not None:
            lines.append(line)
    return blocks


def test_readme_is_a_short_guide():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_the_schema_example_loads(tmp_path):
    [example] = _blocks("yaml")
    path = tmp_path / "contracts.yaml"
    path.write_text(example, encoding="utf-8")
    config = load_config(path)
    assert set(config.task_schema.entity_types) == {"Party", "Date"}
    assert set(config.task_schema.relation_types) == {"Signed_On"}


def test_every_command_names_something_that_exists():
    commands = "\n".join(_blocks())
    modules = set(re.findall(r"python -m ([\w.]+)", commands))
    assert {"teacher", "distill", "serve.bench", "serve.client", "ie.score"} <= modules
    for module in modules:
        assert importlib.util.find_spec(module) is not None, module
    root = README.parent
    for path in set(re.findall(r"\b((?:scripts|configs)/[\w./-]+\.(?:sh|yaml))", commands)):
        assert (root / path).exists(), path
