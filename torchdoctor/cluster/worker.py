"""The per-rank worker of ``torchdoctor dist``: the one torchdoctor process that imports torch.

torchrun (or srun) starts ``python -m torchdoctor dist`` once per rank; this module is what each
of them runs, phase by phase: join the job (``rendezvous``), describe the rank (``describe``),
run the node checks once per host (``pipeline``, as ``check`` runs them), test the collectives
(``collectives``), measure bandwidth (``measure_bandwidth``) and report (``report``). It is the
torch process by definition — collectives cannot be tested from outside — so it imports
``torch.distributed`` itself; node facts still come from the isolated torch probe.

Never a hang: every collective runs under a deadline (``deadline``); on a missed one the rank
reports and leaves with ``os._exit``. The rendezvous store doubles as a side channel
(``side_channel``) that survives a broken process group, so rank 0 can still name the ranks that
did not answer and print a partial fleet report.

Test-only hooks (read here and nowhere else; never set them in production):
  TORCHDOCTOR_TEST_HANG_RANK=N        rank N sleeps instead of joining the first collective.
  TORCHDOCTOR_TEST_FACT_OVERRIDE=JSON {"N": {"versions.torch": "2.0.0"}} overrides dotted fields
                                      of rank N's record before it is sent (a rank that disagrees).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from typing import Any

from ..check import pipeline
from . import collectives, describe, fleet, measure_bandwidth, report
from .deadline import GRACE_S, PhaseFailed, within
from .launch import Launch
from .options import DistOptions
from .rendezvous import Group, agree_backend, init_group, join_store
from .side_channel import SideChannel

HANG_RANK_VAR = "TORCHDOCTOR_TEST_HANG_RANK"
OVERRIDE_VAR = "TORCHDOCTOR_TEST_FACT_OVERRIDE"
REPORTED = "reported"  # rank 0 sets it in the store once the fleet report is out

__all__ = ["DistOptions", "Worker", "apply_override", "run", "within"]


def apply_override(record: dict[str, Any], rank: int, text: str | None) -> None:
    """The test-only stand-in for a rank that disagrees: set dotted fields of this rank's record."""
    if not text:
        return
    for path, value in (json.loads(text).get(str(rank)) or {}).items():
        node = record
        *parents, leaf = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value


def new_record(launch: Launch) -> dict[str, Any]:
    """This rank's record, filled in phase by phase (fields: schema/fleet.schema.json)."""
    return {
        "rank": launch.rank,
        "local_rank": launch.local_rank,
        "world_size": launch.world_size,
        "local_world_size": launch.local_world_size,
        "host": launch.host,
        "pid": os.getpid(),
        "backend": None,
        "backend_fallback": None,
        "versions": {},
        "device": {},
        "collectives": {},
        "bandwidth": [],
        "report": None,
        "errors": [],
    }


