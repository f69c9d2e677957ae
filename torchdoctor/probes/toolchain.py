"""What building a C++/CUDA extension would use: CUDA_HOME and its nvcc, the host compilers, ninja,
and whether the project in the working directory builds a CUDA extension at all.

Gathered in the parent (no torch needed), beside the torch probe. CUDA_HOME is resolved exactly
as ``torch.utils.cpp_extension._find_cuda_home`` does (torch 2.13): ``CUDA_HOME`` or
``CUDA_PATH``, else the directory above the ``bin/`` of the first ``nvcc`` on ``PATH`` (not
resolving links or wrapper scripts), else ``/usr/local/cuda`` if it exists. Every command runs
without a shell and with a short timeout.

The host compiler nvcc runs for a ``.cu`` file's host code is resolved as nvcc and torch resolve
it (checked with nvcc 13.0's ``-dryrun`` and torch 2.13's cpp_extension): a ``-ccbin`` in
``NVCC_APPEND_FLAGS`` (appended last, so it wins), else ``$CC`` (cpp_extension passes
``-ccbin $CC``), else a ``-ccbin`` in ``NVCC_PREPEND_FLAGS``, else ``NVCC_CCBIN``, else ``gcc``
on PATH (nvcc's default on Linux). ``CUDAHOSTCXX`` is CMake's, which cpp_extension never reads.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..safeio import InputError, read_bounded, read_text_bounded

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


def nvcc_facts(cuda_home: str, suffix: str = "") -> dict[str, Any]:
    path = os.path.join(cuda_home, "bin", "nvcc" + suffix)
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
    out, seen = [], set()
    for d in sorted(glob.glob(pattern), key=lambda p: (os.path.islink(p), p)):
        real = os.path.realpath(d)
        if real in seen or not os.path.exists(os.path.join(d, "bin", "nvcc")):
            continue  # /usr/local/cuda-13 -> cuda-13.0 (the alternatives link) is listed once
        seen.add(real)
        m = re.search(r"cuda-(\d+\.\d+)$", d)
        out.append(
            {
                "path": d,
                "release": m.group(1) if m else _version_json_release(d),
                "has_headers": os.path.exists(os.path.join(d, "include", "cuda_runtime.h")),
            }
        )
    return out


def _version_json_release(toolkit: str) -> str | None:
    """'13.0' from the toolkit's version.json ({"cuda": {"version": "13.0.88"}}), read bounded."""
    try:
        doc = json.loads(read_text_bounded(os.path.join(toolkit, "version.json"), 1 << 16))
        m = re.match(r"(\d+)\.(\d+)", str(doc["cuda"]["version"]))
    except (InputError, ValueError, KeyError, TypeError):
        return None
    return f"{m.group(1)}.{m.group(2)}" if m else None


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


# --- the host compiler nvcc would run, and the newest one the toolkit accepts ---

_CCBIN = re.compile(r"^(?:-ccbin|--compiler-bindir)(?:=(.+))?$")
_CLANG_VERSION = re.compile(r"clang version (\d+\.\d+(?:\.\d+)?)")
HOST_CONFIG_LIMIT = 256 * 1024  # host_config.h is ~10 KB; a bigger file is not NVIDIA's
# host_config.h's gates: "#if __GNUC__ > 15" before "unsupported GNU version", and the plain
# (not Grace or HOS) clang gate "__clang_major__ >= 21" before "unsupported clang version"
_GCC_GATE = re.compile(r"#if\s+__GNUC__\s*>\s*(\d+)\s*\n\s*\n?\s*#error -- unsupported GNU version")
_CLANG_GATE = re.compile(
    r"#if\s+\(__clang_major__\s*>=\s*(\d+)\)[^\n]*\n\s*\n?\s*#error -- unsupported clang version"
)


def ccbin_flag(flags: str | None) -> str | None:
    """The value of the last ``-ccbin X`` / ``--compiler-bindir=X`` in an NVCC_*_FLAGS value."""
    try:
        words = shlex.split(flags or "")
    except ValueError:
        return None
    found = None
    for i, word in enumerate(words):
        m = _CCBIN.match(word)
        if m:
            found = m.group(1) or (words[i + 1] if i + 1 < len(words) else None)
    return found


