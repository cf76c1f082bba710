"""`serve.bench_sweep`: bench folders of students at sweep points become one table (sorted, `all` last, teacher
rows once), its JSON and its plot; a bench or manifest it cannot use is an error naming the file."""
import json
import shutil

from distill.config import DistillConfig, SweepPoint
from distill.export import export
from distill.select import screen, select_all
from ie.student_format import template_sha256
from serve import bench_sweep
from serve.bench_sweep import Manifest, Sweep
from tests.bench_rows import f1_row
from tests.distill_records import SCHEMA, teacher_records

DATASET = "conll04 dev 1-50"
TEACHER = f1_row("crossagentie", 0.5, 1700, 400, 300).model_copy(update={"re_f1": 20.0})


def _student(ner_f1, re_f1, invalid, p50):
    return f1_row("student", ner_f1 / 100, 300, 100, 50).model_copy(
        update={"re_f1": re_f1, "failed_calls": invalid, "latency_p50_s": p50})


def _bench(tmp_path, name, manifest, student, teachers=(TEACHER,), dataset=DATASET):
    """A bench folder whose student adapter sits in `<name>-student/`, trained (its student_config.json says) on
    `<name>-distill/dataset`, a distill output laid out as a sweep point's, with its manifest.json."""
    adapter, data = tmp_path / f"{name}-student" / "adapter.gguf", tmp_path / f"{name}-distill" / "dataset"
    adapter.parent.mkdir()
    (adapter.parent / "student_config.json").write_text(json.dumps({"config": {"data": str(data)}}))
    if manifest is not None:
        data.mkdir(parents=True)
        (data.parent / "manifest.json").write_text(json.dumps(manifest))
    folder = tmp_path / name
    folder.mkdir()
    rows = [r.as_dict() for r in [*teachers, student]]
    (folder / "bench.json").write_text(json.dumps({"dataset": dataset, "sentences": 50, "concurrency": 1,
                                                   "student_adapter": str(adapter), "rows": rows,
                                                   "teacher_target": None}))
    return str(folder)


def _manifest(per_type, ner, rel, train, template_sha256=None):
    manifest = {"sources": {}, "per_type": per_type, "settings": {"ner_per_type": ner, "re_per_type": rel, "seed": 0},
                "selection": {"records": train + 1, "train": train, "validation": 1}}
    if template_sha256:  # a manifest written before distill recorded its template has none
        manifest["template"] = {"path": "student.txt", "sha256": template_sha256}
    return manifest


