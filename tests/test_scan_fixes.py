"""Regressions from the second review: --fix safety, odd files, and rule false positives."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_paths, scan_source
from torchdoctor.scan.fix import TARGET, plan

from .conftest import run_cli
from .fix_corpus import CASES, H
from .scan_tree import scan_tree

# The fixes of a project whose code must run without CUDA: its map_location findings are
# shown (a load without one is low by default, scan/calibration.py).
PORTABLE = ScanOptions(portable=True)


def findings(src: str):
    return scan_source("s.py", textwrap.dedent(src), ScanOptions())[0]


def fixed(src: str) -> str:
    text = textwrap.dedent(src)
    planned = plan("s.py", text, scan_source("s.py", text, ScanOptions())[0])
    return text if planned is None else planned.new


def test_plan_makes_one_edit_of_a_finding_named_twice():
    text = 'import torch\nnet.load_state_dict(torch.load("a"))\n'
    once = scan_source("s.py", text, ScanOptions())[0]
    new = plan("s.py", text, once + once).new
    assert new.count("map_location") == 1 and new.count("weights_only") == 1


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
    f.write_text(BAD)
    result = scan_paths([str(tmp_path), str(f), str(f)], PORTABLE, jobs=1)
    assert result.files_scanned == 1 and len(result.findings) == 2
    r = run_cli("scan", str(tmp_path), str(f), "--fix", "--portable")
    assert r.returncode == 0, r.stdout + r.stderr
    new = f.read_text()
    compile(new, "dup.py", "exec", dont_inherit=True)
    assert new.count("weights_only") == 1


# ---------------------------------------------------------------- 3: FIFOs
def test_a_fifo_is_a_file_error_not_a_hang(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.mkfifo(tmp_path / "fifo.py")
    r = run_cli("scan", str(tmp_path), "--json", timeout=60)
    doc = json.loads(r.stdout)
    assert [e["message"] for e in doc["errors"]] == ["not a regular file"]
    r = run_cli("scan", str(tmp_path / "fifo.py"), "--json", timeout=60)
    assert json.loads(r.stdout)["errors"][0]["message"] == "not a regular file"


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
    assert "weights_only" not in new  # a bare load may hold a whole model: reported, not fixed


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
    (f,) = findings(FORWARD.format("i = torch.arange(4)\n        x = x + i"))
    assert "_like" not in f.fix
    (f,) = findings(FORWARD.format("i = torch.zeros(4)\n        x = x + i"))
    assert "torch.zeros_like(x)" in f.fix


# ---------------------------------------------------------------- 14: small ones
def test_td102_pickle_module_dill_load_3d_diffusion_policy_train_load_checkpoint():
    """`torch.load(path, pickle_module=dill, map_location='cpu')` (YanjieZe/3D-Diffusion-Policy
    train.py, labelled a real security pitfall in 7 of 9 blind repositories): torch skips its
    safe default beside a pickle_module on every release, so the load is reported, without an
    edit (weights_only=True raises there). An explicit weights_only is still a choice."""
    src = 'import torch, dill\nsd = torch.load(open("a", "rb"), pickle_module=dill)\n'
    (f,) = [f for f in findings(src) if f.rule == "TD102"]
    assert "pickle_module" in f.message and f.edit is None
    src = 'import torch, dill\nsd = torch.load("a", pickle_module=dill, weights_only=False)\n'
    assert [f.rule for f in findings(src) if f.rule == "TD102"] == []


def test_td102_pickle_module_reported_under_a_torch_2_6_floor(tmp_path):
    """The torch ≥ 2.6 floor that silences a plain load does not cover a pickle_module load:
    `_default_to_weights_only(pickle_module)` is False there (checked on torch 2.13.0)."""
    src = 'import torch, dill\nsd = torch.load("a", pickle_module=dill)\nsd2 = torch.load("b")\n'
    got = scan_tree(tmp_path, {"requirements.txt": "torch>=2.6\n", "m.py": src})
    assert [(line, rule) for _, line, rule, _ in got if rule == "TD102"] == [(2, "TD102")]


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
        (tmp_path / d / "m.py").write_text("import torch\nsd = torch.load(p)\n")
    (tmp_path / "mypkg" / "dist" / "__init__.py").write_text("")
    result = scan_paths([str(tmp_path)], jobs=1)
    assert {os.path.relpath(f.path, tmp_path) for f in result.findings} == {"mypkg/dist/m.py"}


def test_sarif_columns_are_code_points(tmp_path):
    (tmp_path / "e.py").write_text('s = "😀😀"; q = torch.load(p)\n', encoding="utf-8")
    doc = json.loads(run_cli("scan", str(tmp_path), "--format", "sarif").stdout)
    run = doc["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region["startColumn"] == 15


def test_map_location_cpu_is_only_applied_where_it_changes_nothing(tmp_path):
    """A whole model loaded then used on the GPU must not be moved to the CPU by --fix
    (found on pytorch/examples word_language_model); straight into load_state_dict it is safe."""
    from torchdoctor.scan import scan_paths

    src = tmp_path / "train.py"
    src.write_text(
        "import torch\n"
        'map_device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "model = torch.load('model.pt')\n"
        "net.load_state_dict(torch.load('weights.pt'))\n"
    )
    result = scan_paths([str(src)], PORTABLE, 1)
    td101 = {f.line: f for f in result.findings if f.rule == "TD101"}
    assert set(td101) == {3, 4}
    assert td101[3].edit is None
    assert td101[4].edit is not None


# ---------------------------------------------------------------- the --fix corpus
def _fix_dir(path, write: bool = True):
    from torchdoctor.cli import scan as cli_scan

    # every confidence: the corpus tests the fixer's edits, not what the default output shows
    result = scan_paths([str(path)], ScanOptions(include_tests=True, confidence="low"), jobs=1)
    cli_scan._apply_fixes(result, (str(path),), write=write, show=False)
    return result


def _undefined_names(root) -> dict[str, set[str]]:
    """ruff's F821 under `root`: file name (relative) -> the names it reads that nothing binds."""
    r = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F821",
         "--output-format", "json", "--exit-zero", str(root)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out: dict[str, set[str]] = {}
    for d in json.loads(r.stdout):
        out.setdefault(os.path.relpath(d["filename"], root), set()).add(d["message"])
    return out


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_fix_corpus(tmp_path, c):
    (tmp_path / "requirements.txt").write_text(f"{c.torch_floor}\n")
    f = tmp_path / "case.py"
    f.write_text(c.src)
    result = _fix_dir(tmp_path)
    new = f.read_text()
    assert result.errors == []
    if c.expected is None:
        assert new == c.src and result.fixed == []
        fixable = [x for x in result.findings if x.rule in TARGET]
        assert fixable and all(x.fix_note for x in fixable), "left alone must say why"
    else:
        assert new == c.expected
        assert result.fixed
    compile(new, "case.py", "exec", dont_inherit=True)
    _fix_dir(tmp_path)
    assert f.read_text() == new  # a second run changes nothing


