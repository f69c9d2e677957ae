"""Run a probe script in a child process with a deadline, and keep whatever it said.

Why a child: CUDA initialisation can hang in a C call (no signal interrupts it) or segfault.
The child gets its own process session; when it ends (done, crashed or past its deadline) and
when torchdoctor exits (Ctrl-C included), that whole group is killed, so nothing it spawned —
a plugin's helper started during `import torch` — outlives torchdoctor.
Its stdout is read line by line as it arrives; a line is one JSON event (see child/torch_probe.py).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STDERR_TAIL_CHARS = 4000


@dataclass
class ProbeRun:
    """What a probe left behind, whichever way it ended."""

    status: str  # ok | timeout | crashed | failed | not_started
    stages: dict[str, Any] = field(default_factory=dict)  # stage -> data
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage -> error record
    stage_durations: dict[str, float] = field(default_factory=dict)
    unfinished_stage: str | None = None  # begun and never ended: where it hung or died
    phase: str | None = None
    phase_info: dict[str, Any] = field(default_factory=dict)  # the last phase event, as sent
    returncode: int | None = None
    signal: str | None = None
    stderr_tail: str = ""
    garbage_lines: int = 0
    duration_s: float = 0.0
    message: str = ""
    since: float = field(default_factory=time.monotonic)  # when the last stage began or ended

    def summary(self) -> dict[str, Any]:
        """The part of a run that belongs in facts (without the stage data itself)."""
        return {
            "status": self.status,
            "message": self.message,
            "unfinished_stage": self.unfinished_stage,
            "phase": self.phase,
            "returncode": self.returncode,
            "signal": self.signal,
            "stderr_tail": self.stderr_tail,
            "garbage_lines": self.garbage_lines,
            "duration_s": round(self.duration_s, 4),
            "stage_durations": {k: round(v, 4) for k, v in self.stage_durations.items()},
        }


class _Reader(threading.Thread):
    """Parses the child's stdout into events; records when each phase starts."""

    def __init__(self, stream, run: ProbeRun, on_phase) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.run_ = run
        self.on_phase = on_phase
        self.saw_done = False

    def run(self) -> None:
        for raw in self.stream:
            try:
                event = json.loads(raw)
            except ValueError:
                event = None
            if not isinstance(event, dict):
                if raw.strip():
                    self.run_.garbage_lines += 1
                continue
            self.handle(event)

    def handle(self, event: dict[str, Any]) -> None:
        run = self.run_
        kind = event.get("event")
        name = event.get("stage")
        data = event.get("data")
        # The child is untrusted output (any --python interpreter): malformed events are garbage.
        if kind in ("begin", "end", "error") and not isinstance(name, str):
            self.run_.garbage_lines += 1
            return
        if (kind == "end" and not isinstance(data, (dict, type(None)))) or (
            kind == "error" and not isinstance(event.get("error"), (dict, type(None)))
        ):
            self.run_.garbage_lines += 1
            return
        if kind in ("begin", "end", "error"):
            run.since = time.monotonic()
        if kind == "begin":
            run.unfinished_stage = name
        elif kind == "end":
            run.stages[name] = data
            if isinstance(event.get("duration_s"), (int, float)):
                run.stage_durations[name] = float(event["duration_s"])
            run.unfinished_stage = None
        elif kind == "error":
            run.errors[name] = event.get("error") or {}
            run.unfinished_stage = None
        elif kind == "phase":
            run.phase = event.get("phase") if isinstance(event.get("phase"), str) else None
            run.phase_info = event
            self.on_phase(run.phase)
        elif kind == "done":
            self.saw_done = True


# Children still running, so that Ctrl-C or SIGTERM on torchdoctor never leaves a probe behind
# (each probe has its own session, so the terminal's SIGINT does not reach it).
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Condition()
_STARTING = 0  # Popen calls in flight: their child may exist before Popen returns
_CLOSING = False  # set at exit: a probe thread that starts a child after that kills it at once


def kill_all(wait_s: float = 2.0) -> None:
    """Kill every probe group; first let in-flight starts finish so none slips through."""
    global _CLOSING
    with _LIVE_LOCK:
        _CLOSING = True
        _LIVE_LOCK.wait_for(lambda: _STARTING == 0, timeout=wait_s)
        procs = list(_LIVE)
    for proc in procs:
        _kill_group(proc)


def _begin_start() -> None:
    global _STARTING
    with _LIVE_LOCK:
        _STARTING += 1


def _track(proc: subprocess.Popen | None) -> None:
    """Record a started child (None: the start failed) and end its in-flight count."""
    global _STARTING
    with _LIVE_LOCK:
        if proc is not None:
            _LIVE.add(proc)
        _STARTING -= 1
        closing = _CLOSING
        _LIVE_LOCK.notify_all()
    if closing and proc is not None:
        _kill_group(proc)


atexit.register(kill_all)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _exited(proc: subprocess.Popen, wait_s: float) -> bool:
    """Has the child exited? On POSIX it is not reaped yet (WNOWAIT): while its zombie stands,
    its process group id cannot be reused, so killing that group afterwards hits only its own."""
    if os.name != "posix":  # pragma: no cover - Windows
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    end = time.monotonic() + wait_s
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return True
        except ChildProcessError:  # reaped elsewhere: gone
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(min(0.01, max(0.0, end - time.monotonic())))


