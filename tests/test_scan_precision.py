"""False-positive classes seen on real code (issue 16 §1) and the pitfalls added in §2, each on
a small example written for the pattern. A test named `quiet_*` must report nothing for that
rule; `flags_*` must report it."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.config import ProjectConfig
from torchdoctor.scan.engine import ScanOptions, scan_source

HEAD = "import torch\nfrom torch import nn\n"


def rules(src: str, config: ProjectConfig | None = None) -> list[str]:
    found, _ = scan_source("m.py", HEAD + textwrap.dedent(src), ScanOptions(), config)
    return [f.rule for f in found]


def forward(body: str, init: str = "pass", extra: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(body).strip(), " " * 8)
    return (
        "class Net(nn.Module):\n"
        f"    def __init__(self):\n        super().__init__()\n        {init}\n"
        f"    def forward(self, x):\n{body}\n        return x\n{extra}"
    )


# ---- TD302: 0-dim and scalar tensors -------------------------------------------------
def test_quiet_layerdrop_draw_of_a_0dim_random_number():
    assert "TD302" not in rules(forward("if torch.rand([]) < 0.1:\n    return x"))


def test_quiet_scalar_tensor_from_a_python_number():
    assert "TD302" not in rules(forward("scale = torch.tensor(x.shape[-1] ** 0.5)\nx = x / scale"))
    assert "TD302" not in rules(forward("eps = torch.tensor(0.5)\nx = x + eps"))


def test_quiet_randint_with_empty_size_is_0dim():
    assert "TD302" not in rules(forward("off = torch.randint(0, 4, ())\nx = x[:, off:]"))


def test_quiet_factory_compared_with_a_python_number():
    assert "TD302" not in rules(forward("if torch.rand(1) < self.p:\n    return x"))


# ---- TD302: tensors moved later, made with a device, or harmless -----------------------
def test_quiet_factory_moved_a_few_lines_later():
    src = forward("pos = torch.arange(x.shape[1])\nx = x + 1\npos = pos.to(x.device)\nx = x + pos")
    assert "TD302" not in rules(src)


def test_quiet_factory_moved_later_in_the_same_chain():
    assert "TD302" not in rules(
        forward("m = torch.arange(4).view(1, 4).expand(2, -1).to(x.device)\nx = x + m")
    )


def test_quiet_factory_fed_to_a_call_whose_result_is_moved():
    assert "TD302" not in rules(
        forward("g = self.proj(torch.tensor([0] * 4)).to(x.dtype)\nx = x + g")
    )


def test_quiet_factory_used_only_as_an_index():
    assert "TD302" not in rules(forward("perm = torch.randperm(x.size(0))\nx = x[perm]"))
    assert "TD302" not in rules(forward("x = x[torch.arange(x.size(0)), 0]"))


def test_quiet_tensor_of_shape_metadata():
    assert "TD302" not in rules(forward("sizes = torch.tensor(x.shape[2:])\nx = x + 0"))


def test_flags_factory_added_to_the_input():
    assert "TD302" in rules(forward("h = torch.zeros(x.size(0), 4)\nx = x + h"))


# ---- TD301: attributes the module moves itself -----------------------------------------
def test_quiet_attribute_moved_at_its_use_site():
    src = forward(
        "self.alpha = self.alpha.to(x.device)\nx = x * self.alpha",
        init="self.alpha = torch.ones(3)",
    )
    assert "TD301" not in rules(src)


def test_quiet_attribute_moved_through_a_chain_at_use():
    src = forward("x = x + self.t.unsqueeze(0).to(x.device)", init="self.t = torch.arange(3)")
    assert "TD301" not in rules(src)


def test_quiet_when_a_parent_class_overrides_apply():
    src = (
        "class Base(nn.Module):\n    def _apply(self, fn):\n        return super()._apply(fn)\n"
        + forward("x = x * self.w", init="self.w = torch.ones(3)").replace("(nn.Module)", "(Base)")
    )
    assert "TD301" not in rules(src)


def test_quiet_attribute_created_with_device_or_factory_kwargs():
    assert "TD301" not in rules(forward("x = x * self.w", init="self.w = torch.ones(3, device=d)"))
    assert "TD301" not in rules(forward("x = x * self.w", init="self.w = torch.ones(3, **dd)"))


def test_quiet_0dim_attribute():
    assert "TD301" not in rules(forward("x = x * self.s", init="self.s = torch.tensor(0.5)"))


def test_quiet_cache_rebuilt_outside_init():
    extra = "    def _update(self, x):\n        self.cos = x.cos()\n"
    src = forward("x = x * self.cos", init="self.cos = torch.empty(0)", extra=extra)
    assert "TD301" not in rules(src)


def test_flags_plain_tensor_attribute_used_in_forward():
    assert "TD301" in rules(forward("x = x * self.w", init="self.w = torch.ones(3)"))


# ---- TD001: .cuda(...) that is not Tensor.cuda / Module.cuda ---------------------------
def test_quiet_quantizer_cuda_with_its_own_arguments():
    assert "TD001" not in rules("q = quant.cuda(qtensor, meta=m, device=d)")


def test_quiet_cuda_with_a_non_device_first_argument():
    assert "TD001" not in rules("y = backend.cuda(tensor)")


def test_quiet_self_cuda_in_a_file_defining_cuda():
    src = "class Q:\n    def cuda(self, t):\n        return t\n    def run(self, t):\n        return self.cuda(t)\n"
    assert "TD001" not in rules(src)


def test_flags_cuda_with_a_device_index():
    assert rules("y = x.cuda(args.gpu)").count("TD001") == 1


# ---- TD002: config defaults ----------------------------------------------------------
def test_quiet_config_object_default_device_cuda():
    assert "TD002" not in rules('cfg = TrainConfig(device="cuda", lr=1e-3)')
    assert "TD002" not in rules('cfg = dict(device="cuda")')


def test_quiet_dataclass_default_device_cuda():
    src = "from dataclasses import dataclass\n@dataclass\nclass Cfg:\n    device: str = 'cuda'\n"
    assert "TD002" not in rules(src)


def test_flags_device_cuda_in_a_torch_factory():
    assert "TD002" in rules('z = torch.zeros(3, device="cuda")')
    assert "TD002" in rules('z = x.new_zeros(3, device="cuda")')


# ---- TD101: files that never hold CUDA tensors -----------------------------------------
def test_quiet_load_of_rng_state():
    assert "TD101" not in rules("torch.set_rng_state(torch.load(path))")
    assert "TD101" not in rules("state = torch.load(rng_state_file)")


def test_quiet_load_of_scheduler_and_grad_scaler_state():
    assert "TD101" not in rules("scheduler.load_state_dict(torch.load(p))")
    assert "TD101" not in rules("scaler.load_state_dict(torch.load(p))")


def test_flags_load_of_a_model_checkpoint():
    assert "TD101" in rules("model.load_state_dict(torch.load(ckpt_path))")


# ---- TD201: DataParallel as a deliberate choice ----------------------------------------
def test_quiet_dataparallel_as_fallback_beside_ddp():
    src = (
        "if distributed:\n    m = nn.parallel.DistributedDataParallel(m)\n"
        "else:\n    m = nn.DataParallel(m)\n"
    )
    assert "TD201" not in rules(src)


def test_quiet_dataparallel_implementing_a_dp_strategy():
    assert "TD201" not in rules("if strategy == 'dp':\n    m = nn.DataParallel(m)")
    assert "TD201" not in rules(
        "class DataParallelStrategy:\n    def wrap(self, m):\n        return nn.DataParallel(m)"
    )


# ---- TD102: weights_only already decided ----------------------------------------------
def test_quiet_load_inside_safe_globals():
    src = "with torch.serialization.safe_globals([MyCfg]):\n    sd = torch.load(p, map_location='cpu')"
    assert "TD102" not in rules(src)


def test_quiet_in_a_project_requiring_torch_2_6():
    assert "TD102" not in rules(
        "sd = torch.load(p, map_location='cpu')", ProjectConfig(torch_min=(2, 6))
    )
    assert "TD102" in rules(
        "sd = torch.load(p, map_location='cpu')", ProjectConfig(torch_min=(2, 5))
    )


# ---- §2: TD502 pinning that raises vs TD501 DataLoader that warns -----------------------
def test_cannot_access_accelerator_device_when_none_is_available_pin_memory_method():
    (rule,) = [r for r in rules("b = batch.pin_memory()") if r.startswith("TD5")]
    assert rule == "TD502"


def test_torch_empty_pin_memory_true_raises_without_accelerator():
    assert rules("buf = torch.empty(8, pin_memory=True)") == ["TD502"]


def test_dataloader_pin_memory_only_warns():
    assert rules("dl = DataLoader(ds, pin_memory=True)") == ["TD501"]


def test_levels_of_the_two_pin_memory_rules():
    from torchdoctor.scan.rules import BY_ID

    assert (BY_ID["TD501"].level, BY_ID["TD502"].level) == ("note", "error")


# ---- §2: TD403 .numpy() on a GPU tensor --------------------------------------------------
def test_cant_convert_cuda_device_type_tensor_to_numpy():
    src = "def f(model, x, device):\n    model = model.to(device)\n    out = model(x)\n    return out.numpy()"
    assert "TD403" in rules(src)


def test_quiet_numpy_after_cpu_reassignment():
    src = "def f(model, x, device):\n    out = model(x.to(device))\n    out = out.cpu()\n    return out.numpy()"
    assert "TD403" not in rules(src)


def test_quiet_numpy_after_move_to_a_cpu_device_variable():
    assert "TD403" not in rules("inst = out.to(self._cpu_device)\nb = inst.boxes.numpy()")


# ---- §2: TD103 jit.load, TD003 torch.cuda calls -----------------------------------------
def test_jit_load_without_map_location():
    assert "TD103" in rules("m = torch.jit.load(path)")
    assert "TD103" not in rules(
        "def rt(m, buf):\n    torch.jit.save(m, buf)\n    return torch.jit.load(buf)"
    )


def test_torch_not_compiled_with_cuda_enabled_synchronize():
    assert "TD003" in rules("torch.cuda.synchronize()")
    assert "TD003" not in rules("if torch.cuda.is_available():\n    torch.cuda.synchronize()")


def test_quiet_cuda_api_in_nccl_code():
    assert "TD003" not in rules("dist.init_process_group('nccl')\ntorch.cuda.set_device(rank)")
