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

from torchdoctor.data import compat, gpu_names

from ..version import __version__
from . import paste_evidence

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
# Labels only collect_env prints: one of them (or a [pip3]/[conda] line) makes a text a report,
# however short (a paste cut after its first line is still evidence). OS/GCC/Python/CPU alone
# are too common in prose to count.
WEAK_LABELS = {"os", "gcc", "clang", "cmake", "python", "cpu"}
# Other spellings of the same fields: downstream collect_env variants (doctr, pyrovision) and
# hand-retyped reports ("Os:", "Version of relevant libraries:").
ALIASES: dict[str, str] = {
    "is cuda available (pytorch)": "cuda_available",
    "version of relevant libraries": "libraries",
    "versions of relevant libraries": "libraries",
}
_KEYS = {k.casefold(): v for k, v in LABELS.items()} | ALIASES
# "PyTorch version 1.5.0" (retyped without its colon).
_BARE_TORCH = re.compile(r"^PyTorch version\s+(\d+\.\d+[\w.+-]*)$", re.I)
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
        line = _QUOTE.sub("", raw[:MAX_LINE]).rstrip().replace("\uff1a", ": ")
        if not _FENCE.match(line):
            out.append(line)
    return out


def _label(line: str) -> tuple[str, str] | None:
    """(field, value) for a collect_env line, in torch's layout ("Label: value"), the padded
    layout of vLLM's variant ("Label        : value") or a retyped one; None for other lines."""
    text = line.strip()
    bare = _BARE_TORCH.match(text)
    if bare:
        return "torch", bare.group(1)
    key, sep, rest = text.partition(":")
    name = _KEYS.get(" ".join(key.split()).casefold()) if sep else None
    return (name, rest.strip()) if name else None


def split_fields(text: str) -> dict[str, str] | None:
    """The report's fields (multi-line ones joined by newlines), or None when there is none.

    Any recognisable field makes a report, wherever it stands: a paste cut after one line, a
    report inside an issue template, a variant's sectioned layout. A field's continuation lines
    (GPU list, cuDNN candidates, the CPU block, package lines) run to the next label or blank line;
    the package list ends at the first line not tagged [pip]/[conda]. A label seen twice starts
    another block (the same report pasted twice, or torch's version printed by a script above
    it): the block with the most fields is the report.
    """
    blocks: list[dict[str, str]] = [{}]
    current: str | None = None
    for line in _lines(text):
        current = _take(blocks, current, line)
    fields = max(blocks, key=len)
    strong = [name for name in fields if name not in WEAK_LABELS]
    return fields if strong else None


COLLECTING = "Collecting environment information"


def _take(blocks: list[dict[str, str]], current: str | None, line: str) -> str | None:
    """Add one line to the report being read; the field later lines continue."""
    fields = blocks[-1]
    labelled = _label(line)
    stripped = line.strip()
    if stripped.startswith(COLLECTING) and fields:
        # collect_env's own first line: what came before (an issue template's example fields,
        # pytorch/pytorch#46973's "Is debug build: False") is not this report.
        blocks.append({})
        return None
    if labelled:
        name, rest = labelled
        if name in fields:
            blocks.append(fields := {})
        fields[name] = rest
        return name
    if _PKG.match(stripped):
        # vLLM's variant heads its package list with a section title, not a label.
        fields["libraries"] = (fields.get("libraries", "") + "\n" + stripped).strip()
        return "libraries"
    if current == "libraries" or not current:
        return None if stripped else current
    if not stripped:
        # A blank line ends a field that has a value; the CPU block goes on to the next label.
        return None if fields.get(current) and current != "cpu" else current
    if current in MULTILINE:
        fields[current] += "\n" + line
    return current


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
        if brand:  # without the CPU line, whether an x86_64 Python runs under Rosetta is unknown
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
            # conda list marks a tracked feature in brackets ("py3.8_cpu_0 [cpuonly] pytorch"):
            # a column of its own that is neither the build nor the channel.
            parts = [p for p in rest.split() if not p.startswith("[")]
            if len(parts) >= 2:
                rec = {"version": parts[1]}
                if len(parts) >= 3:
                    # conda list leaves the channel column empty for Anaconda's defaults
                    rec["build"] = parts[2]
                if len(parts) >= 4:
                    rec["channel"] = parts[3]
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


