"""Run the checks (checks/) over one file's AST.

The analyzer never imports or runs the code. A cheap text pre-filter comes first: a file with
no line holding any word a check reacts to is not analysed at all, and in the others only
the statements spanning such lines are walked.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from functools import lru_cache

from .checks import CHECKS
from .context import Context, ProjectFacts
from .hooks import Check, Hooks
from .model import Finding
from .positions import NEWLINE
from .project import FileSummary


@lru_cache(maxsize=16)
def _plan(rules: frozenset[str] | None) -> tuple[Hooks, re.Pattern[str]]:
    checks: list[Check] = [c for c in CHECKS if rules is None or set(c.rules) & rules]
    # One flat alternation: Python's regex engine is far faster on that than on nested groups.
    words = sorted({re.escape(w) for c in checks for w in c.words})
    attrs = sorted({a for c in checks for a in c.attrs})
    if attrs:
        words.append(r"\.\s*(?:" + "|".join(attrs) + r")\b")
    pattern = re.compile("|".join(words) if words else r"(?!)")
    return Hooks.of(checks), pattern


def candidate_lines(text: str, pattern: re.Pattern[str]) -> list[int]:
    """Sorted 1-based lines where a trigger word occurs (as the tokenizer counts lines).
    One search per such line: after a hit the search resumes at the next line."""
    if "\r" in text:  # old Mac or mixed newlines: map offsets through the line starts
        starts = [0, *(m.end() for m in NEWLINE.finditer(text))]
        return sorted({bisect_right(starts, m.start()) for m in pattern.finditer(text)})
    out: list[int] = []
    line, pos, search, count, find = 1, 0, pattern.search, text.count, text.find
    while (m := search(text, pos)) is not None:
        line += count("\n", pos, m.start())
        out.append(line)
        pos = find("\n", m.end())
        if pos < 0:
            break
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
    hooks, pattern = _plan(rules)
    lines = candidate_lines(text, pattern)
    if not lines:
        return []
    ctx = Context(path, text, hooks, lines, project, summary)
    ctx.visit(tree)
    ctx.findings.sort(key=lambda f: (f.line, f.col, f.rule))
    return ctx.findings
