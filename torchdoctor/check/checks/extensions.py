"""extensions: what building a C++/CUDA extension would use, judged against the torch installed.

torch.utils.cpp_extension refuses an nvcc whose CUDA major differs from torch's ("The detected
CUDA version ... mismatches the version that was used to compile PyTorch"), warns on a minor
mismatch, needs ninja for ``load()``, and compiles for TORCH_CUDA_ARCH_LIST when it is set.
nvcc refuses a host compiler newer than its toolkit knows ("unsupported GNU version!"), and with
no toolkit at all a CUDAExtension build stops at "CUDA_HOME environment variable is not set";
the latter is judged only where the user shows they build one (a project here that builds a
CUDA extension, or CUDA_HOME set), so a machine that only runs wheels stays quiet.
"""

from __future__ import annotations

import os
import re
from typing import Any

from torchdoctor.data import archs, compat, host_compilers
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
    set_env,
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
    "host-compiler-too-new": "nvcc refuses the host compiler (gcc/clang) as too new for its CUDA",
    "cuda-toolkit-missing": "a CUDA extension is to be built here, but no CUDA toolkit (nvcc) is found",
    "nvcc-too-old-for-gpu": "nvcc cannot compile for this machine's GPU architecture",
}


def _mm(release: str | None) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", release or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _no_cl(tc: Toolchain, facts: Facts) -> Problem:
    """Windows: cpp_extension builds with MSVC's cl.exe, found on PATH only; an installed Visual
    Studio is not on PATH outside its developer prompt (NVlabs/nvdiffrast#81: "Could not locate
    a supported Microsoft Visual C++ installation", VS 2022 under Program Files)."""
    because = grounded(facts, "toolchain.cxx.path", "toolchain.cxx.name", "toolchain.cxx.vcvars")
    if tc.cxx.vcvars:
        fix = Remedy(
            f"Visual Studio is installed ({tc.cxx.vcvars}) but cl.exe is not on PATH: build from "
            "an 'x64 Native Tools Command Prompt for VS', or run its vcvars64.bat first in this "
            "cmd.exe.",
            (f'call "{tc.cxx.vcvars}"',),
            because,
        )
    else:
        fix = Remedy(
            "Install Visual Studio Build Tools with the 'Desktop development with C++' workload, "
            "then build from an 'x64 Native Tools Command Prompt for VS' (cl.exe on PATH).",
            (
                "winget install --id Microsoft.VisualStudio.2022.BuildTools -e --override "
                '"--passive --add Microsoft.VisualStudio.Workload.VCTools --includeRecommended"',
            ),
            because,
        )
    why = "cl.exe (MSVC) is not on PATH: C++/CUDA extensions cannot build on Windows"
    return Problem("no-compiler", Status.WARN, why, [fix])


def compiler_problems(tc: Toolchain, facts: Facts) -> list[Problem]:
    found = []
    if facts.platform.system == "Windows" and not tc.cxx.path:
        found.append(_no_cl(tc, facts))
    elif not tc.cxx.path or tc.cxx.ok is False:
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


_ALLOW_UNSUPPORTED = re.compile(r"(?:^|\s)--?allow-unsupported-compiler(?:\s|=|$)")


def allows_unsupported(facts: Facts) -> str | None:
    """The NVCC_*_FLAGS variable that turns nvcc's host compiler gate off, if one does."""
    for var in ("NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"):
        if _ALLOW_UNSUPPORTED.search(facts.env.get(var) or ""):
            return var
    return None


def _major(version: str | None) -> int | None:
    m = re.match(r"(\d+)", version or "")
    return int(m.group(1)) if m else None


