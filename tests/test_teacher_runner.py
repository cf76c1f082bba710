"""The run: output folder, resuming without repeating calls, report and metrics, config and CLI errors."""
import json

import pytest

from ie.config import ConfigError
from ie.llm.cache import CallCache
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport
from ie.schema import Record, read_records, write_records
from teacher.__main__ import main
from teacher.config import TeacherConfig
from teacher.runner import run

GOLD = [
    Record(id="a", text="Dole met Reagan in Rome .", entities=[
        {"start": 0, "end": 4, "type": "Peop", "text": "Dole"}, {"start": 9, "end": 15, "type": "Peop", "text": "Reagan"},
        {"start": 19, "end": 23, "type": "Loc", "text": "Rome"}]),
    Record(id="b", text="NASA is in Houston .", entities=[
        {"start": 0, "end": 4, "type": "Org", "text": "NASA"}, {"start": 11, "end": 18, "type": "Loc", "text": "Houston"}],
        relations=[{"head": 0, "tail": 1, "type": "OrgBased_In"}]),
    Record(id="c", text="Paris is big .", entities=[{"start": 0, "end": 5, "type": "Loc", "text": "Paris"}]),
]


def direct_answer(request):
    text = request.messages[1]["content"]
    names = [w for w in ("Dole", "Reagan", "Rome", "NASA", "Houston", "Paris") if f"{w} " in text.split("<text>")[1]]
    return json.dumps({"entities": [{"text": n, "type": "Loc", "confidence": 0.8} for n in names]})


def setup(tmp_path, **overrides):
    data = tmp_path / "gold.jsonl"
    write_records(data, GOLD)
    cfg = TeacherConfig(input=str(data), method="direct", out=str(tmp_path / "out"), progress=False, **overrides)
    transport = ScriptedTransport(direct_answer)
    return cfg, transport


def client(transport, out):
    return LLMClient([transport], cache=CallCache(out / "calls.sqlite"))


def test_run_writes_predictions_config_metrics_and_report(tmp_path):
    cfg, transport = setup(tmp_path, api_key_env="SECRET_KEY_VAR")
    out = run(cfg, client(transport, cfg.out_dir))
    preds = read_records(out / "predictions.jsonl")
    assert sorted(p.id for p in preds) == ["a", "b", "c"]
    assert all(set(p.model_extra) >= {"debate", "stats", "confidence"} for p in preds)
    saved = json.loads((out / "config.json").read_text())
    assert saved["method"] == "direct" and saved["api_key_env"] == "SECRET_KEY_VAR"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ner"]["micro"]["tp"] == 3 and metrics["teacher"]["per_record"]["calls"] == 1
    report = (out / "report.md").read_text()
    assert "## NER (strict)" in report and "| Loc |" in report and "Cost per record" in report


def test_rerun_skips_finished_records_and_a_killed_run_repeats_no_call(tmp_path):
    cfg, transport = setup(tmp_path)
    run(cfg, client(transport, cfg.out_dir))
    assert len(transport.requests) == 3
    run(cfg, client(transport, cfg.out_dir))
    assert len(transport.requests) == 3  # everything finished: skipped
    preds = cfg.out_dir / "predictions.jsonl"
    lines = preds.read_text().splitlines()
    preds.write_text("\n".join(lines[:1]) + "\n")  # as if killed with two records in flight
    run(cfg, client(transport, cfg.out_dir))
    assert len(transport.requests) == 3  # relabelled from the call cache
    redone = [r for r in read_records(preds)][1:]
    assert len(redone) == 2 and all(r.model_extra["stats"]["cached_calls"] == 1 for r in redone)


def test_resuming_with_settings_that_change_labels_is_refused(tmp_path):
    cfg, transport = setup(tmp_path)
    run(cfg, client(transport, cfg.out_dir))
    cfg2, _ = setup(tmp_path, seed=7, limit=2)
    with pytest.raises(ConfigError, match="seed=0, not 7"):
        run(cfg2, client(transport, cfg.out_dir))


