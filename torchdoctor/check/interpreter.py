"""Which Python to examine.

``--python`` names it (an interpreter, a venv or conda directory, or a command on PATH). Without
it, torchdoctor's own interpreter is examined when it has torch. Installed with pipx or in a venv
of its own it usually has not, and the user's torch is elsewhere: then the activated environment
(VIRTUAL_ENV, CONDA_PREFIX) and python3/python on PATH are asked, each in a short child that finds
the torch package without importing it, and the first that has torch is examined.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..probes.child import locate
from .record import Facts

# A candidate answers in tens of ms; this only bounds a broken one (a hung network filesystem).
ASK_TIMEOUT_S = 10.0
# Where an interpreter sits in a venv (POSIX, Windows) or a conda environment (POSIX, Windows).
IN_ENV_DIR = ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe")
# What a program starts with: ELF, a script's #!, PE (Windows), Mach-O (both byte orders, fat).
PROGRAM_MAGIC = (
    b"\x7fELF",
    b"#!",
    b"MZ",
    b"\xcf\xfa\xed\xfe",
    b"\xce\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
)
# Tool installers that give torchdoctor a private environment: never the user's torch home.
TOOL_ENV_MARKERS = ("pipx_metadata.json", "uv-receipt.toml")
SELF = "self"


def python_in(directory: Path) -> Path | None:
    """The interpreter of a venv or conda environment directory, or None."""
    for rel in IN_ENV_DIR:
        exe = directory / rel
        try:
            if exe.is_file():
                return exe
        except OSError:  # an unreadable directory holds no interpreter we can run
            return None
    return None


def resolve(value: str) -> str:
    """``--python``'s value as an interpreter path; ValueError (one line) when it is not one."""
    try:
        return _resolve(value)
    except OSError as exc:  # a directory we may not read, a name too long
        raise ValueError(f"cannot use {value!r}: {exc.strerror or exc}") from exc


def _resolve(value: str) -> str:
    path = Path(value).expanduser()
    if not path.exists() and os.sep not in value and (os.altsep or os.sep) not in value:
        found = shutil.which(value)
        if not found:
            raise ValueError(f"{value!r}: no such file, directory or command on PATH")
        path = Path(found)
    if path.is_dir():
        exe = python_in(path)
        if exe is None:
            raise ValueError(
                f"{value!r} is a directory without a Python interpreter "
                f"(looked for {', '.join(IN_ENV_DIR)})"
            )
        path = exe
    if not path.exists():
        raise ValueError(f"{value!r} does not exist")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ValueError(f"{value!r} is not an executable program, so not a Python interpreter")
    with open(path, "rb") as f:
        head = f.read(4)
    if not head.startswith(PROGRAM_MAGIC):
        raise ValueError(f"{value!r} is not a Python interpreter (not a program or a script)")
    # absolute(), not resolve(): a venv's python is a symlink to the base interpreter, and
    # following it would examine the base environment instead of the venv.
    return str(path.absolute())


def not_a_python(facts: Facts) -> str | None:
    """Why a ``--python`` program is no Python, judged from the probe it ran: it said nothing
    the probe says and ended on its own (a hang or a crash is a finding, not bad usage)."""
    probe = facts.probe.torch
    spoke = (
        facts.platform
        or facts.torch.status in ("ok", "missing", "import_error")
        or probe.unfinished_stage
        or probe.stage_durations
    )
    if spoke or probe.status not in ("ok", "failed"):
        return None
    said = (probe.stderr_tail or "").strip().splitlines()
    tail = f": {said[-1][:160]}" if said else ""
    return (
        f"it did not run torchdoctor's probe script (exit code {probe.returncode}{tail}); "
        "is it a Python 3 interpreter?"
    )


