"""`serve.bench_config`: settings that cannot run are refused before any server starts."""


from serve import bench


def test_student_needs_an_adapter_or_endpoint(tmp_path, capsys):
    assert bench.main(["--methods", "student", "--out", str(tmp_path)]) == 2
    assert "needs --student-adapter" in capsys.readouterr().err
