"""What building a C++/CUDA extension would use: CUDA_HOME and its nvcc, the host compiler, ninja.

Gathered in the parent (no torch needed), beside the torch probe. CUDA_HOME is resolved exactly
as ``torch.utils.cpp_extension._find_cuda_home`` does (torch 2.13): ``CUDA_HOME`` or
``CUDA_PATH``, else the directory above the ``bin/`` of the first ``nvcc`` on ``PATH`` (not
resolving links or wrapper scripts), else ``/usr/local/cuda`` if it exists. Every command runs
without a shell and with a short timeout.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

TIMEOUT_S = 5.0
_NVCC_RELEASE = re.compile(r"release (\d+)\.(\d+), V([\d.]+)")
_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def run_version(argv: list[str], timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """``argv`` (a ``--version`` call): its first output lines, or why it could not run."""
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"no answer within {timeout_s:.0f} s"}
    except OSError as exc:
        return {"ok": False, "error": exc.strerror or str(exc)}
    text = (proc.stdout or proc.stderr or "").strip()
    return {"ok": proc.returncode == 0, "returncode": proc.returncode, "output": text[-600:]}


def resolve_cuda_home(
    environ: Mapping[str, str], which: Callable[[str], str | None], exists: Callable[[str], bool]
) -> tuple[str | None, str]:
    """(CUDA_HOME, how it was found) as torch.utils.cpp_extension finds it."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(var):
            return environ[var], var
    nvcc = which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(nvcc)), f"nvcc on PATH ({nvcc})"
    if exists("/usr/local/cuda"):
        return "/usr/local/cuda", "default /usr/local/cuda"
    return None, "not found"


def nvcc_facts(cuda_home: str) -> dict[str, Any]:
    path = os.path.join(cuda_home, "bin", "nvcc")
    facts: dict[str, Any] = {"path": path, "exists": os.path.exists(path)}
    if facts["exists"]:
        facts.update(run_version([path, "--version"]))
        m = _NVCC_RELEASE.search(facts.get("output", ""))
        facts["output"] = m.group(0) if m else facts.get("output", "")[-200:]
        if m:
            facts["release"] = f"{m.group(1)}.{m.group(2)}"
            facts["version"] = m.group(3)
    return facts


def installed_toolkits(pattern: str = "/usr/local/cuda-*") -> list[dict[str, Any]]:
    """Versioned toolkits side by side (``/usr/local/cuda-12.1``): candidates for CUDA_HOME."""
    out = []
    for d in sorted(glob.glob(pattern)):
        if os.path.exists(os.path.join(d, "bin", "nvcc")):
            m = re.search(r"cuda-(\d+\.\d+)$", d)
            out.append(
                {
                    "path": d,
                    "release": m.group(1) if m else None,
                    "has_headers": os.path.exists(os.path.join(d, "include", "cuda_runtime.h")),
                }
            )
    return out


def tool(name: str, which: Callable[[str], str | None]) -> dict[str, Any]:
    path = which(name)
    facts: dict[str, Any] = {"name": name, "path": path}
    if path:
        facts.update(run_version([path, "--version"]))
        first = (facts.get("output") or "").splitlines()[:1]
        facts["output"] = first[0] if first else ""
        found = _VERSION.findall(first[0]) if first else []
        facts["version"] = found[-1] if found else None
    return facts


def gather(
    environ: Mapping[str, str] | None = None, which: Callable[[str], str | None] = shutil.which
) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    cuda_home, source = resolve_cuda_home(environ, which, os.path.exists)
    facts: dict[str, Any] = {
        "status": "ok",
        "cuda_home": {"path": cuda_home, "source": source},
        "toolkits": installed_toolkits(),
        # cpp_extension compiles with $CXX, else c++ (it checks the compiler ABI against torch's).
        "cxx": tool(environ.get("CXX") or "c++", which),
        "ninja": tool("ninja", which),
    }
    if cuda_home:
        facts["cuda_home"].update(
            exists=os.path.isdir(cuda_home),
            has_headers=os.path.exists(os.path.join(cuda_home, "include", "cuda_runtime.h")),
        )
        facts["nvcc"] = nvcc_facts(cuda_home)
    rocm_home = environ.get("ROCM_HOME") or environ.get("ROCM_PATH")
    hipcc = which("hipcc")
    if not rocm_home and hipcc:
        rocm_home = os.path.dirname(os.path.dirname(os.path.realpath(hipcc)))
    if not rocm_home and os.path.exists("/opt/rocm"):
        rocm_home = "/opt/rocm"
    facts["rocm_home"] = rocm_home
    return facts
