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
