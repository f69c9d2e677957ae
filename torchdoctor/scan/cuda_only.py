"""Is a file made to run on CUDA only? Then `.cuda()`, `"cuda"`, `torch.cuda.*` and pinned
memory in it are not pitfalls a maintainer would change: the file cannot run anywhere else
anyway. Told by what the file says of itself (never by running it):

- it starts an NCCL process group (NCCL exists for NVIDIA GPUs only);
- it imports bitsandbytes' CUDA kernels, flash-attn's (at the top level, unconditionally),
  SageMaker's model-parallel library, vLLM's engine internals (`from vllm.model_executor …`),
  or builds a CUDA extension (`CUDAExtension`, `load_inline(... cuda_sources=...)`, `.cu`
  sources);
- it is a Cog predictor (`from cog import BasePredictor`): Replicate builds it into the
  container its `cog.yaml` describes, and a predictor that names CUDA asks there for a GPU
  (every one of the nine cog.yaml files in the eighteen blind corpora says `gpu: true`);
- it puts each process on the GPU of its rank (`.cuda(rank)`, `.cuda(args.local_rank)`,
  `torch.device("cuda", rank)`);
- it pins its process to a GPU (`torch.cuda.set_device(…)`) and names no other device at all:
  no `is_available`, no "cpu", no MPS or XPU (EasyOCR's CRAFT trainers, fourth blind corpus).

Findings of the device rules there keep a `low` confidence, with the reason."""

from __future__ import annotations

import ast
import re

_RANK = r"\s*(?:self\.|args\.|opt\.)?(?:local_)?rank\s*\)"
# `.cuda(rank)`, `cuda.Stream(local_rank)`, `torch.device("cuda", rank)`
RANK_GPU = r"(?:\.cuda|cuda\.Stream)\(" + _RANK + r"|device\(\s*['\"]cuda['\"]\s*," + _RANK

# Packages that are CUDA kernels: importing them loads a compiled CUDA extension, and they
# install only where a CUDA (or ROCm) toolchain is. project.py makes their importers CUDA-only
# too. Module -> its name in the reason, and what shows it has no CPU or MPS path.
CUDA_KERNEL_PACKAGES: dict[str, str] = {
    "flash_attn": "flash-attn",  # builds flash_attn_2_cuda
    # tiny-cuda-nn's bindings: NVIDIA GPUs only (its README); DDS-SLAM's hash grids, set 154
    "tinycudann": "tiny-cuda-nn",
    "pycuda": "PyCUDA",
    "cupy": "CuPy",  # CUDA or ROCm arrays, no CPU backend
    # the 3D Gaussian Splatting rasterizer and its KNN: CUDAExtension modules, no CPU kernels
    "diff_gaussian_rasterization": "the 3DGS rasterizer",
    "simple_knn": "simple-knn",
    # gsplat: no CPU, AMD or MPS kernels (nerfstudio-project/gsplat#635, #163)
    "gsplat": "gsplat",
    "nvdiffrast": "nvdiffrast",  # NVIDIA's rasterizer: CUDAExtension / OpenGL on NVIDIA
    # PointNet++'s ops (erikwijmans/Pointnet2_PyTorch, vendored widely): every kernel raises
    # "CPU not supported" on a CPU tensor; pointMLP-pytorch's models, set 176
    "pointnet2_ops": "PointNet++ ops (pointnet2_ops)",
}

