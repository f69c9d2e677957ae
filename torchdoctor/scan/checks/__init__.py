"""The scan checks, one module per rule family (like a linter's plugins). Each module
exports `CHECK`: the words that make a line worth analysing and the hooks the walk calls."""

from __future__ import annotations

from ..context import Check
from . import (
    backend_test,
    cpu_offload,
    cuda_api,
    cuda_call,
    cuda_default,
    cuda_test,
    data_parallel,
    dataparallel_module,
    device_mix,
    device_name,
    device_string,
    forward_factory,
    legacy_constructor,
    module_attribute,
    mps,
    narrow_guard,
    numpy_call,
    pin_memory,
    sync_loop,
    torch_load,
    torch_save,
    whisper_mps,
    wrong_call,
)

CHECKS: tuple[Check, ...] = tuple(
    m.CHECK
    for m in (
        cuda_call,
        device_string,
        cuda_api,
        narrow_guard,
        cuda_test,
        backend_test,
        cpu_offload,
        cuda_default,
        torch_load,
        torch_save,
        data_parallel,
        dataparallel_module,
        module_attribute,
        forward_factory,
        device_mix,
        legacy_constructor,
        numpy_call,
        sync_loop,
        pin_memory,
        mps,
        whisper_mps,
        wrong_call,
        device_name,
    )
)
