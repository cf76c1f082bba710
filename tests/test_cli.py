"""Every entry point refuses an abbreviated flag (argparse's prefix matching would take `--max-round` for
`--max-rounds`, or `--adapt` for `--adapter`): a typo is an error, never another setting."""
import importlib

import pytest


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


# --- every flag says what it does; unknown config keys are refused naming the field ---

import argparse  # noqa: E402

PARSERS = ["teacher.__main__", "serve.client", "serve.bench", "serve.vllm", "serve.local", "ie.llm.__main__",
           "ie.datasets.__main__", "ie.score", "distill.__main__"]


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


def test_bench_flags_show_their_help_and_default(capsys, monkeypatch):
    from serve import bench

    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside the help lines
    with pytest.raises(SystemExit):
        bench.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--fresh re-run every method and bypass the call cache, so latencies are real (default False)" in text
    assert "(default direct,type-agents,crossagentie)" in text and "--verbose" in text


def test_bench_refuses_an_unknown_bench_key_naming_it(tmp_path, capsys):
    from serve import bench

    config = tmp_path / "c.yaml"
    config.write_text((importlib.import_module("ie.config").CONFIGS_DIR / "conll04.yaml").read_text()
                      .replace("  price_as: gpt-4o-mini\n", "  price_as: gpt-4o-mini\n  limt: 5\n"))
    assert bench.main(["--config", str(config), "--out", str(tmp_path / "out")]) == 2
    assert f"error: {config}: bench.limt: unknown setting" in capsys.readouterr().err


def test_student_config_refuses_an_unknown_yaml_key(tmp_path):
    pytest.importorskip("trl")
    from train_student import build_parser

    data = tmp_path / "train.jsonl"
    data.write_text("{}\n")
    config = tmp_path / "student.yaml"
    config.write_text(f"data: {data}\nlearning_rat: 0.1\n")
    with pytest.raises(ValueError, match="Unknown arguments from config file: .*--learning_rat"):
        build_parser().parse_args_and_config(["--config", str(config)])
