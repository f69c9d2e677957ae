"""`torchdoctor audit MODULE:FACTORY`: the factory runs in a child process with a deadline."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import jsonschema
import pytest

from torchdoctor.export import report as er
from torchdoctor.probes.runner import ProbeRun
from torchdoctor.report.findings import Selection

from .conftest import REPORT_SCHEMA, run_cli

MODELS = textwrap.dedent(
    """
    import time
    import torch
    from torch import nn

    print('{"event": "done"}')  # a user's print must not pass for a probe event

    def training():
        return nn.Sequential(nn.Linear(4, 4), nn.Dropout())

    def clean():
        return nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()

    def tokens():
        return torch.zeros(2, 3, dtype=torch.long)

    def embed():
        return nn.Embedding(5, 4).eval()

    def slow():
        time.sleep(60)
    """
)


@pytest.fixture
def models(tmp_path):
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return str(path)


@pytest.mark.slow
def test_clean_factory_model_exports_and_runs(models):
    proc = run_cli("audit", f"{models}:clean", "--input-shape", "2,4", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)  # the shared contract
    assert report["command"] == "audit" and report["summary"]["exit_code"] == 0
    assert report["findings"] == [] and report["problems"] == []
    assert report["built"]["inputs"] == {"args[0]": {"shape": [2, 4], "dtype": "float32"}}
    assert set(report["timings_s"]) == {"checklist", "copy", "eager", "export", "run"}


@pytest.mark.slow
def test_training_mode_model_from_a_factory_exits_1_with_the_fix(models):
    proc = run_cli("audit", f"{models}:training", "--input-shape", "2,4", "--export", "none")
    assert proc.returncode == 1, proc.stderr
    assert "✗ export.training-mode at 1: " in proc.stdout
    assert "fix: Call model.eval() before exporting." in proc.stdout


@pytest.mark.slow
def test_inputs_factory_with_integer_tokens(models):
    proc = run_cli("audit", f"{models}:embed", "--inputs", f"{models}:tokens", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["built"]["inputs"]["args[0]"]["dtype"] == "int64"


@pytest.mark.slow
def test_factory_that_hangs_is_killed_at_the_deadline(models):
    proc = run_cli("audit", f"{models}:slow", "--input-shape", "2,4", "--timeout", "5")
    assert proc.returncode == 1
    assert "the audit did not finish: probe did not finish within its deadline; " in proc.stdout
    assert "stuck in: model" in proc.stdout


@pytest.mark.slow
def test_factory_that_cannot_be_imported_is_a_usage_error(models):
    proc = run_cli("audit", f"{models}:missing", "--input-shape", "2,4")
    assert proc.returncode == 2
    assert "has no attribute 'missing'" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pkg.mod", "--input-shape", "1"], "MODEL: expected MODULE:CALLABLE"),
        (["pkg.mod:make"], "give the example inputs with --input-shape"),
        (["pkg.mod:make", "--input-shape", "1,x"], "expected comma-separated sizes"),
        (["pkg.mod:make", "--input-shape", "1,3:int4"], "dtype must be one of"),
        (["pkg.mod:make", "--input-shape", "1", "--target", "gpu"], "expected cpu, cuda"),
    ],
)
def test_bad_arguments_are_refused_before_any_child_starts(args, message):
    proc = run_cli("audit", *args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_report_and_text_from_probe_stages():
    req = er.request("m:f", ["1,128:int64"], None, "onnx", "cuda:1")
    assert req["input_shapes"] == [{"shape": [1, 128], "dtype": "int64"}]
    finding = {
        "id": "export.hooks",
        "module": "fc1",
        "message": "forward hooks are registered",
        "level": "warning",
        "remedies": [{"text": "Remove them.", "commands": []}],
    }
    run = ProbeRun(status="ok", stages={"audit": {"findings": [finding], "timings_s": {}}})
    report = er.build_report(req, run)
    assert er.exit_code(report) == 1
    text = er.render_text(report)
    assert "! export.hooks at fc1: forward hooks are registered\n      fix: Remove them." in text
    note_run = ProbeRun(status="ok", stages={"audit": {"findings": [{**finding, "level": "note"}]}})
    assert er.exit_code(er.build_report(req, note_run)) == 0
    silenced = er.build_report(req, run, Selection(ignore=("export.hooks",)))
    assert er.exit_code(silenced) == 0 and silenced["summary"]["silenced"] == 1
    clean = ProbeRun(status="ok", stages={"audit": {"findings": []}})
    unexported = er.build_report({**req, "via": None}, clean)
    assert "verdict: checklist clean (nothing was exported)" in er.render_text(unexported)
    assert "verdict: ready to export" in er.render_text(er.build_report(req, clean))


def test_the_cli_side_never_imports_torch():
    code = (
        "import sys, torchdoctor.cli.audit, torchdoctor.export.report;"
        "assert 'torch' not in sys.modules; print(callable(torchdoctor.audit_export))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "True", proc.stderr
