"""extensions: what building a C++/CUDA extension would use, judged against the torch installed.

torch.utils.cpp_extension refuses an nvcc whose CUDA major differs from torch's ("The detected
CUDA version ... mismatches the version that was used to compile PyTorch"), warns on a minor
mismatch, needs ninja for ``load()``, and compiles for TORCH_CUDA_ARCH_LIST when it is set.
"""

from __future__ import annotations

import re
from typing import Any

from .. import archs
from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from .common import (
    Context,
    gpu_capabilities,
    install_wheel,
    python_cmd,
    torch_ok,
    torch_unavailable,
)

ID = "extensions"
TITLE = "C++/CUDA extension builds"
ORDER = 150  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"


def _mm(release: str | None) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def compiler_problems(tc: dict[str, Any], facts: Facts) -> tuple[list[str], list[Remedy]]:
    warns, remedies = [], []
    cxx, ninja = tc.get("cxx") or {}, tc.get("ninja") or {}
    if not cxx.get("path") or not cxx.get("ok", True):
        warns.append(f"no working C++ compiler ({cxx.get('name', 'c++')}): extensions and "
                     "torch.compile's CPU backend cannot build")  # fmt: skip
        mac = dig(facts, "platform.system") == "Darwin"
        remedies.append(
            Remedy(
                "Install a C++ compiler (or point CXX at one).",
                ("xcode-select --install",) if mac else ("sudo apt-get install -y g++",),
            )
        )
    if not ninja.get("path"):
        warns.append("ninja is missing: torch.utils.cpp_extension.load() refuses to build")
        remedies.append(Remedy("Install ninja.", (f"{python_cmd(facts)} install ninja",)))
    return warns, remedies


def toolkit_for(tc: dict[str, Any], want: tuple[int, int]) -> str | None:
    """An installed toolkit directory with the wanted major (the exact release preferred)."""
    kits = [k for k in tc.get("toolkits", []) if _mm(k.get("release")) and k.get("has_headers")]
    exact = [k for k in kits if _mm(k["release"]) == want]
    same = [k for k in kits if _mm(k["release"])[0] == want[0]]
    return (exact or same or [{}])[0].get("path")


def variant_for_nvcc(facts: Facts, nvcc: tuple[int, int]) -> compat.WheelChoice | None:
    """A wheel built for nvcc's CUDA major (torch refuses only a major mismatch) that this
    driver runs and that covers these GPUs: chosen by the same rule as every other fix, among
    the variants of nvcc's major, nearest minor first."""
    caps = gpu_capabilities(facts)
    version = dig(facts, "torch.version")
    driver = dig(facts, "nvml.driver_version")
    release = compat.torch_minor(version)
    variants = compat.TORCH_CUDA_VARIANTS.get(release or "", ())
    same_major = [v for v in variants if compat.parse_version(compat.variant_cuda(v))[0] == nvcc[0]]
    by_nearness = sorted(
        reversed(same_major),
        key=lambda v: abs(compat.parse_version(compat.variant_cuda(v))[1] - nvcc[1]),
    )
    for variant in by_nearness:
        support = (
            compat.driver_support(driver, compat.variant_cuda(variant)) if driver else "unknown"
        )
        if support in ("full", "minor_compat", "unknown") and all(
            compat.covers(release, variant, c) for c in caps
        ):
            return compat.WheelChoice(release, variant, support)
    return None


def arch_list_problem(facts: Facts) -> tuple[str, Remedy] | None:
    value = dig(facts, "env.TORCH_CUDA_ARCH_LIST")
    if not value:
        return None
    flags: list[str] = []
    for entry in re.split(r"[;\s]+", value.strip()):
        m = re.fullmatch(r"(\d+)\.(\d+)([af]?)(\+PTX)?", entry)
        if not m:
            continue  # named arches ("Ampere") are expanded by torch; not judged here
        flags.append(f"sm_{m.group(1)}{m.group(2)}{m.group(3)}")
        if m.group(4):
            flags.append(f"compute_{m.group(1)}{m.group(2)}")
    devices = dig(facts, "torch.cuda.devices", []) or dig(facts, "nvml.devices", [])
    caps = sorted({tuple(d["capability"]) for d in devices if d.get("capability")})
    missing = [c for c in caps if archs.coverage(c, flags) == "none"]
    if not flags or not missing:
        return None
    want = ";".join(archs.fmt(c) for c in caps)
    return (
        f"TORCH_CUDA_ARCH_LIST={value!r} does not cover this machine's GPU capability "
        f"{', '.join(archs.fmt(c) for c in missing)}: kernels built with it fail with 'no kernel "
        f"image is available'",
        Remedy(
            "Build for the GPUs that will run the extension.",
            (f'export TORCH_CUDA_ARCH_LIST="{want}"',),
        ),
    )


