"""Seconds an optimizer step of the student's training on this machine, for one precision and micro-batch.

    PYTHONPATH=. python scripts/train_step_probe.py --data runs/sweep/per_type_all/dataset \
        --precision bf16 [--micro-batch 1 --examples-per-step 4 --steps 7]

Builds the trainer exactly as `train_student.py` does (`student.train.build_trainer`), trains `--steps` optimizer
steps of `--examples-per-step` examples (micro-batch x accumulation) from the start of the data, saves nothing,
and prints one JSON line: each step's seconds, the mean of all but the first, and the logged losses (the same
data and seed, so two precisions can be compared step by step). Run it alone: another process on the cores
makes every time meaningless.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="the distill stage's DatasetDict folder (or a train JSONL)")
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto")
    parser.add_argument("--micro-batch", type=int, default=1, help="examples a forward pass")
    parser.add_argument("--examples-per-step", type=int, default=4, help="a multiple of --micro-batch")
    parser.add_argument("--steps", type=int, default=7, help="optimizer steps; the first is reported apart")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    args = parser.parse_args(argv)
    if args.examples_per_step % args.micro_batch or args.steps < 2:
        parser.error("--examples-per-step must be a multiple of --micro-batch, and --steps at least 2")

    from transformers import TrainerCallback

    from student.base_model import resolve_base_model
    from student.config import StudentConfig
    from student.train import build_trainer, resolve_device

    times: list[float] = []

    class StepTimes(TrainerCallback):
        def on_step_begin(self, *_args, **_kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, *_args, **_kwargs):
            times.append(time.perf_counter() - self.start)

    with tempfile.TemporaryDirectory() as out:
        cfg = StudentConfig(data=args.data, model=args.model, output_dir=out, max_steps=args.steps,
                            per_device_train_batch_size=args.micro_batch,
                            gradient_accumulation_steps=args.examples_per_step // args.micro_batch,
                            logging_steps=1, eval_steps=args.steps + 1, save_steps=args.steps + 1,
                            precision=args.precision)
        device = resolve_device(cfg)
        trainer = build_trainer(cfg, device, resolve_base_model(cfg.model))
        trainer.add_callback(StepTimes())
        trainer.train()
    print(json.dumps({"precision": device.precision, "micro_batch": args.micro_batch,
                      "examples_per_step": args.examples_per_step, "step_s": [round(t, 1) for t in times],
                      "mean_after_first_s": round(sum(times[1:]) / len(times[1:]), 1),
                      "loss": [round(h["loss"], 4) for h in trainer.state.log_history if "loss" in h]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
