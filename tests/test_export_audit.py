"""`torchdoctor.audit_export` on small models, one per finding, for both exporters.

No GPU here: `meta` stands in for a second device, and `target="cuda"` checks a graph baked on
the CPU. ONNX exports take seconds each, so the ONNX half is marked slow (it still runs in CI,
where the test extra installs onnx, onnxscript and onnxruntime).
"""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed here")
from torch import nn  # noqa: E402

import torchdoctor  # noqa: E402
from torchdoctor.export import audit as export_audit  # noqa: E402

ONNX_MISSING = export_audit.missing_onnx_packages()
# A graph baked for the CPU and run on CUDA: not run where there is no GPU, a failed run where
# there is one (both seen: this machine, and a lent H100 with torch 2.11.0+cu130)
CUDA = torch.cuda.is_available()
RUN_ON_CUDA = "export.mismatch" if CUDA else "export.not-run"
VIAS = [
    "torch.export",
    pytest.param(
        "onnx",
        marks=[
            pytest.mark.slow,
            pytest.mark.skipif(
                bool(ONNX_MISSING),
                reason=f"{', '.join(ONNX_MISSING)} not installed: pip install 'torchdoctor[onnx]'",
            ),
        ],
    ),
]
X = torch.randn(2, 4)


def ids(findings) -> list[str]:
    return [f.id for f in findings]


def by_id(findings, finding_id):
    found = [f for f in findings if f.id == finding_id]
    assert found, f"no {finding_id} in {ids(findings)}"
    return found[0]


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x).relu()))


class SmallCnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        return self.head(self.bn(self.conv(x)).relu().mean(dim=(2, 3)))


