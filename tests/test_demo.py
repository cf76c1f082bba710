"""`make demo` on a fresh machine: the Makefile's exact demo command, against the scripted OpenAI-compatible
server (`../shared/tools/fake_openai.py --oracle`: it answers with the examples' gold mentions), with
`CROSSAGENTIE_DATA` an empty folder: the demo needs no dataset."""
import os
import re
import subprocess
import sys

import pytest

from ie.config import REPO_ROOT
from tests.long_texts import needs_fake

EXAMPLES = REPO_ROOT / "ie" / "configs" / "examples"


def demo_command() -> list[str]:
    """The demo target's recipe, its `$(BIN)/python` this interpreter."""
    recipe = re.search(r"^demo:.*\n\t(.+)$", (REPO_ROOT / "Makefile").read_text(encoding="utf-8"), re.M).group(1)
    assert recipe.startswith("$(BIN)/python "), recipe
    return [sys.executable, *recipe.split()[1:]]


@needs_fake
def test_make_demo_labels_the_shipped_examples_and_prints_the_model_a_table_and_the_viewers(fake, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.jsonl"))))
    server = fake("--oracle", str(gold))
    (tmp_path / "data").mkdir()
    env = {**os.environ, "CROSSAGENTIE_DATA": str(tmp_path / "data"), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([*demo_command(), "--endpoint", server.url, "--model-name", "fake"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == f"model: fake (at {server.url})"
    # The oracle gives every type agent every gold mention: each text's mentions are found (typed by the debate).
    assert any(line.startswith("news ") and "World Health Organization" in line for line in lines)
    assert any(line.startswith("science ") and "graph attention network" in line for line in lines)
    assert any(line.startswith("medicine ") and "Metformin" in line for line in lines)
    assert any(line.startswith("F1 against the examples' gold: medicine NER") for line in lines)
    viewers = [line.removeprefix("viewer: ") for line in lines if line.startswith("viewer: ")]
    assert len(viewers) == 3
    for path in viewers:  # each run's page, with the debate of each mention (tests/test_viewer.py opens one)
        assert '"proposed_by": [{"agent": "ner:' in open(path, encoding="utf-8").read()


def test_the_demo_command_is_the_readme_s_first_one():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.index("make demo") < 2000


@pytest.mark.parametrize("config", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_each_example_domain_has_its_schema_and_texts_with_gold(config):
    from ie.config import load_config
    from ie.datasets import load_input

    schema = load_config(config).task_schema
    records = load_input(config.with_suffix(".jsonl"))
    assert 1 <= len(records) <= 3 and all(r.entities for r in records)
    assert {e.type for r in records for e in r.entities} <= set(schema.entity_types)
