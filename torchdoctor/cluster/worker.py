"""The per-rank worker of ``torchdoctor dist``: the one torchdoctor process that imports torch.

torchrun (or srun) starts ``python -m torchdoctor dist`` once per rank; this module is what each
of them runs. It is the torch process by definition — collectives cannot be tested from outside
— so it imports ``torch.distributed`` itself. Node-level facts still come from the isolated torch
probe, run once per host (by local rank 0) through the single-machine pipeline.

Never a hang: every collective runs on a thread joined with a deadline (a collective stuck in C
cannot be cancelled, so on a missed deadline the rank reports and leaves with ``os._exit``). The
job's rendezvous store doubles as a side channel that survives a broken process group: each rank
writes its host, its current phase and, at the end, its record there, so rank 0 can still name the
ranks that did not answer — by rank, host and last phase — and print a partial fleet report.

Test-only hooks (read here and nowhere else; never set them in production):
  TORCHDOCTOR_TEST_HANG_RANK=N        rank N sleeps instead of joining the first collective.
  TORCHDOCTOR_TEST_FACT_OVERRIDE=JSON {"N": {"versions.torch": "2.0.0"}} overrides dotted fields
                                      of rank N's record before it is sent (a rank that disagrees).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ..cli_types import write_stdout
from ..facts import GatherOptions
from ..findings import Selection
from ..safeio import OutputError, atomic_write
from . import bandwidth as bw
from . import fleet
from .launch import Launch
from .render import RENDERERS

KEY = "torchdoctor/"  # our keys in the job's rendezvous store
GRACE_S = 5.0  # beyond a collective's own timeout, before our deadline gives up on it
PARTIAL_S = 10.0  # how long rank 0 asks the store about missing ranks after a failure
HANG_RANK_VAR = "TORCHDOCTOR_TEST_HANG_RANK"
OVERRIDE_VAR = "TORCHDOCTOR_TEST_FACT_OVERRIDE"
DEFAULT_SIZES = {"gloo": "256K,4M", "nccl": "1M,16M,128M"}
DEFAULT_ITERS = {"gloo": (1, 3), "nccl": (5, 20)}  # (warm-up, timed)


@dataclass
class DistOptions:
    backend: str = "auto"  # auto | nccl | gloo
    collective_timeout_s: float = 60.0
    probe_timeout_s: float = GatherOptions.timeout_s
    checks: bool = True
    smoke: bool = True
    smoke_size: str = "quick"
    expect: str = "auto"
    only: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    measure_bandwidth: bool = True
    sizes: list[int] | None = None
    iters: int | None = None
    slow_ratio: float = fleet.SLOW_RATIO
    fail_on: str = "error"
    selection: Selection = field(default_factory=Selection)  # --select/--ignore on node checks
    fmt: str = "text"
    verbose: bool = False
    output: str | None = None
    color: bool = False


class PhaseFailed(Exception):
    def __init__(self, phase: str, message: str) -> None:
        super().__init__(f"{phase}: {message}")
        self.phase, self.message = phase, message


def within(seconds: float, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """fn(*args) on a daemon thread; TimeoutError if it has not returned after ``seconds``."""
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


class Worker:
    def __init__(self, opts: DistOptions, launch: Launch) -> None:
        self.opts, self.launch = opts, launch
        self.t0 = time.monotonic()
        self.T = opts.collective_timeout_s
        self.store: Any = None
        self.ctl: Any = None  # a gloo group for control traffic (monitored_barrier, the exit code)
        self.device: Any = None
        self.reported = False  # rank 0 prints one fleet report, even if a later step fails
        self.output_failed = False  # the report could not be written: exit 2 (README)
        self.record: dict[str, Any] = {
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

    # ------------------------------------------------------------------ the store side channel

    def _set(self, key: str, value: str) -> None:
        if self.store is not None:
            with contextlib.suppress(Exception):  # the side channel is best effort
                self.store.set(KEY + key, value)

    def _get(self, key: str) -> str | None:
        try:
            if self.store is not None and self.store.check([KEY + key]):
                return self.store.get(KEY + key).decode()
        except Exception:  # noqa: BLE001 - a dead store means "unknown", not a crash
            pass
        return None

    def mark(self, phase: str) -> None:
        self.phase = phase
        self._set(f"phase/{self.launch.rank}", phase)

    # ------------------------------------------------------------------ phases

    def rendezvous(self) -> None:
        self.mark("rendezvous")
        it = self.dist.rendezvous(
            "env://", self.launch.rank, self.launch.world_size, timeout=timedelta(seconds=self.T)
        )
        try:
            self.store, _, _ = within(self.T + GRACE_S, "rendezvous", next, it)
        except Exception as exc:
            raise PhaseFailed("rendezvous", f"{type(exc).__name__}: {exc}") from exc
        self._set(f"host/{self.launch.rank}", self.launch.host)
        self.mark("rendezvous")

    def choose_backend(self) -> str:
        """All ranks agree through the store: NCCL only if every rank can use it."""
        torch, dist = self.torch, self.dist
        has_cuda = torch.cuda.is_available() and torch.cuda.device_count() > 0
        mine = "nccl" if has_cuda and dist.is_nccl_available() else ("cuda" if has_cuda else "cpu")
        self._set(f"can/{self.launch.rank}", mine)
        if self.opts.backend == "gloo":
            return "gloo"
        keys = [f"{KEY}can/{r}" for r in range(self.launch.world_size)]
        try:
            within(
                self.T + GRACE_S,
                "backend agreement",
                self.store.wait,
                keys,
                timedelta(seconds=self.T),
            )
        except Exception as exc:
            raise PhaseFailed("rendezvous", f"not every rank arrived: {exc}") from exc
        can = {r: self._get(f"can/{r}") for r in range(self.launch.world_size)}
        lacking = sorted(r for r, v in can.items() if v != "nccl")
        if not lacking:
            return "nccl"
        if self.opts.backend == "nccl":
            raise PhaseFailed(
                "backend",
                f"--backend nccl, but NCCL is not usable on ranks {fleet.rank_ranges(lacking)}",
            )
        if any(v != "cpu" for v in can.values()):
            self.record["backend_fallback"] = (
                f"NCCL not usable on ranks {fleet.rank_ranges(lacking)} "
                f"({', '.join(sorted({can[r] or '?' for r in lacking}))})"
            )
        return "gloo"

    def init_group(self, backend: str) -> None:
        torch, dist = self.torch, self.dist
        self.mark("init")
        if backend == "nccl":
            index = self.launch.local_rank % torch.cuda.device_count()
            torch.cuda.set_device(index)
            self.device = torch.device("cuda", index)
        else:
            self.device = torch.device("cpu")
        self.record["backend"] = backend
        pg_timeout = timedelta(seconds=self.T + 2 * GRACE_S)  # ours (T) fires first
        try:
            within(
                self.T + GRACE_S,
                "init_process_group",
                dist.init_process_group,
                backend=backend,
                store=self.store,
                rank=self.launch.rank,
                world_size=self.launch.world_size,
                timeout=pg_timeout,
            )
            self.ctl = (
                dist.group.WORLD
                if backend == "gloo"
                else within(
                    self.T + GRACE_S,
                    "new_group",
                    dist.new_group,
                    backend="gloo",
                    timeout=pg_timeout,
                )
            )
        except Exception as exc:
            raise PhaseFailed("init", f"{type(exc).__name__}: {exc}") from exc

    def describe(self) -> None:
        """This rank's own torch versions and device, read in-process (cheap: torch is loaded)."""
        torch = self.torch
        nccl = None
        if torch.version.cuda and self.dist.is_nccl_available():
            try:
                nccl = ".".join(map(str, torch.cuda.nccl.version()))
            except Exception:  # noqa: BLE001 - a missing NCCL is recorded as None
                nccl = None
        self.record["versions"] = {
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "hip": getattr(torch.version, "hip", None),
            "nccl": nccl,
            "python": platform.python_version(),
        }
        # The rank's GPU is described even when gloo runs on CPU tensors (a fallback).
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            i = (
                self.device.index
                if self.device.type == "cuda"
                else self.launch.local_rank % torch.cuda.device_count()
            )
            p = torch.cuda.get_device_properties(i)
            free, total = torch.cuda.mem_get_info(i)
            self.record["device"] = {
                "type": "cuda",
                "index": i,
                "name": p.name,
                "capability": [p.major, p.minor],
                "multi_processor_count": p.multi_processor_count,
                "memory_total_bytes": total,
                "memory_free_bytes": free,
                "uuid": str(getattr(p, "uuid", "")) or None,
            }
        else:
            self.record["device"] = {"type": "cpu", "index": None, "name": "cpu"}

    def local_checks(self) -> None:
        """The single-machine check, once per host: node facts need not be gathered 8 times."""
        self.mark("checks")
        if self.launch.local_rank != 0 or not self.opts.checks:
            return
        from .. import engine
        from .. import facts as facts_mod
        from ..checks.common import Context

        o = self.opts
        try:
            facts = facts_mod.gather(
                facts_mod.GatherOptions(
                    python=sys.executable,
                    timeout_s=o.probe_timeout_s,
                    smoke=o.smoke,
                    smoke_size=o.smoke_size,
                )
            )
            ctx = Context(expect=o.expect, smoke=o.smoke)
            report = engine.diagnose(
                facts, ctx, engine.select(o.only, o.skip), fail_on=o.fail_on, selection=o.selection
            )
            self.record["report"] = report.to_dict()
        except Exception as exc:  # noqa: BLE001 - a broken gather is this rank's finding
            self.record["errors"].append(
                {"phase": "checks", "message": f"{type(exc).__name__}: {exc}"}
            )

    def checkpoint(self, before: str, timeout_s: float) -> None:
        """monitored_barrier on the gloo control group: a rank that is not there is named."""
        try:
            within(
                timeout_s + GRACE_S,
                f"barrier before {before}",
                self.dist.monitored_barrier,
                group=self.ctl,
                timeout=timedelta(seconds=timeout_s),
                wait_all_ranks=True,
            )
        except Exception as exc:
            raise PhaseFailed(before, f"barrier: {exc}") from exc

    def _sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def _barrier(self) -> None:
        if self.device.type == "cuda":  # NCCL wants to know the device it barriers on
            self.dist.barrier(device_ids=[self.device.index])
        else:
            self.dist.barrier()
        self._sync()

    def _collective(self, name: str, fn: Callable[[], tuple[bool, str]]) -> None:
        t0 = time.perf_counter()
        try:
            ok, summary = within(self.T, name, fn)
        except Exception as exc:
            self.record["collectives"][name] = {"status": "error", "summary": str(exc)}
            raise PhaseFailed("collectives", f"{name}: {exc}") from exc
        self.record["collectives"][name] = {
            "status": "pass" if ok else "fail",
            "summary": summary,
            "seconds": round(time.perf_counter() - t0, 6),
        }

    def collectives(self) -> None:
        """Correctness on known values: every rank can compute the right answer alone."""
        torch, dist, dev = self.torch, self.dist, self.device
        n, rank = self.launch.world_size, self.launch.rank
        self.mark("collectives")
        if os.environ.get(HANG_RANK_VAR) == str(rank):
            time.sleep(3600)  # test-only: a rank that never joins; the launcher kills it

        def all_reduce() -> tuple[bool, str]:
            t = torch.full((1024,), float(rank + 1), device=dev)
            dist.all_reduce(t)
            self._sync()
            want, got = n * (n + 1) / 2, t[0].item()
            return bool(torch.all(t == want)), f"sum of 1..{n} = {got:g} (expected {want:g})"

        def all_gather() -> tuple[bool, str]:
            out = [torch.empty(16, device=dev) for _ in range(n)]
            dist.all_gather(out, torch.full((16,), float(rank), device=dev))
            self._sync()
            wrong = [i for i, t in enumerate(out) if not bool(torch.all(t == i))]
            return not wrong, (f"wrong slots from ranks {wrong}" if wrong else f"{n} slots correct")

        def broadcast() -> tuple[bool, str]:
            root = n - 1  # not rank 0, so a root mix-up cannot pass by accident
            t = torch.full((1024,), 42.5 if rank == root else -1.0, device=dev)
            dist.broadcast(t, src=root)
            self._sync()
            return bool(torch.all(t == 42.5)), f"value from rank {root}: {t[0].item():g}"

        def barrier() -> tuple[bool, str]:
            if self.record["backend"] == "gloo":
                dist.monitored_barrier(timeout=timedelta(seconds=self.T), wait_all_ranks=True)
            else:
                self._barrier()
            return True, f"all {n} ranks passed"

        for name, fn in (
            ("all_reduce", all_reduce),
            ("all_gather", all_gather),
            ("broadcast", broadcast),
            ("barrier", barrier),
        ):
            self._collective(name, fn)

    def bandwidth(self) -> None:
        torch, dist, dev = self.torch, self.dist, self.device
        n, rank = self.launch.world_size, self.launch.rank
        if not self.opts.measure_bandwidth or n < 2:
            return
        self.mark("bandwidth")
        backend = self.record["backend"]
        sizes = self.opts.sizes or bw.parse_sizes(DEFAULT_SIZES[backend])
        warmup, iters = DEFAULT_ITERS[backend]
        iters = self.opts.iters or iters

        def timed(fn: Callable[[], Any]) -> float:
            for _ in range(warmup):
                fn()
            self._barrier()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            self._sync()
            return (time.perf_counter() - t0) / iters

        for size in sizes:
            numel = max(n, size // 4) // n * n  # float32, divisible into n chunks
            buf = torch.ones(numel, device=dev)
            recv = torch.empty(numel, device=dev)
            chunk = [torch.empty(numel // n, device=dev) for _ in range(n)]
            p2p = [
                dist.P2POp(dist.isend, buf, (rank + 1) % n),
                dist.P2POp(dist.irecv, recv, (rank - 1) % n),
            ]
            ops: dict[str, Callable[[], Any]] = {
                "all_reduce": lambda buf=buf: dist.all_reduce(buf),
                "all_gather": lambda c=chunk, b=buf, k=numel // n: dist.all_gather(c, b[:k]),
                "broadcast": lambda buf=buf: dist.broadcast(buf, src=0),
                "sendrecv": lambda p=p2p: [w.wait() for w in dist.batch_isend_irecv(p)],
            }
            for op, fn in ops.items():
                what = f"{op} {bw.human_bytes(numel * 4)}"
                try:
                    seconds = within(self.T, what, timed, fn)
                except Exception as exc:
                    raise PhaseFailed("bandwidth", f"{what}: {exc}") from exc
                self.record["bandwidth"].append(bw.measure(op, numel * 4, seconds, n))

    def gather(self) -> list[dict[str, Any]] | None:
        """Every record to rank 0 through the rendezvous store (JSON text; no pickled-object
        collective, which needs numpy — torch's CPU wheels do not); also what a partial report
        reads after a failure."""
        self.mark("gather")
        apply_override(self.record, self.launch.rank, os.environ.get(OVERRIDE_VAR))
        payload = json.dumps(self.record, default=str)
        keys = [f"{KEY}report/{r}" for r in range(self.launch.world_size)]
        try:
            self.store.set(keys[self.launch.rank], payload)
            if self.launch.rank != 0:
                return None
            within(
                self.T + GRACE_S,
                "gather of reports",
                self.store.wait,
                keys,
                timedelta(seconds=self.T),
            )
            return [json.loads(self.store.get(k).decode()) for k in keys]
        except Exception as exc:
            raise PhaseFailed("gather", f"{type(exc).__name__}: {exc}") from exc

    def share_exit_code(self, code: int) -> int:
        """Rank 0's verdict to every rank, so the launcher sees one exit code from all: an int64
        tensor broadcast on the gloo control group (also the last meeting point of the job)."""
        box = self.torch.tensor([code], dtype=self.torch.int64)
        try:
            within(
                self.T + GRACE_S,
                "broadcast of the exit code",
                self.dist.broadcast,
                box,
                src=0,
                group=self.ctl,
            )
        except Exception as exc:
            raise PhaseFailed("finish", str(exc)) from exc
        return int(box[0].item())

    # ------------------------------------------------------------------ reporting

    def emit(self, records: list[dict[str, Any]], missing: list[dict[str, Any]]) -> dict[str, Any]:
        o = self.opts
        self.reported = True
        doc = fleet.aggregate(
            records,
            self.launch.world_size,
            missing,
            slow_ratio=o.slow_ratio,
            fail_on=o.fail_on,
            selection=o.selection,
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
        failed = write_stdout(RENDERERS[o.fmt](doc, o.verbose, o.color and o.fmt == "text"))
        if o.output and not failed:
            try:
                atomic_write(o.output, RENDERERS["json"](doc, False, False))
            except OutputError as exc:
                failed = f"--output: {exc}"
        if failed:
            print(f"torchdoctor dist: {failed}", file=sys.stderr)
            self.output_failed = True
        return doc

    def partial(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """What rank 0 knows after a failure: records left in the store, and who is missing."""
        records, missing = [self.record], []
        asking_until = time.monotonic() + PARTIAL_S
        for r in range(1, self.launch.world_size):
            if time.monotonic() > asking_until:  # a huge job: name the rest without asking
                missing.append({"rank": r, "host": None, "phase": None, "error": None})
                continue
            payload = self._get(f"report/{r}")
            if payload:
                records.append(json.loads(payload))
                continue
            error = self._get(f"error/{r}")
            missing.append(
                {
                    "rank": r,
                    "host": self._get(f"host/{r}"),
                    "phase": self._get(f"phase/{r}"),
                    "error": error,
                }
            )
        return records, missing

    def fail(self, exc: PhaseFailed) -> int:
        self.record["errors"].append({"phase": exc.phase, "message": exc.message})
        self._set(f"error/{self.launch.rank}", f"{exc.phase}: {exc.message}")
        if self.launch.rank == 0 and not self.reported:
            time.sleep(min(GRACE_S, 1.0))  # let the other ranks' errors reach the store
            self.emit(*self.partial())
        else:  # other ranks, or rank 0 after its report: one line, no second report
            print(
                f"torchdoctor dist: rank {self.launch.rank} on {self.launch.host}: "
                f"{exc.phase}: {exc.message}",
                file=sys.stderr,
            )
        return 1

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
        self.torch, self.dist = torch, dist
        try:
            self.rendezvous()
            self.init_group(self.choose_backend())
            self.describe()
            self.local_checks()
            o = self.opts
            wait = o.probe_timeout_s + self.T  # local rank 0 may be gathering that long
            self.checkpoint("collectives", wait)
            self.collectives()
            self.bandwidth()
            records = self.gather()
            code = self.emit(records, [])["exit_code"] if records is not None else 0
            code = self.share_exit_code(code)
        except PhaseFailed as exc:
            return self.fail(exc)
        self.mark("done")
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
