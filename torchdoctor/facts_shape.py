"""The shape of a facts record, checked whenever one is read from a file (untrusted input).

One definition (``SHAPE``) says what type each known field has; ``problem(facts)`` walks a record
against it and names the first field that does not fit, e.g. "field 'torch.version' must be a
string, got list". Checks and renderers may then trust every type they read.

Rules, chosen to match what the gatherers write:
- a field may be absent (older facts, another platform), and unknown fields are kept unchecked
  (newer torchdoctor versions add fields within a facts version);
- a scalar field may be null: the probes write null for "could not be read", and checks read
  through ``dig`` which treats null as absent;
- objects and lists are never null: checks iterate and index them directly.

Walking only the known shape (never the whole document) keeps this cheap: it visits a few
hundred values of a facts record.
"""

from __future__ import annotations

import re
from typing import Any

# Nesting deeper than this is no torchdoctor record (ours are < 10 deep), and unbounded depth
# would exhaust the recursion limit of anything that walks the document (redact, json.dumps).
MAX_DEPTH = 40


class Map:
    """An object whose keys are data (device names, package names), each value of one shape."""

    def __init__(self, value: Any) -> None:
        self.value = value


class Req:
    """A field the checks index directly: when its object is there, it must be, and not null."""

    def __init__(self, shape: Any) -> None:
        self.shape = shape


class Match:
    """A string the checks parse (a version): it must start like ``pattern``."""

    def __init__(self, pattern: str, example: str) -> None:
        self.regex = re.compile(pattern)
        self.example = example


class Len:
    """A list of exactly ``n`` items (a compute capability is [major, minor])."""

    def __init__(self, shape: list, n: int) -> None:
        self.shape, self.n = shape, n


Num = (int, float)  # JSON has one number type: 3 and 3.0 are both valid for a number field
Str, Int, Bool = str, int, bool
CAPABILITY = Len([Int], 2)
MAJOR_MINOR = Match(r"\d+\.\d+", "12.4")  # CUDA versions the checks compare
STRS = [Str]
# probe error records (torch.error, torch.stage_errors.*)
ERROR = {"type": Str, "message": Str, "traceback": Str}
# /dev/kfd, /dev/dri/renderD* (ROCm and XPU device node checks)
NODE = {
    "path": Str, "exists": Bool, "char_device": Bool, "group": Str, "mode": Str, "rw": Bool,
    "error": Str,
}  # fmt: skip
NODES = {"uid": Int, "groups": STRS, "kfd": NODE, "render": [NODE]}
TOOL = {
    "path": Str, "name": Str, "ok": Bool, "exists": Bool, "output": Str, "returncode": Int,
    "version": Str, "release": Str,
}  # fmt: skip
DTYPE_RESULT = {
    "ok": Bool, "ms": Num, "tolerance": Num, "matmul_rel_err": Num, "conv2d_rel_err": Num,
}  # fmt: skip

