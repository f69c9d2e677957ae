"""The distributed check: torch.distributed and NCCL, from recorded facts."""

from __future__ import annotations

import copy

from torchdoctor.check import engine
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.report.result import Status

from .conftest import load_facts


def _judge(facts: dict, expect: str = "auto"):
    return engine.run_check(
        engine.select(["distributed"])[0], read_facts(facts), Context(expect=expect)
    )


def _h100(**build) -> dict:
    f = copy.deepcopy(load_facts("h100_healthy"))
    f["torch"]["build"].update(build)
    return f


def test_distributed_package_doesnt_have_nccl_built_in():
    """A CUDA torch built without NCCL (a source or third-party build): the job would die at
    init_process_group('nccl') with "Distributed package doesn't have NCCL built in"."""
    result = _judge(_h100(nccl_available=False))
    assert result.status == Status.WARN
    (problem,) = result.problems
    assert problem.code == "no-nccl" and "doesn't have NCCL built in" in problem.message
    install = problem.remedies[0].commands
    # the same release and CUDA variant, from the index that has NCCL in it
    assert " torch==2.11.0 " in install[0] and install[0].endswith("whl/cu130")
    assert install[-1].endswith("--only distributed")  # the verify step
    assert "gloo" in problem.remedies[1].text


def test_windows_has_no_nccl_and_that_is_not_a_fault():
    f = _h100(nccl_available=False)
    f["platform"]["system"] = "Windows"
    result = _judge(f)
    assert result.status == Status.PASS and "backend='gloo'" in result.summary


def test_not_built_matters_only_with_several_gpus():
    many = _h100(distributed=False, nccl_available=False, gloo_available=False)
    many["nvml"]["devices"].append({**many["nvml"]["devices"][0], "index": 1})
    assert [p.code for p in _judge(many).problems] == ["not-built"]
    single = _h100(distributed=False, nccl_available=False, gloo_available=False)
    assert _judge(single).status == Status.PASS


def test_healthy_cuda_build_names_its_backends_and_nccl_version():
    result = _judge(load_facts("h100_healthy"))
    assert result.status == Status.PASS
    assert result.summary == "torch.distributed built, backends: nccl, gloo (NCCL 2.27.7)"


def test_facts_without_the_distributed_flags_are_skipped_not_guessed():
    f = _h100()
    del f["torch"]["build"]["distributed"]
    assert _judge(f).status == Status.SKIP
