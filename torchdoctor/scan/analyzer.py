"""Run the checks (checks/) over one file's AST.

The analyzer never imports or runs the code. A cheap text pre-filter comes first: a file with
no line holding any word a check reacts to is not analysed at all, and in the others only
the statements spanning such lines are walked.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache

from .checks import CHECKS
from .context import NEWLINE, Check, Context, Hooks, ProjectFacts
from .model import Finding


@lru_cache(maxsize=16)
def _plan(rules: frozenset[str] | None) -> tuple[Hooks, re.Pattern[str]]:
    checks: list[Check] = [c for c in CHECKS if rules is None or set(c.rules) & rules]
    words = sorted({w for c in checks for w in c.words}, key=lambda w: (-len(w), w))
    pattern = re.compile("|".join(map(re.escape, words)) if words else r"(?!)")
    return Hooks.of(checks), pattern


def candidate_lines(text: str, pattern: re.Pattern[str]) -> list[int]:
    """Sorted 1-based lines where a trigger word occurs (as the tokenizer counts lines)."""
    hits = [m.start() for m in pattern.finditer(text)]
    if not hits:
        return []
    starts = [0, *(m.end() for m in NEWLINE.finditer(text))]
    return sorted({bisect_right(starts, pos) for pos in hits})


def might_find(text: str, rules: Iterable[str] | None = None) -> bool:
    """Can this text hold a finding at all? (No trigger word: no analysis.)"""
    return _plan(frozenset(rules) if rules is not None else None)[1].search(text) is not None


def analyze(
    path: str,
    text: str,
    tree: ast.Module,
    project: ProjectFacts | None = None,
    rules: frozenset[str] | None = None,
) -> list[Finding]:
    """Findings of the checks that report any of `rules` (all when None)."""
    hooks, pattern = _plan(rules)
    lines = candidate_lines(text, pattern)
    if not lines:
        return []
    ctx = Context(path, text, hooks, lines, project)
    ctx.visit(tree)
    ctx.findings.sort(key=lambda f: (f.line, f.col, f.rule))
    return ctx.findings