def host_ceiling(tc: Toolchain, nvcc: tuple[int, int]) -> tuple[int | None, int | None, str]:
    """(nvcc's GCC gate, the newest GCC torch's headers compile with, where the gate was read)."""
    if tc.cuda_home.host_gcc_max is not None:
        gate, where = tc.cuda_home.host_gcc_max, f"{tc.cuda_home.path}/include/crt/host_config.h"
    else:
        gate = host_compilers.gate(nvcc, tc.nvcc.version)
        where = f"CUDA {archs.fmt(nvcc)}'s host_config.h, per torchdoctor's table"
    torch_limit = host_compilers.torch_limit(nvcc)
    return gate, (torch_limit if torch_limit is not None else gate), where


def _host_evidence(facts: Facts) -> tuple[str, ...]:
    return grounded(
        facts,
        "toolchain.host_cc.version",
        "toolchain.host_cc.kind",
        "toolchain.host_cc.source",
        "toolchain.nvcc.release",
        "toolchain.cuda_home.host_gcc_max",
        "env.CC",
        "env.NVCC_CCBIN",
        "env.NVCC_APPEND_FLAGS",
    )


RHEL_LIKE = ("rhel", "centos", "rocky", "almalinux", "ol")


def _gcc_install(facts: Facts, n: int) -> tuple[tuple[str, ...], str, str]:
    """(install commands, gcc, g++) for GCC ``n`` beside the system compiler: Debian/Ubuntu's
    gcc-N packages, RHEL's gcc-toolset-N; elsewhere the distribution's own way (no command)."""
    distro = (facts.platform.distro.id or "").lower()
    if distro in RHEL_LIKE:
        root = f"/opt/rh/gcc-toolset-{n}/root/usr/bin"
        cmd = f"sudo dnf install -y gcc-toolset-{n}-gcc gcc-toolset-{n}-gcc-c++"
        return (cmd,), f"{root}/gcc", f"{root}/g++"
    if distro in ("", "ubuntu", "debian", "linuxmint", "pop"):
        return (f"sudo apt-get install -y gcc-{n} g++-{n}",), f"gcc-{n}", f"g++-{n}"
    return (), f"gcc-{n}", f"g++-{n}"


def use_older_gcc(tc: Toolchain, facts: Facts, newest: int) -> Remedy:
    """Install the newest g++ this nvcc takes and point the build at it, through the variable
    that decides here (torch passes -ccbin $CC; a -ccbin in NVCC_APPEND_FLAGS overrides that)."""
    install, gcc, gxx = _gcc_install(facts, newest)
    appended = facts.env.get("NVCC_APPEND_FLAGS") or ""
    if (tc.host_cc.source or "").startswith("-ccbin in NVCC_APPEND_FLAGS"):
        flags = re.sub(r"(-ccbin|--compiler-bindir)(=|\s+)\S+", rf"\1\2{gcc}", appended)
        point = (set_env(facts, "NVCC_APPEND_FLAGS", flags),)
    else:
        # CXX too: cpp_extension checks the C++ compiler against the same CUDA (its
        # CUDA_GCC_VERSIONS) and compiles the .cpp files with it; CUDAHOSTCXX for CMake builds
        point = (f"export CC={gcc} CXX={gxx} CUDAHOSTCXX={gxx}",)
    how = (
        "install it beside the system compiler" if install else "install it from your distribution"
    )
    return Remedy(
        f"Build with GCC {newest}, the newest this nvcc takes: {how} and point the build at it "
        f"(torch passes -ccbin $CC to nvcc).",
        (*install, *point),
        (*_host_evidence(facts), *grounded(facts, "platform.distro.id")),
    )


