"""A probe stage run in a forked child while the probe goes on (Linux only).

Importing the companions (torchvision, torchaudio, triton, ...) took 4.3 s of an 11.7 s probe
on a real H200 machine (2026-11-26), longer than torch's own import, and none of it needs the
GPU; the smoke tests that follow need the GPU and little of the CPU. Forked right after
``import torch`` and before anything initialises CUDA (a forked child must never touch a CUDA
context its parent created), the companion imports run beside the CUDA stages instead of before
them. Standard library only, like every probe child module.

Nothing outlives the probe: the child dies with its parent (PR_SET_PDEATHSIG) and is in the
probe's process group, which the runner kills at the deadline. Its stdout goes to /dev/null so a
companion that prints at import cannot corrupt the event stream; its result comes back through
a pipe, and a child that dies without one is itself the finding (an import that crashed).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import warnings


class Forked:
    """A running background stage: ``ready()`` polls, ``result()`` waits and reaps."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd

    def ready(self) -> bool:
        return bool(select.select([self.fd], [], [], 0)[0])

    def result(self) -> dict:
        """{'data', 'duration_s', 'warnings'} or {'error': {...}}; waits for the child."""
        chunks = []
        while chunk := os.read(self.fd, 1 << 16):
            chunks.append(chunk)
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            how = (
                f"killed by signal {os.WTERMSIG(status)}"
                if os.WIFSIGNALED(status)
                else f"exit status {os.waitstatus_to_exitcode(status)}"
            )
            return {"error": {"type": "ChildDied", "message": f"the import child died: {how}"}}


def _die_with_parent() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort: the runner's process-group kill remains
        pass


def _payload(fn, error_record) -> dict:
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = fn()
    except BaseException as exc:  # noqa: BLE001 - the probe reports everything
        return {"error": error_record(exc)}
    out = {"data": data, "duration_s": time.perf_counter() - t0}
    if caught:
        out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    return out


def start(fn, error_record) -> Forked | None:
    """Run ``fn()`` in a forked child; None where fork is not safe or fails (run it inline).
    ``error_record(exc)`` is the probe's own shape of an error, the same as an inline stage's."""
    if not sys.platform.startswith("linux"):
        return None  # no fork on Windows; macOS frameworks are not fork-safe after import
    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid:
        os.close(w)
        return Forked(pid, r)
    try:  # the child: never returns
        os.close(r)
        _die_with_parent()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        raw = json.dumps(_payload(fn, error_record), default=str).encode()
        while raw:
            raw = raw[os.write(w, raw) :]
    finally:
        os._exit(0)
