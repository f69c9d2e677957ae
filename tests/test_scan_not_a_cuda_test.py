"""TD006: CUDA picked by a test that is not "is CUDA usable here". ComfyUI plug-ins write
`device = "cuda" if cuda_malloc.cuda_malloc_supported() else "cpu"` (AIFSH/ComfyUI-OpenVoice's
nodes.py, ComfyUI-MARS5-TTS, ComfyUI-UVR5 and five more in the blind corpora 127-140); the
function only says whether cudaMallocAsync may be enabled and is True on a Mac, so the node
raises "Torch not compiled with CUDA enabled" there. openai/Video-Pre-Training's `have_cuda()`
returns `th.has_cuda`, true on the default CUDA wheel of a machine with no NVIDIA driver
("Found no NVIDIA driver on your system")."""

from __future__ import annotations

from torchdoctor.scan.engine import ScanOptions, scan_paths

OPENVOICE_NODES = """import os
import torch
import cuda_malloc
from cuda_malloc import cuda_malloc_supported

device = "cuda" if cuda_malloc.cuda_malloc_supported() else "cpu"
is_half = True and cuda_malloc.cuda_malloc_supported()


class MuseTalk:
    def __init__(self):
        self.device = torch.device("cpu" if not cuda_malloc_supported() else "cuda")

    def load(self):
        if cuda_malloc_supported():
            return torch.cuda.get_device_name(0)
        return "cpu"


def safe():
    return "cuda" if torch.cuda.is_available() and cuda_malloc_supported() else "cpu"
"""

VPT_TORCH_UTIL = """import torch as th


def have_cuda():
    return th.has_cuda


def default_device_type():
    return "cuda" if th.has_cuda else "cpu"


def bad_guard(x):
    if th.cuda.is_available:
        x = x.cuda()
    if th.version.cuda:
        print("built with", th.version.cuda)
    return x
"""


def _td006(tmp_path, name: str, text: str, confidence: str = "medium") -> list[tuple[int, str]]:
    (tmp_path / name).write_text(text)
    res = scan_paths([str(tmp_path)], ScanOptions(confidence=confidence), jobs=1)
    return sorted((f.line, f.confidence) for f in res.findings if f.rule == "TD006")


def test_torch_not_compiled_with_cuda_enabled_comfyui_openvoice_cuda_malloc_supported(tmp_path):
    # the pick at module level, the negated pick, and an `if` whose body needs CUDA; not the
    # half flag (no device picked) and not a test that also asks torch.cuda.is_available()...
    found = _td006(tmp_path, "nodes.py", OPENVOICE_NODES)
    assert [line for line, _ in found] == [6, 12, 15]
    assert {conf for _, conf in found} == {"high"}


def test_found_no_nvidia_driver_video_pre_training_has_cuda(tmp_path):
    found = _td006(tmp_path, "torch_util.py", VPT_TORCH_UTIL)
    # `return th.has_cuda` picks nothing; the print under `th.version.cuda` places nothing
    assert [line for line, _ in found] == [9, 13]


def test_not_a_cuda_test_in_a_file_that_runs_on_cuda_only_is_low(tmp_path):
    text = "import flash_attn\n" + OPENVOICE_NODES
    assert _td006(tmp_path, "nodes.py", text) == []
    found = _td006(tmp_path, "nodes.py", text, confidence="low")
    assert [line for line, _ in found] == [7, 13, 16] and {conf for _, conf in found} == {"low"}
