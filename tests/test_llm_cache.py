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


def test_a_damaged_cache_is_set_aside_with_one_line_and_an_empty_one_used(tmp_path, caplog):
    path = tmp_path / "calls.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)  # a header, then nothing a database holds
    cache = CallCache(path)
    assert len(cache) == 0 and cache.get(cache_key(BODY, 0)) is None
    [aside] = tmp_path.glob("calls.sqlite.damaged-*")
    assert aside.read_bytes().startswith(b"SQLite format 3") and len(caplog.records) == 1
    assert "the call cache is damaged" in caplog.text and aside.name in caplog.text


def test_a_cache_with_a_damaged_page_is_found_at_open(tmp_path, caplog):
    path = tmp_path / "calls.sqlite"
    cache = CallCache(path)
    for i in range(300):
        cache.put(cache_key(BODY, i), "m", {"text": "x" * 200})
    cache._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cache.close()
    data = bytearray(path.read_bytes())
    data[8192:12288] = b"\x07" * 4096  # one page of the table overwritten
    path.write_bytes(bytes(data))
    assert len(CallCache(path)) == 0 and "damaged" in caplog.text


def test_a_full_disk_while_storing_stops_the_run(tmp_path):
    import sqlite3

    import pytest

    from ie.llm.types import RunStopped

    class Full:
        def execute(self, *args):
            raise sqlite3.OperationalError("database or disk is full")

    cache = CallCache(tmp_path / "calls.sqlite")
    cache._db = Full()
    with pytest.raises(RunStopped, match="the disk is full: .*calls.sqlite could not be written") as info:
        cache.put("k", "m", {})
    assert info.value.reason == "disk full"