def test_config_rejects_bad_values_naming_the_field():
    with pytest.raises(ConfigError, match="teacher.method"):
        TeacherConfig(method="magic")
    with pytest.raises(ConfigError, match="teacher.model_name"):
        TeacherConfig(endpoint="http://x/v1")
    with pytest.raises(ConfigError, match="teacher.concurrency"):
        TeacherConfig(concurrency=0)
    with pytest.raises(ConfigError, match="teacher.summarizer: one of"):
        TeacherConfig(summarizer="vote")
    with pytest.raises(ConfigError, match="teacher.colour"):
        TeacherConfig.from_sources({"colour": 1}, {})
    assert TeacherConfig.from_sources({"max_rounds": 3}, {"max_rounds": 1, "seed": None}).max_rounds == 1


def test_cli_reports_config_errors_without_starting_a_server(capsys, tmp_path):
    assert main(["run", "--split", "dev", "--input", "x.txt", "--out", str(tmp_path)]) == 2
    assert "exactly one of --split" in capsys.readouterr().err
    assert main(["run", "--split", "dev", "--endpoint", "http://localhost:1/v1"]) == 2
    assert "--model-name" in capsys.readouterr().err


def test_mention_rules_moved_to_the_dataset_config_and_defaults_suit_a_new_schema():
    for name in ("require_capital_or_digit", "max_mention_words"):
        with pytest.raises(ConfigError, match=rf"teacher.{name}: moved to the dataset config's `mentions:`"):
            TeacherConfig.from_sources({name: 5}, {})
    cfg = TeacherConfig()
    assert (cfg.summarizer, cfg.max_rounds, cfg.re_mode) == ("likelihood", 0, None)


def test_report_scores_as_the_config_s_score_section_says(tmp_path):
    from ie.config import load_config, resolve_config_path
    from teacher.report import write_report

    nyt = load_config(resolve_config_path("nyt"))
    text = "Reykjavik is in Iceland ; Iceland ."
    ents = [{"start": 0, "end": 9, "type": "Entity", "text": "Reykjavik"},
            {"start": 16, "end": 23, "type": "Entity", "text": "Iceland"},
            {"start": 26, "end": 33, "type": "Entity", "text": "Iceland"}]
    gold = [Record(id="g", text=text, entities=ents[:2],
                   relations=[{"head": 1, "tail": 0, "type": "/location/location/contains"}])]
    # The same triple on the other "Iceland": right as strings, wrong in strict mode.
    pred = [Record(id="g", text=text, entities=[ents[0], ents[2]],
                   relations=[{"head": 1, "tail": 0, "type": "/location/location/contains"}])]
    metrics = write_report(tmp_path, gold, pred, nyt, TeacherConfig(config="nyt"))
    assert metrics["re"]["mode"] == "strings" and metrics["re"]["micro"]["tp"] == 1
    assert "RE (strings)" in (tmp_path / "report.md").read_text()
    strict = write_report(tmp_path, gold, pred, nyt, TeacherConfig(config="nyt", re_mode="strict"))
    assert strict["re"]["micro"]["tp"] == 0


def test_resuming_after_the_mention_rules_changed_is_refused(tmp_path):
    from ie.config import resolve_config_path

    config = tmp_path / "conll04.yaml"
    config.write_text(resolve_config_path("conll04").read_text())
    cfg, transport = setup(tmp_path, config=str(config))
    run(cfg, client(transport, cfg.out_dir))
    assert json.loads((cfg.out_dir / "config.json").read_text())["mentions"]["max_words"] == 5
    config.write_text(config.read_text().replace("  max_words: 5", "  max_words: 6"))
    with pytest.raises(ConfigError, match="holds a run with mentions="):
        run(cfg, client(transport, cfg.out_dir))
