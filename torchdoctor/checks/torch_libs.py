"""torch.libs: the shared libraries torch really loaded, where from, and its nvidia-* wheel pins."""

from __future__ import annotations

import os
import re
from typing import Any

from .. import requirements
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from . import driver_state
from .common import Context, probe_stuck, python_cmd, stage_error, torch_ok, torch_unavailable

ID = "torch.libs"
TITLE = "Libraries torch loaded"
ORDER = 130  # position in the report: basic facts first, the smoke test last

# The CUDA libraries a pip wheel of torch brings in nvidia-* wheels (or in torch/lib).
CUDA_LIBS = {
    "cudart", "cublas", "cudnn", "nccl", "nvrtc", "nvjitlink", "cusparse", "cufft", "curand",
    "cusolver", "cupti", "nvshmem",
}  # fmt: skip


def required_pins(facts: Facts) -> dict[str, str]:
    """nvidia-* wheels torch's metadata pins (``name==version``) for this platform."""
    env = requirements.marker_env(
        dig(facts, "platform.system"),
        dig(facts, "platform.machine"),
        dig(facts, "platform.python_version"),
    )
    pins: dict[str, str] = {}
    for text in dig(facts, "packages.distributions.torch.requires", []):
        req = requirements.parse(text)
        pinned = req and req.name.startswith("nvidia-") and req.pinned
        if pinned and requirements.applies(req.marker, env):
            pins[req.name] = req.pinned
    return pins


def _installed(facts: Facts) -> dict[str, str]:
    wheels = dig(facts, "packages.nvidia_wheels", {})
    return {requirements.normalise(k): v for k, v in wheels.items()}


def pin_problems(facts: Facts) -> tuple[list[str], list[str], list[Remedy]]:
    """(failures, warnings, remedies) from torch's pins against what is installed and intact."""
    pins, installed = required_pins(facts), _installed(facts)
    files = dig(facts, "torch.libs.nvidia_wheel_files", {})
    pip = python_cmd(facts)
    fails: list[str] = []
    warns: list[str] = []
    fix: list[str] = []
    for name, want in sorted(pins.items()):
        have = installed.get(name)
        if have is None:
            fails.append(f"{name}=={want} is required by torch but not installed")
            fix.append(f"{name}=={want}")
        elif have != want:
            warns.append(f"{name} {have} is installed; torch pins {want}")
            fix.append(f"{name}=={want}")
        elif (files.get(name) or {}).get("missing"):
            gone = files[name]["missing"]
            fails.append(
                f"{name} {have} is half-uninstalled: {len(gone)} of its libraries are gone"
            )
            fix.append(f"{name}=={want}")
    remedies = []
    if fix:
        remedies.append(
            Remedy(
                "Install exactly the nvidia-* wheels this torch was built against (its own "
                "Requires-Dist pins); --no-deps leaves torch itself alone.",
                (f"{pip} install --force-reinstall --no-deps {' '.join(fix)}", f"{pip} check"),
            )
        )
    return fails, warns, remedies


def _dirs(entries: list[dict[str, Any]]) -> set[str]:
    return {p.rstrip("/") for e in entries for p in (e.get("dir"), e.get("real")) if p}


def shadowing(facts: Facts, wheel_build: bool) -> tuple[list[str], list[str], list[Remedy]]:
    """CUDA libraries loaded from the system on a build whose wheels ship them."""
    libs = dig(facts, "torch.libs", {})
    ld_entries = libs.get("ld_library_path", [])
    ld_dirs = _dirs(ld_entries)
    preload = {p["path"] for p in libs.get("ld_preload", []) if p.get("component")}
    fails, warns, bad_dirs = [], [], set()
    for lib in libs.get("loaded", []):
        if lib.get("component") not in CUDA_LIBS or lib.get("origin") != "system":
            continue
        where = os.path.dirname(lib["path"])
        what = f"{os.path.basename(lib['path'])} from {where}"
        if lib["path"] in preload:
            fails.append(f"{what} is forced by LD_PRELOAD")
        elif where in ld_dirs:
            bad_dirs.update(e["dir"] for e in ld_entries if where in _dirs([e]))
            fails.append(f"{what} (LD_LIBRARY_PATH) shadows the one torch's wheels ship")
        elif wheel_build:
            warns.append(f"{what} (system library path) is used instead of torch's wheel")
    remedies = []
    if bad_dirs:
        keep = [e["dir"] for e in ld_entries if e["dir"] not in bad_dirs]
        cmd = f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH"
        remedies.append(
            Remedy(
                f"Drop {', '.join(sorted(bad_dirs))} from LD_LIBRARY_PATH for torch processes: a "
                "system CUDA there overrides the exact libraries torch was built and tested with "
                "(errors like 'undefined symbol ... libnvJitLink.so'). Fix the shell profile, "
                "module file or Dockerfile that sets it.",
                (cmd,),
            )
        )
    if preload:
        remedies.append(
            Remedy("Do not preload CUDA libraries into torch processes.", ("unset LD_PRELOAD",))
        )
    if warns:
        remedies.append(
            Remedy(
                "Find which system directory provides them (ldconfig cache, a conda env) and make "
                "sure torch's own nvidia-* wheels are installed intact.",
                ("ldconfig -p | grep -E 'libcud|libnccl|libcublas|libnvJitLink'",),
            )
        )
    return fails, warns, remedies


