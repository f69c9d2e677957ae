"""The scan rules against what torch really did, recorded by scripts/device_claims.py.

tests/facts/device_claims/ holds three recordings of the same snippets: a CPU-only torch 2.13
(this machine; what every Mac has), torch 2.11.0+cu130 on an H200 with the GPU hidden
(CUDA_VISIBLE_DEVICES=''), and the same torch with the H200 visible (lent once, 2026-11-26).
Both CUDA recordings were made again on an H100 (2026-11-27) with the TD008 snippets added: every
earlier snippet gave the same outcome there. cuda-gpu-mixes.json holds TD303's atlas of 62
cross-device mixes, recorded on an H200 (2026-11-28).
A rule that says "this raises" must agree with what raised; one that stays quiet, with what ran.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from torchdoctor.scan.checks.cuda_api import RAISING
from torchdoctor.scan.engine import ScanOptions, scan_source

CLAIMS = Path(__file__).parent / "facts" / "device_claims"


def _load(mode: str) -> dict[str, dict]:
    doc = json.loads((CLAIMS / f"{mode}.json").read_text())
    assert doc["mode"] == mode
    return doc["claims"]


CPU = _load("cpu-build")
NO_GPU = _load("cuda-build-no-gpu")
GPU = _load("cuda-gpu")
CUDA_API = sorted(k for k in CPU if "." not in k or k.startswith(("nvtx.", "amp.", "Event.")))


def _raises_without_cuda(name: str) -> bool:
    """Raises on a CPU-only torch, or on a CUDA torch that sees no GPU."""
    return not CPU[name]["ok"] or (name in NO_GPU and not NO_GPU[name]["ok"])


def _rules(src: str) -> list[str]:
    found, _ = scan_source("m.py", "import torch\n" + src + "\n", ScanOptions(), None)
    return [f.rule for f in found]


def test_the_recordings_are_what_they_say():
    """The GPU recording really ran on a GPU: a CUDA op succeeded there and failed without one."""
    assert GPU["synchronize"]["ok"] and not NO_GPU["synchronize"]["ok"]
    assert "No CUDA GPUs are available" in NO_GPU["synchronize"]["error"]
    assert "Torch not compiled with CUDA enabled" in CPU["synchronize"]["error"]


def test_every_torch_cuda_call_td003_names_was_seen_raising():
    """RAISING holds no call the recordings saw succeed without CUDA (a false alarm on every
    CPU-only run), and every call it names was recorded (no list entry from memory)."""
    recorded = {n for n in CUDA_API if "." not in n or n.startswith("nvtx.")}
    assert recorded >= RAISING, sorted(RAISING - recorded)
    assert {n for n in recorded if _raises_without_cuda(n)} - {"Event.record"} == set(RAISING)


@pytest.mark.parametrize("name", CUDA_API)
def test_td003_flags_exactly_the_torch_cuda_calls_that_raised(name):
    """`torch.cuda.get_rng_state()` raised "Torch not compiled with CUDA enabled" on the CPU
    torch and "No CUDA GPUs are available" with the GPU hidden, and TD003 missed it; the calls
    that ran (is_bf16_supported, memory_allocated, empty_cache, ...) must stay quiet."""
    code = CPU[name]["code"]
    if name == "Event.record":
        code = "e = torch.cuda.Event()\ne.record()"
    flagged = "TD003" in _rules(code)
    assert flagged == _raises_without_cuda(name), (name, code, CPU[name], NO_GPU.get(name))


MIXES = json.loads((CLAIMS / "cuda-gpu-mixes.json").read_text())
assert MIXES["mode"] == "cuda-gpu-mixes"


@pytest.mark.parametrize("name", sorted(MIXES["claims"]))
def test_td303_flags_exactly_the_cross_device_mixes_that_raised_on_the_h200(name):
    """Each body of scripts/device_claims.py's MIXES ran on the H200 with `x` on the GPU and
    `c` from a factory without `device=`. Scanned as a function that moved `x` there, TD303
    must flag exactly those that raised: `x < c`, `x.index_select(0, c)`, `F.cross_entropy(x,
    c)`, `torch.clamp(x, min=torch.tensor(0.0))` and `c[x > 0]` raised and were missed before
    this recording; `x[c]`, `x[:2] = c`, `x.copy_(c)` and a 0-dim `c` ran."""
    claim = MIXES["claims"][name]
    body = claim["code"].split("\n", 1)[1]  # after the prelude that put x on the GPU
    src = "def f(x):\n    x = x.to('cuda:0')\n" + textwrap.indent(body, "    ")
    raised = not claim["ok"]
    if raised:
        assert re.search(r"same device|indices should be|to have cuda:0 Device", claim["error"])
    assert ("TD303" in _rules(src)) == raised, (name, claim)


def test_td403_numpy_of_a_cuda_tensor_raised_and_after_cpu_did_not():
    """TypeError: can't convert cuda:0 device type tensor to numpy (recorded on the H200)."""
    assert GPU["td403.numpy_of_cuda"]["error"].startswith("TypeError: can't convert cuda:0")
    assert GPU["td403.cpu_numpy_of_cuda"]["ok"]
    assert "TD403" in _rules("def f(x):\n    x = x.cuda()\n    return x.numpy()")
    assert "TD403" not in _rules("def f(x):\n    x = x.cuda()\n    return x.cpu().numpy()")


