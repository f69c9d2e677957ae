"""Scan a small tree written for a test: the project view (callers, importers) needs files."""

from __future__ import annotations

import textwrap

from torchdoctor.scan import ScanOptions, scan_paths


def scan_tree(
    tmp_path, files: dict[str, str], opts: ScanOptions | None = None
) -> list[tuple[str, int, str, str]]:
    """(path relative to tmp_path, line, rule, confidence) of every finding, at --confidence low
    unless `opts` says otherwise."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    result = scan_paths([str(tmp_path)], opts or ScanOptions(confidence="low"), jobs=1)
    return sorted(
        (str(f.path)[len(str(tmp_path)) + 1 :], f.line, f.rule, f.confidence)
        for f in result.findings
    )
