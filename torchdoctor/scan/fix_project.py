"""What --fix needs to know about the whole project, beyond the file it edits.

- Which checkpoint paths the project writes from a `state_dict()`: a `torch.load` of the same
  path expression may then get `weights_only=True` (a state dict is all tensors and plain data).
- Whether the project's torch has `torch.accelerator` (2.6+), for the `pin_memory=` rewrite.

Pure reads of source and metadata text: nothing is imported or run (not even torch).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

ACCELERATOR_SINCE = (2, 6)  # torch.accelerator.is_available() first shipped in torch 2.6
# `torch>=2.6`, `torch ~= 2.7.1`, `"torch==2.8.0+cu128"`: the lowest version the project accepts.
TORCH_REQ = re.compile(r"""(?<![\w.-])torch\s*(?:\[[^\]]*\])?\s*(>=|==|~=|>)\s*(\d+)\.(\d+)""")
TORCH_ANY = re.compile(r"""(?<![\w.-])torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*(?:[;"',\n]|$)""", re.M)
METADATA_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "requirements.txt", "environment.yml")


@dataclass(frozen=True)
class ProjectFacts:
    # ast.unparse of the path argument of each `torch.save(<state dict>, path)`
    state_dict_paths: frozenset[str] = frozenset()
    accelerator: bool = False  # `torch.accelerator` exists for every torch the project accepts


@dataclass
class _Saves:
    state_dict: set[str] = field(default_factory=set)
    other: set[str] = field(default_factory=set)  # also saved as something else: no evidence


def _is_state_dict(node: ast.expr) -> bool:
    """`m.state_dict()`, or a dict/list of those and plain constants (`{"epoch": 3, ...}`)."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr == "state_dict"
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Dict):
        return all(k is not None for k in node.keys) and all(map(_is_state_dict, node.values))
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(map(_is_state_dict, node.elts))
    return False


def _collect_saves(tree: ast.AST, into: _Saves) -> None:
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "save"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "torch"
        ):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        obj = node.args[0] if node.args else kw.get("obj")
        where = node.args[1] if len(node.args) > 1 else kw.get("f")
        if obj is None or where is None:
            continue
        (into.state_dict if _is_state_dict(obj) else into.other).add(ast.unparse(where))


def saved_state_dict_paths(sources: Iterable[str]) -> frozenset[str]:
    saves = _Saves()
    for text in sources:
        if "state_dict" not in text or "save" not in text:
            continue  # most files cannot contain a state-dict save: skip the parse
        try:
            _collect_saves(ast.parse(text), saves)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return frozenset(saves.state_dict - saves.other)


def torch_floor(text: str) -> tuple[int, int] | None:
    """The lowest torch version a requirements/metadata text accepts; None: says nothing."""
    floors = [(int(m.group(2)), int(m.group(3))) for m in TORCH_REQ.finditer(text)]
    if floors:
        return min(floors)
    return (0, 0) if TORCH_ANY.search(text) else None


def project_torch_floor(start: str) -> tuple[int, int] | None:
    """Walk up from `start` to the nearest directory whose metadata names torch."""
    here = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        for name in METADATA_FILES:
            try:
                with open(os.path.join(here, name), encoding="utf-8", errors="replace") as fh:
                    floor = torch_floor(fh.read(1 << 20))
            except OSError:
                continue
            if floor is not None:
                return floor
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def installed_torch() -> tuple[int, int] | None:
    """The version of torch installed beside torchdoctor, from its metadata (never imported)."""
    from importlib import metadata

    try:
        m = re.match(r"(\d+)\.(\d+)", metadata.version("torch"))
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    return (int(m.group(1)), int(m.group(2))) if m else None


def has_accelerator(start: str) -> bool:
    """The project's own floor decides (`torch>=2.6`); a project that says nothing is judged by
    the torch installed here. Unknown: no (torch.cuda.is_available() works everywhere)."""
    floor = project_torch_floor(start)
    if floor is None or floor == (0, 0):
        floor = installed_torch()
    return floor is not None and floor >= ACCELERATOR_SINCE


def project_facts(
    paths: Iterable[str], sources: Iterable[str], *, saves: bool = True, accelerator: bool = True
) -> ProjectFacts:
    """Only what the findings at hand need: reading every file for saves costs a second pass."""
    first = next(iter(paths), ".")
    return ProjectFacts(
        saved_state_dict_paths(sources) if saves else frozenset(),
        has_accelerator(first) if accelerator else False,
    )
