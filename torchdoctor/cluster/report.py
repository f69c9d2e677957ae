"""Rank 0's fleet report: every record brought to rank 0, judged, written, and its exit code
shared with every rank — or, after a failure, what the store still knows.

Records travel as JSON text through the rendezvous store, not through a pickled-object
collective, which needs numpy (torch's CPU wheels do not).
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..safeio import OutputError, atomic_write, write_stdout
from .deadline import GRACE_S, PhaseFailed, within
from .options import DistOptions
from .render import RENDERERS
from .rendezvous import Group
from .side_channel import SideChannel

PARTIAL_S = 10.0  # how long rank 0 asks the store about missing ranks after a failure
Record = dict[str, Any]


def exchange(
    channel: SideChannel, record: Record, world_size: int, timeout_s: float
) -> list[Record] | None:
    """This rank's record to the store; on rank 0, every rank's record (None elsewhere)."""
    names = [f"report/{r}" for r in range(world_size)]
    try:
        channel.put(names[channel.rank], json.dumps(record, default=str))
        if channel.rank != 0:
            return None
        channel.wait_all(names, timeout_s, "gather of reports")
        return [json.loads(channel.read(name)) for name in names]
    except Exception as exc:
        raise PhaseFailed("gather", f"{type(exc).__name__}: {exc}") from exc


def share_exit_code(g: Group, code: int) -> int:
    """Rank 0's verdict to every rank, so the launcher sees one exit code from all: an int64
    tensor broadcast on the gloo control group (also the last meeting point of the job)."""
    box = g.torch.tensor([code], dtype=g.torch.int64)
    try:
        within(
            g.timeout_s + GRACE_S,
            "broadcast of the exit code",
            g.dist.broadcast,
            box,
            src=0,
            group=g.ctl,
        )
    except Exception as exc:
        raise PhaseFailed("finish", str(exc)) from exc
    return int(box[0].item())


def _missing(channel: SideChannel, rank: int) -> Record:
    return {
        "rank": rank,
        "host": channel.get(f"host/{rank}"),
        "phase": channel.get(f"phase/{rank}"),
        "error": channel.get(f"error/{rank}"),
    }


def partial(
    channel: SideChannel, record: Record, world_size: int
) -> tuple[list[Record], list[Record]]:
    """What rank 0 knows after a failure: records left in the store, and who is missing."""
    records, missing = [record], []
    asking_until = time.monotonic() + PARTIAL_S
    for r in range(1, world_size):
        if time.monotonic() > asking_until:  # a huge job: name the rest without asking
            missing.append({"rank": r, "host": None, "phase": None, "error": None})
            continue
        payload = channel.get(f"report/{r}")
        if payload:
            records.append(json.loads(payload))
        else:
            missing.append(_missing(channel, r))
    return records, missing


def deliver(doc: dict[str, Any], opts: DistOptions) -> str | None:
    """The report on stdout, and as JSON to --output; why it could not be written, or None."""
    failed = write_stdout(RENDERERS[opts.fmt](doc, opts.verbose, opts.color and opts.fmt == "text"))
    if opts.output and not failed:
        try:
            atomic_write(opts.output, RENDERERS["json"](doc, False, False))
        except OutputError as exc:
            failed = f"--output: {exc}"
    return failed
