"""Fixes for `import torch` errors whose cause is a library beside torch, not torch itself: an MKL
without the symbol a conda torch links to, a libstdc++ older than torch's libraries need."""

from __future__ import annotations

import re

from torchdoctor.data import compat
from torchdoctor.report.result import Remedy

from ..record import Facts
from .common import (
    current_variant,
    grounded,
    installed_family,
    python_cmd,
    quote,
    reinstall_torch,
)
from .xpu import native_release

# MKL 2024.1 stopped exporting iJIT_NotifyEvent, which conda's pytorch (linked to MKL
# dynamically) needs; pip's wheels carry their own MKL (agentmorris/MegaDetector#127,
# ElectricAlexis/NotaGen#32, Pointcept/Pointcept#230, intel/ipex-llm#12141).
MKL_SYMBOL = "iJIT_NotifyEvent"
MKL_LAST_GOOD = "2024.0"

# The GCC release whose libstdc++ first exports a GLIBCXX symbol version (GCC's ABI policy
# list, gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html).
GLIBCXX_GCC = {25: 8, 26: 9, 28: 10, 29: 11, 30: 12, 31: 13, 32: 13, 33: 14, 34: 15}
_GLIBCXX = re.compile(r"GLIBCXX_3\.4\.(\d+)'? not found")


def conda_torch(facts: Facts) -> bool:
    """torch came from a conda package (live: conda-meta; pasted: a [conda] line not from pypi)."""
    own = facts.packages.conda.get("pytorch") or facts.packages.conda.get("torch")
    pasted = bool(own and own.channel != "pypi")
    return pasted or "pytorch" in (facts.platform.conda_packages or {})


def in_conda(facts: Facts, message: str) -> bool:
    """A conda environment: its prefix, its packages, or a path under one in the error."""
    return bool(
        facts.platform.conda_prefix
        or facts.platform.conda_packages
        or facts.packages.conda
        or re.search(r"/(?:ana|mini|micro)?(?:conda|forge|mamba)\d?/|/envs/", message)
    )


def _conda_paths(facts: Facts) -> tuple[str, ...]:
    return grounded(
        facts,
        "platform.conda_packages.pytorch",
        "platform.conda_packages.mkl",
        "packages.conda.pytorch.channel",
        "packages.conda.mkl.version",
        "platform.conda_prefix",
    )


def mkl_symbol(facts: Facts, message: str, because: tuple[str, ...]) -> list[Remedy]:
    """`undefined symbol: iJIT_NotifyEvent` in libtorch_cpu.so: an MKL 2024.1 or later."""
    if MKL_SYMBOL not in message:
        return []
    wheel = Remedy(
        "Or replace conda's pytorch with pip's wheel, which carries its own MKL.",
        (f"{python_cmd(facts)} install torch",),
        because,
    )
    if conda_torch(facts):
        return [
            Remedy(
                f"conda's pytorch links MKL at run time, and MKL 2024.1 and later no longer "
                f"export {MKL_SYMBOL}: pin MKL {MKL_LAST_GOOD} in this environment (and in its "
                "environment file).",
                (f"conda install mkl={MKL_LAST_GOOD}",),
                (*because, *_conda_paths(facts)),
            ),
            wheel,
        ]
    oneapi = [p for p in facts.env.get("LD_LIBRARY_PATH", "").split(":") if "oneapi" in p]
    if oneapi:
        return [
            Remedy(
                f"A sourced oneAPI ({oneapi[0]}) puts an MKL without {MKL_SYMBOL} ahead of "
                f"torch's: use oneAPI {MKL_LAST_GOOD} (the release the stack supports), or run "
                "without its paths.",
                ("env -u LD_LIBRARY_PATH python -c 'import torch'",),
                (*because, "env.LD_LIBRARY_PATH"),
            )
        ]
    return [
        Remedy(
            f"An MKL newer than {MKL_LAST_GOOD} is loaded in place of the one torch was built "
            f"with: pin mkl {MKL_LAST_GOOD} where that MKL came from, or use pip's torch wheel.",
            evidence=because,
        )
    ]


