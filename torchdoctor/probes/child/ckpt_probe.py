"""The checkpoint probe: reads one checkpoint file in a child process, with a deadline.

Run as the probe child (``runner.child_argv(python, "ckpt_probe", FILE)``) under the interpreter whose torch should
read it; standard library only until the `load` stage imports torch. Events are the torch
probe's JSON lines. Nothing is unpickled beyond `torch.load(weights_only=True)`: a file that
needs more is described from its pickle opcodes (pickle_scan), never loaded.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import sys
import zipfile
from collections import Counter

from . import locate, pickle_scan
from .torch_probe import emit, stage

SAFETENSORS_MAX_HEADER = 100 * 1024 * 1024
SAMPLE_TENSORS = 10
MAX_DEPTH = 8
SAFETENSORS_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2,
    "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip


def detect(path):
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        head = fh.read(16)
    if zipfile.is_zipfile(path):
        kind = "torch-zip"
    elif len(head) >= 9 and head[8:9] == b"{":
        (n,) = struct.unpack("<Q", head[:8])
        kind = "safetensors" if n <= min(size - 8, SAFETENSORS_MAX_HEADER) else "unknown"
    elif head[:1] == b"\x80" or pickle_scan.is_pickle(path):
        # A pickle stream (protocols 0 and 1 have no header): torch.load would unpickle it, so
        # its globals are judged; pickle_scan checks torch's magic number.
        kind = "torch-legacy"
    else:
        kind = "unknown"
    return {"format": kind, "size_bytes": size}


def safetensors_header(path):
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
        available = os.fstat(fh.fileno()).st_size - 8 - n
    meta = header.pop("__metadata__", None)
    dtypes, tensors, elements, nbytes, data_end = Counter(), [], 0, 0, 0
    for name, info in header.items():
        numel = 1
        for d in info.get("shape", []):
            numel *= int(d)
        start, end = info.get("data_offsets", [0, 0])
        dtypes[info.get("dtype", "?")] += 1
        elements += numel
        nbytes += end - start
        data_end = max(data_end, end)
        tensors.append(
            {"name": name, "dtype": info.get("dtype"), "shape": info.get("shape"), "numel": numel}
        )
    tensors.sort(key=lambda t: -t["numel"])
    return {
        "kind": "state_dict",
        "tensors": len(header),
        "elements": elements,
        "bytes": nbytes,
        "dtypes": dict(dtypes),
        "largest": tensors[:SAMPLE_TENSORS],
        "metadata": meta,
        "data_end": data_end,  # a truncated download ends before this
        "data_available": available,
        "safetensors_installed": importlib.util.find_spec("safetensors") is not None,
    }


def pickle_facts(path, kind):
    return pickle_scan.scan_zip(path) if kind == "torch-zip" else pickle_scan.scan_legacy(path)


def machine():
    import torch

    cuda = bool(torch.cuda.is_available())
    mps = getattr(torch.backends, "mps", None)
    return {
        "torch_version": torch.__version__,
        "cuda_available": cuda,
        "cuda_device_count": torch.cuda.device_count() if cuda else 0,
        "mps_available": bool(mps and mps.is_available()),
    }


def _describe(obj, torch, tensors, depth=0, key=""):
    """Kind of one loaded object; tensors collected as (key, tensor)."""
    if isinstance(obj, torch.Tensor):
        tensors.append((key, obj))
        return "tensor"
    if depth >= MAX_DEPTH:
        return type(obj).__name__
    if isinstance(obj, dict):
        kinds = {
            str(k): _describe(v, torch, tensors, depth + 1, f"{key}.{k}" if key else str(k))
            for k, v in obj.items()
        }
        if kinds and all(v == "tensor" for v in kinds.values()):
            return "state_dict"
        if {"state", "param_groups"} <= set(kinds):
            return "optimizer_state_dict"
        return "dict"
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _describe(v, torch, tensors, depth + 1, f"{key}[{i}]")
        return type(obj).__name__
    return type(obj).__name__


def _module_prefixed(tensors):
    """Keys saved from a DataParallel/DDP wrapper start with `module.`: how many do."""
    return sum(1 for k, _ in tensors if k.startswith("module."))


def load_weights_only(path, kind):
    import torch

    seen = Counter()
    seen_bytes = Counter()

    def record(storage, location):
        # Called once per storage with the location it was saved from; keep it on the CPU.
        seen[location] += 1
        seen_bytes[location] += storage.nbytes()
        return storage

    kwargs = {"map_location": record, "weights_only": True}
    if kind == "torch-zip":
        kwargs["mmap"] = True  # storages stay on disk: a huge file costs no memory
    obj = torch.load(path, **kwargs)
    tensors = []
    top = _describe(obj, torch, tensors)
    parts = {}
    if isinstance(obj, dict) and top != "state_dict":
        for k, v in list(obj.items())[:50]:
            sub = []
            parts[str(k)] = {
                "kind": _describe(v, torch, sub),
                "tensors": len(sub),
                "elements": sum(t.numel() for _, t in sub),
                "module_prefixed": _module_prefixed(sub),
            }
    dtypes = Counter(str(t.dtype).replace("torch.", "") for _, t in tensors)
    largest = sorted(tensors, key=lambda kt: -kt[1].numel())[:SAMPLE_TENSORS]
    return {
        "kind": top,
        "python_type": type(obj).__module__ + "." + type(obj).__qualname__,
        "parts": parts,
        "tensors": len(tensors),
        "elements": sum(t.numel() for _, t in tensors),
        "module_prefixed": _module_prefixed(tensors),
        "bytes": sum(t.numel() * t.element_size() for _, t in tensors),
        "dtypes": dict(dtypes),
        "largest": [
            {
                "name": k,
                "dtype": str(t.dtype).replace("torch.", ""),
                "shape": list(t.shape),
                "numel": t.numel(),
            }
            for k, t in largest
        ],
        "saved_locations": dict(seen),
        "saved_bytes_by_location": dict(seen_bytes),
    }


def main(argv):
    path = argv[0]
    emit({"event": "hello", "pid": os.getpid(), "python": sys.executable})
    locate.prefer_installed_torch()
    info = stage("file", detect, path)
    if info is None:
        emit({"event": "done"})
        return 0
    kind = info["format"]
    if kind == "safetensors":
        stage("safetensors", safetensors_header, path)
    elif kind in ("torch-zip", "torch-legacy"):
        stage("pickle", pickle_facts, path, kind)
    if kind != "unknown" and stage("machine", machine) is not None and kind != "safetensors":
        stage("load", load_weights_only, path, kind)
    emit({"event": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
