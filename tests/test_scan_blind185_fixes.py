"""False findings of the blind sets 185-200 (twenty-first session), fixed after their one
scoring: each test reproduces the public code the labellers judged, reduced to what decides it."""

from __future__ import annotations

from .scan_tree import scan_tree as scan

LOAD = """\
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    checkpoint = torch.load("weights.pth", map_location=device)
"""


def _rules(found, rule):
    return [(path, line) for path, line, r, _ in found if r == rule]


def test_poetry_caret_torch_floor_makes_weights_only_the_default_ai_music_generation(tmp_path):
    """Jakub-Kucinski/ai-music-generation (set 188): `torch = "^2.6.0"` under
    [tool.poetry.dependencies]; from torch 2.6 weights_only=True is torch.load's default."""
    pyproject = '[tool.poetry.dependencies]\npython = "^3.11"\ntorch = "^2.6.0"\n'
    assert _rules(scan(tmp_path, {"pyproject.toml": pyproject, "sample.py": LOAD}), "TD102") == []


def test_poetry_floor_below_2_6_or_no_version_keeps_td102(tmp_path):
    specs = ('"~2.5"', '"2.4.1"', '{git = "https://github.com/pytorch/pytorch"}')
    for i, spec in enumerate(specs):
        d = tmp_path / str(i)
        d.mkdir()
        pyproject = f"[tool.poetry.group.ml.dependencies]\ntorch = {spec}\n"
        found = scan(d, {"pyproject.toml": pyproject, "sample.py": LOAD})
        assert _rules(found, "TD102") == [("sample.py", 3)], spec


def test_every_requirement_profile_pins_torch_2_13_theanimescripter(tmp_path):
    """NevermindNilas/TheAnimeScripter (set 185): requirements.txt names no torch, the
    extra-requirements-<platform>.txt profiles pin torch==2.13.0."""
    files = {
        "requirements.txt": "numpy\n",
        "extra-requirements-linux.txt": "torch==2.13.0+cu130\n",
        "extra-requirements-macos.txt": "torch==2.13.0\n",
        "rife.py": LOAD,
    }
    assert _rules(scan(tmp_path / "pinned", files), "TD102") == []
    files["extra-requirements-windows-lite.txt"] = "torch>=2.4\n"  # the lowest profile decides
    assert _rules(scan(tmp_path / "one-lower", files), "TD102") == [("rife.py", 3)]


TRAIN = """\
    import os
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"


    def main(model, loader, logdir, n_epoch):
        for epoch in range(n_epoch):
            for x in loader:
                model(x.to(device)).sum().backward()
        torch.save(model.state_dict(), os.path.join(logdir, "last.pth"))
        if os.path.exists(os.path.join(logdir, "best.pth")):
            model.load_state_dict(torch.load(os.path.join(logdir, "best.pth")))
        else:
            model.load_state_dict(torch.load(os.path.join(logdir, "last.pth")))
"""


def test_last_epoch_saved_after_training_then_reloaded_depth_estimation_trainer(tmp_path):
    """pinying567's depth-estimation trainer (set 192) saves last.pth after its epochs and
    reloads it in the same run, on the device it trained on: no TD101. best.pth, never saved
    by this code, stays flagged."""
    found = scan(tmp_path, {"train.py": TRAIN})
    assert _rules(found, "TD101") == [("train.py", 12)]


def test_a_resume_load_before_the_save_statement_is_still_flagged(tmp_path):
    resume = TRAIN.replace(
        "        for epoch in range(n_epoch):",
        '        model.load_state_dict(torch.load(os.path.join(logdir, "last.pth")))\n'
        "        for epoch in range(n_epoch):",
    )
    assert ("train.py", 7) in _rules(scan(tmp_path, {"train.py": resume}), "TD101")


CTC = """\
    import os
    os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")
    import torch
    from torch import nn
    device = "mps" if torch.backends.mps.is_available() else "cpu"
    criterion = nn.CTCLoss(blank=0)
"""


