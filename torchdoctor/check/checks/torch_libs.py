"""torch.libs: the shared libraries torch really loaded, where from, and its nvidia-* wheel pins."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from .. import requirements
from ..record import Facts
from ..record.torch import LibraryPathDir, Libs, LoadedLib
from . import driver_state
from .common import (
    Context,
    grounded,
    probe_stuck,
    python_cmd,
    stage_error,
    torch_ok,
    torch_unavailable,
)

ID = "torch.libs"
TITLE = "Libraries torch loaded"
ORDER = 130  # position in the report: basic facts first, the smoke test last
# The problems it reports one by one, each its own finding id (torch.libs.<code>).
FINDINGS = {
    "nvidia-wheel-missing": "an nvidia-* wheel torch pins is not installed",
    "nvidia-wheel-broken": "an nvidia-* wheel torch pins is half-uninstalled",
    "nvidia-wheel-version": "an nvidia-* wheel at another version than torch pins",
    "nvidia-wheel-twin": "the same nvidia-* library for another CUDA major beside torch's pin",
    "ld-library-path": "a system CUDA library on LD_LIBRARY_PATH shadows the wheel's",
    "ld-preload": "a CUDA library forced into torch by LD_PRELOAD",
    "system-cuda-lib": "a CUDA library from the system path instead of torch's wheel",
    "forward-compat": "a forward-compatibility libcuda behind CUDA error 804 or 803",
    "cudnn-version": "the cuDNN loaded is not the one torch was compiled with",
}

# The CUDA libraries a pip wheel of torch brings in nvidia-* wheels (or in torch/lib).
CUDA_LIBS = {
    "cudart", "cublas", "cudnn", "nccl", "nvrtc", "nvjitlink", "cusparse", "cufft", "curand",
    "cusolver", "cupti", "nvshmem",
}  # fmt: skip


def required_pins(facts: Facts) -> dict[str, str]:
    """nvidia-* wheels torch's metadata pins (``name==version``) for this platform."""
    env = requirements.marker_env(
        facts.platform.system, facts.platform.machine, facts.platform.python_version
    )
    torch = facts.packages.distributions.get("torch")
    pins: dict[str, str] = {}
    for text in torch.requires if torch else []:
        req = requirements.parse(text)
        pinned = req and req.name.startswith("nvidia-") and req.pinned
        if pinned and requirements.applies(req.marker, env):
            pins[req.name] = req.pinned
    return pins


def _installed(facts: Facts) -> dict[str, str]:
    wheels = facts.packages.nvidia_wheels
    return {requirements.normalise(k): v for k, v in wheels.items()}


PIN_STATUS = {
    "nvidia-wheel-missing": Status.FAIL,
    "nvidia-wheel-broken": Status.FAIL,
    "nvidia-wheel-version": Status.WARN,
}


def _pin_state(facts: Facts, name: str, want: str, have: str | None) -> tuple[str, str] | None:
    """(code, problem) of one pinned nvidia-* wheel, None when it is installed and intact."""
    wheel = facts.torch.libs.nvidia_wheel_files.get(name)
    if have is None:
        return "nvidia-wheel-missing", f"{name}=={want} is required by torch but not installed"
    if have != want:
        return "nvidia-wheel-version", f"{name} {have} is installed; torch pins {want}"
    if wheel and wheel.missing:
        gone = len(wheel.missing)
        return (
            "nvidia-wheel-broken",
            f"{name} {have} is half-uninstalled: {gone} of its libraries are gone",
        )
    return None


def pin_problems(facts: Facts) -> list[Problem]:
    """torch's nvidia-* pins against what is installed and intact: a problem per kind, whose fix
    installs exactly the pins of that kind."""
    pins, installed = required_pins(facts), _installed(facts)
    found: dict[str, list[tuple[str, str]]] = {}  # code -> [(problem, name==pin)]
    for name, want in sorted(pins.items()):
        state = _pin_state(facts, name, want, installed.get(name))
        if state:
            found.setdefault(state[0], []).append((state[1], f"{name}=={want}"))
    pip = python_cmd(facts)
    return [
        Problem(
            code,
            PIN_STATUS[code],
            "; ".join(why for why, _ in items),
            [
                Remedy(
                    "Install exactly the nvidia-* wheels this torch was built against (its own "
                    "Requires-Dist pins); --no-deps leaves torch itself alone.",
                    (
                        f"{pip} install --force-reinstall --no-deps {' '.join(p for _, p in items)}",
                        f"{pip} check",
                    ),
                    evidence=grounded(
                        facts,
                        "packages.distributions.torch.requires",
                        *(f"packages.distributions.{p.split('==')[0]}" for _, p in items),
                        *(f"torch.libs.nvidia_wheel_files.{p.split('==')[0]}" for _, p in items),
                    ),
                )
            ],
        )
        for code, items in found.items()
    ]


