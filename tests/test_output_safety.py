"""Writes never harm the user's files: every report and facts file torchdoctor writes is replaced
atomically, and a write that fails (a full disk, a closed stdout) is one line and a non-zero exit.

The full disk is real: a 64 KiB tmpfs, filled, mounted in a private mount namespace
(``unshare -m``, root only); those tests skip with the reason where that is not possible.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from torchdoctor.cluster import fleet

from .conftest import FACTS_DIR, REPO, needs_torch, private_tmpfs_unavailable
from .test_dist_fleet import cluster

FACTS = str(FACTS_DIR / "gpu_too_old.json")  # a failing report: exit 1 when all goes well
TD = f"{shlex.quote(sys.executable)} -m torchdoctor"
OLD = "the previous report, which must survive\n"


def on_full_disk(tmp_path, command: str) -> tuple[int, str, str, list[str]]:
    """Run ``command`` (sh; $FULL is a full 64 KiB tmpfs holding report.txt = OLD) and return
    its exit code, its stderr, report.txt's content afterwards and what $FULL holds."""
    if why := private_tmpfs_unavailable():
        pytest.skip(why)
    full = tmp_path / "full"
    full.mkdir()
    script = f"""
        mount -t tmpfs -o size=64k tmpfs "$FULL" || exit 99
        printf %s {shlex.quote(OLD)} > "$FULL/report.txt"
        dd if=/dev/zero of="$FULL/filler" bs=4096 2>/dev/null
        cd {shlex.quote(str(REPO))}
        {command} 2> "$ERR"
        echo "rc=$?" > "$RC"
        cat "$FULL/report.txt" > "$AFTER"
        ls -A "$FULL" > "$LS"
    """
    files = {name: tmp_path / name for name in ("ERR", "RC", "AFTER", "LS")}
    env = {**os.environ, "FULL": str(full), "NO_COLOR": "1"}
    env.update({k: str(v) for k, v in files.items()})
    subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, timeout=180, check=False)
    rc = int(files["RC"].read_text().strip().removeprefix("rc="))
    listing = files["LS"].read_text().split()
    return rc, files["ERR"].read_text(), files["AFTER"].read_text(), listing


def assert_old_file_intact(rc: int, err: str, after: str, listing: list[str], option: str):
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert option in err and "No space left on device" in err
    assert after == OLD
    assert sorted(listing) == ["filler", "report.txt"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (f"check --facts {FACTS} --format markdown -o", "--output"),
        (f"check --facts {FACTS} --dump-facts", "--dump-facts"),
    ],
    ids=["check-o", "dump-facts"],
)
def test_full_disk_leaves_the_old_file_intact(tmp_path, args, option):
    command = f'{TD} {args} "$FULL/report.txt" > /dev/null'
    assert_old_file_intact(*on_full_disk(tmp_path, command), option)


def test_scan_output_on_a_full_disk_leaves_the_old_file_intact(tmp_path):
    code = tmp_path / "train.py"
    code.write_text("import torch\nx = torch.zeros(3).cuda()\n")
    command = f'{TD} scan {shlex.quote(str(code))} -o "$FULL/report.txt" > /dev/null'
    assert_old_file_intact(*on_full_disk(tmp_path, command), "--output")


def test_dist_replay_output_on_a_full_disk_leaves_the_old_file_intact(tmp_path):
    replay = tmp_path / "fleet.json"
    replay.write_text(json.dumps(fleet.aggregate(cluster(nodes=1, per_node=2), 2)))
    command = f'{TD} dist --replay {shlex.quote(str(replay))} -o "$FULL/report.txt" > /dev/null'
    assert_old_file_intact(*on_full_disk(tmp_path, command), "--output")


def test_stdout_on_a_full_disk_is_one_line_exit_2(tmp_path):
    rc, err, _, _ = on_full_disk(tmp_path, f'{TD} check --facts {FACTS} > "$FULL/out.txt"')
    assert rc == 2
    assert err == "Error: cannot write the report to standard output: No space left on device\n"


def test_closed_stdout_is_one_line_exit_2():
    proc = subprocess.run(
        f"{TD} check --facts {FACTS} >&-", shell=True, capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 2
    assert proc.stderr == "Error: cannot write the report: standard output is closed\n"


def test_reader_that_goes_away_keeps_the_verdict_exit_code():
    """`check | head -1`: EPIPE is no error, and a failing environment still exits 1. (`true`
    reads nothing and leaves at once, so the report always meets a closed pipe.)"""
    script = f"{TD} check --facts {FACTS} | true; echo rc=${{PIPESTATUS[0]}}"
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert proc.stdout.endswith("rc=1\n"), proc.stdout
    assert proc.stderr == ""


@needs_torch
@pytest.mark.slow
def test_dist_rank_0_output_on_a_full_disk_keeps_the_old_file_and_exits_2(tmp_path):
    """The live fleet report (rank 0 under torchrun) goes through the same atomic write."""
    command = (
        f"{shlex.quote(sys.executable)} -m torch.distributed.run --standalone --nproc-per-node=1 "
        '-m torchdoctor dist --no-checks --no-bandwidth -o "$FULL/report.txt" > /dev/null'
    )
    rc, err, after, listing = on_full_disk(tmp_path, command)
    assert rc != 0
    assert "torchdoctor dist: --output: cannot write" in err and "No space left on device" in err
    assert "exitcode  : 2" in err  # torchrun's summary of rank 0
    assert after == OLD and sorted(listing) == ["filler", "report.txt"]
