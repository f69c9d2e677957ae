"""TD102 for `torch.hub.load_state_dict_from_url` / `torch.utils.model_zoo.load_url`: they
unpickle the download with weights_only=False by default on every torch release (torch 2.13's
hub.py), unlike torch.load from 2.6. Missed on facebookresearch/audiocraft's loaders.py in the
second blind scan corpus (benchmarks/scan_blind2)."""

from __future__ import annotations

import json

from .conftest import run_cli

AUDIOCRAFT = """import torch
from torch.hub import load_state_dict_from_url


def load_compression_model_ckpt(file_or_url, device="cpu"):
    if file_or_url.startswith("https://"):
        return torch.hub.load_state_dict_from_url(file_or_url, map_location=device, check_hash=True)
    return load_state_dict_from_url(file_or_url)


def safe(url):
    return torch.hub.load_state_dict_from_url(url, weights_only=True)


def zoo(url):
    return torch.utils.model_zoo.load_url(url)
"""


def _findings(tmp_path, text: str, requires: str | None = None) -> list[dict]:
    (tmp_path / "loaders.py").write_text(text)
    if requires:
        (tmp_path / "pyproject.toml").write_text(
            f'[project]\nname = "p"\nversion = "0"\ndependencies = ["torch{requires}"]\n'
        )
    out = run_cli("scan", str(tmp_path), "--format", "json")
    return [f for f in json.loads(out.stdout)["findings"] if f["id"] == "TD102"]


def test_audiocraft_loaders_load_state_dict_from_url_without_weights_only_is_td102(tmp_path):
    found = _findings(tmp_path, AUDIOCRAFT)
    lines = sorted(int(f["subject"].split(":")[1]) for f in found)
    assert lines == [7, 8, 16]  # the explicit weights_only=True call (line 12) is fine


def test_the_fix_is_an_edit_only_where_the_projects_torch_has_the_argument(tmp_path):
    """weights_only arrived in load_state_dict_from_url in torch 2.1: a project that still
    allows 1.13 gets the advice, not a rewrite its oldest torch would reject."""
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old = _findings(tmp_path / "old", AUDIOCRAFT, ">=1.13")
    new = _findings(tmp_path / "new", AUDIOCRAFT, ">=2.1")
    assert old and not any(f["details"]["autofix"] for f in old)
    assert new and all(f["details"]["autofix"] for f in new)


def test_a_hash_checked_download_of_the_projects_own_release_url_is_trusted_midas_hubconf(
    tmp_path,
):
    """isl-org/MiDaS hubconf.py: a fixed GitHub-release URL, check_hash=True (the download must
    match the SHA-256 prefix in the URL's file name): a lookalike in the fourth blind corpus.
    The same call on a caller's URL (audiocraft, line 7 above) stays flagged."""
    midas = """import torch


def DPT_BEiT_L_512(pretrained=True):
    if pretrained:
        checkpoint = (
            "https://github.com/isl-org/MiDaS/releases/download/v3_1/dpt_beit_large_512.pt"
        )
        return torch.hub.load_state_dict_from_url(
            checkpoint, map_location=torch.device("cpu"), progress=True, check_hash=True
        )


def unchecked():
    return torch.hub.load_state_dict_from_url("https://example.com/w-0123abcd.pt")
"""
    found = _findings(tmp_path, midas)
    assert sorted(int(f["subject"].split(":")[1]) for f in found) == [15]
