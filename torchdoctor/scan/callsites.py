"""Calls of a function found in a file's text, without parsing the file: the project view asks
for the callers of a few names across the whole tree, and parsing every file that mentions one
costs as much as the scan itself. A call is read from its opening parenthesis to the matching
one (strings and comments skipped); what matters is whether it gives a parameter by keyword,
by position, or through `*args` / `**kwargs`. A name in a docstring or a comment is not a call
(mmdet's "valid_flags (torch.Tensor): ..." argument docs, fourteenth blind corpus)."""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator

QUOTE = re.compile(r"""[rRbBuUfF]{0,2}('''|\"\"\"|'|")""")
LIMIT = 20_000  # characters of one call: past this, unsure (counted as passing)
# A comment or a string literal, found left to right: whichever starts first wins, so a `#`
# inside a string and a quote inside a comment are each read as what they are.
UNCODE = re.compile(
    r"#[^\n]*"
    r"|'''(?:\\.|[^\\])*?(?:'''|$)"
    r'|"""(?:\\.|[^\\])*?(?:"""|$)'
    r"|'(?:\\.|[^'\\\n])*'?"
    r'|"(?:\\.|[^"\\\n])*"?',
    re.S,
)


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


def _uncode(text: str) -> tuple[list[int], list[int]]:
    """The starts and ends of the file's comments and string literals, in order."""
    spans = [m.span() for m in UNCODE.finditer(text)]
    return [a for a, _ in spans], [b for _, b in spans]


# An import statement's names: `import a.b as c`, `from m import (x, y as z)`.
IMPORTED = re.compile(r"^[ \t]*(?:from\s+[\w.]+\s+)?import\s+(?:\(([^)]*)\)|([^\n#;]+))", re.M)


def imported_names(text: str) -> set[str]:
    """Every name an import statement of the file binds, and each part of a dotted module."""
    out: set[str] = set()
    for m in IMPORTED.finditer(text):
        for item in (m.group(1) or m.group(2)).split(","):
            words = item.split()
            if words:
                out.update(words[-1].split("."))
    return out


def _receiver(text: str, pos: int) -> str | None:
    """What the call whose name starts at `pos` is made on: "x" for `x.name(`, ")" for
    `super().name(` or `f().name(`, "" for another expression, None for a bare call."""
    j = pos
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j == 0 or text[j - 1] != ".":
        return None
    j -= 1
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    end = j
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    if j < end:
        return text[j:end]
    return ")" if end > 0 and text[end - 1] == ")" else ""


def calls_in(
    text: str,
    name: str,
    method: bool = False,
    shadowed: Callable[[], bool] = lambda: False,
) -> Iterator[tuple[int, list[str] | None]]:
    """(line, arguments or None) of each call of `name` in the code of the text; not in a
    string or a comment, not `def name(` nor `class name(`, nor a longer name that ends with
    it. `shadowed()`, asked at most once: does the file bind the name itself? A method is
    called on an object (`x.name(`; not `super().name(`, the parent's; when shadowed, not
    `self.name(` either: the file's own class's). A function is called by its bare name
    (unless shadowed) or on a module the file imports (`helpers.name(`; not WhisperSpeech's
    `trainer.train()` for its own `train()`)."""
    pattern = re.compile(r"(?<!\w)" + re.escape(name) + r"\s*\(")
    line, pos = 1, 0
    spans: tuple[list[int], list[int]] | None = None
    modules: set[str] | None = None
    own: bool | None = None
    for m in pattern.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if text[max(0, pos - 6) : pos].endswith(("def ", "class ")):
            continue
        receiver = _receiver(text, pos)
        if method:
            if receiver in (None, ")", ""):
                continue
            if receiver in ("self", "cls"):
                own = shadowed() if own is None else own
                if own:
                    continue
        elif receiver is None:
            own = shadowed() if own is None else own
            if own:
                continue
        else:
            modules = imported_names(text) if modules is None else modules
            if receiver not in modules:
                continue
        spans = spans or _uncode(text)
        i = bisect_right(spans[0], pos) - 1
        if i >= 0 and pos < spans[1][i]:
            continue  # in a comment or a string
        yield line, _arguments(text, m.end() - 1)


def shadows(text: str, name: str, home: str, method: bool = False) -> bool:
    """Does this file bind `name` itself, so that its bare `name(…)` calls (a method's
    `self.name(…)`) are not of the one in `home`: its own `def name(` / `class name` (for a
    method, at any depth: stable-audio-tools' discriminators call their own
    `self.forward(reals)`), or `from m import name` of a module `m` that is not `home`
    (stable-audio-tools' pre_encode.py has its own load_model)."""
    word = re.escape(name)
    indent = r"[ \t]*" if method else ""
    if re.search(rf"^{indent}(?:def|class)\s+{word}\b", text, re.M):
        return True
    # home's module, or a package above it that re-exports the name (efficientvit's
    # `from efficientvit.gazesamcore.evit import OnnxEvitSam`)
    homes = set(os.path.splitext(home)[0].replace("\\", "/").split("/"))
    for m in re.finditer(rf"^[ \t]*from\s+([\w.]+)\s+import\s+[^\n]*\b{word}\b", text, re.M):
        module = m.group(1).rsplit(".", 1)[-1]
        if module and module not in homes:  # `from . import name` may be home's package
            return True
    return False


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
