"""Confidence calibrated on the blind corpora (scan/calibration.py): a class of findings measured
mostly false on code nobody here had seen is shown only at --confidence low, unless the project
says its code must run without CUDA (--portable, `portable = true`)."""

from __future__ import annotations

import json

from torchdoctor.scan import ScanOptions, calibration, scan_paths
from torchdoctor.scan.calibration import below_bar, measured

from .conftest import run_cli

# A trainer made for CUDA only (efficientvit's sam_trainer, fourteenth blind corpus): its
# maintainers would not change the `.cuda()`, and nothing in the file runs without CUDA.
CUDA_ONLY_TRAINER = """import torch

class Trainer:
    def prepare(self, model):
        self.model = model.cuda()
"""
# The same call in a file that picks the CPU where CUDA is absent: the author's own fallback
# says it must run there, and this line raises "Torch not compiled with CUDA enabled".
FALLING_BACK = """import torch

device = "cuda" if torch.cuda.is_available() else "cpu"

class Trainer:
    def prepare(self, model):
        self.model = model.cuda()
"""
LOAD = "import torch\n\ndef restore(path):\n    return torch.load(path)\n"
PRINTED_LOSS = """import torch

def train(model, loader, opt):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        opt.step()
        total = loss.item()
"""


def _measured(rule: str) -> tuple[int, int]:
    """The share and repository count the table gives the rule in files without a fallback."""
    real, false = calibration.MEASURED[(rule, False, False)]
    return round(100 * real / (real + false)), round(real + false)


def _found(tmp_path, text: str, **opts) -> list[tuple[str, str]]:
    (tmp_path / "m.py").write_text(text)
    result = scan_paths([str(tmp_path)], ScanOptions(confidence="low", **opts), jobs=1)
    return [(f.rule, f.confidence) for f in result.findings]


def test_cuda_in_a_cuda_only_trainer_is_low_by_default_efficientvit(tmp_path):
    assert _found(tmp_path, CUDA_ONLY_TRAINER) == [("TD001", "low")]
    (tmp_path / "m.py").write_text(CUDA_ONLY_TRAINER)
    (f,) = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1).findings
    share, repos = _measured("TD001")
    assert (
        f"TD001 findings in files without a CPU fallback were {share} % real, per repository,"
        f" over the {repos} repositories" in f.grounds
    )
    assert "--portable" in f.grounds


def test_portable_gives_the_device_rule_its_own_confidence_back(tmp_path):
    assert _found(tmp_path, CUDA_ONLY_TRAINER, portable=True) == [("TD001", "high")]


def test_cuda_in_a_file_that_falls_back_torch_not_compiled_with_cuda_enabled(tmp_path):
    """ "Torch not compiled with CUDA enabled" on the CPU the file falls back to. Real in 69 %
    of the 34 repositories where it fired (sets 3-152), shown while the data did not put it
    under three in five; 54 % of 56 once sets 349-356 joined, just under the bar (a class at
    it shows this few real ones about one time in five); 54 % of 57 once sets 372-379 added a
    real one, at 0.23 of the time: shown again, high."""
    assert _found(tmp_path, FALLING_BACK) == [("TD001", "high")]
    assert _found(tmp_path, FALLING_BACK, portable=True) == [("TD001", "high")]
    assert below_bar("TD001", True, portable=False) is None
    assert below_bar("TD001", False, portable=False)  # files without a fallback: still low


# AlphaPose's trackers/utils/utils.py (thirty-second blind corpus): the file's only choice by
# CUDA's availability is where a checkpoint lands; its `.cuda()` helpers were copied from a
# CUDA-only tracker and nothing calls them. A map_location choice is not a CPU fallback.
MAP_LOCATION_ONLY = """import torch

def build_targets(target, nB):
    txy = torch.zeros(nB, 2).cuda()
    return txy

def load_model(model, path):
    map_location = None if torch.cuda.is_available() else "cpu"
    model.load_state_dict(torch.load(path, map_location=map_location, weights_only=True))
"""


def test_a_map_location_choice_is_not_a_cpu_fallback_alphapose(tmp_path):
    (tmp_path / "m.py").write_text(MAP_LOCATION_ONLY)
    (f,) = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1).findings
    assert (f.rule, f.confidence) == ("TD001", "low")
    # the same file choosing its compute device the same way does fall back
    chooses = MAP_LOCATION_ONLY.replace("map_location = None", "device = None")
    chooses = chooses.replace("map_location=map_location", "map_location=device")
    assert _found(tmp_path, chooses, portable=True) == [("TD001", "medium")]


# sfujim/TD3's TD3.py (ninth blind corpus): the agent saves its state dicts from the device
# it picked (CUDA when there is one) and loads them back without map_location; on the CPU it
# falls back to, a GPU-trained policy raises "Attempting to deserialize object on a CUDA
# device but torch.cuda.is_available() is False".
ROUND_TRIP = """import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

class Agent:
    def save(self, filename):
        torch.save(self.actor.state_dict(), filename + "_actor")

    def load(self, filename):
        self.actor.load_state_dict(torch.load(filename + "_actor"))
"""
# GFPGAN's utils.py (fifth blind corpus): released weights written from CPU tensors, in a
# file that falls back to the CPU and writes nothing itself.
RELEASED = """import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def load(model, path):
    model.load_state_dict(torch.load(path, weights_only=True))
"""


