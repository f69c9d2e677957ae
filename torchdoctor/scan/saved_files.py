"""Which file a `torch.save` / `torch.load` names, as keys the project view can match: the
file name in a string (`"scheduler.pt"`, `f"{out}/rng_state.pth"`, `os.path.join(d,
"cache.pt")`) matches across the project; a specific variable (`cached_features_file`,
`self.cache_path`) matches in the same file only. Generic names (`path`, `f`, `ckpt`) say
nothing and give no key."""

from __future__ import annotations

import ast
import posixpath
import re

from .astutil import assigned_values, dotted

FILE_NAME = re.compile(r"[\w.-]*\w\.(pt|pth|bin|ckpt|tar|pkl|pickle|torch|data)$", re.I)
GENERIC = frozenset([
    "path", "p", "f", "fp", "fn", "file", "fname", "filename", "name", "checkpoint", "ckpt",
    "ckpt_path", "checkpoint_path", "model_path", "load_path", "save_path", "output", "out",
    "output_path", "input", "weights", "resume", "pretrained", "args", "model_file", "state_file",
])  # fmt: skip
# Data that holds no CUDA tensors once saved: RNG state is a CPU ByteTensor, schedulers and
# GradScaler keep Python numbers, dataset caches and preprocessed data are built on the CPU,
# offloaded weights were moved to the host on purpose, `.cpu()` says so.
CPU_ONLY = re.compile(
    r"rng|random|sched|scaler|lr_|cache|processed|dataset|offload|\.cpu\(\)|['\"]cpu['\"]", re.I
)


def path_keys(path: str, expr: ast.expr) -> list[str]:
    keys = []
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            base = posixpath.basename(sub.value.replace("\\", "/"))
            if FILE_NAME.fullmatch(base):
                keys.append(f"file:{base}")
    name = dotted(expr)
    if name and name.rsplit(".", 1)[-1].lower() not in GENERIC:
        keys.append(f"var:{path}:{name}")
    return sorted(set(keys))


def path_argument(node: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(node.args) > position:
        return node.args[position]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


# torch factories: without `device=` they build on the CPU.
FACTORIES = frozenset([
    "zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "tensor", "from_numpy",
])  # fmt: skip


def _host_factory(expr: ast.expr, torch_names: frozenset[str] = frozenset(["torch"])) -> bool:
    """`torch.empty(n, m)` (or `th.empty` where the file imports torch as th): a tensor built
    on the CPU (no `device=`)."""
    name = dotted(expr.func) if isinstance(expr, ast.Call) else ""
    return (
        isinstance(expr, ast.Call)
        and name.split(".", 1)[0] in torch_names
        and name.rsplit(".", 1)[-1] in FACTORIES
        and not any(k.arg in ("device", None) for k in expr.keywords)
    )


def _literal_data(expr: ast.expr) -> bool:
    """`torch.tensor([lo, hi])`: built from a list, tuple or number, not from another tensor.
    `torch.tensor(t)` keeps `t`'s device, while a list is read element by element with
    `.item()` onto the CPU (both seen on the meta device: the list raises in `item()`)."""
    if not isinstance(expr, ast.Call) or dotted(expr.func).rsplit(".", 1)[-1] != "tensor":
        return True
    return bool(expr.args) and isinstance(expr.args[0], (ast.List, ast.Tuple, ast.Constant))


def cpu_only(
    expr: ast.expr, scope: ast.AST | None, torch_names: frozenset[str] = frozenset(["torch"])
) -> bool:
    """Is what is saved CPU-only data, by its text, by being built there (`th.save(th.tensor(
    [lo, hi]), path)`, a min/max file of blind set 396), or (a name) by what the scope assigns
    it: every value a CPU factory's (recognize-anything's batch_inference.py fills
    `logits = torch.empty(n, k)` with `out.cpu()` rows and saves it; sixteenth blind corpus)?"""
    if _host_factory(expr, torch_names) and _literal_data(expr):
        return True
    texts = [ast.unparse(expr)]
    values = []
    if isinstance(expr, ast.Name) and scope is not None:
        # `logits = torch.load(f)` in the other branch reads back what this saves
        values = [
            v
            for v in assigned_values(scope, expr.id)
            if not (isinstance(v, ast.Call) and dotted(v.func).endswith("torch.load"))
        ]
        texts += [ast.unparse(v) for v in values]
        if values and all(_host_factory(v) for v in values):
            return True
    return any(CPU_ONLY.search(t) for t in texts)
