"""``[tool.torchdoctor]`` in the project's pyproject.toml: settings shared by every command.

    [tool.torchdoctor]
    ignore = ["container", "TD201"]      # silenced on every command (counted in the summary)
    select = []                          # when not empty: report only these

    [tool.torchdoctor.check]             # a command's own table adds to the shared lists
    ignore = ["host"]

Ids match exactly, by dotted prefix (``cuda`` → ``cuda.driver``) or by code prefix
(``TD1`` → ``TD101``). The file is untrusted input: read bounded, and a malformed table is one
line and exit 2, never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .findings import Selection
from .safeio import InputError, read_text_bounded

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_LIMIT = 4 * 1024 * 1024


class ConfigError(Exception):
    """A pyproject.toml whose [tool.torchdoctor] cannot be used; one line for the user."""


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml from ``start`` (the working directory) upwards."""
    try:
        here = (start or Path.cwd()).resolve()
    except OSError:  # the working directory was deleted
        return None
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(path: Path | None = None) -> dict[str, Any]:
    """The ``[tool.torchdoctor]`` table (``{}`` when there is none)."""
    path = path or find_pyproject()
    if path is None:
        return {}
    try:
        doc = tomllib.loads(read_text_bounded(str(path), CONFIG_LIMIT, allow_stdin=False))
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    table = doc.get("tool", {}).get("torchdoctor", {}) if isinstance(doc.get("tool"), dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.torchdoctor] must be a table")
    table = dict(table)
    table["_path"] = str(path)
    return table


def _ids(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of id strings")
    return tuple(value)


def selection(command: str, config: dict[str, Any]) -> Selection:
    """The shared lists plus the command's own table."""
    where = f"{config.get('_path', 'pyproject.toml')} [tool.torchdoctor]"
    sel = Selection(_ids(config, "select", where), _ids(config, "ignore", where))
    own = config.get(command, {})
    if not isinstance(own, dict):
        raise ConfigError(f"{where}: '{command}' must be a table")
    return sel.merged(
        Selection(
            _ids(own, "select", f"{where[:-1]}.{command}]"),
            _ids(own, "ignore", f"{where[:-1]}.{command}]"),
        )
    )


def split_ids(values: tuple[str, ...]) -> tuple[str, ...]:
    """Repeatable, comma-separated command-line values."""
    return tuple(v.strip() for raw in values for v in raw.split(",") if v.strip())
