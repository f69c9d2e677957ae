"""The job's rendezvous store as a side channel that survives a broken process group.

Each rank writes its host, its current phase and, at the end, its record there, so rank 0 can
still name the ranks that did not answer — by rank, host and last phase — after a failure.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any

from .deadline import GRACE_S, within

KEY = "torchdoctor/"  # our keys in the job's rendezvous store


class SideChannel:
    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.store: Any = None  # set once the rendezvous returns it
        self.phase: str | None = None

    def set(self, name: str, value: str) -> None:
        """Best effort: a lost note must not fail the rank."""
        if self.store is not None:
            with contextlib.suppress(Exception):
                self.store.set(KEY + name, value)

    def get(self, name: str) -> str | None:
        try:
            if self.store is not None and self.store.check([KEY + name]):
                return self.store.get(KEY + name).decode()
        except Exception:  # noqa: BLE001 - a dead store means "unknown", not a crash
            pass
        return None

    def mark(self, phase: str) -> None:
        self.phase = phase
        self.set(f"phase/{self.rank}", phase)

    def put(self, name: str, value: str) -> None:
        """Strict, unlike ``set``: the caller needs the value to arrive."""
        self.store.set(KEY + name, value)

    def read(self, name: str) -> str:
        return self.store.get(KEY + name).decode()

    def wait_all(self, names: list[str], timeout_s: float, what: str) -> None:
        """Until every key is set; the store's own timeout, and ours in case it hangs."""
        keys = [KEY + name for name in names]
        within(timeout_s + GRACE_S, what, self.store.wait, keys, timedelta(seconds=timeout_s))