def _listed_torch(dists: dict[str, Any]) -> dict[str, Any]:
    """A paste without the PyTorch line (cut above it, or only the package list): what pip or
    conda lists is the torch installed, its local tag the build; whether it imports is unknown."""
    listed = (dists.get("torch") or {}).get("version")
    if not listed:
        return {}
    tag = listed.partition("+")[2]
    variant = next((v for p, v in _TAG_VARIANTS if tag.startswith(p)), None)
    if variant is None:
        return {"version": listed}
    build: dict[str, Any] = {"variant": variant}
    if variant == "cuda" and tag[2:].isdigit() and len(tag) >= 4:
        build["cuda"] = f"{tag[2:-1]}.{tag[-1]}"
    if variant == "rocm":
        build["hip"] = tag[4:]
    return {"version": listed, "build": build}


# pip's local tags (torch 2.5.1+cu124, +rocm6.2, +xpu, +cpu) name the build.
_TAG_VARIANTS = (("cu", "cuda"), ("rocm", "rocm"), ("xpu", "xpu"), ("cpu", "cpu"))


def _published_archs(version: str) -> list[str]:
    """The arch list of a download.pytorch.org CUDA wheel ('2.6.0+cu126'), from the published
    table; a build without the tag (conda, a source build) is not that wheel."""
    tag = version.partition("+")[2]
    if not re.fullmatch(r"cu\d{3}", tag):
        return []
    return list(compat.arch_list(compat.torch_minor(version) or "", tag))


NO_REASON = "collect_env could not import torch (the report does not say why)"


def _no_torch(dists: dict[str, Any], listed: bool) -> dict[str, Any]:
    """collect_env prints N/A when `import torch` failed, installed or not: a package list
    without torch says which; else the import failed (the pasted traceback may say why)."""
    if listed and "torch" not in dists:
        return {"status": "missing", "error": {"message": "the report has no torch"}}
    return {
        "status": "import_error",
        "error": {
            "type": "ImportError",
            "message": NO_REASON,
        },
    }


def torch_facts(
    fields: dict[str, str], dists: dict[str, Any], listed: bool = True
) -> dict[str, Any]:
    if "torch" not in fields:
        return _listed_torch(dists)
    version = value(fields, "torch")
    if version is None:
        return _no_torch(dists, listed)
    version = version.split()[0]  # "1.8.0 (torchvision: 0.9.0)" in doctr's variant
    cuda, hip = value(fields, "cuda_built"), value(fields, "hip_built")
    xpu = value(fields, "xpu_built")
    variant = "cuda" if cuda else "rocm" if hip else "xpu" if xpu or "+xpu" in version else "cpu"
    if "cuda_built" not in fields and "hip_built" not in fields:
        # Cut before the build lines: only a wheel's local tag still names the build.
        listed = _listed_torch({"torch": {"version": version}}).get("build", {})
        variant, cuda, hip = listed.get("variant"), listed.get("cuda"), listed.get("hip")
    build: dict[str, Any] = {"variant": variant, "cuda": cuda, "hip": hip}
    debug = _flag(value(fields, "debug"))
    if debug is not None:
        build["debug"] = debug
    published = _published_archs(version)
    if variant == "cuda" and published:
        build["arch_list"] = published
    torch: dict[str, Any] = {"status": "ok", "version": version}
    if variant:
        torch["build"] = build
    available = _flag(value(fields, "cuda_available"))
    if available is not None:
        torch["cuda"] = _cuda_facts(fields, variant, available)
    if _flag(value(fields, "xpu_available")):
        # Only a yes is carried: a no comes without the render nodes that would say why.
        names = re.findall(r"\bname='([^']+)'", fields.get("intel_detected") or "")
        torch["xpu"] = {
            "available": True,
            "device_count": len(names),
            "devices": [{"name": n} for n in names],
        }
    return torch


def _cuda_facts(fields: dict[str, str], variant: str | None, available: bool) -> dict[str, Any]:
    """torch.cuda as the report shows it: a ROCm build names device 0 and its gfx target; a CUDA
    build's devices are nvidia-smi's GPUs (torch saw them: CUDA is available)."""
    cuda_facts: dict[str, Any] = {"available": available}
    rocm = _ROCM_GPU.match(value(fields, "gpus") or "") if variant == "rocm" else None
    if rocm and available:
        cuda_facts["devices"] = [
            {"index": 0, "name": rocm.group(1), "gcn_arch_name": rocm.group(2)}
        ]
    elif available and variant == "cuda":
        cuda_facts["devices"] = [
            {k: g[k] for k in ("index", "name", "capability") if k in g} for g in _gpus(fields)
        ]
    if available:
        cuda_facts["device_count"] = len(_gpus(fields)) or len(cuda_facts.get("devices", []))
    return cuda_facts


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


