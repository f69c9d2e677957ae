"""The string constants a module binds at its top level, and which of them name a path inside
the project: a `torch.load(TRAIN_PATH)` reads a file the project fixed, in the loading file or
in the config module it imports the name from (mas_music_generation's `from config import
TRAIN_DATASET_PATH_CHORD`, defined in config/params_chord.py and re-exported by
`from .params_chord import *`; blind set 250)."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def module_constants(module: ast.Module, nested: bool = False) -> dict[str, list[ast.expr]]:
    """Name -> the values the module's top-level statements assign to it (`NAME = …`,
    `NAME: str = …`); with `nested`, also the assignments inside its top-level `if`/`try`/
    loop blocks (what a script's `if __name__ == "__main__":` binds, for a load in that same
    block). A name also bound another way at the top level (a loop, an import, `+=`, a
    `with … as`) is left out: no value of it can be trusted."""
    out: dict[str, list[ast.expr]] = {}
    other: set[str] = set()
    for s in module.body:
        if isinstance(s, DEFINITIONS):
            continue
        counted: set[int] = set()
        for a in _outside_definitions(s) if nested else [s]:
            if isinstance(a, ast.Assign) and all(isinstance(t, ast.Name) for t in a.targets):
                for t in a.targets:
                    out.setdefault(t.id, []).append(a.value)  # type: ignore[attr-defined]
                    counted.add(id(t))
            elif isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and a.value:
                out.setdefault(a.target.id, []).append(a.value)
                counted.add(id(a.target))
        for n in _outside_definitions(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in counted:
                other.add(n.id)
            elif isinstance(n, ast.alias):
                other.add((n.asname or n.name).split(".")[0])
    return {k: v for k, v in out.items() if k not in other}


def _outside_definitions(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and what it holds, not descending into a def, class or lambda (their names are
    their own scope's)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, DEFINITIONS):
            yield from _outside_definitions(child)


def string_constant(module: ast.Module, name: str) -> str | None:
    """The one string the module binds `name` to at its top level; None otherwise."""
    values = module_constants(module).get(name, [])
    if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
        return None
    texts = {v.value for v in values if isinstance(v, ast.Constant)}
    return str(texts.pop()) if len(texts) == 1 else None


def reexports(module: ast.Module, name: str, star: bool = True) -> list[tuple[str, str]]:
    """Where `name` may come from: (module, its name there) of each top-level
    `from m import x as name` and, with `star`, `from m import *`; leading dots kept."""
    out = []
    for s in module.body:
        if isinstance(s, ast.ImportFrom) and s.module != "__future__":
            source = "." * s.level + (s.module or "")
            for a in s.names:
                if (star and a.name == "*") or (a.name != "*" and (a.asname or a.name) == name):
                    out.append((source, name if a.name == "*" else a.name))
    return out


def project_relative(text: str) -> str | None:
    """The text as a path inside the project, or None: absolute, a home directory, a URL or
    a drive are not the project's own, nor a path that climbs after naming a folder. Leading
    `..` stay (`../models/best.pt` from a script run in backend/): the lookup in the scanned
    tree (project.shipped_with) keeps what it finds inside the repository."""
    if not text or text.startswith(("/", "~", "\\")) or ":" in text:
        return None
    parts = text.replace("\\", "/").split("/")
    climbs = len(parts) - len(list(itertools.dropwhile(lambda p: p == "..", parts)))
    if climbs == len(parts) or ".." in parts[climbs:]:
        return None
    return text


# An absolute path of the author's machine: a POSIX root, a home directory or a drive.
AUTHOR_PATH = re.compile(r"^(?:/|~/|[A-Za-z]:[/\\])")


def author_tail(text: str) -> str | None:
    """The folders and file after an absolute path's root (`/home/jewel/QuadrupedRLv2/qdpgym/
    sim/resources/acnet.pt` → `home/jewel/…/acnet.pt`), for project.shipped_with to match
    its last segments against the scanned tree: the author's own copy of a committed file."""
    if not AUTHOR_PATH.match(text) or "://" in text:
        return None
    parts = [p for p in re.split(r"[/\\]", text)[1:] if p and p != "~"]
    if len(parts) < 2 or ".." in parts or "." in parts:
        return None
    return "/".join(parts)