def run_probe(
    argv: list[str],
    timeout_s: float,
    phase_timeouts: dict[str, float] | None = None,
    env: dict[str, str] | None = None,
    until: float | None = None,
    run: ProbeRun | None = None,
) -> ProbeRun:
    """Run ``argv`` (a Python command) and collect its events.

    ``timeout_s`` bounds the first phase; when the child announces a phase named in
    ``phase_timeouts``, the deadline restarts with that phase's budget. ``until`` (a
    time.monotonic() value) caps every phase: a whole run's deadline. Pass ``run`` to watch
    the stages while they happen (progress on a terminal); it is filled and returned.
    """
    run = run if run is not None else ProbeRun(status="not_started")
    phase_timeouts = phase_timeouts or {}
    cap = float("inf") if until is None else until
    deadline = [min(cap, time.monotonic() + timeout_s)]

    def on_phase(phase: str | None) -> None:
        if phase in phase_timeouts:
            deadline[0] = min(cap, time.monotonic() + phase_timeouts[phase])

    t0 = run.since = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err:
        try:
            proc = _start(argv, env, err)
        except OSError as exc:
            run.message = f"could not start {argv[0]}: {exc.strerror or exc}"
            run.duration_s = time.monotonic() - t0
            return run
        reader = _Reader(proc.stdout, run, on_phase)
        reader.start()
        timed_out = not _wait(proc, deadline)
        _end(proc)
        reader.join(timeout=2)
        run.duration_s = time.monotonic() - t0
        run.returncode = proc.returncode
        err.seek(0)
        run.stderr_tail = err.read()[-STDERR_TAIL_CHARS:]
    _judge(run, timed_out, reader.saw_done)
    return run


def _start(argv: list[str], env: dict[str, str] | None, err) -> subprocess.Popen:
    """Start the child in its own session (group), tracked so that exit kills it."""
    kwargs: dict[str, Any] = {"cwd": child_cwd()}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    else:  # pragma: no cover - Windows
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    _begin_start()
    proc = None
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            text=True,
            encoding="utf-8",
            errors="replace",
            **kwargs,
        )
    finally:
        _track(proc)
    return proc


def _wait(proc: subprocess.Popen, deadline: list[float]) -> bool:
    """Wait for the child to exit; False when ``deadline[0]`` (which a phase may move) passed."""
    while not _exited(proc, min(0.05, max(0.0, deadline[0] - time.monotonic()))):
        if time.monotonic() >= deadline[0]:
            return False
    return True


def _end(proc: subprocess.Popen) -> None:
    """Whichever way it ended, what it started (a plugin's server spawned during
    `import torch`, a sitecustomize's helper) ends with it; then the child is reaped."""
    _kill_group(proc)
    proc.wait()
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def _judge(run: ProbeRun, timed_out: bool, saw_done: bool) -> None:
    """Status and message from how the child ended."""
    where = run.unfinished_stage or "between stages"
    code = run.returncode
    if timed_out:
        run.status = "timeout"
        run.message = f"probe did not finish within its deadline; it was stuck in: {where}"
    elif code and code < 0:
        run.status = "crashed"
        try:
            run.signal = signal.Signals(-code).name
        except ValueError:
            run.signal = str(-code)
        run.message = f"probe was killed by {run.signal} during: {where}"
    elif code != 0 or not saw_done:
        run.status = "failed"
        run.message = f"probe exited with code {code} during: {where}"
    else:
        run.status = "ok"


def child_cwd() -> str | None:
    """None (inherit ours), or the root directory when ours was deleted: a child started in a
    deleted directory can fail to load torch (oneMKL aborts), a false "torch cannot be imported"."""
    try:
        os.getcwd()
    except OSError:
        return os.path.abspath(os.sep)
    return None


# probes/child/ is loaded in the child as a package under this private name, never by putting
# its folder on sys.path: so it works under -I and PYTHONSAFEPATH=1 (which keep a script's folder
# off sys.path), a user's module named `locate` cannot stand in for ours, and ours cannot stand
# in for theirs (or torch's) while the probe imports torch.
CHILD_DIR = Path(__file__).resolve().parent / "child"
CHILD_PACKAGE = "_torchdoctor_child"
# `-c` puts the working directory first on sys.path (not under -I/-P/PYTHONSAFEPATH); it is taken
# off, as for a script run by path: a torch.py there is a shadow to report, not the torch probed.
_BOOTSTRAP = """\
import importlib.util, runpy, sys
if not getattr(sys.flags, "safe_path", sys.flags.isolated):
    del sys.path[0]
spec = importlib.util.spec_from_file_location({package!r}, {init!r}, submodule_search_locations=[{folder!r}])
package = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = package
spec.loader.exec_module(package)
runpy.run_module({module!r}, run_name="__main__", alter_sys=True)
"""


def child_argv(python: str, module: str, *args: str) -> list[str]:
    """The command that runs probes/child/``module``.py as __main__ under ``python`` with
    ``args`` as its sys.argv[1:]. ``-u``: unbuffered, so each event reaches us before a crash."""
    boot = _BOOTSTRAP.format(
        package=CHILD_PACKAGE,
        init=str(CHILD_DIR / "__init__.py"),
        folder=str(CHILD_DIR),
        module=f"{CHILD_PACKAGE}.{module}",
    )
    return [python, "-u", "-c", boot, *args]


def default_python() -> str:
    return sys.executable
