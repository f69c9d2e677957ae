"""Run one command of a fix: an argv list (never a shell), its own process group, a deadline, and
its output kept in a temporary file so a kill loses none of it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

OUTPUT_TAIL_CHARS = 4000
STOP_WAIT_S = 10.0  # after SIGINT, before SIGKILL


@dataclass
class Ran:
    argv: list[str]
    returncode: int | None  # None: it did not start, or was killed
    stdout: str
    stderr_tail: str
    duration_s: float
    timed_out: bool = False
    error: str = ""  # why it did not start

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def why(self) -> str:
        """One line saying how it ended, for a finding."""
        if self.error:
            return self.error
        if self.timed_out:
            return f"did not finish within its deadline ({self.duration_s:.0f} s) and was killed"
        lines = [ln for ln in self.stderr_tail.splitlines() if ln.strip()]
        last = f": {lines[-1].strip()[:300]}" if lines else ""
        return f"exited with code {self.returncode}{last}"

    def to_dict(self) -> dict:
        return {
            "argv": self.argv,
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "duration_s": round(self.duration_s, 3),
            "output_tail": (self.stdout[-OUTPUT_TAIL_CHARS:] + self.stderr_tail)[
                -OUTPUT_TAIL_CHARS:
            ],
            **({"error": self.error} if self.error else {}),
        }


def run(argv: list[str], timeout_s: float, env: dict[str, str] | None = None) -> Ran:
    """Run ``argv`` to the end or its deadline. An exception (an interrupt) kills its group first."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+b") as out, tempfile.TemporaryFile("w+b") as err:
        try:
            with _stoppable():
                proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                    start_new_session=True,
                )  # fmt: skip
        except OSError as exc:
            return Ran(argv, None, "", "", 0.0, error=f"could not start {argv[0]}: {exc.strerror}")
        try:
            proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # timed out or interrupted: nothing it started outlives it
            if proc.poll() is None:
                kill_group(proc)
        return Ran(
            argv,
            None if timed_out else proc.returncode,
            _read(out),
            _read(err)[-OUTPUT_TAIL_CHARS:],
            time.monotonic() - t0,
            timed_out,
        )


@contextlib.contextmanager
def _stoppable() -> Iterator[None]:
    """A command started while SIGINT or SIGTERM is ignored here (during the restore, or in a
    run started with them ignored: a script's `cmd &`) would inherit the ignore, and
    kill_group's SIGINT would not stop it: pip would be killed 10 s later, its stash folders
    left. exec resets a caught signal and keeps an ignored one, so while the command starts the
    ignore is a handler that does nothing."""
    main = threading.current_thread() is threading.main_thread()  # handlers are set there only
    ignored = [
        s for s in (signal.SIGINT, signal.SIGTERM) if main and signal.getsignal(s) == signal.SIG_IGN
    ]
    for s in ignored:
        signal.signal(s, _nothing)
    try:
        yield
    finally:
        for s in ignored:
            signal.signal(s, signal.SIG_IGN)


def _nothing(signum: int, frame: object) -> None:
    """Ignore the signal here; unlike SIG_IGN, a command started now does not inherit that."""


def kill_group(proc: subprocess.Popen) -> None:
    """End the command and whatever it started: INT (pip then removes its temporary folders, as
    on Ctrl-C), a moment, then KILL; then reap it."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=STOP_WAIT_S)
        return
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _read(fh) -> str:
    fh.seek(0)
    return fh.read().decode("utf-8", "replace")
