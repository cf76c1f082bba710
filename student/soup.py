"""Average several students of one base into one LoRA adapter: a model soup (Wortsman et al., 2022) served at the
cost of one student.

    python -m student.soup runs/student-a runs/student-b [--weights 0.5 0.5] --out runs/student-soup

Students fine-tuned from the same base on the same task (checkpoints of one run, or runs on nested label sets) often
generalise better averaged than alone; students of disjoint parts of the labels did not (docs/RESULTS.md).
The average is exact, not an approximation: the soup concatenates the members' ranks, A = [A_1; ...; A_n] and
B = [w_1 s_1 B_1, ..., w_n s_n B_n] with s_i the member's LoRA scale, and takes alpha = rank (scale 1), so
B A = sum_i w_i s_i B_i A_i, the weighted mean of the members' weight changes (peft's
`add_weighted_adapter(combination_type="cat")` does the same with the base model loaded). The soup is a plain peft
adapter of rank sum(r_i), exported to adapter.gguf for llama.cpp like a trained one.
"""
from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from student.gguf_lora import PEFT_PREFIX, effective_alpha, export_gguf_lora, lora_pairs, read_lora_config

COPIED_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")
SOUP_RECORD = "soup.json"  # the members and their weights, next to the adapter


class SoupError(ValueError):
    """The students cannot be averaged into one adapter; the message names the folder and the field."""


def soup_weights(members: Sequence[Path], weights: Sequence[float] | None) -> list[float]:
    """The members' weights, summing to 1: equal by default, else `weights` normalised (each must be > 0)."""
    if weights is None:
        return [1 / len(members)] * len(members)
    if len(weights) != len(members):
        raise SoupError(f"--weights: {len(weights)} weights for {len(members)} students")
    if any(w <= 0 for w in weights):
        raise SoupError(f"--weights: every weight must be above 0, got {list(weights)}")
    total = sum(weights)
    return [w / total for w in weights]


def make_soup(members: Sequence[str | Path], out_dir: str | Path, weights: Sequence[float] | None = None,
              export_gguf: bool = True, base: str | Path | None = None) -> Path:
    """Write the weighted mean of `members`' LoRA adapters to `out_dir` (a peft adapter folder) and, unless
    `export_gguf` is off, `out_dir/adapter.gguf` (`base`: as `export_gguf_lora`'s)."""
    import torch
    from safetensors.torch import load_file, save_file

    members = [Path(m) for m in members]
    if len(members) < 2:
        raise SoupError("a soup needs at least two student folders")
    shares = soup_weights(members, weights)
    if Path(out_dir).resolve() in {m.resolve() for m in members}:
        raise SoupError(f"--out {out_dir}: is one of the students; write the soup to a folder of its own")
    configs = [read_lora_config(m) for m in members]
    pairs = [lora_pairs(load_file(str(m / "adapter_model.safetensors")), m) for m in members]
    first, first_config = members[0], configs[0]
    for member, config, member_pairs in zip(members[1:], configs[1:], pairs[1:]):
        if config["base_model_name_or_path"] != first_config["base_model_name_or_path"]:
            raise SoupError(f"{member}/adapter_config.json: base_model_name_or_path "
                            f"{config['base_model_name_or_path']!r} is not {first}'s "
                            f"{first_config['base_model_name_or_path']!r}; a soup averages students of one base")
        if set(member_pairs) != set(pairs[0]):
            raise SoupError(f"{member}: adapts other layers than {first} (target_modules "
                            f"{config['target_modules']} against {first_config['target_modules']})")
    scales = [share * effective_alpha(config) / config["r"] for share, config in zip(shares, configs)]
    tensors = {}
    for module in pairs[0]:
        lora_a = torch.cat([member_pairs[module][0].float() for member_pairs in pairs], dim=0)
        lora_b = torch.cat([scale * member_pairs[module][1].float()
                            for scale, member_pairs in zip(scales, pairs)], dim=1)
        tensors[f"{PEFT_PREFIX}{module}.lora_A.weight"] = lora_a.contiguous()
        tensors[f"{PEFT_PREFIX}{module}.lora_B.weight"] = lora_b.contiguous()
    rank = sum(config["r"] for config in configs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out_dir / "adapter_model.safetensors"))
    soup_config = {**first_config, "r": rank, "lora_alpha": rank, "use_rslora": False}  # layers: checked equal
    (out_dir / "adapter_config.json").write_text(json.dumps(soup_config, indent=2) + "\n")
    for name in COPIED_FILES:
        if (first / name).is_file():
            shutil.copyfile(first / name, out_dir / name)
    record = {"members": [{"adapter": str(m.resolve()), "weight": share} for m, share in zip(members, shares)],
              "rank": rank}
    (out_dir / SOUP_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    if export_gguf:
        export_gguf_lora(out_dir, out_dir / "adapter.gguf", base)
    return out_dir


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Average students of one base into one LoRA adapter (a model "
                                     "soup) and export it for llama.cpp.", allow_abbrev=False)
    parser.add_argument("members", nargs="+", type=Path, help="student folders (adapter_config.json + "
                        "adapter_model.safetensors), e.g. train_student.py's output_dir or one of its checkpoints")
    parser.add_argument("--out", type=Path, required=True, help="folder of the soup adapter")
    parser.add_argument("--weights", type=float, nargs="+", help="one weight per student (default: equal)")
    parser.add_argument("--no-gguf", action="store_true", help="skip OUT/adapter.gguf")
    parser.add_argument("--base", type=Path, help="base model's HF directory, for the GGUF export (default: from "
                        "adapter_config.json)")
    args = parser.parse_args(argv)
    try:
        out = make_soup(args.members, args.out, args.weights, export_gguf=not args.no_gguf, base=args.base)
    except SoupError as error:
        parser.error(str(error))
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
