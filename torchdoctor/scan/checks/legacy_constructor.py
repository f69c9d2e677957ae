"""TD304: a legacy typed constructor given a device. `torch.FloatTensor(data, device=d)` (and
LongTensor, ByteTensor, …) builds CPU tensors only: any device but the CPU raises
"RuntimeError: legacy constructor expects device type: cpu but device type: cuda was passed"
(checked on torch 2.13.0: cuda, mps and meta all raise). coqui-ai/TTS's synthesis.py, a miss of
the first blind scan corpus, passes the model's device there."""

from __future__ import annotations

import ast
import re

from ..context import Check, Context

LEGACY = re.compile(r"^(Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)Tensor$")
DTYPE = {
    "Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
    "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
    "Bool": "bool",
}  # fmt: skip


def on_call(ctx: Context, node: ast.Call) -> None:
    name = ctx.torch_call(node)
    if name is None or not LEGACY.match(name):
        return  # torch.cuda.FloatTensor is the CUDA one; another library's FloatTensor is not torch's
    device = next((k.value for k in node.keywords if k.arg == "device"), None)
    if device is None:
        return
    if isinstance(device, ast.Constant) and str(device.value).split(":")[0] == "cpu":
        return
    literal = isinstance(device, ast.Constant)
    dtype = DTYPE[name[: -len("Tensor")]]
    ctx.report(
        "TD304",
        node,
        f"`torch.{name}(…, device=…)` builds CPU tensors only: another device raises "
        "'legacy constructor expects device type: cpu'",
        f"torch.tensor(…, dtype=torch.{dtype}, device=…)",
        confidence="high" if literal else "medium",
    )


CHECK = Check(
    rules=("TD304",),
    words=("Tensor(",),
    calls=frozenset(f"{k}Tensor" for k in DTYPE),
    on_call=on_call,
)
