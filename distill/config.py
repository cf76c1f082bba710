"""`DistillConfig`: the `distill:` section of a dataset config, overridden by CLI flags, validated up front.

Every field's help text becomes its CLI flag's help (`ie.cli`), so the YAML keys and the flags are the same
names (`ner_per_type` <-> `--ner-per-type`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ie.cli import opt
from ie.config import ConfigError


class DistillConfigError(ConfigError):
    """A bad `distill:` setting; the message names the file and field."""


ALL = "all"


@dataclass(frozen=True)
class SweepPoint:
    """One point of `sweep_per_type`: `k` records per entity type and min(k, re_per_type) per relation type, or
    every record that passes screening (`k` None, written `all`)."""
    k: int | None

    @classmethod
    def parse(cls, value: str) -> SweepPoint:
        if value == ALL:
            return cls(None)
        if not (value.isascii() and value.isdigit() and int(value) >= 1):
            raise DistillConfigError(f"distill.sweep_per_type: {value!r} is neither a positive integer nor {ALL!r}")
        return cls(int(value))

    @property
    def label(self) -> str:
        """`5` or `all`: the manifest's `per_type`."""
        return ALL if self.k is None else str(self.k)

    @property
    def folder(self) -> str:
        return "per_type_all" if self.k is None else f"per_type{self.k}"

    def caps(self, cfg: DistillConfig) -> tuple[int, int] | None:
        """(ner_per_type, re_per_type) at this point; None for `all`, which has no cap."""
        return None if self.k is None else (self.k, min(self.k, cfg.re_per_type))

    def settings(self, cfg: DistillConfig) -> dict[str, Any]:
        """`cfg`'s settings as this point ran them: its caps (None for `all`), no sweep of its own."""
        ner, rel = self.caps(cfg) or (None, None)
        return {**cfg.as_dict(), "ner_per_type": ner, "re_per_type": rel, "sweep_per_type": []}


@dataclass
class DistillConfig:
    threshold: float = opt(0.6, "minimum teacher confidence for the record and every one of its entities/relations")
    max_failed_calls: int = opt(0, "failed teacher calls a record may have had and still be used")
    ner_per_type: int = opt(5, "records chosen per entity type")
    re_per_type: int = opt(4, "records chosen per relation type")
    seed: int = opt(0, "seed for tie-breaks and the train/validation split")
    validation_fraction: float = opt(0.1, "share of the chosen records held out as the validation split (at least "
                                     "one when > 0)")
    exclude_splits: list[str] = opt(["dev", "test"], "comma-separated dataset splits whose sentences (by id and by "
                                    "text) never enter training")
    exclude: list[Path] = opt([], "record files (any ie.datasets input) whose sentences never enter training; "
                              "comma-separated or repeated")
    sweep_per_type: list[str] = opt([], "comma-separated points, each a positive integer k or `all`, written to "
                                    "per_type<k>/ (per_type_all/) each (Figure 2). Point k takes k records per "
                                    "entity type and min(k, re_per_type) per relation type, so 5 gives the "
                                    "paper's 5 per entity type and 4 per relation type at the default "
                                    "re_per_type 4; `all` takes every record that passes screening")
    openai_model: str | None = opt(None, "OpenAI model the train.jsonl is checked and priced for (None: "
                                   "student.openai_ft's)")

    def __post_init__(self) -> None:
        self.exclude = [Path(p) for p in self.exclude]
        self.sweep_per_type = [str(v).strip() for v in self.sweep_per_type]  # YAML gives `[1, 3, all]`
        checks = [
            ("threshold", 0.0 <= self.threshold <= 1.0, "must be within [0, 1]"),
            ("max_failed_calls", self.max_failed_calls >= 0, "must be >= 0"),
            ("ner_per_type", self.ner_per_type >= 0, "must be >= 0"),
            ("re_per_type", self.re_per_type >= 0, "must be >= 0"),
            ("ner_per_type", self.ner_per_type + self.re_per_type > 0,
             "ner_per_type and re_per_type are both 0: nothing would be selected"),
            ("validation_fraction", 0.0 <= self.validation_fraction < 0.5, "must be within [0, 0.5)"),
        ]
        for name, ok, fix in checks:
            if not ok:
                raise DistillConfigError(f"distill.{name} = {getattr(self, name)!r}: {fix}")
        self.sweep_points()

    def sweep_points(self) -> list[SweepPoint]:
        """`sweep_per_type` parsed; empty when there is no sweep."""
        return [SweepPoint.parse(v) for v in self.sweep_per_type]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["exclude"] = [str(p) for p in self.exclude]
        return data

