"""Read a pasted ``python -m torch.utils.collect_env`` report into torchdoctor's facts.

Every PyTorch bug report carries that text, often from a machine torchdoctor never runs on
(Windows, macOS, a cluster node). Its labels changed over torch 1.x and 2.x, and people paste it
raw, in a markdown fence, quoted with ``> `` or inside the issue's own text, so the block is found
by its labels, not by position. Pure: text in, facts out; nothing here runs anything.

The facts say where they came from (``collected.source``) and which sections the report carries
(``collected.carries``): a check judging anything else is skipped as "not in the report".
"""

from __future__ import annotations

import re
from typing import Any

from ..data import gpu_names
from ..version import __version__

SOURCE = "collect_env"
# collect_env's line labels (all torch versions) -> our field names.
LABELS: dict[str, str] = {
    "PyTorch version": "torch",
    "Is debug build": "debug",
    "CUDA used to build PyTorch": "cuda_built",
    "ROCM used to build PyTorch": "hip_built",
    "OS": "os",
    "GCC version": "gcc",
    "Clang version": "clang",
    "CMake version": "cmake",
    "Libc version": "libc",
    "Python version": "python",
    "Python platform": "python_platform",
    "Is CUDA available": "cuda_available",
    "CUDA runtime version": "cuda_runtime",
    "CUDA_MODULE_LOADING set to": "cuda_module_loading",
    "GPU models and configuration": "gpus",
    "Nvidia driver version": "driver",
    "cuDNN version": "cudnn",
    "Is XPU available": "xpu_available",
    "XPU used to build PyTorch": "xpu_built",
    "Intel GPU driver version": "intel_driver",
    "Intel GPU models onboard": "intel_onboard",
    "Intel GPU models detected": "intel_detected",
    "HIP runtime version": "hip_runtime",
    "MIOpen runtime version": "miopen",
    "Is XNNPACK available": "xnnpack",
    "Caching allocator config": "alloc_conf",
    "CPU": "cpu",
    "Versions of relevant libraries": "libraries",
}
FIRST_LABEL = "PyTorch version"
# Fewer labels than this after "PyTorch version:" is prose that mentions it, not a report.
MIN_LABELS = 4
# collect_env's words for "no value": missing, failed and not applicable all look alike.
NO_VALUE = {"", "n/a", "none", "could not collect", "no cuda", "no relevant packages"}
_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_GPU = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: [^)]*\))?$")
_ROCM_GPU = re.compile(r"^(.+?) \((gfx\w+)[^)]*\)$")
_PKG = re.compile(r"^\[(pip3?|conda)\]\s+(.+)$")
# get_os() ends the OS line with platform.machine() in parentheses.
_MACHINE = re.compile(r"\s*\((x86_64|aarch64|arm64|ppc64le|s390x|AMD64|i386|armv7l)\)\s*$")
# collect_env's longest line is lscpu's Flags (~1,500 characters); a cap keeps every regex
# linear-time on a hostile paste.
MAX_LINE = 4096
# Fields whose value may go on over the next lines; after any other, a stray line is not ours.
MULTILINE = {"gpus", "cudnn", "cpu", "intel_driver", "intel_onboard", "intel_detected"}


def value(fields: dict[str, str], name: str) -> str | None:
    """A field's text, or None for collect_env's placeholders ('Could not collect', 'N/A'…)."""
    text = fields.get(name)
    if text is None or text.strip().lower() in NO_VALUE:
        return None
    return text.strip()


def _flag(text: str | None) -> bool | None:
    """'True'/'Yes' (1.x printed Yes/No) -> True; None when the report has no answer."""
    if text is None:
        return None
    return {"true": True, "yes": True, "false": False, "no": False}.get(text.lower())


def _lines(text: str) -> list[str]:
    """Lines with markdown quoting and fences removed (the report inside a comment or fence)."""
    out = []
    # wmic (the Windows CPU block of 2.1-2.5) ends its lines with \r\r\n: one line break.
    for raw in re.sub(r"\r+\n?", "\n", text).split("\n"):
        line = _QUOTE.sub("", raw[:MAX_LINE]).rstrip()
        if not _FENCE.match(line):
            out.append(line)
    return out


