"""benchmarks/blind_round.py: the steps of a blind round that are code (the rest is people's):
which names no new set may take, how pooled candidates are dealt, and the label check run
before any scan."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
HEADER = "repo,file,line,kind,severity,must_flag,reason,machine\n"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    return mod


br = _load("blind_round")


def test_used_holds_taken_tried_and_non_blind_repositories():
    names = set(br.used())
    assert "spectraldoy/music-transformer" in names  # taken by set 318 (corpus.json)
    assert "nasim-raj-laskar/QwenDrive-QLoRA" in names  # set 318's unfetched backup (method.md)
    assert "karpathy/nanoGPT" in names  # the earlier non-blind corpus


def test_pooled_drops_used_names_case_insensitively_and_alternates_pools(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one/a1\taudio\nSPECTRALDOY/Music-Transformer\tmusic\none/a2\trl\n")
    b.write_text("two/b1\tvision; mps\nnot a repository line\none/A1\tdup\n")
    assert br.pooled([a, b]) == [
        ("one/a1", "audio"),
        ("two/b1", "vision; mps"),
        ("one/a2", "rl"),
    ]


def test_briefs_refuse_a_pool_too_small_for_the_sets(tmp_path, capsys):
    pool = tmp_path / "p.txt"
    pool.write_text("".join(f"o{i}/r{i}\tx\n" for i in range(15)))
    try:
        br.briefs([401, 402], [pool], tmp_path / "out")
    except SystemExit as stop:
        assert "15 new candidates: 20 needed" in str(stop)
    else:
        raise AssertionError("two sets need twenty candidates")
    br.briefs([401], [pool], tmp_path / "out")
    text = (tmp_path / "out" / "brief401.md").read_text()
    assert "| 10 | o9/r9 | x |" in text and "o10/r10" not in text
    assert "{N}" not in text and "scan_blind401" in text


def _set(tmp_path: Path, rows: str) -> Path:
    corpus = {"repos": [{"repo": "o/r", "files_in_scope": ["a.py"]}]}
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    (tmp_path / "labels.csv").write_text(HEADER + rows)
    return tmp_path


def test_check_set_catches_a_lookalike_suffix_that_disagrees_with_must_flag(tmp_path):
    here = _set(
        tmp_path,
        "o/r,a.py,3,TD101,crash,no,x,CPU-only\n"  # a no without the suffix
        "o/r,b.py,4,TD102,security,yes,x,any\n"  # a file out of scope
        "o/r,a.py,5,TD402 (lookalike),perf,no,x,GPU\n",  # a machine not in the schema
    )
    bad, unknown, counts = br.check_set(here)
    assert bad == [
        "o/r a.py:3 lookalike suffix",
        "o/r b.py:4 file not in scope",
        "o/r a.py:5 machine",
    ]
    assert unknown == [] and counts == "1 repositories, 3 rows, 1 must-flag"


def test_check_set_names_kinds_no_rule_points_at(tmp_path):
    here = _set(
        tmp_path,
        "o/r,a.py,3,mps-float64,crash,yes,x,MPS\n"  # mapped to TD601
        "o/r,a.py,4,TD003 guard-too-narrow,crash,yes,x,MPS\n"  # a rule id first
        "o/r,a.py,5,brand-new-kind (lookalike),crash,no,x,any\n",
    )
    assert br.check_set(here)[:2] == ([], ["brand-new-kind"])


def test_every_committed_set_passes_the_check():
    """What the check asks of a new set, every scored set already meets."""
    assert br.check(br.set_numbers()) == 0


def test_default_figures_read_the_default_section_only():
    out = (
        "### default output: 3 findings\n\n- precision on labelled lines (blind): 100% (2/2)\n"
        "- recall, crash: 50% (1/2)\n- recall, crash+security: 67% (2/3)\n\n"
        "### low output: 9 findings\n\n- precision on labelled lines (blind): 20% (2/10)\n"
    )
    assert br.default_figures(out) == (
        "precision 100% (2/2), crash+security recall 67% (2/3), crash 50% (1/2)"
    )


def test_ordinal_titles_match_the_earlier_results():
    for n in (100, 101, 200, 222, 300, 306, 318):
        title = (BENCH / f"scan_blind{n}" / "results-blind.md").read_text().splitlines()[0]
        assert f"the {br.ordinal(n)} blind corpus" in title


def test_figures_pool_the_committed_scorings_as_the_docs_state_them():
    """docs/scan-precision.md: sets 314-318, 100 % (30/30) and 81.1 % (30/37), 1 of 8 crashes."""
    got = br.figures(list(range(314, 319)))
    assert got["precision"] == (30, 30)
    assert got["crash+security"] == (30, 37)
    assert got["crash"] == (1, 8)


def test_check_set_reports_a_short_or_empty_row_instead_of_failing(tmp_path):
    here = _set(tmp_path, "o/r,a.py,3,,crash,no,x,any\no/r,a.py\n")
    bad, unknown, _ = br.check_set(here)
    assert bad == ["o/r a.py:3 a cell is missing", "o/r a.py:None a cell is missing"]
    assert unknown == []