KERNELS = "imports a package of CUDA kernels"
# (substrings one of which every match holds, pattern over the file's text, what it shows).
# Checked in order; the first hit is the reason. The plain substring test comes first: it is
# many times faster than a regex over the files that hold none of them (nearly all).
MARKERS: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (
        ("nccl",),
        re.compile(r"""backend\s*=\s*["']nccl["']|init_process_group\(\s*["']nccl["']"""),
        "starts NCCL",
    ),
    (
        ("bitsandbytes",),
        re.compile(r"^\s*(?:import|from)\s+bitsandbytes\b", re.M),
        "imports bitsandbytes",
    ),
    # at column 0 only: flash-attn is often imported optionally, inside `try`
    (
        tuple(CUDA_KERNEL_PACKAGES),
        re.compile(r"^(?:import|from)\s+(" + "|".join(CUDA_KERNEL_PACKAGES) + r")\b", re.M),
        KERNELS,
    ),
    (
        ("smdistributed",),
        re.compile(r"^\s*(?:import|from)\s+smdistributed\b", re.M),
        "imports SageMaker model parallel",
    ),
    # vLLM's model runners and engine internals (2noise/ChatTTS's velocity/model_runner.py,
    # third blind scan corpus: CUDA graphs and device="cuda" throughout, built only on Linux GPUs)
    (("vllm.",), re.compile(r"^\s*from\s+vllm\.\w+", re.M), "imports vLLM's engine internals"),
    (
        ("cog",),
        re.compile(r"^\s*(?:from\s+cog\s+import|import\s+cog\b)", re.M),
        "is a Cog predictor",
    ),
    (
        ("CUDAExtension", "cuda_sources", '.cu"', ".cu'"),
        re.compile(r"\bCUDAExtension\b|cuda_sources\s*=|[\"'][\w/.-]+\.cu[\"']"),
        "builds CUDA kernels",
    ),
    # one process per GPU, each on the GPU of its rank: `.cuda(rank)`, `.cuda(args.local_rank)`,
    # `torch.cuda.Stream(local_rank)` (vits, RVC, MeloTTS trainers; arcface_torch's partial FC)
    (("rank",), re.compile(RANK_GPU), "puts each process on the GPU of its rank"),
)
SET_DEVICE = re.compile(r"\btorch\.cuda\.set_device\(")
# Any sign of a path that does not need CUDA: then set_device is one branch, not the design.
OTHER_DEVICE = re.compile(r"is_available|[\"']cpu[\"']|\bmps\b|\bxpu\b|device_count")
# The rules that say "this fails without CUDA": moot in a file that needs CUDA anyway (a GPU
# checkpoint loaded without map_location, TD101/TD103, fails only where there is no GPU).
DEVICE_RULES = frozenset([
    "TD001", "TD002", "TD003", "TD004", "TD005", "TD006", "TD007", "TD101", "TD103", "TD202", "TD501", "TD502",
])  # fmt: skip


ASSERTS = "the file asserts that CUDA is available before it runs: it runs on CUDA only"


def asserts_cuda(module: ast.Module) -> bool:
    """`assert torch.cuda.is_available()` (alone, or first in an `and`) as a statement of the
    module or of its `if __name__ == "__main__":` block (or of a loop, `with` or `try` there):
    every function the script calls runs on CUDA (PCCLS's tools/main.py, blind set 204). Not in
    a nested `if` or a function."""
    main = [
        s
        for s in module.body
        if isinstance(s, ast.If)
        and "__main__" in ast.unparse(s.test)
        and "__name__" in ast.unparse(s.test)
    ]
    stmts = _unconditional([*module.body, *(b for m in main for b in m.body)])
    return any(isinstance(s, ast.Assert) and _needs_cuda(s.test) for s in stmts)


def _unconditional(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """These statements and those of the loops, `with`s and `try`s among them, not of an `if`
    (PCCLS asserts inside the `for` of its `__main__` block)."""
    out = []
    for s in stmts:
        out.append(s)
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
            out += _unconditional(s.body)
    return out


def _needs_cuda(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_needs_cuda(v) for v in test.values)
    return isinstance(test, ast.Call) and ast.unparse(test.func).endswith("cuda.is_available")


def cuda_only_reason(text: str) -> str | None:
    """Why the file runs on CUDA only, or None."""
    for words, pattern, reason in MARKERS:
        if any(w in text for w in words) and (m := pattern.search(text)):
            if reason == KERNELS:  # name the package: "imports tiny-cuda-nn"
                reason = "imports " + CUDA_KERNEL_PACKAGES[m.group(1)]
            return f"the file {reason}: it runs on CUDA only"
    if "set_device" in text and SET_DEVICE.search(text) and not OTHER_DEVICE.search(text):
        return (
            "the file pins its process to a GPU and has no other device path: it runs on CUDA only"
        )
    return None
