"""The text pre-filter (only statements whose lines hold a trigger word are walked) must never
change what the scan finds."""

from __future__ import annotations

import ast
import re
import textwrap

import pytest

from torchdoctor.scan.analyzer import _plan, analyze, candidate_lines
from torchdoctor.scan.context import Context

from .test_scan_precision import HEAD, forward
from .test_scan_rules import POSITIVE


def _full_walk(text: str) -> list[tuple[str, int, int]]:
    hooks, _ = _plan(None)
    ctx = Context("m.py", text, hooks, None)
    ctx.visit(ast.parse(text))
    return sorted((f.rule, f.line, f.col) for f in ctx.findings)


CASES = [HEAD + textwrap.dedent(src) for srcs in POSITIVE.values() for src in srcs] + [
    HEAD + forward("h = torch.zeros(\n    x.size(0), 4\n)\nx = x + h"),
    HEAD + "if torch.cuda.is_available():\n    pass\nx = (t\n   .cuda())\n",
    HEAD + "sd = torch.load(\n    path,\n)\n",
]


@pytest.mark.parametrize("text", CASES)
def test_prefilter_finds_what_the_full_walk_finds(text):
    found = sorted((f.rule, f.line, f.col) for f in analyze("m.py", text, ast.parse(text)))
    assert found == _full_walk(text) and found


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_candidate_lines_count_lines_like_the_tokenizer(newline):
    text = newline.join(["import torch", "x = 1", "y = t.cuda()", "", "torch.load(f)"])
    _, triggers = _plan(None)
    assert candidate_lines(text, triggers) == [3, 5]


def test_a_file_without_trigger_words_is_not_analysed():
    text = "import os\nprint(os.getcwd())\n"
    _, triggers = _plan(None)
    assert candidate_lines(text, triggers) == []
    assert analyze("m.py", text, ast.parse(text)) == []


# A trigger that spans a line break (`x.` then `numpy()` on the next line) once made every
# later line number one too small: the `.cuda()` two lines on was never walked.
SPANNING = HEAD + "x = torch.ones(2)\ny = (x.\n     numpy())\nz = torch.nn.Linear(2, 2).cuda()\n"


def _every_start(text: str) -> list[int]:
    """The lines where any trigger starts, from a zero-width search at every offset."""
    _, triggers = _plan(None)
    starts = re.finditer("(?=" + triggers.any_of.pattern + ")", text)
    return sorted({text.count("\n", 0, m.start()) + 1 for m in starts})


def test_a_trigger_across_a_line_break_does_not_shift_the_lines_after_it():
    _, triggers = _plan(None)
    lines = candidate_lines(SPANNING, triggers)
    cuda_line = SPANNING.count("\n", 0, SPANNING.index(".cuda()")) + 1
    assert cuda_line in lines and lines == _every_start(SPANNING)
    found = analyze("m.py", SPANNING, ast.parse(SPANNING))
    assert ("TD001", cuda_line) in {(f.rule, f.line) for f in found}


@pytest.mark.parametrize("text", [*CASES, SPANNING])
def test_candidate_lines_are_every_line_where_a_trigger_starts(text):
    _, triggers = _plan(None)
    assert candidate_lines(text, triggers) == _every_start(text)
