"""Where a node is in the file's text: AST positions (UTF-8 byte columns) turned into
character columns and offsets, for findings and for the edits `--fix` makes."""

from __future__ import annotations

import ast
import re

from .model import Edit, Finding

NEWLINE = re.compile(r"\r\n|\r|\n")
Needs = tuple[str, ...] | None  # what a finding's verdict needs from the project (project.py)
Judged = tuple[str, str | None, Needs]  # confidence, grounds, needs


class SourcePositions:
    """The file's text, and the findings reported against it (part of the scan's Context)."""

    path: str
    text: str
    findings: list[Finding]

    def _start_positions(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.findings = []
        self._lines: list[str] | None = None
        self._line_starts: list[int] | None = None

    @property
    def lines(self) -> list[str]:
        """The text's lines as the tokenizer counts them (unlike str.splitlines)."""
        if self._lines is None:  # the plain split is many times faster than the regex
            text = self.text
            self._lines = NEWLINE.split(text) if "\r" in text else text.split("\n")
        return self._lines

    def _offset(self, line: int, col_bytes: int) -> int:
        """Character offset in the text of an AST (line, UTF-8 byte column) position."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in NEWLINE.finditer(self.text))]
        return self._line_starts[line - 1] + self.char_col(line, col_bytes)

    def char_col(self, line: int, col_bytes: int) -> int:
        src = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        if src.isascii():
            return col_bytes
        return len(src.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))

    def end(self, node: ast.AST) -> int:
        return self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def insert_after(self, node: ast.AST, text: str) -> Edit:
        end = self.end(node)
        return Edit(end, end, text)

    def replace(self, node: ast.AST, text: str) -> Edit:
        start = self._offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        return Edit(start, self.end(node), text)

    def dot_before(self, func: ast.Attribute) -> int | None:
        """Offset of the `.` of `recv.attr`: after the receiver's closing parens, as in
        `(x).cuda()`. None when comments or line continuations make it unclear."""
        start = self.end(func.value)
        between = self.text[start : self.end(func) - len(func.attr)]
        m = re.fullmatch(r"([ \t)]*)\.[ \t]*", between)
        return start + len(m.group(1)) if m else None

    def report(
        self,
        rule: str,
        node: ast.AST,
        message: str,
        fix: str,
        edit: Edit | None = None,
        *,
        confidence: str = "high",
        why: str | None = None,
        needs: Needs = None,
        proven: bool = False,
    ) -> None:
        if not proven:  # what the file proves is not weighed again
            confidence, why, needs = self._judged(rule, confidence, why, needs)
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        code = self.lines[line - 1].strip() if line - 1 < len(self.lines) else ""
        self.findings.append(
            Finding(
                rule=rule,
                path=self.path,
                line=line,
                col=self.char_col(line, node.col_offset) + 1,  # type: ignore[attr-defined]
                end_line=end_line,
                end_col=self.char_col(end_line, node.end_col_offset or 0) + 1,  # type: ignore[attr-defined]
                code=code,
                message=message,
                fix=fix,
                edit=edit,
                confidence=confidence,
                grounds=why,
                needs=needs,
                proven=proven,
            )
        )

    def _judged(self, rule: str, confidence: str, why: str | None, needs: Needs) -> Judged:
        """The confidence a finding keeps once what is known of the whole file is weighed, and
        what it still needs from the project (the scan's Context lowers it in files made for
        CUDA only)."""
        return confidence, why, needs
