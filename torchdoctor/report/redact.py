"""--redact: make a report safe to paste publicly.

Home paths, user and host names, a distributed job's MASTER_ADDR, GPU UUIDs and serial numbers
are replaced by placeholders everywhere in the report (facts included), whatever key they hide
under.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from pathlib import Path
from typing import Any

_UUID = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
_BARE_UUID = re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
SECRET_KEYS = {"serial", "uuid", "hostname", "node", "host_name", "MASTER_ADDR"}
# Loopback names say nothing about a cluster, and the launch check's message relies on them.
_LOOPBACK = {"localhost", "127.0.0.1", "::1", ""}


def _identity() -> list[tuple[str, str]]:
    """(literal, placeholder) pairs, longest first so a home path wins over the user name."""
    pairs: list[tuple[str, str]] = []
    home = str(Path.home())
    if home not in ("/", ""):
        pairs.append((home, "~"))
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = os.environ.get("USER", "")
    host = socket.gethostname()
    if host:
        pairs.append((host, "<host>"))
    master = os.environ.get("MASTER_ADDR", "").strip()
    if master not in _LOOPBACK and master != host:
        pairs.append((master, "<master>"))  # another node's name or address
    if user and len(user) > 2 and user != "root":
        pairs.append((user, "<user>"))
    return sorted(pairs, key=lambda p: -len(p[0]))


def redact_text(text: str, pairs: list[tuple[str, str]] | None = None) -> str:
    for literal, placeholder in pairs if pairs is not None else _identity():
        # Whole names only: a host called "vm" must not turn "nvml" into "n<host>l".
        text = re.sub(rf"(?<![\w-]){re.escape(literal)}(?![\w-])", placeholder, text)
    text = _UUID.sub(lambda m: f"{m.group(1)}-<redacted>", text)
    return _BARE_UUID.sub("<uuid>", text)


def redact(data: Any, pairs: list[tuple[str, str]] | None = None) -> Any:
    pairs = _identity() if pairs is None else pairs
    if isinstance(data, dict):
        return {
            k: (
                "<redacted>"
                if k in SECRET_KEYS and isinstance(v, str) and v and v not in _LOOPBACK
                else redact(v, pairs)
            )
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [redact(v, pairs) for v in data]
    if isinstance(data, str):
        return redact_text(data, pairs)
    return data
