"""Misreadings found by the second held-out set of pastes (tests/collect_env/holdout2/, labelled
blind before torchdoctor read them; tests/collect_env/holdout2/RESULTS.md), each fixed and
rebuilt here from its paste."""

from __future__ import annotations

import json

from .conftest import REPO, run_cli

HOLDOUT2 = REPO / "tests" / "collect_env" / "holdout2"
COLAB = HOLDOUT2 / "linux_torch1.7_cu101_colab_t4_debug_flag_cut_pytorch_pytorch_46973.txt"


def _doc(text: str) -> dict:
    return json.loads(run_cli("check", "--facts", "-", "--json", input=text).stdout)


def test_issue_template_example_field_above_the_report_is_not_the_report_pytorch_46973():
    """The template's "Expected behavior: Is debug build: False" stood above the real report,
    so 'PyTorch version' landed in a two-field block and the report was read without torch."""
    doc = _doc(COLAB.read_text())
    assert doc["facts"]["torch"]["version"] == "1.7.0+cu101"
    assert doc["facts"]["collected"]["report"]["torch"] == "1.7.0+cu101"


def test_python_3_6_beside_torch_1_7_is_the_release_as_made_not_a_python_problem_pytorch_46973():
    """'recent PyTorch wheels cover Python 3.10–3.14' said of a torch 1.7 report (12 of the 21
    held-out pastes got it): torch 1.7 published wheels for Python 3.6."""
    ids = [f["id"] for f in _doc(COLAB.read_text())["findings"]]
    assert "platform.python-unsupported" not in ids


def test_python_3_8_beside_torch_2_5_still_needs_a_newer_python():
    text = COLAB.read_text().replace("1.7.0+cu101", "2.5.1+cu121")
    text = text.replace("Python version: 3.6", "Python version: 3.8")
    found = [f for f in _doc(text)["findings"] if f["id"] == "platform.python-unsupported"]
    assert found and found[0]["level"] == "warning"


def test_a_report_without_its_torch_line_says_nothing_of_python_ranges():
    text = "\n".join(
        line for line in COLAB.read_text().splitlines() if not line.startswith("PyTorch version")
    )
    ids = [f["id"] for f in _doc(text)["findings"]]
    assert "platform.python-unsupported" not in ids


def test_cuda_9_wheels_are_judged_against_their_drivers_not_unknown_pytorch_10971_10529():
    """cuda.driver said 'no table entry' for CUDA 9.0 and 9.1 (torch 0.4/0.5 reports): both
    working machines, on the drivers their toolkits shipped with (387.26, 384.111)."""
    for name in (
        "linux_torch0.4_cu91_gtx1060_k40c_driver387_cut_pytorch_pytorch_10971.txt",
        "linux_torch0.5_source_cu90_gtx1080ti_pycharm_cut_pytorch_pytorch_10529.txt",
    ):
        found = [f for f in _doc((HOLDOUT2 / name).read_text())["findings"]]
        assert not [f for f in found if f["id"].startswith("cuda.driver")], name


def test_a_cuda_9_2_wheel_on_a_384_driver_is_too_old():
    text = HOLDOUT2 / "linux_torch0.4_cu91_gtx1060_k40c_driver387_cut_pytorch_pytorch_10971.txt"
    text = text.read_text().replace(
        "CUDA used to build PyTorch: 9.1.85", "CUDA used to build PyTorch: 9.2.148"
    )
    text = text.replace("387.26", "384.111")
    ids = [f["id"] for f in _doc(text)["findings"]]
    assert "cuda.driver.too-old" in ids
