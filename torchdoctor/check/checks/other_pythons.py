"""When no Python torchdoctor looked at has torch: name them, and how to point it at another."""

from __future__ import annotations

from torchdoctor.report.result import Remedy

from ..record import Facts
from .common import grounded

PYTHON_OPTION = "torchdoctor check --python /path/to/env"


def looked_at(facts: Facts) -> list[str]:
    """'source (path)' for every interpreter discovery asked, torchdoctor's own first."""
    own = facts.interpreter.own
    named = [f"torchdoctor's own ({own})"] if own else []
    return named + [
        f"{c.source} ({c.python}{', which did not answer' if c.error else ''})"
        for c in facts.interpreter.candidates
    ]


def remedy(facts: Facts) -> Remedy | None:
    """Only when torchdoctor chose the interpreter itself: a --python the user gave is theirs."""
    if facts.interpreter.source in (None, "--python"):
        return None
    return Remedy(
        f"torch was found in none of: {', '.join(looked_at(facts))}. If torch is installed in "
        "another environment, name it with --python (an interpreter, a venv or conda "
        "directory, or a command on PATH).",
        (PYTHON_OPTION,),
        evidence=grounded(facts, "interpreter.source", "interpreter.candidates"),
    )
