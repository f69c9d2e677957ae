"""The undo record: the environment as it was before a fix, written beside it before anything runs.

``<prefix>/.torchdoctor/fix-undo.json`` (through safeio: temporary file, fsync, rename) holds the
exact version of every distribution and where each came from, so a restore installs exactly that
build from exactly that source, and ``pip freeze`` afterwards is compared with the one recorded:
- a file or URL install (``direct_url.json``): that URL, its hash checked by pip;
- a PyTorch build with a local tag (``+cu128``): that variant's wheel index (or its mirror);
- anything else from an index: the indexes the environment's pip is configured with;
- conda's packages: their channel, version and build string (``conda-meta``).
A folder or editable install cannot be reinstalled from a record: fix refuses to touch one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from datetime import datetime, timezone
from typing import Any

from ..safeio import InputError, OutputError, atomic_write, read_bounded
from ..version import __version__
from .commands import PYTORCH_INDEX
from .inventory import Dist, Inventory

RECORD_VERSION = 1
FOLDER = ".torchdoctor"
NAME = "fix-undo.json"
_VARIANT = re.compile(r"^(cpu|cu\d+|rocm[\d.]+|xpu)$")


def path_for(prefix: str) -> str:
    return os.path.join(prefix, FOLDER, NAME)


def source_of(dist: Dist, mirror: str | None) -> dict[str, Any]:
    """Where ``dist`` came from, as far as the environment says, in a form a restore can use."""
    direct = dist.direct_url or {}
    if direct.get("dir_info") is not None:
        editable = bool(direct["dir_info"].get("editable"))
        return {"kind": "editable" if editable else "folder", "url": direct.get("url")}
    if direct.get("url"):
        return {"kind": "url", "url": direct["url"], "archive_info": direct.get("archive_info")}
    tag = dist.version.split("+", 1)[1] if "+" in dist.version else ""
    if _VARIANT.match(tag):
        base = (mirror or PYTORCH_INDEX).rstrip("/")
        return {"kind": "index", "index_url": f"{base}/{tag}", "local_tag": tag}
    return {"kind": "index", "index_url": None}  # None: the environment's own pip configuration


def build(inv: Inventory, plan_commands: list[list[str]], mirror: str | None) -> dict[str, Any]:
    return {
        "record_version": RECORD_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "torchdoctor_version": __version__,
        "python": inv.python,
        "prefix": inv.prefix,
        "state": "recorded",
        "plan": plan_commands,
        "freeze": inv.freeze,
        "distributions": {
            name: {**d.to_dict(), "source": source_of(d, mirror)}
            for name, d in sorted(inv.dists.items())
        },
        "conda": inv.conda,
    }


def unrestorable(record: dict[str, Any], names: list[str]) -> list[str]:
    """Of ``names``, the installed ones a restore could not put back exactly."""
    dists = record["distributions"]
    return [
        f"{n} {dists[n]['version']} ({dists[n]['source']['kind']} install from "
        f"{dists[n]['source'].get('url')})"
        for n in names
        if n in dists and dists[n]["source"]["kind"] in ("editable", "folder")
    ]


def save(record: dict[str, Any]) -> str:
    """Write the record beside the environment; OutputError when that is impossible."""
    path = path_for(record["prefix"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def mark(record: dict[str, Any], state: str, **extra: Any) -> None:
    """Record how far the fix got (applying, applied, verified, restored, …); best effort."""
    record.update(state=state, **extra)
    # The record of the state before is what matters, and it is on disk already.
    with contextlib.suppress(OSError, OutputError):
        save(record)


class RecordError(ValueError):
    """No usable undo record: one line for the user."""


def load(prefix: str) -> dict[str, Any]:
    path = path_for(prefix)
    if not os.path.exists(path):
        raise RecordError(
            f"no undo record at {path}: `torchdoctor fix` has not changed this environment"
        )
    try:
        record = json.loads(read_bounded(path, 64 * 1024 * 1024, allow_stdin=False))
    except (InputError, ValueError) as exc:
        raise RecordError(f"the undo record {path} cannot be read: {exc}") from None
    ok = (
        isinstance(record, dict)
        and record.get("record_version") == RECORD_VERSION
        and isinstance(record.get("distributions"), dict)
        and isinstance(record.get("freeze"), str)
        and all(
            isinstance(d, dict)
            and isinstance(d.get("version"), str)
            and isinstance(d.get("source"), dict)
            for d in record["distributions"].values()
        )
    )
    if not ok:
        raise RecordError(
            f"the undo record {path} is not one this torchdoctor wrote (version {RECORD_VERSION})"
        )
    return record