_CUDA_MAJOR = re.compile(r"^(nvidia-[a-z0-9-]+?)-cu(\d+)$")


def twin_problems(facts: Facts) -> list[Problem]:
    """nvidia-nccl-cu11 beside the nvidia-nccl-cu12 torch pins (rwth-i6/returnn#1802): both
    unpack into site-packages/nvidia/<lib>/lib, so the file the loader takes may be the other
    major's (undefined symbol). The fix removes that distribution by name, then reinstalls the
    pinned one over the files it overwrote."""
    pins, installed = required_pins(facts), _installed(facts)
    twins: list[tuple[str, str, str]] = []  # (other, its version, pinned name==version)
    for name, want in sorted(pins.items()):
        match = _CUDA_MAJOR.match(name)
        for other, version in sorted(installed.items()):
            same = match and _CUDA_MAJOR.match(other)
            if same and same.group(1) == match.group(1) and other != name:
                twins.append((other, version, f"{name}=={want}"))
    if not twins:
        return []
    pip = python_cmd(facts)
    others = " ".join(sorted({o for o, _, _ in twins}))
    why = "; ".join(f"{o} {v} is installed beside torch's {p}" for o, v, p in twins)
    fix = Remedy(
        f"Uninstall {others}: it shares its library directory with the wheel torch pins, and "
        "the loader may take its file. Then reinstall the pinned wheel over it.",
        (
            f"{pip} uninstall -y {others}",
            f"{pip} install --force-reinstall --no-deps {' '.join(sorted({p for *_, p in twins}))}",
            f"{pip} check",
        ),
        evidence=grounded(
            facts,
            "packages.distributions.torch.requires",
            *(f"packages.nvidia_wheels.{o}" for o, _, _ in twins),
        ),
    )
    return [Problem("nvidia-wheel-twin", Status.FAIL, why, [fix])]


def _dirs(entries: list[LibraryPathDir]) -> set[str]:
    return {p.rstrip("/") for e in entries for p in (e.dir, e.real) if p}


def _drop_from_path(entries: list[LibraryPathDir], bad_dirs: set[str]) -> Remedy:
    keep = [e.dir for e in entries if e.dir not in bad_dirs]
    cmd = f"export LD_LIBRARY_PATH={':'.join(keep)}" if keep else "unset LD_LIBRARY_PATH"
    return Remedy(
        f"Drop {', '.join(sorted(bad_dirs))} from LD_LIBRARY_PATH for torch processes: a "
        "system CUDA there overrides the exact libraries torch was built and tested with "
        "(errors like 'undefined symbol ... libnvJitLink.so'). Fix the shell profile, "
        "module file or Dockerfile that sets it.",
        (cmd,),
        evidence=("torch.libs",),
    )


def shadowing(facts: Facts, wheel_build: bool) -> list[Problem]:
    """CUDA libraries loaded from the system on a build whose wheels ship them."""
    libs = facts.torch.libs
    ld_entries = libs.ld_library_path
    ld_dirs = _dirs(ld_entries)
    preload = {p.path for p in libs.ld_preload if p.component}
    preloaded: list[str] = []
    via_path: list[str] = []
    system: list[str] = []
    bad_dirs: set[str] = set()
    for lib in libs.loaded:
        if lib.component not in CUDA_LIBS or lib.origin != "system":
            continue
        where = os.path.dirname(lib.path)
        what = f"{os.path.basename(lib.path)} from {where}"
        if lib.path in preload:
            preloaded.append(f"{what} is forced by LD_PRELOAD")
        elif where in ld_dirs:
            bad_dirs.update(e.dir for e in ld_entries if where in _dirs([e]))
            via_path.append(f"{what} (LD_LIBRARY_PATH) shadows the one torch's wheels ship")
        elif wheel_build:
            system.append(f"{what} (system library path) is used instead of torch's wheel")
    preload_paths = tuple(f"torch.libs.ld_preload.{i}" for i in range(len(libs.ld_preload)))
    # LD_PRELOAD is unset only when it is set; otherwise the preload is /etc/ld.so.preload's.
    unpreload = (
        Remedy(
            "Do not preload CUDA libraries into torch processes.",
            ("unset LD_PRELOAD",),
            grounded(facts, "env.LD_PRELOAD", *preload_paths),
        )
        if "LD_PRELOAD" in facts.env
        else Remedy(
            "The preload does not come from LD_PRELOAD: remove the CUDA library from "
            "/etc/ld.so.preload (the system-wide preload list).",
            ("cat /etc/ld.so.preload",),
            grounded(facts, *preload_paths),
        )
    )
    find_system = Remedy(
        "Find which system directory provides them (ldconfig cache, a conda env) and make "
        "sure torch's own nvidia-* wheels are installed intact.",
        ("ldconfig -p | grep -E 'libcud|libnccl|libcublas|libnvJitLink'",),
        evidence=grounded(
            facts,
            "torch.libs.loaded",
            "torch.libs.ld_preload",
            "torch.libs.ld_library_path",
            "torch.libs.nvidia_wheel_files",
        ),
    )
    found = (
        ("ld-library-path", Status.FAIL, via_path, _drop_from_path(ld_entries, bad_dirs)),
        ("ld-preload", Status.FAIL, preloaded, unpreload),
        ("system-cuda-lib", Status.WARN, system, find_system),
    )
    return [Problem(code, st, "; ".join(why), [fix]) for code, st, why, fix in found if why]


