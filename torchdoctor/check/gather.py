"""Gathering: the one side-effecting step of a diagnosis, which fills the facts record.

The torch probe runs in a child (probes/child/torch_probe.py) while NVML, the toolchain and the
host are read here, in parallel; everything is bounded by the run's deadline (``--timeout``).
What they report is JSON (the probe's wire format); it is assembled here and read into the typed
record once, at the end, leniently (a field that does not fit reads as absent and is listed).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..probes import (
    conda_owner,
    container,
    extension_links,
    host,
    network,
    nvml,
    toolchain,
    torch_leftovers,
)
from ..probes.child import locate, torch_probe
from ..probes.runner import ProbeRun, child_argv, run_probe
from ..version import __version__
from . import gather_smoke, paste_evidence, progress
from .facts import FACTS_VERSION
from .record import Facts, read_facts

# The whole run's deadline by default (--timeout): probe, smoke tests and reruns together.
TIMEOUT_S = 30.0
# A rerun past a hung device needs at least this long to import torch and test anything.
MIN_RERUN_S = 2.0
# NVML can hang on a wedged driver; it runs beside the torch probe and gets this long.
NVML_TIMEOUT_S = 15.0
# nvcc/c++/ninja --version, each with its own short timeout.
TOOLCHAIN_TIMEOUT_S = 20.0


@dataclass
class GatherOptions:
    python: str
    timeout_s: float = TIMEOUT_S  # the whole gathering, every probe child included
    smoke: bool = True
    smoke_size: str = "quick"
    extra_probe_args: list[str] = field(default_factory=list)
    # Which interpreter was examined and why (interpreter.Choice.to_facts()).
    interpreter: dict[str, Any] | None = None
    progress: bool = False  # on a terminal, say on stderr what a long wait is for


def torch_facts_from_run(run: ProbeRun) -> dict[str, Any]:
    """Fold the torch probe's stages into facts['torch'] with an explicit status."""
    imp_err = run.errors.get("import")
    torch: dict[str, Any] = {}
    if "import" in run.stages:
        torch.update(run.stages["import"] or {})
        torch["status"] = "ok"
    elif imp_err:
        missing = imp_err.get("type") == "ModuleNotFoundError" and "'torch'" in imp_err.get(
            "message", ""
        )
        torch["status"] = "missing" if missing else "import_error"
        torch["error"] = imp_err
    elif run.status in ("timeout", "crashed", "failed", "not_started"):
        torch["status"] = run.status if run.status != "failed" else "probe_failed"
    for name in ("build", "cuda", "cuda.init", "mps", "libs", "companions", "rocm", "xpu"):
        if name in run.stages:
            torch[name.replace(".", "_")] = run.stages[name]
    stage_errors = {k.replace(".", "_"): v for k, v in run.errors.items() if k != "import"}
    if stage_errors:
        torch["stage_errors"] = stage_errors
    return torch


class _Background:
    """Run a gatherer on a daemon thread: a call hung in C must not keep torchdoctor alive.

    (concurrent.futures joins its workers at exit, which is exactly that hang.)
    """

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.value = fn()
        except Exception as exc:  # noqa: BLE001 - a failed gatherer is a fact, not a crash
            self.error = exc

    def result(self, timeout_s: float, what: str) -> Any:
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            return {"status": "timeout", "error": f"{what} did not answer within {timeout_s:.0f} s"}
        if self.error is not None:
            return {"status": "error", "error": f"{type(self.error).__name__}: {self.error}"}
        return self.value