def cudnn_problem(facts: Facts) -> tuple[Status, str] | None:
    v = dig(facts, "torch.libs.cudnn", {})
    compiled, runtime = v.get("compiled"), v.get("runtime")
    if not compiled or not runtime or compiled == runtime:
        return None
    c, r = ".".join(map(str, compiled)), ".".join(map(str, runtime))
    # torch's own rule (torch/backends/cudnn/__init__.py): same major, runtime minor >= compiled.
    if runtime[0] != compiled[0] or runtime[1] < compiled[1]:
        return Status.FAIL, f"cuDNN {r} loaded but torch was compiled with {c}: incompatible"
    return Status.WARN, f"cuDNN {r} loaded, torch was compiled with {c}"


def static_components(config: list[str]) -> list[str]:
    """'MKL 2024.2', 'oneDNN 3.12.0' from torch.__config__.show(): linked into libtorch_cpu, they
    never appear in the process map."""
    found = []
    for pattern, label in (
        (r"Math Kernel Library Version ([\d.]+)", "MKL"),
        (r"(?:MKL-DNN|oneDNN) v([\d.]+)", "oneDNN"),
    ):
        m = next((re.search(pattern, line) for line in config if re.search(pattern, line)), None)
        if m:
            found.append(f"{label} {m.group(1)}")
    return found


def by_directory(loaded: list[dict[str, Any]]) -> str:
    """'/…/torch/lib: libtorch_cpu.so libgomp.so.1; /usr/lib/…: libcuda.so.1' in load order."""
    groups: dict[str, list[str]] = {}
    for lib in loaded:
        groups.setdefault(os.path.dirname(lib["path"]), []).append(os.path.basename(lib["path"]))
    return "; ".join(f"{d}: {' '.join(names)}" for d, names in groups.items())


def check(facts: Facts, ctx: Context) -> Verdict:
    pin_fails, pin_warns, pin_fix = pin_problems(facts)
    if not torch_ok(facts):
        if pin_fails or pin_warns:
            return verdict(
                Status.FAIL if pin_fails else Status.WARN,
                "; ".join(pin_fails + pin_warns),
                {"required": required_pins(facts), "installed": _installed(facts)},
                pin_fix,
            )
        return torch_unavailable(facts)
    stuck = probe_stuck(facts, ("libs",))
    if stuck:
        return stuck
    libs = dig(facts, "torch.libs")
    if not libs:
        err = stage_error(facts, "libs")
        if err:
            return verdict(Status.ERROR, f"could not read the library map: {err.message}")
        probe = dig(facts, "probe.torch", {})
        if probe.get("status") not in (None, "ok"):
            where = probe.get("unfinished_stage") or probe.get("status")
            return verdict(Status.SKIP, f"the torch probe stopped ({where}) before the library map")
        return verdict(Status.SKIP, "these facts were recorded without the library map")
    loaded = libs.get("loaded", [])
    wheel_build = bool(required_pins(facts)) or any(
        lib.get("origin") in ("torch", "wheel") and lib.get("component") in CUDA_LIBS
        for lib in loaded
    )
    fails, warns, remedies = shadowing(facts, wheel_build)
    fails, warns, remedies = pin_fails + fails, pin_warns + warns, pin_fix + remedies
    forward = driver_state.forward_compat_problem(facts)
    if forward:
        fails.append(forward[0])
        remedies.append(forward[1])
    cudnn = cudnn_problem(facts)
    if cudnn:
        (fails if cudnn[0] == Status.FAIL else warns).append(cudnn[1])
        remedies.append(
            Remedy(
                "Load the cuDNN torch was built with: reinstall its pinned nvidia-cudnn wheel and "
                "keep other cuDNN copies off LD_LIBRARY_PATH.",
                (f"{python_cmd(facts)} show -f torch | grep -i cudnn",),
            )
        )
    static = static_components(libs.get("config", []))
    details = {
        "loaded": loaded,
        "static": static,
        "ld_library_path": libs.get("ld_library_path", []),
        "ld_preload": libs.get("ld_preload", []),
        "required_pins": required_pins(facts),
        "cudnn": libs.get("cudnn", {}),
    }
    if fails or warns:
        status = Status.FAIL if fails else Status.WARN
        return verdict(status, "; ".join(fails + warns), details, remedies)
    parts = [by_directory(loaded)] if loaded else []
    if static:
        parts.append(", ".join(static) + " linked statically")
    if not libs.get("maps_available"):
        parts.insert(0, f"no process map on {libs.get('platform')}")
    return verdict(Status.PASS, "; ".join(parts) or "no tracked libraries loaded", details)