def _label(line: str) -> tuple[str, str] | None:
    key, sep, rest = line.strip().partition(":")
    return (LABELS[key], rest.strip()) if sep and key in LABELS else None


def split_fields(text: str) -> dict[str, str] | None:
    """The report's fields (multi-line ones joined by newlines), or None when there is none.

    A field's continuation lines (GPU list, cuDNN candidates, the CPU block, package lines) run to
    the next label or blank line; the package list ends at the first line not tagged [pip]/[conda],
    where the issue text around a paste resumes.
    """
    lines = _lines(text)
    start = next(
        (i for i, ln in enumerate(lines) if ln.strip().startswith(FIRST_LABEL + ":")), None
    )
    if start is None:
        return None
    fields: dict[str, str] = {}
    current: str | None = None
    for line in lines[start:]:
        labelled = _label(line)
        if labelled:
            name, rest = labelled
            if name in fields:
                break  # a second report pasted below the first
            fields[name], current = rest, name
        elif current == "libraries":
            if line.strip() and not _PKG.match(line.strip()):
                break
            if line.strip():
                fields[current] += "\n" + line.strip()
        elif not line.strip():
            # A blank line ends a field that has a value; the CPU block goes on to the next label.
            current = None if fields.get(current or "") and current != "cpu" else current
        elif current in MULTILINE:
            fields[current] += "\n" + line
    return fields if len(fields) >= MIN_LABELS else None


def _python(fields: dict[str, str]) -> dict[str, Any]:
    text = value(fields, "python") or ""
    version = re.match(r"(\d+\.\d+(?:\.\d+)?)", text)
    bits = re.search(r"\((\d+)-bit runtime\)", text)
    out: dict[str, Any] = {"python_version": version.group(1) if version else None}
    if bits:
        out["python_bits"] = int(bits.group(1))
    if "[PyPy" in text:
        out["python_implementation"] = "PyPy"
    return out


def _system(os_text: str, platform_text: str) -> str | None:
    """collect_env runs on Linux, Windows and macOS; its OS line names the two others."""
    if platform_text.startswith("Windows") or os_text.startswith("Microsoft Windows"):
        return "Windows"
    if platform_text.startswith(("macOS", "Darwin")) or os_text.startswith(("macOS", "Mac OS")):
        return "Darwin"
    return "Linux" if platform_text.startswith("Linux") or os_text else None


def platform_facts(fields: dict[str, str]) -> dict[str, Any]:
    """OS, CPU architecture and Python, from the OS, Python and Libc lines and the CPU block."""
    os_text = value(fields, "os") or ""
    plat = value(fields, "python_platform") or ""
    system = _system(os_text, plat)
    arch = _MACHINE.search(os_text)
    p: dict[str, Any] = {
        "system": system,
        "os": _MACHINE.sub("", os_text) or None,
        **_python(fields),
    }
    if arch:
        p["machine"] = arch.group(1)
    elif system == "Windows":
        # Win32_Processor Architecture: 9 is x64, 12 is ARM64 (newer reports print it).
        cpu_arch = re.search(r"^Architecture[:=]\s*(\d+)", fields.get("cpu", ""), re.M)
        p["machine"] = {"9": "AMD64", "12": "ARM64"}.get(cpu_arch.group(1) if cpu_arch else "")
    libc = value(fields, "libc")
    if libc:
        p["libc"] = libc.replace("-", " ", 1)
    if system == "Linux":
        p["wsl"] = "microsoft" in plat.lower()
    if system == "Darwin":
        mac = re.search(r"(?:macOS|Mac OSX?|Mac OS X)[ -](\d+(?:\.\d+)*)", os_text or plat)
        p["mac_ver"] = mac.group(1) if mac else None
        # x86_64 Python on an Apple CPU: the interpreter runs under Rosetta.
        brand = (fields.get("cpu") or "").strip()
        p["rosetta"] = p.get("machine") == "x86_64" and brand.startswith("Apple")
    return {k: v for k, v in p.items() if v is not None}


