"""``[tool.torchdoctor]`` in the project's pyproject.toml: the one configuration every command reads.

    [tool.torchdoctor]
    ignore = ["container", "TD201"]      # silenced on every command (counted in the summary)
    select = []                          # when not empty: report only these

    [tool.torchdoctor.check]             # a command's own table adds to the shared lists
    ignore = ["host"]

    [tool.torchdoctor.scan.per-file-ignores]   # scan: globs relative to this file
    "tests/*" = ["TD001"]

Ids match exactly, by dotted prefix (``cuda`` → ``cuda.driver``) or by code prefix
(``TD1`` → ``TD101``). The applicable file is the nearest pyproject.toml at or above the working
directory (``scan``: at or above each scanned file). The file is untrusted input: read bounded,
every key checked when it is read (an unknown or misspelt key, a value of the wrong type), and
a malformed one is one line naming the file and the key (exit 2), never a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .report.findings import Selection
from .safeio import InputError, read_text_bounded

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_LIMIT = 4 * 1024 * 1024
TABLE = "tool.torchdoctor"
# every command that reports findings (a new one adds its name: its table is refused otherwise)
COMMANDS = ("check", "scan", "inspect", "audit", "dist")
ID_LISTS = ("select", "ignore")
PER_FILE = "per-file-ignores"
# keys a command's own table may hold besides select/ignore: only scan's findings are in files
COMMAND_KEYS = {"scan": (*ID_LISTS, PER_FILE, "confidence", "portable")}
# the lowest confidence of scan findings shown: shared ([tool.torchdoctor]) or scan's own
CONFIDENCE = "confidence"
CONFIDENCES = ("low", "medium", "high")
# scan: the code must run without CUDA, so its device findings keep their confidence
PORTABLE = "portable"


class ConfigError(Exception):
    """A pyproject.toml that cannot be used: ``path`` and one line saying which key and why."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = path, problem


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml from ``start`` (the working directory) upwards."""
    try:  # absolute, not resolved: scan's globs are relative to the folder as the user names it
        here = Path(os.path.abspath(start or os.getcwd()))
    except OSError:  # the working directory was deleted
        return None
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Config:
    """A validated ``[tool.torchdoctor]`` (and the ``[project]`` and ``[dependency-groups]``
    tables beside it)."""

    path: str | None = None
    table: Mapping[str, Any] = field(default_factory=dict)
    project: Mapping[str, Any] = field(default_factory=dict)
    groups: Mapping[str, Any] = field(default_factory=dict)  # PEP 735 dependency groups
    # Poetry's dependency tables ([tool.poetry.dependencies], its groups' and dev-dependencies)
    poetry: tuple[Mapping[str, Any], ...] = ()

    @property
    def root(self) -> str | None:
        """The folder per-file globs are relative to."""
        return str(Path(self.path).parent) if self.path else None

    def _own(self, command: str) -> Mapping[str, Any]:
        return self.table.get(command, {})

    def ids(self, key: str, command: str | None = None) -> tuple[str, ...]:
        """``select`` or ``ignore``: the shared list, or (with ``command``) that command's own."""
        return tuple((self._own(command) if command else self.table).get(key, ()))

    def value(self, key: str, command: str | None = None) -> str | None:
        """A string setting (validated when read): the shared one, or the command's own."""
        got = (self._own(command) if command else self.table).get(key)
        return got if isinstance(got, str) else None

    def flag(self, key: str, command: str) -> bool:
        """A boolean setting of the command's own table (validated when read)."""
        return self._own(command).get(key) is True

    def selection(self, command: str) -> Selection:
        """The shared lists plus the command's own table."""
        shared = Selection(self.ids("select"), self.ids("ignore"))
        return shared.merged(Selection(self.ids("select", command), self.ids("ignore", command)))

    def per_file_ignores(self, command: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(glob, ids) pairs of the command's ``per-file-ignores``, in file order."""
        return tuple(
            (glob, tuple(ids)) for glob, ids in self._own(command).get(PER_FILE, {}).items()
        )


def _where(command: str | None = None) -> str:
    return f"[{TABLE}.{command}]" if command else f"[{TABLE}]"


def _check_ids(table: Mapping[str, Any], key: str, where: str, label: str | None = None) -> None:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} {label or key}: must be a list of id strings, not {value!r:.60}")