SHAPE: dict[str, Any] = {
    "facts_version": Int,
    "collected": {
        "at": Str, "torchdoctor_version": Str, "python": Str, "duration_s": Num,
        "constructed_by": Str,
    },
    "env": Map(Str),
    "nvml": {
        "status": Str, "error": Str, "driver_version": Match(r"\d+", "580.65.06"), "cuda_driver_version": Int,
        "device_count": Int,
        "devices": [{
            "index": Req(Int), "name": Str, "uuid": Str, "serial": Str, "pci_bus_id": Str,
            "capability": CAPABILITY, "memory_total_bytes": Int, "memory_used_bytes": Int,
            "mig_mode": Int,
            "pcie": {"gen_current": Int, "gen_max": Int, "width_current": Int, "width_max": Int},
        }],
    },
    "host": {
        "cpu_count_logical": Int, "cpu_count_physical": Int, "cpu_affinity_count": Int,
        "memory_total_bytes": Int, "memory_available_bytes": Int,
        "cgroup": {"version": Int, "cpu_quota": Num, "memory_limit_bytes": Int},
        "nvidia": {"dev_nodes": STRS, "proc_driver_version": Str, "uvm_loaded": Bool},
    },
    "platform": {
        "system": Str, "release": Str, "machine": Str, "python_version": Req(Match(r"\d+\.\d+", "3.11.7")),
        "python_implementation": Str, "python_bits": Int, "executable": Str, "prefix": Str,
        "base_prefix": Str, "in_venv": Bool, "conda_prefix": Str, "wsl": Bool, "libc": Str,
        "mac_ver": Str, "rosetta": Bool, "user_site": Str, "user_site_enabled": Bool,
    },
    "packages": {
        "distributions": Map({"version": Req(Str), "location": Str, "requires": STRS}),
        "torch_distributions": [{"version": Str, "location": Str}],
        "nvidia_wheels": Map(Str),
        "cuda_sizes": Map(Num),
    },
    "torch": {
        "status": Str, "version": Str, "file": Str, "import_s": Num, "warnings": STRS,
        "error": ERROR,
        "stage_errors": Map(ERROR),
        "build": {
            "variant": Req(Str), "cuda": MAJOR_MINOR, "hip": Str, "cudnn": Int, "nccl": Str,
            "arch_list": STRS, "cpu_capability": Str, "git_version": Str, "num_threads": Int,
            "num_interop_threads": Int, "cxx11_abi": Bool, "debug": Bool, "distributed": Bool,
            "gloo_available": Bool, "nccl_available": Bool, "mkl": Bool, "mkldnn": Bool,
            "openmp": Bool, "mps_built": Bool, "xpu_built": Bool,
        },
        "cuda": {
            "available": Bool, "device_count": Int, "warnings": STRS,
            "devices": [{
                "index": Req(Int), "name": Str, "capability": CAPABILITY, "total_memory_bytes": Int,
                "multi_processor_count": Int, "uuid": Str, "gcn_arch_name": Str,
            }],
        },
        "cuda_init": {
            "init_s": Num,
            "memory": [{"index": Req(Int), "free_bytes": Int, "total_bytes": Int, "context_s": Num}],
        },
        "mps": {"available": Bool, "built": Bool},
        "rocm": {"hip": Str, "hsa_override_gfx_version": Str, "nodes": NODES},
        "xpu": {"available": Bool, "device_count": Int, "devices": [{}], "nodes": NODES},
        "libs": {
            "platform": Str, "torch_dir": Str, "maps_available": Bool, "config": STRS,
            "cudnn": {"compiled": [Int], "runtime": [Int]},
            "loaded": [{
                "path": Req(Str), "realpath": Str, "component": Str, "origin": Str, "version": Str,
                "wheel": Str,
            }],
            "ld_preload": [{"path": Str, "component": Str}],
            "ld_library_path": [{"dir": Req(Str), "real": Str, "exists": Bool, "libs": STRS}],
            "nvidia_wheel_files": Map({"libs": Int, "missing": STRS, "version": Str}),
        },
    },
    "smoke": {
        "enabled": Bool, "ran": Bool, "reason": Str, "size": Str, "reruns": Int,
        "planned": STRS,
        "devices": Map({
            "device": Str,
            "compute": {"ok": Bool, "dtypes": Map(DTYPE_RESULT)},
            "transfer": {
                "h2d_pinned_gbps": Req(Num), "h2d_pageable_gbps": Req(Num),
                "d2h_pinned_gbps": Req(Num), "d2h_pageable_gbps": Req(Num), "roundtrip_pinned_exact": Bool,
                "roundtrip_pageable_exact": Bool, "sizes": {},
            },
            "memory": {
                "block_mib": Req(Num), "returned_mib": Req(Num), "sync_us": Req(Num),
                "empty_cache_us": Num,
            },
        }),
        "failures": Map({"kind": Str, "type": Str, "message": Str}),
        "peers": Map({}),
    },
    "probe": {
        "torch": {
            "status": Str, "message": Str, "unfinished_stage": Str, "phase": Str,
            "returncode": Int, "signal": Str, "stderr_tail": Str, "garbage_lines": Int,
            "duration_s": Num, "stage_durations": Map(Num),
        },
    },
    "toolchain": {
        "status": Str, "nvcc": TOOL, "cxx": TOOL, "ninja": TOOL,
        "cuda_home": {"path": Str, "source": Str, "exists": Bool, "has_headers": Bool},
        "rocm_home": Str,
        "toolkits": [{"path": Str, "release": Req(MAJOR_MINOR), "has_headers": Bool}],
    },
    "interpreter": {
        "python": Str, "source": Str, "reason": Str, "own": Str, "note": Str,
        "candidates": [{"source": Str, "python": Str, "torch": Str}],
    },
    "container": {
        "detected": Bool, "kind": Str, "engine": Str,
        "evidence": [{"source": Str, "kind": Str}],
        "shm": {
            "path": Str, "exists": Bool, "mounted": Bool, "fs_type": Str, "source": Str,
            "size_bytes": Int, "free_bytes": Int,
        },
        "nvidia": {"driver_libs": Map(Str), "nvidia_smi": Str},
    },
}  # fmt: skip