def test_ctc_loss_where_the_file_turns_on_the_mps_fallback_mamba_asr_mps(tmp_path):
    """mattmireles/mamba-asr-mps (set 188) sets PYTORCH_ENABLE_MPS_FALLBACK before importing
    torch, so aten::_ctc_loss runs on the CPU as its README documents: no TD603. A comment that
    only mentions the variable does not turn it on."""
    assert _rules(scan(tmp_path, {"train_CTC.py": CTC}), "TD603") == []
    commented = CTC.replace(
        'os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")',
        "# set PYTORCH_ENABLE_MPS_FALLBACK=1 if CTC fails",
    )
    assert _rules(scan(tmp_path, {"train_CTC.py": commented}), "TD603") == [("train_CTC.py", 6)]


def test_the_mps_fallback_set_after_import_torch_has_no_effect_bench_mps(tmp_path):
    """Its bench_mps.py sets the variable after `import torch` (inside a benchmark function
    there; here at module level, later in the file), where torch no longer reads it: the CTC
    loss still raises on a Mac (labelled a crash)."""
    late = CTC.replace('    os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")\n', "")
    late += '    os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")\n'
    assert _rules(scan(tmp_path, {"bench_mps.py": late}), "TD603") == [("bench_mps.py", 5)]


def test_what_does_not_turn_the_mps_fallback_on(tmp_path):
    """Found in review: a commented-out line, a docstring, "0", a child process's environment,
    or a setting after `import os, torch` or after a package that imports torch."""
    body = "    import torch\n    from torch import nn\n    criterion = nn.CTCLoss(blank=0)\n"
    for i, first in enumerate(
        [
            '    # os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"\n',
            '    """os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1" """\n',
            '    os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "0"\n',
            '    child_env = dict(os.environ)\n    child_env["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"\n',
            '    import torchaudio\n    os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"\n',
        ]
    ):
        src = "    import os\n" + first + body
        found = _rules(scan(tmp_path / str(i), {"m.py": src}), "TD603")
        assert len(found) == 1, first
    late = "    import os, torch\n    os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\n" + body
    assert len(_rules(scan(tmp_path / "late", {"m.py": late}), "TD603")) == 1
    on_mac = "    import os, sys\n    if sys.platform == 'darwin':\n"
    on_mac += "        os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\n" + body
    assert _rules(scan(tmp_path / "mac", {"m.py": on_mac}), "TD603") == []


def test_poetry_either_or_constraint_allows_the_older_torch(tmp_path):
    """`torch = "^2.6 || ^1.13"` allows torch 1.13, whose torch.load unpickles: TD102 stays."""
    pyproject = '[tool.poetry.dependencies]\ntorch = "^2.6 || ^1.13"\n'
    found = scan(tmp_path, {"pyproject.toml": pyproject, "sample.py": LOAD})
    assert _rules(found, "TD102") == [("sample.py", 3)]


def test_a_save_in_a_lambda_saves_nothing_until_called(tmp_path):
    src = TRAIN.replace(
        '        torch.save(model.state_dict(), os.path.join(logdir, "last.pth"))',
        '        save = lambda: torch.save(model.state_dict(), os.path.join(logdir, "last.pth"))',
    )
    assert ("train.py", 14) in _rules(scan(tmp_path, {"train.py": src}), "TD101")


def test_str_format_of_a_committed_file_is_shipped_imitation_learning(tmp_path):
    """BIT-SMuRo/Imitation-Learning (set 196) loads `r"param/bc_model_{}.pth".format(i)`, files
    committed with the code: as trusted as the code (TD102 low), like the f-string form."""
    (tmp_path / "param").mkdir()
    (tmp_path / "param" / "bc_model_0.pth").write_bytes(b"not read for TD102")
    src = """\
        import torch
        for i in range(3):
            sd = torch.load(r"param/bc_model_{}.pth".format(i))
    """
    found = [
        (line, conf) for _, line, rule, conf in scan(tmp_path, {"train.py": src}) if rule == "TD102"
    ]
    assert found == [(3, "low")]
