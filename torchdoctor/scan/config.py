"""What a scanned file's project says: `[tool.torchdoctor.scan]` in the nearest
pyproject.toml (`ignore`, `per-file-ignores`) and the lowest torch release it requires
(pyproject dependencies or requirements*.txt), which decides whether `weights_only` is
already the default.

    [tool.torchdoctor.scan]
    ignore = ["TD201"]
    per-file-ignores = {"tests/*" = ["TD001", "TD002"], "scripts/gpu_*.py" = ["*"]}

TOML is read with tomllib (Python 3.11+) or tomli when installed; without either the
configuration is skipped (and said so once, as a file error).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..safeio import InputError, read_text_bounded
from .rules import RULES, resolve

try:
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    try:
        import tomli as tomllib  # type: ignore[no-redef]
    except ImportError:
        tomllib = None  # type: ignore[assignment]

CONFIG_LIMIT = 4 * 1024 * 1024
ALL = "*"
TORCH_REQ = re.compile(r"^\s*torch(?![\w.-])\s*(?:\[[^\]]*\])?\s*([^;#\n]*)", re.M)
LOWER_BOUND = re.compile(r"(>=|==|~=|>)\s*(\d+)\.(\d+)")
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@dataclass(frozen=True)
class ProjectConfig:
    root: str | None = None  # the directory of the pyproject.toml, when there is one
    ignore: frozenset[str] = frozenset()  # silenced everywhere, counted as suppressed
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    torch_min: tuple[int, int] | None = None
    problems: tuple[str, ...] = field(default=())  # one line each, for the report

    def ignored_for(self, path: str) -> frozenset[str]:
        """Rule ids (or `*`) silenced in this file: `ignore` and matching per-file-ignores."""
        if not self.per_file_ignores or self.root is None:
            return self.ignore
        rel = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        out: set[str] = set(self.ignore)
        for pattern, ids in self.per_file_ignores:
            if fnmatch.fnmatch(rel, pattern) or (
                "/" not in pattern and fnmatch.fnmatch(os.path.basename(rel), pattern)
            ):
                out |= ids
        return frozenset(out)


def torch_lower_bound(requirements: list[str]) -> tuple[int, int] | None:
    """The lowest torch release requirement lines allow: `torch>=2.6,<3` -> (2, 6). A line
    without a lower bound (`torch`) allows any release; two lines, the lower of the two."""
    best: tuple[int, int] | None = None
    for req in requirements:
        for m in TORCH_REQ.finditer(req):
            bounds = [(int(a), int(b)) for _, a, b in LOWER_BOUND.findall(m.group(1))]
            if not bounds:
                return None
            best = max(bounds) if best is None else min(best, max(bounds))
    return best


def _rule_ids(
    values: object, where: str, problems: list[str], *, others_ok: bool = False
) -> frozenset[str]:
    """Rule ids from a config list: an id, a name, or a code prefix (`TD1` -> TD101…),
    as `[tool.torchdoctor]` matches ids for every command. `others_ok`: the shared list may
    name other commands' ids (`container`), which are not ours to check."""
    if not isinstance(values, list):
        problems.append(f"{where}: expected a list of rule ids")
        return frozenset()
    ids = set()
    for v in map(str, values):
        rule = resolve(v)
        prefixed = {
            r.id for r in RULES if v.upper().startswith("TD") and r.id.startswith(v.upper())
        }
        if v == ALL:
            ids.add(ALL)
        elif rule is not None:
            ids.add(rule.id)
        elif prefixed:
            ids |= prefixed
        elif not others_ok:
            problems.append(f"{where}: unknown rule {v!r}")
    return frozenset(ids)


def _read(path: str) -> str | None:
    try:
        return read_text_bounded(path, CONFIG_LIMIT, allow_stdin=False)
    except (InputError, OSError, UnicodeDecodeError):
        return None


def _from_pyproject(path: str, problems: list[str]) -> ProjectConfig:
    text = _read(path)
    if text is None or tomllib is None:
        if tomllib is None and "torchdoctor" in (text or ""):
            problems.append("[tool.torchdoctor] skipped: install tomli on Python 3.10")
        return ProjectConfig(root=os.path.dirname(path), problems=tuple(problems))
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        problems.append(f"not valid TOML ({exc})")
        return ProjectConfig(root=os.path.dirname(path), problems=tuple(problems))
    project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
    deps = project.get("dependencies", []) if isinstance(project, dict) else []
    tool = doc.get("tool", {}).get("torchdoctor", {}) if isinstance(doc.get("tool"), dict) else {}
    scan = tool.get("scan", {}) if isinstance(tool, dict) else {}
    if not isinstance(scan, dict):
        scan = {}
    where = "[tool.torchdoctor.scan]"
    # the shared `[tool.torchdoctor] ignore` applies to every command, the scan's own adds to it
    shared = tool.get("ignore", []) if isinstance(tool, dict) else []
    ignore = _rule_ids(shared, "[tool.torchdoctor] ignore", problems, others_ok=True)
    ignore |= _rule_ids(scan.get("ignore", []), f"{where} ignore", problems)
    pfi_raw = scan.get("per-file-ignores", {})
    pfi: list[tuple[str, frozenset[str]]] = []
    if isinstance(pfi_raw, dict):
        for pattern, ids in pfi_raw.items():
            pfi.append((str(pattern), _rule_ids(ids, f"{where} per-file-ignores", problems)))
    else:
        problems.append(f"{where} per-file-ignores: expected a table of glob = [rule ids]")
    return ProjectConfig(
        root=os.path.dirname(path),
        ignore=ignore,
        per_file_ignores=tuple(pfi),
        torch_min=torch_lower_bound([str(d) for d in deps] if isinstance(deps, list) else []),
        problems=tuple(problems),
    )


@lru_cache(maxsize=256)
def config_for_dir(directory: str) -> ProjectConfig:
    """The configuration of the nearest project at or above `directory`."""
    d = os.path.abspath(directory)
    while True:
        if any(os.path.exists(os.path.join(d, m)) for m in PROJECT_MARKERS):
            return _load(d)
        parent = os.path.dirname(d)
        if parent == d:
            return ProjectConfig()
        d = parent


def _load(root: str) -> ProjectConfig:
    problems: list[str] = []
    pyproject = os.path.join(root, "pyproject.toml")
    cfg = (
        _from_pyproject(pyproject, problems)
        if os.path.isfile(pyproject)
        else ProjectConfig(root=root)
    )
    if cfg.torch_min is None:  # requirements files say what pyproject does not
        reqs = []
        for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            if name.startswith("requirements") and name.endswith(".txt"):
                reqs.append(_read(os.path.join(root, name)) or "")
        bound = torch_lower_bound(reqs)
        if bound is not None:
            cfg = ProjectConfig(cfg.root, cfg.ignore, cfg.per_file_ignores, bound, cfg.problems)
    return cfg


def config_for(path: str) -> ProjectConfig:
    return config_for_dir(os.path.dirname(os.path.abspath(path)))
