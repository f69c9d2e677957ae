"""Every remedy every check produces, over the whole scenario corpus, is judged against the machine
it is offered on (issue 25): its evidence resolves in the facts it was judged on, and its commands
name no variable that is not set, no variable or allocator key the examined torch does not read,
no package index that does not publish that torch, no driver branch that silently drops a GPU.

The corpus: every recorded facts file (tests/facts/*.json), every pasted collect_env report
(tests/collect_env/), each under every --expect, and the corpus variants of test_checks_corpus
(build_corpus)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchdoctor.check import collect_env, remedy_audit
from torchdoctor.check.checks import ALL
from torchdoctor.check.checks.common import Context, not_in_report
from torchdoctor.check.record import load_facts
from torchdoctor.report import evidence

HERE = Path(__file__).parent
EXPECTS = ("auto", "cuda", "cpu")


def scenarios() -> Iterator[tuple[str, dict]]:
    for path in sorted((HERE / "facts").glob("*.json")):
        yield path.stem, json.loads(path.read_text())
    for path in sorted((HERE / "collect_env").rglob("*")):
        if path.suffix not in (".txt", ".md"):
            continue  # the blind labels (LABELS.csv), not a report
        parsed = collect_env.parse(path.read_text(errors="replace"))
        if parsed:
            yield f"collect_env/{path.name}", parsed


def walk() -> Iterator[tuple[str, str, dict, object]]:
    """(scenario, check id, raw facts, remedy) for every remedy the checks produce, as the check
    returns it: before the engine drops what is not grounded (which would hide a check's bug)."""
    for name, raw in scenarios():
        record = load_facts(raw, errors=[])
        for expect in EXPECTS:
            for module in ALL:
                ctx = Context(expect=expect)
                needs, kinds = getattr(module, "NEEDS", None), getattr(module, "EVIDENCE", ())
                v = not_in_report(record, needs, kinds) or module.check(record, ctx)
                for part in (v, *v.problems):
                    for remedy in part.remedies:
                        yield f"{name}[{expect}]", module.ID, raw, remedy


WALKED = list(walk())


def test_the_corpus_is_walked() -> None:
    names = {w[0].split("[")[0] for w in WALKED}
    assert len(names) >= 40, names
    assert len(WALKED) >= 500, len(WALKED)


def test_every_remedy_has_evidence_that_resolves() -> None:
    bad = [
        (scenario, check, remedy.text[:60], evidence.unresolved(raw, remedy.evidence))
        for scenario, check, raw, remedy in WALKED
        if not evidence.grounded(raw, remedy.evidence)
    ]
    assert not bad, f"{len(bad)} of {len(WALKED)} remedies: {bad[:15]}"


def test_no_remedy_is_wrong_for_the_machine() -> None:
    bad = [
        (scenario, check, fault)
        for scenario, check, raw, remedy in WALKED
        for fault in remedy_audit.faults(raw, remedy)
    ]
    assert not bad, f"{len(bad)} faults: {bad[:15]}"


@pytest.mark.parametrize(
    ("command", "env", "fault"),
    [
        ("unset CUDA_HOME", {}, "unsets CUDA_HOME, which is not set"),
        ("env -u LD_PRELOAD python x.py", {}, "unsets LD_PRELOAD, which is not set"),
        ("unset CUDA_HOME", {"CUDA_HOME": "/usr/local/cuda"}, None),
    ],
)
def test_the_audit_catches_unset_of_an_unset_variable(command, env, fault) -> None:
    found = remedy_audit.unset_faults({"env": env}, (command,))
    assert found == ([fault] if fault else [])


def test_the_audit_catches_a_version_blind_export() -> None:
    old = {"torch": {"version": "2.4.1+cu121"}}
    assert remedy_audit.export_faults(old, ("export PYTORCH_ALLOC_CONF=expandable_segments:True",))
    assert remedy_audit.export_faults(old, ("export PYTORCH_CUDA_ALLOC_CONF=backend:native",)) == []
    older = {"torch": {"version": "2.0.1+cu118"}}
    assert remedy_audit.export_faults(
        older, ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",)
    ) == ["sets allocator key expandable_segments, which torch 2.0.1+cu118 rejects"]


@pytest.mark.parametrize(
    ("version", "command", "fault"),
    [
        # the watermark ratios are first in libtorch_cpu.dylib of the 1.13.1 macOS wheel
        ("1.12.1", "export PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0", True),
        ("1.13.1", "export PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0", False),
        ("1.13.1", "export PYTORCH_MPS_LOW_WATERMARK_RATIO=0.0", False),
        # first in libtorch_cuda.so of 1.11.0 / 2.1.2 (absent from 1.10.2 / 2.0.1)
        ("1.10.2+cu113", "export NCCL_DESYNC_DEBUG=1", True),
        ("1.11.0+cu113", "export NCCL_DESYNC_DEBUG=1", False),
        ("2.0.1+cu118", "export NCCL_ENABLE_TIMING=1", True),
        ("2.1.2+cu121", "export NCCL_ENABLE_TIMING=1", False),
        # the device-side assertion switch is first in libc10_cuda.so of 2.0.1
        ("1.13.1+cu117", "export PYTORCH_USE_CUDA_DSA=1", True),
        ("2.0.1+cu118", "export PYTORCH_USE_CUDA_DSA=1", False),
    ],
)
def test_the_audit_holds_exports_to_the_release_wheels(version, command, fault) -> None:
    found = remedy_audit.export_faults({"torch": {"version": version}}, (command,))
    assert bool(found) is fault, found


def test_the_audit_catches_an_index_that_does_not_publish_the_release() -> None:
    cmd = "python -m pip install 'torch==2.7.1' --index-url https://download.pytorch.org/whl/cu130"
    assert remedy_audit.index_faults((cmd,)) == ["torch 2.7.1 is not published on the cu130 index"]
    ok = cmd.replace("cu130", "cu128")
    assert remedy_audit.index_faults((ok,)) == []


def test_the_audit_catches_a_driver_branch_that_drops_a_present_gpu() -> None:
    facts = {
        "nvml": {
            "status": "ok",
            "devices": [
                {"name": "NVIDIA GeForce RTX 5090", "capability": [12, 0]},
                {"name": "NVIDIA GeForce GTX 1080 Ti", "capability": [6, 1]},
            ],
        }
    }
    text = "Upgrade the NVIDIA driver to 590.44.01 or later."
    assert remedy_audit.driver_faults(facts, text) == [
        "driver branch 590 drops the NVIDIA GeForce GTX 1080 Ti and the remedy does not say so"
    ]
    named = text + " It drops the NVIDIA GeForce GTX 1080 Ti."
    assert remedy_audit.driver_faults(facts, named) == []
