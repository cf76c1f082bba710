"""Persistent call cache (sqlite, WAL): a re-run or a resumed run repeats no LLM call.

Key = sha256 of the endpoint's model + messages + response format + sampling parameters + sample index.
Only the request body is hashed and only the answer is stored: API keys never reach this file. The client
stores only answers that validated, so an invalid one is asked again by the next run, never replayed.
A damaged file (a crash mid-write on a full disk, a truncated copy) is found when opened, renamed aside (its
answers may still be read by hand) with one line saying so, and replaced by an empty cache: the run goes on,
asking again. A full disk while storing stops the run (`RunStopped`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ie.llm.types import RunStopped

log = logging.getLogger(__name__)

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
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
            for suffix in ("", "-wal", "-shm"):
                part = Path(f"{self.path}{suffix}")
                if part.exists():
                    part.rename(f"{aside}{suffix}")
            log.warning("%s: the call cache is damaged (%s); moved to %s, and this run asks every call again",
                        self.path, exc, aside.name)
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        """The cache's connection, its integrity checked: a damaged file raises sqlite3.DatabaseError."""
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(_SCHEMA)
            (verdict,) = db.execute("PRAGMA quick_check").fetchone()
            if verdict != "ok":
                raise sqlite3.DatabaseError(f"integrity check: {verdict}")
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, model: str, response: dict[str, Any]) -> None:
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO calls (key, model, response) VALUES (?, ?, ?)",
                    (key, model, json.dumps(response, ensure_ascii=False)),
                )
            except sqlite3.OperationalError as exc:
                if "full" not in str(exc):
                    raise
                raise RunStopped(f"the disk is full: {self.path} could not be written ({exc}); free some space",
                                 "disk full") from None

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
