"""A host's node checks in ``torchdoctor dist`` are ``torchdoctor check`` on that host.

Issue 14: the cluster worker repeated the check pipeline (its own interpreter choice, its own
gather options, its own judging), so a rank's findings could differ from what ``check`` reports
on the same machine, and ``dist --timeout`` had to be threaded into the smoke test by hand.
"""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from torchdoctor.check import gather as gathering
from torchdoctor.check.record import Facts, read_facts
from torchdoctor.cli import cli
from torchdoctor.cluster import worker
from torchdoctor.cluster.launch import from_env

from .conftest import load_facts, needs_torch
from .test_dist_torchrun import torchrun

# Chosen so that every option shows in the result: a failing and a warning check (fail-on
# warning), a skipped check, a silenced finding and the whole-run deadline.
OPTIONS = [
    "--expect",
    "cuda",
    "--skip",
    "smoke.transfer",
    "--fail-on",
    "warning",
    "--ignore",
    "cuda.devices",
    "--timeout",
    "17",
    "--smoke-size",
    "full",
]


@pytest.fixture
def gathered(monkeypatch, tmp_path):
    """gather.gather replaced by one that records its options and, like the real one, puts the
    interpreter choice into the facts it returns."""
    monkeypatch.chdir(tmp_path)  # no pyproject.toml [tool.torchdoctor] from the repository
    seen: list[gathering.GatherOptions] = []

    def fake_gather(opts: gathering.GatherOptions) -> Facts:
        seen.append(opts)
        facts = load_facts("nvml_driver_mismatch")
        facts["collected"]["python"] = opts.python
        facts["interpreter"] = opts.interpreter
        return read_facts(facts)

    monkeypatch.setattr(gathering, "gather", fake_gather)
    return seen


def node_checks_of_dist(monkeypatch, *args: str) -> dict:
    """`torchdoctor dist ARGS` as local rank 0 of a torchrun job parses it, then that rank's node
    checks (the worker's phase before any collective)."""
    for name, value in {
        "RANK": "0",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
    }.items():
        monkeypatch.setenv(name, value)
    started: list[worker.DistOptions] = []
    monkeypatch.setattr(worker, "run", lambda opts, launch: started.append(opts))
    result = CliRunner().invoke(cli, ["dist", *args])
    assert result.exit_code == 0 and len(started) == 1, result.output
    rank = worker.Worker(started[0], from_env())
    rank.node_checks()
    assert rank.record["errors"] == []
    return rank.record["report"]


def without_timings(report: dict) -> dict:
    checks = [{k: v for k, v in c.items() if k != "duration_s"} for c in report["checks"]]
    return {**report, "checks": checks}


def test_a_hosts_node_checks_in_dist_are_what_check_reports_there(monkeypatch, gathered):
    result = CliRunner().invoke(cli, ["check", "--json", *OPTIONS])
    assert result.exit_code == 1, result.output
    by_check = json.loads(result.output)
    by_dist = node_checks_of_dist(monkeypatch, *OPTIONS)

    assert without_timings(by_dist) == without_timings(by_check)
    assert by_dist["summary"]["silenced"] == 1 and by_dist["summary"]["fail_on"] == "warning"
    assert {f["id"] for f in by_dist["findings"]} >= {"cuda.available.driver-mismatch"}
    assert by_dist["facts"]["interpreter"]["source"] == "self"  # the same Python check chose
    # The same gathering, within the same whole-run deadline, smoke tests included.
    check_opts, dist_opts = gathered
    assert dist_opts.interpreter == check_opts.interpreter
    assert (dist_opts.python, dist_opts.smoke, dist_opts.smoke_size) == (
        check_opts.python,
        True,
        "full",
    )
    assert 16 <= dist_opts.timeout_s <= 17


# --------------------------------------------------------------------------- under torchrun


@needs_torch
@pytest.mark.slow
def test_dist_timeout_bounds_the_smoke_test_of_a_hung_device():
    """A device whose smoke test hangs costs a host its --timeout, no more: the node checks
    name the deadline and the collectives still run."""
    t0 = time.monotonic()
    r = torchrun(
        "--timeout",
        "8",
        "--no-bandwidth",
        "--json",
        env={"TORCHDOCTOR_TEST_SMOKE_FAULT": "cpu=hang"},
    )
    wall = time.monotonic() - t0
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    host = doc["ranks"][0]["report"]
    smoke = next(c for c in host["checks"] if c["id"] == "smoke.compute")
    assert smoke["status"] == "fail" and "deadline" in smoke["summary"], smoke
    assert host["facts"]["collected"]["duration_s"] < 8 + 2  # the default deadline is 30 s
    assert all(c["status"] == "pass" for rank in doc["ranks"] for c in rank["collectives"].values())
    assert wall < 90
