"""Ctrl-C is exit 130 and one line, whenever it comes.

Python runs a signal handler at the next bytecode of the main thread, wherever that is. When that
is a weakref callback, a ``__del__`` or a garbage-collector callback (the import system runs one on
each module lock it frees), the exception the handler raises is "ignored": printed, dropped, and
the run goes on as if no Ctrl-C had come. The hook here sees that exception and sends the signal
to the main thread again, so the handler runs once more, at the next bytecode outside the callback.

Only the standard library is imported here: ``__main__`` installs this before anything else loads.
"""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
from typing import Any


class Interrupted(BaseException):
    """Ctrl-C, raised by our SIGINT handler: click turns a KeyboardInterrupt into a blank line and
    "Aborted!", and we want one line and exit 130 whenever it comes."""


def on_sigint(signum: int, frame: Any) -> None:
    raise Interrupted


def from_ctrl_c(exc: BaseException) -> bool:
    """Is Ctrl-C the cause of ``exc``? Python 3.10 and 3.11 wrap an exception raised while a
    class is made (in ``__set_name__``: platform.py's uname_result at import) in a RuntimeError."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, (Interrupted, KeyboardInterrupt)):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


_previous_hook = sys.unraisablehook
_main_thread = _thread.get_ident()  # replaced by the thread that installs the hook


def _signal_main_thread() -> None:
    if hasattr(signal, "pthread_kill"):
        # A real signal, to the main thread: a wait it is blocked in (a join) ends with EINTR.
        signal.pthread_kill(_main_thread, signal.SIGINT)
    else:  # Windows: marked pending, run at the main thread's next bytecode
        _thread.interrupt_main(signal.SIGINT)


def _redeliver(unraisable: Any) -> None:
    if issubclass(unraisable.exc_type, (Interrupted, KeyboardInterrupt)):
        # Sent from a new thread: sent from here, the handler would run before this hook returns,
        # and the hook's exceptions are dropped too. (No new thread at interpreter shutdown: the
        # run is ending anyway.)
        with contextlib.suppress(RuntimeError):
            _thread.start_new_thread(_signal_main_thread, ())
        return
    _previous_hook(unraisable)


def install_redelivery() -> None:
    """Ctrl-C that lands in a callback whose exceptions Python drops is delivered again. Call it
    from the main thread, the one Python runs signal handlers in."""
    global _previous_hook, _main_thread
    _main_thread = _thread.get_ident()
    if sys.unraisablehook is not _redeliver:
        _previous_hook = sys.unraisablehook
        sys.unraisablehook = _redeliver