_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer"}


def type_name(value: Any) -> str:
    """JSON's name for a value's type, as the user sees it in the file."""
    if value is None:
        return "null"
    for t, name in (
        (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
        (list, "list"), (dict, "object"),
    ):  # fmt: skip
        if isinstance(value, t):
            return name
    return type(value).__name__


def _expected(shape: Any) -> str:
    if shape == Num:
        return "a number"
    if isinstance(shape, (dict, Map)):
        return "an object"
    if isinstance(shape, list):
        return "a list"
    return _NAMES[shape]


def _fits(value: Any, shape: Any, nullable: bool) -> bool:
    if isinstance(shape, (dict, Map)):
        return isinstance(value, dict)
    if isinstance(shape, list):
        return isinstance(value, list)
    if value is None:
        return nullable  # a scalar field that could not be read; never a null list item
    if isinstance(value, bool):  # bool is an int in Python, never in JSON
        return shape is bool
    return isinstance(value, shape)


def _check(value: Any, shape: Any, where: str, nullable: bool = True) -> str | None:
    if isinstance(shape, Req):
        shape, nullable = shape.shape, False
    if isinstance(shape, Match):
        if value is None and nullable:
            return None
        if not isinstance(value, str) or not shape.regex.match(value):
            got = repr(value)[:40] if isinstance(value, str) else type_name(value)
            return f"field {where!r} must be a version like {shape.example!r}, got {got}"
        return None
    if isinstance(shape, Len):
        if isinstance(value, list) and len(value) != shape.n:
            return f"field {where!r} must hold {shape.n} items, got {len(value)}"
        shape = shape.shape
    if not _fits(value, shape, nullable):
        return f"field {where!r} must be {_expected(shape)}, got {type_name(value)}"
    if isinstance(shape, dict):
        for key, sub in shape.items():
            if key in value:
                if bad := _check(value[key], sub, _join(where, key)):
                    return bad
            elif isinstance(sub, Req):
                return f"field {_join(where, key)!r} is missing"
    elif isinstance(shape, Map):
        for key, item in value.items():
            if bad := _check(item, shape.value, _join(where, key)):
                return bad
    elif isinstance(shape, list) and shape:
        for i, item in enumerate(value):
            if bad := _check(item, shape[0], f"{where}[{i}]", nullable=False):
                return bad
    return None


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Is any container nested more than ``limit`` deep? (Iterative: no recursion to exhaust.)"""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False


def problem(facts: dict[str, Any]) -> str | None:
    """The first field of ``facts`` that does not fit SHAPE, as one line; None when all fit."""
    return _check(facts, SHAPE, "")
