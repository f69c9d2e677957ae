"""On a terminal, say on stderr what torchdoctor is waiting for once a wait takes a few seconds.

A hung CUDA initialisation used to look like a frozen terminal until the deadline. The line is
rewritten in place ("waiting for CUDA initialisation… 5 s") and erased before the report; off a
terminal (a pipe, CI logs) nothing is written.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

DELAY_S = 3.0  # shorter waits are normal (import torch alone takes a second or two)
TICK_S = 0.25

# The torch probe's stages (probes/child/torch_probe.py, smoke_probe.py) in words.
STAGES = {
    "platform": "the Python interpreter to start",
    "packages": "package metadata",
    "import": "import torch",
    "build": "torch's build information",
    "cuda": "the CUDA device list",
    "cuda.init": "CUDA initialisation",
    "mps": "the MPS backend",
    "libs": "torch's shared libraries",
    "rocm": "the ROCm runtime",
    "xpu": "the XPU runtime",
}


def describe(stage: str | None) -> str:
    if stage is None:
        return "the torch probe"
    if stage.startswith("smoke.peer."):
        return f"the copy test {stage[len('smoke.peer.') :].replace('>', ' → ')}"
    if stage.startswith("smoke."):
        return f"the smoke test on {stage[len('smoke.') :]}"
    return STAGES.get(stage, stage)


def on_terminal(stream: TextIO | None) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, OSError):  # a closed stream
        return False


class Waiting:
    """``with Waiting(current): ...`` where ``current()`` is (what, since monotonic) or None."""

    def __init__(
        self,
        current: Callable[[], tuple[str, float] | None],
        stream: TextIO | None = None,
        delay_s: float = DELAY_S,
    ) -> None:
        self.current = current
        self.stream = sys.stderr if stream is None else stream
        self.delay_s = delay_s
        self.shown = False
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> Waiting:
        if on_terminal(self.stream):
            self.thread = threading.Thread(
                target=self._loop, name="torchdoctor-waiting", daemon=True
            )
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(1.0)
        self._write("")

    def _write(self, line: str) -> None:
        if not line and not self.shown:
            return
        try:
            self.stream.write("\r" + line + "\x1b[K")
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: nothing to tell
            self.stop.set()
        self.shown = bool(line)

    def _loop(self) -> None:
        while not self.stop.wait(TICK_S):
            now = self.current()
            waited = time.monotonic() - now[1] if now else 0.0
            if now is None or waited < self.delay_s:
                self._write("")
            else:
                self._write(f"waiting for {now[0]}… {int(waited)} s")
