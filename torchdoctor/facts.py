"""Facts: the one JSON-serialisable record of everything observed about a machine.

Gathering is the only side-effecting step of a diagnosis. A recorded facts file replays the
whole diagnosis anywhere (``--facts FILE``), which is how every check is tested without a GPU.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__, gather_smoke, progress
from .facts_record import ShapeError, load_facts
from .probes import container, host, nvml, toolchain, torch_probe
from .probes.runner import ProbeRun, python_argv, run_probe
from .safeio import InputError, read_text_bounded
from .typed_json import Record, too_deep

FACTS_VERSION = 1
PROBE_DIR = Path(__file__).parent / "probes"
# The whole run's deadline by default (--timeout): probe, smoke tests and reruns together.
TIMEOUT_S = 30.0
# A rerun past a hung device needs at least this long to import torch and test anything.
MIN_RERUN_S = 2.0
# NVML can hang on a wedged driver; it runs beside the torch probe and gets this long.
NVML_TIMEOUT_S = 15.0
# nvcc/c++/ninja --version, each with its own short timeout.
TOOLCHAIN_TIMEOUT_S = 20.0


Facts = dict[str, Any]


def dig(facts: Facts | Record, path: str, default: Any = None) -> Any:
    """``dig(facts, "torch.build.cuda")``: a nested lookup that tolerates missing levels."""
    node: Any = facts.raw if isinstance(facts, Record) else facts
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return default if node is None else node


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
        return _gather(opts, t0, watch)


def _gather(opts: GatherOptions, t0: float, watch: _Watch) -> Facts:
    until = t0 + opts.timeout_s

    def left(cap: float) -> float:
        return max(0.0, min(cap, until - time.monotonic()))

    script = str(PROBE_DIR / "torch_probe.py")
    args = list(opts.extra_probe_args)
    # Same interpreter as ours: read package metadata here, on the other core, while the child
    # imports torch (a metadata scan costs tens of ms that would otherwise be serial).
    packages_here = os.path.abspath(opts.python) == os.path.abspath(sys.executable)
    if packages_here:
        args.append("--no-packages")
    if opts.smoke:
        args += ["--smoke", opts.smoke_size]
    argv = python_argv(opts.python, script, *args)
    probe = _Background(lambda: watch.run(argv, opts.timeout_s, until))
    nvml_job = _Background(nvml.gather)
    packages_job = _Background(torch_probe.package_facts) if packages_here else None
    toolchain_job = _Background(toolchain.gather)
    watch.jobs = [(nvml_job, "the NVIDIA driver (NVML)"), (toolchain_job, "nvcc and c++ --version")]
    host_facts = host.gather()
    facts: Facts = {
        "facts_version": FACTS_VERSION,
        "collected": {
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "torchdoctor_version": __version__,
            "python": opts.python,
        },
        "env": host.selected_env(),
        "nvml": nvml_job.result(left(NVML_TIMEOUT_S), "NVML"),
        "host": host_facts,
        "toolchain": toolchain_job.result(left(TOOLCHAIN_TIMEOUT_S), "toolchain"),
        "container": container.gather(),
    }
    if opts.interpreter is not None:
        facts["interpreter"] = opts.interpreter
    probe.thread.join()
    run: ProbeRun = probe.value if probe.error is None else ProbeRun(status="not_started")
    if probe.error is not None:
        run.message = f"probe runner failed: {probe.error}"
    facts["platform"] = run.stages.get("platform") or {}
    if packages_job is not None:
        packages = packages_job.result(left(opts.timeout_s), "package metadata")
    else:
        packages = run.stages.get("packages") or {}
    facts["packages"] = packages
    facts["torch"] = torch_facts_from_run(run)
    if opts.smoke:

        def rerun(devices: list[str]) -> ProbeRun:
            if left(opts.timeout_s) < MIN_RERUN_S:  # each device left is named, not dropped
                return ProbeRun(
                    status="timeout",
                    unfinished_stage=f"smoke.{devices[0]}",
                    message=f"not tested: the run's deadline ({opts.timeout_s:g} s, --timeout) "
                    "passed before its turn",
                )
            argv = python_argv(
                opts.python, script, "--smoke", opts.smoke_size, "--smoke-only", ",".join(devices)
            )
            return watch.run(argv, opts.timeout_s, until)

        facts["smoke"] = gather_smoke.collect(run, opts.smoke_size, rerun)
    else:
        facts["smoke"] = {"enabled": False}
    facts["probe"] = {"torch": run.summary()}
    facts["collected"]["duration_s"] = round(time.monotonic() - t0, 4)
    return facts


class FactsError(ValueError):
    """A facts file that cannot be used; the message is one line for the user."""


def load(path: str) -> Facts:
    """Read a facts file (``-``: stdin): bounded, parsed, and checked against its shape.

    A facts file is untrusted input (pasted into an issue, edited by hand): whatever it holds,
    the result is either facts every check and renderer can trust, or a FactsError.
    """
    try:
        text = read_text_bounded(path)
    except InputError as exc:
        raise FactsError(str(exc)) from None
    try:
        data = json.loads(text, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise FactsError(f"{path!r} is nested too deeply to be a facts file") from None
    except ValueError as exc:
        from .collect_env import parse  # pasted `python -m torch.utils.collect_env` output

        report = parse(text)
        if report is not None:
            return report
        if text.lstrip().startswith(("{", "[")):
            raise FactsError(f"facts file {path!r} is not valid JSON: {exc}") from None
        where = "standard input" if path == "-" else repr(path)
        raise FactsError(f"{where} is not a facts/report JSON or a collect_env report") from None
    return from_json(data, path)


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")  # Python's json accepts it; checks cannot


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def from_json(data: Any, path: str) -> Facts:
    """Parsed JSON -> checked facts (a whole ``check --json`` report is accepted too)."""
    if isinstance(data, dict) and "facts" in data and "schema_version" in data:
        data = data["facts"]  # a whole report: its facts replay the diagnosis
    if not isinstance(data, dict) or "facts_version" not in data:
        raise FactsError(f"{path!r} is not a torchdoctor facts file (no facts_version)")
    if data["facts_version"] != FACTS_VERSION:
        raise FactsError(
            f"{path!r} has facts_version {str(data['facts_version'])[:20]}; "
            f"this torchdoctor reads version {FACTS_VERSION}"
        )
    if too_deep(data):
        raise FactsError(f"{path!r} is nested too deeply to be a facts file")
    try:
        load_facts(data)  # the typed record's definition is the file format
    except ShapeError as exc:
        raise FactsError(str(exc)) from None
    return data


def dumps(facts: Facts) -> str:
    return json.dumps(facts, indent=2, sort_keys=True) + "\n"
