"""`ie.fine_tune_plan`: the token estimate and OpenAI's default epochs."""
from ie.fine_tune_plan import default_epochs, estimate_tokens


def test_token_heuristic_and_epoch_rule():
    assert estimate_tokens([{"role": "user", "content": "x" * 40}]) == 3 + 4 + 10
    assert (default_epochs(10), default_epochs(1000), default_epochs(20_000)) == (10, 3, 1)