def host_compiler_name(environ: Mapping[str, str]) -> tuple[str, str]:
    """(the compiler nvcc would run for host code, why that one), as nvcc and cpp_extension
    pick it."""
    appended = ccbin_flag(environ.get("NVCC_APPEND_FLAGS"))
    if appended:
        return appended, "-ccbin in NVCC_APPEND_FLAGS"
    if environ.get("CC"):
        return environ["CC"], "CC (torch's cpp_extension passes -ccbin $CC to nvcc)"
    prepended = ccbin_flag(environ.get("NVCC_PREPEND_FLAGS"))
    if prepended:
        return prepended, "-ccbin in NVCC_PREPEND_FLAGS"
    if environ.get("NVCC_CCBIN"):
        return environ["NVCC_CCBIN"], "NVCC_CCBIN"
    if os.name == "nt":
        return "cl", "cl on PATH (nvcc's default host compiler on Windows)"
    return "gcc", "gcc on PATH (nvcc's default host compiler)"


def compiler_kind(output: str) -> tuple[str | None, str | None]:
    """(gcc | clang | apple-clang | None, version) from a compiler's ``--version`` text."""
    first = output.splitlines()[0] if output else ""
    m = _CLANG_VERSION.search(output)
    if m:
        return ("apple-clang" if "Apple" in output else "clang"), m.group(1)
    if "Free Software Foundation" in output or "(GCC)" in first:
        found = _VERSION.findall(first)
        return "gcc", found[-1] if found else None
    return None, None


def host_compiler(environ: Mapping[str, str], which: Callable[[str], str | None]) -> dict[str, Any]:
    name, source = host_compiler_name(environ)
    # -ccbin may name the directory that holds the compiler: nvcc runs gcc from it
    path = os.path.join(name, "gcc") if os.path.isdir(name) else which(name)
    facts: dict[str, Any] = {"name": name, "source": source, "path": path}
    if path:
        facts.update(run_version([path, "--version"]))
        facts["kind"], facts["version"] = compiler_kind(facts.get("output") or "")
        first = (facts.get("output") or "").splitlines()[:1]
        facts["output"] = first[0] if first else ""
    return facts


def host_limits(cuda_home: str) -> dict[str, int]:
    """The newest GCC and clang majors this toolkit's nvcc accepts, read from its host_config.h
    (``include/crt/`` since CUDA 9, ``include/`` before)."""
    for rel in ("include/crt/host_config.h", "include/host_config.h"):
        try:
            text = read_bounded(
                os.path.join(cuda_home, rel), HOST_CONFIG_LIMIT, allow_stdin=False
            ).decode("utf-8", "replace")
        except InputError:
            continue
        limits: dict[str, int] = {}
        if m := _GCC_GATE.search(text):
            limits["host_gcc_max"] = int(m.group(1))
        if m := _CLANG_GATE.search(text):
            limits["host_clang_max"] = int(m.group(1)) - 1  # ">= 21" refuses 21
        return limits
    return {}


# --- does the project here build a CUDA extension? ---

PROJECT_DEPTH = 3  # the working directory and three folders down (a package's csrc/ops)
PROJECT_MAX_ENTRIES = 4000  # directory entries looked at, in all
PROJECT_MAX_FILES = 200  # files read, in all
PROJECT_FILE_LIMIT = 512 * 1024  # bytes per file: a build script is small
PROJECT_MAX_BYTES = 16 * 1024 * 1024  # bytes read, in all
PROJECT_TIME_S = 2.0  # a slow or huge tree costs at most this
BUILD_FILES = ("setup.py", "pyproject.toml", "setup.cfg")
# folders that hold someone else's code or nothing of the project's
SKIP_DIRS = {
    "node_modules",
    "site-packages",
    "dist-packages",
    "__pycache__",
    "build",
    "dist",
    "venv",
    "env",
    "third_party",
    "proc",
    "sys",
    "dev",
}
_CUDA_EXTENSION = re.compile(r"\bCUDAExtension\b")


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def _cu_strings(node: ast.Call) -> bool:
    """A ``.cu`` file among a call's string arguments (lists included), or cuda_sources=."""
    if any(k.arg == "cuda_sources" for k in node.keywords):
        return True
    values = [*node.args, *(k.value for k in node.keywords)]
    for value in values:
        for sub in ast.walk(value):
            is_text = isinstance(sub, ast.Constant) and isinstance(sub.value, str)
            if is_text and sub.value.endswith((".cu", ".cuh")):
                return True
    return False


