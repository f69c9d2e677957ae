"""What the examined environment holds, as its own pip sees it: every distribution with its exact
version and where it came from, ``pip freeze --all`` as text, the site-packages folders and
whether they can be written, and conda's records of the packages conda installed."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..check.requirements import normalise
from ..safeio import InputError, read_bounded
from . import proc

PIP_TIMEOUT_S = 120.0
# The site-packages folders of an interpreter, asked without its user site or PYTHON* variables.
_SITE = "import json, sysconfig; print(json.dumps(sorted({sysconfig.get_path(k) for k in ('purelib', 'platlib')})))"


@dataclass
class Dist:
    name: str  # normalised
    version: str
    installer: str | None = None  # pip, conda, uv, … (the INSTALLER file)
    direct_url: dict[str, Any] | None = None  # direct_url.json: a file, URL or folder install
    location: str | None = None
    metadata_location: str | None = None  # its .dist-info folder

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "installer": self.installer,
            "direct_url": self.direct_url,
            "location": self.location,
        }


@dataclass
class Inventory:
    python: str
    prefix: str
    dists: dict[str, Dist] = field(default_factory=dict)
    freeze: str = ""
    site_packages: list[str] = field(default_factory=list)
    conda: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> conda-meta record
    error: str = ""  # pip could not be asked: nothing can be recorded, so nothing is applied

    def versions(self) -> dict[str, str]:
        return {n: d.version for n, d in self.dists.items()}

    def unwritable(self) -> list[str]:
        """The site-packages folders (and the environment's own folder) this user cannot write."""
        return [p for p in (*self.site_packages, self.prefix) if p and not _writable(p)]


def _writable(path: str) -> bool:
    # os.access answers EROFS for a read-only mount even to root, which a mode test would not.
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def pip(python: str, *args: str, timeout_s: float = PIP_TIMEOUT_S) -> proc.Ran:
    return proc.run([python, "-m", "pip", *args, "--disable-pip-version-check"], timeout_s)


def take(python: str, prefix: str) -> Inventory:
    """The environment now; ``error`` says why pip could not be asked."""
    inv = Inventory(python, prefix, conda=conda_records(prefix))
    site = proc.run([python, "-I", "-c", _SITE], 30)
    if site.ok:
        with contextlib.suppress(ValueError):
            inv.site_packages = [str(p) for p in json.loads(site.stdout)]
    inspect = pip(python, "inspect", "--local")
    if not inspect.ok:
        inv.error = f"`{python} -m pip inspect` {inspect.why()}"
        return inv
    try:
        inv.dists = _dists(json.loads(inspect.stdout))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        inv.error = f"`pip inspect` printed something fix cannot read ({exc})"
        return inv
    frozen = pip(python, "freeze", "--all", "--local")
    if not frozen.ok:
        inv.error = f"`{python} -m pip freeze` {frozen.why()}"
    inv.freeze = frozen.stdout
    return inv


def _dists(report: dict[str, Any]) -> dict[str, Dist]:
    out: dict[str, Dist] = {}
    for item in report["installed"]:
        meta = item["metadata"]
        name = normalise(meta["name"])
        out.setdefault(
            name,
            Dist(
                name,
                str(meta["version"]),
                item.get("installer"),
                item.get("direct_url"),
                os.path.dirname(item.get("metadata_location") or "") or None,
                item.get("metadata_location"),
            ),
        )
    return out


def conda_records(prefix: str) -> dict[str, dict[str, Any]]:
    """name -> {version, build, channel} of what conda installed in ``prefix`` (conda-meta)."""
    meta = Path(prefix) / "conda-meta"
    out: dict[str, dict[str, Any]] = {}
    try:
        files = sorted(meta.glob("*.json"))
    except OSError:
        return out
    for path in files:
        try:
            record = json.loads(read_bounded(str(path), 8 * 1024 * 1024, allow_stdin=False))
        except (InputError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("name"), str):
            out[record["name"]] = {
                k: record.get(k) for k in ("version", "build", "channel") if record.get(k)
            }
    return out


def freeze_lines(text: str) -> list[str]:
    return sorted(ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))


def freeze_diff(before: str, after: str) -> list[str]:
    """What ``pip freeze`` lists differently (``-`` gone, ``+`` new): empty when equal."""
    a, b = set(freeze_lines(before)), set(freeze_lines(after))
    return [f"-{x}" for x in sorted(a - b)] + [f"+{x}" for x in sorted(b - a)]
