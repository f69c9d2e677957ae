"""The scan's cache: a second run over an unchanged tree reads each file and hashes it, but
parses and analyses only the files whose bytes changed.

Like ruff's: a `.torchdoctor_cache/` folder at the root of the project the scan runs in (the
nearest pyproject.toml above the working directory, else the working directory itself), with
a `CACHEDIR.TAG` (backup tools skip it) and a `.gitignore` of `*`; `TORCHDOCTOR_CACHE_DIR`
puts it elsewhere, `--no-cache` neither reads nor writes it. One JSON file per set of options
(`scan-<key>.json`) holds, per scanned file (by absolute path), the digest of its bytes, the
key of the configuration that applied and the file's record (record.py). Runs over different
paths share it (a pre-commit hook names other files each time): a run rewrites its own
entries and keeps the others whose file still exists. A run whose torchdoctor version or scan
code differ from the stored ones starts it afresh.

What is cached is per file only: the findings one file's text gives. Verdicts that depend on
other files (project.py) are decided again on every run, so an edit to one file is seen by the
findings of every other. A cache that cannot be read is ignored and one that cannot be written
is not written: neither ever fails a scan.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..safeio import InputError, OutputError, atomic_write, read_bounded
from ..version import __version__
from .config import ProjectConfig
from .record import FileRecord

FORMAT = 1
DIR_NAME = ".torchdoctor_cache"
ENV = "TORCHDOCTOR_CACHE_DIR"
READ_LIMIT = 512 * 1024 * 1024
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by torchdoctor.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_SCAN_DIR = Path(__file__).resolve().parent


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _code_digest() -> str:
    """torchdoctor's version, the scan's own sources and the Python that parses: a changed
    rule is a different scan, even before a release bumps the version, and a file that is a
    syntax error for Python 3.11 (`def f[T](…)`) parses on 3.12."""
    h = hashlib.blake2b(__version__.encode(), digest_size=16)
    h.update("python {}.{}".format(*sys.version_info[:2]).encode())
    for p in sorted(_SCAN_DIR.rglob("*.py")):
        with contextlib.suppress(OSError):
            h.update(p.relative_to(_SCAN_DIR).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def config_key(cfg: ProjectConfig | None) -> str:
    """The configuration's content, in an order that does not depend on the run (sets)."""
    if cfg is None:
        return "-"
    doc = {k: sorted(v) if isinstance(v, frozenset) else v for k, v in asdict(cfg).items()}
    doc["per_file_ignores"] = [[g, sorted(ids)] for g, ids in cfg.per_file_ignores]
    return digest(json.dumps(doc, sort_keys=True, default=str).encode())


def default_dir() -> Path:
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    from .. import config as shared_config

    found = shared_config.find_pyproject()
    return (found.parent if found else Path(os.path.abspath("."))) / DIR_NAME


class ScanCache:
    """The stored records of one set of scanned paths under one set of options."""

    def __init__(self, directory: Path, options: str) -> None:
        self.directory = directory
        self.file = directory / f"scan-{digest(options.encode())}.json"
        self.fingerprint = digest(f"{FORMAT}\0{_code_digest()}\0{options}".encode())
        self.entries: dict[str, dict[str, Any]] = {}
        self.project: dict[str, Any] = {}  # the project view's callers, for the same tree only
        self.hits = 0

    def load(self) -> None:
        try:
            doc = json.loads(read_bounded(str(self.file), READ_LIMIT, allow_stdin=False))
        except (InputError, OSError, ValueError):
            return  # none yet, unreadable or not ours: a cold run
        if isinstance(doc, dict) and doc.get("fingerprint") == self.fingerprint:
            files, project = doc.get("files"), doc.get("project")
            self.entries = files if isinstance(files, dict) else {}
            self.project = project if isinstance(project, dict) else {}

    def get(self, path: str, file_digest: str, cfg_key: str) -> FileRecord | None:
        entry = self.entries.get(os.path.abspath(path))
        if not isinstance(entry, dict) or entry.get("config") != cfg_key:
            return None
        record = entry.get("record")
        if not isinstance(record, dict) or record.get("digest") != file_digest:
            return None
        try:
            got = FileRecord.from_json(path, record)
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        self.hits += 1
        return got

    def save(
        self, records: list[FileRecord], cfg_keys: dict[str, str], project: dict[str, Any]
    ) -> None:
        """Store this run's records, and keep other runs' entries of files that still exist
        (a file gone from the disk leaves the cache)."""
        files = {p: e for p, e in self.entries.items() if isinstance(p, str) and os.path.isfile(p)}
        for r in records:
            files.pop(os.path.abspath(r.path), None)  # unreadable now: not kept as it was
            if r.digest and r.path in cfg_keys:
                entry = {"config": cfg_keys[r.path], "record": r.to_json()}
                files[os.path.abspath(r.path)] = entry
        if files == self.entries and project == self.project:
            return  # a warm run over an unchanged tree: what is stored is already this
        doc = {"format": FORMAT, "fingerprint": self.fingerprint, "files": files}
        doc["project"] = project
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for name, text in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "*\n")):
                if not (self.directory / name).exists():
                    atomic_write(str(self.directory / name), text)
            atomic_write(str(self.file), json.dumps(doc, separators=(",", ":")))
        except (OSError, OutputError):
            pass  # a read-only checkout: scan without a cache, as if --no-cache
