"""`serve.bench_config`: settings that cannot run are refused before any server starts."""


from serve import bench


def test_student_needs_an_adapter_or_endpoint(tmp_path, capsys):
    assert bench.main(["--methods", "student", "--out", str(tmp_path)]) == 2
    assert "needs --student-adapter" in capsys.readouterr().err


def test_the_student_used_is_the_endpoint_s_model_or_else_the_merged_or_adapter_file():
    adapter = bench.BenchConfig(methods=["student"], student_adapter="runs/k5/adapter.gguf")
    assert adapter.student_used() == "runs/k5/adapter.gguf"
    merged = bench.BenchConfig(methods=["student"], student_gguf="runs/k5/student.gguf")
    assert merged.student_used() == "runs/k5/student.gguf"  # beside the adapter: the sweep finds its manifest
    served = bench.BenchConfig(methods=["student"], student_endpoint="http://h/v1", student_model="k5")
    assert served.student_used() == "k5 at http://h/v1"


def test_two_students_at_once_are_refused(tmp_path, capsys):
    argv = ["--methods", "student", "--student-adapter", "a.gguf", "--student-gguf", "m.gguf", "--out", str(tmp_path)]
    assert bench.main(argv) == 2
    assert "--student-adapter and --student-gguf name two students" in capsys.readouterr().err


def test_a_base_model_without_an_adapter_is_refused(tmp_path, capsys):
    argv = ["--methods", "student", "--student-gguf", "m.gguf", "--student-base", "smollm2-135m", "--out", str(tmp_path)]
    assert bench.main(argv) == 2
    assert "--student-base is the base of --student-adapter; --student-gguf brings its own model" in (
        capsys.readouterr().err)
