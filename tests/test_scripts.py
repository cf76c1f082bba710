"""The pipeline's shell scripts: their argument checks, run for real (nothing heavy starts: each stops first)."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_script(name: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(ROOT / "scripts" / name), *args], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", **env})


@pytest.mark.parametrize("script", ["train_student.sh", "make_teacher_data.sh", "gpu_check.sh"])
def test_scripts_parse(script):
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)]).returncode == 0
    if shutil.which("shellcheck"):
        check = subprocess.run(["shellcheck", str(ROOT / "scripts" / script)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout


@pytest.mark.parametrize("args, missing", [((), "CONFIG"), (("configs/scierc.yaml",), "TEACHER_RUN")])
def test_train_student_needs_the_config_and_the_teacher_run(args, missing):
    done = run_script("train_student.sh", *args, PYTHON="false")
    assert done.returncode != 0 and missing in done.stderr and "usage: bash scripts/train_student.sh" in done.stderr


def test_train_student_passes_the_config_through(tmp_path):
    log = tmp_path / "argv"
    fake = tmp_path / "python"
    fake.write_text(f'#!/usr/bin/env bash\necho "$*" >> {log}\n')
    fake.chmod(0o755)
    done = run_script("train_student.sh", "configs/scierc.yaml", "runs/t", str(tmp_path / "s"), "--max_steps", "2",
                      PYTHON=str(fake))
    assert done.returncode == 0, done.stderr
    distill, train = log.read_text().splitlines()
    assert distill == f"-m distill --teacher runs/t --config configs/scierc.yaml --out {tmp_path}/s/data"
    assert train.endswith(f"--output_dir {tmp_path}/s --max_steps 2")


def test_make_teacher_data_needs_the_config():
    done = run_script("make_teacher_data.sh", "--limit", "1", PYTHON="false")
    assert done.returncode == 2 and "pass --config CONFIG" in done.stderr


@pytest.mark.parametrize("config, texts", [("configs/conll04.yaml", 6), ("configs/scierc.yaml", 6),
                                           ("configs/conll2003.yaml", 4)])
def test_gpu_check_dry_run_makes_the_examples_from_the_schema_and_plans_every_step(tmp_path, config, texts):
    import sys

    done = run_script("gpu_check.sh", "--dry-run", "--config", config, "--out", str(tmp_path), PYTHON=sys.executable)
    assert done.returncode == 0, done.stderr
    from ie.chat_examples import read_chat_jsonl
    from ie.config import load_config

    schema = load_config(ROOT / config).task_schema
    examples = read_chat_jsonl(tmp_path / "data" / "train.jsonl")
    lines = (tmp_path / "data" / "texts.txt").read_text().splitlines()
    assert len(examples) == 2 * len(lines) == 2 * texts
    for ex, text in zip(examples, lines * 2):
        assert any(m["role"] == "user" and text in m["content"] for m in ex)
        answer = json.loads(ex[-1]["content"])
        # [text, type] entities, [head, (head type,) relation, tail (, tail type)] relations
        assert answer["entities"] and all(mention in text and etype in schema.entity_types
                                          for mention, etype in answer["entities"])
        assert all(r[len(r) // 2] in schema.relation_types for r in answer["relations"])
    relations = [json.loads(ex[-1]["content"])["relations"] for ex in examples]
    named = {rels[0][len(rels[0]) // 2] for rels in relations if rels}
    assert named == set(list(schema.relation_types)[:texts])  # one sentence a relation type, up to the cap
    plan = [line for line in done.stderr.splitlines() if line.startswith("+ timeout ")]
    trains = [line for line in plan if "train_student.py" in line]
    assert len(trains) == 2 and "--precision bf16" in trains[0] and "--load_in_4bit true" in trains[1]
    assert any("-m serve.vllm" in line and "bf16=" in line and "qlora=" in line for line in plan)
    assert sum("-m serve.client" in line and f"--config {config}" in line for line in plan) == 2
    assert not (tmp_path / "bf16").exists()  # nothing past the examples ran


def test_gpu_check_refuses_an_unknown_argument():
    done = run_script("gpu_check.sh", "--frobnicate", PYTHON="false")
    assert done.returncode == 2 and "unknown argument --frobnicate" in done.stderr
