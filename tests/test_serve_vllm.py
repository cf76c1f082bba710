import json
import shlex

import pytest

from serve.vllm import (
    STRUCTURED_OUTPUT_NOTES,
    ServeSpec,
    VllmError,
    adapter_rank,
    build_command,
    main,
    parse_adapter,
    supported_rank,
)


def adapter(tmp_path, name: str, r: int, rank_pattern=None):
    path = tmp_path / name
    path.mkdir()
    cfg = {"r": r, "lora_alpha": 2 * r, "base_model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}
    if rank_pattern:
        cfg["rank_pattern"] = rank_pattern
    (path / "adapter_config.json").write_text(json.dumps(cfg))
    return path


@pytest.mark.parametrize("rank,allowed", [(1, 1), (4, 8), (8, 8), (17, 32), (300, 320), (512, 512)])
def test_rank_rounds_up_to_a_vllm_value(rank, allowed):
    assert supported_rank(rank) == allowed


def test_rank_too_large_is_an_error():
    with pytest.raises(VllmError, match="exceeds vLLM's largest --max-lora-rank 512"):
        supported_rank(1024)


def test_rank_read_from_adapter_config(tmp_path):
    assert adapter_rank(adapter(tmp_path, "a", 16)) == 16
    assert adapter_rank(adapter(tmp_path, "b", 8, {"q_proj": 48})) == 48
    with pytest.raises(VllmError, match="adapter_config.json: not found"):
        adapter_rank(tmp_path / "missing")
    with pytest.raises(VllmError, match="GGUF adapter is for llama.cpp"):
        adapter_rank(tmp_path / "student.gguf")


def test_command_for_several_adapters(tmp_path):
    spec = ServeSpec("Qwen/Qwen2.5-0.5B-Instruct", {"student": tmp_path / "s", "b": tmp_path / "b"},
                     port=9000, tensor_parallel_size=2, data_parallel_size=4, extra=["--max-model-len", "4096"])
    cmd = build_command(spec, {"student": 16, "b": 40})
    assert cmd == ["vllm", "serve", "Qwen/Qwen2.5-0.5B-Instruct", "--host", "127.0.0.1", "--port", "9000",
                   "--enable-lora", "--lora-modules", f"student={tmp_path / 's'}", f"b={tmp_path / 'b'}",
                   "--max-lora-rank", "64", "--max-loras", "2", "--tensor-parallel-size", "2",
                   "--data-parallel-size", "4", "--max-model-len", "4096"]


def test_single_adapter_default_parallelism_flags_left_out(tmp_path):
    cmd = build_command(ServeSpec("m", {"student": tmp_path}), {"student": 8})
    assert "--tensor-parallel-size" not in cmd and "--data-parallel-size" not in cmd
    assert cmd[cmd.index("--max-loras") + 1] == "1"
    with pytest.raises(VllmError, match="no --adapter"):
        build_command(ServeSpec("m", {}), {})


def test_main_print_needs_no_vllm(tmp_path, capsys):
    a, b = adapter(tmp_path, "a", 16), adapter(tmp_path, "b", 32)
    assert main(["--base", "m", "--adapter", f"student={a}", "--adapter", f"b={b}", "--print",
                 "--", "--max-model-len", "2048"]) == 0
    out, err = capsys.readouterr()
    cmd = shlex.split(out.strip())
    assert cmd[:3] == ["vllm", "serve", "m"] and cmd[-2:] == ["--max-model-len", "2048"]
    assert cmd[cmd.index("--max-lora-rank") + 1] == "32"
    assert err.strip() == STRUCTURED_OUTPUT_NOTES
    assert "structured_outputs" in err and "guided_json" in err and "json_schema" in err


@pytest.mark.parametrize("flags,message", [
    (["--adapter", "student"], "expected NAME=PATH"),
    (["--adapter", "s=a", "--adapter", "s=b"], "same NAME"),
])
def test_main_rejects_bad_adapters(flags, message, tmp_path):
    with pytest.raises(SystemExit, match=message):
        main(["--base", "m", "--print", *flags])
    assert parse_adapter("x=y/z") == ("x", tmp_path.__class__("y/z"))
