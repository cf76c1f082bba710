"""Persistent call cache (sqlite, WAL): a re-run or a resumed run repeats no LLM call.

Key = sha256 of the endpoint's model + messages + response format + sampling parameters + sample index.
Only the request body is hashed and only the answer is stored: API keys never reach this file. The client
stores only answers that validated, so an invalid one is asked again by the next run, never replayed.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL DEFAULT (strftime('%s','now'))
)"""


def cache_key(body: dict[str, Any], sample_index: int) -> str:
    payload = json.dumps({"body": body, "sample": sample_index}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class CallCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls (key, model, response) VALUES (?, ?, ?)",
                (key, model, json.dumps(response, ensure_ascii=False)),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
