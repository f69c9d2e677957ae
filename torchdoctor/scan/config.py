"""What a scanned file's project says, for the scan: its `[tool.torchdoctor]` lists as rule
ids (`ignore`, `select`, the scan table's `per-file-ignores`), read by the one configuration
reader (torchdoctor.config) from the nearest pyproject.toml, and the lowest torch release the
project requires (pyproject dependencies or requirements*.txt), which decides whether
`weights_only` is already the default.

    [tool.torchdoctor.scan]
    ignore = ["TD201"]
    per-file-ignores = {"tests/*" = ["TD001", "TD002"], "scripts/gpu_*.py" = ["*"]}

A configuration the reader refuses is said once, as a file error, and that project's files are
scanned without it: a scan can walk into other projects than the one it runs in.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .. import config as shared_config
from ..data.compat import first_release_for_python, torch_for_companion
from ..safeio import InputError, read_text_bounded
from .rules import RULES, resolve

CONFIG_LIMIT = shared_config.CONFIG_LIMIT
ALL = "*"
# `[ \t]`, not `\s`: a bare `torch` line must not read the next line's `tqdm>=4.64` (RAVE)
TORCH_REQ = re.compile(r"^[ \t]*torch(?![\w.-])[ \t]*(?:\[[^\]\n]*\])?[ \t]*([^;#\n]*)", re.M)
LOWER_BOUND = re.compile(r"(>=|==|~=|>)\s*(\d+)\.(\d+)")
# torchvision / torchaudio pin the torch they were built for: `torchvision>=0.26` admits no torch
# before 2.11 (sybeom528/low_vol_with_lstm_har_bl, blind set 282: `torch>=2.1.0` beside
# `torchaudio>=2.11.0` and `torchvision>=0.26.0`, three loads labelled safe by default)
COMPANION_REQ = re.compile(
    r"^[ \t]*(torchvision|torchaudio)(?![\w.-])[ \t]*(?:\[[^\]\n]*\])?[ \t]*([^;#\n]*)", re.M
)
# `requires-python = ">=3.14"`: the lowest CPython a project runs on (">3.13" allows 3.13.1)
REQUIRES_PYTHON_FLOOR = re.compile(r"(?:>=|~=|==|>)\s*(\d+)\.(\d+)")
# `torch @ https://…/torch-2.6.0%2Bcu126-cp310-…whl`: a direct wheel pins the release in its name
WHEEL_VERSION = re.compile(r"@.*/torch-(\d+)\.(\d+)[^/]*\.whl")
# A project's root. requirements.txt too: a tree without .git or packaging files (a zip
# download, a Docker build context, an exported archive) still declares its torch there
# (traktorex/polsess_separation's torch>=2.8.0, schrum2/MarioDiffusion's torch==2.6.0: sets
# 157-160, six TD102 findings on loads that default to weights_only=True there).
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git", "requirements.txt")
SHARED, OWN = "[tool.torchdoctor]", "[tool.torchdoctor.scan]"


@dataclass(frozen=True)
class ProjectConfig:
    root: str | None = None  # the directory of the pyproject.toml, when there is one
    ignore: frozenset[str] = frozenset()  # silenced everywhere, counted as suppressed
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    torch_min: tuple[int, int] | None = None
    problems: tuple[str, ...] = field(default=())  # one line each, for the report
    select: frozenset[str] | None = None  # when set, every other rule is silenced
    confidence: str | None = None  # the lowest confidence shown (`confidence = "low"`)
    portable: bool = False  # the code must run without CUDA (`portable = true`): calibration.py
    python_min: tuple[int, int] | None = None  # `requires-python`'s floor: (3, 13) for ">=3.13"

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

    def selects(self, rule: str) -> bool:
        return self.select is None or ALL in self.select or rule in self.select


def torch_lower_bound(requirements: list[str]) -> tuple[int, int] | None:
    """The lowest torch release requirement texts allow (each a file, or one requirement):
    `torch>=2.6,<3` -> (2, 6). A line without a lower bound (`torch`) allows any release; two
    texts, the lower of the two. In one text, a torchvision or torchaudio floor raises torch's
    to the release that companion was built for; another file's pins do not (PanelCleaner's
    requirements_tested.txt, set 231, freezes what the unpinned requirements.txt allows)."""
    floors: list[tuple[int, int] | None] = []
    for req in requirements:
        lines = [_line_floor(m.group(1)) for m in TORCH_REQ.finditer(req)]
        if not lines:
            continue
        own = None if None in lines else min(lines)  # type: ignore[type-var]
        companion = _companion_floor(req)
        floors.append(max(own, companion) if own and companion else own or companion)
    if not floors or None in floors:
        return None
    return min(floors)  # type: ignore[type-var]


def _line_floor(spec: str) -> tuple[int, int] | None:
    bounds = [(int(a), int(b)) for _, a, b in LOWER_BOUND.findall(spec)]
    bounds += [(int(a), int(b)) for a, b in WHEEL_VERSION.findall(spec)]
    return max(bounds) if bounds else None


def _companion_floor(text: str) -> tuple[int, int] | None:
    """The torch release the highest torchvision / torchaudio floor in `text` was built for, if
    the compatibility table knows it."""
    found: list[tuple[int, int]] = []
    for m in COMPANION_REQ.finditer(text):
        for _, a, b in LOWER_BOUND.findall(m.group(2)):
            built_for = torch_for_companion(m.group(1), f"{a}.{b}.0")
            if built_for is not None:
                found.append(tuple(map(int, built_for.split(".")))[:2])  # type: ignore[arg-type]
    return max(found) if found else None


def _rule_ids(
    values: Iterable[str], where: str, problems: list[str], *, others_ok: bool = False
) -> frozenset[str]:
    """Rule ids from a config list: an id, a name, or a code prefix (`TD1` -> TD101…),
    as `[tool.torchdoctor]` matches ids for every command. `others_ok`: the shared list may
    name other commands' ids (`container`), which are not ours to check."""
    ids = set()
    for v in values:
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