def newer_toolkit(tc: Toolchain, facts: Facts, gcc_major: int) -> Remedy | None:
    """Or a toolkit of torch's CUDA major that accepts this GCC (cpp_extension refuses another
    major, and only warns on another minor)."""
    torch_cuda = _mm(facts.torch.build.cuda)
    if not torch_cuda:
        return None
    first = host_compilers.first_accepting(gcc_major, torch_cuda[0])
    if not first:
        return None
    installed = [
        (mm, i, k.path)
        for i, k in enumerate(tc.toolkits)
        if k.has_headers and (mm := _mm(k.release)) and mm[0] == first[0] and mm >= first
    ]
    because = (*_host_evidence(facts), *grounded(facts, "torch.build.cuda"))
    want = archs.fmt(first)
    if installed:
        mm, i, path = min(installed)
        return Remedy(
            f"Or build with the CUDA {archs.fmt(mm)} toolkit installed here, whose nvcc accepts "
            f"GCC {gcc_major}.",
            (f"export CUDA_HOME={path}", 'export PATH="$CUDA_HOME/bin:$PATH"'),
            (*because, *grounded(facts, f"toolchain.toolkits.{i}.path")),
        )
    return Remedy(
        f"Or install a CUDA {want} (or newer {first[0]}.x) toolkit, whose nvcc accepts GCC "
        f"{gcc_major}, and build with it (torch warns on a minor version other than its own "
        f"{facts.torch.build.cuda}, and builds).",
        (
            f"sudo apt-get install -y cuda-toolkit-{want.replace('.', '-')}",
            f"export CUDA_HOME=/usr/local/cuda-{want}",
            'export PATH="$CUDA_HOME/bin:$PATH"',
        ),
        because,
    )


def host_compiler_problem(tc: Toolchain, facts: Facts) -> Problem | None:
    """nvcc's host compiler past the toolkit's gate ('unsupported GNU version!'), or past what
    torch's headers compile with (nvcc 9.0/9.1 with GCC 6's <tuple>)."""
    nvcc, host = _mm(tc.nvcc.release), tc.host_cc
    if facts.platform.system not in (None, "Linux"):
        return None  # Windows' nvcc runs cl.exe, whose gate is not judged here
    if not (nvcc and host.path and host.kind in ("gcc", "clang")):
        return None
    major = _major(host.version)
    if major is None:
        return None
    if host.kind == "clang":
        return _clang_problem(tc, facts, nvcc, major)
    gate, limit, where = host_ceiling(tc, nvcc)
    if limit is None or major <= limit:
        return None
    n = archs.fmt(nvcc)
    if gate is not None and major > gate:
        if allows_unsupported(facts):
            return None  # the user turned the gate off, and knows it
        why = (
            f"nvcc {n} refuses {host.name} (GCC {host.version}, from {host.source}): "
            f"'#error -- unsupported GNU version! gcc versions later than {gate} are not "
            f"supported!' ({where}); CUDA extension builds fail"
        )
    else:
        why = (
            f"nvcc {n} with {host.name} (GCC {host.version}, from {host.source}) cannot compile "
            f"torch's headers: GCC {major}'s <tuple> fails with 'body of constexpr function ... "
            f"not a return-statement' (nvcc {n} builds torch code with GCC {limit} at most)"
        )
    remedies = [use_older_gcc(tc, facts, limit)]
    if newer := newer_toolkit(tc, facts, major):
        remedies.append(newer)
    return Problem("host-compiler-too-new", Status.WARN, why, remedies)


def _clang_problem(
    tc: Toolchain, facts: Facts, nvcc: tuple[int, int], major: int
) -> Problem | None:
    """A clang host past the gate read from this toolkit's host_config.h (no table: read live)."""
    limit = tc.cuda_home.host_clang_max
    if limit is None or major <= limit or allows_unsupported(facts):
        return None
    host, gcc = tc.host_cc, host_compilers.gate(nvcc, tc.nvcc.version)
    why = (
        f"nvcc {archs.fmt(nvcc)} refuses {host.name} (clang {host.version}, from {host.source}): "
        f"'unsupported clang version! clang version must be less than {limit + 1}'; CUDA "
        f"extension builds fail"
    )
    fix = Remedy(
        f"Point the build at a clang {limit} or older, or at GCC"
        + (f" {gcc} or older" if gcc else "")
        + " (torch passes -ccbin $CC to nvcc).",
        (f"export CC=clang-{limit} CXX=clang++-{limit}",),
        grounded(facts, "toolchain.host_cc.version", "toolchain.cuda_home.host_clang_max"),
    )
    return Problem("host-compiler-too-new", Status.WARN, why, [fix])


