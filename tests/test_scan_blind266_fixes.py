"""False findings of the blind sets 266-289 (twenty-sixth session), fixed after their one
scoring: each test reproduces the public code the labellers judged, reduced to what decides it."""

from __future__ import annotations

from .scan_tree import scan_tree as scan

# yjs2005/diffusion-policy-obstacle-reach-2d's eval.py (set 266)
OLD_TORCH_FALLBACK = """\
    import torch

    def load(checkpoint_path, device):
        try:
            checkpoint = torch.load(checkpoint_path, map_location=device, weights_only=False)
        except TypeError:
            checkpoint = torch.load(checkpoint_path, map_location=device)
        return checkpoint
"""


def _weights_only(found):
    return [line for _, line, rule, _ in found if rule == "TD102"]


def test_the_except_typeerror_fallback_for_a_torch_without_weights_only(tmp_path):
    """Labelled a lookalike: "except TypeError fallback for a torch without the weights_only
    keyword; the first call already passes weights_only=False". The fallback runs only on a
    torch before 1.13, where there is no keyword to add."""
    assert _weights_only(scan(tmp_path, {"eval.py": OLD_TORCH_FALLBACK})) == []
    for wide in ("except Exception", "except BaseException", "except (OSError, TypeError)"):
        code = OLD_TORCH_FALLBACK.replace("except TypeError", wide)
        assert _weights_only(scan(tmp_path / wide[7:12], {"eval.py": code})) == [], wide


def test_a_load_in_another_handler_is_still_flagged(tmp_path):
    """A handler for another error, or a try whose load does not choose weights_only, is no
    such fallback: the plain load there unpickles on every torch before 2.6."""
    other = OLD_TORCH_FALLBACK.replace("except TypeError", "except FileNotFoundError")
    assert _weights_only(scan(tmp_path / "a", {"eval.py": other})) == [7]
    unchosen = OLD_TORCH_FALLBACK.replace(", weights_only=False", "")
    assert _weights_only(scan(tmp_path / "b", {"eval.py": unchosen})) == [5, 7]


# A checkpoint loaded without weights_only: safe by default where the project's torch is >= 2.6
LOAD = """\
    import torch
    state = torch.load("checkpoints/last.pt", map_location="cpu")
"""


def test_a_torchvision_floor_is_a_torch_floor_low_vol_with_lstm_har_bl(tmp_path):
    """sybeom528/low_vol_with_lstm_har_bl (set 282): `torch>=2.1.0` beside `torchaudio>=2.11.0`
    and `torchvision>=0.26.0`; torchvision 0.26 is built for torch 2.11 only."""
    pyproject = '[project]\nname = "x"\ndependencies = ["torch>=2.1.0", "torchvision>=0.26.0"]\n'
    assert _weights_only(scan(tmp_path / "a", {"pyproject.toml": pyproject, "m.py": LOAD})) == []
    # a companion built for a torch before 2.6 raises nothing
    old = pyproject.replace("0.26.0", "0.20.0")
    assert _weights_only(scan(tmp_path / "b", {"pyproject.toml": old, "m.py": LOAD})) == [2]


def test_a_misspelt_requirements_file_declares_torch_wav2vec_emotions(tmp_path):
    """werent4/wav2vec-emotions (set 288) pins torch==2.7.1 in `requierments.txt`."""
    files = {"requierments.txt": "torch==2.7.1\n", "python/m.py": LOAD}
    assert _weights_only(scan(tmp_path / "a", files)) == []
    files = {"notes.txt": "torch==2.7.1\n", "python/m.py": LOAD}  # not a requirement file
    assert _weights_only(scan(tmp_path / "b", files)) == [2]


def test_requirements_in_a_setup_folder_medical_image_registration(tmp_path):
    """fusiongodo/medical-image-registration (set 289): no requirement file at or above the
    code; setup/requirements-freeze.txt pins torch==2.12.0."""
    files = {"setup/requirements-freeze.txt": "torch==2.12.0\n", "core/m.py": LOAD}
    assert _weights_only(scan(tmp_path / "a", files)) == []
    # a requirements file beside the code still decides, whatever the setup folder says
    files |= {"core/requirements.txt": "torch>=2.0\n"}
    assert _weights_only(scan(tmp_path / "b", files)) == [2]


# HIMOI890/enhanced-deforum-music-generator's video CLI (set 288)
OFFLOAD_FLAG = """\
    import argparse
    from diffusers import WanPipeline

    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu-offload", action="store_true", help="lower VRAM")
    args = parser.parse_args()
    device = "cuda" if args.device == "auto" else "cpu"
    pipe = WanPipeline.from_pretrained(args.model_id)
    if args.cpu_offload:
        pipe.enable_model_cpu_offload()
    else:
        pipe.to(device)
"""


def _offloads(found):
    return [line for _, line, rule, _ in found if rule == "TD007"]


def test_an_offload_the_user_opted_into_is_no_td007(tmp_path):
    """Labelled a lookalike: "only under the opt-in --cpu-offload flag ('lower VRAM'); a user
    asking to offload VRAM has an accelerator"."""
    assert _offloads(scan(tmp_path / "a", {"cli.py": OFFLOAD_FLAG})) == []
    # on by default, the offload is what every run does (DepthCrafter's loader, set 260)
    on = OFFLOAD_FLAG.replace('action="store_true"', 'action="store_true", default=True')
    assert _offloads(scan(tmp_path / "b", {"cli.py": on})) == [10]
    # an option that is not the offload's says nothing of it
    other = OFFLOAD_FLAG.replace("if args.cpu_offload:", "if args.fast:")
    assert _offloads(scan(tmp_path / "c", {"cli.py": other})) == [10]
