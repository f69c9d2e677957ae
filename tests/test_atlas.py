"""The failure atlas (docs/atlas.md, issue 24): settled public threads, classed and counted, and
for every class torchdoctor claims to detect, a machine rebuilt from one of its threads on which
`torchdoctor check --facts` names the class's finding and the thread's settled fix."""

from __future__ import annotations

import json
import sys

import pytest

from .conftest import REPO, run_cli

sys.path.insert(0, str(REPO / "scripts"))
import atlas

ROWS = atlas.threads()
COVERAGE = atlas.coverage()
CASES = [
    (cls, case)
    for cls, entry in sorted(COVERAGE.items())
    if entry.get("live") or entry.get("paste")
    for case in entry.get("cases", [])
]


def test_the_atlas_holds_at_least_200_settled_threads_each_once():
    assert len(ROWS) >= 200
    urls = [r["url"] for r in ROWS]
    assert len(set(urls)) == len(urls), "a thread is counted twice"
    for r in ROWS:
        assert set(atlas.FIELDS) <= set(r), (r["url"], set(atlas.FIELDS) - set(r))
        assert r["visible"] in atlas.VISIBLE, r["url"]
        assert r["url"].startswith("https://github.com/") and r["settled_by"], r["url"]


def test_every_class_has_a_coverage_entry_saying_how_or_why_not():
    for cls in {r["class"] for r in ROWS}:
        entry = COVERAGE.get(cls)
        assert entry is not None, f"class {cls} has no entry in docs/atlas/coverage.json"
        assert entry.get("findings") or entry.get("why_not"), cls


def test_a_class_marked_detected_has_a_rebuilt_case():
    for cls, entry in COVERAGE.items():
        if entry.get("live") or entry.get("paste"):
            assert entry.get("cases"), f"{cls} is marked detected but has no rebuilt case"
            assert entry.get("findings"), f"{cls} is marked detected but names no finding id"


def test_the_page_shows_the_tables_the_data_gives():
    assert atlas.main(["--check"]) == 0


@pytest.mark.parametrize(("cls", "case"), CASES, ids=[f"{c}:{k['name']}" for c, k in CASES])
def test_rebuilt_case_gets_the_class_finding_and_the_settled_fix(cls, case, tmp_path):
    path = tmp_path / f"{case['name']}.facts"
    path.write_text(atlas.case_facts(case))
    args = ["check", "--facts", str(path), "--json", *case.get("args", [])]
    doc = json.loads(run_cli(*args).stdout)
    wanted = tuple(COVERAGE[cls]["findings"])
    hits = [
        f
        for f in doc["findings"]
        if f["id"].startswith(wanted) and f["level"] in ("warning", "error")
    ]
    assert hits, (case["thread"], [(f["id"], f["level"]) for f in doc["findings"]])
    said = " ".join(
        " ".join([r["text"], *r["commands"]]) for f in hits for r in f.get("remedies", [])
    )
    assert case["fix"] in said, (case["thread"], said[:600])


def test_threads_name_the_rebuilt_cases_thread():
    urls = {r["url"] for r in ROWS}
    for cls, case in CASES:
        assert case["thread"] in urls, (cls, case["thread"])
        assert (REPO / (case.get("facts") or case["base"])).is_file(), case


def test_coverage_entries_name_only_finding_ids_the_checks_declare():
    declared = json.loads(run_cli("list-checks", "--json").stdout)
    ids = {c["id"] for c in declared} | {f["id"] for c in declared for f in c["findings"]}
    for cls, entry in COVERAGE.items():
        for fid in entry.get("findings", []):
            assert fid in ids, (cls, fid)
