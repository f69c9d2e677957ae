"""Run the checks (checks/) over one file's AST.

The analyzer never imports or runs the code. A cheap text pre-filter comes first: a file with
no line holding any word a check reacts to is not analysed at all, and in the others only
the statements spanning such lines are walked.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from .checks import CHECKS
from .context import Context, ProjectFacts
from .hooks import Check, Hooks
from .model import Finding
from .positions import NEWLINE
from .project import FileSummary


@dataclass(frozen=True)
class Triggers:
    """What makes a line worth walking: one of `words` anywhere in it, or `.<attr>` (spaces
    allowed after the dot, even a line break) for one of the attributes."""

    words: tuple[str, ...]  # none holds another: "load" already finds "load_model"
    attrs: re.Pattern[str] | None
    any_of: re.Pattern[str]  # the same as one regex: for files with "\r" newlines


@lru_cache(maxsize=16)
def _plan(rules: frozenset[str] | None) -> tuple[Hooks, Triggers]:
    checks: list[Check] = [c for c in CHECKS if rules is None or set(c.rules) & rules]
    every = {w for c in checks for w in c.words}
    words = tuple(sorted(w for w in every if not any(o != w and o in w for o in every)))
    names = sorted({a for c in checks for a in c.attrs})
    attrs = re.compile(r"\.\s*(?:" + "|".join(names) + r")\b") if names else None
    parts = [re.escape(w) for w in words] + ([attrs.pattern] if attrs else [])
    any_of = re.compile("|".join(parts) if parts else r"(?!)")
    return Hooks.of(checks), Triggers(words, attrs, any_of)


def candidate_lines(text: str, triggers: Triggers) -> list[int]:
    """Sorted 1-based lines where a trigger starts (as the tokenizer counts lines). Each word
    is found with `str.find`, skipping to the next line after a hit: many times faster than
    one regex of alternatives, which Python tries one by one at every character."""
    if "\r" in text:  # old Mac or mixed newlines: map offsets through the line starts
        starts = [0, *(m.end() for m in NEWLINE.finditer(text))]
        return sorted({bisect_right(starts, m.start()) for m in triggers.any_of.finditer(text)})
    hits: list[int] = []
    find = text.find
    for word in triggers.words:
        at = find(word)
        while at >= 0:
            hits.append(at)
            end = find("\n", at)
            at = find(word, end) if end >= 0 else -1
    if triggers.attrs is not None:
        hits += [m.start() for m in triggers.attrs.finditer(text)]
    hits.sort()
    out: list[int] = []
    line, pos, count = 1, 0, text.count
    for at in hits:
        line += count("\n", pos, at)
        pos = at
        if not out or out[-1] != line:
            out.append(line)
    return out


def analyze(
    path: str,
    text: str,
    tree: ast.Module,
    project: ProjectFacts | None = None,
    rules: frozenset[str] | None = None,
    summary: FileSummary | None = None,
) -> list[Finding]:
    """Findings of the checks that report any of `rules` (all when None); what the file tells
    the rest of the project goes into `summary`."""
    hooks, triggers = _plan(rules)
    lines = candidate_lines(text, triggers)
    if not lines:
        return []
    ctx = Context(path, text, hooks, lines, project, summary)
    ctx.visit(tree)
    ctx.findings.sort(key=lambda f: (f.line, f.col, f.rule))
    return ctx.findings