def _listed(cfg: shared_config.Config, key: str, problems: list[str]) -> frozenset[str]:
    """The shared list (which may name other commands' ids) and the scan's own, as rule ids."""
    shared = _rule_ids(cfg.ids(key), f"{SHARED} {key}", problems, others_ok=True)
    return shared | _rule_ids(cfg.ids(key, "scan"), f"{OWN} {key}", problems)


def _from_config(cfg: shared_config.Config, problems: list[str]) -> ProjectConfig:
    pfi = tuple(
        (glob, _rule_ids(ids, f"{OWN} per-file-ignores", problems))
        for glob, ids in cfg.per_file_ignores("scan")
    )
    # `select = []` (or none) selects everything, as on every other command
    wanted = cfg.ids("select") or cfg.ids("select", "scan")
    return ProjectConfig(
        root=cfg.root,
        ignore=_listed(cfg, "ignore", problems),
        per_file_ignores=pfi,
        select=_listed(cfg, "select", problems) if wanted else None,
        confidence=cfg.value("confidence", "scan") or cfg.value("confidence"),
        portable=cfg.flag(shared_config.PORTABLE, "scan"),
    )


def _read(path: str) -> str | None:
    try:
        return read_text_bounded(path, CONFIG_LIMIT, allow_stdin=False)
    except (InputError, OSError, UnicodeDecodeError):
        return None


def _ancestors(directory: str) -> Iterator[str]:
    """`directory` and every folder above it, nearest first."""
    d = os.path.abspath(directory)
    while True:
        yield d
        parent = os.path.dirname(d)
        if parent == d:
            return
        d = parent


def _project_roots(directory: str) -> Iterator[str]:
    """The folders at or above `directory` that look like a project's root, nearest first."""
    for d in _ancestors(directory):
        if any(os.path.exists(os.path.join(d, m)) for m in PROJECT_MARKERS):
            yield d


def _pyproject_requirements(cfg: shared_config.Config) -> list[str]:
    """The requirement strings that decide the torch floor: `[project]` dependencies when they
    name torch (an extra cannot install less than they require), else every optional
    dependency, `[dependency-groups]` entry (an `{include-group = …}` is not a requirement) and
    Poetry dependency."""
    core = _strings([cfg.project.get("dependencies", [])])
    if any(TORCH_REQ.search(req) for req in core):
        return core
    extras = cfg.project.get("optional-dependencies", {})
    return _strings(
        [*(extras.values() if isinstance(extras, dict) else []), *cfg.groups.values()]
    ) + _poetry_requirements(cfg.poetry)


