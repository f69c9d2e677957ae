"""The project view (scan/project.py): verdicts that need other files of the scanned tree —
who calls a function, whether any file picks an MPS device. Named after the real errors."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan import ScanOptions, scan_paths

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")


def scan(tmp_path, files: dict[str, str]) -> list[tuple[str, str, str]]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1)
    return sorted((f.path.rsplit("/", 1)[-1], f.rule, f.confidence) for f in result.findings)


PICKS_MPS = "import torch\ndevice = 'mps' if torch.backends.mps.is_available() else 'cpu'\n"


def test_internal_helper_whose_every_call_passes_device_is_not_flagged(tmp_path):
    found = scan(
        tmp_path,
        {
            "helpers.py": "def _to_batch(x, device='cuda'):\n    return x\n",
            "train.py": "from helpers import _to_batch\nb = _to_batch(x, device=dev)\n"
            "c = _to_batch(y, dev)\n",
        },
    )
    assert found == []


def test_public_builder_users_call_without_device_torch_not_compiled_with_cuda(tmp_path):
    """`build_model(cfg)` on a Mac: 'AssertionError: Torch not compiled with CUDA enabled'."""
    found = scan(
        tmp_path,
        {
            "models.py": "def build_model(cfg, device='cuda'):\n    return cfg\n",
            "demo.py": "from models import build_model\nm = build_model(cfg)\n",
        },
    )
    assert found == [("models.py", "TD005", "high")]


def test_a_default_no_scanned_file_calls_is_low_generative_models_get_input_image_tensor(tmp_path):
    """sgm's `get_input_image_tensor(image, device="cuda")` and GroundingDINO's `Model(…,
    device="cuda")`: public, called by no scanned file; lookalikes to their labellers (1 of 5
    such defaults in fourteen blind corpora was a pitfall), so shown only with --confidence low."""
    found = scan(
        tmp_path,
        {
            "api.py": "def load_pipeline(path, device='cuda'):\n    return path\n",
            "bench.py": "def run(model, device='cuda'):\n    return model\n\n"
            "if __name__ == '__main__':\n    pass\n",
        },
    )
    assert found == [("api.py", "TD005", "low"), ("bench.py", "TD005", "low")]


def test_cannot_convert_a_mps_tensor_to_float64_counts_only_where_mps_is_picked(tmp_path):
    src = "import torch\ndef f(x, device):\n    x = x.to(device)\n    return x.double()\n"
    assert scan(tmp_path, {"a.py": src}) == [("a.py", "TD601", "low")]
    (tmp_path / "cli.py").write_text(PICKS_MPS)
    assert scan(tmp_path, {}) == [("a.py", "TD601", "high")]


def test_device_type_not_cpu_guard_before_cuda_synchronize_on_an_mps_mac(tmp_path):
    """'Torch not compiled with CUDA enabled' from `if device.type != "cpu":
    torch.cuda.synchronize()` on a Mac: only a project that picks MPS gets there."""
    src = "import torch\ndef step(device):\n    if device.type != 'cpu':\n        torch.cuda.synchronize()\n"
    assert scan(tmp_path, {"a.py": src}) == [("a.py", "TD004", "low")]
    assert scan(tmp_path, {"cli.py": PICKS_MPS}) == [("a.py", "TD004", "high")]


def test_cpu_flag_guard_fails_on_any_machine_without_the_flag(tmp_path):
    src = "import torch\ndef f(m, args):\n    if not args.cpu:\n        m.cuda()\n"
    assert scan(tmp_path, {"a.py": src}) == [("a.py", "TD004", "high")]


def test_sparse_coo_buffer_moved_to_mps_sparsemps_backend(tmp_path):
    """ "Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments from the
    'SparseMPS' backend" (pytorch/pytorch#87886) when model.to("mps") moves the buffer."""
    src = """
    import torch
    from torch import nn
    class G(nn.Module):
        def __init__(self, i, v):
            super().__init__()
            self.register_buffer("adj", torch.sparse_coo_tensor(i, v, (4, 4)))
    """
    assert scan(tmp_path, {"g.py": src, "cli.py": PICKS_MPS}) == [("g.py", "TD602", "medium")]
