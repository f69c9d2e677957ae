"""Regressions from the second review: --fix safety, odd files, and rule false positives."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import textwrap

import pytest

from torchdoctor.scan import fix as fixmod
from torchdoctor.scan.engine import ScanOptions, scan_paths, scan_source
from torchdoctor.scan.fix import plan

from .conftest import run_cli


def findings(src: str):
    return scan_source("s.py", textwrap.dedent(src), ScanOptions())[0]


def fixed(src: str) -> str:
    text = textwrap.dedent(src)
    planned = plan("s.py", text, scan_source("s.py", text, ScanOptions())[0])
    return text if planned is None else planned.new


# ---------------------------------------------------------------- 1: where `device` is bound
def test_device_assigned_after_the_load_is_not_used():
    new = fixed(
        """
        import torch
        def main():
            net.load_state_dict(torch.load("x.pt"))
            device = torch.device("cpu")
        """
    )
    assert 'torch.load("x.pt", map_location="cpu", weights_only=True)' in new


def test_late_global_device_gives_no_cuda_edit():
    src = """
    import torch
    def train(model):
        return model.cuda()
    class T:
        def setup(self):
            self.m = torch.nn.Linear(2, 2).cuda()
    device = "cpu"
    """
    assert [f.rule for f in findings(src)] == ["TD001", "TD001"]
    assert all(f.edit is None for f in findings(src))
    assert fixed(src) == textwrap.dedent(src)


def test_device_bound_before_is_used():
    new = fixed(
        """
        import torch
        device = torch.device("cpu")
        def a(model):
            return model.cuda()
        def b(model, device):
            return model.cuda()
        def c(model):
            device = "cpu"
            return model.cuda()
        def d(model):
            m = model.cuda()
            device = "cpu"
            return m
        """
    )
    assert new.count(".to(device)") == 3 and new.count(".cuda()") == 1


# ---------------------------------------------------------------- 2: duplicates, compile()
def test_a_file_named_twice_is_scanned_and_fixed_once(tmp_path):
    f = tmp_path / "dup.py"
    f.write_text('import torch\nnet.load_state_dict(torch.load("a"))\n')
    result = scan_paths([str(tmp_path), str(f), str(f)], jobs=1)
    assert result.files_scanned == 1 and len(result.findings) == 2
    r = run_cli("scan", str(tmp_path), str(f), "--fix")
    assert r.returncode == 0, r.stdout + r.stderr
    new = f.read_text()
    compile(new, "dup.py", "exec", dont_inherit=True)
    assert new.count("weights_only") == 1


def test_plan_drops_identical_edits_and_rejects_repeated_keywords():
    text = 'import torch\nnet.load_state_dict(torch.load("a"))\n'
    once = scan_source("s.py", text, ScanOptions())[0]
    assert plan("s.py", text, once + once).new.count("map_location") == 1
    # An edit that yields `f(a=1, a=1)` parses but does not compile.
    bad = next(f for f in once if f.rule == "TD102")
    bad = dataclasses.replace(
        bad, edit=dataclasses.replace(bad.edit, text=", weights_only=True, weights_only=True")
    )
    with pytest.raises(fixmod.UnsafeFix):
        plan("s.py", text, [bad])


# ---------------------------------------------------------------- 3: FIFOs
def test_a_fifo_is_a_file_error_not_a_hang(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "fifo.py")
    r = run_cli("scan", str(tmp_path), "--json", timeout=60)
    doc = json.loads(r.stdout)
    assert [e["message"] for e in doc["errors"]] == ["not a regular file"]
    r = run_cli("scan", str(tmp_path / "fifo.py"), "--json", timeout=60)
    assert json.loads(r.stdout)["errors"][0]["message"] == "not a regular file"


# ---------------------------------------------------------------- 4: unwritable files
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only directories")
def test_unwritable_file_is_a_file_error(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    (d / "a.py").write_text('import torch\nsd = torch.load("a")\n')
    d.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        r = run_cli("scan", str(d), "--fix", "--json")
    finally:
        d.chmod(stat.S_IRWXU)
    assert r.returncode != 3, r.stderr
    assert "cannot write" in json.loads(r.stdout)["errors"][0]["message"]


def test_write_failure_is_a_file_error_and_leaves_the_file(tmp_path, monkeypatch):
    from torchdoctor import cli_scan
    from torchdoctor.scan import fix as fixmod

    f = tmp_path / "a.py"
    src = 'import torch\nsd = torch.load("a")\n'
    f.write_text(src)
    f.chmod(0o640)
    result = scan_paths([str(f)], jobs=1)

    def full_disk(fh, *a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fixmod.shutil, "copymode", full_disk)
    cli_scan._apply_fixes(result, write=True, show=False)
    assert f.read_text() == src and len(result.findings) == 2
    assert result.errors[0].message == "cannot write: No space left on device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]  # no temp file left
    monkeypatch.undo()
    cli_scan._apply_fixes(result, write=True, show=False)
    assert "weights_only=True" in f.read_text() and stat.S_IMODE(f.stat().st_mode) == 0o640


# ---------------------------------------------------------------- 5: parenthesised receivers
def test_parenthesised_receiver_is_fixed_after_the_paren():
    new = fixed(
        """
        import torch
        device = "cpu"
        y = (x + 1).cuda()
        z = ((x)).cuda(non_blocking=True)
        sd = torch.load("a.pt")
        """
    )
    assert "y = (x + 1).to(device)" in new
    assert "z = ((x)).to(device, non_blocking=True)" in new
    assert "weights_only=True" in new


def test_unsafe_plan_is_reported(tmp_path, monkeypatch):
    from torchdoctor import cli_scan
    from torchdoctor.scan import fix as fixmod

    f = tmp_path / "a.py"
    f.write_text('import torch\nsd = torch.load("a")\n')
    result = scan_paths([str(f)], jobs=1)

    def refuse(*a):
        raise fixmod.UnsafeFix("fix skipped: the rewrite would not compile (x)")

    monkeypatch.setattr(fixmod, "plan", refuse)
    cli_scan._apply_fixes(result, write=True, show=False)
    assert result.errors[0].message.startswith("fix skipped")


# ---------------------------------------------------------------- 12: unreadable dirs
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads mode-000 directories")
def test_unreadable_directory_is_a_file_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.py").write_text("x = 1\n")
    locked.chmod(0)
    try:
        result = scan_paths([str(tmp_path)], jobs=1)
    finally:
        locked.chmod(stat.S_IRWXU)
    assert result.errors[0].message.startswith("cannot read")


def test_walk_errors_are_file_errors(tmp_path, monkeypatch):
    from torchdoctor.scan import engine

    def walk(root, onerror=None):
        onerror(PermissionError(13, "Permission denied", str(root) + "/locked"))
        return iter(())

    monkeypatch.setattr(engine.os, "walk", walk)
    result = scan_paths([str(tmp_path)], jobs=1)
    assert result.errors[0].message == "cannot read: Permission denied"


def test_fail_on_errors(tmp_path):
    (tmp_path / "py2.py").write_text("print 'x'\n")
    assert run_cli("scan", str(tmp_path)).returncode == 0
    assert run_cli("scan", str(tmp_path), "--fail-on-errors").returncode == 1


# ---------------------------------------------------------------- 13: TD302
FORWARD = """
import torch
from torch import nn
class Net(nn.Module):
    def forward(self, x):
        {}
        return x
