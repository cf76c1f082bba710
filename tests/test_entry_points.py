"""Every entry point takes its settings the same way (`ie.cli`): the dataclass default, then the dataset
config's section, then the flag given. A section key that is no setting is refused naming the file and the
key, an abbreviated flag is refused (argparse's prefix matching would take `--max-round` for `--max-rounds`):
a typo is an error, never another setting; and every flag shows its help and default."""
import argparse
import dataclasses
import importlib
from pathlib import Path

import pytest
import yaml

from distill.config import DistillConfig
from ie.config import CONFIGS_DIR, ConfigError
from serve.bench import BenchConfig
from teacher.config import TeacherConfig


@dataclasses.dataclass(frozen=True)
class EntryPoint:
    module: str
    settings: type
    section: str
    work: str  # "module.function" the settings are handed to once resolved: replaced by `_capture` here
    setting: str  # an int setting, and a section value and a flag value other than its default
    values: tuple[int, int]

    def argv(self, config: Path, tmp_path: Path) -> list[str]:
        """The flags a run needs (the teacher's after its `run` subcommand)."""
        if self.module == "teacher.__main__":
            return ["--config", str(config), "--split", "dev"]
        if self.module == "distill.__main__":
            (tmp_path / "teacher").mkdir(exist_ok=True)
            (tmp_path / "teacher" / "predictions.jsonl").write_text("")
            return ["--teacher", str(tmp_path / "teacher"), "--config", str(config), "--out", str(tmp_path / "o")]
        return ["--config", str(config), "--out", str(tmp_path / "o")]

    def main(self, argv: list[str]) -> int:
        command = ["run"] if self.module == "teacher.__main__" else []
        return importlib.import_module(self.module).main(command + argv)

    def parser(self) -> argparse.ArgumentParser:
        """The parser holding the settings' flags (the teacher's `run` subcommand)."""
        parser = importlib.import_module(self.module).build_parser()
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return subs[0].choices["run"] if subs else parser


ENTRY_POINTS = [
    EntryPoint("teacher.__main__", TeacherConfig, "teacher", "teacher.runner.run", "max_tokens", (64, 32)),
    EntryPoint("distill.__main__", DistillConfig, "distill", "distill.__main__.load_exclusion", "ner_per_type", (2, 3)),
    EntryPoint("serve.bench", BenchConfig, "bench", "serve.bench_run.run_bench", "concurrency", (3, 2)),
]


IDS = [e.section for e in ENTRY_POINTS]


class Captured(Exception):
    def __init__(self, cfg: object) -> None:
        self.cfg = cfg


def _capture(*args: object) -> None:
    """Stands in for the entry point's work: stops it with the settings it was handed."""
    raise Captured(next(a for a in args if dataclasses.is_dataclass(a)))


def _config(tmp_path: Path, section: str, **changes: object) -> Path:
    """configs/conll04.yaml with `section:` changed (a value of None drops the key)."""
    data = yaml.safe_load((CONFIGS_DIR / "conll04.yaml").read_text(encoding="utf-8"))
    data.setdefault(section, {}).update(changes)
    data[section] = {k: v for k, v in data[section].items() if v is not None}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _settings(entry: EntryPoint, tmp_path: Path, monkeypatch, flags: list[str], **changes: object):
    monkeypatch.setattr(entry.work, _capture)
    argv = entry.argv(_config(tmp_path, entry.section, **changes), tmp_path) + flags
    with pytest.raises(Captured) as info:
        entry.main(argv)
    assert isinstance(info.value.cfg, entry.settings)
    return info.value.cfg


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=IDS)
def test_the_section_overrides_the_default_and_a_flag_the_section(entry, tmp_path, monkeypatch):
    default = next(f.default for f in dataclasses.fields(entry.settings) if f.name == entry.setting)
    in_yaml, in_flag = entry.values
    assert default not in entry.values
    flag = ["--" + entry.setting.replace("_", "-"), str(in_flag)]
    assert getattr(_settings(entry, tmp_path, monkeypatch, [], **{entry.setting: None}), entry.setting) == default
    assert getattr(_settings(entry, tmp_path, monkeypatch, [], **{entry.setting: in_yaml}), entry.setting) == in_yaml
    assert getattr(_settings(entry, tmp_path, monkeypatch, flag, **{entry.setting: in_yaml}), entry.setting) == in_flag


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=IDS)
def test_an_unknown_section_key_is_refused_naming_the_file_and_the_key(entry, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(entry.work, _capture)
    config = _config(tmp_path, entry.section, colour=1)
    try:
        assert entry.main(entry.argv(config, tmp_path)) == 2
        error = capsys.readouterr().err
    except ConfigError as exc:  # distill lets it through
        error = str(exc)
    assert f"{config}: {entry.section}.colour: unknown setting; known: [" in error


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=IDS)
def test_every_abbreviated_setting_flag_is_refused(entry, tmp_path, capsys):
    parser = entry.parser()
    flags = {s for a in parser._actions for s in a.option_strings}
    argv = entry.argv(tmp_path / "c.yaml", tmp_path)
    for f in dataclasses.fields(entry.settings):
        abbreviated = "--" + f.name.replace("_", "-")[:-1]
        if abbreviated in flags:
            continue
        with pytest.raises(SystemExit) as info:
            parser.parse_args([*argv, abbreviated, "1"])
        assert info.value.code == 2 and f"unrecognized arguments: {abbreviated}" in capsys.readouterr().err


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=IDS)
def test_every_setting_is_a_flag_showing_its_help_and_default(entry):
    actions = {a.dest: a for a in entry.parser()._actions}
    for f in dataclasses.fields(entry.settings):
        help_text = actions[f.name].help
        assert f.metadata["help"] and help_text.startswith(f.metadata["help"] + " (default ")