def _check_globs(table: Mapping[str, Any], where: str) -> None:
    globs = table.get(PER_FILE, {})
    if not isinstance(globs, dict):
        raise ValueError(f"{where} {PER_FILE}: must be a table of glob = [ids], not {globs!r:.60}")
    for glob in globs:
        _check_ids(globs, glob, f"{where} {PER_FILE}", label=f'"{glob}"')


def _check_confidence(table: Mapping[str, Any], where: str) -> None:
    value = table.get(CONFIDENCE, "medium")
    if value not in CONFIDENCES:
        known = ", ".join(CONFIDENCES)
        raise ValueError(f"{where} {CONFIDENCE}: must be one of {known}, not {value!r:.60}")


def _check_flag(table: Mapping[str, Any], key: str, where: str) -> None:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{where} {key}: must be true or false, not {value!r:.60}")


def _check_known(table: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    """A misspelt key would silently do nothing: refuse it."""
    for key in table:
        if key not in known:
            raise ValueError(f"{where} {key}: unknown key (known: {', '.join(known)})")


def _check_command(table: Mapping[str, Any], command: str) -> None:
    own = table.get(command, {})
    where = _where(command)
    if not isinstance(own, dict):
        raise ValueError(f"{where}: must be a table, not {own!r:.60}")
    _check_known(own, COMMAND_KEYS.get(command, ID_LISTS), where)
    for key in ID_LISTS:
        _check_ids(own, key, where)
    _check_globs(own, where)
    _check_confidence(own, where)
    _check_flag(own, PORTABLE, where)


def _validated(table: object) -> dict[str, Any]:
    """``[tool.torchdoctor]`` whose every key is known and has the type it must have."""
    if not isinstance(table, dict):
        raise ValueError(f"{_where()}: must be a table, not {table!r:.60}")
    _check_known(table, (*ID_LISTS, CONFIDENCE, *COMMANDS), _where())
    for key in ID_LISTS:
        _check_ids(table, key, _where())
    _check_confidence(table, _where())
    for command in COMMANDS:
        _check_command(table, command)
    return table


def read(path: str) -> Config:
    """The configuration in the pyproject.toml at ``path`` (ConfigError when malformed)."""
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise ConfigError(path, f"cannot read: {exc.strerror or exc}") from None
    return _read(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _read(path: str, _mtime_ns: int, _size: int) -> Config:
    """Parsed once per version of the file: scan asks for it from every folder it walks."""
    try:
        doc = tomllib.loads(read_text_bounded(path, CONFIG_LIMIT, allow_stdin=False))
    except (InputError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read: {exc}") from None
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise ConfigError(path, f"not valid TOML ({exc})") from None
    tool = doc.get("tool", {})
    project = doc.get("project", {})
    groups = doc.get("dependency-groups", {})
    try:
        table = _validated(tool.get("torchdoctor", {}) if isinstance(tool, dict) else {})
    except ValueError as exc:
        raise ConfigError(path, str(exc)) from None
    return Config(
        path,
        table,
        project if isinstance(project, dict) else {},
        groups if isinstance(groups, dict) else {},
        _poetry_tables(tool.get("poetry") if isinstance(tool, dict) else None),
    )


def _poetry_tables(poetry: object) -> tuple[Mapping[str, Any], ...]:
    """Poetry's dependency tables: the main one, each group's, and the old dev-dependencies."""
    if not isinstance(poetry, dict):
        return ()
    groups = poetry.get("group")
    tables = [
        poetry.get("dependencies"),
        poetry.get("dev-dependencies"),
        *(
            g.get("dependencies")
            for g in (groups.values() if isinstance(groups, dict) else ())
            if isinstance(g, dict)
        ),
    ]
    return tuple(t for t in tables if isinstance(t, dict))


def load(path: Path | None = None) -> Config:
    """The configuration of the working directory's project (empty when there is none)."""
    path = path or find_pyproject()
    return Config() if path is None else read(str(path))


def split_ids(values: tuple[str, ...]) -> tuple[str, ...]:
    """Repeatable, comma-separated command-line values."""
    return tuple(v.strip() for raw in values for v in raw.split(",") if v.strip())
