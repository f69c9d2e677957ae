"""Deadlines on calls that may never return: a collective stuck in C cannot be cancelled."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

GRACE_S = 5.0  # beyond a collective's own timeout, before our deadline gives up on it


class PhaseFailed(Exception):
    """A phase of the rank's run failed; ``phase`` is what the fleet report names."""

    def __init__(self, phase: str, message: str) -> None:
        super().__init__(f"{phase}: {message}")
        self.phase, self.message = phase, message


def within(seconds: float, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args) on a daemon thread; TimeoutError if it has not returned after ``seconds``.

    The thread is left behind on a timeout: the rank then reports and leaves with ``os._exit``.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"torchdoctor-{what}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"{what} did not finish within {seconds:.0f} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
