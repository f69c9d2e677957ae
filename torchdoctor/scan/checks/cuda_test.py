"""TD006: a device pick whose test is not "is CUDA usable here".

`"cuda" if cuda_malloc.cuda_malloc_supported() else "cpu"` reads like a CUDA check, but
ComfyUI's function only asks whether cudaMallocAsync may be turned on: it returns True unless
nvidia-smi lists a GPU on its blacklist, so on a Mac or a machine without an NVIDIA GPU (no
nvidia-smi) it is True and the node picks CUDA exactly where it is absent. Ten labelled
crashes in eight ComfyUI plug-ins of the blind corpora 127-140 (OpenVoice, MARS5-TTS,
MuseTalk_FSH, UVR5, WhisperX, GPT_SoVITS, VocalSeparation, IP_LAP). The same holds for tests
of how torch was built (`torch.has_cuda`, `torch.backends.cuda.is_built()`,
`torch.version.cuda`: true on the default Linux wheel with no GPU or driver; Video-Pre-Training's
`have_cuda`) and for `torch.cuda.is_available` without its call (a function is always true).
Reported at the test, only where the branch it selects places work on CUDA."""

from __future__ import annotations

import ast

from ..astutil import CUDA_STRING, call_name, dotted
from ..context import Check, Context
from .narrow_guard import cuda_code

MALLOC = (
    "ComfyUI's `cuda_malloc_supported()` asks whether cudaMallocAsync may be enabled, not "
    "whether CUDA is usable: it is True wherever nvidia-smi lists no blacklisted GPU, a Mac or "
    "a machine without an NVIDIA GPU included"
)
BUILT = (
    "says torch was built with CUDA, not that a GPU is usable: the default Linux wheel is a "
    "CUDA build: a machine without an NVIDIA GPU or driver passes it"
)
UNCALLED = "is the function itself, not its result: always true"


def _why(ctx: Context, node: ast.expr) -> str | None:
    """Why this part of a test is no CUDA-availability test, or None when it may be one."""
    if isinstance(node, ast.Call):
        if call_name(node) == "cuda_malloc_supported":
            return MALLOC
        if ctx.torch_call(node) == "backends.cuda.is_built":
            return f"`{ast.unparse(node)}` {BUILT}"
        return None
    if isinstance(node, ast.Attribute):
        parts = dotted(node).split(".")
        if parts[0] not in ctx.torch_names:
            return None
        rest = ".".join(parts[1:])
        if rest in ("has_cuda", "version.cuda"):
            return f"`{ast.unparse(node)}` {BUILT}"
        if rest == "cuda.is_available":  # an atom of the test, so not called
            return f"`{ast.unparse(node)}` {UNCALLED}"
    return None


def _asks_cuda(ctx: Context, node: ast.expr) -> bool:
    """`torch.cuda.is_available()`, `torch.cuda.device_count() > 0`: a real test."""
    return any(
        isinstance(sub, ast.Call)
        and ctx.torch_call(sub) in ("cuda.is_available", "cuda.device_count")
        for sub in ast.walk(node)
    )


def _parts(test: ast.expr, positive: bool = True) -> list[tuple[ast.expr, bool]]:
    """The atoms of a test with whether the test holds when they are true: `a and not b` ->
    [(a, True), (b, False)]. Comparisons and calls are atoms."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _parts(test.operand, not positive)
    if isinstance(test, ast.BoolOp):
        return [p for v in test.values for p in _parts(v, positive)]
    return [(test, positive)]


def _cuda_placement(ctx: Context, nodes: list[ast.AST]) -> bool:
    """Does this branch put work on CUDA: a "cuda" device string, or a call that needs CUDA
    (TD004's: `.cuda()`, a torch.cuda call that raises without it)?"""
    for top in nodes:
        for sub in ast.walk(top):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                if CUDA_STRING.fullmatch(sub.value):
                    return True
            elif isinstance(sub, ast.Call) and cuda_code(ctx, sub):
                return True
    return False


def _one_value(nodes: list) -> ast.expr | None:
    """The one expression of a branch of `a if t else b`; None for an `if` statement's body."""
    return nodes[0] if len(nodes) == 1 and isinstance(nodes[0], ast.expr) else None


def _off(nodes: list) -> bool:
    """The value a pick falls back to without CUDA: `False`, `None`, `0`, "cpu",
    `torch.device("cpu")`. Beside `torch.cuda.is_available` uncalled, the other side is
    never taken: PointNetGPD's `args.cuda = args.cuda if torch.cuda.is_available else False`
    keeps `--cuda` on a CPU machine, and its six scripts then call `.cuda()` (blind set 349)."""
    node = _one_value(nodes)
    if isinstance(node, ast.Call) and dotted(node.func).endswith("device") and node.args:
        node = node.args[0]
    if not isinstance(node, ast.Constant):
        return False
    v = node.value
    return v is False or v is None or v == "cpu" or (type(v) is int and v == 0)


def _cuda_flag(nodes: list) -> bool:
    """`True`, or a flag named for CUDA (`args.cuda`, `use_gpu`): what the pick turns on. Not
    a number of workers or a learning rate (`4 if torch.cuda.is_available else 0`), which
    crashes nothing."""
    node = _one_value(nodes)
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return node.value is True
    name = dotted(node).rsplit(".", 1)[-1].lower()
    return "cuda" in name or "gpu" in name


def on_test(ctx: Context, node: ast.If | ast.IfExp) -> None:
    parts = [(atom, positive, _why(ctx, atom)) for atom, positive in _parts(node.test)]
    if all(why is None for _, _, why in parts) or any(_asks_cuda(ctx, a) for a, _, _ in parts):
        return  # `torch.cuda.is_available() and cuda_malloc_supported()`: the test is there
    branches: tuple[list, list] = (
        (node.body, node.orelse) if isinstance(node, ast.If) else ([node.body], [node.orelse])
    )
    for atom, positive, why in parts:
        if why is None:
            continue
        chosen, other = branches if positive else branches[::-1]
        flag = why.endswith(UNCALLED) and _cuda_flag(chosen) and _off(other)
        if not (_cuda_placement(ctx, chosen) or flag):
            continue
        fix = "test `torch.cuda.is_available()`"
        if why is MALLOC:
            fix += " (in a ComfyUI node: `comfy.model_management.get_torch_device()`)"
        ctx.report(
            "TD006",
            atom,
            f"{why}; so this picks CUDA where it is absent and raises 'Torch not compiled with "
            "CUDA enabled' or 'Found no NVIDIA driver'",
            fix,
        )


def on_call(ctx: Context, node: ast.Call) -> None:
    """`{torch.has_cuda: "cuda", torch.has_mps: "mps"}.get(True, "cpu")`: a pick written as a
    dict keyed by tests, the first true one's device taken (fast-style-transfer's scripts,
    blind set 377)."""
    func = node.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Dict)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value is True
    ):
        return
    for key, value in zip(func.value.keys, func.value.values, strict=True):
        why = _why(ctx, key) if key is not None else None
        if why is not None and _cuda_placement(ctx, [value]):
            ctx.report(
                "TD006",
                key,
                f"{why}; so this picks CUDA where it is absent and raises 'Torch not compiled "
                "with CUDA enabled' or 'Found no NVIDIA driver'",
                "key the pick on `torch.cuda.is_available()`",
            )


CHECK = Check(
    rules=("TD006",), words=("cuda",), calls=frozenset(["get"]), on_call=on_call, on_test=on_test
)
