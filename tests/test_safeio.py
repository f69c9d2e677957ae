"""The one read helper and the one write helper (torchdoctor.safeio)."""

from __future__ import annotations

import os
import stat

import pytest

from torchdoctor.safeio import InputError, OutputError, atomic_write, read_bounded


def test_dev_zero_is_refused_not_read_until_memory_runs_out():
    with pytest.raises(InputError, match="not a regular file"):
        read_bounded("/dev/zero")


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "facts.fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        read_bounded(str(fifo))


def test_file_over_the_limit_is_refused(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(InputError, match="larger than"):
        read_bounded(str(big), limit=1024)
    assert read_bounded(str(big), limit=4096) == b"x" * 2048


def test_atomic_write_keeps_mode_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write(str(target), "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_atomic_write_into_a_missing_directory_is_one_error(tmp_path):
    with pytest.raises(OutputError, match="cannot write"):
        atomic_write(str(tmp_path / "nope" / "r.json"), "x")


def test_atomic_write_through_a_symlink_replaces_the_file_it_points_at(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write(str(link), "new")
    assert link.is_symlink() and real.read_text() == "new"