def test_the_sweep_table_json_and_plot(tmp_path, capsys):
    direct = f1_row("direct", 0.3, 300, 200, 0)
    k5 = _student(45.0, 12.5, 2, 1.5).model_copy(update={"truncated_calls": 3})
    benches = [_bench(tmp_path, "k5", _manifest("5", 5, 4, 36, "b9acfbb81dee" + "0" * 52), k5),
               _bench(tmp_path, "all", _manifest("all", None, None, 88),
                      _student(50.0, 15.0, 0, 1.25).model_copy(update={"truncated_calls": None}),
                      teachers=(direct, TEACHER)),
               _bench(tmp_path, "k1", _manifest("1", 1, 1, 8), _student(20.0, 0.0, 7, 2.0)),
               _bench(tmp_path, "plain", _manifest(None, 3, 4, 20), _student(30.0, 5.0, 1, 1.0))]
    out = tmp_path / "sweep"
    assert bench_sweep.main(["--bench", *benches, "--out", str(out)]) == 0
    assert f"sweep: 4 students on {DATASET}" in capsys.readouterr().out
    table = (out / "sweep.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and "per type" not in line]
    new_tokens = TEACHER.new_tokens_per_sentence, _student(0, 0, 0, 0).new_tokens_per_sentence
    assert new_tokens == (1800, 350)
    assert rows == [f"| 1 (1/1) | 8 | 20.00 | 0.00 | 7 | 0 | 2.00 | 350 | – | {tmp_path / 'k1'} |",
                    f"| 3 (3/4) | 20 | 30.00 | 5.00 | 1 | 0 | 1.00 | 350 | – | {tmp_path / 'plain'} |",  # its ner_per_type
                    f"| 5 (5/4) | 36 | 45.00 | 12.50 | 2 | 3 | 1.50 | 350 | b9acfbb8 | {tmp_path / 'k5'} |",
                    f"| all | 88 | 50.00 | 15.00 | 0 | – | 1.25 | 350 | – | {tmp_path / 'all'} |"]  # a row saved before
    # crossagentie is in every bench with the same row: listed once; direct only in one
    assert [line for line in table.splitlines() if line.startswith("- ") and "dataset" not in line] == [
        f"- crossagentie ({tmp_path / 'k5'}): NER F1 50.00, RE F1 20.00, p50 1.00 s, 1800 new tokens a sentence",
        f"- direct ({tmp_path / 'all'}): NER F1 30.00, RE F1 0.00, p50 1.00 s, 500 new tokens a sentence"]
    sweep = Sweep.model_validate_json((out / "sweep.json").read_text())
    assert [(s.per_type, s.ner_per_type, s.re_per_type, s.train_records) for s in sweep.students] == [
        ("1", 1, 1, 8), ("3", 3, 4, 20), ("5", 5, 4, 36), ("all", None, None, 88)]
    assert sweep.students[0].adapter == str(tmp_path / "k1-student" / "adapter.gguf")
    assert sweep.dataset == DATASET and [t.method for t in sweep.teachers] == ["crossagentie", "direct"]
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_missing_manifest_is_an_error_naming_it(tmp_path, capsys):
    bench = _bench(tmp_path, "k1", None, _student(20.0, 0.0, 0, 1.0))
    assert bench_sweep.main(["--bench", bench, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'k1-distill' / 'manifest.json'}: not found" in err
    assert str(tmp_path / "k1-student" / "student_config.json") in err and not (tmp_path / "out").exists()


def test_benches_without_a_student_or_on_other_sentences_are_refused(tmp_path, capsys):
    teacher_only = tmp_path / "teacher"
    teacher_only.mkdir()
    (teacher_only / "bench.json").write_text(json.dumps({"dataset": DATASET, "rows": [TEACHER.as_dict()]}))
    assert bench_sweep.main(["--bench", str(teacher_only), "--out", str(tmp_path / "out")]) == 2
    assert f"error: {teacher_only / 'bench.json'}: no student row" in capsys.readouterr().err
    benches = [_bench(tmp_path, "k1", _manifest("1", 1, 1, 8), _student(20.0, 0.0, 0, 1.0)),
               _bench(tmp_path, "k3", _manifest("3", 3, 3, 20), _student(20.0, 0.0, 0, 1.0), dataset="conll04 dev 1-9")]
    assert bench_sweep.main(["--bench", *benches, "--out", str(tmp_path / "out")]) == 2
    assert "the benches are on different sentences (conll04 dev 1-50; conll04 dev 1-9)" in capsys.readouterr().err


def test_the_sweep_reads_the_manifest_distill_writes(tmp_path):
    cfg = DistillConfig(threshold=0.6)
    screening = screen(teacher_records(), cfg.threshold)
    export(tmp_path, screening, select_all(screening.passed, SCHEMA), SCHEMA, cfg, {}, SweepPoint(None))
    manifest = Manifest.model_validate_json((tmp_path / "manifest.json").read_text())
    assert (manifest.per_type, manifest.settings.ner_per_type, manifest.settings.re_per_type) == ("all", None, None)
    assert manifest.selection.train == 10  # 11 pass, one held out to validate
    assert manifest.template is not None and manifest.template.sha256 == template_sha256()


def test_a_saved_sweep_is_extended_with_new_benches(tmp_path, capsys):
    first = tmp_path / "first"
    k1 = _bench(tmp_path, "k1", _manifest("1", 1, 1, 8), _student(20.0, 0.0, 0, 2.0))
    k3 = _bench(tmp_path, "k3", _manifest("3", 3, 3, 24), _student(30.0, 5.0, 0, 1.0))
    assert bench_sweep.main(["--bench", k1, k3, "--out", str(first)]) == 0
    # a later session: k1's bench folder is gone; k7 is new (student only) and k3 was re-benched
    k7 = _bench(tmp_path, "k7", _manifest("7", 7, 4, 43), _student(40.0, 10.0, 1, 1.5), teachers=())
    for folder in ("k1", "k3", "k3-student", "k3-distill"):
        shutil.rmtree(tmp_path / folder)
    k3 = _bench(tmp_path, "k3", _manifest("3", 3, 3, 24), _student(35.0, 6.0, 0, 1.0), teachers=())
    out = tmp_path / "second"
    assert bench_sweep.main(["--bench", k7, k3, "--extend", str(first / "sweep.json"), "--out", str(out)]) == 0
    sweep = Sweep.model_validate_json((out / "sweep.json").read_text())
    assert [(s.per_type, s.ner_f1, s.bench) for s in sweep.students] == [
        ("1", 20.0, k1), ("3", 35.0, k3), ("7", 40.0, k7)]  # k3 replaced by its new row
    assert [(t.method, t.bench) for t in sweep.teachers] == [("crossagentie", k1)]  # kept from the saved sweep
    # a saved sweep of other sentences is refused, naming both
    other = _bench(tmp_path, "k9", _manifest("9", 9, 4, 50), _student(1.0, 1.0, 0, 1.0), dataset="conll04 dev 1-9")
    assert bench_sweep.main(["--bench", other, "--extend", str(out / "sweep.json"), "--out", str(out)]) == 2
    assert "different sentences (conll04 dev 1-50; conll04 dev 1-9)" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert bench_sweep.main(["--bench", k7, "--extend", str(tmp_path / "bad.json"), "--out", str(out)]) == 2
    assert f"error: {tmp_path / 'bad.json'}: not a sweep.json" in capsys.readouterr().err
