"""--fix: apply the findings' mechanical edits, only where the result still parses."""

from __future__ import annotations

import ast
import difflib
import tokenize
from dataclasses import dataclass

from .model import Finding


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
    """Apply non-overlapping edits back to front; give up on the file if it stops parsing."""
    chosen: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for f in sorted((f for f in findings if f.edit), key=lambda f: (f.edit.start, f.edit.end)):  # type: ignore[union-attr]
        e = f.edit
        assert e is not None
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
        ast.parse(new)
    except (SyntaxError, ValueError):
        return None  # never write code we broke
    return FileFix(path, text, new, chosen)


def write(fix: FileFix) -> None:
    """Write back in the file's own encoding (coding cookie or BOM kept) and newlines."""
    with open(fix.path, "rb") as fh:
        encoding, _ = tokenize.detect_encoding(fh.readline)
    with open(fix.path, "w", encoding=encoding, newline="") as fh:
        fh.write(fix.new)
