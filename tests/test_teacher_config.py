"""`teacher.config`: bad values are refused naming the field, moved settings say where they went."""
import pytest

from ie.config import ConfigError
from teacher.config import TeacherConfig


def test_config_rejects_bad_values_naming_the_field():
    with pytest.raises(ConfigError, match="teacher.method"):
        TeacherConfig(method="magic")
    with pytest.raises(ConfigError, match="teacher.model_name"):
        TeacherConfig(endpoint="http://x/v1")
    with pytest.raises(ConfigError, match="teacher.concurrency"):
        TeacherConfig(concurrency=0)
    with pytest.raises(ConfigError, match="teacher.summarizer: one of"):
        TeacherConfig(summarizer="vote")
    with pytest.raises(ConfigError, match="teacher.route_top_k: ranks scores"):
        TeacherConfig(routing="on", route_top_k=4)  # route_by answer names types; it has no scores to rank
    with pytest.raises(ConfigError, match="teacher.route_by: menu routes by rank"):
        TeacherConfig(routing="on", route_by="menu")  # its letters' probabilities sum to 1: no threshold suits them
    with pytest.raises(ConfigError, match="teacher.colour"):
        TeacherConfig.from_sources({"colour": 1}, {})
    assert TeacherConfig.from_sources({"max_rounds": 3}, {"max_rounds": 1, "seed": None}).max_rounds == 1


def test_mention_rules_moved_to_the_dataset_config_and_defaults_suit_a_new_schema():
    for name in ("require_capital_or_digit", "max_mention_words"):
        with pytest.raises(ConfigError, match=rf"teacher.{name}: moved to the dataset config's `mentions:`"):
            TeacherConfig.from_sources({name: 5}, {})
    cfg = TeacherConfig()
    assert (cfg.summarizer, cfg.max_rounds, cfg.re_mode) == ("likelihood", 0, None)


def test_yaml_off_and_on_read_as_the_modes():
    assert TeacherConfig(routing=False).routing == "off" and TeacherConfig(routing=True).routing == "on"
