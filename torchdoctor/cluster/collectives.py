"""Correctness of each collective on known values: every rank can compute the right answer alone.

Each test returns (passed, summary); ``run`` records them in the rank's record as they finish,
so a partial report after a failure still shows which ones passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from .deadline import PhaseFailed, within
from .rendezvous import Group

Outcome = tuple[bool, str]


def all_reduce(g: Group) -> Outcome:
    n, torch = g.world_size, g.torch
    t = torch.full((1024,), float(g.rank + 1), device=g.device)
    g.dist.all_reduce(t)
    g.sync()
    want, got = n * (n + 1) / 2, t[0].item()
    return bool(torch.all(t == want)), f"sum of 1..{n} = {got:g} (expected {want:g})"


def all_gather(g: Group) -> Outcome:
    n, torch = g.world_size, g.torch
    out = [torch.empty(16, device=g.device) for _ in range(n)]
    g.dist.all_gather(out, torch.full((16,), float(g.rank), device=g.device))
    g.sync()
    wrong = [i for i, t in enumerate(out) if not bool(torch.all(t == i))]
    return not wrong, (f"wrong slots from ranks {wrong}" if wrong else f"{n} slots correct")


def broadcast(g: Group) -> Outcome:
    root = g.world_size - 1  # not rank 0, so a root mix-up cannot pass by accident
    t = g.torch.full((1024,), 42.5 if g.rank == root else -1.0, device=g.device)
    g.dist.broadcast(t, src=root)
    g.sync()
    return bool(g.torch.all(t == 42.5)), f"value from rank {root}: {t[0].item():g}"


def barrier(g: Group) -> Outcome:
    if g.backend == "gloo":
        g.dist.monitored_barrier(timeout=timedelta(seconds=g.timeout_s), wait_all_ranks=True)
    else:
        g.barrier()
    return True, f"all {g.world_size} ranks passed"


TESTS: dict[str, Callable[[Group], Outcome]] = {
    "all_reduce": all_reduce,
    "all_gather": all_gather,
    "broadcast": broadcast,
    "barrier": barrier,
}


def run(g: Group, results: dict[str, Any]) -> None:
    """Every test in order into ``results``; the first that raises or times out ends the phase."""
    for name, test in TESTS.items():
        t0 = time.perf_counter()
        try:
            ok, summary = within(g.timeout_s, name, test, g)
        except Exception as exc:
            results[name] = {"status": "error", "summary": str(exc)}
            raise PhaseFailed("collectives", f"{name}: {exc}") from exc
        results[name] = {
            "status": "pass" if ok else "fail",
            "summary": summary,
            "seconds": round(time.perf_counter() - t0, 6),
        }
