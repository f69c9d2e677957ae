"""extensions: what building a C++/CUDA extension would use, judged against the torch installed.

torch.utils.cpp_extension refuses an nvcc whose CUDA major differs from torch's ("The detected
CUDA version ... mismatches the version that was used to compile PyTorch"), warns on a minor
mismatch, needs ninja for ``load()``, and compiles for TORCH_CUDA_ARCH_LIST when it is set.
"""

from __future__ import annotations

import re
from typing import Any

from torchdoctor.data import archs, compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.toolchain import Toolchain
from .common import (
    Context,
    gpu_capabilities,
    gpu_paths,
    grounded,
    install_wheel,
    python_cmd,
    torch_ok,
    torch_unavailable,
    wheel_evidence,
)

ID = "extensions"
TITLE = "C++/CUDA extension builds"
ORDER = 150  # position in the report: basic facts first, the smoke test last
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"
# The problems it reports one by one, each its own finding id (extensions.<code>).
FINDINGS = {
    "no-compiler": "no working C++ compiler: extensions and torch.compile's CPU backend cannot build",
    "no-ninja": "ninja is missing: torch.utils.cpp_extension.load() refuses to build",
    "nvcc-major-mismatch": "nvcc's CUDA major differs from torch's: extension builds fail",
    "nvcc-minor-mismatch": "nvcc's CUDA minor differs from torch's: torch warns",
    "cuda-home-no-headers": "CUDA_HOME has no CUDA headers",
    "arch-list-uncovered": "TORCH_CUDA_ARCH_LIST does not cover this machine's GPUs",
    "toolkit-cpu-torch": "a CUDA toolkit beside a CPU build of torch, with CUDA expected",
}


def _mm(release: str | None) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def compiler_problems(tc: Toolchain, facts: Facts) -> list[Problem]:
    found = []
    if not tc.cxx.path or tc.cxx.ok is False:
        mac = facts.platform.system == "Darwin"
        found.append(
            Problem(
                "no-compiler",
                Status.WARN,
                f"no working C++ compiler ({tc.cxx.name or 'c++'}): extensions and "
                "torch.compile's CPU backend cannot build",
                [
                    Remedy(
                        "Install a C++ compiler (or point CXX at one).",
                        ("xcode-select --install",) if mac else ("sudo apt-get install -y g++",),
                        grounded(
                            facts, "toolchain.cxx.path", "toolchain.cxx.ok", "toolchain.cxx.name"
                        ),
                    )
                ],
            )
        )
    if not tc.ninja.path:
        why = "ninja is missing: torch.utils.cpp_extension.load() refuses to build"
        fix = Remedy(
            "Install ninja.",
            (f"{python_cmd(facts)} install ninja",),
            grounded(facts, "toolchain.ninja.path", "toolchain.ninja.exists", "toolchain.ninja"),
        )
        found.append(Problem("no-ninja", Status.WARN, why, [fix]))
    return found


def toolkit_for(tc: Toolchain, want: tuple[int, int]) -> str | None:
    """An installed toolkit directory with the wanted major (the exact release preferred)."""
    kits = [(mm, k.path) for k in tc.toolkits if k.has_headers and (mm := _mm(k.release))]
    exact = [path for mm, path in kits if mm == want]
    same = [path for mm, path in kits if mm[0] == want[0]]
    return (exact or same or [None])[0]


def variant_for_nvcc(facts: Facts, nvcc: tuple[int, int]) -> compat.WheelChoice | None:
    """A wheel built for nvcc's CUDA major (torch refuses only a major mismatch) that this
    driver runs and that covers these GPUs: chosen by the same rule as every other fix, among
    the variants of nvcc's major, nearest minor first."""
    caps = gpu_capabilities(facts)
    version = facts.torch.version
    driver = facts.nvml.driver_version
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


def arch_list_problem(facts: Facts) -> Problem | None:
    value = facts.env.get("TORCH_CUDA_ARCH_LIST")
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
    devices = facts.torch.cuda.devices or facts.nvml.devices
    caps = sorted({(d.capability[0], d.capability[1]) for d in devices if d.capability})
    missing = [c for c in caps if archs.coverage(c, flags) == "none"]
    if not flags or not missing:
        return None
    want = ";".join(archs.fmt(c) for c in caps)
    return Problem(
        "arch-list-uncovered",
        Status.WARN,
        f"TORCH_CUDA_ARCH_LIST={value!r} does not cover this machine's GPU capability "
        f"{', '.join(archs.fmt(c) for c in missing)}: kernels built with it fail with 'no kernel "
        f"image is available'",
        [
            Remedy(
                "Build for the GPUs that will run the extension.",
                (f'export TORCH_CUDA_ARCH_LIST="{want}"',),
                grounded(
                    facts,
                    "env.TORCH_CUDA_ARCH_LIST",
                    *(
                        f"torch.cuda.devices.{i}.capability"
                        for i in range(len(facts.torch.cuda.devices))
                    ),
                    *(() if facts.torch.cuda.devices else gpu_paths(facts)),
                ),
            )
        ],
    )


