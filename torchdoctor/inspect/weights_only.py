"""The globals ``torch.load(weights_only=True)`` lets a checkpoint reference: the one allowlist
`inspect` judges every checkpoint against (the pickle's own globals, any protocol or format).

Where it comes from: torch 2.13.0, ``torch/_weights_only_unpickler.py``, the keys of
``_get_allowed_globals()`` (collections.OrderedDict/Counter, torch.Size/Tensor/device,
nn.Parameter, ``_codecs.encode`` for bytes, builtins set/bytearray/complex, every dtype and
qscheme, the storage and legacy tensor classes, and the ``torch._utils._rebuild_*`` functions).
tests/test_inspect.py compares it with the installed torch's list, so a torch that changes its
list is noticed. Anything else a pickle names is imported and called on load: it is flagged.
"""

from __future__ import annotations

import re

# Python 2 names (`__builtin__.set`, `copy_reg._reconstructor`) are read as Python 3 ones, as
# both pickle and torch's weights_only unpickler do (the standard library's _compat_pickle).
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING

WEIGHTS_ONLY_ALLOWED = frozenset(
    [
    "_codecs.encode", "builtins.bytearray", "builtins.complex", "builtins.set",
    "collections.Counter", "collections.OrderedDict", "torch.BFloat16Storage",
    "torch.BFloat16Tensor", "torch.BoolStorage", "torch.BoolTensor", "torch.ByteStorage",
    "torch.ByteTensor", "torch.CharStorage", "torch.CharTensor", "torch.ComplexDoubleStorage",
    "torch.ComplexFloatStorage", "torch.DoubleStorage", "torch.DoubleTensor",
    "torch.FloatStorage", "torch.FloatTensor", "torch.HalfStorage", "torch.HalfTensor",
    "torch.IntStorage", "torch.IntTensor", "torch.LongStorage", "torch.LongTensor",
    "torch.QInt32Storage", "torch.QInt8Storage", "torch.QUInt2x4Storage", "torch.QUInt4x2Storage",
    "torch.QUInt8Storage", "torch.ShortStorage", "torch.ShortTensor", "torch.Size",
    "torch.Tensor", "torch._tensor._rebuild_from_type_v2",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_meta_tensor_no_storage", "torch._utils._rebuild_nested_tensor",
    "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor", "torch._utils._rebuild_sparse_tensor",
    "torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3", "torch._utils._rebuild_wrapper_subclass", "torch.bfloat16",
    "torch.bits16", "torch.bits1x8", "torch.bits2x4", "torch.bits4x2", "torch.bits8",
    "torch.bool", "torch.complex128", "torch.complex32", "torch.complex64",
    "torch.cuda.BFloat16Storage", "torch.cuda.BFloat16Tensor", "torch.cuda.BoolStorage",
    "torch.cuda.BoolTensor", "torch.cuda.ByteStorage", "torch.cuda.ByteTensor",
    "torch.cuda.CharStorage", "torch.cuda.CharTensor", "torch.cuda.ComplexDoubleStorage",
    "torch.cuda.ComplexFloatStorage", "torch.cuda.DoubleStorage", "torch.cuda.DoubleTensor",
    "torch.cuda.FloatStorage", "torch.cuda.FloatTensor", "torch.cuda.HalfStorage",
    "torch.cuda.HalfTensor", "torch.cuda.IntStorage", "torch.cuda.IntTensor",
    "torch.cuda.LongStorage", "torch.cuda.LongTensor", "torch.cuda.ShortStorage",
    "torch.cuda.ShortTensor", "torch.cuda.sparse.BFloat16Tensor", "torch.cuda.sparse.ByteTensor",
    "torch.cuda.sparse.CharTensor", "torch.cuda.sparse.DoubleTensor",
    "torch.cuda.sparse.FloatTensor", "torch.cuda.sparse.HalfTensor",
    "torch.cuda.sparse.IntTensor", "torch.cuda.sparse.LongTensor",
    "torch.cuda.sparse.ShortTensor", "torch.device", "torch.float16", "torch.float32",
    "torch.float4_e2m1fn_x2", "torch.float64", "torch.float8_e4m3fn", "torch.float8_e4m3fnuz",
    "torch.float8_e5m2", "torch.float8_e5m2fnuz", "torch.float8_e8m0fnu", "torch.int1",
    "torch.int16", "torch.int2", "torch.int3", "torch.int32", "torch.int4", "torch.int5",
    "torch.int6", "torch.int64", "torch.int7", "torch.int8", "torch.nn.parameter.Parameter",
    "torch.per_channel_affine", "torch.per_channel_affine_float_qparams",
    "torch.per_channel_symmetric", "torch.per_tensor_affine", "torch.per_tensor_symmetric",
    "torch.qint32", "torch.qint8", "torch.quint2x4", "torch.quint4x2", "torch.quint8",
    "torch.serialization._get_layout", "torch.sparse.BFloat16Tensor", "torch.sparse.ByteTensor",
    "torch.sparse.CharTensor", "torch.sparse.DoubleTensor", "torch.sparse.FloatTensor",
    "torch.sparse.HalfTensor", "torch.sparse.IntTensor", "torch.sparse.LongTensor",
    "torch.sparse.ShortTensor", "torch.storage.TypedStorage", "torch.storage.UntypedStorage",
    "torch.uint1", "torch.uint16", "torch.uint2", "torch.uint3", "torch.uint32", "torch.uint4",
    "torch.uint5", "torch.uint6", "torch.uint64", "torch.uint7", "torch.uint8",
    ]
)  # fmt: skip

# Classes of torch's own layers (torch.nn.modules.linear.Linear …): what a pickled nn.Module
# references besides the allowlist. weights_only still refuses them; the file loads only with
# weights_only=False, which is offered for trusted files when nothing else is referenced.
TORCH_MODULE_CLASS = re.compile(r"torch\.nn\.modules\.[a-z_0-9]+\.[A-Z][A-Za-z0-9_]*")


def python3_name(name: str) -> str:
    """`module.attr` as Python 3 unpickling resolves it."""
    module, _, attr = name.rpartition(".")
    if (module, attr) in NAME_MAPPING:
        return ".".join(NAME_MAPPING[(module, attr)])
    return f"{IMPORT_MAPPING.get(module, module)}.{attr}" if module else name


def allowed(name: str) -> bool:
    return python3_name(name) in WEIGHTS_ONLY_ALLOWED


def not_allowed(names: list[str]) -> list[str]:
    """The globals outside the weights_only allowlist, in order."""
    return [n for n in names if not allowed(n)]