class TransformerBlock(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # 3 × (batch, heads, tokens, head dim)
        att = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class WithBuffers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("mean", torch.full((4,), 0.5))
        self.register_buffer("positions", torch.arange(4), persistent=False)

    def forward(self, x):
        return self.fc(x - self.mean) + self.positions


CLEAN = {
    "small-cnn": (SmallCnn, torch.randn(2, 3, 8, 8)),
    "transformer-block": (TransformerBlock, torch.randn(2, 6, 16)),
    "buffers": (WithBuffers, X),
}


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("name", CLEAN)
def test_clean_model_has_no_finding(name, via):
    make, x = CLEAN[name]
    findings = torchdoctor.audit_export(make().eval(), x, via=via)
    assert findings == []
    assert set(findings.timings) == {"checklist", "copy", "eager", "export", "run"}


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.skipif(CUDA, reason="with a GPU, DataParallel runs a CPU module only on cuda:0")
def test_data_parallel_wrapper_is_named_and_the_inner_module_exported(via):
    findings = torchdoctor.audit_export(nn.DataParallel(Mlp().eval()), X, via=via)
    assert ids(findings) == ["export.data-parallel"]
    assert "module." in findings[0].message and "DataParallel" in findings[0].message


@pytest.mark.parametrize("via", VIAS)
def test_dropout_in_training_mode_would_be_exported_as_training(via):
    findings = torchdoctor.audit_export(Mlp(), X, via=via)  # a fresh module trains
    assert ids(findings) == ["export.training-mode"]
    assert findings[0].module == "drop" and findings[0].level == "error"
    assert findings[0].remedies[0].text == "Call model.eval() before exporting."


@pytest.mark.parametrize("via", VIAS)
def test_mixed_devices_named_by_device_and_the_failed_export_explained(via):
    model = Mlp().eval()
    model.fc2.to("meta")
    findings = torchdoctor.audit_export(model, X, via=via)
    mixed = by_id(findings, "export.mixed-devices")
    assert mixed.details["by_device"] == {
        "cpu": ["fc1.weight", "fc1.bias"],
        "meta": ["fc2.weight", "fc2.bias"],
    }
    failed = by_id(findings, "export.failed")
    assert failed.module == "fc2"
    assert failed.details["cause"].startswith("mixed devices")
    # torch 2.13's words; 2.11 said "Unhandled FakeTensor Device Propagation ... found two
    # different devices cpu, meta" (an H100's torch)
    assert (
        "Expected all tensors to be on the same device" in failed.message
        or "found two different devices" in failed.message
    )
    assert failed.details["operator"].startswith("aten.")


@pytest.mark.parametrize("via", VIAS)
def test_example_input_on_another_device_than_the_model(via):
    findings = torchdoctor.audit_export(Mlp().eval(), X.to("meta"), via=via)
    found = by_id(findings, "export.input-device")
    assert found.details == {"model_device": "cpu", "inputs": {"args[0]": "meta"}}
    assert "x.to('cpu')" in found.remedies[0].text


@pytest.mark.parametrize("via", VIAS)
def test_active_autocast_is_reported(via):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        findings = torchdoctor.audit_export(Mlp().eval(), X, via=via)
    assert by_id(findings, "export.autocast").devices == ["cpu"]


def test_half_parameters_with_a_cpu_target():
    findings = torchdoctor.audit_export(Mlp().eval().half(), X.half(), via=None)
    assert ids(findings) == ["export.autocast"]
    assert findings[0].details["dtypes"] == ["float16"]
    assert findings[0].remedies[0].text.endswith("model.float().")
    assert torchdoctor.audit_export(Mlp().eval().half(), X.half(), via=None, target="cuda") == []


@pytest.mark.parametrize("via", VIAS)
def test_forward_hook_is_reported_with_its_module(via):
    model = Mlp().eval()
    model.fc1.register_forward_hook(lambda _m, _i, out: out * 2)
    findings = torchdoctor.audit_export(model, X, via=via)
    assert ids(findings) == ["export.hooks"]
    assert findings[0].module == "fc1"


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:  # a branch on a tensor's value
            return y
        return -y


@pytest.mark.parametrize("via", VIAS)
def test_could_not_guard_on_data_dependent_expression(via):
    findings = torchdoctor.audit_export(DataDependent().eval(), X, via=via)
    assert ids(findings) == ["export.failed"]
    failed = findings[0]
    assert "Could not guard on data-dependent expression" in failed.message
    assert failed.details["cause"].startswith("data-dependent control flow")
    assert failed.details["source"] == "if y.sum() > 0:  # a branch on a tensor's value"
    assert failed.details["location"].startswith(__file__)


@torch.library.custom_op("torchdoctor_test::opaque", mutates_args=())
def opaque(x: torch.Tensor) -> torch.Tensor:
    return x * 3


class OpaqueOp(nn.Module):
    def forward(self, x):
        return opaque(x)


@pytest.mark.parametrize("via", VIAS)
def test_there_was_no_fake_impl_registered_for_a_custom_op(via):
    findings = torchdoctor.audit_export(OpaqueOp().eval(), X, via=via)
    assert ids(findings) == ["export.failed"]
    failed = findings[0]
    assert failed.details["operator"] == "torchdoctor_test.opaque.default"
    assert failed.details["source"] == "return opaque(x)"
    assert failed.details["cause"].startswith("a custom operator without a fake")


@torch.library.custom_op("torchdoctor_test::traceable", mutates_args=())
def traceable(x: torch.Tensor) -> torch.Tensor:
    return x * 3


traceable.register_fake(lambda x: torch.empty_like(x))


class TraceableOp(nn.Module):
    def forward(self, x):
        return traceable(x)


def test_custom_op_with_a_fake_impl_exports_with_torch_export():
    assert torchdoctor.audit_export(TraceableOp().eval(), X, via="torch.export") == []


@pytest.mark.slow
@pytest.mark.skipif(bool(ONNX_MISSING), reason="onnx extra not installed")
def test_custom_op_without_an_onnx_translation():
    findings = torchdoctor.audit_export(TraceableOp().eval(), X, via="onnx")
    assert ids(findings) == ["export.failed"]
    assert findings[0].details["cause"] == "an operator the exporter does not support"
    assert "torchdoctor_test.traceable" in findings[0].message


class FactoryOnInputDevice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) + torch.ones(4, device=x.device)


class MovesToCpu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).to("cpu")