def _loaders(tree: ast.AST) -> set[str]:
    """The names a module calls cpp_extension's load()/load_inline() by: ``load``,
    ``load_inline``, and their aliases (``from torch.utils.cpp_extension import load as
    load_extension``, as gandissect's prroi_pool does)."""
    names = {"load", "load_inline"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cpp_extension"):
            names.update(a.asname for a in node.names if a.asname and a.name.startswith("load"))
    return names


def python_marker(text: str) -> str | None:
    """A module that calls CUDAExtension(...), or cpp_extension's load()/load_inline() with .cu
    sources. Parsed, never run: a mention in a comment or a string is not a build."""
    if "CUDAExtension" not in text and "cpp_extension" not in text:
        return None  # most files: no parse
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    loaders = _loaders(tree) if "cpp_extension" in text else set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if name == "CUDAExtension":
            return "CUDAExtension"
        if name in loaders and _cu_strings(node):
            return "cpp_extension.load with CUDA sources"
    return None


def build_marker(name: str, text: str) -> str | None:
    """How a file shows it builds a CUDA extension, or None: a CUDAExtension in setup.py, a
    module, pyproject.toml or setup.cfg, or torch.utils.cpp_extension's load()/load_inline()
    given .cu sources."""
    if name.endswith(".py"):
        return python_marker(text)
    return "CUDAExtension" if _CUDA_EXTENSION.search(text) else None


def _skip_dir(entry: os.DirEntry[str]) -> bool:
    if entry.name.startswith(".") or entry.name in SKIP_DIRS:
        return True
    # a virtual environment or a conda environment: installed packages, not the project
    return any(
        os.path.lexists(os.path.join(entry.path, marker)) for marker in ("pyvenv.cfg", "conda-meta")
    )


class _Budget:
    def __init__(self) -> None:
        self.entries = 0
        self.files = 0
        self.bytes = 0
        self.until = time.monotonic() + PROJECT_TIME_S
        self.truncated = False

    def spent(self) -> bool:
        if (
            self.entries >= PROJECT_MAX_ENTRIES
            or self.files >= PROJECT_MAX_FILES
            or self.bytes >= PROJECT_MAX_BYTES
            or time.monotonic() > self.until
        ):
            self.truncated = True
        return self.truncated


def _candidates(root: str, depth: int, budget: _Budget) -> Iterator[os.DirEntry[str]]:
    """Regular files that could build an extension, build files first, breadth-first."""
    folders = [root]
    for level in range(depth + 1):
        below: list[str] = []
        for folder in folders:
            try:
                with os.scandir(folder) as it:
                    entries = []
                    for entry in it:
                        budget.entries += 1
                        entries.append(entry)
                        if budget.spent():
                            break
            except OSError:
                continue
            entries.sort(key=lambda e: (e.name not in BUILD_FILES, e.name))
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if level < depth and not _skip_dir(entry):
                            below.append(entry.path)
                    elif entry.is_file(follow_symlinks=False) and (
                        entry.name in BUILD_FILES or entry.name.endswith(".py")
                    ):
                        yield entry
                except OSError:
                    continue
            if budget.truncated:
                return
        folders = sorted(below)


def project_facts(root: str | None = None, depth: int = PROJECT_DEPTH) -> dict[str, Any]:
    """Files under ``root`` (the working directory) that build a CUDA extension: evidence that
    the user is about to build one, which a machine running prebuilt wheels does not show."""
    try:
        root = os.path.abspath(root or os.getcwd())
    except OSError as exc:
        return {"error": exc.strerror or str(exc)}
    budget = _Budget()
    builds: list[dict[str, str]] = []
    for entry in _candidates(root, depth, budget):
        if budget.spent():
            break
        budget.files += 1
        try:
            data = read_bounded(entry.path, PROJECT_FILE_LIMIT, allow_stdin=False)
        except InputError:
            continue  # too big, unreadable, or no longer a regular file
        budget.bytes += len(data)
        marker = build_marker(entry.name, data.decode("utf-8", "replace"))
        if marker:
            builds.append({"path": os.path.relpath(entry.path, root), "marker": marker})
            if len(builds) >= 10:
                break
    return {
        "root": root,
        "cuda_builds": builds,
        "files_read": budget.files,
        "truncated": budget.truncated,
    }


# Visual Studio's environment script, under either Program Files (VS 2022 installs under
# "Program Files", older ones under "Program Files (x86)": NVlabs/nvdiffrast#81).
VCVARS = "Microsoft Visual Studio/*/*/VC/Auxiliary/Build/vcvars64.bat"


def windows_cxx(environ: Mapping[str, str], which: Callable[[str], str | None]) -> dict[str, Any]:
    """cpp_extension compiles with MSVC's cl.exe on Windows, found on PATH only (a "Developer
    Command Prompt" puts it there): cl has no --version, so it is not run."""
    path = which(environ.get("CXX") or "cl")
    facts: dict[str, Any] = {"name": environ.get("CXX") or "cl", "path": path, "ok": bool(path)}
    roots = [environ.get(v) for v in ("ProgramFiles", "ProgramFiles(x86)")]
    found = sorted(
        p for r in roots if r for p in glob.glob(os.path.join(glob.escape(r), VCVARS))[:8]
    )
    if found:
        facts["vcvars"] = found[-1]  # the newest release sorts last ("2019" < "2022")
    return facts


def gather(
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    system: str | None = None,
) -> dict[str, Any]:
    environ = os.environ if environ is None else environ
    windows = (system or platform.system()) == "Windows"
    # the project look (bounded by PROJECT_TIME_S) runs beside the --version calls, so the
    # toolchain's share of the run's deadline does not grow
    project: dict[str, Any] = {}
    look = threading.Thread(target=lambda: project.update(project_facts()), daemon=True)
    look.start()
    cuda_home, source = resolve_cuda_home(environ, which, os.path.exists)
    facts: dict[str, Any] = {
        "status": "ok",
        "cuda_home": {"path": cuda_home, "source": source},
        "toolkits": installed_toolkits(),
        # cpp_extension compiles with $CXX, else c++ (it checks the compiler ABI against torch's).
        "cxx": windows_cxx(environ, which) if windows else tool(environ.get("CXX") or "c++", which),
        "ninja": tool("ninja", which),
        "host_cc": host_compiler(environ, which),
    }
    if cuda_home:
        facts["cuda_home"].update(
            exists=os.path.isdir(cuda_home),
            has_headers=os.path.exists(os.path.join(cuda_home, "include", "cuda_runtime.h")),
            **host_limits(cuda_home),
        )
        facts["nvcc"] = nvcc_facts(cuda_home, ".exe" if windows else "")
    rocm_home = environ.get("ROCM_HOME") or environ.get("ROCM_PATH")
    hipcc = which("hipcc")
    if not rocm_home and hipcc:
        rocm_home = os.path.dirname(os.path.dirname(os.path.realpath(hipcc)))
    if not rocm_home and os.path.exists("/opt/rocm"):
        rocm_home = "/opt/rocm"
    facts["rocm_home"] = rocm_home
    look.join(PROJECT_TIME_S + 1.0)
    facts["project"] = dict(project) if not look.is_alive() else {"error": "no answer in time"}
    return facts
