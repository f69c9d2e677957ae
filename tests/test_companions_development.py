"""Companions beside a nightly or source build of torch (issue 19, 'version strings misread'):
two main-branch builds pair by date, not by number, and a companion built for a release cannot be
reinstalled as a wheel for a source build. Rebuilt from pytorch/pytorch#78492's paste (held out,
labelled healthy before torchdoctor read it: tests/collect_env/holdout2/)."""

from __future__ import annotations

import json

from .conftest import REPO, run_cli

PASTE = (
    REPO
    / "tests"
    / "collect_env"
    / "holdout2"
    / "macos_torch1.13_source_x86_64_mps_assert_cut_pytorch_pytorch_78492.txt"
)


def _install_findings(text: str) -> list[dict]:
    doc = json.loads(run_cli("check", "--facts", "-", "--json", input=text).stdout)
    return [f for f in doc["findings"] if f["id"].startswith("torch.install")]


def test_source_build_1_13_0a0_with_a_torchvision_nightly_of_the_same_week_pairs_pytorch_78492():
    [found] = _install_findings(PASTE.read_text())
    assert "torchvision" not in found["message"]  # 0.13.0.dev20220517: same week, main branch
    assert "torchtext 0.12.0" in found["message"]  # a release for torch 1.11: a real leftover
    assert found["level"] == "warning"  # no import error seen: numbers alone, beside a dev torch
    [command, *_] = found["remedies"][0]["commands"]
    # No wheel is built for a source build: torchtext from source, against it, torch untouched.
    assert "git+https://github.com/pytorch/text.git" in command
    assert "--no-build-isolation" in command and "--no-deps" in command


def test_a_release_companion_beside_a_release_torch_is_still_an_error():
    text = PASTE.read_text().replace("1.13.0a0+gitcbdb694", "1.13.1")
    text = text.replace("torchvision==0.13.0.dev20220517", "torchvision==0.14.1")
    [found] = _install_findings(text)
    assert found["level"] == "error" and "torchtext 0.12.0" in found["message"]
    assert "'torchtext==0.14.1'" in found["remedies"][0]["commands"][0]
