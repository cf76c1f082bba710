"""`distill.config`: the `distill:` section and flags, and their errors naming the field."""

import pytest

from distill.config import DistillConfig, DistillConfigError
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