def _poetry_requirements(tables: tuple[Mapping[str, Any], ...]) -> list[str]:
    """Poetry's `torch = "^2.6.0"` (or `{version = "^2.6"}`, or a list of such) as requirement
    strings: a caret or tilde constraint allows nothing below its version, a bare version is
    exact (Jakub-Kucinski/ai-music-generation, blind set 188: weights_only is the default)."""
    out = []
    for table in tables:
        for name, spec in table.items():
            for one in spec if isinstance(spec, list) else [spec]:
                version = one.get("version") if isinstance(one, dict) else one
                if not isinstance(version, str):  # a git, path or url source: any release
                    out.append(str(name))
                    continue
                # `^2.6 || ^1.13`: either; each alternative is a line, the lowest decides
                out += [f"{name}{_pep440(alt.strip())}" for alt in version.split("||")]
    return out


def _pep440(constraint: str) -> str:
    if constraint[:1] in ("^", "~") and not constraint.startswith("~="):
        return ">=" + constraint.lstrip("^~")
    return "==" + constraint if constraint[:1].isdigit() else constraint


def _strings(lists: list[Any]) -> list[str]:
    return [d for deps in lists if isinstance(deps, list) for d in deps if isinstance(d, str)]


@lru_cache(maxsize=4096)  # the folders above a tree: each listed once per run, not per folder
def _requirement_files(folder: str) -> tuple[tuple[str, str], ...]:
    """The requirement files of `folder`: (name, "pip" or "conda")."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:  # unreadable: it declares nothing we can see
        return ()
    kinds = ((n, _requirements_kind(n.lower())) for n in names)
    return tuple((n, kind) for n, kind in kinds if kind is not None)


# requirements.txt, dev-requirements.txt, and the names people also give it: requirement.txt,
# reqs.txt, requierments.txt (werent4/wav2vec-emotions, blind set 288: torch==2.7.1 there)
REQUIREMENTS_NAME = re.compile(r"requirements|^req\w*\.txt$")


def _requirements_kind(name: str) -> str | None:
    if REQUIREMENTS_NAME.search(name) and name.endswith(".txt"):
        return "pip"
    if name.startswith("environment") and name.endswith((".yml", ".yaml")):
        return "conda"
    return None


def _declared(folder: str) -> list[str]:
    """The requirement files of `folder`, as pip requirement text: a conda environment file
    (environment.yml) gives its torch lines."""
    out = []
    for name, kind in _requirement_files(folder):
        path = os.path.join(folder, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append(_requirement_text(path, kind, st.st_mtime_ns, st.st_size))
    return out


@lru_cache(maxsize=4096)  # every folder of a tree asks for the root's files: read each once
def _requirement_text(path: str, kind: str, mtime_ns: int, size: int) -> str:
    text = _read(path) or ""
    return text if kind == "pip" else conda_torch(text)


TOP_LEVEL_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:", re.M)


def _dependencies(text: str) -> str:
    """The lines of the file's top-level `dependencies:` blocks (their nested pip section too)."""
    keys = list(TOP_LEVEL_KEY.finditer(text))
    ends = [k.start() for k in keys[1:]] + [len(text)] if keys else []
    return "\n".join(
        text[k.end() : end]
        for k, end in zip(keys, ends, strict=True)
        if k.group(1) == "dependencies"
    )


# A conda environment file's list item naming torch: `- pytorch=1.12.1`, `- pytorch::pytorch>=2`,
# `- pytorch 2.0.1 py3.9_cuda11.7_0`, or in its pip section `- torch==2.9.0+cu130`. Not read as
# YAML (no parser is a dependency): the items are one per line.
CONDA_TORCH = re.compile(
    r"^[ \t]*-[ \t]*[\"']?(?:[\w.-]+::)?(?:py)?torch(?![\w.-])([^#\n\"']*)", re.M
)


