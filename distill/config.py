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
    sweep_ner_per_type: list[int] = opt([], "comma-separated ner_per_type values; writes one subfolder ner<k>/ "
                                        "each (Figure 2)")
    openai_model: str | None = opt(None, "OpenAI model the train.jsonl is checked and priced for (None: "
                                   "student.openai_ft's)")

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

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["exclude"] = [str(p) for p in self.exclude]
        return data

