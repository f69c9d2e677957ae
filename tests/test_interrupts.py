"""Ctrl-C at any moment is exit 130 and one line; a deleted working directory is no finding."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from torchdoctor import interrupts

from .conftest import FACTS_DIR, REPO, needs_torch

# The interpreter's own start-up (site, the console script's `import re`) runs before any line of
# torchdoctor and is CPython's to handle; the clock starts when torchdoctor's entry is reached.
LAUNCH = (
    "import os, sys\n"
    "from torchdoctor.__main__ import entry\n"
    "os.write(2, b'@')\n"
    "entry()\n"
)  # fmt: skip


def interrupted_after(delay_s: float, *args: str) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.stderr.read(1) == b"@"  # torchdoctor's entry is running
    time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("delay_ms", [0, 5, 15, 30, 50, 150, 400])
def test_ctrl_c_in_the_first_50_ms_and_later_is_exit_130_in_one_line(delay_ms):
    # --facts: a run that is still busy long after the last delay is not needed; if the command
    # already finished, its own exit code is fine too (the point is: never a traceback).
    rc, err = interrupted_after(
        delay_ms / 1000, "check", "--facts", str(FACTS_DIR / "h100_healthy.json"), "-v"
    )
    assert "Traceback" not in err
    if rc == 130:
        assert err == "Interrupted.\n"
    else:
        assert rc == 0 and err == "", (rc, err)


@needs_torch
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("delay_ms", [50, 1000])
def test_ctrl_c_while_the_probe_runs_is_exit_130_in_one_line(delay_ms, tmp_path):
    # An interpreter that takes 60 s to start: the probe is surely running when Ctrl-C comes (on
    # a quiet machine a whole `check --no-smoke` can end within the second; with 5 s, a CI run
    # whose test process was starved that long once saw the check end first: exit 0, no line).
    # The interrupted probe's process group is killed, so the sleep costs nothing.
    slow = tmp_path / "python"
    slow.write_text(f'#!/bin/sh\nsleep 60\nexec "{sys.executable}" "$@"\n')
    slow.chmod(0o755)
    rc, err = interrupted_after(delay_ms / 1000, "check", "--no-smoke", "--python", str(slow))
    assert (rc, err) == (130, "Interrupted.\n")


@needs_torch
@pytest.mark.skipif(os.name != "posix", reason="a directory in use cannot be removed on Windows")
def test_deleted_working_directory_does_not_become_torch_cannot_be_imported(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = (
        "import os, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "from torchdoctor.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "check", "--json", "--no-smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["facts"]["torch"]["status"] == "ok", doc["facts"]["probe"]


# Seen once in ~100 runs of the probe test above under load: the run went on to its 30 s probe
# deadline and exit 1, after "Exception ignored in: <function _get_module_lock.<locals>.cb ...>
# KeyboardInterrupt". Python drops what a signal handler raises inside a weakref callback (the
# import system frees each module lock through one); here the callback is forced, then the main
# thread blocks for a minute, as gather's join on the probe thread does.
DROPPED_IN_CALLBACK = (
    "import signal, sys, time, weakref, torchdoctor.check.engine as e\n"
    "class Held: pass\n"
    "def diagnose(*a, **k):\n"
    "    held = Held()\n"
    "    ref = weakref.ref(held, lambda _: signal.raise_signal(signal.SIGINT))\n"
    "    del held\n"
    "    time.sleep(60)\n"
    "    sys.exit(7)\n"
    "e.diagnose = diagnose\n"
    "from torchdoctor.cli import main\n"
    "main(sys.argv[1:])\n"
)  # fmt: skip


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_dropped_as_exception_ignored_in_a_weakref_callback_is_exit_130():
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            DROPPED_IN_CALLBACK,
            "check",
            "--facts",
            str(FACTS_DIR / "cpu_linux.json"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,  # without the redelivery: the minute's sleep, then exit 7
    )
    assert (proc.returncode, proc.stderr) == (130, "Interrupted.\n")


def _class_made_during_ctrl_c() -> BaseException:
    class Named:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    try:
        type("uname_result", (), {"processor": Named()})
    except BaseException as exc:  # noqa: BLE001 - what Python raises is the subject
        return exc
    raise AssertionError("the class was made")


def test_ctrl_c_during_import_of_platform_runtimeerror_set_name_is_exit_130():
    # Seen in the same runs: Ctrl-C while platform.py made uname_result (imported through uuid)
    # ended in a traceback, "RuntimeError: Error calling __set_name__ on 'cached_property'
    # instance 'processor' in 'uname_result'": Python 3.10 and 3.11 wrap it; 3.12 does not.
    exc = _class_made_during_ctrl_c()
    assert interrupts.from_ctrl_c(exc)
    code = (
        "import sys\n"
        "class Wrapped:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torchdoctor.cli':\n"
        "            raise RuntimeError('Error calling __set_name__') from KeyboardInterrupt()\n"
        "sys.meta_path.insert(0, Wrapped())\n"
        "from torchdoctor.__main__ import entry\n"
        "entry()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "--version"], capture_output=True, text=True, cwd=REPO
    )
    assert (proc.returncode, proc.stderr) == (130, "Interrupted.\n")


def test_an_error_not_caused_by_ctrl_c_is_not_taken_for_one():
    cycle = RuntimeError("a")
    other = ValueError("b")
    cycle.__context__, other.__context__ = other, cycle  # a cycle ends the walk
    assert not interrupts.from_ctrl_c(cycle)
    wrapped = RuntimeError("a cleanup failed")
    wrapped.__context__ = interrupts.Interrupted()
    assert interrupts.from_ctrl_c(wrapped)


def _run_snippet(code: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,  # a dropped signal not delivered again: the snippet's minute-long sleep
    )


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_dropped_as_the_run_ends_is_still_exit_130():
    # Review of the redelivery: the second delivery comes from a new thread, which can lose the
    # race to the last step that ignores SIGINT (16 of 20 runs exited 0 with nothing said).
    code = DROPPED_IN_CALLBACK.replace("    time.sleep(60)\n    sys.exit(7)\n", "    return []\n")
    code = code.replace(
        "def diagnose(*a, **k):\n", "real = e.diagnose\ndef diagnose(*a, **k):\n    real(*a, **k)\n"
    )
    assert "return []" in code
    for _ in range(3):
        proc = _run_snippet(code, "check", "--facts", str(FACTS_DIR / "cpu_linux.json"))
        assert (proc.returncode, proc.stderr) == (130, "Interrupted.\n")


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_sigterm_dropped_in_a_weakref_callback_is_still_exit_143():
    code = DROPPED_IN_CALLBACK.replace("signal.SIGINT", "signal.SIGTERM")
    proc = _run_snippet(code, "check", "--facts", str(FACTS_DIR / "cpu_linux.json"))
    assert (proc.returncode, proc.stderr) == (143, "")


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_fix_stop_dropped_in_a_weakref_callback_still_stops_the_apply():
    # fix's stop handler ignores further signals before it raises: dropped, it left the apply
    # running with Ctrl-C ignored until the end. It is re-armed and delivered again.
    code = (
        "import signal, time, weakref\n"
        "from torchdoctor import interrupts\n"
        "from torchdoctor.fix.apply import Stopped, stop_on_signals\n"
        "interrupts.install_redelivery()\n"
        "class Held: pass\n"
        "try:\n"
        "    with stop_on_signals():\n"
        "        held = Held()\n"
        "        ref = weakref.ref(held, lambda _: signal.raise_signal(signal.SIGINT))\n"
        "        del held\n"
        "        time.sleep(60)\n"
        "    print('went on')\n"
        "except Stopped as stop:\n"
        "    print('stopped', stop.signum, interrupts.take_pending())\n"
    )
    proc = _run_snippet(code)
    assert proc.stdout == f"stopped {int(signal.SIGINT)} None\n"
    assert "Traceback" not in proc.stderr


def test_redelivery_is_installed_from_the_main_thread_only():
    # main() called from a worker thread fails on signal.signal; the hook must not stay behind
    # aimed at that thread once it has ended (pthread_kill of a dead thread).
    code = (
        "import sys, threading\n"
        "from torchdoctor import interrupts\n"
        "t = threading.Thread(target=interrupts.install_redelivery); t.start(); t.join()\n"
        "print(sys.unraisablehook is sys.__unraisablehook__)\n"
        "interrupts.install_redelivery()\n"
        "print(sys.unraisablehook is interrupts._redeliver)\n"
    )
    assert _run_snippet(code).stdout == "True\nTrue\n"


def test_the_guard_module_imports_nothing_that_takes_module_locks():
    # Imported before the redelivery is installed: a module it imported (typing was 4.6 ms of
    # its 6.8) would open the very window the redelivery closes.
    code = (
        "import sys; before = set(sys.modules)\n"
        "import torchdoctor.interrupts\n"
        "new = sorted(set(sys.modules) - before)\n"
        "import json; print(json.dumps(new))\n"
    )
    new = json.loads(_run_snippet(code).stdout)
    assert set(new) <= {"signal", "torchdoctor", "torchdoctor.interrupts", "torchdoctor.version"}


def test_the_guard_module_imports_only_builtin_modules():
    """On the lent H200's Python 3.12 the test above saw `__future__` imported by the guard
    module (`from __future__ import annotations`): a .py module, so a module lock. Here, on
    3.11, something loads it at start-up and the test above cannot see it; the source can."""
    tree = ast.parse((REPO / "torchdoctor" / "interrupts.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    # signal is the one module this guard is about (the test above allows it too)
    assert imported - {"signal"} <= set(sys.builtin_module_names), imported


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_background_job_of_a_script_runs_on_through_a_ctrl_c_for_the_foreground(sig):
    # `torchdoctor check --json > report.json &` in a script: the shell starts it with SIGINT
    # ignored, so that a Ctrl-C meant for the foreground job leaves it be. torchdoctor used to
    # install its handler anyway and stop with exit 130 and half a report.
    launch = LAUNCH.replace(
        "import os, sys\n", f"import os, signal, sys\nsignal.signal({sig}, signal.SIG_IGN)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", launch, "check", "--facts", str(FACTS_DIR / "h100_healthy.json"), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert proc.stderr.read(1) == b"@"
    sent = 0
    while proc.poll() is None:  # a signal every 2 ms, from the entry to the end of the run
        proc.send_signal(sig)
        sent += 1
        time.sleep(0.002)
    out, err = proc.communicate(timeout=60)
    assert sent > 10, "the run ended before the signals came: the test proves nothing"
    assert (proc.returncode, err) == (0, b"")
    assert json.loads(out)["findings"] is not None


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_fix_keeps_a_stop_signal_the_process_was_started_with_ignored(monkeypatch, sig):
    from torchdoctor import interrupts
    from torchdoctor.fix import apply

    monkeypatch.setattr(interrupts, "IGNORED_AT_START", frozenset({sig}))
    old = signal.getsignal(sig)
    try:
        signal.signal(sig, signal.SIG_IGN)
        with apply.stop_on_signals():
            assert signal.getsignal(sig) == signal.SIG_IGN
            other = signal.SIGTERM if sig == signal.SIGINT else signal.SIGINT
            assert signal.getsignal(other) == apply._stop  # the other one still stops the apply
    finally:
        signal.signal(sig, old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_fix_stops_a_command_it_started_while_sigint_was_ignored_with_sigint():
    # During the restore (SIGINT ignored, so a second Ctrl-C cannot cut it short), or in a run a
    # script started with `cmd &`, the installer used to inherit the ignore: kill_group's SIGINT
    # did nothing, pip was killed 10 s later and its stash folders stayed.
    from torchdoctor.fix import proc

    child = (
        "import sys, time\n"
        "try:\n"
        "    time.sleep(60)\n"
        "except KeyboardInterrupt:\n"
        "    print('cleaned up on SIGINT')\n"
    )
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        t0 = time.monotonic()
        ran = proc.run([sys.executable, "-c", child], timeout_s=1.5)
        took = time.monotonic() - t0
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # the ignore here is kept
    finally:
        signal.signal(signal.SIGINT, old)
    assert ran.timed_out and ran.stdout == "cleaned up on SIGINT\n"
    assert took < proc.STOP_WAIT_S