def conda_torch(text: str) -> str:
    """The torch items of a conda environment file's `dependencies:` as pip requirement lines
    (not its `channels:`, where `- pytorch` is pytorch.org's channel): conda's `=1.12` (that
    release, any patch) and `1.12` read as `==1.12`."""
    lines = []
    for m in CONDA_TORCH.finditer(_dependencies(text)):
        spec = m.group(1).strip()
        if spec[:1] == "=" and spec[:2] != "==":
            spec = "=" + spec
        elif spec[:1].isdigit():
            spec = "==" + spec.split()[0]
        lines.append(f"torch{spec}")
    return "\n".join(lines)


def _floor_of_parts(directory: str) -> tuple[int, int] | None:
    """No project root names torch: the nearest folder at or above `directory` whose requirement
    files name it, whatever their names say they are for (gardan4/AgenticRAG, blind set 205, has
    no packaging file or requirements.txt, but AGENT_requirements.txt pins torch==2.6.0)."""
    for d in _ancestors(directory):
        reqs = _declared(d)
        if any(TORCH_REQ.search(r) for r in reqs):
            return torch_lower_bound(reqs)
    for d in _ancestors(directory):
        reqs = [r for sub in SETUP_FOLDERS for r in _declared(os.path.join(d, sub))]
        if any(TORCH_REQ.search(r) for r in reqs):
            return torch_lower_bound(reqs)
    return None


# Where a project with no requirement file at or above the code keeps it: setup/requirements-
# freeze.txt (fusiongodo/medical-image-registration, blind set 289: torch==2.12.0)
SETUP_FOLDERS = ("setup", "requirements", "env", "envs", "install")


def _torch_min(directory: str, cfg: shared_config.Config) -> tuple[int, int] | None:
    """The torch floor of the nearest project that names torch: its pyproject dependencies
    (with its extras and dependency groups: SLM-Lab requires torch>=2.8 in its `ml` group
    only), else its requirements*.txt. A nested folder whose requirements do not name torch (a
    web front end's) leaves the question to the project around it."""
    for root in _project_roots(directory):
        declared = []
        if cfg.root == root:  # the project's own pyproject.toml (the configuration's file)
            declared = _pyproject_requirements(cfg)
            bound = torch_lower_bound(["\n".join(declared)])  # one list: its companions count
            if bound is not None:
                return bound
        reqs = _declared(root)
        if any(TORCH_REQ.search(r) for r in [*declared, *reqs]):
            return torch_lower_bound(reqs)
    return _floor_of_parts(directory)


@lru_cache(maxsize=8192)  # one per folder of the tree: a big tree has thousands
def config_for_dir(directory: str) -> ProjectConfig:
    """What the nearest pyproject.toml says for files in `directory`, and the torch floor of
    the nearest project (which may be a setup.py project inside the configured one)."""
    problems: list[str] = []
    path = shared_config.find_pyproject(Path(directory))
    try:
        cfg = shared_config.read(str(path)) if path else shared_config.Config()
        out = _from_config(cfg, problems)
    except shared_config.ConfigError as exc:
        problems.append(exc.problem)
        cfg = shared_config.Config(exc.path)
        out = ProjectConfig(root=cfg.root)
    torch_min = _torch_min(directory, cfg)
    python_min = _requires_python(cfg)
    python_floor = first_release_for_python(python_min) if python_min else None
    if python_floor is not None and (torch_min is None or python_floor > torch_min):
        torch_min = python_floor
    return dataclasses.replace(
        out, torch_min=torch_min, python_min=python_min, problems=tuple(problems)
    )


def _requires_python(cfg: shared_config.Config) -> tuple[int, int] | None:
    """The lowest Python `requires-python` allows. It also sets a torch floor: no torch before
    2.9 has a wheel for CPython 3.14, so `requires-python = ">=3.14"` runs torch 2.9 or later,
    where weights_only is the default (anongecko/flux2-lora-toolkit, blind set 234: four loads
    its labeller read so)."""
    spec = cfg.project.get("requires-python")
    if not isinstance(spec, str):
        return None
    lows = [(int(a), int(b)) for a, b in REQUIRES_PYTHON_FLOOR.findall(spec)]
    return max(lows) if lows else None


def config_for(path: str) -> ProjectConfig:
    return config_for_dir(os.path.dirname(os.path.abspath(path)))
