"""The one findings contract: envelope, finding fields, levels, --fail-on and silencing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

import jsonschema
import pytest

from torchdoctor.report.findings import Finding, Selection, exit_code, id_matches, split

from .conftest import FACTS_DIR, REPO

SCHEMA = json.loads(
    resources.files("torchdoctor").joinpath("schema/report.schema.json").read_text()
)
DRIVER_TOO_OLD = str(FACTS_DIR / "driver_too_old.json")


def run(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)},
    )


def report(*args: str, cwd=REPO) -> tuple[dict, int]:
    r = run("check", "--facts", DRIVER_TOO_OLD, "--json", *args, cwd=cwd)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    return doc, r.returncode


def test_check_report_is_the_shared_envelope_with_one_finding_per_failing_check():
    """A finding per problem a failing check collected (<check>.<code>, its anchor on the check's
    page), else one for the check itself."""
    doc, code = report()
    assert (doc["schema_version"], doc["command"]) == (2, "check")
    failing = [c for c in doc["checks"] if c["status"] in ("warn", "fail", "error")]
    parts = {
        p["id"]: (c["id"], p)
        for c in failing
        for p in c.get("problems") or [dict(c, message=c["summary"])]
    }
    assert [f["id"] for f in doc["findings"]] == list(parts)
    assert all(c.get("problems") for c in failing)
    for f in doc["findings"]:
        check_id, part = parts[f["id"]]
        assert f["level"] == {"warn": "warning", "fail": "error", "error": "error"}[part["status"]]
        assert f["message"] == part["message"] and f["remedies"] == part["remedies"]
        anchor = "" if f["id"] == check_id else f"#{f['id']}"
        assert f["doc"].endswith(f"/docs/checks/{check_id}.md{anchor}")
    assert doc["summary"]["exit_code"] == code == 1


def test_a_check_that_could_not_judge_is_one_finding_under_its_own_id(tmp_path):
    """An error verdict has no problems: its finding is the check itself, linked to its page."""
    facts = json.loads((FACTS_DIR / "driver_too_old.json").read_text())
    facts["toolchain"] = {"status": "error", "error": "nvcc --version timed out"}
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    r = run("check", "--facts", str(path), "--json", "--only", "extensions")
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    [f] = doc["findings"]
    assert (f["id"], f["level"]) == ("extensions", "error")
    assert "nvcc --version timed out" in f["message"]
    assert f["doc"].endswith("/docs/checks/extensions.md")


def test_ignore_silences_a_finding_counts_it_and_changes_the_exit_code():
    doc, _ = report()
    errors = [f["id"] for f in doc["findings"] if f["level"] == "error"]
    doc, code = report("--ignore", ",".join(errors))
    assert not [f for f in doc["findings"] if f["id"] in errors]
    assert doc["summary"]["silenced"] == len(errors)
    assert code == 0 and doc["status"] != "fail"


def test_pyproject_tool_torchdoctor_ignore_applies_to_check(tmp_path):
    doc, _ = report()
    errors = [f["id"] for f in doc["findings"] if f["level"] == "error"]
    (tmp_path / "pyproject.toml").write_text(
        "[tool.torchdoctor.check]\nignore = [" + ", ".join(f'"{e}"' for e in errors) + "]\n"
    )
    doc, code = report(cwd=tmp_path)
    assert doc["summary"]["silenced"] == len(errors) and code == 0


def test_malformed_tool_torchdoctor_table_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor]\nignore = "host"\n')
    r = run("check", "--facts", DRIVER_TOO_OLD, cwd=tmp_path)
    assert r.returncode == 2 and "must be a list" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(("fail_on", "expected"), [("warn", 1), ("warning", 1), ("never", 0)])
def test_fail_on_speaks_levels_and_keeps_the_old_check_words(fail_on, expected):
    _, code = report("--fail-on", fail_on)
    assert code == expected


def test_select_reports_only_the_chosen_ids():
    doc, _ = report("--select", "cuda")
    assert doc["findings"] and all(f["id"].startswith("cuda.") for f in doc["findings"])
    assert doc["summary"]["silenced"] > 0


def test_id_prefixes_follow_dots_and_codes():
    assert id_matches("cuda", "cuda.driver") and not id_matches("cud", "cuda.driver")
    assert id_matches("TD1", "TD101") and id_matches("td101", "TD101")
    assert not id_matches("TD1", "TD201") and not id_matches("", "host")


def test_exit_code_counts_only_kept_findings():
    fs = [Finding("host", "warning", "m", "host"), Finding("cuda.driver", "error", "m", "x")]
    kept, silenced = split(fs, Selection(ignore=("cuda",)))
    assert (len(kept), silenced) == (1, 1)
    assert exit_code(kept, "error") == 0 and exit_code(kept, "warning") == 1
