"""Just enough of PEP 508 to read torch's ``Requires-Dist`` pins on its ``nvidia-*`` wheels.

torch pins each CUDA library wheel exactly: ``nvidia-cudnn-cu12==9.10.2.21; platform_system ==
"Linux"``. ``packaging`` would parse any requirement, but it is not a dependency of torchdoctor
and these strings use one shape: name, ``==`` version, and a marker of ``and``/``or`` joined
comparisons. Anything else (another operator, an unknown marker variable) yields None: unknown,
never a guessed finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*?)\s*(?:;\s*(.*))?$")
_PIN = re.compile(r"^==\s*([^\s,]+)$")
_CLAUSE = re.compile(r"^\s*([a-z_]+)\s*(==|!=|<=|>=|<|>)\s*[\"']([^\"']*)[\"']\s*$")


@dataclass(frozen=True)
class Requirement:
    name: str  # normalised: lower case, "-" for "_" and "."
    specifier: str  # "==9.10.2.21", ">=3.1", "" ...
    marker: str | None

    @property
    def pinned(self) -> str | None:
        m = _PIN.match(self.specifier)
        return m.group(1) if m else None


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(text: str) -> Requirement | None:
    m = _REQ.match(text)
    if not m:
        return None
    spec = m.group(2).strip().strip("()").replace(" ", "")
    return Requirement(normalise(m.group(1)), spec, (m.group(3) or "").strip() or None)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def _clause(clause: str, env: dict[str, str]) -> bool | None:
    m = _CLAUSE.match(clause.strip().strip("()"))
    if not m:
        return None
    var, op, value = m.groups()
    if var == "extra":
        return op == "!="  # no extras are requested when torch is installed plainly
    if var not in env:
        return None
    have = env[var]
    if var in ("python_version", "python_full_version"):
        a, b = _version(have), _version(value)
    else:
        a, b = have, value
    return {
        "==": a == b,
        "!=": a != b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }[op]


def applies(marker: str | None, env: dict[str, str]) -> bool | None:
    """Evaluate a marker of ``and``/``or`` joined comparisons (no nested parentheses)."""
    if not marker:
        return True
    any_true: bool | None = False
    for alternative in re.split(r"\s+or\s+", marker):
        all_true: bool | None = True
        for clause in re.split(r"\s+and\s+", alternative):
            result = _clause(clause, env)
            if result is None:
                return None
            all_true = all_true and result
        any_true = any_true or all_true
    return any_true


def marker_env(system: str | None, machine: str | None, python: str | None) -> dict[str, str]:
    """The marker variables of the diagnosed interpreter, from its platform facts."""
    env: dict[str, str] = {}
    if system:
        env["platform_system"] = system
        env["sys_platform"] = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}.get(
            system, system.lower()
        )
        env["os_name"] = "nt" if system == "Windows" else "posix"
    if machine:
        env["platform_machine"] = machine
    if python:
        env["python_full_version"] = python
        env["python_version"] = ".".join(python.split(".")[:2])
    return env
