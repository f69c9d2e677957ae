"""What a check module declares (`Check`): its rules, the words that make a statement worth
walking, and the calls, keywords and assignments it hooks into; `Hooks` indexes those of the
selected checks for the walk."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# A hook's first argument is the scan's Context (context.py); typed Any so that this module, which
# context.py imports, does not import it back.
CallHook = Callable[[Any, ast.Call], None]
AssignHook = Callable[[Any, "ast.Assign | ast.AnnAssign"], None]
DefHook = Callable[[Any, "ast.FunctionDef | ast.AsyncFunctionDef"], None]
TestHook = Callable[[Any, "ast.If | ast.IfExp"], None]


@dataclass(frozen=True)
class Check:
    """One rule module's hooks. A statement is walked only if one of its lines holds one of
    `words` (plain text: "cuda") or `.<attr>` for one of `attrs` (`.zeros`, `. item`): they
    must occur in every statement a finding can come from. `calls`: called names
    (`x.cuda()` / `cuda()` -> "cuda") that trigger `on_call`; `keywords`: keyword names
    that do (`pin_memory=`)."""

    rules: tuple[str, ...]
    words: tuple[str, ...] = ()
    attrs: frozenset[str] = frozenset()
    calls: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()
    on_call: CallHook | None = None
    on_assign: AssignHook | None = None
    on_def: DefHook | None = None  # a function definition, before its body is walked
    on_test: TestHook | None = None  # an `if` statement or `a if test else b`, before its test


@dataclass
class Hooks:
    calls: dict[str, list[CallHook]] = field(default_factory=dict)
    keywords: dict[str, list[CallHook]] = field(default_factory=dict)
    assigns: list[AssignHook] = field(default_factory=list)
    defs: list[DefHook] = field(default_factory=list)
    tests: list[TestHook] = field(default_factory=list)

    @classmethod
    def of(cls, checks: Sequence[Check]) -> Hooks:
        h = cls()
        for c in checks:
            if c.on_call:
                for n in c.calls:
                    h.calls.setdefault(n, []).append(c.on_call)
                for k in c.keywords:
                    h.keywords.setdefault(k, []).append(c.on_call)
            if c.on_assign:
                h.assigns.append(c.on_assign)
            if c.on_def:
                h.defs.append(c.on_def)
            if c.on_test:
                h.tests.append(c.on_test)
        return h