def test_td304_legacy_constructor_refuses_cuda_even_on_a_gpu():
    """torch.FloatTensor(..., device='cuda') raised on the H200 too: 'legacy constructor expects
    device type: cpu but device type: cuda was passed'; torch.cuda.FloatTensor ran."""
    for recording in (CPU, NO_GPU, GPU):
        assert (
            "legacy constructor expects device type: cpu"
            in (recording["td304.legacy_floattensor_cuda"]["error"])
        )
    assert GPU["td304.legacy_cuda_floattensor"]["ok"]
    assert "TD304" in _rules("t = torch.FloatTensor([1.0], device='cuda')")
    assert "TD304" not in _rules("t = torch.FloatTensor([1.0], device='cpu')")


def test_td101_a_cuda_saved_file_fails_to_load_where_no_gpu_is_visible():
    """'Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is
    False' (a CUDA torch with the GPU hidden); map_location='cpu' loaded it."""
    assert (
        "Attempting to deserialize object on a CUDA device"
        in (NO_GPU["td101.load_cuda_saved"]["error"])
    )
    assert NO_GPU["td101.load_cuda_saved_map_cpu"]["ok"] and GPU["td101.load_cuda_saved"]["ok"]
    assert "TD101" in _rules("sd = torch.load('w.pt', weights_only=True)")
    assert "TD101" not in _rules("sd = torch.load('w.pt', map_location='cpu', weights_only=True)")


def test_td502_pinned_memory_without_an_accelerator():
    """torch.empty(..., pin_memory=True) and .pin_memory() raised with no accelerator, while a
    DataLoader with pin_memory=True only warned: the rule that says 'raises' is TD502's."""
    for name in ("td502.empty_pinned", "td502.pin_memory_method"):
        assert not CPU[name]["ok"] and not NO_GPU[name]["ok"] and GPU[name]["ok"]
    assert (
        CPU["td502.dataloader_pinned"]["ok"]
        and "pin_memory" in (CPU["td502.dataloader_pinned"]["warning"])
    )


def test_td008_torch_xpu_stream_raises_on_the_gpu_and_does_nothing_on_the_cpu():
    """StreamContext takes the current accelerator's device for its own: CUDA's on a GPU
    machine, where it then asks torch.xpu for a stream. TD008 reports the branch as raising."""
    assert CPU["td008.xpu_stream"]["ok"] and NO_GPU["td008.xpu_stream"]["ok"]
    assert GPU["td008.xpu_stream"]["error"] == "AssertionError: Torch not compiled with XPU enabled"
    assert all(m["td008.xpu_stream_none"]["ok"] for m in (CPU, NO_GPU, GPU))  # None: no-op
    for m in (CPU, NO_GPU, GPU):
        assert not m["td008.xpu_synchronize"]["ok"] and m["td008.xpu_empty_cache"]["ok"]
        assert "without MPS backend" in m["td008.mps_empty_cache"]["error"]
    src = "with torch.xpu.stream(s) if hasattr(torch, 'xpu') else torch.cuda.stream(s):\n    pass"
    found, _ = scan_source("m.py", "import torch\n" + src + "\n", ScanOptions(), None)
    assert [(f.rule, f.confidence) for f in found] == [("TD008", "high")]
    assert "raises 'Torch not compiled with XPU enabled' on a CUDA machine" in found[0].message


# Where forward differs from a function that moved `x` itself: its input may be a Python list
# (`torch.tensor(lengths)` is a CPU tensor then, so TD302 still reports it), and a module it
# builds and moves in forward is not one of its inputs.
FORWARD_DIFFERS = {"tensor_of_the_device_tensor", "module_on_gpu_cpu_input"}


@pytest.mark.parametrize("name", sorted(MIXES["claims"]))
def test_td302_in_forward_is_shown_for_exactly_the_mixes_that_raised_on_the_h200(name):
    """The same bodies in a module's `forward(self, x)`, its input on the GPU: TD302 is shown
    (medium) for those that raised and kept low or silent for the rest. Before this recording it
    disagreed on 38 of 85 (comparisons with an input were read as harmless)."""
    claim = MIXES["claims"][name]
    body = claim["code"].split("\n", 1)[1]
    src = "class M(torch.nn.Module):\n    def forward(self, x):\n" + textwrap.indent(body, " " * 8)
    found, _ = scan_source("m.py", "import torch\n" + src + "\n", ScanOptions(), None)
    shown = any(f.rule == "TD302" and f.confidence != "low" for f in found)
    raised = not claim["ok"]
    assert shown == (raised != (name in FORWARD_DIFFERS)), (name, claim)
