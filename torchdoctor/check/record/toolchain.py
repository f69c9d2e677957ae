"""The compiler toolchain for extensions: nvcc, CUDA_HOME, host compilers, ninja."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required, Version

from .base import Bool, Int, Str, record


@record
class Tool(Record):
    path: Str
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


@record
class Toolkit(Record):
    path: Str
    release: Annotated[str, Required, Version(r"\d+\.\d+", "12.4")]
    has_headers: Bool


@record
class Toolchain(Record):
    """Compilers for torch extensions: nvcc, the C++ compiler, ninja, CUDA_HOME."""

    status: Str
    error: Str
    nvcc: Tool
    cxx: Tool
    ninja: Tool
    cuda_home: CudaHome
    rocm_home: Str
    toolkits: list[Toolkit]