def libstdcxx(facts: Facts, message: str, because: tuple[str, ...]) -> list[Remedy]:
    """`GLIBCXX_3.4.NN not found`: the libstdc++ the loader found predates GCC N's."""
    found = _GLIBCXX.search(message)
    if not found:
        return []
    minor = int(found.group(1))
    gcc = next((g for m, g in sorted(GLIBCXX_GCC.items()) if m >= minor), None)
    need = f"GCC {gcc}'s" if gcc else "a newer"
    if in_conda(facts, message):
        return [
            Remedy(
                f"The libstdc++ the loader took lacks GLIBCXX_3.4.{minor} ({need} C++ runtime). "
                "Install a new enough one into this conda environment; if $CONDA_PREFIX/lib "
                "already has a newer libstdc++.so.6.0.*, make sure the libstdc++.so.6 link to it "
                "exists, or the loader falls back to the system's.",
                (
                    f"conda install -c conda-forge 'libstdcxx-ng>={gcc or 12}' 'libgcc-ng>={gcc or 12}'",
                ),
                (*because, *_conda_paths(facts)),
            )
        ]
    return [
        Remedy(
            f"The system libstdc++ lacks GLIBCXX_3.4.{minor} ({need} C++ runtime): upgrade the "
            "GCC runtime (libstdc++6) from a newer release of the distribution, or run torch in "
            "a conda environment with libstdcxx-ng from conda-forge.",
            evidence=because,
        )
    ]


def foreign_nvidia(facts: Facts, message: str, because: tuple[str, ...]) -> list[Remedy]:
    """`undefined symbol` with nvidia-* wheels of two CUDA majors installed: torch loaded the
    other major's library (pytorch/pytorch#186591, ncclCommResume; VichyTong/CodeJudge#2)."""
    dist = facts.packages.distributions.get("torch")
    tag = re.search(r"\+cu(\d+)\d$", (dist and dist.version) or "")
    if "undefined symbol" not in message or not tag:
        return []
    major = tag.group(1)
    foreign = sorted(
        n
        for n in facts.packages.nvidia_wheels
        if re.search(r"-cu(\d+)$", n) and not n.endswith(f"-cu{major}")
    )
    if not foreign:
        return []
    return [
        Remedy(
            f"torch {dist.version} is a CUDA {major} build, but NVIDIA wheels for another CUDA "
            f"major are installed beside it ({', '.join(foreign)}) and one of them was loaded: "
            "uninstall them.",
            (f"{python_cmd(facts)} uninstall -y {' '.join(foreign)}",),
            (
                *because,
                *grounded(
                    facts,
                    "packages.distributions.torch.version",
                    *(f"packages.nvidia_wheels.{n}" for n in foreign),
                ),
            ),
        )
    ]


# torch 2.4.0's Windows wheels made fbgemm.dll need libomp140.x86_64.dll without shipping it
# (pytorch/pytorch#131662; fixed in 2.4.1: openvino.genai#813, kohya-ss/sd-scripts#1597).
FBGEMM_BROKEN = "2.4.0"
_WIN_DLL = ("WinError 126", "WinError 1114", "DLL load failed", "Error loading")


def windows_dll(facts: Facts, message: str, because: tuple[str, ...]) -> list[Remedy]:
    """A torch DLL that Windows cannot load: torch 2.4.0's fbgemm.dll, else the Visual C++
    runtime torch's DLLs link to, missing or too old (pytorch/pytorch#39734, #32916,
    nagadomi/nunif#701)."""
    if facts.platform.system != "Windows" or not any(s in message for s in _WIN_DLL):
        return []
    installed = facts.packages.distributions.get("torch")
    version = (installed.version if installed else None) or ""
    evidence = (*because, *grounded(facts, "platform.system", "packages.distributions.torch"))
    if "_xpu.dll" in message:
        return _xpu_runtime(facts, evidence)
    if "fbgemm.dll" in message and version.split("+", 1)[0] == FBGEMM_BROKEN:
        return [
            Remedy(
                "torch 2.4.0's fbgemm.dll needs libomp140.x86_64.dll, which that wheel does not "
                "ship; torch 2.4.1 fixed it. Upgrade to 2.4.1 (or go back to 2.3).",
                (_fbgemm_fixed(facts),),
                evidence,
            )
        ]
    return [
        Remedy(
            "Windows cannot load a torch DLL: the Microsoft Visual C++ Redistributable (x64) that "
            "torch's DLLs link to is missing or too old. Install the latest one, then start a new "
            "shell.",
            ("winget install --id Microsoft.VCRedist.2015+.x64 -e",),
            evidence,
        )
    ]


# oneAPI's environment script at its default Windows location (Intel oneAPI Base Toolkit).
ONEAPI_SETVARS = "C:\\Program Files (x86)\\Intel\\oneAPI\\setvars.bat"