def build_intent(tc: Toolchain, facts: Facts) -> tuple[str, tuple[str, ...]] | None:
    """Why torchdoctor believes the user builds CUDA extensions here (and the facts it rests on),
    or None: CUDA_HOME/CUDA_PATH set by hand (only builds read it), or a file in the working
    directory that builds one (CUDAExtension, cpp_extension.load with .cu sources)."""
    source = tc.cuda_home.source or ""
    if source in ("CUDA_HOME", "CUDA_PATH"):
        return f"{source} is set", grounded(facts, f"env.{source}", "toolchain.cuda_home.source")
    builds = tc.project.cuda_builds if tc.project else []
    if builds:
        where = os.path.join(tc.project.root or ".", builds[0].path or "")
        return (
            f"{where} builds a CUDA extension ({builds[0].marker})",
            grounded(facts, "toolchain.project.cuda_builds.0.path", "toolchain.project.root"),
        )
    return None


def _missing_why(tc: Toolchain, facts: Facts, intent: str) -> str:
    home, nvcc = tc.cuda_home, tc.nvcc
    if not home.path:
        return (
            f"{intent}, but no CUDA toolkit is found (CUDA_HOME unset, no nvcc on PATH, no "
            f"/usr/local/cuda): torch.utils.cpp_extension stops with 'CUDA_HOME environment "
            f"variable is not set. Please set it to your CUDA install root.'"
        )
    if nvcc.exists:
        return (
            f"{intent}, but {nvcc.path} does not run ({nvcc.output or nvcc.returncode}): CUDA "
            f"extensions cannot build"
        )
    return (
        f"{intent}, but CUDA_HOME resolves to {home.path} ({home.source}), which has no bin/nvcc "
        f"(a runtime-only CUDA, such as conda's cudatoolkit, has none): torch stops with "
        f"\"nvcc not found at '{nvcc.path or home.path + '/bin/nvcc'}'\""
    )


def _targets(facts: Facts) -> list[tuple[int, int]]:
    """The capabilities an extension build here compiles for: TORCH_CUDA_ARCH_LIST's, else the
    GPUs' (only those torch's own arch list reaches: above it, a recent cpp_extension clamps to
    what torch was built for, and the GPU is a problem of torch's wheel, judged elsewhere)."""
    listed = facts.env.get("TORCH_CUDA_ARCH_LIST")
    if listed:
        found = re.findall(r"(\d+)\.(\d+)", listed)
        return sorted({(int(a), int(b)) for a, b in found})
    built = [a for a in (archs.parse(f) for f in facts.torch.build.arch_list or ()) if a]
    top = max(((a.major, a.minor) for a in built), default=None)
    caps = set(gpu_capabilities(facts))
    return sorted(c for c in caps if top is None or c <= top)


def nvcc_too_old(tc: Toolchain, facts: Facts) -> Problem | None:
    """Ruyi-Zha/naf_cbct#15: "nvcc fatal : Unsupported gpu architecture 'compute_86'" from a
    CUDA 11.0 nvcc on an RTX 3090; an extension build targets the GPUs present."""
    nvcc = _mm(tc.nvcc.release)
    if not nvcc:
        return None
    beyond = [
        (c, archs.NVCC_FIRST[c])
        for c in _targets(facts)
        if c in archs.NVCC_FIRST and _mm(archs.NVCC_FIRST[c]) > nvcc
    ]
    if not beyond:
        return None
    cap, need = max(beyond, key=lambda x: _mm(x[1]) or (0, 0))
    torch_cuda = _mm(facts.torch.build.cuda)
    want = max(_mm(need) or nvcc, torch_cuda or (0, 0))
    t = archs.fmt(want)
    because = grounded(
        facts, "toolchain.nvcc.release", "env.TORCH_CUDA_ARCH_LIST", *gpu_paths(facts)
    )
    kit = toolkit_for(tc, want)
    if kit and (_mm(next(k.release for k in tc.toolkits if k.path == kit)) or (0, 0)) >= _mm(need):
        remedies = [
            Remedy(
                f"Build with the CUDA {t} toolkit installed here, whose nvcc knows sm_{cap[0]}{cap[1]}.",
                (f"export CUDA_HOME={kit}", 'export PATH="$CUDA_HOME/bin:$PATH"'),
                because,
            )
        ]
    else:
        remedies = _install_toolkit(facts, t, because)
    code = f"compute_{cap[0]}{cap[1]}"
    why = (
        f"nvcc {archs.fmt(nvcc)} cannot compile for compute capability {archs.fmt(cap)} (CUDA "
        f'{need} or later can): an extension build here stops with "nvcc fatal : Unsupported '
        f"gpu architecture '{code}'\""
    )
    return Problem("nvcc-too-old-for-gpu", Status.WARN, why, remedies)


