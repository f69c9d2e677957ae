"""Calls of a function found in a file's text, without parsing the file: the project view asks
for the callers of a few names across the whole tree, and parsing every file that mentions one
costs as much as the scan itself. A call is read from its opening parenthesis to the matching
one (strings and comments skipped); what matters is whether it gives a parameter by keyword,
by position, or through `*args` / `**kwargs`."""

from __future__ import annotations

import re
from collections.abc import Iterator

QUOTE = re.compile(r"""[rRbBuUfF]{0,2}('''|\"\"\"|'|")""")
LIMIT = 20_000  # characters of one call: past this, unsure (counted as passing)


def _skip_string(text: str, i: int, quote: str) -> int:
    """The index after the string literal whose quote starts at i."""
    j = i + len(quote)
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text.startswith(quote, j):
            return j + len(quote)
        if len(quote) == 1 and text[j] == "\n":
            return j
        j += 1
    return j


def _arguments(text: str, start: int) -> list[str] | None:
    """The top-level arguments of the call whose `(` is at `start`, as text; None if unclear."""
    depth, i, arg_start, out = 0, start, start + 1, []
    end = min(len(text), start + LIMIT)
    while i < end:
        c = text[i]
        if c in "\"'":
            m = QUOTE.match(text, i)
            i = _skip_string(text, i, m.group(1) if m else c)
            continue
        if c == "#":
            nl = text.find("\n", i)
            i = end if nl < 0 else nl
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                out.append(text[arg_start:i])
                return [a.strip() for a in out if a.strip()]
        elif c == "," and depth == 1:
            out.append(text[arg_start:i])
            arg_start = i + 1
        i += 1
    return None


def calls_in(text: str, name: str) -> Iterator[tuple[int, list[str] | None]]:
    """(line, arguments or None) of each `name(` call in the text; not `def name(`, nor
    `class name(`, nor a longer name that ends with it."""
    pattern = re.compile(r"(?<!\w)" + re.escape(name) + r"\s*\(")
    line, pos = 1, 0
    for m in pattern.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if text[max(0, pos - 6) : pos].endswith(("def ", "class ")):
            continue
        yield line, _arguments(text, m.end() - 1)


def passes(arguments: list[str] | None, param: str, index: int) -> bool:
    """Does a call with these arguments give `param`? Unclear calls count as giving it."""
    if arguments is None:
        return True
    positional = 0
    for a in arguments:
        if a.startswith("*"):
            return True  # *args / **kwargs may carry it
        key = re.match(r"([A-Za-z_]\w*)\s*=(?!=)", a)
        if key:
            if key.group(1) == param:
                return True
        else:
            positional += 1
    return 0 <= index < positional