@dataclass
class Choice:
    python: str
    source: str  # --python | self | VIRTUAL_ENV | CONDA_PREFIX | python3 on PATH | python on PATH
    reason: str
    candidates: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""  # an activated environment that is not the Python examined

    def to_facts(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "source": self.source,
            "reason": self.reason,
            "own": sys.executable,
            "candidates": self.candidates,
            "note": self.note,
        }


def candidates(environ: dict[str, str] | os._Environ) -> list[tuple[str, str]]:
    """(source, interpreter) in the order a user expects them to win."""
    found = []
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        exe = python_in(Path(environ[var])) if environ.get(var) else None
        if exe:
            found.append((var, str(exe)))
    for name in ("python3", "python"):
        exe = shutil.which(name, path=environ.get("PATH"))
        if exe:
            found.append((f"{name} on PATH", exe))
    return found


def ask(python: str, timeout_s: float = ASK_TIMEOUT_S) -> dict[str, Any]:
    """What a candidate says about itself (prefix, torch, shadows), or {'error': why not}."""
    from ..probes.runner import child_argv, run_probe  # not loaded for --help and --version

    run = run_probe(child_argv(python, "locate"), timeout_s)
    data = run.stages.get("locate")
    return data if isinstance(data, dict) else {"error": run.message or "no answer"}


def _own_is_tool_env() -> bool:
    return any((Path(sys.prefix) / marker).exists() for marker in TOOL_ENV_MARKERS)


def choose(
    option: str | None,
    environ: dict[str, str] | os._Environ = os.environ,
    timeout_s: float = ASK_TIMEOUT_S,
) -> Choice:
    if option:
        return Choice(option, "--python", "named with --python")
    own = sys.executable
    if locate.find_torch(sys.path)["torch"]:
        return Choice(
            own, SELF, "torch is installed in torchdoctor's own Python", note=_activated(environ)
        )
    asked: list[dict[str, Any]] = []
    seen_prefix = {os.path.normcase(sys.prefix)}
    seen_exe = {os.path.abspath(own)}
    for source, exe in candidates(environ):
        if os.path.abspath(exe) in seen_exe:
            continue
        seen_exe.add(os.path.abspath(exe))
        info = ask(exe, timeout_s)
        prefix = os.path.normcase(info.get("prefix") or exe)
        if prefix in seen_prefix:  # torchdoctor's own environment, or python3 and python of one
            continue
        seen_prefix.add(prefix)
        torch = (info.get("torch") or {}).get("origin")
        asked.append({"source": source, "python": exe, "torch": torch, **_error(info)})
        if torch:
            return Choice(
                exe,
                source,
                f"torchdoctor's own Python ({own}) has no torch; {source} has torch",
                asked,
            )
    return _without_torch(own, asked)


def _activated(environ: dict[str, str] | os._Environ) -> str:
    """An activated environment other than torchdoctor's own: the user may expect that one."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env_dir = environ.get(var)
        if env_dir and python_in(Path(env_dir)) and not _same_dir(env_dir, sys.prefix):
            return f"{var} is {env_dir}; `torchdoctor check --python {shlex.quote(env_dir)}` examines it"
    return ""


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _error(info: dict[str, Any]) -> dict[str, Any]:
    return {"error": info["error"]} if "error" in info else {}


def _without_torch(own: str, asked: list[dict[str, Any]]) -> Choice:
    """No Python has torch: examine where the user would install it. That is the environment they
    activated; else torchdoctor's own, unless that is a pipx/uv tool environment."""
    usable = [c for c in asked if "error" not in c]
    active = [c for c in usable if c["source"] in ("VIRTUAL_ENV", "CONDA_PREFIX")]
    pick = active[0] if active else (usable[0] if usable and _own_is_tool_env() else None)
    if pick is None:
        return Choice(own, SELF, "no Python torchdoctor looked at has torch", asked)
    return Choice(
        pick["python"],
        pick["source"],
        f"no Python torchdoctor looked at has torch; {pick['source']} is where it would go",
        asked,
    )