def test_fix_corpus_introduces_no_undefined_name(tmp_path):
    """ruff F821 over the whole corpus, before and after --fix (one ruff run each)."""
    for c in CASES:
        d = tmp_path / c.name
        d.mkdir()
        (d / "requirements.txt").write_text(f"{c.torch_floor}\n")
        (d / "case.py").write_text(c.src)
    before = _undefined_names(tmp_path)
    for c in CASES:
        _fix_dir(tmp_path / c.name)
    after = _undefined_names(tmp_path)
    assert "Undefined name `ds`" in before[os.path.join("pin_memory_through_an_alias", "case.py")]
    for name, messages in after.items():
        assert messages <= before.get(name, set()), name


def test_corpus_has_at_least_40_idioms():
    assert len({c.name for c in CASES}) == len(CASES) >= 40


LINES = H + "x = x.cuda()\nnet.load_state_dict(torch.load(p))\n"
LINES_FIXED = (
    H
    + "x = x.to(device)\nnet.load_state_dict(torch.load(p, map_location=device, weights_only=True))\n"
)


@pytest.mark.parametrize(
    "name, encode",
    [
        ("crlf_line_endings", lambda s: s.replace("\n", "\r\n").encode()),
        ("utf8_bom", lambda s: b"\xef\xbb\xbf" + s.encode()),
        (
            "pep263_latin1_cookie",
            lambda s: ("# -*- coding: latin-1 -*-\n# café\n" + s).encode("latin-1"),
        ),
    ],
)
def test_fix_keeps_the_bytes_it_does_not_edit(tmp_path, name, encode):
    f = tmp_path / "case.py"
    f.write_bytes(encode(LINES))
    _fix_dir(tmp_path)
    assert f.read_bytes() == encode(LINES_FIXED)
    _fix_dir(tmp_path)
    assert f.read_bytes() == encode(LINES_FIXED)


def test_a_state_dict_saved_in_another_project_file_allows_weights_only(tmp_path):
    (tmp_path / "train.py").write_text("import torch\ntorch.save(model.state_dict(), args.out)\n")
    (tmp_path / "evaluate.py").write_text(
        'import torch\nsd = torch.load(args.out, map_location="cpu")\nuse(sd)\n'
    )
    _fix_dir(tmp_path)
    assert "weights_only=True" in (tmp_path / "evaluate.py").read_text()


def test_numpy_receiver_is_never_moved_inside_a_call():
    """`y = model(x).cpu().numpy()` once became `model.detach()(x)...` (the reviewer's report)."""
    from torchdoctor.scan.model import Finding

    text = "y = model(x).cpu().numpy()\n"
    f = Finding("TD401", "s.py", 1, 5, 1, 27, text.strip(), "m", "fix")
    planned = plan("s.py", text, [f])
    assert planned.new == "y = model(x).detach().cpu().numpy()\n"


