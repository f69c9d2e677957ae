"""Facts: the one JSON-serialisable record of everything observed about a machine.

Gathering is the only side-effecting step of a diagnosis. A recorded facts file replays the
whole diagnosis anywhere (``--facts FILE``), which is how every check is tested without a GPU.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__, gather_smoke
from .probes import container, host, nvml, toolchain, torch_probe
from .probes.runner import ProbeRun, python_argv, run_probe

FACTS_VERSION = 1
PROBE_DIR = Path(__file__).parent / "probes"
# NVML can hang on a wedged driver; it runs beside the torch probe and gets this long.
NVML_TIMEOUT_S = 15.0
# nvcc/c++/ninja --version, each with its own short timeout.
TOOLCHAIN_TIMEOUT_S = 20.0


Facts = dict[str, Any]
# Top-level sections of a facts record; each is a JSON object.
SECTIONS = (
    "collected", "env", "nvml", "host", "platform", "packages", "torch", "smoke", "probe",
    "toolchain", "container", "interpreter",
)  # fmt: skip


def dig(facts: Facts, path: str, default: Any = None) -> Any:
    """``dig(facts, "torch.build.cuda")``: a nested lookup that tolerates missing levels."""
    node: Any = facts
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return default if node is None else node


@dataclass
class GatherOptions:
    python: str
    timeout_s: float = 60.0
    smoke: bool = True
    smoke_size: str = "quick"
    smoke_timeout_s: float = 60.0
    extra_probe_args: list[str] = field(default_factory=list)
    # Which interpreter was examined and why (interpreter.Choice.to_facts()).
    interpreter: dict[str, Any] | None = None


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


def gather(opts: GatherOptions) -> Facts:
    """Run the torch probe in a child while NVML and host facts are read here, in parallel."""
    t0 = time.monotonic()
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
    probe = _Background(
        lambda: run_probe(argv, opts.timeout_s, phase_timeouts={"smoke": opts.smoke_timeout_s})
    )
    nvml_job = _Background(nvml.gather)
    packages_job = _Background(torch_probe.package_facts) if packages_here else None
    toolchain_job = _Background(toolchain.gather)
    host_facts = host.gather()
    facts: Facts = {
        "facts_version": FACTS_VERSION,
        "collected": {
            "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "torchdoctor_version": __version__,
            "python": opts.python,
        },
        "env": host.selected_env(),
        "nvml": nvml_job.result(NVML_TIMEOUT_S, "NVML"),
        "host": host_facts,
        "toolchain": toolchain_job.result(TOOLCHAIN_TIMEOUT_S, "toolchain"),
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
        packages = packages_job.result(opts.timeout_s, "package metadata")
    else:
        packages = run.stages.get("packages") or {}
    facts["packages"] = packages
    facts["torch"] = torch_facts_from_run(run)
    if opts.smoke:

        def rerun(devices: list[str]) -> ProbeRun:
            argv = python_argv(
                opts.python, script, "--smoke", opts.smoke_size, "--smoke-only", ",".join(devices)
            )
            return run_probe(argv, opts.timeout_s, phase_timeouts={"smoke": opts.smoke_timeout_s})

        facts["smoke"] = gather_smoke.collect(run, opts.smoke_size, rerun)
    else:
        facts["smoke"] = {"enabled": False}
    facts["probe"] = {"torch": run.summary()}
    facts["collected"]["duration_s"] = round(time.monotonic() - t0, 4)
    return facts


def load(path: str) -> Facts:
    """Read a facts file; raises ValueError with a user-facing message when it is not one."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read facts file {path!r}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"facts file {path!r} is not valid JSON: {exc}") from exc
    if isinstance(data, dict) and "facts" in data and "schema_version" in data:
        data = data["facts"]  # a whole report is accepted too: its facts replay the diagnosis
    if not isinstance(data, dict) or "facts_version" not in data:
        raise ValueError(f"{path!r} is not a torchdoctor facts file (no facts_version)")
    bad = [k for k in SECTIONS if k in data and not isinstance(data[k], dict)]
    if bad:
        raise ValueError(f"{path!r} is not a valid facts file: {', '.join(bad)} must be objects")
    if data["facts_version"] != FACTS_VERSION:
        raise ValueError(
            f"{path!r} has facts_version {data['facts_version']}; "
            f"this torchdoctor reads version {FACTS_VERSION}"
        )
    return data


def dump(facts: Facts, path: str) -> None:
    Path(path).write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n", encoding="utf-8")