def test_attempting_to_deserialize_on_a_cuda_device_round_trip_follows_the_table(tmp_path):
    """A script that falls back to the CPU and loads back what it saved from the device:
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is
    False" on the CPU it picks. Shown while it was real in 56 % of 44 repositories; low from
    sets 177-184 (53 % of 64); shown again with sets 319-326 (55 % of 106); low again with
    sets 327-334 (55-56 % of 115-129 as sets 335-371 joined); shown since the newest sets
    (319-340, then each round's too: TD101's labels moved there) judge it alone: real in 18.5
    repositories of 28 on 319-371. The calibration
    follows the evidence both ways; --portable keeps it."""
    assert ("TD101", "high") in _found(tmp_path, ROUND_TRIP)
    assert ("TD101", "high") in _found(tmp_path, ROUND_TRIP, portable=True)
    assert calibration.below_bar("TD101", True, False, saves=True) is None
    assert measured("TD101", True, saves=True) == (
        calibration.RECENT[("TD101", True, True)],
        f" of the newest sets ({calibration.RECENT_SETS}) in files with a CPU fallback that"
        " also call torch.save",
    )


def test_a_load_in_a_falling_back_file_is_shown_on_the_newest_sets(tmp_path):
    """`torch.load(path)` in a file that picks the CPU where CUDA is absent: 40 % real over
    all sets, 11.67 repositories of 16 in the newest (319-371)."""
    (tmp_path / "m.py").write_text(RELEASED)
    (f,) = scan_paths([str(tmp_path)], ScanOptions(), jobs=1).findings
    assert f.rule == "TD101"
    assert measured("TD101", True) == (
        calibration.RECENT[("TD101", True, False)],
        f" of the newest sets ({calibration.RECENT_SETS}) in files with a CPU fallback that"
        " never call torch.save",
    )


def test_the_newest_sets_judge_a_class_only_with_enough_repositories(monkeypatch):
    monkeypatch.setattr(calibration, "RECENT", {("TD101", True, False): (1, 6)})
    assert measured("TD101", True) == (
        calibration.MEASURED[("TD101", True, False)],
        " in files with a CPU fallback that never call torch.save",
    )
    monkeypatch.setattr(calibration, "RECENT", {("TD101", True, False): (1, 7)})
    why = below_bar("TD101", True, portable=False) or ""
    assert why.startswith(
        f"TD101 findings of the newest sets ({calibration.RECENT_SETS}) in files with a CPU"
        " fallback that never call torch.save were 12 % real"
    )
    assert measured("TD001", True)[1] == " in files with a CPU fallback"  # the window: TD101 only


def test_weights_only_is_shown_everywhere_unsafe_pickle(tmp_path):
    """TD102 was 97 % real per repository, over 510: calibration leaves it as it is."""
    assert ("TD102", "high") in _found(tmp_path, LOAD)
    assert ("TD101", "low") in _found(tmp_path, LOAD)


def test_a_rule_that_is_not_about_devices_stays_low_even_portable(tmp_path):
    """`.item()` every step: 1 % real over 35 repositories; without CUDA it is no truer."""
    plain = [r for r in _found(tmp_path, PRINTED_LOSS) if r[0] == "TD402"]
    portable = [r for r in _found(tmp_path, PRINTED_LOSS, portable=True) if r[0] == "TD402"]
    assert plain == portable
    assert all(conf == "low" for _, conf in plain)


def test_a_class_is_lowered_only_when_its_repositories_put_it_under_the_bar():
    """One-sided binomial test against three in five, at 80 %: none real of two is enough
    (0.4 ** 2 < 0.2), one of three is not, and thirty of 112 is."""
    assert calibration.under_bar(0, 2)
    assert not calibration.under_bar(1, 3)
    assert not calibration.under_bar(0, 1)  # too few to say anything
    assert calibration.under_bar(30.83, 112)
    assert not calibration.under_bar(14.5, 23)  # .cuda() in files that fall back, 63 %
    assert not calibration.under_bar(24.67, 44)  # round trips through torch.save, 56 %
    assert calibration.under_bar(18.33, 91)  # .cuda() in files without a fallback, 20 %
    assert not calibration.under_bar(15, 18)  # 83 %: above the bar


def test_the_test_holds_past_a_thousand_repositories():
    """`comb(n, i)` times a float overflows ("int too large to convert to float") past about
    1,030 repositories; TD102's largest class held 457 after sets 3-133 and grows every round."""
    assert not calibration.under_bar(1200, 2000)  # exactly at the bar
    assert calibration.under_bar(1150, 2000)  # 57.5 %: under it, at 2,000 that says so
    assert not calibration.under_bar(440.66, 457)  # TD102 without a fallback, 96 %


