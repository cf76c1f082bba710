"""`DistillConfig`: the `distill:` section of a dataset config, overridden by CLI flags, validated up front.

Every field's help text becomes its CLI flag's help (`add_arguments`), so the YAML keys and the flags are the
same names (`ner_per_type` <-> `--ner-per-type`).
"""
from __future__ import annotations

import argparse
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ie.config import ConfigError


class DistillConfigError(ConfigError):
    """A bad `distill:` setting; the message names the file and field."""


def _int_list(value: str) -> list[int]:
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {value!r}") from None


@dataclass
class DistillConfig:
    threshold: float = field(default=0.6, metadata={
        "help": "minimum teacher confidence for the record and every one of its entities/relations"})
    max_failed_calls: int = field(default=0, metadata={
        "help": "failed teacher calls a record may have had and still be used"})
    ner_per_type: int = field(default=5, metadata={"help": "records chosen per entity type"})
    re_per_type: int = field(default=4, metadata={"help": "records chosen per relation type"})
    seed: int = field(default=0, metadata={"help": "seed for tie-breaks and the train/validation split"})
    validation_fraction: float = field(default=0.1, metadata={
        "help": "share of the chosen records held out as the validation split (at least one when > 0)"})
    exclude_splits: list[str] = field(default_factory=lambda: ["dev", "test"], metadata={
        "help": "dataset splits whose sentences (by id and by text) never enter training", "cli": False})
    exclude: list[Path] = field(default_factory=list, metadata={
        "help": "record files (any ie.datasets input) whose sentences never enter training; repeatable",
        "flag": "--exclude", "action": "append", "type": Path})
    sweep_ner_per_type: list[int] = field(default_factory=list, metadata={
        "help": "comma-separated ner_per_type values; writes one subfolder ner<k>/ each (Figure 2)",
        "type": _int_list})
    openai_model: str | None = field(default=None, metadata={
        "help": "OpenAI model the train.jsonl is checked and priced for (default: student.openai_ft's)",
        "type": str})

    def __post_init__(self) -> None:
        self.exclude = [Path(p) for p in self.exclude]
        checks = [
            ("threshold", 0.0 <= self.threshold <= 1.0, "must be within [0, 1]"),
            ("max_failed_calls", self.max_failed_calls >= 0, "must be >= 0"),
            ("ner_per_type", self.ner_per_type >= 0, "must be >= 0"),
            ("re_per_type", self.re_per_type >= 0, "must be >= 0"),
            ("ner_per_type", self.ner_per_type + self.re_per_type > 0,
             "ner_per_type and re_per_type are both 0: nothing would be selected"),
            ("validation_fraction", 0.0 <= self.validation_fraction < 0.5, "must be within [0, 0.5)"),
            ("sweep_ner_per_type", all(k >= 1 for k in self.sweep_ner_per_type), "values must be >= 1"),
        ]
        for name, ok, fix in checks:
            if not ok:
                raise DistillConfigError(f"distill.{name} = {getattr(self, name)!r}: {fix}")

    @classmethod
    def from_sources(cls, section: dict[str, Any], overrides: dict[str, Any], source: str = "<config>"
                     ) -> DistillConfig:
        """YAML `distill:` section, then the non-None CLI overrides; unknown keys name the file and field."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - known)
        if unknown:
            raise DistillConfigError(f"{source}: distill.{unknown[0]}: unknown field; known: {sorted(known)}")
        merged = {**section, **{k: v for k, v in overrides.items() if k in known and v is not None}}
        try:
            return cls(**merged)
        except TypeError as exc:
            raise DistillConfigError(f"{source}: distill: {exc}") from None
        except DistillConfigError as exc:
            raise DistillConfigError(f"{source}: {exc}") from None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["exclude"] = [str(p) for p in self.exclude]
        return data


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per config field (default None: unset flags leave the YAML value alone)."""
    for f in fields(DistillConfig):
        meta = f.metadata
        if meta.get("cli") is False:
            continue
        flag = meta.get("flag", "--" + f.name.replace("_", "-"))
        kind = meta.get("type") or (f.type if f.default is not MISSING else str)
        kind = {"float": float, "int": int, "str": str}.get(kind, kind) if isinstance(kind, str) else kind
        parser.add_argument(flag, dest=f.name, default=None, type=kind, action=meta.get("action", "store"),
                            help=meta["help"])
