"""--fix: apply the findings' mechanical edits, only where the result still compiles."""

from __future__ import annotations

import contextlib
import difflib
import os
import shutil
import tempfile
import tokenize
from dataclasses import dataclass

from .model import Finding


class UnsafeFix(Exception):
    """The edits together would not compile: the file is left as it is."""


@dataclass
class FileFix:
    path: str
    old: str
    new: str
    applied: list[Finding]

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                f"a/{self.path}",
                f"b/{self.path}",
            )
        )


def plan(path: str, text: str, findings: list[Finding]) -> FileFix | None:
    """Apply non-overlapping edits back to front. None: nothing to do; raises UnsafeFix when
    the result would not compile."""
    chosen: list[Finding] = []
    taken: list[tuple[int, int]] = []
    seen: set[tuple[str, int, int, str]] = set()
    for f in sorted((f for f in findings if f.edit), key=lambda f: (f.edit.start, f.edit.end)):  # type: ignore[union-attr]
        e = f.edit
        assert e is not None
        key = (f.rule, e.start, e.end, e.text)
        if key in seen:  # the same finding twice must not insert its keyword twice
            continue
        seen.add(key)
        # Two insertions at one point (map_location and weights_only) are fine; overlaps are not.
        if any(e.start < end and start < e.end for start, end in taken):
            continue
        taken.append((e.start, e.end))
        chosen.append(f)
    if not chosen:
        return None
    new = text
    # Back to front; insertions at one point keep their order (map_location, weights_only).
    for f in reversed(chosen):
        e = f.edit
        assert e is not None
        new = new[: e.start] + e.text + new[e.end :]
    try:
        # compile, not ast.parse: only the compiler rejects a repeated keyword argument.
        compile(new, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise UnsafeFix(f"fix skipped: the rewrite would not compile ({exc})") from None
    return FileFix(path, text, new, chosen)


def write(fix: FileFix) -> None:
    """Write back in the file's own encoding (coding cookie or BOM kept), newlines and mode,
    atomically: a temp file in the same directory replaces the original only once complete."""
    with open(fix.path, "rb") as fh:
        encoding, _ = tokenize.detect_encoding(fh.readline)
    data = fix.new.encode(encoding)  # utf-8-sig puts the BOM back
    target = os.path.realpath(fix.path)  # through a symlink, as an in-place write would
    directory = os.path.dirname(target)
    fd, tmp = tempfile.mkstemp(prefix=".torchdoctor-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        shutil.copymode(target, tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
