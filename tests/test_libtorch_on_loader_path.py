"""A libtorch (C++) on LD_LIBRARY_PATH taken before the wheel's own libraries:
pytorch/pytorch#96797, "segmentation fault while import torch" with LD_LIBRARY_PATH set in
.bashrc for libtorch work. The fix drops exactly those directories from the variable."""

from __future__ import annotations

import json
import os

from torchdoctor.probes import host

from .conftest import REPO, judge_facts

LIBTORCH = "/home/u/libtorch/lib"


def _segfault(tmp_path, ld_path: str | None, found: list[str] | None) -> dict:
    facts = json.loads((REPO / "tests" / "facts" / "no_avx2_sigill.json").read_text())
    probe = facts["probe"]["torch"]
    probe.update(
        signal="SIGSEGV", returncode=-11, message="probe was killed by SIGSEGV during: import"
    )
    facts["platform"]["cpu"]["isa"] = ["sse4_2", "avx", "avx2", "fma"]
    if ld_path is not None:
        facts["env"]["LD_LIBRARY_PATH"] = ld_path
    facts["host"]["ld_path_torch_libs"] = found
    [found_] = [f for f in judge_facts(tmp_path, facts) if f["id"] == "torch.install"]
    return found_


def test_pytorch_96797_segfault_at_import_with_libtorch_on_ld_library_path(tmp_path):
    value = f"/usr/local/cuda/lib64:{LIBTORCH}"
    found = _segfault(tmp_path, value, [LIBTORCH])
    assert found["level"] == "error" and "LD_LIBRARY_PATH" in found["message"]
    [remedy] = found["remedies"]
    assert remedy["commands"][0] == "export LD_LIBRARY_PATH=/usr/local/cuda/lib64"
    assert "host.ld_path_torch_libs" in remedy["evidence"]


def test_only_libtorch_on_the_path_unsets_it(tmp_path):
    found = _segfault(tmp_path, LIBTORCH, [LIBTORCH])
    assert found["remedies"][0]["commands"][0] == "unset LD_LIBRARY_PATH"


def test_a_segfault_without_a_libtorch_on_the_path_keeps_the_generic_advice(tmp_path):
    found = _segfault(tmp_path, "/usr/local/cuda/lib64", [])
    assert "LD_LIBRARY_PATH" not in " ".join(c for r in found["remedies"] for c in r["commands"])


def test_the_host_probe_finds_torchs_own_libraries_on_ld_library_path(tmp_path):
    lib = tmp_path / "libtorch" / "lib"
    lib.mkdir(parents=True)
    (lib / "libtorch_cpu.so").write_bytes(b"")
    other = tmp_path / "cuda"
    other.mkdir()
    env = {"LD_LIBRARY_PATH": os.pathsep.join([str(other), str(lib), ""])}
    assert host.torch_libs_on_loader_path(env) == [str(lib)]
    assert host.torch_libs_on_loader_path({}) == []
