"""TD009 for a device string torch rejects (checks/device_name.py), named after the blind
labels and the public report that found them; torch itself is asked where it is installed."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan.checks.device_name import TYPES, meant
from torchdoctor.scan.engine import ScanOptions, scan_source
from torchdoctor.scan.fix import plan


def td009(src: str) -> list[tuple[int, str]]:
    found = scan_source("s.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return [(f.line, f.fix) for f in found if f.rule == "TD009"]


def fixed(src: str) -> str:
    text = textwrap.dedent(src)
    planned = plan("s.py", text, scan_source("s.py", text, ScanOptions())[0])
    return text if planned is None else planned.new


def test_expected_one_of_cpu_cuda_device_type_gpu_traffic_forecasting_experiment():
    """`device = "gpu" if torch.cuda.is_available() else "cpu"` then `.to(device)`
    (akashsonowal/traffic-forecasting's experiment.py): every CUDA machine raises."""
    src = """
    import torch
    device = "gpu" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Linear(2, 2).to(device)
    """
    assert td009(src) == [(3, '"cuda"')]
    assert 'device = "cuda" if torch.cuda.is_available() else "cpu"' in fixed(src)


def test_invalid_device_string_cuda_space_0_ctgcn_embedding():
    """`torch.device('cuda: 0')` (jhljx/CTGCN's embedding.py): 'Invalid device string'."""
    src = "import torch\ndevice = torch.device('cuda: 0') if torch.cuda.is_available() else 'cpu'\n"
    assert td009(src) == [(2, '"cuda:0"')]
    assert "torch.device('cuda:0')" in fixed(src)


def test_upper_case_cpu_raises_on_the_fallback_machines_amphion_373():
    """`torch.device('cuda' if torch.cuda.is_available() else 'CPU')` (open-mmlab/Amphion#373,
    MaskGCT's gradio demo): it raises on exactly the machines without CUDA."""
    src = "import torch\nd = torch.device('cuda' if torch.cuda.is_available() else 'CPU')\n"
    assert td009(src) == [(2, '"cpu"')]


def test_device_keyword_of_torch_calls_and_tensor_methods():
    src = """
    import torch
    a = torch.zeros(2, device="GPU")
    b = a.new_ones(2, device="Cuda:1")
    """
    assert td009(src) == [(3, '"cuda"'), (4, '"cuda:1"')]


def test_quiet_where_torch_does_not_take_the_string():
    """Lightning's `accelerator="gpu"` is valid there; a user function's `device=` only records
    a value; an out-of-tree backend names its own type; a name bound to anything but
    strings may hold anything."""
    src = """
    import torch
    import lightning as L
    accel = "gpu"
    trainer = L.Trainer(accelerator=accel, devices=1)
    cfg = make_config(device="GPU")
    npu = torch.device("npu:0")
    dev = "gpu"
    if torch.cuda.is_available():
        dev = torch.device("cuda")
    x = torch.ones(2).to(dev)
    ok = torch.device("cuda:0")
    """
    assert td009(src) == []


def test_quiet_inside_a_try_that_catches_exception():
    src = """
    import torch
    try:
        d = torch.device("gpu")
    except Exception:
        d = torch.device("cpu")
    """
    assert td009(src) == []


def test_shown_in_code_made_for_cuda_only_and_under_a_guard():
    """It raises on the GPU machine too: neither a CUDA-only file nor an availability test
    lowers it."""
    src = """
    import torch
    import torch.distributed as dist
    dist.init_process_group("nccl")
    if torch.cuda.is_available():
        x = torch.zeros(2).to("GPU")
    """
    found = scan_source("s.py", textwrap.dedent(src), ScanOptions())[0]
    assert [(f.rule, f.confidence) for f in found if f.rule == "TD009"] == [("TD009", "high")]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("gpu", "cuda"),
        ("GPU:1", "cuda:1"),
        ("CPU", "cpu"),
        ("cuda: 0", "cuda:0"),
        ("MPS", "mps"),
        ("cuda:", "cuda"),
        ("cuda:00", "cuda:0"),
        (" cuda", "cuda"),
    ],
)
def test_what_torch_rejects_and_the_string_it_takes(text, want):
    torch = pytest.importorskip("torch")
    assert meant(text) == want
    with pytest.raises(RuntimeError):
        torch.device(text)
    assert torch.device(want).type == want.split(":")[0]


@pytest.mark.parametrize("text", ["cpu", "cuda", "cuda:3", "mps", "xpu:0", "meta", "npu", "tpu"])
def test_accepted_or_unknown_strings_are_left_alone(text):
    assert meant(text) is None


def test_device_types_are_the_ones_torch_lists():
    """TYPES is the list in torch's own error message (asked again where torch is installed)."""
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as err:
        torch.device("gpu")
    listed = str(err.value).split("Expected one of ")[1].split(" device type")[0]
    assert {t.strip() for t in listed.split(",")} == TYPES


@pytest.mark.parametrize(
    "src",
    [
        # `+=` builds the string: "cuda:" + str(gpu) is "cuda:0", which torch takes
        'import torch\ndef main(gpu):\n    device = "cuda:"\n    device += str(gpu)\n'
        "    return torch.nn.Linear(2, 2).to(device)\n",
        # a Lightning accelerator name; the function's own parameter is another value
        'import torch\ndevice = "gpu" if torch.cuda.is_available() else "cpu"\n'
        "def to_device(batch, device):\n    return [b.to(device) for b in batch]\n",
        # the code translates the value itself before torch sees it
        'import torch\ndevice = "gpu" if torch.cuda.is_available() else "cpu"\n'
        'if device == "gpu":\n    device = "cuda"\nmodel = torch.nn.Linear(2, 2).to(device)\n',
        # bound by a loop too
        'import torch\ndevice = "gpu"\nfor device in ["cpu"]:\n    torch.ones(1).to(device)\n',
        # a handler takes the RuntimeError
        'import torch\ntry:\n    d = torch.device("gpu")\nexcept RuntimeError:\n'
        '    d = torch.device("cpu")\n',
        # not torch: Paddle's Tensor.to takes "gpu"
        'import paddle\nx = paddle.ones([2]).to("gpu")\n',
        # torch.hub.load passes device= to the model's entry point
        'import torch\nm = torch.hub.load("o/r", "m", device="GPU")\n',
        # index digits torch would not read, and an absurd one: no finding, no crash
        'import torch\nx = torch.ones(1).to("cuda:²")\n',
        'import torch\nx = torch.device("cuda: ' + "9" * 5000 + '")\n',
    ],
)
def test_quiet_where_the_string_never_reaches_torch_as_written(src):
    assert td009(src) == []


def test_one_arm_is_enough_and_a_handler_for_another_error_is_not_a_fallback():
    """`"GPU" if c else dev` raises whenever the arm is taken; `except AssertionError` does
    not catch torch's RuntimeError."""
    src = """
    import torch
    def pick(c, dev):
        return torch.device("GPU" if c else dev)
    try:
        d = torch.device("gpu")
    except AssertionError:
        d = None
    """
    assert td009(src) == [(4, '"cuda"'), (6, '"cuda"')]


def test_only_a_plain_literal_is_rewritten():
    src = 'import torch\nd = torch.device("GPU" "")\ne = torch.device(r"GPU")\n'
    found = scan_source("s.py", src, ScanOptions(confidence="low"))[0]
    assert [(f.line, f.edit) for f in found if f.rule == "TD009"] == [(2, None), (3, None)]