def to_facts(
    fields: dict[str, str], evidence: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The facts record of a report's fields and torch's own words pasted around it."""
    evidence = evidence or []
    packages = packages_facts(fields)
    listed = packages.pop("listed")
    torch = with_evidence(torch_facts(fields, packages["distributions"], listed), evidence)
    facts: dict[str, Any] = {
        "facts_version": 1,
        "platform": platform_facts(fields),
        "packages": packages,
        "torch": torch,
    }
    # The PyTorch line says which torch imported, or (N/A) that none did.
    carries = ["torch.status", "torch.version"] if "torch" in fields else []
    carries += ["torch.version"] if "torch" not in fields and torch.get("version") else []
    # "[pip3] Could not collect" and no conda list: which packages are installed is unknown.
    carries += ["packages.distributions"] if listed else []
    carries += ["platform"] if facts["platform"] else []  # a paste cut before the OS line
    carries += ["torch.build"] if "build" in torch else []
    carries += [k for k in ("torch.cuda", "torch.xpu") if k.split(".")[1] in torch]
    if _lists_gpus(fields, torch, facts["platform"].get("system")):
        facts["nvml"] = nvml_facts(fields)
        carries.append("nvml")
    cpu = _cpu(fields)
    if cpu:
        facts["host"] = {"cpu": cpu}
        carries.append("host.cpu")
    if evidence:
        facts["report"] = {"evidence": evidence}
        carries.append("report.evidence")
    facts["collected"] = {
        "source": SOURCE,
        "torchdoctor_version": __version__,
        "carries": carries,
        "report": {
            "torch": torch.get("version") or _no_torch_words(torch.get("status")),
            "os": facts["platform"].get("os") or facts["platform"].get("system"),
            "python": facts["platform"].get("python_version"),
            "labels": [k for k, v in LABELS.items() if v in fields],
        },
    }
    return facts


def _lists_gpus(fields: dict[str, str], torch: dict[str, Any], system: str | None) -> bool:
    """Does the report say which NVIDIA GPUs and driver there are (none is an answer)? A CPU
    build's collect_env never asks nvidia-smi ("No CUDA"): the GPUs are then not in the report.
    A CUDA build's "Could not collect" is nvidia-smi failing (no driver); macOS has none."""
    if value(fields, "gpus") or value(fields, "driver"):
        return True
    if "gpus" not in fields and "driver" not in fields:
        return False
    asked = torch.get("build", {}).get("variant") == "cuda"
    failed = (fields.get("gpus") or "").strip().lower() == "could not collect"
    return system == "Darwin" or (asked and failed)


def _no_torch_words(status: str | None) -> str:
    return {"missing": "not installed", "import_error": "not importable"}.get(
        status or "", "not in the report"
    )


# The loader's errors that, beside a report that could not import torch, are why.
_IMPORT_ERRORS = ("library-missing", "symbol-version-missing", "undefined-symbol")


def with_evidence(torch: dict[str, Any], evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """torch's own warning names an incompatible GPU's capability and the wheel's arch list:
    the arch list is the build's, the capability the device's (by name)."""
    _cuda_warnings(torch, evidence)
    missing = next((e for e in evidence if e["kind"] in _IMPORT_ERRORS), None)
    if missing and torch.get("status") == "import_error":
        kind, _, rest = missing["line"].partition(": ")
        named = kind in ("ImportError", "OSError")  # the line names its exception: keep it apart
        torch["error"] = {
            "type": kind if named else "ImportError",
            "message": rest if named else missing["line"],
        }
    for e in evidence:
        if e["kind"] != "arch-unsupported":
            continue
        build = torch.get("build")
        if build and e.get("arch_list") and not build.get("arch_list"):
            build["arch_list"] = list(e["arch_list"])
        for d in torch.get("cuda", {}).get("devices", []):
            if d.get("name") == e["device"]:
                d["capability"] = list(e["capability"])
    return torch


# torch's CUDA initialisation warnings: what the probe records in torch.cuda.warnings.
_CUDA_WARNINGS = ("driver-too-old", "no-driver", "cuda-init-error")


def _cuda_warnings(torch: dict[str, Any], evidence: list[dict[str, Any]]) -> None:
    """torch's CUDA warnings pasted with a CUDA build are torch.cuda.warnings, as a probe records
    them; torch prints them when is_available() fails, so a report cut before that line still
    says CUDA was unavailable."""
    lines = list(dict.fromkeys(e["line"] for e in evidence if e["kind"] in _CUDA_WARNINGS))
    if not lines or torch.get("build", {}).get("variant") != "cuda":
        return
    cuda = torch.setdefault("cuda", {"available": False})
    if cuda.get("available") is False:
        cuda["warnings"] = lines


def parse(text: str) -> dict[str, Any] | None:
    """Facts from the text of a collect_env report, or None when the text holds none."""
    fields = split_fields(text)
    return to_facts(fields, paste_evidence.read(_lines(text))) if fields else None
