"""The compiler toolchain for extensions: nvcc, CUDA_HOME, host compilers, ninja, and whether the
project in the working directory builds a CUDA extension."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Version

from .base import Bool, Int, Str, record


@record
class Tool(Record):
    path: Str
    vcvars: Str  # Windows: Visual Studio's vcvars64.bat, where one is installed
    name: Str
    ok: Bool
    exists: Bool
    output: Str
    returncode: Int
    version: Str
    release: Str


@record
class CudaHome(Record):
    path: Str
    source: Str
    exists: Bool
    has_headers: Bool
    # the newest host compiler majors this toolkit's nvcc accepts (its include/crt/host_config.h)
    host_gcc_max: Int
    host_clang_max: Int


@record
class HostCompiler(Record):
    """The compiler nvcc runs for a .cu file's host code, and why that one."""

    name: Str
    source: Str  # "CC (...)", "NVCC_CCBIN", "gcc on PATH (...)", ...
    path: Str
    ok: Bool
    returncode: Int
    output: Str
    kind: Str  # gcc | clang | apple-clang; None: not recognised
    version: Str


@record
class ProjectBuild(Record):
    path: Str  # relative to the project root
    marker: Str  # what shows it: "CUDAExtension", "cpp_extension.load with CUDA sources"


@record
class Project(Record):
    """Files in the working directory (and two levels below) that build a CUDA extension."""

    root: Str
    cuda_builds: list[ProjectBuild]
    files_read: Int
    truncated: Bool  # the look stopped at its bounds: absence proves less
    error: Str


@record
class Toolkit(Record):
    path: Str
    # null: a folder whose name and version.json do not say (recorded on a real H200 machine
    # as /usr/local/cuda-13, before the probe read version.json); such a toolkit is not offered
    release: Annotated[str | None, Version(r"\d+\.\d+", "12.4")]
    has_headers: Bool


@record
class Toolchain(Record):
    """Compilers for torch extensions: nvcc, the C++ compiler, ninja, CUDA_HOME."""

    status: Str
    error: Str
    nvcc: Tool
    cxx: Tool
    ninja: Tool
    host_cc: HostCompiler
    cuda_home: CudaHome
    rocm_home: Str
    toolkits: list[Toolkit]
    project: Project | None  # None: not looked at (facts recorded before torchdoctor looked)
