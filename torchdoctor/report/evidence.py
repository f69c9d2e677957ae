"""A remedy's evidence: dotted paths into the facts JSON that the remedy rests on (issue 25).

``env.CUDA_HOME``, ``nvml.devices.1.name``, ``torch.build.cuda``: each step is a key of a JSON
object or, on a list, an integer index. A key may itself hold dots (a path or a file name): at an
object, the longest run of steps that names a key is taken. A path resolves when every step
exists; a present ``null`` resolves (``torch.build.cuda`` is null on a CPU build, and that is the
fact). A remedy whose evidence does not resolve in the facts it was judged on is not offered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_MISSING = object()


def _step(node: Any, rest: list[str]) -> tuple[Any, int]:
    """(the child ``rest`` leads to, how many steps it took) or (_MISSING, 0)."""
    if isinstance(node, Mapping):
        for j in range(len(rest), 0, -1):
            key = ".".join(rest[:j])
            if key in node:
                return node[key], j
        return _MISSING, 0
    if isinstance(node, list) and rest[0].isdigit() and int(rest[0]) < len(node):
        return node[int(rest[0])], 1
    return _MISSING, 0


def lookup(facts: Mapping[str, Any] | None, path: str) -> Any:
    """The value at ``path``, or ``_MISSING`` (test with ``resolves``)."""
    if not path or facts is None:
        return _MISSING
    node: Any = facts
    rest = path.split(".")
    while rest:
        node, used = _step(node, rest)
        if node is _MISSING:
            return _MISSING
        rest = rest[used:]
    return node


def resolves(facts: Mapping[str, Any] | None, path: str) -> bool:
    return lookup(facts, path) is not _MISSING


def unresolved(facts: Mapping[str, Any] | None, paths: Iterable[str]) -> list[str]:
    """The paths that name nothing in ``facts``."""
    return [p for p in paths if not resolves(facts, p)]


def grounded(facts: Mapping[str, Any] | None, paths: Iterable[str]) -> bool:
    """Non-empty evidence that all resolves: what a remedy needs to be offered."""
    paths = list(paths)
    return bool(paths) and not unresolved(facts, paths)


def present(facts: Mapping[str, Any] | None, *paths: str) -> tuple[str, ...]:
    """The given paths that resolve, in order: evidence built from what is actually there."""
    return tuple(p for p in paths if resolves(facts, p))


def because(paths: Iterable[str]) -> str:
    """How text and markdown show evidence: the paths, not their values (values can be long or
    private; the facts hold them)."""
    paths = list(paths)
    return "because " + ", ".join(paths) if paths else ""


# How torch prefixes a warning it prints: the file and line, then the warning's class.
_WHERE = re.compile(r"^.{0,200}?\.py:\d+: (?:\w+Warning: |\w+Error: )?")


def words(line: str | None) -> str:
    """torch's words without the file and line that printed them ("…/cuda/__init__.py:52:
    UserWarning: CUDA initialization: Found no NVIDIA driver…" -> "CUDA initialization: …")."""
    return _WHERE.sub("", (line or "").strip())
