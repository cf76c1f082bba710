"""`ie.llm.cache`: a call's key is its request body and sample index; an answer stored reads back, replaced by
the next one under its key, and outlives the connection."""
from ie.llm.cache import CallCache, cache_key

BODY = {"model": "m", "messages": [{"role": "user", "content": "où est Paris"}], "temperature": 0.0}


def test_the_key_is_the_body_and_sample_and_an_answer_reads_back(tmp_path):
    key = cache_key(BODY, 0)
    assert key == cache_key(dict(reversed(BODY.items())), 0) and key != cache_key(BODY, 1)
    assert key != cache_key({**BODY, "temperature": 0.5}, 0)
    path = tmp_path / "runs" / "calls.sqlite"  # its folder is made
    cache = CallCache(path)
    assert cache.get(key) is None and len(cache) == 0
    cache.put(key, "m", {"text": "à Paris"})
    cache.put(key, "m", {"text": "Paris"})
    assert cache.get(key) == {"text": "Paris"} and len(cache) == 1
    cache.close()
    assert CallCache(path).get(key) == {"text": "Paris"}
