"""The check pipeline, one for every caller: choose the Python, gather its facts, judge them.

``torchdoctor check`` runs it on this machine, and ``torchdoctor dist`` runs it once per host
(on local rank 0), so a host's findings in a fleet report are exactly what ``check`` reports
there, and ``--timeout`` bounds the same work (the torch probe and the smoke tests together).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..report.findings import Selection
from . import gather as gathering
from .record import Facts

if TYPE_CHECKING:
    from ..report.result import Report


@dataclass(frozen=True)
class CheckOptions:
    """What to gather and how to judge it: the options `check` and `dist` share."""

    expect: str = "auto"
    only: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    fail_on: str = "error"
    selection: Selection = field(default_factory=Selection)
    timeout_s: float = (
        gathering.TIMEOUT_S
    )  # the whole run: interpreter search, probe and smoke tests
    smoke: bool = True
    smoke_size: str = "quick"


def gather(opts: CheckOptions, python: str | None = None, progress: bool = False) -> Facts:
    """The facts of ``python`` (None: the one torchdoctor would choose), within opts.timeout_s."""
    from . import interpreter

    started = time.monotonic()  # the deadline bounds the whole run, the search included
    choice = interpreter.choose(python, timeout_s=min(opts.timeout_s, interpreter.ASK_TIMEOUT_S))
    return gathering.gather(
        gathering.GatherOptions(
            python=choice.python,
            timeout_s=max(1.0, opts.timeout_s - (time.monotonic() - started)),
            smoke=opts.smoke,
            smoke_size=opts.smoke_size,
            interpreter=choice.to_facts(),
            progress=progress,
        )
    )


def judge(facts: Facts, opts: CheckOptions) -> Report:
    """Run the selected checks on ``facts``; pure, like every check."""
    from . import engine
    from .checks.common import Context

    return engine.diagnose(
        facts,
        Context(expect=opts.expect, smoke=opts.smoke),
        engine.select(opts.only, opts.skip),
        fail_on=opts.fail_on,
        selection=opts.selection,
    )