def packages_facts(fields: dict[str, str]) -> dict[str, Any]:
    """[pip]/[pip3] lines (name==version) and [conda] lines (name version build channel)."""
    pip: dict[str, dict[str, str]] = {}
    conda: dict[str, dict[str, str]] = {}
    for line in (fields.get("libraries") or "").splitlines():
        m = _PKG.match(line.strip())
        if not m or m.group(2).strip().lower() in NO_VALUE:
            continue
        tool, rest = m.groups()
        if tool == "conda":
            parts = rest.split()
            if len(parts) >= 2:
                rec = {"version": parts[1]}
                if len(parts) >= 4:
                    rec.update(build=parts[2], channel=parts[3])
                conda[_norm(parts[0])] = rec
        else:
            name, sep, version = rest.partition("==")
            if not sep:  # pip's legacy list format: "numpy (1.15.4)"
                legacy = re.match(r"(\S+)\s+\(?([^)\s]+)\)?", rest)
                name, version = legacy.groups() if legacy else (rest, "")
            pip[_norm(name)] = {"version": version.strip()}
    dists = dict(pip)
    for name, rec in conda.items():
        # conda calls torch "pytorch"; a pip entry for the same package wins (it is what imports).
        dists.setdefault("torch" if name == "pytorch" else name, {"version": rec["version"]})
    # Only pip's list is filtered on numpy in every torch version (old conda lists are not):
    # with it missing, which packages are installed is not in the report.
    listed = any(
        (m := _PKG.match(ln.strip()))
        and m.group(1) != "conda"
        and m.group(2).strip().lower() != "could not collect"
        for ln in (fields.get("libraries") or "").splitlines()
    )
    out: dict[str, Any] = {"distributions": dists, "listed": listed}
    if conda:
        out["conda"] = conda
    nvidia = {n: r["version"] for n, r in pip.items() if n.startswith("nvidia-")}
    if nvidia:
        out["nvidia_wheels"] = nvidia
    copies = torch_copies(value(fields, "torch"), pip, conda)
    if copies:
        out["torch_distributions"] = copies
    return out


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _gpus(fields: dict[str, str]) -> list[dict[str, Any]]:
    """nvidia-smi -L lines ('GPU 0: NVIDIA A100-SXM4-80GB', UUIDs already removed); the
    capability only where the product name fixes it (so a fix never picks a wheel without it)."""
    out = []
    for line in (fields.get("gpus") or "").splitlines():
        m = _GPU.match(line.strip())
        if m:
            gpu: dict[str, Any] = {"index": int(m.group(1)), "name": m.group(2).strip()}
            cap = gpu_names.capability(gpu["name"])
            if cap:
                gpu.update(capability=list(cap), capability_source="product name")
            out.append(gpu)
    return out


def torch_facts(fields: dict[str, str], dists: dict[str, Any]) -> dict[str, Any]:
    version = value(fields, "torch")
    if version is None:
        # collect_env prints N/A when `import torch` failed; it does not say why.
        if "torch" not in dists:
            return {"status": "missing", "error": {"message": "the report has no torch"}}
        return {
            "status": "import_error",
            "error": {
                "type": "ImportError",
                "message": "collect_env could not import torch (the report does not say why)",
            },
        }
    cuda, hip = value(fields, "cuda_built"), value(fields, "hip_built")
    xpu = value(fields, "xpu_built")
    variant = "cuda" if cuda else "rocm" if hip else "xpu" if xpu or "+xpu" in version else "cpu"
    build: dict[str, Any] = {"variant": variant, "cuda": cuda, "hip": hip}
    debug = _flag(value(fields, "debug"))
    if debug is not None:
        build["debug"] = debug
    torch: dict[str, Any] = {"status": "ok", "version": version, "build": build}
    available = _flag(value(fields, "cuda_available"))
    if available is not None:
        cuda_facts: dict[str, Any] = {"available": available}
        rocm = _ROCM_GPU.match(value(fields, "gpus") or "") if variant == "rocm" else None
        if rocm and available:
            # A ROCm build's collect_env names device 0 and its gfx target, through torch.
            cuda_facts["devices"] = [
                {"index": 0, "name": rocm.group(1), "gcn_arch_name": rocm.group(2)}
            ]
        if available:
            cuda_facts["device_count"] = len(_gpus(fields)) or len(cuda_facts.get("devices", []))
        torch["cuda"] = cuda_facts
    if _flag(value(fields, "xpu_available")):
        # Only a yes is carried: a no comes without the render nodes that would say why.
        names = re.findall(r"\bname='([^']+)'", fields.get("intel_detected") or "")
        torch["xpu"] = {
            "available": True,
            "device_count": len(names),
            "devices": [{"name": n} for n in names],
        }
    return torch


