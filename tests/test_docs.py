"""Every public id has its documentation page, and the links torchdoctor prints point at it."""

from __future__ import annotations

import json

from torchdoctor.check.checks import ALL
from torchdoctor.report import docs

from .conftest import REPO, run_cli

DOCS = REPO / "docs"


def test_every_check_id_has_a_page():
    missing = [m.ID for m in ALL if not (DOCS / docs.check_page(m.ID)).is_file()]
    assert not missing, f"checks without a page under docs/: {missing}"


def test_every_check_page_is_for_a_check_that_exists():
    ids = {m.ID for m in ALL}
    stale = [p.stem for p in (DOCS / "checks").glob("*.md") if p.stem not in ids]
    assert not stale, f"pages for checks that do not exist: {stale}"


def test_list_checks_json_gives_each_id_its_doc_page():
    rows = json.loads(run_cli("list-checks", "--format", "json").stdout)
    assert [r["id"] for r in rows] == [m.ID for m in ALL]
    for row in rows:
        assert row["doc"].startswith(docs.DOCS_BASE + "/")
        page = row["doc"][len(docs.DOCS_BASE) + 1 :]
        assert (DOCS / page).is_file(), row


def test_each_check_page_names_its_id_and_says_how_to_silence_it():
    for m in ALL:
        text = (DOCS / docs.check_page(m.ID)).read_text(encoding="utf-8")
        assert text.startswith(f"# `{m.ID}`"), m.ID
        assert "**Silence:**" in text, m.ID


def test_every_scan_rule_has_a_page_with_a_real_example():
    from torchdoctor.scan.rules import RULES

    for rule in RULES:
        page = DOCS / docs.scan_rule_page(rule.id)
        assert page.is_file(), f"scan rule {rule.id} has no page"
        text = page.read_text(encoding="utf-8")
        assert text.startswith(f"# `{rule.id}`") and f" {rule.id} " in text, rule.id


def test_sarif_rules_point_at_their_pages(tmp_path):
    from torchdoctor.scan.model import ScanResult
    from torchdoctor.scan.sarif import to_sarif

    rules = to_sarif(ScanResult())["runs"][0]["tool"]["driver"]["rules"]
    for rule in rules:
        page = rule["helpUri"][len(docs.DOCS_BASE) + 1 :]
        assert rule["helpUri"].startswith(docs.DOCS_BASE) and (DOCS / page).is_file(), rule["id"]


def test_every_audit_export_and_inspect_finding_id_has_a_page():
    import re

    package = REPO / "torchdoctor"
    files = [
        *sorted((package / "export").glob("*.py")),
        package / "inspect" / "checkpoint.py",
        *sorted((package / "cluster").glob("fleet*.py")),
    ]
    source = "".join(path.read_text(encoding="utf-8") for path in files)
    ids = set(re.findall(r'"((?:export|inspect|fleet)\.[a-z_-]+)"', source)) | set(docs.AUDIT_IDS)
    assert len(ids) >= 30
    missing = [i for i in sorted(ids) if not (DOCS / docs.finding_page(i)).is_file()]
    assert not missing, f"finding ids without a page under docs/: {missing}"
