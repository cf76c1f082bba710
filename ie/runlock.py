"""One writer per run folder: two runs appending to one `predictions.jsonl` would write every record twice.

`RunLock(folder)` holds an exclusive `flock` on `<folder>/.lock` for the run (`RunLock(out_file, lock_file)`:
on that file, for one output file), and writes its holder (pid, host, start time) into it. A second run is
refused at once, naming the holder. The kernel releases the lock of a process that died (kill -9), so its
folder is free again; the holder it left in the file is said once, as a lock taken over. A run that ends
cleanly empties the file. The file is never deleted: a run that deleted it could let a third one lock a new
file while a second still holds the old one.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from pathlib import Path

log = logging.getLogger(__name__)
LOCK = ".lock"


class FolderBusy(RuntimeError):
    """Another live run holds the folder's lock."""


def _holder(text: str) -> str:
    """A lock file's holder in words: 'pid 123 on host, started 2026-01-01 10:00:00 UTC'."""
    try:
        info = json.loads(text)
        return f"pid {info['pid']} on {info['host']}, started {info['started']}"
    except (ValueError, KeyError, TypeError):
        return "an unknown process"


class RunLock:
    def __init__(self, target: str | Path, lock: str | Path | None = None):
        self.target = Path(target)
        self.path = Path(lock) if lock is not None else self.target / LOCK
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        left = os.read(fd, 4096).decode("utf-8", "replace").strip()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FolderBusy(f"{self.target}: another run writes here ({_holder(left)}); wait for it to end, "
                             "or use another --out") from None
        if left:
            log.warning("%s: took over the lock of %s, which is no longer running", self.target, _holder(left))
        me = {"pid": os.getpid(), "host": socket.gethostname(),
              "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)  # a clean end leaves no holder to take over
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None
