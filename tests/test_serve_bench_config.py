"""`serve.bench_config`: settings that cannot run are refused before any server starts."""


from serve import bench


def test_student_needs_an_adapter_or_endpoint(tmp_path, capsys):
    assert bench.main(["--methods", "student", "--out", str(tmp_path)]) == 2
    assert "needs --student-adapter" in capsys.readouterr().err


def test_the_student_used_is_the_endpoint_s_model_or_else_the_adapter_file():
    adapter = bench.BenchConfig(methods=["student"], student_adapter="runs/k5/adapter.gguf")
    assert adapter.student_used() == "runs/k5/adapter.gguf"
    served = bench.BenchConfig(methods=["student"], student_adapter="runs/k5/adapter.gguf",
                               student_endpoint="http://h/v1", student_model="k5")
    assert served.student_used() == "k5 at http://h/v1"  # the endpoint is what the bench asks