def nvml_facts(fields: dict[str, str]) -> dict[str, Any]:
    """What nvidia-smi told collect_env: the driver and each GPU's name (no capability)."""
    driver, gpus = value(fields, "driver"), _gpus(fields)
    if not driver and not gpus:
        return {
            "status": "unavailable",
            "error": "the report lists no NVIDIA driver or GPU",
        }
    return {"status": "ok", "driver_version": driver, "device_count": len(gpus), "devices": gpus}


def _cpu(fields: dict[str, str]) -> dict[str, Any] | None:
    block = fields.get("cpu") or ""
    model = re.search(r"^\s*(?:Model name|Name)\s*[:=]\s*(.+)$", block, re.M)
    flags = re.search(r"^\s*Flags:\s*(.+)$", block, re.M)
    if not block.strip():
        return None
    cpu: dict[str, Any] = {"model": model.group(1).strip() if model else block.strip()}
    if flags:
        cpu["flags"] = flags.group(1).split()
    return cpu


def _release(version: str) -> str:
    """'2.1.0+cu121', '1.0.1.post2', '2.1.0a0+git' -> the release numbers alone."""
    m = re.match(r"\d+(?:\.\d+){0,2}", version)
    return m.group(0) if m else version


def torch_copies(
    imported: str | None, pip: dict[str, Any], conda: dict[str, Any]
) -> list[dict[str, str]]:
    """Every torch the report names, when they disagree: Python imported one release while pip
    (or conda's own record) lists another — a second copy on the path, or pip over conda."""
    own = conda.get("pytorch") or conda.get("torch")
    named = [
        ("the imported module", imported),
        ("pip's list", pip.get("torch", {}).get("version")),
        # conda lists pip-installed packages too, from channel "pypi": only its own are news.
        ("conda's list", own["version"] if own and own.get("channel") != "pypi" else None),
    ]
    found = [{"location": where, "version": v} for where, v in named if v]
    return found if len({_release(v["version"]) for v in found}) > 1 else []


def to_facts(fields: dict[str, str]) -> dict[str, Any]:
    packages = packages_facts(fields)
    torch = torch_facts(fields, packages["distributions"])
    facts: dict[str, Any] = {
        "facts_version": 1,
        "platform": platform_facts(fields),
        "packages": packages,
        "torch": torch,
    }
    carries = ["torch.status", "torch.version"]
    # "[pip3] Could not collect" and no conda list: which packages are installed is unknown.
    carries += ["packages.distributions"] if packages.pop("listed") else []
    carries += ["platform"] if facts["platform"] else []  # a paste cut before the OS line
    carries += ["torch.build"] if "build" in torch else []
    carries += [k for k in ("torch.cuda", "torch.xpu") if k.split(".")[1] in torch]
    if "gpus" in fields or "driver" in fields:
        facts["nvml"] = nvml_facts(fields)
        carries.append("nvml")
    cpu = _cpu(fields)
    if cpu:
        facts["host"] = {"cpu": cpu}
        carries.append("host.cpu")
    facts["collected"] = {
        "source": SOURCE,
        "torchdoctor_version": __version__,
        "carries": carries,
        "report": {
            "torch": torch.get("version")
            or ("not installed" if torch["status"] == "missing" else "not importable"),
            "os": facts["platform"].get("os") or facts["platform"].get("system"),
            "python": facts["platform"].get("python_version"),
            "labels": [k for k, v in LABELS.items() if v in fields],
        },
    }
    return facts


def parse(text: str) -> dict[str, Any] | None:
    """Facts from the text of a collect_env report, or None when the text holds none."""
    fields = split_fields(text)
    return to_facts(fields) if fields else None
