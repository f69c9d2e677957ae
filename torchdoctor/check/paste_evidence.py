"""torch's own words in a pasted issue body, read as facts (``report.evidence``).

People paste the warning torch printed above the collect_env report and the traceback below it,
and those lines are often the whole diagnosis: "The NVIDIA driver on your system is too old
(found version 10010)", "... with CUDA capability sm_120 is not compatible ...", "libcudnn.so.9:
cannot open shared object file". Each line torch (or torchvision, or HIP) prints for a known
failure becomes one record ``{kind, line, ...parsed values}``; checks judge them like gathered
facts and quote the line. Pure: text in, records out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# A quoted line is cut to this many characters (a paste's lines can be very long).
MAX_QUOTE = 600
MAX_RECORDS = 40

Parser = Callable[[re.Match[str]], dict[str, Any]]


def _none(_m: re.Match[str]) -> dict[str, Any]:
    return {}


def _driver(m: re.Match[str]) -> dict[str, Any]:
    # torch prints cudaDriverGetVersion(): 10010 is CUDA 10.1, 12020 is CUDA 12.2.
    found = int(m.group(1))
    return {"driver_cuda": f"{found // 1000}.{found % 1000 // 10}"} if found >= 1000 else {}


def _arch(m: re.Match[str]) -> dict[str, Any]:
    return {"device": m.group(1).strip(), "capability": [int(m.group(2)), int(m.group(3))]}


def _supported(m: re.Match[str]) -> dict[str, Any]:
    return {"arch_list": m.group(1).split()}


def _library(m: re.Match[str]) -> dict[str, Any]:
    return {"library": m.group(1)}


def _symbol(m: re.Match[str]) -> dict[str, Any]:
    return {"symbol": m.group(1)}


_PATH_TAIL = re.compile(r"[^\s:'\"]{1,300}$")


def _library_symbol(m: re.Match[str]) -> dict[str, Any]:
    # The library is what tells torch's own import error from an extension built for another
    # torch (flash_attn_2_cuda...so, torch_scatter/_scatter_cuda.so). Its path is read from a
    # bounded window before the match, so a hostile line stays linear.
    path = _PATH_TAIL.search(m.string[max(0, m.start() - 300) : m.start()])
    return {"library": (path.group(0) if path else "") + ".so", "symbol": m.group(1)}


def _operator(m: re.Match[str]) -> dict[str, Any]:
    return {"operator": m.group(1)}


def _init(m: re.Match[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"error": m.group(1).strip()[:MAX_QUOTE]}
    code = re.search(r"Error (\d+): ", m.group(1))
    if code:
        out["code"] = int(code.group(1))
    return out


def _mps(m: re.Match[str]) -> dict[str, Any]:
    return {"macos_floor": m.group(1)}


def _cuda_mismatch(m: re.Match[str]) -> dict[str, Any]:
    return {"torch_cuda": m.group(1), "companion_cuda": m.group(2)}


# kind -> (pattern searched in each line, what the match says). Patterns are anchored on torch's
# fixed wording; every quantifier is bounded by the line cap, so a hostile paste stays linear.
PATTERNS: dict[str, tuple[re.Pattern[str], Parser]] = {
    "driver-too-old": (
        re.compile(r"NVIDIA driver on your system is too old \(found version (\d{1,6})\)"),
        _driver,
    ),
    "arch-unsupported": (
        re.compile(
            r"(?:^|: )((?:NVIDIA |Tesla |Quadro |GeForce |TITAN )[^:]{1,80}?) with CUDA "
            r"capability sm_(\d{1,2})(\d) is not compatible with the current PyTorch"
        ),
        _arch,
    ),
    "arch-supported": (
        re.compile(
            r"current PyTorch install supports CUDA capabilities ((?:(?:sm|compute)_\d+ ?)+)"
        ),
        _supported,
    ),
    "no-kernel-image": (
        re.compile(r"no kernel image is available for execution on the device"),
        _none,
    ),
    "not-compiled-with-cuda": (re.compile(r"Torch not compiled with CUDA enabled"), _none),
    "library-missing": (
        re.compile(r"(lib[\w+-]{1,60}\.so(?:\.\d+){0,3}): cannot open shared object file"),
        _library,
    ),
    # The loader's words when a library beside torch is too old or the wrong build (an import
    # error's cause: GLIBCXX_3.4.30 from libstdc++, iJIT_NotifyEvent from MKL).
    "symbol-version-missing": (
        re.compile(r"version `?((?:GLIBCXX|GLIBC|CXXABI)_[\d.]{1,12})'? not found"),
        _symbol,
    ),
    "undefined-symbol": (
        re.compile(r"\.so[.\d]{0,12}: undefined symbol: (\w{1,200})"),
        _library_symbol,
    ),
    "operator-missing": (
        re.compile(r"(?:operator|No such operator) (torchvision::\w{1,40})(?: does not exist|$)"),
        _operator,
    ),
    "companion-cuda-mismatch": (
        re.compile(
            r"PyTorch has CUDA Version=(\d+\.\d+) and torchvision has CUDA Version=(\d+\.\d+)"
        ),
        _cuda_mismatch,
    ),
    "no-driver": (re.compile(r"Found no NVIDIA driver on your system"), _none),
    "hip-invalid-device-function": (re.compile(r"HIP error: invalid device function"), _none),
    "invalid-device-ordinal": (re.compile(r"invalid device ordinal"), _none),
    "cuda-init-error": (
        re.compile(r"CUDA initialization: (.{1,300}?)(?: \(Triggered internally|$)"),
        _init,
    ),
    "mps-macos-floor": (
        re.compile(r"The MPS backend is supported on Mac ?OS (\d{2}(?:\.\d)?)\+", re.I),
        _mps,
    ),
    "numpy-missing": (re.compile(r"Failed to initialize NumPy: No module named 'numpy'"), _none),
    "nccl-not-built": (re.compile(r"Distributed package doesn't have NCCL built in"), _none),
    "mps-op-missing": (
        re.compile(r"operator '?(aten::[\w.]{1,80})'? is not currently implemented for the MPS"),
        _operator,
    ),
    "mps-out-of-memory": (re.compile(r"MPS backend out of memory"), _none),
}


def read(lines: list[str]) -> list[dict[str, Any]]:
    """Every line of ``lines`` that carries torch's words for a known failure, in order, each
    kind and line once (a warning printed twice is one fact)."""
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip().strip("`").strip()
        for kind, (pattern, parse) in PATTERNS.items():
            m = pattern.search(line)
            if not m or (kind, line) in seen:
                continue
            seen.add((kind, line))
            out.append({"kind": kind, "line": line[:MAX_QUOTE], "at": number, **parse(m)})
    return _join_arch(out)[:MAX_RECORDS]


def _join_arch(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """torch prints the supported list on the line after the incompatible GPU: one fact."""
    supported = next((r for r in records if r["kind"] == "arch-supported"), None)
    if supported is None:
        return records
    for r in records:
        if r["kind"] == "arch-unsupported":
            r.setdefault("arch_list", supported["arch_list"])
            if supported["line"] != r["line"]:  # one line (a recorded warning) holds both
                r["line"] = f"{r['line']} {supported['line']}"[:MAX_QUOTE]
    if any(r["kind"] == "arch-unsupported" for r in records):
        records = [r for r in records if r is not supported]
    return records


def of_kind(evidence: list[Any], *kinds: str) -> list[tuple[int, Any]]:
    """(index, record) of the evidence records of these kinds; the index makes the evidence path
    ``report.evidence.<index>`` a remedy rests on."""
    return [(i, e) for i, e in enumerate(evidence) if _kind(e) in kinds]


def _kind(record: Any) -> str | None:
    return record.get("kind") if isinstance(record, dict) else getattr(record, "kind", None)


# --- the live check: torch's own words the probe recorded ---------------------------------------


def _said_live(facts: dict[str, Any]) -> list[tuple[str, str]]:
    """(fact path, text) of every message torch (or a companion) printed on this machine: CUDA's
    warnings, the import error, each companion's import error."""
    torch = facts.get("torch")
    if not isinstance(torch, dict):
        return []
    cuda = torch.get("cuda") if isinstance(torch.get("cuda"), dict) else {}
    warnings = cuda.get("warnings") if isinstance(cuda.get("warnings"), list) else []
    said = [(f"torch.cuda.warnings.{i}", w) for i, w in enumerate(warnings)]
    said.append(("torch.error.message", (torch.get("error") or {}).get("message")))
    companions = torch.get("companions") if isinstance(torch.get("companions"), dict) else {}
    for name, probed in companions.items():
        error = (probed or {}).get("error") if isinstance(probed, dict) else None
        said.append((f"torch.companions.{name}.error.message", (error or {}).get("message")))
    return [(path, text) for path, text in said if isinstance(text, str) and text]


def read_live(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of torch's own words in a gathered facts JSON, as a paste's are read; each
    names the fact it was read from (``source``) instead of a line number."""
    out: list[dict[str, Any]] = []
    for path, text in _said_live(facts):
        for found in read(text.splitlines()):
            found.pop("at", None)
            out.append({**found, "source": path})
    return out[:MAX_RECORDS]


def with_live_evidence(facts: dict[str, Any]) -> dict[str, Any]:
    """A gathered facts JSON with torch's own words as ``report.evidence`` (none: unchanged),
    so the checks quote and cite them as they do a pasted report's."""
    found = read_live(facts)
    if found and isinstance(facts, dict) and "report" not in facts:
        facts["report"] = {"evidence": found}
    return facts
