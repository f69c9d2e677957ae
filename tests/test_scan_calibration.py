"""Confidence calibrated on the blind corpora (scan/calibration.py): a class of findings measured
mostly false on code nobody here had seen is shown only at --confidence low, unless the project
says its code must run without CUDA (--portable, `portable = true`)."""

from __future__ import annotations

import json

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.calibration import MEASURED, below_bar, measured

from .conftest import run_cli

# A trainer made for CUDA only (efficientvit's sam_trainer, fourteenth blind corpus): its
# maintainers would not change the `.cuda()`, and nothing in the file runs without CUDA.
CUDA_ONLY_TRAINER = """import torch

class Trainer:
    def prepare(self, model):
        self.model = model.cuda()
"""
# The same call in a file that picks the CPU where CUDA is absent: the author's own fallback
# says it must run there, and this line raises "Torch not compiled with CUDA enabled".
FALLING_BACK = """import torch

device = "cuda" if torch.cuda.is_available() else "cpu"

class Trainer:
    def prepare(self, model):
        self.model = model.cuda()
"""
LOAD = "import torch\n\ndef restore(path):\n    return torch.load(path)\n"
PRINTED_LOSS = """import torch

def train(model, loader, opt):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        opt.step()
        total = loss.item()
"""


def _found(tmp_path, text: str, **opts) -> list[tuple[str, str]]:
    (tmp_path / "m.py").write_text(text)
    result = scan_paths([str(tmp_path)], ScanOptions(confidence="low", **opts), jobs=1)
    return [(f.rule, f.confidence) for f in result.findings]


def test_cuda_in_a_cuda_only_trainer_is_low_by_default_efficientvit(tmp_path):
    assert _found(tmp_path, CUDA_ONLY_TRAINER) == [("TD001", "low")]
    (tmp_path / "m.py").write_text(CUDA_ONLY_TRAINER)
    (f,) = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1).findings
    assert "29 of 137 TD001 findings in files without a CPU fallback" in f.grounds
    assert "--portable" in f.grounds


def test_portable_gives_the_device_rule_its_own_confidence_back(tmp_path):
    assert _found(tmp_path, CUDA_ONLY_TRAINER, portable=True) == [("TD001", "high")]


def test_cuda_in_a_file_that_falls_back_torch_not_compiled_with_cuda_enabled(tmp_path):
    """9 of 10 such findings were real: shown without --portable."""
    assert _found(tmp_path, FALLING_BACK) == [("TD001", "high")]


def test_weights_only_is_shown_everywhere_unsafe_pickle(tmp_path):
    """TD102 was real 331 times in 348: calibration leaves it as it is."""
    assert ("TD102", "high") in _found(tmp_path, LOAD)
    assert ("TD101", "low") in _found(tmp_path, LOAD)


def test_a_rule_that_is_not_about_devices_stays_low_even_portable(tmp_path):
    """`.item()` every step: 0 of 31 real; running without CUDA does not change that."""
    plain = [r for r in _found(tmp_path, PRINTED_LOSS) if r[0] == "TD402"]
    portable = [r for r in _found(tmp_path, PRINTED_LOSS, portable=True) if r[0] == "TD402"]
    assert plain == portable
    assert all(conf == "low" for _, conf in plain)


def test_a_class_with_too_few_findings_is_judged_by_its_rule():
    assert MEASURED[("TD003", True)] == (2, 2)  # four: too few to say anything
    assert measured("TD003", True) == (5, 28)  # the rule's, over both classes
    assert measured("TD602", False) is None  # never measured: the rule's reasoning stands
    assert below_bar("TD602", False, portable=False) is None
    assert below_bar("TD102", False, portable=False) is None


def test_portable_true_in_pyproject_is_the_flag(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.torchdoctor.scan]\nportable = true\n")
    (tmp_path / "m.py").write_text(CUDA_ONLY_TRAINER)
    r = run_cli("scan", str(tmp_path), "--json")
    assert [f["id"] for f in json.loads(r.stdout)["findings"]] == ["TD001"]
    assert r.returncode == 1


def test_portable_that_is_not_a_boolean_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor.scan]\nportable = "yes"\n')
    r = run_cli("scan", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert "portable: must be true or false" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_default_output_counts_what_calibration_hid(tmp_path):
    (tmp_path / "m.py").write_text(CUDA_ONLY_TRAINER)
    r = run_cli("scan", str(tmp_path), "--json")
    doc = json.loads(r.stdout)
    assert doc["findings"] == [] and doc["summary"]["below_confidence"] == 1
    assert r.returncode == 0