def nvcc_mismatch(tc: Toolchain, facts: Facts) -> Problem | None:
    """nvcc of another CUDA than torch's: cpp_extension refuses a major mismatch, warns on a minor."""
    torch_cuda = _mm(facts.torch.build.cuda)
    nvcc = _mm(tc.nvcc.release)
    if not (torch_cuda and nvcc and nvcc != torch_cuda):
        return None
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
    because = grounded(facts, "toolchain.nvcc.release", "torch.build.cuda")
    kits = [f"toolchain.toolkits.{i}.path" for i, k in enumerate(tc.toolkits) if k.path == kit]
    remedies = [
        Remedy(
            f"Build with a CUDA {t} toolkit, the one torch was compiled with (conda, or "
            "NVIDIA's apt repository on Debian/Ubuntu).",
            cmds,
            (*because, *grounded(facts, *kits)),
        )
    ]
    choice = variant_for_nvcc(facts, nvcc)
    if choice and nvcc[0] != torch_cuda[0]:
        why = f"Or install a torch built for CUDA {nvcc[0]}.x, which nvcc {n} can build for."
        remedies.append(install_wheel(facts, choice, why, (*because, *wheel_evidence(facts))))
    message = f"nvcc {n} ({tc.cuda_home.path}) but torch was built with CUDA {t}"
    if nvcc[0] != torch_cuda[0]:
        why = message + ": extension builds fail (major versions differ)"
        return Problem("nvcc-major-mismatch", Status.FAIL, why, remedies)
    why = message + ": minor versions differ (usually works; torch warns)"
    return Problem("nvcc-minor-mismatch", Status.WARN, why, remedies)


def headers_missing(tc: Toolchain, facts: Facts) -> Problem | None:
    nvcc, home = _mm(tc.nvcc.release), tc.cuda_home
    if not (nvcc and home.path and home.has_headers is False):
        return None
    kit = toolkit_for(tc, _mm(facts.torch.build.cuda) or nvcc)
    return Problem(
        "cuda-home-no-headers",
        Status.WARN,
        f"CUDA_HOME resolves to {home.path} ({home.source}), which has no "
        f"include/cuda_runtime.h: extension builds will not find CUDA headers",
        [
            Remedy(
                "Point CUDA_HOME at the toolkit itself.",
                (f"export CUDA_HOME={kit or '/usr/local/cuda'}",),
                grounded(facts, "toolchain.cuda_home.path", "toolchain.cuda_home.has_headers"),
            )
        ],
    )


def cuda_problems(tc: Toolchain, facts: Facts) -> list[Problem]:
    found = (nvcc_mismatch(tc, facts), headers_missing(tc, facts), arch_list_problem(facts))
    return [p for p in found if p]


def _nvcc(tc: Toolchain) -> str | None:
    return tc.nvcc.release if tc.nvcc.ok else None


def _cxx(tc: Toolchain) -> str | None:
    return tc.cxx.path and f"{tc.cxx.name} {tc.cxx.version}"


def _toolkit(tc: Toolchain) -> str:
    return f"nvcc {_nvcc(tc)} ({tc.cuda_home.path}, {tc.cuda_home.source})"


def _cpu_build(tc: Toolchain, facts: Facts, ctx: Context, details: dict[str, Any]) -> Verdict:
    """A CPU build of torch builds C++ extensions only, whatever toolkit sits beside it."""
    nvcc, cxx = _nvcc(tc), _cxx(tc)
    if not nvcc:
        return verdict(
            Status.SKIP,
            f"CPU build of torch and no CUDA toolkit: only C++ extensions "
            f"({cxx or 'no C++ compiler'})",
            details,
        )
    summary = (
        f"{_toolkit(tc)} cannot build CUDA extensions for this CPU build of torch (no CUDA in "
        f"torch); C++ extensions: {cxx or 'no compiler'}"
    )
    problems = compiler_problems(tc, facts)
    if ctx.expect == "cuda":
        mm = _mm(nvcc)
        choice = variant_for_nvcc(facts, mm) if mm else None
        fix = (
            install_wheel(
                facts,
                choice,
                f"Install the torch built for CUDA {nvcc}.",
                (
                    *grounded(facts, "toolchain.nvcc.release", "torch.build.variant"),
                    *wheel_evidence(facts),
                ),
            )
            if choice
            else Remedy(
                f"No wheel of this torch release for CUDA {nvcc} runs on this driver and these "
                "GPUs: install the CUDA build that cuda.available names, and a matching toolkit.",
                evidence=grounded(
                    facts, "toolchain.nvcc.release", "torch.build.variant", "nvml.driver_version"
                ),
            )
        )
        problems.append(Problem("toolkit-cpu-torch", Status.WARN, summary, [fix]))
    return from_problems(problems, details, summary)


def _cuda_build(tc: Toolchain, facts: Facts, details: dict[str, Any]) -> Verdict:
    if not _nvcc(tc):
        return verdict(
            Status.SKIP,
            f"no CUDA toolkit (nvcc): prebuilt wheels need none; building CUDA extensions "
            f"needs toolkit {facts.torch.build.cuda}",
            details,
        )
    passed = (
        f"{_toolkit(tc)} matches torch's CUDA {facts.torch.build.cuda}; {_cxx(tc)}, "
        f"ninja {tc.ninja.version}"
    )
    problems = cuda_problems(tc, facts) + compiler_problems(tc, facts)
    return from_problems(problems, details, passed)


def check(facts: Facts, ctx: Context) -> Verdict:
    tc = facts.toolchain
    if not tc:
        return verdict(Status.SKIP, "these facts were recorded without the extension toolchain")
    if tc.status != "ok":
        return verdict(Status.ERROR, f"toolchain facts: {tc.error or tc.status}", tc.raw)
    if not torch_ok(facts):
        return torch_unavailable(facts)
    variant = facts.torch.build.variant
    details = {"toolchain": tc.raw, "torch_cuda": facts.torch.build.cuda, "variant": variant}
    if variant == "cpu":
        return _cpu_build(tc, facts, ctx, details)
    if variant == "cuda":
        return _cuda_build(tc, facts, details)
    if variant == "rocm" and not tc.rocm_home:
        return verdict(
            Status.SKIP, "no ROCm toolkit (hipcc) found: only needed to build extensions", details
        )
    passed = f"{variant} build; {_cxx(tc)}, ninja {tc.ninja.version}"
    return from_problems(compiler_problems(tc, facts), details, passed)
