"""Student soups: the soup's weight change is exactly the weighted mean of its members', as peft reads it, and
students that cannot be averaged are refused naming the folder. (Slow: llama.cpp serving a soup, in
test_student_gguf_lora.py.)"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from student.soup import SOUP_RECORD, SoupError, main, make_soup
from tests.random_lora import TARGETS, save_random_adapter


def merged_weights(base: Path, adapter: Path | None) -> dict[str, torch.Tensor]:
    """The base's linear weights with `adapter` merged in by peft (the same seeded base every time)."""
    from peft import PeftModel
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(123)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base))
    if adapter is not None:
        model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    return {name: p.detach().clone() for name, p in model.named_parameters() if name.endswith("proj.weight")}


def test_the_soup_is_the_weighted_mean_of_the_members_weight_changes(tmp_path):
    one = save_random_adapter(tmp_path, "qwen2", "one", seed=1)
    two = save_random_adapter(tmp_path, "qwen2", "two", seed=2, r=8, lora_alpha=4, use_rslora=True)
    base = tmp_path / "base"
    soup = make_soup([one, two], tmp_path / "soup", weights=[1, 3])
    config = json.loads((soup / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], config["use_rslora"]) == (12, 12, False)
    assert json.loads((soup / SOUP_RECORD).read_text())["members"][1]["weight"] == 0.75
    assert (soup / "adapter.gguf").is_file()
    untouched, with_one, with_two, souped = (merged_weights(base, a) for a in (None, one, two, soup))
    changed = 0
    for name, weight in untouched.items():
        delta_one, delta_two = with_one[name] - weight, with_two[name] - weight
        torch.testing.assert_close(souped[name], weight + 0.25 * delta_one + 0.75 * delta_two)
        changed += bool(delta_one.abs().sum() > 0)
    assert changed == 2 * len(TARGETS)  # every adapted layer was compared, and it did change


def test_equal_weights_by_default_and_from_the_command_line(tmp_path, capsys):
    members = [save_random_adapter(tmp_path, "qwen2", name, seed=i) for i, name in enumerate(("a", "b", "c"))]
    assert main([*map(str, members), "--out", str(tmp_path / "soup"), "--no-gguf"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "soup")
    record = json.loads((tmp_path / "soup" / SOUP_RECORD).read_text())
    assert [m["weight"] for m in record["members"]] == [pytest.approx(1 / 3)] * 3 and record["rank"] == 12
    assert not (tmp_path / "soup" / "adapter.gguf").exists()


@pytest.mark.parametrize("change, message", [
    ({"target_modules": ["q_proj"]}, "adapts other layers"),
    ({"base": "elsewhere"}, "base_model_name_or_path 'elsewhere'"),
])
def test_students_that_cannot_be_averaged_are_refused(tmp_path, change, message):
    one = save_random_adapter(tmp_path, "qwen2", "one", seed=1)
    two = save_random_adapter(tmp_path, "qwen2", "two", seed=2, target_modules=change.get("target_modules", TARGETS))
    if "base" in change:
        path = two / "adapter_config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "base_model_name_or_path": change["base"]}))
    with pytest.raises(SoupError, match=message) as error:
        make_soup([one, two], tmp_path / "soup")
    assert str(two) in str(error.value)
    assert not (tmp_path / "soup").exists()  # nothing half-written


@pytest.mark.parametrize("weights, message", [([1], "1 weights for 2 students"), ([1, 0], "above 0")])
def test_bad_weights_are_refused(tmp_path, weights, message):
    members = [save_random_adapter(tmp_path, "qwen2", name, seed=i) for i, name in enumerate(("a", "b"))]
    with pytest.raises(SoupError, match=message):
        make_soup(members, tmp_path / "soup", weights=weights)


def test_a_soup_does_not_overwrite_a_student(tmp_path):
    members = [save_random_adapter(tmp_path, "qwen2", name, seed=i) for i, name in enumerate(("a", "b"))]
    before = (members[0] / "adapter_model.safetensors").read_bytes()
    with pytest.raises(SoupError, match="is one of the students"):
        make_soup(members, members[0])
    assert (members[0] / "adapter_model.safetensors").read_bytes() == before


def test_one_student_is_not_a_soup(tmp_path):
    with pytest.raises(SoupError, match="at least two"):
        make_soup([tmp_path], tmp_path / "soup")