@pytest.mark.parametrize(
    ("model", "source"),
    [
        (FactoryOnInputDevice, "return self.fc(x) + torch.ones(4, device=x.device)"),
        (MovesToCpu, 'return self.fc(x).to("cpu")'),
    ],
)
def test_graph_baked_on_cpu_for_a_cuda_target(model, source):
    findings = torchdoctor.audit_export(model().eval(), X, via="torch.export", target="cuda")
    assert ids(findings) == ["export.baked-device", RUN_ON_CUDA]
    baked = findings[0]
    assert baked.devices == ["cpu"]
    assert baked.details["code"] == source
    assert baked.details["location"].startswith(__file__)
    if CUDA:  # it ran there and failed: the baked device is named as the cause (seen on an H100)
        assert "does not run on cuda" in findings[1].message
        assert "export.baked-device" in findings[1].message
    else:
        assert findings[1].level == "note"  # no CUDA here to run it on
    # The same graph is fine for the device it was baked on.
    assert torchdoctor.audit_export(model().eval(), X, via="torch.export") == []


@pytest.mark.slow
@pytest.mark.skipif(bool(ONNX_MISSING), reason="onnx extra not installed")
def test_onnx_graphs_carry_no_device_so_nothing_is_baked():
    findings = torchdoctor.audit_export(FactoryOnInputDevice().eval(), X, via="onnx", target="cuda")
    assert ids(findings) == ["export.not-run"]


@pytest.mark.slow
@pytest.mark.skipif(bool(ONNX_MISSING), reason="onnx extra not installed")
def test_specified_provider_cudaexecutionprovider_is_not_in_available_provider_names(monkeypatch):
    """On an H100 with the CPU package `onnxruntime`, ONNX Runtime only warned "Specified provider
    'CUDAExecutionProvider' is not in available provider names", ran the model on the CPU and the
    CUDA audit came back clean. Now it says the model was not run on CUDA, and why."""
    import onnxruntime

    monkeypatch.setattr(export_audit, "target_available", lambda target: None)  # a GPU is there
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    findings = torchdoctor.audit_export(Mlp().eval(), X, via="onnx", target="cuda")
    assert ids(findings) == ["export.not-run"]
    assert "no CUDAExecutionProvider" in findings[0].message
    assert findings[0].remedies[0].commands == (
        "pip uninstall -y onnxruntime",
        "pip install onnxruntime-gpu",
    )


@pytest.mark.slow
@pytest.mark.skipif(bool(ONNX_MISSING), reason="onnx extra not installed")
def test_onnxruntime_gpu_that_cannot_start_cuda_is_not_run_either(monkeypatch):
    """onnxruntime-gpu lists CUDAExecutionProvider even where it cannot load CUDA or cuDNN;
    the session then runs on the CPU. What the session really got decides."""
    import onnxruntime

    real = onnxruntime.InferenceSession

    def fell_back(path, providers=None, **kw):
        return real(path, providers=["CPUExecutionProvider"], **kw)

    monkeypatch.setattr(export_audit, "target_available", lambda target: None)
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider"])
    monkeypatch.setattr(onnxruntime, "InferenceSession", fell_back)
    findings = torchdoctor.audit_export(Mlp().eval(), X, via="onnx", target="cuda")
    assert ids(findings) == ["export.not-run"]
    assert "could not start its CUDAExecutionProvider" in findings[0].message


def test_a_failed_run_on_the_target_names_the_baked_device_as_its_cause():
    from torchdoctor.export.compare import mismatch

    error = {"error": "RuntimeError: Expected all tensors to be on the same device"}
    assert "export.baked-device" in mismatch("cuda", "torch.export", error, baked=True).message
    assert "export.baked-device" not in mismatch("cuda", "torch.export", error).message


