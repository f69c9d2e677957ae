"""Run the plan's commands, in order, stopping at the first that fails; SIGINT or SIGTERM stops
the running command (its whole process group) so the caller can restore the environment."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..interrupts import SignalRaised, handle, take_pending
from . import proc
from .plan import Plan

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(SignalRaised):
    """Ctrl-C or SIGTERM while the environment was being changed or verified."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    def rearm(self) -> None:
        # Dropped by Python in a callback: the stop must come again, not be ignored.
        for s in STOP_SIGNALS:
            handle(s, _stop)


def _stop(signum, frame) -> None:
    take_pending()  # a stop Python dropped in a callback, delivered again: this is it
    # One stop is enough: a second signal must not cut short the kill or the restore after it.
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        handle(s, _stop)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def signals_ignored() -> Iterator[None]:
    """While restoring: stopping half way would leave the environment worse than either state."""
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


@dataclass
class Applied:
    ran: list[proc.Ran] = field(default_factory=list)
    failed: proc.Ran | None = None

    def to_dict(self) -> dict:
        return {"commands": [r.to_dict() for r in self.ran]}


def apply(plan: Plan, timeout_s: float, applied: Applied) -> None:
    """Run every step's commands into ``applied``; Stopped propagates (the caller restores)."""
    for step in plan.steps:
        for cmd in step.commands:
            ran = proc.run(list(cmd.argv), timeout_s)
            applied.ran.append(ran)
            if not ran.ok:
                applied.failed = ran
                return
