"""Ctrl-C is exit 130 and one line, whenever it comes; SIGTERM is exit 143.

Python runs a signal handler at the next bytecode of the main thread, wherever that is. When that
is a weakref callback, a ``__del__`` or a garbage-collector callback (the import system runs one on
each module lock it frees), the exception the handler raises is "ignored": printed, dropped, and
the run goes on as if no signal had come. The hook here sees that exception, notes the signal as
pending (the CLI's last step reads it) and sends it to the main thread again, so the handler runs
once more, at the next bytecode outside the callback.

Only builtin modules are imported here: ``__main__`` imports this before anything else loads.
"""

import _thread
import signal
import sys


class SignalRaised(BaseException):
    """Raised by a signal handler of ours; sent again when Python drops it."""

    signum: int = signal.SIGINT

    def rearm(self) -> None:
        """Undo what the handler changed before raising, so that the signal sent again is not
        ignored (fix's stop handler ignores further signals once it has stopped)."""


class Interrupted(SignalRaised):
    """Ctrl-C, raised by our SIGINT handler: click turns a KeyboardInterrupt into a blank line and
    "Aborted!", and we want one line and exit 130 whenever it comes."""


class Terminated(SystemExit, SignalRaised):
    """SIGTERM (`docker stop`, a CI timeout): leave through Python, so probes are killed at exit."""

    signum = signal.SIGTERM


# Signals the process was started with ignored: a script's `cmd &` (no job control) starts cmd
# with SIGINT ignored, so that a Ctrl-C meant for the foreground job leaves it running. The Unix
# rule (and Python's own, for SIGINT) is to keep such an ignore; read once, at the first import,
# before any handler of ours.
IGNORED_AT_START = frozenset(
    s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) == signal.SIG_IGN
)


def handle(signum: int, handler: object) -> None:
    """Install handler for signum, unless the process was started with signum ignored."""
    if signum not in IGNORED_AT_START:
        signal.signal(signum, handler)


def on_sigint(signum: int, frame: object) -> None:
    global _pending
    _pending = None  # delivered: whatever was dropped before is handled now
    raise Interrupted


def on_sigterm(signum: int, frame: object) -> None:
    global _pending
    _pending = None
    raise Terminated(128 + signal.SIGTERM)


def from_ctrl_c(exc: BaseException) -> bool:
    """Is Ctrl-C the cause of ``exc``? Python 3.10 and 3.11 wrap an exception raised while a
    class is made (in ``__set_name__``: platform.py's uname_result at import) in a RuntimeError."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        if isinstance(cur, (Interrupted, KeyboardInterrupt)):
            return True
        seen.add(id(cur))
        todo += [cur.__cause__, cur.__context__]
    return False


def take_pending() -> int | None:
    """The signal a callback dropped and no handler has run for since, once."""
    global _pending
    signum, _pending = _pending, None
    return signum


_pending: int | None = None
_previous_hook = sys.unraisablehook
_main_thread: int | None = None


def _signal_main_thread(signum: int) -> None:
    if _main_thread is None:
        return
    if hasattr(signal, "pthread_kill"):
        # A real signal, to the main thread: a wait it is blocked in (a join) ends with EINTR.
        signal.pthread_kill(_main_thread, signum)
    else:  # Windows: marked pending, run at the main thread's next bytecode
        _thread.interrupt_main(signum)


def _redeliver(unraisable) -> None:  # sys.UnraisableHookArgs
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):  # Python's own handler, before ours is installed
        exc = Interrupted()
    if isinstance(exc, SignalRaised):
        global _pending
        exc.rearm()
        _pending = signum = exc.signum
        # Sent from a new thread: sent from here (os.kill, raise_signal, interrupt_main), the
        # handler would run before this hook returns, and the hook's exceptions are dropped too.
        try:  # noqa: SIM105 - contextlib would be one more import before the guard
            _thread.start_new_thread(_signal_main_thread, (signum,))
        except RuntimeError:  # no new thread at interpreter shutdown: the run is ending anyway
            pass
        return
    _previous_hook(unraisable)


def install_redelivery() -> None:
    """Signals that land in a callback whose exceptions Python drops are delivered again. From
    the main thread only, the one Python runs signal handlers in (elsewhere: nothing)."""
    global _previous_hook, _main_thread
    if _thread.get_ident() != _main_ident():
        return
    _main_thread = _thread.get_ident()
    if sys.unraisablehook is not _redeliver:
        _previous_hook = sys.unraisablehook
        sys.unraisablehook = _redeliver


def _main_ident() -> int | None:
    threading = sys.modules.get("threading")  # loaded by then in any real run; not imported here
    if threading is None:
        return _thread.get_ident()  # nothing has started a thread through threading yet
    return threading.main_thread().ident
