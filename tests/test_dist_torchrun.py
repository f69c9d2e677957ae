"""``torchdoctor dist`` as users run it: two ranks under a real torchrun, gloo on this CPU machine.

``--standalone`` rendezvous on port 0, so concurrent runs never collide. The timeouts are
generous (a shared 2-core machine); the test for a hung rank fails if the run does not end
by itself, which is the deadline being tested.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from .conftest import REPO, needs_torch, on_a_cpu_machine

pytestmark = [needs_torch, pytest.mark.slow]
FLEET_SCHEMA = json.loads(
    resources.files("torchdoctor").joinpath("schema/fleet.schema.json").read_text()
)
HOST = socket.gethostname()


def torchrun(*args: str, env: dict | None = None, nproc: int = 2) -> subprocess.CompletedProcess:
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "-m",
        "torchdoctor",
        "dist",
        *args,
    ]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TORCHDOCTOR_TEST_")}
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**clean, "NO_COLOR": "1", **(env or {})},
    )


# two ranks on a one-GPU machine fail the launch check, rightly (seen on an H100)
@on_a_cpu_machine
def test_two_gloo_ranks_give_one_passing_fleet_report(tmp_path):
    out = tmp_path / "fleet.json"
    r = torchrun("--no-smoke", "--collective-timeout", "60", "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("torchdoctor 0.1.0 dist — 2 of 2 rank(s) on 1 host(s), backend gloo") == 1
    assert "FLEET PASS" in r.stdout
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, FLEET_SCHEMA)
    assert [(x["rank"], x["host"]) for x in doc["ranks"]] == [(0, HOST), (1, HOST)]
    assert doc["ranks"][0]["report"]["checks"] and doc["ranks"][1]["report"] is None
    assert all(c["status"] == "pass" for x in doc["ranks"] for c in x["collectives"].values())
    assert {m["op"] for m in doc["ranks"][1]["bandwidth"]} == {
        "all_reduce",
        "all_gather",
        "broadcast",
        "sendrecv",
    }


def test_a_rank_that_disagrees_is_flagged_by_host_and_rank():
    override = json.dumps({"1": {"versions.torch": "2.0.0+cpu"}})
    r = torchrun(
        "--no-checks", "--no-bandwidth", "--json", env={"TORCHDOCTOR_TEST_FACT_OVERRIDE": override}
    )
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    versions = next(f for f in doc["results"] if f["id"] == "fleet.versions")
    assert versions["status"] == "fail" and versions["details"]["ranks"] == [1]
    assert f"2.0.0+cpu on rank 1 ({HOST})" in versions["summary"]


def test_a_rank_that_never_joins_is_named_within_the_deadline():
    r = torchrun(
        "--no-checks", "--collective-timeout", "5", env={"TORCHDOCTOR_TEST_HANG_RANK": "1"}
    )
    assert r.returncode != 0
    assert f"rank 1 ({HOST}, last seen in phase 'collectives')" in r.stdout, r.stdout + r.stderr
    assert "all_reduce did not finish within 5 s" in r.stdout
    assert "FLEET FAIL" in r.stdout


# --------------------------------------------------------------------------- without numpy


def venv_without_numpy(root) -> str:
    """A venv whose interpreter sees this environment's packages except numpy (torch's CPU wheels
    do not need it): a fresh `python -m venv` plus one .pth naming a folder of links to every
    package here but numpy, and the repository. Seconds, where pip-installing torch into a new
    venv takes minutes on a busy CI machine."""
    import site
    import venv

    venv.EnvBuilder(with_pip=False, symlinks=True).create(root / "venv")
    here = next(p for p in map(Path, site.getsitepackages()) if p.is_dir())
    links = root / "site"
    links.mkdir()
    for entry in here.iterdir():
        name = entry.name.lower()
        if name.startswith("numpy") or name.endswith(".pth") or name.startswith("__editable__"):
            continue
        (links / entry.name).symlink_to(entry)
    python = root / "venv" / "bin" / "python"
    target = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(target) / "torchdoctor-test.pth").write_text(f"{links}\n{REPO}\n")
    return str(python)


@on_a_cpu_machine  # two ranks, one GPU: the launch check fails, rightly (seen on an H100)
def test_dist_works_without_numpy(tmp_path):
    """Reported: without numpy every rank failed with "Numpy is not available" (reports went
    through pickled-object collectives), the fleet report blamed NCCL, torchrun printed a
    traceback. Reports now travel through the rendezvous store."""
    python = venv_without_numpy(tmp_path)
    probe = "import importlib.util as u, torch; print(u.find_spec('numpy') is None)"
    assert (
        subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=120
        ).stdout.strip()
        == "True"
    )
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("TORCHDOCTOR_TEST_", "PYTHON"))
    }
    r = subprocess.run(
        [
            python,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node=2",
            "-m",
            "torchdoctor",
            "dist",
            "--no-smoke",
            "--timeout",
            "60",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env={**clean, "NO_COLOR": "1"},
    )
    assert "Numpy is not available" not in r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert [x["rank"] for x in doc["ranks"]] == [0, 1] and doc["exit_code"] == 0
    assert doc["ranks"][0]["report"]["facts"]["packages"]["distributions"].get("numpy") is None
