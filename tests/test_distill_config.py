"""`distill.config`: the `distill:` section and flags, and their errors naming the field."""

import pytest

from distill.config import DistillConfig, DistillConfigError, SweepPoint
from ie.cli import from_sources
from ie.config import ConfigError


def test_config_sources_and_errors():
    def load(section, flags):
        return from_sources(DistillConfig, "distill", section, flags, "configs/x.yaml")

    cfg = load({"threshold": 0.7, "ner_per_type": 3}, {"ner_per_type": 6, "seed": None})
    assert (cfg.threshold, cfg.ner_per_type, cfg.seed) == (0.7, 6, 0)
    with pytest.raises(ConfigError, match=r"configs/x.yaml: distill.treshold: unknown setting"):
        load({"treshold": 0.7}, {})
    with pytest.raises(DistillConfigError, match=r"configs/x.yaml: distill.threshold = 1.5: must be within"):
        load({"threshold": 1.5}, {})
    with pytest.raises(ConfigError, match=r"configs/x.yaml: distill: '<=' not supported"):
        load({"threshold": "high"}, {})


def test_sweep_points_are_positive_integers_or_all():
    cfg = DistillConfig(sweep_per_type=[1, "5", "all"], re_per_type=4)  # YAML gives ints
    assert cfg.sweep_per_type == ["1", "5", "all"]
    assert cfg.sweep_points() == [SweepPoint(1), SweepPoint(5), SweepPoint(None)]
    assert [(p.label, p.folder, p.caps(cfg)) for p in cfg.sweep_points()] == [
        ("1", "per_type1", (1, 1)), ("5", "per_type5", (5, 4)), ("all", "per_type_all", None)]
    for bad in ("0", "-2", "three", "1.5"):
        with pytest.raises(DistillConfigError, match=rf"configs/x.yaml: distill.sweep_per_type: '{bad}' is neither"):
            from_sources(DistillConfig, "distill", {"sweep_per_type": ["3", bad]}, {}, "configs/x.yaml")
