"""Put an environment back as its undo record says, and prove it with ``pip freeze``.

Versions are asked for with ``===`` (the exact string): ``==2.13.0`` would also take
``2.13.0+cu128`` from any index the environment's pip is configured with.

Every distribution the fix touched, or that differs from the record now, is reinstalled at its
recorded version from its recorded source (``--no-deps``: nothing else moves); what the fix added
is removed. Then ``pip freeze --all`` is taken again and compared line by line with the record's.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from typing import Any

from . import inventory, proc, snapshot

INSTALL_TIMEOUT_S = 1800.0


@dataclass
class Restored:
    commands: list[proc.Ran] = field(default_factory=list)
    diff: list[str] = field(default_factory=list)  # pip freeze, recorded vs now: empty = exact
    removed: list[str] = field(default_factory=list)  # pip's leftovers taken away (snapshot)
    error: str = ""

    @property
    def exact(self) -> bool:
        return not self.error and not self.diff and all(r.ok for r in self.commands)

    def to_dict(self) -> dict[str, Any]:
        return {
            "exact": self.exact,
            "freeze_diff": self.diff,
            "removed": self.removed,
            "commands": [r.to_dict() for r in self.commands],
            **({"error": self.error} if self.error else {}),
        }


def _conda_name(name: str, conda: dict[str, Any]) -> str | None:
    if name in conda:
        return name
    return "pytorch" if name == "torch" and "pytorch" in conda else None


def _conda_exe() -> str | None:
    import os

    return os.environ.get("CONDA_EXE") or shutil.which("conda") or shutil.which("mamba")


def commands(record: dict[str, Any], now: inventory.Inventory) -> list[list[str]]:
    """The argv lists that bring ``now`` back to ``record``: removals first, then reinstalls
    grouped by source."""
    python, recorded = record["python"], record["distributions"]
    current = now.versions()
    touched = set(record.get("touched") or [])
    redo = sorted(n for n in recorded if n in touched or current.get(n) != recorded[n]["version"])
    added = sorted(set(current) - set(recorded))
    out: list[list[str]] = []
    if added:
        out.append([python, "-m", "pip", "uninstall", "-y", *added])
    groups: dict[tuple[str, str | None], list[str]] = {}
    conda_specs = []
    for name in redo:
        dist = recorded[name]
        src = dist["source"]
        conda_name = _conda_name(name, record.get("conda") or {})
        if dist.get("installer") == "conda" and conda_name:
            meta = record["conda"][conda_name]
            channel = f"{meta['channel']}::" if meta.get("channel") else ""
            conda_specs.append(f"{channel}{conda_name}=={meta['version']}={meta.get('build', '*')}")
        elif src["kind"] == "url":
            groups.setdefault(("url", None), []).append(f"{name} @ {src['url']}")
        else:
            groups.setdefault(("index", src.get("index_url")), []).append(
                f"{name}==={dist['version']}"
            )
    for (_kind, index), reqs in groups.items():
        argv = [python, "-m", "pip", "install", "--no-deps", "--force-reinstall", *reqs]
        out.append(argv + (["--index-url", index] if index else []))
    if conda_specs:
        conda = _conda_exe() or "conda"
        out.append(
            [conda, "install", "--yes", "--no-deps", "--prefix", record["prefix"], *conda_specs]
        )
    return out


def restore(record: dict[str, Any], timeout_s: float = INSTALL_TIMEOUT_S) -> Restored:
    """Run the restore and compare ``pip freeze`` with the record's."""
    result = Restored()
    result.removed = snapshot.remove_stashes(record.get("snapshot") or {})
    now = inventory.take(record["python"], record["prefix"])
    if now.error:
        result.error = now.error
        return result
    for argv in commands(record, now):
        ran = proc.run(argv, timeout_s)
        result.commands.append(ran)
    result.removed += snapshot.remove_strays(record.get("snapshot") or {})
    after = inventory.take(record["python"], record["prefix"])
    if after.error:
        result.error = after.error
        return result
    result.diff = inventory.freeze_diff(record["freeze"], after.freeze)
    return result