def cuda_problems(tc: dict[str, Any], facts: Facts) -> tuple[list[str], list[str], list[Remedy]]:
    fails, warns, remedies = [], [], []
    torch_cuda = _mm(dig(facts, "torch.build.cuda"))
    nvcc = _mm(dig(tc, "nvcc.release"))
    home = tc.get("cuda_home") or {}
    if torch_cuda and nvcc and nvcc != torch_cuda:
        t, n = archs.fmt(torch_cuda), archs.fmt(nvcc)
        kit = toolkit_for(tc, torch_cuda)
        cmds = (
            (f"export CUDA_HOME={kit}", 'export PATH="$CUDA_HOME/bin:$PATH"')
            if kit
            else (
                f"conda install -c nvidia cuda-toolkit={t}",
                f"sudo apt-get install -y cuda-toolkit-{t.replace('.', '-')}",
            )
        )
        remedies.append(
            Remedy(
                f"Build with a CUDA {t} toolkit, the one torch was compiled with (conda, or "
                "NVIDIA's apt repository on Debian/Ubuntu).",
                cmds,
            )
        )
        choice = variant_for_nvcc(facts, nvcc)
        if choice and nvcc[0] != torch_cuda[0]:
            remedies.append(
                install_wheel(
                    facts,
                    choice,
                    f"Or install a torch built for CUDA {nvcc[0]}.x, which nvcc {n} can build for.",
                )
            )
        message = f"nvcc {n} ({home.get('path')}) but torch was built with CUDA {t}"
        if nvcc[0] != torch_cuda[0]:
            fails.append(message + ": extension builds fail (major versions differ)")
        else:
            warns.append(message + ": minor versions differ (usually works; torch warns)")
    if nvcc and home.get("path") and home.get("has_headers") is False:
        kit = toolkit_for(tc, torch_cuda or nvcc)
        warns.append(
            f"CUDA_HOME resolves to {home['path']} ({home.get('source')}), which has no "
            f"include/cuda_runtime.h: extension builds will not find CUDA headers"
        )
        remedies.append(
            Remedy(
                "Point CUDA_HOME at the toolkit itself.",
                (f"export CUDA_HOME={kit or '/usr/local/cuda'}",),
            )
        )
    arch = arch_list_problem(facts)
    if arch:
        warns.append(arch[0])
        remedies.append(arch[1])
    return fails, warns, remedies


def check(facts: Facts, ctx: Context) -> Verdict:
    tc = dig(facts, "toolchain")
    if not tc:
        return verdict(Status.SKIP, "these facts were recorded without the extension toolchain")
    if tc.get("status") != "ok":
        return verdict(Status.ERROR, f"toolchain facts: {tc.get('error', tc.get('status'))}", tc)
    if not torch_ok(facts):
        return torch_unavailable(facts)
    variant = dig(facts, "torch.build.variant")
    nvcc = dig(tc, "nvcc.release") if dig(tc, "nvcc.ok") else None
    cxx = dig(tc, "cxx.path") and f"{dig(tc, 'cxx.name')} {dig(tc, 'cxx.version')}"
    details = {"toolchain": tc, "torch_cuda": dig(facts, "torch.build.cuda"), "variant": variant}
    warns, remedies = compiler_problems(tc, facts)
    fails: list[str] = []
    toolkit = f"nvcc {nvcc} ({dig(tc, 'cuda_home.path')}, {dig(tc, 'cuda_home.source')})"
    if variant == "cpu":
        if not nvcc:
            return verdict(
                Status.SKIP,
                f"CPU build of torch and no CUDA toolkit: only C++ extensions "
                f"({cxx or 'no C++ compiler'})",
                details,
            )
        summary = (
            f"{toolkit} cannot build CUDA extensions for this CPU build of torch (no CUDA in torch); "
            f"C++ extensions: {cxx or 'no compiler'}"
        )
        if ctx.expect == "cuda":
            warns.append(summary)
            choice = variant_for_nvcc(facts, _mm(nvcc))
            remedies.append(
                install_wheel(facts, choice, f"Install the torch built for CUDA {nvcc}.")
                if choice
                else Remedy(
                    f"No wheel of this torch release for CUDA {nvcc} runs on this driver and these "
                    "GPUs: install the CUDA build that cuda.available names, and a matching toolkit."
                )
            )
        elif not warns:
            return verdict(Status.PASS, summary, details)
    elif variant == "cuda":
        if not nvcc:
            return verdict(
                Status.SKIP,
                f"no CUDA toolkit (nvcc): prebuilt wheels need none; building CUDA extensions "
                f"needs toolkit {dig(facts, 'torch.build.cuda')}",
                details,
            )
        cfails, cwarns, crem = cuda_problems(tc, facts)
        fails, warns, remedies = cfails, cwarns + warns, crem + remedies
        if not fails and not warns:
            return verdict(
                Status.PASS,
                f"{toolkit} matches torch's CUDA {dig(facts, 'torch.build.cuda')}; {cxx}, "
                f"ninja {dig(tc, 'ninja.version')}",
                details,
            )
    elif variant == "rocm" and not tc.get("rocm_home"):
        return verdict(
            Status.SKIP, "no ROCm toolkit (hipcc) found: only needed to build extensions", details
        )
    if fails or warns:
        return verdict(
            Status.FAIL if fails else Status.WARN, "; ".join(fails + warns), details, remedies
        )
    return verdict(
        Status.PASS, f"{variant} build; {cxx}, ninja {dig(tc, 'ninja.version')}", details
    )
