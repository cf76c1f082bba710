"""Fine-tune the student (LoRA SFT with TRL) on the distill stage's chat examples.

    accelerate launch train_student.py --config configs/student.yaml --data runs/distill/sft
    python train_student.py --config configs/student.yaml --data runs/distill/sft.jsonl --max_steps 3

Every field of `student.config.StudentConfig` is a flag (`--help` lists them); flags override the YAML.
Multi-GPU: `accelerate launch --config_file configs/accelerate/ddp.yaml train_student.py ...` (or fsdp.yaml).
"""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence


def build_parser():
    from trl import TrlParser

    from student.config import StudentConfig

    return TrlParser(dataclass_types=[StudentConfig], description=__doc__.splitlines()[0], allow_abbrev=False)


def main(argv: Sequence[str] | None = None) -> int:
    from student.train import train

    (cfg,) = build_parser().parse_args_and_config(list(sys.argv[1:] if argv is None else argv))
    result = train(cfg)
    print(json.dumps({"adapter_dir": str(result.adapter_dir), "merged_dir": str(result.merged_dir or ""),
                      "gguf_adapter": str(result.gguf_adapter or ""), **result.metrics}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