def test_an_edit_that_would_read_an_unbound_name_is_declined():
    from torchdoctor.scan.model import Edit

    text = "x = x.cuda()\n"  # no `device` anywhere: whatever the analyzer proposed
    (f,) = scan_source("s.py", text, ScanOptions())[0]
    f = dataclasses.replace(f, edit=Edit(0, 0, ".to(device)"))
    planned = plan("s.py", text, [f])
    assert planned.new == text and planned.applied == []
    assert "unbound name (device)" in planned.declined[0][1]


def test_a_file_libcst_cannot_parse_is_reported_not_an_error():
    from torchdoctor.scan.model import Finding

    f = Finding("TD001", "s.py", 1, 1, 1, 2, "", "m", "fix")
    planned = plan("s.py", "x = (\n", [f])
    assert planned.applied == [] and "cannot parse" in planned.declined[0][1]


# ---------------------------------------------------------------- --diff, modes, owners, links
# a script that falls back to the CPU: TD101 is shown there (not only with --confidence low)
BAD = 'import torch\nmap_device = "cuda" if torch.cuda.is_available() else "cpu"\n' + (
    'net.load_state_dict(torch.load("a"))\n'
)


@pytest.mark.parametrize("flags", [["--diff"], ["--fix", "--diff"]])
def test_diff_never_writes(tmp_path, flags):
    f = tmp_path / "a.py"
    f.write_text(BAD)
    r = run_cli("scan", str(f), *flags)
    assert "+net.load_state_dict(" in r.stdout
    assert f.read_text() == BAD


def test_fix_keeps_mode_and_owner(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(BAD)
    f.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(f, 12345, 54321)
    r = run_cli("scan", str(f), "--fix")
    assert "weights_only=True" in f.read_text(), r.stdout
    st = f.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (12345, 54321)


def test_read_only_file_is_skipped_with_a_note(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(BAD)
    f.chmod(0o444)
    r = run_cli("scan", str(f), "--fix", "--json")
    doc = json.loads(r.stdout)
    assert f.read_text() == BAD and doc["fixed"] == [] and doc["errors"] == []
    assert {x["details"]["fix_note"] for x in doc["findings"]} == {
        "not written: the file is read-only"
    }


def test_hard_linked_file_is_skipped_with_a_note(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(BAD)
    os.link(f, tmp_path / "b.txt")
    r = run_cli("scan", str(f), "--fix", "--json")
    doc = json.loads(r.stdout)
    assert f.read_text() == BAD == (tmp_path / "b.txt").read_text()
    assert "2 hard links" in doc["findings"][0]["details"]["fix_note"]


def test_full_disk_leaves_the_file_and_no_temp_file(tmp_path, monkeypatch):
    from torchdoctor import safeio

    f = tmp_path / "a.py"
    f.write_text(BAD)

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safeio.os, "fsync", full)
    result = _fix_dir(tmp_path)
    assert f.read_text() == BAD and os.listdir(tmp_path) == ["a.py"]
    assert result.errors == [] and result.fixed == []
    assert "No space left on device" in result.findings[0].fix_note


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.03, 0.3])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_fix_leaves_each_file_old_or_new_and_no_temp(tmp_path, sig, delay):
    """Signals at several delays after the first file was rewritten (so, during the writes).
    Enough files that the last signal still lands mid-way on an idle machine (60 were all
    rewritten within 0.3 s here, and the run exited 0 before the signal)."""
    n = 400
    body = "".join(f"y{i} = f(x, {i})  # {i}\n" for i in range(100))
    old = BAD + body
    new = BAD.replace('"a")', '"a", map_location="cpu", weights_only=True)') + body
    names = [f"m{i:03}.py" for i in range(n)]
    for name in names:
        (tmp_path / name).write_text(old)
    p = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "scan", str(tmp_path), "--fix", "--portable", "-j", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while (tmp_path / names[0]).read_text() == old and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(delay)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert b"Traceback" not in err
    assert p.returncode == (130 if sig == signal.SIGINT else 128 + signal.SIGTERM), err
    assert sorted(os.listdir(tmp_path)) == names  # no temporary file left
    texts = [(tmp_path / x).read_text() for x in names]
    assert set(texts) <= {old, new}
    assert 0 < texts.count(new) < n  # it really was interrupted part-way


@pytest.mark.parametrize(
    "text, floor",
    [
        ("torch>=2.6\n", (2, 6)),
        ('dependencies = ["torch >= 2.7, <3", "numpy"]\n', (2, 7)),
        ("torch==2.5.1+cu121\n", (2, 5)),
        ("torch\nnumpy\n", (0, 0)),  # says nothing about the version: the installed torch decides
        ("torchvision>=0.20\npytorch-lightning>=2.4\n", None),
    ],
)
def test_torch_floor_of_a_requirements_text(text, floor):
    from torchdoctor.scan.fix_project import torch_floor

    assert torch_floor(text) == floor


def test_unbound_names_follow_scopes_globals_and_star_imports():
    from torchdoctor.scan.fix_names import unbound

    code = "def f(x):\n    global g\n    g = 1\n    return x + device\nprint(g, len)\n"
    assert unbound(code) == {"device"}
    assert unbound("from m import *\nprint(device)\n") == set()