class _Watch:
    """What the gathering is waiting for right now, for the progress line."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.probe: ProbeRun | None = None  # the probe child running now
        self.jobs: list[tuple[_Background, str]] = []

    def run(self, argv: list[str], timeout_s: float, until: float) -> ProbeRun:
        self.probe = ProbeRun(status="not_started")
        try:
            return run_probe(argv, timeout_s, until=until, run=self.probe)
        finally:
            self.probe = None

    def waiting_for(self) -> tuple[str, float] | None:
        probe = self.probe
        if probe is not None:
            return progress.describe(probe.unfinished_stage), probe.since
        busy = [what for job, what in self.jobs if job.thread.is_alive()]
        return (busy[0], self.t0) if busy else None


def gather(opts: GatherOptions) -> Facts:
    """Run the torch probe in a child while NVML and host facts are read here, in parallel.

    ``opts.timeout_s`` bounds the whole of it; on a terminal (``opts.progress``) a wait longer
    than a few seconds is named on stderr while it lasts.
    """
    t0 = time.monotonic()
    watch = _Watch(t0)
    with progress.Waiting(watch.waiting_for) if opts.progress else contextlib.nullcontext():
        facts = _gather(opts, t0, watch)
    # torch's own words (its warnings, import errors) as report.evidence, as on a paste
    return read_facts(paste_evidence.with_live_evidence(facts))


class _Deadline:
    """The run's deadline (``--timeout``): what is left of it for one wait."""

    def __init__(self, t0: float, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.until = t0 + timeout_s

    def left(self, cap: float) -> float:
        return max(0.0, min(cap, self.until - time.monotonic()))


def _gather(opts: GatherOptions, t0: float, watch: _Watch) -> dict[str, Any]:
    deadline = _Deadline(t0, opts.timeout_s)
    # Same interpreter as ours: read package metadata here, on the other core, while the child
    # imports torch (a metadata scan costs tens of ms that would otherwise be serial).
    packages_here = os.path.abspath(opts.python) == os.path.abspath(sys.executable)
    argv = _probe_argv(opts, packages_here)
    probe = _Background(lambda: watch.run(argv, opts.timeout_s, deadline.until))
    packages_job = _Background(torch_probe.package_facts) if packages_here else None
    # Same interpreter: its import path is ours, so compiled extensions are searched for while
    # the child imports torch; they are judged against torch's libraries after.
    extensions_job = _Background(_early_extension_search) if packages_here else None
    facts = _local_facts(opts, watch, deadline)
    probe.thread.join()
    run: ProbeRun = probe.value if probe.error is None else ProbeRun(status="not_started")
    if probe.error is not None:
        run.message = f"probe runner failed: {probe.error}"
    facts["platform"] = run.stages.get("platform") or {}
    if packages_job is not None:
        packages = packages_job.result(deadline.left(opts.timeout_s), "package metadata")
    else:
        packages = run.stages.get("packages") or {}
    # who owns each torch metadata directory: conda's pytorch carries one too (one install)
    facts["packages"] = conda_owner.annotate(packages, facts["platform"])
    # torch libraries its RECORD does not list: an older install's, beside this one
    facts["packages"] = torch_leftovers.annotate(facts["packages"])
    facts["torch"] = torch_facts_from_run(run)
    facts["compiled_extensions"] = _extension_facts(facts, deadline, extensions_job)
    facts["smoke"] = _smoke_facts(opts, run, watch, deadline)
    facts["probe"] = {"torch": run.summary()}
    facts["collected"]["duration_s"] = round(time.monotonic() - t0, 4)
    return facts


def _early_extension_search() -> extension_links.Found:
    roots = extension_links.roots_of(sys.path, locate.user_cwd(), [sys.prefix, sys.base_prefix])
    return extension_links.search(roots, extension_links.EARLY_BUDGET_S)


def _extension_facts(
    facts: dict[str, Any], deadline: _Deadline, early: _Background | None
) -> dict[str, Any]:
    """Extensions under the examined interpreter's import path and the working directory whose
    links the installed torch does not satisfy: read from their files, within the deadline."""
    torch_file = facts["torch"].get("file")
    dists = facts["packages"].get("torch_distributions") or [{}]
    location = dists[0].get("location") if isinstance(dists[0], dict) else None
    if isinstance(torch_file, str):
        torch_dir = os.path.dirname(torch_file)
    elif isinstance(location, str):
        torch_dir = os.path.join(location, "torch")
    else:
        return {"status": "skipped", "error": "torch is not installed"}
    platform = facts["platform"]
    prefixes = [platform.get("prefix"), platform.get("base_prefix")]
    roots = extension_links.roots_of(platform.get("sys_path"), locate.user_cwd(), prefixes)
    left = deadline.left(extension_links.BUDGET_S)
    if left <= 0:
        return {"status": "skipped", "error": "the run's deadline passed before the search"}
    found = extension_links.Found()
    if early is not None:
        done = early.result(left, "the search for compiled extensions")
        if isinstance(done, extension_links.Found):
            found = done
    # What the probe's import path holds that this process's does not (normally nothing).
    rest = [r for r in roots if os.path.realpath(r) not in found.searched]

    def search_and_judge() -> dict[str, Any]:
        return extension_links.judge(torch_dir, found.merge(extension_links.search(rest, left)))

    job = _Background(search_and_judge)
    return job.result(deadline.left(left) + 1.0, "the search for compiled extensions")


def _probe_argv(opts: GatherOptions, packages_here: bool) -> list[str]:
    args = list(opts.extra_probe_args)
    if packages_here:
        args.append("--no-packages")
    if opts.smoke:
        args += ["--smoke", opts.smoke_size]
    return child_argv(opts.python, "torch_probe", *args)


def _local_facts(opts: GatherOptions, watch: _Watch, deadline: _Deadline) -> dict[str, Any]:
    """What this process reads itself while the probe child runs: NVML, toolchain, host."""
    nvml_job = _Background(nvml.gather)
    toolchain_job = _Background(toolchain.gather)
    watch.jobs = [(nvml_job, "the NVIDIA driver (NVML)"), (toolchain_job, "nvcc and c++ --version")]
    host_facts = host.gather()
    network_facts = network.gather()
    facts: dict[str, Any] = {
        "facts_version": FACTS_VERSION,
        "collected": {
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "torchdoctor_version": __version__,
            "python": opts.python,
        },
        "env": host.selected_env(),
        "nvml": nvml_job.result(deadline.left(NVML_TIMEOUT_S), "NVML"),
        "host": host_facts,
        "toolchain": toolchain_job.result(deadline.left(TOOLCHAIN_TIMEOUT_S), "toolchain"),
        "container": container.gather(),
        "network": network_facts,
    }
    if opts.interpreter is not None:
        facts["interpreter"] = opts.interpreter
    return facts


def _smoke_facts(
    opts: GatherOptions, run: ProbeRun, watch: _Watch, deadline: _Deadline
) -> dict[str, Any]:
    """The smoke tests' results, rerunning the devices a hung or crashed one left untested."""
    if not opts.smoke:
        return {"enabled": False}

    def rerun(devices: list[str]) -> ProbeRun:
        if deadline.left(opts.timeout_s) < MIN_RERUN_S:  # each device left is named, not dropped
            return ProbeRun(
                status="timeout",
                unfinished_stage=f"smoke.{devices[0]}",
                message=f"not tested: the run's deadline ({opts.timeout_s:g} s, --timeout) "
                "passed before its turn",
            )
        argv = child_argv(
            opts.python,
            "torch_probe",
            "--smoke",
            opts.smoke_size,
            "--smoke-only",
            ",".join(devices),
        )
        return watch.run(argv, opts.timeout_s, deadline.until)

    return gather_smoke.collect(run, opts.smoke_size, rerun)
