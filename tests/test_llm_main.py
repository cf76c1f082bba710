"""`python -m ie.llm check`: an endpoint that does not answer is reported in one line."""

from fault_server import closed_port


def test_check_command_reports_an_unanswered_call_in_one_line(capsys):
    from ie.llm.__main__ import main as llm_main

    assert llm_main(["check", "--endpoint", f"http://127.0.0.1:{closed_port()}/v1", "--model-name", "m"]) == 1
    assert "error: no answer (connection error)" in capsys.readouterr().err
