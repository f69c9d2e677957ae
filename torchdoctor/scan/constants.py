"""The string constants a module binds at its top level, and which of them name a path inside
the project: a `torch.load(TRAIN_PATH)` reads a file the project fixed, in the loading file or
in the config module it imports the name from (mas_music_generation's `from config import
TRAIN_DATASET_PATH_CHORD`, defined in config/params_chord.py and re-exported by
`from .params_chord import *`; blind set 250)."""

from __future__ import annotations

import ast


def module_constants(module: ast.Module) -> dict[str, list[ast.expr]]:
    """Name -> the values the module's top-level statements assign to it (`NAME = …`,
    `NAME: str = …`). A name also bound another way at the top level (a loop, an import,
    `+=`, a `with … as`) is left out: no value of it can be trusted."""
    out: dict[str, list[ast.expr]] = {}
    other: set[str] = set()
    for s in module.body:
        if isinstance(s, ast.Assign) and all(isinstance(t, ast.Name) for t in s.targets):
            for t in s.targets:
                out.setdefault(t.id, []).append(s.value)  # type: ignore[attr-defined]
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value:
            out.setdefault(s.target.id, []).append(s.value)
        elif not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for n in ast.walk(s):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    other.add(n.id)
                elif isinstance(n, ast.alias):
                    other.add((n.asname or n.name).split(".")[0])
    return {k: v for k, v in out.items() if k not in other}


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
    a drive are not the project's own, nor a path that leaves the folder it names."""
    if not text or text.startswith(("/", "~", "\\")) or ":" in text:
        return None
    if ".." in text.replace("\\", "/").split("/"):
        return None
    return text