def _xpu_runtime(facts: Facts, evidence: tuple[str, ...]) -> list[Remedy]:
    """pytorch/pytorch#138986: an early Windows XPU nightly's c10_xpu.dll needs the oneAPI (SYCL)
    runtime DLLs, which it did not bring: "Error loading ...\\torch\\lib\\c10_xpu.dll or one
    of its dependencies". The XPU releases install that runtime as pip packages."""
    release = native_release(facts)
    remedies = []
    if release:
        remedies.append(
            reinstall_torch(
                facts,
                "xpu",
                f"Install torch {release}'s XPU wheel, which brings the oneAPI runtime it needs as "
                "pip packages.",
                release=release,
                because=evidence,
            )
        )
    remedies.append(
        Remedy(
            "Or put the oneAPI runtime on PATH for this shell: run oneAPI's setvars.bat (Intel "
            "oneAPI Base Toolkit) before Python.",
            (f'call "{ONEAPI_SETVARS}"',),
            evidence,
        )
    )
    return remedies


def _fbgemm_fixed(facts: Facts) -> str:
    """pip install of torch 2.4.1 and the installed companions' matching releases, one index."""
    target = compat.latest_patch("2.4")
    pins = []
    for pkg in installed_family(facts):
        pin = target if pkg == "torch" else compat.companion_version(pkg, target)
        if pin:
            pins.append(quote(facts, f"{pkg}=={pin}"))
    index, _ = compat.index_args("2.4", current_variant(facts) or "cpu")
    return f"{python_cmd(facts)} install --force-reinstall {' '.join(pins)} {index}"


def libtorch_on_loader_path(facts: Facts, because: tuple[str, ...]) -> list[Remedy]:
    """pytorch/pytorch#96797: LD_LIBRARY_PATH (set in .bashrc for C++ work) names a libtorch
    whose libtorch_cpu.so the loader takes before the wheel's: a segfault, or undefined symbols,
    at `import torch`. The fix drops exactly those directories from the variable."""
    found = facts.host.ld_path_torch_libs or []
    value = facts.env.get("LD_LIBRARY_PATH")
    if not found or value is None:
        return []
    kept = ":".join(p for p in value.split(":") if p and p not in found)
    export = f"export LD_LIBRARY_PATH={quote(facts, kept)}" if kept else "unset LD_LIBRARY_PATH"
    return [
        Remedy(
            f"LD_LIBRARY_PATH names {', '.join(found)}, which holds torch's own libraries (a "
            "libtorch for C++ work): Python's torch loads those instead of its wheel's. Drop "
            "them from LD_LIBRARY_PATH for Python work (and from the shell profile that sets it).",
            (export,),
            (*because, *grounded(facts, "host.ld_path_torch_libs", "env.LD_LIBRARY_PATH")),
        )
    ]


def nvidia_wheels_elsewhere(facts: Facts, message: str, because: tuple[str, ...]) -> list[Remedy]:
    """pytorch/pytorch#165812: on AlmaLinux the venv put torch in lib64/site-packages and the
    nvidia-* wheels in lib/site-packages; torch looks for libcudnn.so.9 beside itself, so
    "libcudnn.so.9: cannot open shared object file". The fix links their nvidia/ folder in."""
    if "cannot open shared object file" not in message:
        return []
    torch_at = next((d.location for d in facts.packages.torch_distributions if d.location), None)
    # nvidia-ml-py is NVML's Python binding: no library torch loads
    where = {
        n: loc for n, loc in facts.packages.nvidia_wheel_locations.items() if n != "nvidia-ml-py"
    }
    apart = sorted({loc for loc in where.values() if loc and torch_at and loc != torch_at})
    if not torch_at or len(apart) != 1 or facts.platform.system == "Windows":
        return []
    names = sorted(n for n, loc in where.items() if loc == apart[0])
    return [
        Remedy(
            f"torch lies in {torch_at} and its nvidia-* wheels ({', '.join(names)}) in "
            f"{apart[0]}: torch loads their libraries from beside itself. Link their nvidia/ "
            "folder next to torch (or recreate the environment so both land in one "
            "site-packages).",
            (f"ln -s {quote(facts, apart[0] + '/nvidia')} {quote(facts, torch_at + '/nvidia')}",),
            (
                *because,
                *grounded(facts, "packages.torch_distributions.0.location"),
                *grounded(facts, *(f"packages.nvidia_wheel_locations.{n}" for n in names)),
            ),
        )
    ]
