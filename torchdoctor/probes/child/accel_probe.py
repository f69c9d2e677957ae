"""ROCm and Intel XPU facts (part of the torch probe; standard library only).

On ROCm, torch's ``torch.cuda`` API drives HIP devices: the ``cuda`` stage already records each
device's ``gcnArchName``, and the build stage the compiled targets. What is left is the device
nodes a HIP process needs (``/dev/kfd``, ``/dev/dri/renderD*``) and who may open them.
"""

from __future__ import annotations

import os
import stat


def _group_name(gid: int) -> str:
    try:
        import grp

        return grp.getgrgid(gid).gr_name
    except (ImportError, KeyError):
        return str(gid)


def _node(path: str) -> dict:
    try:
        st = os.stat(path)
    except OSError as exc:
        return {"path": path, "exists": False, "error": exc.strerror}
    return {
        "path": path,
        "exists": True,
        "char_device": stat.S_ISCHR(st.st_mode),
        "group": _group_name(st.st_gid),
        "mode": oct(st.st_mode & 0o777),
        "rw": os.access(path, os.R_OK | os.W_OK),
    }


def device_nodes(dev: str = "/dev") -> dict:
    try:
        render = sorted(n for n in os.listdir(os.path.join(dev, "dri")) if n.startswith("render"))
    except OSError:
        render = []
    return {
        "kfd": _node(os.path.join(dev, "kfd")),
        "render": [_node(os.path.join(dev, "dri", n)) for n in render],
        "uid": os.getuid() if hasattr(os, "getuid") else None,
        "groups": sorted({_group_name(g) for g in os.getgroups()}),
    }


def rocm_facts() -> dict:
    import torch

    return {
        "hip": getattr(torch.version, "hip", None),
        "nodes": device_nodes(),
        "hsa_override_gfx_version": os.environ.get("HSA_OVERRIDE_GFX_VERSION"),
    }


def xpu_facts() -> dict:
    import torch

    xpu = torch.xpu
    available = bool(xpu.is_available())
    count = xpu.device_count() if available else 0
    devices = []
    for i in range(count):
        p = xpu.get_device_properties(i)
        devices.append(
            {
                "index": i,
                "name": getattr(p, "name", None),
                "driver_version": getattr(p, "driver_version", None),
                "total_memory_bytes": getattr(p, "total_memory", None),
            }
        )
    return {
        "available": available,
        "device_count": count,
        "devices": devices,
        "nodes": device_nodes(),
    }