class Worker:
    def __init__(self, opts: DistOptions, launch: Launch) -> None:
        self.opts, self.launch = opts, launch
        self.t0 = time.monotonic()
        self.T = opts.collective_timeout_s
        self.channel = SideChannel(launch.rank)
        self.reported = False  # rank 0 prints one fleet report, even if a later step fails
        self.output_failed = False  # the report could not be written: exit 2 (README)
        self.record = new_record(launch)

    # ------------------------------------------------------------------ phases

    def join(self, torch: Any, dist: Any) -> Group:
        join_store(dist, self.launch, self.T, self.channel)
        backend, fallback = agree_backend(
            torch, dist, self.launch, self.opts.backend, self.T, self.channel
        )
        self.record["backend_fallback"] = fallback
        self.channel.mark("init")
        self.record["backend"] = backend
        return init_group(torch, dist, self.launch, backend, self.T, self.channel.store)

    def node_checks(self) -> None:
        """The single-machine check, once per host: node facts need not be gathered 8 times."""
        self.channel.mark("checks")
        if self.launch.local_rank != 0 or not self.opts.checks:
            return
        try:
            self.record["report"] = pipeline.judge(
                pipeline.gather(self.opts.node), self.opts.node
            ).to_dict()
        except Exception as exc:  # noqa: BLE001 - a broken gather is this rank's finding
            self.record["errors"].append(
                {"phase": "checks", "message": f"{type(exc).__name__}: {exc}"}
            )

    def collectives(self, g: Group) -> None:
        self.channel.mark("collectives")
        if os.environ.get(HANG_RANK_VAR) == str(self.launch.rank):
            time.sleep(3600)  # test-only: a rank that never joins; the launcher kills it
        collectives.run(g, self.record["collectives"])

    def bandwidth(self, g: Group) -> None:
        if not self.opts.measure_bandwidth or g.world_size < 2:
            return
        self.channel.mark("bandwidth")
        measure_bandwidth.run(g, self.opts.sizes, self.opts.iters, self.record["bandwidth"])

    def exchange(self) -> list[dict[str, Any]] | None:
        self.channel.mark("gather")
        apply_override(self.record, self.launch.rank, os.environ.get(OVERRIDE_VAR))
        return report.exchange(self.channel, self.record, self.launch.world_size, self.T)

    # ------------------------------------------------------------------ reporting

    def emit(self, records: list[dict[str, Any]], missing: list[dict[str, Any]]) -> dict[str, Any]:
        o = self.opts
        self.reported = True
        doc = fleet.aggregate(
            records,
            self.launch.world_size,
            missing,
            slow_ratio=o.slow_ratio,
            fail_on=o.node.fail_on,
            selection=o.node.selection,
            meta={
                "launcher": self.launch.launcher,
                "collective_timeout_s": self.T,
                "duration_s": round(time.monotonic() - self.t0, 3),
                # A report shaped by a test hook must say so: it is not a real fleet's state.
                "test_hooks": {
                    v: os.environ[v] for v in (HANG_RANK_VAR, OVERRIDE_VAR) if v in os.environ
                },
            },
        )
        # A report that could not be delivered is exit 2 for this rank (one line, old file
        # intact), but the fleet's exit code is still shared: the other ranks are waiting on it.
        failed = report.deliver(doc, o)
        if failed:
            print(f"torchdoctor dist: {failed}", file=sys.stderr)
            self.output_failed = True
        return doc

    def fail(self, exc: PhaseFailed) -> int:
        self.record["errors"].append({"phase": exc.phase, "message": exc.message})
        self.channel.set(f"error/{self.launch.rank}", f"{exc.phase}: {exc.message}")
        if self.launch.rank == 0 and not self.reported:
            time.sleep(min(GRACE_S, 1.0))  # let the other ranks' errors reach the store
            self.emit(*report.partial(self.channel, self.record, self.launch.world_size))
            self.channel.set(REPORTED, "1")
        else:  # other ranks, or rank 0 after its report: one line, no second report
            print(
                f"torchdoctor dist: rank {self.launch.rank} on {self.launch.host}: "
                f"{exc.phase}: {exc.message}",
                file=sys.stderr,
            )
            if self.launch.rank != 0:
                # rank 0's partial report counts this rank as answered, with its error
                self.channel.set(f"report/{self.launch.rank}", json.dumps(self.record, default=str))
                self.await_report()
        return 1

    def await_report(self) -> None:
        """Stay until rank 0 has printed the fleet report (bounded): torchrun stops every rank
        as soon as one exits non-zero, and on a real H200 it killed rank 0 mid-report when all
        ranks failed the backend phase at once (two ranks on one GPU)."""
        with contextlib.suppress(Exception):  # no store, or rank 0 gone: leave now
            self.channel.wait_all([REPORTED], min(self.T, 30.0), "the fleet report")

    # ------------------------------------------------------------------ the run

    def phases(self, torch: Any, dist: Any) -> int:
        g = self.join(torch, dist)
        self.record["versions"] = describe.versions(torch, dist)
        self.record["device"] = describe.device(torch, g.device, self.launch.local_rank)
        self.node_checks()
        # Local rank 0 may be gathering facts for the whole --timeout.
        g.checkpoint("collectives", self.opts.node.timeout_s + self.T)
        self.collectives(g)
        self.bandwidth(g)
        records = self.exchange()
        code = self.emit(records, [])["exit_code"] if records is not None else 0
        return report.share_exit_code(g, code)

    def main(self) -> int:
        try:
            import torch
            import torch.distributed as dist
        except Exception as exc:  # noqa: BLE001 - a rank that cannot import torch says so
            print(
                f"torchdoctor dist: rank {self.launch.rank} on {self.launch.host}: torch does "
                f"not import: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return 1
        try:
            code = self.phases(torch, dist)
        except PhaseFailed as exc:
            return self.fail(exc)
        self.channel.mark("done")
        with contextlib.suppress(Exception):  # we are leaving anyway
            within(GRACE_S, "destroy_process_group", dist.destroy_process_group)
        return code


def run(opts: DistOptions, launch: Launch) -> None:
    """Run this rank and leave with its exit code; os._exit, since a stuck collective thread
    would otherwise keep the interpreter alive."""
    worker = Worker(opts, launch)
    code = worker.main()
    if worker.output_failed:
        code = 2
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)
