"""The multi-agent teacher (CrossAgentIE §3) and its baselines, on one harness.

    from teacher import TeacherConfig, label_records, run
    records = await label_records(records, "crossagentie", schema, client, TeacherConfig())
    out_dir = run(TeacherConfig(split="dev", limit=50, out="runs/x"))
"""
from __future__ import annotations

from typing import Any

__all__ = ["METHODS", "TeacherConfig", "label_records", "run"]


def __getattr__(name: str) -> Any:
    # Lazy: `python -m teacher --help` and config validation need none of the client stack.
    if name == "TeacherConfig":
        from teacher.config import TeacherConfig
        return TeacherConfig
    if name in ("label_records", "run"):
        from teacher import runner
        return getattr(runner, name)
    if name == "METHODS":
        from teacher.methods import METHODS
        return METHODS
    raise AttributeError(f"module 'teacher' has no attribute {name!r}")
