"""`ie.llm.choice` through `LLMClient.choose`: option probabilities from the next token's alternatives, never a
guess, cached only when usable."""
import asyncio

import pytest

from ie.llm.cache import CallCache
from ie.llm.choice import TOP_LOGPROBS, option_scores
from ie.llm.client import LLMClient
from ie.llm.fake import ScriptedTransport, next_token_response


def test_choice_reads_option_probabilities_from_the_next_token_and_is_cached(tmp_path):
    t = ScriptedTransport(lambda r: next_token_response({"Loc": 0.5, " location": 0.2, "organ": 0.1, "o": 0.1}))
    options = {"Loc": ["location"], "Org": ["organization"], "Other": ["other", "date"]}
    msgs = [{"role": "user", "content": "what is Paris"}]
    first = LLMClient([t], cache=CallCache(tmp_path / "c.sqlite"))
    c = asyncio.run(first.choose(msgs, options))
    # "o" starts both "organization" and "other": it counts for neither.
    assert c.ok and c.value.probabilities == pytest.approx({"Loc": 0.7 / 0.8, "Org": 0.1 / 0.8, "Other": 0.0})
    assert c.value.mass == pytest.approx(0.8)
    body = t.requests[0].body()
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == TOP_LOGPROBS
    assert "response_format" not in body and "grammar" not in body
    again = asyncio.run(LLMClient([t], cache=CallCache(tmp_path / "c.sqlite")).choose(msgs, options))
    assert len(t.requests) == 1 and again.cached and again.value == c.value


def test_choice_without_token_alternatives_or_option_words_is_an_error_not_a_guess():
    plain = asyncio.run(LLMClient([ScriptedTransport(lambda r: "Loc")]).choose([{"role": "user", "content": "?"}],
                                                                     {"Loc": ["location"]}))
    assert not plain.ok and "top_logprobs" in plain.error
    off = asyncio.run(LLMClient([ScriptedTransport(lambda r: next_token_response({"xyz": 0.9}))]).choose(
        [{"role": "user", "content": "?"}], {"Loc": ["location"]}))
    assert not off.ok and "no option word" in off.error
    assert option_scores({"Paris": -0.1}, {"Loc": ["location"]}) is None


def test_choice_without_token_alternatives_is_not_cached(tmp_path):
    t = ScriptedTransport(lambda r: "Loc")
    for _ in range(2):
        c = asyncio.run(LLMClient([t], cache=CallCache(tmp_path / "c.sqlite")).choose([{"role": "user", "content": "?"}],
                                                                             {"Loc": ["location"]}))
        assert not c.ok
    assert len(t.requests) == 2
