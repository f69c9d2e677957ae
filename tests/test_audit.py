"""`torchdoctor.audit` on small, deliberately broken models (CPU, with `meta` as a second device)."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed here")
from torch import nn  # noqa: E402

import torchdoctor  # noqa: E402


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = Block()
        self.dec = Block()

    def forward(self, x):
        return self.dec(self.enc(x))


def ids(findings) -> list[str]:
    return [f.id for f in findings]


def test_healthy_model_has_no_findings():
    assert torchdoctor.audit(Net(), torch.randn(2, 4)) == []


def test_parameters_on_two_devices_and_the_guilty_module():
    model = Net()
    model.dec.to("meta")
    findings = torchdoctor.audit(model, torch.randn(2, 4))
    assert ids(findings) == ["mixed-devices", "forward-mixed-devices"]
    assert findings[0].devices == ["cpu", "meta"]
    guilty = findings[1]
    assert guilty.module == "dec.lin"  # the first module whose inputs and weights disagree
    assert guilty.devices == ["cpu", "meta"]


def test_plain_tensor_attribute():
    class Scaled(Net):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(4)

        def forward(self, x):
            return super().forward(x) * self.scale

    model = Scaled()
    findings = torchdoctor.audit(model)
    assert ids(findings) == ["tensor-attribute"]
    assert findings[0].details["attribute"] == "scale"
    model.to("meta")  # what model.to(device) does: the attribute stays behind
    findings = torchdoctor.audit(model, torch.randn(2, 4, device="meta"))
    assert "forward-mixed-devices" in ids(findings)
    assert next(f for f in findings if f.id == "forward-mixed-devices").module == ""


def test_tensor_created_in_forward_names_the_module_that_failed():
    class Bad(nn.Module):
        def forward(self, x):
            return x + torch.ones(4)  # no device=: a CPU tensor

    model = Net()
    model.dec = nn.Sequential(Bad())
    model.to("meta")
    (f,) = torchdoctor.audit(model, torch.randn(2, 4, device="meta"))
    assert f.id == "forward-failed" and f.module == "dec.0"
    assert "meta" in f.details["error"]


def test_audit_restores_training_mode_and_rejects_non_modules():
    model = Net().train()
    torchdoctor.audit(model, torch.randn(2, 4))
    assert model.training and model.enc.training
    with pytest.raises(TypeError):
        torchdoctor.audit("not a model")


def test_import_torchdoctor_stays_torch_free():
    code = "import sys, torchdoctor; assert 'torch' not in sys.modules; print(callable(torchdoctor.audit))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_scripted_child_is_noted_and_no_hook_is_left_behind():
    model = nn.Sequential(nn.Linear(2, 2), torch.jit.script(nn.Linear(2, 2)))
    findings = torchdoctor.audit(model, torch.ones(1, 2))
    assert [f.id for f in findings] == ["scripted-not-traced"]
    assert findings[0].module == "1" and "TorchScript" in findings[0].message
    assert not model[0]._forward_hooks and not model[0]._forward_pre_hooks


def test_hooks_removed_when_registration_fails(monkeypatch):
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))

    def refuse(*a, **k):
        raise RuntimeError("no hooks here")

    monkeypatch.setattr(model[1], "register_forward_pre_hook", refuse)
    findings = torchdoctor.audit(model, torch.ones(1, 2))
    assert findings[0].id == "forward-failed" and "no hooks here" in findings[0].message
    assert not model[0]._forward_hooks and not model[0]._forward_pre_hooks