def toolkit_missing(tc: Toolchain, facts: Facts) -> Problem | None:
    """No usable nvcc while the user shows they build a CUDA extension: the toolkit of torch's
    CUDA, found if installed, else installed."""
    found = build_intent(tc, facts)
    torch_cuda = _mm(facts.torch.build.cuda)
    if not (found and torch_cuda):
        return None
    intent, because = found
    t = archs.fmt(torch_cuda)
    because = (*because, *grounded(facts, "toolchain.cuda_home.path", "toolchain.nvcc.exists"))
    because = (*because, *grounded(facts, "torch.build.cuda"))
    kit = toolkit_for(tc, torch_cuda)
    if kit:
        kits = [f"toolchain.toolkits.{i}.path" for i, k in enumerate(tc.toolkits) if k.path == kit]
        remedies = [
            Remedy(
                f"Point CUDA_HOME at the CUDA {t} toolkit installed here, whose bin/ holds nvcc.",
                (f"export CUDA_HOME={kit}", 'export PATH="$CUDA_HOME/bin:$PATH"'),
                (*because, *grounded(facts, *kits)),
            )
        ]
    else:
        remedies = _install_toolkit(facts, t, because)
    return Problem("cuda-toolkit-missing", Status.WARN, _missing_why(tc, facts, intent), remedies)


def _install_toolkit(facts: Facts, t: str, because: tuple[str, ...]) -> list[Remedy]:
    """The CUDA toolkit of torch's CUDA, with nvcc: into the conda environment in use, or from
    NVIDIA's apt repository; then CUDA_HOME names its root."""
    remedies = []
    if facts.env.get("CONDA_PREFIX"):
        remedies.append(
            Remedy(
                f"Install the CUDA {t} toolkit (nvcc included, unlike the cudatoolkit runtime "
                f"package) into this conda environment and point CUDA_HOME at it.",
                (
                    f"conda install -y -c nvidia cuda-toolkit={t}",
                    'export CUDA_HOME="$CONDA_PREFIX"',
                ),
                (*because, *grounded(facts, "env.CONDA_PREFIX")),
            )
        )
    remedies.append(
        Remedy(
            f"Install the CUDA {t} toolkit, the one torch was built with (NVIDIA's apt "
            f"repository on Debian/Ubuntu), and point CUDA_HOME at it.",
            (
                f"sudo apt-get install -y cuda-toolkit-{t.replace('.', '-')}",
                f"export CUDA_HOME=/usr/local/cuda-{t}",
                'export PATH="$CUDA_HOME/bin:$PATH"',
            ),
            because,
        )
    )
    return remedies


def cuda_problems(tc: Toolchain, facts: Facts) -> list[Problem]:
    found = (
        nvcc_mismatch(tc, facts),
        nvcc_too_old(tc, facts),
        headers_missing(tc, facts),
        host_compiler_problem(tc, facts),
        arch_list_problem(facts),
    )
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
        if missing := toolkit_missing(tc, facts):
            problems = [missing, *compiler_problems(tc, facts)]
            return from_problems(problems, details, missing.message)
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