def test_a_class_with_too_few_findings_is_judged_by_a_wider_one(monkeypatch):
    table = {
        ("TD101", True, True): (2, 0),  # two repositories: too few to say anything
        ("TD101", True, False): (0, 4),
        ("TD101", False, False): (0, 9),
        ("TD003", True, False): (1, 1),
    }
    monkeypatch.setattr(calibration, "MEASURED", table)
    monkeypatch.setattr(calibration, "RECENT", {})
    assert measured("TD101", True, saves=True) == ((2, 4), " in files with a CPU fallback")
    assert measured("TD101", False, saves=True) == ((0, 9), " in files without a CPU fallback")
    assert measured("TD003", True) is None  # two, and none elsewhere: its reasoning stands
    assert measured("TD003", True, saves=True) is None  # TD003 is not split by saves
    assert below_bar("TD003", True, portable=False) is None
    assert below_bar("TD602", False, portable=False) is None  # never measured
    why = below_bar("TD101", True, portable=False, saves=True)
    assert why is not None
    assert why.startswith(
        "TD101 findings in files with a CPU fallback were 33 % real, per repository"
    )
    assert "over the 6 repositories" in why


def test_weights_only_is_above_the_bar_everywhere():
    assert below_bar("TD102", False, portable=False) is None
    assert below_bar("TD102", True, portable=False) is None


def test_portable_true_in_pyproject_is_the_flag(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.torchdoctor.scan]\nportable = true\n")
    (tmp_path / "m.py").write_text(CUDA_ONLY_TRAINER)
    r = run_cli("scan", str(tmp_path), "--json")
    assert [f["id"] for f in json.loads(r.stdout)["findings"]] == ["TD001"]
    assert r.returncode == 1


def test_portable_that_is_not_a_boolean_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor.scan]\nportable = "yes"\n')
    r = run_cli("scan", ".", cwd=tmp_path)
    assert r.returncode == 2
    assert "portable: must be true or false" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_default_output_counts_what_calibration_hid(tmp_path):
    (tmp_path / "m.py").write_text(CUDA_ONLY_TRAINER)
    r = run_cli("scan", str(tmp_path), "--json")
    doc = json.loads(r.stdout)
    assert doc["findings"] == [] and doc["summary"]["below_confidence"] == 1
    assert r.returncode == 0


# A Mac user's "Torch not compiled with CUDA enabled" from a `.cuda()` the default output hid:
# the scan cannot know the project must run there, so it names the one setting that says so.
def test_the_footer_names_portable_for_the_device_findings_it_hid(tmp_path):
    (tmp_path / "m.py").write_text(CUDA_ONLY_TRAINER)
    (tmp_path / "n.py").write_text("import torch\nnet = torch.load('net.pt')\n")
    r = run_cli("scan", str(tmp_path))
    assert "--portable shows 1 of them, for code that must run without CUDA" in r.stdout
    doc = json.loads(run_cli("scan", str(tmp_path), "--json").stdout)["summary"]
    assert doc["below_confidence"] == 2 and doc["below_confidence_portable"] == 1
    portable = json.loads(run_cli("scan", str(tmp_path), "--json", "--portable").stdout)
    assert portable["summary"]["below_confidence_portable"] == 0
    shown = [f["id"] for f in portable["findings"]]
    assert "TD001" in shown and "TD101" not in shown  # the load is low on its own grounds


def test_no_portable_hint_where_portable_would_show_nothing_more(tmp_path):
    (tmp_path / "n.py").write_text("import torch\nnet = torch.load('net.pt')\n")
    r = run_cli("scan", str(tmp_path))
    assert "not shown (--confidence low)" in r.stdout and "--portable" not in r.stdout


def test_vendored_device_findings_are_not_counted_as_portable(tmp_path):
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / "m.py").write_text(CUDA_ONLY_TRAINER)
    doc = json.loads(run_cli("scan", str(tmp_path), "--json").stdout)["summary"]
    assert doc["below_confidence"] == 1 and doc["below_confidence_portable"] == 0


# riffusion's riffusion_pipeline.py (thirty-seventh blind corpus), like tortoise-tts's .ptt
# files (twenty-ninth): a traced module loaded without map_location, saved from the CPU or
# only ever run on CUDA. None was real, in the fifteen repositories where one fired (sets
# 3-126; eleven of them in files without a CPU fallback).
JIT_LOAD = """import torch

def load_traced(unet_file):
    return torch.jit.load(unet_file)
"""


def test_jit_load_without_map_location_is_low_by_default_riffusion(tmp_path):
    (tmp_path / "m.py").write_text(JIT_LOAD)
    (f,) = scan_paths([str(tmp_path)], ScanOptions(confidence="low"), jobs=1).findings
    assert (f.rule, f.confidence) == ("TD103", "low")
    share, repos = _measured("TD103")
    assert f.grounds.startswith(
        f"TD103 findings in files without a CPU fallback were {share} % real, per repository,"
        f" over the {repos}"
    )
    assert _found(tmp_path, JIT_LOAD, portable=True) == [("TD103", "medium")]
