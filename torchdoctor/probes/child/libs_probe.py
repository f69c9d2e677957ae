"""Which shared libraries torch really loaded, and where from (part of the torch probe).

Standard library only: it runs inside the torch probe under the diagnosed interpreter. The map of
the running process (``/proc/self/maps``) is the truth that ``collect_env`` does not give: it
reports the system cuDNN, while a process may have loaded the one in ``site-packages/nvidia`` or,
worse, a system CUDA found through ``LD_LIBRARY_PATH`` that shadows the wheel's.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys

# Component -> basename pattern. Only these are recorded: the libraries whose origin matters.
COMPONENTS = (
    ("torch", r"lib(torch|torch_cpu|torch_cuda|torch_hip|torch_xpu|torch_python|c10|c10_cuda)\.so"),
    ("cuda_driver", r"libcuda\.so"),
    ("cudart", r"libcudart\.so"),
    ("cublas", r"libcublas(Lt)?\.so"),
    ("cudnn", r"libcudnn(_[a-z_]+)?\.so"),
    ("nccl", r"libnccl\.so"),
    ("nvrtc", r"libnvrtc(-builtins)?\.so"),
    ("nvjitlink", r"libnvJitLink\.so"),
    ("cusparse", r"libcusparse(Lt)?\.so"),
    ("cufft", r"libcufft\.so"),
    ("curand", r"libcurand\.so"),
    ("cusolver", r"libcusolver\.so"),
    ("cupti", r"libcupti\.so"),
    ("nvshmem", r"libnvshmem[a-z_]*\.so"),
    ("mkl", r"libmkl_[a-z0-9_]+\.so"),
    ("openmp", r"lib(gomp|iomp5|omp)(-[0-9a-f]+)?\.so"),
    ("hip", r"lib(amdhip64|hsa-runtime64)\.so"),
    ("miopen", r"libMIOpen\.so"),
    ("rccl", r"librccl\.so"),
    ("rocblas", r"lib(rocblas|hipblas|hipblaslt)\.so"),
    ("sycl", r"lib(sycl|ze_loader)\.so"),
)
_PATTERNS = [(name, re.compile(rf"^{pat}")) for name, pat in COMPONENTS]
_SOVERSION = re.compile(r"\.so\.([0-9][0-9.]*)$")


def component(path: str) -> str | None:
    base = os.path.basename(path)
    for name, pattern in _PATTERNS:
        if pattern.match(base):
            return name
    return None


def mapped_paths(maps_text: str) -> list[str]:
    """Unique file paths of shared objects in a ``/proc/PID/maps`` text, in load order."""
    seen: dict[str, None] = {}
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
            path = parts[5]
            if path.endswith(" (deleted)"):  # replaced on disk since it was loaded
                path = path[: -len(" (deleted)")]
            seen.setdefault(path, None)
    return list(seen)


def soversion(path: str) -> str | None:
    """``libcudart.so.12.1.105`` -> ``12.1.105`` (of the file the link resolves to)."""
    for candidate in (os.path.realpath(path), path):
        m = _SOVERSION.search(os.path.basename(candidate))
        if m:
            return m.group(1)
    return None


def origin(path: str, torch_dir: str) -> str:
    """``torch`` (torch/lib), ``wheel`` (another package in site-packages, e.g. nvidia-*), or
    ``system`` (anything else: /usr, /usr/local/cuda, a conda env's lib)."""
    if torch_dir and path.startswith(torch_dir + os.sep):
        return "torch"
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return "wheel"
    return "system"


def wheel_files() -> tuple[dict[str, dict], dict[str, str]]:
    """Per installed ``nvidia-*`` distribution: its shared libraries listed in RECORD and those
    missing on disk (a half-uninstalled wheel); and a file path -> ``name==version`` index."""
    from importlib import metadata

    wheels: dict[str, dict] = {}
    owner: dict[str, str] = {}
    for dist in metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower().replace("_", "-")
        if not name.startswith("nvidia-") or name in wheels:
            continue
        libs, missing = 0, []
        for f in dist.files or ():
            if ".so" not in f.name:
                continue
            libs += 1
            path = os.path.realpath(str(dist.locate_file(f)))
            owner[path] = f"{name}=={dist.version}"
            if not os.path.exists(path):
                missing.append(str(f))
        wheels[name] = {"version": dist.version, "libs": libs, "missing": missing[:10]}
    return wheels, owner


def search_path_libs(value: str | None) -> list[dict]:
    """For each entry of a search path (LD_LIBRARY_PATH): which tracked libraries it holds."""
    out = []
    for entry in (value or "").split(os.pathsep):
        if not entry:
            continue
        try:
            names = sorted(n for n in os.listdir(entry) if ".so" in n and component(n))
        except OSError:
            names = []
        # The map names files by their resolved path (lib64 -> targets/x86_64-linux/lib).
        real = os.path.realpath(entry)
        out.append({"dir": entry, "real": real, "exists": os.path.isdir(entry), "libs": names})
    return out


def _config_lines(torch) -> list[str]:
    """The lines of ``torch.__config__.show()`` naming MKL, oneDNN and OpenMP: on the CPU wheels
    they are linked statically (MKL, oneDNN), so no separate library appears in the map."""
    try:
        text = torch.__config__.show()
    except Exception:  # noqa: BLE001 - an odd build without the config text
        return []
    keys = ("Math Kernel Library", "MKL-DNN", "oneDNN", "OpenMP", "LAPACK is")
    return [line.strip(" -") for line in text.splitlines() if any(k in line for k in keys)][:8]


def _cudnn_versions(torch) -> dict:
    cudnn = getattr(torch._C, "_cudnn", None)
    if cudnn is None:
        return {}
    out = {}
    for key, fn in (("compiled", "getCompileVersion"), ("runtime", "getRuntimeVersion")):
        try:
            out[key] = list(getattr(cudnn, fn)())
        except Exception:  # noqa: BLE001 - recorded as absent
            out[key] = None
    return out


def libs_facts() -> dict:
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    # Touching cuDNN loads it (torch loads it lazily); cudnn.version() needs no device.
    if getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None):
        with contextlib.suppress(Exception):  # a broken cuDNN shows up in map and versions
            torch.backends.cudnn.version()
    wheels, owner = wheel_files()
    facts: dict = {
        "platform": sys.platform,
        "torch_dir": torch_dir,
        "maps_available": False,
        "loaded": [],
        "ld_library_path": search_path_libs(os.environ.get("LD_LIBRARY_PATH")),
        "ld_preload": [
            {"path": p, "component": component(p)}
            for p in re.split(r"[\s:]+", os.environ.get("LD_PRELOAD", ""))
            if p
        ],
        "nvidia_wheel_files": wheels,
        "config": _config_lines(torch),
        "cudnn": _cudnn_versions(torch),
    }
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            maps = fh.read()
    except OSError:
        return facts  # not Linux: no process map to read
    facts["maps_available"] = True
    for path in mapped_paths(maps):
        name = component(path)
        if name is None:
            continue
        real = os.path.realpath(path)
        facts["loaded"].append(
            {
                "component": name,
                "path": path,
                "realpath": real if real != path else None,
                "version": soversion(path),
                "origin": origin(path, torch_dir),
                "wheel": owner.get(real),
            }
        )
    return facts
