"""The catalog of scan rules: stable ids, levels and the advice each finding carries.

Ids never change meaning; a retired rule keeps its id unused. Levels follow SARIF
(error > warning > note): `error` crashes on some machine, `warning` is a latent bug or an
unsafe default, `note` is performance or style.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVELS = ("note", "warning", "error")


def level_rank(level: str) -> int:
    return LEVELS.index(level)


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    level: str
    title: str
    help: str
    tags: tuple[str, ...] = ("device",)
    # how often a finding of the rule is right, as code-scanning tools say it (CodeQL's
    # `@precision`): very-high, high, medium or low. From the labelled samples of
    # docs/scan-precision.md; a rule with too few labels says medium.
    precision: str = "high"


RULES: tuple[Rule, ...] = (
    Rule(
        "TD001",
        "hardcoded-cuda-call",
        "error",
        "`.cuda()` hard-codes the CUDA device",
        "`.cuda()` raises 'Torch not compiled with CUDA enabled' on CPU and Mac machines. Pick the "
        "device once (e.g. `device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')`) "
        "and use `.to(device)`.",
    ),
    Rule(
        "TD002",
        "hardcoded-cuda-device",
        "error",
        "a 'cuda' device string is hard-coded",
        "`.to('cuda')`, `torch.device('cuda')` and `device='cuda:0'` fail where CUDA is absent. "
        "Pass a device variable chosen once at start-up instead.",
    ),
    Rule(
        "TD003",
        "unguarded-cuda-api",
        "error",
        "a `torch.cuda` call that needs CUDA, outside a device guard",
        "`torch.cuda.synchronize()`, `set_device`, `current_device`, `get_device_name`, "
        "`get_device_properties`, `mem_get_info`, `Stream()`… raise 'Torch not compiled with CUDA "
        "enabled' on a CPU-only torch. Call them under `if torch.cuda.is_available():`.",
    ),
    Rule(
        "TD004",
        "narrow-device-guard",
        "error",
        "CUDA code behind a guard that rules out one other device kind only",
        "`if device != 'cpu':`, `if not args.cpu:` or the `else:` of an MPS check still runs on "
        "an MPS Mac (or an XPU machine), where `.cuda()` and `torch.cuda.synchronize()`… raise "
        "'Torch not compiled with CUDA enabled'. Test for CUDA itself: "
        "`if torch.cuda.is_available():` or `if device.type == 'cuda':`.",
    ),
    Rule(
        "TD005",
        "cuda-default-argument",
        "warning",
        'a parameter defaults to "cuda"',
        "`def load_model(path, device='cuda')`: every caller that leaves the argument out gets "
        "CUDA, which fails on a Mac or a CPU machine. Default to None and pick the available "
        "device inside, or follow the device of an input. Not reported when every call in the "
        "scanned project passes the argument.",
    ),
    Rule(
        "TD006",
        "not-a-cuda-test",
        "error",
        "CUDA picked by a test that does not ask whether CUDA is usable",
        "`'cuda' if cuda_malloc_supported() else 'cpu'` (ComfyUI's cudaMallocAsync test), "
        "`torch.has_cuda`, `torch.backends.cuda.is_built()`, `torch.version.cuda` (how torch was "
        "built) and `torch.cuda.is_available` without its call are true on machines without a "
        "usable NVIDIA GPU, so the CUDA branch runs there and raises. Test "
        "`torch.cuda.is_available()`.",
        precision="medium",
    ),
    Rule(
        "TD007",
        "offload-needs-accelerator",
        "error",
        "diffusers CPU offload where there may be no accelerator",
        "`pipe.enable_model_cpu_offload()` / `enable_sequential_cpu_offload()` keep models on the "
        "CPU and move each to an accelerator for its forward pass: on a machine without one, "
        "diffusers raises 'requires accelerator, but not found' (older releases offload to "
        "'cuda' and raise 'Torch not compiled with CUDA enabled'). Offload only where "
        "`torch.cuda.is_available()` (or another accelerator) holds; else `pipe.to(device)`.",
        precision="medium",
    ),
    Rule(
        "TD008",
        "not-a-backend-test",
        "error",
        "XPU or MPS picked by a test that the module exists",
        "`hasattr(torch, 'xpu')` is true in every torch since 2.4 and `hasattr(torch.backends, "
        "'mps')` in every torch since 1.12, on machines without that backend too: a branch "
        "that then calls `torch.xpu.synchronize()`, `torch.xpu.stream(...)` or "
        "`torch.mps.empty_cache()` raises on CUDA and CPU machines. Test "
        "`torch.xpu.is_available()` / `torch.backends.mps.is_available()`.",
        precision="medium",
    ),
    Rule(
        "TD009",
        "wrong-torch-call",
        "error",
        "a torch call that raises on every machine",
        "`torch.autocast()` / `torch.amp.autocast()` need the device type "
        "(`torch.autocast(device_type=device.type)`): without it they raise TypeError on a GPU "
        "too; `torch.cuda.amp.autocast(device_type=…)` raises TypeError as well. MPS's and "
        "CUDA's memory and RNG functions live in `torch.mps` / `torch.cuda`: "
        "`torch.backends.mps.empty_cache()` raises AttributeError (and under a `hasattr` test "
        'for it, never runs). A device string torch rejects (`torch.device("gpu")`, '
        '`.to("CPU")`, `"cuda: 0"`) raises RuntimeError wherever the line runs.',
        precision="medium",
    ),
    Rule(
        "TD101",
        "load-without-map-location",
        "warning",
        "`torch.load` without `map_location`",
        "A checkpoint saved from GPU tensors fails on a CPU machine with 'Attempting to deserialize "
        "object on a CUDA device'. Pass `map_location='cpu'` (or your device variable).",
    ),
    Rule(
        "TD102",
        "load-without-weights-only",
        "warning",
        "`torch.load` without an explicit `weights_only`",
        "Unpickling runs arbitrary code. Say `weights_only=True` for a state dict (the default "
        "since torch 2.6); a pickled module or object needs `weights_only=False`, only for files "
        "you trust.",
        ("security",),
    ),
    Rule(
        "TD103",
        "jit-load-without-map-location",
        "warning",
        "`torch.jit.load` without `map_location`",
        "A TorchScript module saved on a GPU fails to load on a CPU machine. Pass "
        "`map_location='cpu'` (or your device variable). `torch.export.load` has no such "
        "argument and is not flagged.",
        precision="medium",
    ),
    Rule(
        "TD201",
        "dataparallel",
        "note",
        "`nn.DataParallel` is slower than DistributedDataParallel",
        "DataParallel runs one process, replicates the model every step and is bound by the GIL. "
        "Use `torch.nn.parallel.DistributedDataParallel` (one process per GPU, `torchrun`).",
        ("performance",),
        precision="medium",
    ),
    Rule(
        "TD202",
        "dataparallel-cuda-model",
        "error",
        "`DataParallel(model.cuda())` hard-codes CUDA",
        "Wrapping `model.cuda()` crashes on machines without CUDA. Move the model with "
        "`.to(device)` and wrap it only when `torch.cuda.device_count() > 1`.",
    ),
    Rule(
        "TD203",
        "module-of-conditional-wrap",
        "error",
        "`.module` of a model wrapped in DataParallel/DDP only on some machines",
        "`if torch.cuda.is_available(): model = nn.DataParallel(model)` and later "
        "`model.module.state_dict()`: where the model was not wrapped (the CPU, one GPU, a run "
        "outside torchrun) `.module` raises AttributeError. Read "
        "`getattr(model, 'module', model)`, or keep the unwrapped model in its own variable.",
    ),
    Rule(
        "TD301",
        "tensor-attribute-not-buffer",
        "error",
        "a tensor stored as a plain module attribute",
        "`model.to(device)` moves parameters and buffers only: a tensor assigned to `self.x` stays "
        "behind and causes 'Expected all tensors to be on the same device'. Use "
        "`self.register_buffer('x', tensor)` (persistent=False to keep it out of the state_dict) "
        "or `nn.Parameter`.",
        precision="medium",
    ),
    Rule(
        "TD302",
        "factory-in-forward-without-device",
        "warning",
        "tensor created in `forward` without `device=`",
        "A tensor factory without `device=` makes a CPU tensor even when the model runs on a GPU. "
        "Pass `device=x.device` (and `dtype=x.dtype`) of an input, or use `torch.zeros_like(x)`.",
        precision="medium",
    ),
    Rule(
        "TD303",
        "cpu-tensor-meets-device-tensor",
        "error",
        "a tensor made without `device=` meets a tensor the function put on a device",
        "`x = x.to(device)` then `x + torch.randn(x.shape)`: the factory makes a CPU tensor and "
        "the sum raises 'Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:0 and cpu!'. Pass `device=x.device` (or use `torch.randn_like(x)`).",
    ),
    Rule(
        "TD304",
        "legacy-constructor-device",
        "error",
        "a legacy typed constructor (`torch.FloatTensor(…)`) given a device",
        "`torch.FloatTensor(data, device=device)` builds CPU tensors only: on CUDA or MPS it "
        "raises 'legacy constructor expects device type: cpu but device type: cuda was passed'. "
        "Use `torch.tensor(data, dtype=torch.float32, device=device)`.",
    ),
    Rule(
        "TD401",
        "numpy-without-detach",
        "error",
        "`.numpy()` on a tensor that requires grad",
        "`.numpy()` raises 'Can't call numpy() on Tensor that requires grad'. Use "
        "`.detach().cpu().numpy()`.",
        precision="medium",
    ),
    Rule(
        "TD402",
        "sync-in-loop",
        "note",
        "a device synchronisation in a hot loop",
        "`.item()` and `torch.cuda.synchronize()` block until the GPU catches up, every iteration. "
        "Accumulate on the device and read the value every N steps.",
        ("performance",),
    ),
    Rule(
        "TD403",
        "numpy-on-device-tensor",
        "error",
        "`.numpy()` on a tensor that may be on a GPU",
        '`.numpy()` raises "can\'t convert cuda:0 device type tensor to numpy" for a GPU tensor. '
        "Use `.cpu().numpy()` (a no-op copy-free call for CPU tensors).",
        precision="medium",
    ),
    Rule(
        "TD501",
        "pin-memory-hardcoded",
        "note",
        "`pin_memory=True` hard-coded",
        "Pinned memory needs an accelerator; without one torch warns and ignores it. Use "
        "`pin_memory=torch.accelerator.is_available()` (torch 2.6+; before: "
        "`torch.cuda.is_available()`). This is the `DataLoader` case; see TD502 for the calls "
        "that raise.",
        ("performance",),
    ),
    Rule(
        "TD502",
        "pin-memory-raises",
        "error",
        "pinned memory requested where it raises without an accelerator",
        "`Tensor.pin_memory()` raises 'Cannot access accelerator device when none is available' "
        "on a CPU-only host, and `torch.empty(…, pin_memory=True)` (and torch's other allocators) "
        "raise 'pin_memory=True requires a CUDA or other accelerator backend'. Pin only when "
        "`torch.cuda.is_available()`.",
        precision="medium",
    ),
    Rule(
        "TD601",
        "float64-on-mps",
        "error",
        "float64 on a tensor that may be on MPS",
        "Apple's MPS has no float64: `.double()` or `dtype=torch.float64` on an MPS tensor raises "
        "'Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support "
        "float64' (every torch release so far). Use float32 on the device, or do the float64 "
        "part on the CPU. Counted only in a project that picks MPS somewhere.",
    ),
    Rule(
        "TD602",
        "sparse-on-mps",
        "error",
        "a sparse tensor moved to MPS",
        "A sparse COO buffer or tensor moved to MPS (`model.to('mps')`, `.to(device)`) raises "
        "'Could not run aten::_sparse_coo_tensor_with_dims_and_tensors with arguments from the "
        "SparseMPS backend'; sparse MPS support began in mid-2025 (pytorch/pytorch#157238) and "
        "covers some ops only. Keep it dense on MPS or keep the sparse part on the CPU. "
        "openai-whisper's model holds one (alignment_heads): `whisper.load_model(…, "
        "device=<mps>)` raises it on releases before the sparse MPS work of late 2025.",
        precision="medium",
    ),
    Rule(
        "TD603",
        "mps-unsupported-op",
        "error",
        "an op with no MPS kernel",
        "Some ops have no MPS implementation (CTC loss: pytorch/pytorch#153976) and raise "
        "'The operator ... is not currently implemented for the MPS device'. Run them on the "
        "CPU, or set PYTORCH_ENABLE_MPS_FALLBACK=1.",
        precision="medium",
    ),
)

BY_ID = {r.id: r for r in RULES}
BY_NAME = {r.name: r for r in RULES}


def resolve(token: str) -> Rule | None:
    """A rule by id (`TD001`, any case) or by name (`hardcoded-cuda-call`)."""
    return BY_ID.get(token.upper()) or BY_NAME.get(token.lower())