def _parse(module: str, argv: list[str]) -> None:
    importlib.import_module(module).build_parser().parse_args(argv)


def _main(module: str, argv: list[str]) -> None:
    importlib.import_module(module).main(argv)


CASES = [
    ("teacher.__main__", _parse, ["run", "--max-round", "1"], "--max-round"),
    ("serve.client", _parse, ["--endpoint", "u", "--model", "m", "--input", "i", "--config", "c", "--out", "o",
                              "--max-token", "5"], "--max-token"),
    ("serve.bench", _parse, ["--method", "direct"], "--method"),
    ("serve.vllm", _parse, ["--base", "b", "--prin"], "--prin"),
    ("serve.local", _parse, ["--adapt", "x.gguf"], "--adapt"),
    ("serve.bench_sweep", _parse, ["--bench", "b", "--out", "o", "--benc", "c"], "--benc"),
    ("ie.llm.__main__", _parse, ["check", "--max-token", "5"], "--max-token"),
    ("ie.datasets.__main__", _parse, ["stats", "conll04", "--spli", "dev"], "--spli"),
    ("ie.score", _parse, ["--gold", "g", "--pred", "p", "--baseli", "b"], "--baseli"),
    ("distill.__main__", _parse, ["--teacher", "t", "--config", "c", "--out", "o", "--thresh", "0.5"], "--thresh"),
    ("student.gguf_lora", _main, ["adapter_dir", "--dtyp", "f16"], "--dtyp"),
]


@pytest.mark.parametrize(("module", "call", "argv", "flag"), CASES, ids=[c[0] for c in CASES])
def test_abbreviated_flags_are_refused(module, call, argv, flag, capsys):
    with pytest.raises(SystemExit) as info:
        call(module, argv)
    assert info.value.code == 2 and f"unrecognized arguments: {flag}" in capsys.readouterr().err


def test_trl_entry_points_refuse_abbreviated_flags(tmp_path):
    pytest.importorskip("trl")
    from train_student import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--data", "d", "--max_step", "3"])
    train = tmp_path / "train.jsonl"
    train.write_text("{}\n")
    from student import openai_ft

    with pytest.raises(ValueError, match="--dry-ru"):  # HfArgumentParser names the arguments it did not use
        openai_ft.main(["--train", str(train), "--dry-ru"])


PARSERS = ["teacher.__main__", "serve.client", "serve.bench", "serve.vllm", "serve.local", "ie.llm.__main__",
           "ie.datasets.__main__", "ie.score", "distill.__main__", "serve.bench_sweep"]


def _actions(parser: argparse.ArgumentParser, name: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                yield from _actions(subparser, f"{name} {sub}")
        elif not isinstance(action, argparse._HelpAction):
            yield name, action


@pytest.mark.parametrize("module", PARSERS)
def test_every_flag_has_help_text(module):
    actions = list(_actions(importlib.import_module(module).build_parser(), module))
    missing = [f"{name} {a.option_strings or a.dest}" for name, a in actions if not (a.help or "").strip()]
    assert actions and not missing