class PythonRandom(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * random.random()  # frozen into the graph at export time


@pytest.mark.parametrize("via", VIAS)
def test_exported_program_differs_from_eager(via):
    random.seed(1)
    findings = torchdoctor.audit_export(PythonRandom().eval(), X, via=via)
    assert ids(findings) == ["export.mismatch"]
    detail = findings[0].details
    assert detail["max_abs_diff"] > detail["atol"]
    assert detail["dtype"] == "float32" and detail["output"] == 0


@pytest.mark.slow
@pytest.mark.skipif(bool(ONNX_MISSING), reason="onnx extra not installed")
def test_onnx_runtime_refuses_the_graph_on_cpu():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval().to(torch.bfloat16)
    findings = torchdoctor.audit_export(model, torch.randn(2, 3, 8, 8).bfloat16(), via="onnx")
    assert ids(findings) == ["export.autocast", "export.mismatch"]  # bfloat16 on a CPU target
    assert "Type 'tensor(bfloat16)'" in findings[1].details["error"]
    assert findings[1].message.startswith("the onnx program does not run on cpu: ")


def test_eager_outputs_on_meta_are_not_compared():
    class ToMeta(nn.Module):
        def forward(self, x):
            return (x * 2).to("meta")

    findings = torchdoctor.audit_export(ToMeta().eval(), X, via="torch.export")
    assert ids(findings) == ["export.baked-device", "export.not-run"]
    assert "the eager outputs are on the meta device" in findings[1].message


def test_compare_reports_the_largest_difference_beyond_tolerance():
    want = [torch.zeros(3), torch.zeros(2)]
    assert export_audit.compare(want, [torch.full((3,), 5e-5), torch.zeros(2)]) is None
    worst = export_audit.compare(want, [torch.tensor([0.0, 0.5, 0.0]), torch.tensor([0.0, 2.0])])
    assert worst["output"] == 1 and worst["max_abs_diff"] == 2.0
    assert export_audit.compare(want, [torch.zeros(4), torch.zeros(2)])["problem"] == (
        "shape (4,) instead of (3,)"
    )


def test_without_the_onnx_extra_says_what_to_install(monkeypatch):
    monkeypatch.setattr(export_audit, "ONNX_PACKAGES", ("onnx", "torchdoctor_no_such_package"))
    findings = torchdoctor.audit_export(Mlp().eval(), X, via="onnx")
    assert ids(findings) == ["export.unavailable"]
    assert findings[0].remedies[0].commands == (
        'pip install "torchdoctor[onnx]"',
        "pip install torchdoctor_no_such_package",
    )


def _state(model: nn.Module) -> dict:
    return {
        "modes": {n: m.training for n, m in model.named_modules()},
        "hooks": {
            n: (list(m._forward_hooks.values()), list(m._forward_pre_hooks.values()))
            for n, m in model.named_modules()
        },
        "tensors": {
            n: (t.device, t.dtype, t.requires_grad, t.clone() if t.device.type != "meta" else None)
            for n, t in [*model.named_parameters(), *model.named_buffers()]
        },
    }


def _same(before: dict, after: dict) -> bool:
    if before["modes"] != after["modes"] or before["hooks"] != after["hooks"]:
        return False
    for name, (device, dtype, grad, value) in before["tensors"].items():
        d, t, g, v = after["tensors"][name]
        if (device, dtype, grad) != (d, t, g) or (value is not None and not torch.equal(value, v)):
            return False
    return True


@pytest.mark.parametrize("via", VIAS)
def test_users_model_is_left_exactly_as_it_was(via):
    model = nn.Sequential(SmallCnn(), nn.Dropout())  # training mode: batch norm would update
    model[0].conv.register_forward_pre_hook(lambda _m, _args: None)
    before = _state(model)
    findings = torchdoctor.audit_export(model, torch.randn(2, 3, 8, 8), via=via)
    assert "export.training-mode" in ids(findings)
    assert _same(before, _state(model))
    assert all(p.grad is None for p in model.parameters())


def test_bad_arguments_raise():
    with pytest.raises(TypeError, match=r"needs an nn\.Module"):
        torchdoctor.audit_export("model", X)
    with pytest.raises(ValueError, match="via must be one of"):
        torchdoctor.audit_export(Mlp(), X, via="tflite")


def test_baked_device_fix_fits_the_line_that_made_it():
    factory = torchdoctor.audit_export(FactoryOnInputDevice().eval(), X, target="cuda")[0]
    assert "even with device=x.device" in factory.remedies[0].text
    moved = torchdoctor.audit_export(MovesToCpu().eval(), X, target="cuda")[0]
    assert moved.remedies[0].text == "Drop the .to('cpu') inside forward, or export on cuda."


def test_tensor_attribute_captured_as_a_cpu_constant_for_a_cuda_target():
    class Offset(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.offset = torch.ones(4)  # not a buffer

        def forward(self, x):
            return self.fc(x) + self.offset

    findings = torchdoctor.audit_export(Offset().eval(), X, target="cuda")
    assert ids(findings) == ["export.baked-device", RUN_ON_CUDA]
    assert findings[0].details == {"constant": "offset"}
    assert findings[0].remedies[0].text.startswith("Register the tensor as a buffer")
