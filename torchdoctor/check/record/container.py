"""The container the process runs in, and what it gives a GPU workload."""

from __future__ import annotations

from torchdoctor.typed_json import Record

from .base import Bool, Int, Str, record


@record
class Evidence(Record):
    source: Str
    kind: Str


@record
class Shm(Record):
    path: Str
    exists: Bool
    mounted: Bool
    fs_type: Str
    source: Str
    size_bytes: Int
    free_bytes: Int
    writable: Bool  # os.access(W_OK) for this user; None in older facts
    read_only: Bool  # mounted ro (/proc/self/mountinfo)


@record
class ContainerNvidia(Record):
    driver_libs: dict[str, str | None]  # None: the library was not found
    nvidia_smi: Str


@record
class Container(Record):
    detected: Bool
    kind: Str
    engine: Str
    evidence: list[Evidence]
    shm: Shm
    nvidia: ContainerNvidia
