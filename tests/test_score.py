"""`python -m ie.score`: its JSON keys and table, the baseline bootstrap, and files that do not belong together
refused."""
import json

import pytest

from ie import score as score_cli
from ie.schema import write_records
from tests.score_cases import GOLD, TEXT2, rec


def test_cli_json_keys_and_table(tmp_path, capsys):
    gold, pred = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    write_records(gold, GOLD)
    write_records(pred, [GOLD[0], rec("stray", "x")])
    assert score_cli.main(["--gold", str(gold), "--pred", str(pred), "--json", "--config", "conll04"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert set(result) == {"ner", "re", "errors", "records", "unmatched_predictions", "match"}
    assert result["match"] == {"matched": 1, "missing": {"count": 1, "first": ["r2"]},
                               "extra": {"count": 1, "first": ["stray"]}}
    assert set(result["ner"]["micro"]) == {"precision", "recall", "f1", "tp", "fp", "fn"}
    assert result["re"]["mode"] == "strict" and "Kill" in result["re"]["per_type"]
    assert set(result["errors"]) >= {"boundary", "wrong_type", "missing", "spurious"}
    assert "warning: prediction ids not in gold (ignored): 1 (first: stray)" in captured.err
    assert "warning: gold records with no prediction (scored as empty): 1 (first: r2)" in captured.err
    assert score_cli.main(["--gold", str(gold), "--pred", str(pred), "--re-mode", "boundaries"]) == 0
    table = capsys.readouterr().out
    assert "RE (boundaries)" in table and "gold records with no prediction (scored as empty): 1 (first: r2)" in table
    assert score_cli.main(["--gold", str(gold), "--pred", str(pred), "--json", "--config", "nyt"]) == 0
    assert json.loads(capsys.readouterr().out)["re"]["mode"] == "strings"  # the config's `score:` default
    assert score_cli.main(["--gold", str(tmp_path / "none.jsonl"), "--pred", str(pred)]) == 1


def test_cli_baseline_bootstrap_pairs_records_by_gold_id(tmp_path, capsys):
    gold, pred, base = tmp_path / "g.jsonl", tmp_path / "p.jsonl", tmp_path / "b.jsonl"
    write_records(gold, GOLD)
    write_records(pred, GOLD[::-1])  # order must not matter: records pair by id
    write_records(base, [GOLD[0], rec("r2", TEXT2)])  # r2 empty: all its entities and its relation are misses
    assert score_cli.main(["--gold", str(gold), "--pred", str(pred), "--baseline", str(base), "--json",
                           "--resamples", "100"]) == 0
    difference = json.loads(capsys.readouterr().out)["baseline"]["difference"]
    assert difference["ner"]["f1_a"] == pytest.approx(2 / 3) and difference["ner"]["f1_b"] == 1.0
    assert difference["re"]["difference"] == pytest.approx(1 / 3) and difference["re"]["resamples"] == 100
    assert score_cli.main(["--gold", str(gold), "--pred", str(pred), "--baseline", str(base)]) == 0
    assert "NER F1 minus baseline: +33.33 (100.00 against 66.67), 95% interval" in capsys.readouterr().out


def test_cli_refuses_files_that_do_not_belong_together(tmp_path, capsys):
    gold, pred, base = tmp_path / "g.jsonl", tmp_path / "p.jsonl", tmp_path / "b.jsonl"
    write_records(gold, GOLD)

    def score(*extra):
        code = score_cli.main(["--gold", str(gold), "--pred", str(pred), *extra])
        return code, capsys.readouterr()

    write_records(pred, [GOLD[0], rec("r2", "Al works for Acme Corp .")])  # same id, another text
    code, out = score()
    assert code == 1 and "record 'r2'" in out.err and "do not belong together" in out.err and not out.out
    write_records(pred, [rec("a", "x"), rec("b", "y")])  # no id in gold
    code, out = score()
    assert code == 1 and "no prediction matches a record of" in out.err and "'a'" in out.err
    write_records(pred, [])
    code, out = score()
    assert code == 1 and "holds no record" in out.err
    write_records(pred, GOLD)
    write_records(base, [GOLD[0]])  # the baseline lacks r2
    code, out = score("--baseline", str(base))
    assert code == 1 and "--baseline: record 'r2' is in" in out.err and str(base) in out.err
    write_records(base, [*GOLD, rec("r3", "z")])  # the baseline has a record --pred lacks
    code, out = score("--baseline", str(base))
    assert code == 1 and "record 'r3' is in" in out.err
    write_records(base, [GOLD[0], rec("r2", "Al works for Acme Corp .")])  # same ids, another text
    code, out = score("--baseline", str(base))
    assert code == 1 and "record 'r2': the prediction" in out.err and "baseline" in out.err


def test_a_baseline_bootstrap_on_too_few_records_warns_that_it_is_no_evidence(tmp_path, capsys):
    gold, pred, base = tmp_path / "g.jsonl", tmp_path / "p.jsonl", tmp_path / "b.jsonl"
    write_records(gold, GOLD[:1])
    write_records(pred, GOLD[:1])
    write_records(base, [rec(GOLD[0].id, GOLD[0].text)])  # the baseline found nothing
    assert score_cli.main(["--gold", str(gold), "--pred", str(pred), "--baseline", str(base)]) == 0
    captured = capsys.readouterr()
    assert "interval +100.00 to +100.00" in captured.out
    assert ("warning: the bootstrap has 1 record: too few for its interval to mean anything (at least 30); the "
            "difference is no evidence either way") in captured.err
