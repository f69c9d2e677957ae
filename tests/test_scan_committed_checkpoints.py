"""TD101 on a file the repository ships: its storages decide (torchdoctor/scan/committed.py).

sisl/InteractionImitation (hundred-and-sixty-eighth blind corpus) loads five expert-data files
committed beside its scripts, saved from CPU tensors; its labeller read them with pickletools,
and the scan had flagged five loads there. A committed file saved from the GPU keeps the
finding and says so: torch.load raises "Attempting to deserialize object on a CUDA device"."""

from __future__ import annotations

import os
import pickle
import shutil
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchdoctor.scan import ScanOptions, committed, scan_paths

from .scan_tree import scan_tree

# A file that falls back to the CPU and loads a file committed beside it (TD101 high).
SCRIPT = """\
    import os
    import torch
    DIR = os.path.dirname(os.path.abspath(__file__))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    expert_data = torch.load(os.path.join(DIR, "expert-data.pt"), weights_only=True)
"""


def _td101(found):
    """(file, line) of each TD101 finding, at any confidence."""
    return [f[:2] for f in found if f[2] == "TD101"]


def test_interactionimitation_expert_data_saved_from_cpu_is_not_flagged(tmp_path, ckpts):
    shutil.copy(ckpts / "cpu_state_dict.pt", tmp_path / "expert-data.pt")
    assert _td101(scan_tree(tmp_path, {"bc-experiment.py": SCRIPT})) == []


def test_committed_checkpoint_saved_on_cuda_keeps_td101_and_names_the_device(tmp_path, ckpts):
    shutil.copy(ckpts / "cuda_state_dict.pt", tmp_path / "expert-data.pt")
    assert _td101(scan_tree(tmp_path, {"bc-experiment.py": SCRIPT})) == [("bc-experiment.py", 5)]
    result = scan_paths([str(tmp_path)], ScanOptions(confidence="low", portable=True), jobs=1)
    (finding,) = [f for f in result.findings if f.rule == "TD101"]
    assert finding.confidence == "high"
    assert finding.grounds.endswith("/expert-data.pt holds tensors saved on cuda:0")


def test_legacy_format_cuda_checkpoint_read_from_its_head(ckpts):
    assert committed.saved_locations(str(ckpts / "legacy_cuda.pt")) == {"cuda:0"}


def test_glob_of_committed_files_one_saved_on_cuda_keeps_the_finding(tmp_path, ckpts):
    """`f"data/{split}.pt"`: every file the glob may name is read, not only the first."""
    (tmp_path / "data").mkdir()
    shutil.copy(ckpts / "cpu_state_dict.pt", tmp_path / "data" / "a.pt")
    shutil.copy(ckpts / "cuda_state_dict.pt", tmp_path / "data" / "b.pt")
    script = SCRIPT.replace('os.path.join(DIR, "expert-data.pt")', 'f"data/{split}.pt"')
    assert _td101(scan_tree(tmp_path, {"run.py": script})) == [("run.py", 5)]
    os.remove(tmp_path / "data" / "b.pt")
    assert _td101(scan_tree(tmp_path, {"run.py": script})) == []


def test_more_files_than_the_glob_reads_say_nothing(tmp_path, ckpts, monkeypatch):
    """More files under a glob than the scan reads (MAX_MATCHES, lowered here to two): the one
    not read could be a GPU's, so the finding stays even though every file read is CPU."""
    monkeypatch.setattr(committed, "MAX_MATCHES", 2)
    (tmp_path / "data").mkdir()
    for name in ("a.pt", "b.pt", "c.pt"):
        shutil.copy(ckpts / "cpu_state_dict.pt", tmp_path / "data" / name)
    script = SCRIPT.replace('os.path.join(DIR, "expert-data.pt")', 'f"data/{split}.pt"')
    assert _td101(scan_tree(tmp_path, {"run.py": script})) == [("run.py", 5)]


def test_load_of_a_file_the_tree_does_not_ship_is_still_flagged(tmp_path):
    assert _td101(scan_tree(tmp_path, {"run.py": SCRIPT})) == [("run.py", 5)]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda p: p.write_bytes(pickle.dumps({"w": [1.0]})), id="plain-pickle"),
        pytest.param(lambda p: p.write_bytes(b"version https://git-lfs"), id="lfs-pointer"),
        pytest.param(lambda p: p.write_bytes(b"PK\x03\x04 truncated zip"), id="broken-zip"),
        pytest.param(lambda p: zipfile.ZipFile(p, "w").writestr("x/y", "z"), id="zip-no-data-pkl"),
        pytest.param(
            lambda p: os.mkfifo(p),
            id="fifo",
            marks=pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here"),
        ),
        pytest.param(lambda p: p.mkdir(), id="folder"),
    ],
)
def test_unreadable_committed_file_says_nothing_and_keeps_the_finding(tmp_path, make):
    """A git-lfs pointer, a truncated zip, a FIFO (never opened blocking): not known, so the
    finding stays as the rules reasoned it."""
    make(tmp_path / "expert-data.pt")
    assert committed.saved_locations(str(tmp_path / "expert-data.pt")) is None
    assert _td101(scan_tree(tmp_path, {"run.py": SCRIPT})) == [("run.py", 5)]


def test_pickle_larger_than_the_bound_says_nothing(tmp_path, ckpts, monkeypatch):
    monkeypatch.setattr(committed, "MAX_PICKLE", 64)
    committed._locations.cache_clear()
    assert committed.saved_locations(str(ckpts / "legacy_cuda.pt")) is None
    assert committed.saved_locations(str(ckpts / "cpu_state_dict.pt")) is None
    committed._locations.cache_clear()


def test_edited_committed_file_is_read_again(tmp_path, ckpts):
    target = tmp_path / "expert-data.pt"
    shutil.copy(ckpts / "cpu_state_dict.pt", target)
    assert committed.saved_locations(str(target)) == {"cpu"}
    shutil.copy(ckpts / "cuda_state_dict.pt", target)
    os.utime(target, ns=(1, 1))  # a different mtime even on a coarse clock
    assert committed.saved_locations(str(target)) == {"cuda:0"}


@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(data=st.data())
def test_mutated_checkpoints_never_raise(tmp_path, ckpts, data):
    """Bytes flipped, cut or spliced into the real CPU, CUDA and legacy files: a location set or
    None, never an exception (a scan must not die on a repository's broken weights)."""
    name = data.draw(st.sampled_from(["cpu_state_dict.pt", "cuda_state_dict.pt", "legacy_cuda.pt"]))
    raw = bytearray((ckpts / name).read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    target = tmp_path / "fuzzed.pt"
    target.write_bytes(bytes(raw[:cut] if data.draw(st.booleans()) else raw))
    got = committed._locations(str(target), data.draw(st.integers()), 0)  # past the cache
    assert got is None or all(isinstance(x, str) for x in got)