"""


@pytest.mark.parametrize(
    "line",
    [
        "i = torch.arange(4).to(x.device)",
        "z = torch.zeros(3).to(x)",
        "z = torch.ones(3).type_as(x)",
    ],
)
def test_td302_quiet_when_moved_right_away(line):
    assert findings(FORWARD.format(line)) == []


def test_td302_names_only_real_like_functions():
    (f,) = findings(FORWARD.format("i = torch.arange(4)"))
    assert "_like" not in f.fix
    (f,) = findings(FORWARD.format("i = torch.zeros(4)"))
    assert "torch.zeros_like(x)" in f.fix


# ---------------------------------------------------------------- 14: small ones
def test_td102_no_edit_with_pickle_module():
    (f,) = [
        f
        for f in findings('import torch, pickle\nsd = torch.load("a", pickle_module=pickle)\n')
        if f.rule == "TD102"
    ]
    assert f.edit is None


def test_td402_quiet_in_the_epoch_loop():
    src = """
    for epoch in range(3):
        for batch in data:
            loss = model(batch)
            loss.backward()
            opt.step()
        print(loss.item())
    """
    assert findings(src) == []
    src_inner = """
    for epoch in range(3):
        for batch in data:
            loss = model(batch)
            loss.backward()
            print(loss.item())
    """
    assert [f.rule for f in findings(src_inner)] == ["TD402"]


def test_dist_package_is_scanned_but_build_output_is_not(tmp_path):
    for d in ("dist", "build", "mypkg/dist"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "m.py").write_text("import torch\nx = t.cuda()\n")
    (tmp_path / "mypkg" / "dist" / "__init__.py").write_text("")
    result = scan_paths([str(tmp_path)], jobs=1)
    assert {os.path.relpath(f.path, tmp_path) for f in result.findings} == {"mypkg/dist/m.py"}


def test_sarif_columns_are_code_points(tmp_path):
    (tmp_path / "e.py").write_text('s = "😀😀"; q = t.cuda()\n', encoding="utf-8")
    doc = json.loads(run_cli("scan", str(tmp_path), "--format", "sarif").stdout)
    run = doc["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startColumn"] == 15


def test_map_location_cpu_is_only_applied_where_it_changes_nothing(tmp_path):
    """A whole model loaded then used on the GPU must not be moved to the CPU by --fix
    (found on pytorch/examples word_language_model); straight into load_state_dict it is safe."""
    from torchdoctor.scan import ScanOptions, scan_paths

    src = tmp_path / "train.py"
    src.write_text(
        "import torch\n"
        "model = torch.load('model.pt')\n"
        "net.load_state_dict(torch.load('weights.pt'))\n"
    )
    result = scan_paths([str(src)], ScanOptions(), 1)
    td101 = {f.line: f for f in result.findings if f.rule == "TD101"}
    assert set(td101) == {2, 3}
    assert td101[2].edit is None
    assert td101[3].edit is not None
