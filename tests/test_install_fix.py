"""The "torch is not installed" fix names a release and an index that fit the machine: a bare
`pip install torch` pulls a multi-GB CUDA build onto a CPU-only Linux box."""

from __future__ import annotations

import re

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.data import compat

NEWEST = compat.newest_release()


def install_command(facts: dict) -> str:
    return (
        engine.run_check(by_id()["torch.install"], read_facts(facts), Context())
        .remedies[0]
        .commands[0]
    )


def test_cpu_only_linux_gets_a_pinned_cpu_wheel_never_a_bare_pip_install_torch(facts):
    cmd = install_command(facts("torch_missing"))
    assert cmd.endswith(
        f"-m pip install 'torch=={NEWEST}.*' --index-url https://download.pytorch.org/whl/cpu"
    )
    assert not re.search(r"install torch($| )", cmd)


def test_nvidia_driver_gets_the_cuda_index_the_picker_chooses_pinned(facts):
    f = facts("torch_missing")
    f["nvml"] = facts("h100_healthy")["nvml"]
    choice = compat.pick_wheel(None, f["nvml"]["driver_version"], [(9, 0)])
    cmd = install_command(f)
    assert cmd.endswith(
        f"install 'torch=={choice.release}.*' --index-url "
        f"https://download.pytorch.org/whl/{choice.variant}"
    )


@pytest.mark.parametrize(("machine", "release"), [("arm64", NEWEST), ("x86_64", "2.2")])
def test_macos_gets_the_pypi_wheel_pinned_to_a_release_that_has_one(facts, machine, release):
    f = facts("torch_missing")
    f["platform"].update(system="Darwin", machine=machine)
    cmd = install_command(f)
    assert cmd.endswith(f"-m pip install 'torch=={release}.*'")