def cudnn_problem(facts: Facts) -> Problem | None:
    compiled, runtime = facts.torch.libs.cudnn.compiled, facts.torch.libs.cudnn.runtime
    if not compiled or not runtime or compiled == runtime:
        return None
    c, r = ".".join(map(str, compiled)), ".".join(map(str, runtime))
    fix = Remedy(
        "Load the cuDNN torch was built with: reinstall its pinned nvidia-cudnn wheel and "
        "keep other cuDNN copies off LD_LIBRARY_PATH.",
        (f"{python_cmd(facts)} show -f torch | grep -i cudnn",),
        evidence=grounded(
            facts,
            "torch.libs.loaded",
            "torch.libs.ld_preload",
            "torch.libs.ld_library_path",
            "torch.libs.nvidia_wheel_files",
        ),
    )
    # torch's own rule (torch/backends/cudnn/__init__.py): same major, runtime minor >= compiled.
    if runtime[0] != compiled[0] or runtime[1:2] < compiled[1:2]:
        why = f"cuDNN {r} loaded but torch was compiled with {c}: incompatible"
        return Problem("cudnn-version", Status.FAIL, why, [fix])
    return Problem(
        "cudnn-version", Status.WARN, f"cuDNN {r} loaded, torch was compiled with {c}", [fix]
    )


def _forward_compat(facts: Facts) -> Problem | None:
    forward = driver_state.forward_compat_problem(facts)
    return Problem("forward-compat", Status.FAIL, forward[0], [forward[1]]) if forward else None


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


def by_directory(loaded: list[LoadedLib]) -> str:
    """'/…/torch/lib: libtorch_cpu.so libgomp.so.1; /usr/lib/…: libcuda.so.1' in load order."""
    groups: dict[str, list[str]] = {}
    for lib in loaded:
        groups.setdefault(os.path.dirname(lib.path), []).append(os.path.basename(lib.path))
    return "; ".join(f"{d}: {' '.join(names)}" for d, names in groups.items())


def _worst_first(problems: Sequence[Problem | None]) -> list[Problem]:
    """Failures before warnings, each kind in the order found (the summary reads that way)."""
    return sorted((p for p in problems if p), key=lambda p: -p.status.rank)


def _no_library_map(facts: Facts) -> Verdict:
    err = stage_error(facts, "libs")
    if err:
        return verdict(Status.ERROR, f"could not read the library map: {err.message}")
    probe = facts.probe.torch
    if probe.status not in (None, "ok"):
        where = probe.unfinished_stage or probe.status
        return verdict(Status.SKIP, f"the torch probe stopped ({where}) before the library map")
    return verdict(Status.SKIP, "these facts were recorded without the library map")


def _loaded_summary(libs: Libs, static: list[str]) -> str:
    parts = [by_directory(libs.loaded)] if libs.loaded else []
    if static:
        parts.append(", ".join(static) + " linked statically")
    if not libs.maps_available:
        parts.insert(0, f"no process map on {libs.platform}")
    return "; ".join(parts) or "no tracked libraries loaded"


def check(facts: Facts, ctx: Context) -> Verdict:
    pins = [*twin_problems(facts), *pin_problems(facts)]
    if not torch_ok(facts):
        if pins:
            details = {"required": required_pins(facts), "installed": _installed(facts)}
            return from_problems(_worst_first(pins), details, "")
        return torch_unavailable(facts)
    stuck = probe_stuck(facts, ("libs",))
    if stuck:
        return stuck
    libs = facts.torch.libs
    if not libs:
        return _no_library_map(facts)
    wheel_build = bool(required_pins(facts)) or any(
        lib.origin in ("torch", "wheel") and lib.component in CUDA_LIBS for lib in libs.loaded
    )
    found = [*pins, *shadowing(facts, wheel_build), _forward_compat(facts), cudnn_problem(facts)]
    static = static_components(libs.config)
    details = {
        "loaded": [lib.raw for lib in libs.loaded],
        "static": static,
        "ld_library_path": [e.raw for e in libs.ld_library_path],
        "ld_preload": [p.raw for p in libs.ld_preload],
        "required_pins": required_pins(facts),
        "cudnn": libs.cudnn.raw,
    }
    return from_problems(_worst_first(found), details, _loaded_summary(libs, static))
