"""fix's planning and undo logic without an environment: which commands it may run, how they are
made to fit (companions, conda), what a restore runs, and the exit codes (tests/test_fix.py runs
it all for real against a local index)."""

from __future__ import annotations

import sys

import pytest

from torchdoctor.check import pipeline
from torchdoctor.check import record as facts_record
from torchdoctor.fix import commands, conda, planner, preview, restore
from torchdoctor.fix.apply import Applied
from torchdoctor.fix.inventory import Dist, Inventory, freeze_diff
from torchdoctor.fix.outcome import IDS, Outcome
from torchdoctor.fix.plan import Plan, refusal
from torchdoctor.fix.proc import Ran
from torchdoctor.fix.restore import Restored
from torchdoctor.fix.verify import Verified

from .conftest import REPO, load_facts

PY = "/home/me/proj/.venv/bin/python3"


def classify(command: str):
    return commands.classify(command, PY, None)


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("sudo ubuntu-drivers install", "needs sudo"),
        ("nvidia-smi", "a driver or system package"),
        ("export CUDA_HOME=/usr/local/cuda-13.0", "changes a shell's environment"),
        ("env -u LD_LIBRARY_PATH python -c 'import torch'", "changes a shell's environment"),
        ("/usr/bin/python3 -m pip install torch==2.13.0", "pip of another interpreter"),
        (f"{PY} -m pip install --target /tmp/x torch==2.13.0", "option --target"),
        (f"{PY} -m pip install --user torch==2.13.0", "option --user"),
        (f"{PY} -m pip install ./torch-2.13.0.whl", "not a package requirement"),
        (f"{PY} -m pip install -r requirements.txt", "option -r"),
        (f"{PY} -m pip download torch", "pip download is not an install"),
        (f"{PY} -m pip install torch && rm -rf /", "a shell pipeline"),
        ("conda install -c nvidia cuda-toolkit=12.8", "not a conda environment"),
    ],
)
def test_commands_other_than_a_package_install_for_the_examined_python_stay_advice(command, why):
    result = classify(command)
    assert isinstance(result, commands.NotRun) and why in result.why, result


def test_the_companion_fix_of_torch_install_is_run_as_an_argv_list():
    cmd = classify(
        f"{PY} -m pip install --force-reinstall --no-deps 'torchvision==0.28.0' "
        "--index-url https://download.pytorch.org/whl/cpu"
    )
    assert isinstance(cmd, commands.PackageCommand)
    assert cmd.argv[-3:] == (
        "torchvision==0.28.0",
        "--index-url",
        "https://download.pytorch.org/whl/cpu",
    )
    assert cmd.names == ["torchvision"]
    mirrored = commands.with_mirror(cmd, "file:///srv/whl/")
    assert mirrored.argv[-1] == "file:///srv/whl/cpu"
    assert classify("torchdoctor check --python x --only torch.install") == commands.VERIFY


def test_a_torch_variant_change_brings_torchvision_in_the_same_resolve_and_names_an_unpaired_torchaudio():
    cmd = classify(
        f"{PY} -m pip install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
    )
    moved, notes = commands.with_companions(
        cmd, {"torch": "2.13.0+cpu", "torchvision": "0.28.0+cpu", "torchaudio": "2.9.0+cpu"}
    )
    assert moved.argv[4:7] == ("--force-reinstall", "torch==2.13.0", "torchvision==0.28.0")
    # No torchaudio release pairs with torch 2.12+ (compat tables): left as is, and said so.
    assert len(notes) == 1 and "torchaudio 2.9.0+cpu" in notes[0]


def test_a_conda_torch_is_moved_with_conda_from_its_channel():
    cmd = classify(
        f"{PY} -m pip install --force-reinstall torch==2.13.0 torchvision==0.28.0 "
        "--index-url https://download.pytorch.org/whl/cu126"
    )
    meta = {
        "pytorch": {
            "version": "2.13.0",
            "build": "cpu_generic_py311",
            "channel": "https://conda.anaconda.org/conda-forge/linux-64",
        }
    }
    out = conda.translate(cmd, "/opt/conda/bin/conda", "/opt/conda/envs/ml", meta)
    assert out.argv == (
        "/opt/conda/bin/conda", "install", "--yes", "--prefix", "/opt/conda/envs/ml",
        "--override-channels", "--channel", "conda-forge",
        "pytorch==2.13.0=cuda126*", "torchvision==0.28.0=cuda126*",
    )  # fmt: skip


def test_conda_dry_run_json_is_read_as_before_and_after():
    report = {
        "actions": {
            "UNLINK": [
                {"name": "pytorch", "version": "2.13.0", "build_string": "cpu_generic_py311"}
            ],
            "LINK": [
                {
                    "name": "pytorch",
                    "version": "2.13.0",
                    "build_string": "cuda126_py311",
                    "channel": "conda-forge",
                }
            ],
        }
    }
    (change,) = preview.conda_changes(report)
    assert (change.before, change.after) == ("2.13.0=cpu_generic_py311", "2.13.0=cuda126_py311")


def _inventory(tmp_path, **versions: str) -> Inventory:
    return Inventory(PY, str(tmp_path), {n: Dist(n, v, "pip") for n, v in versions.items()})


def test_driver_too_old_is_treated_with_the_wheel_it_runs_and_the_driver_upgrade_stays_advice(
    tmp_path,
):
    facts = load_facts("driver_too_old")
    facts["platform"]["executable"] = PY
    typed = facts_record.read_facts(facts)
    report = pipeline.judge(typed, pipeline.CheckOptions())
    inv = _inventory(tmp_path, torch="2.13.0+cu130", torchvision="0.28.0+cu130")
    plan = planner.build(report, typed, inv, planner.PlanOptions())
    (step,) = plan.steps
    # cuda.driver and cuda.available propose the same reinstall: it runs once, for both.
    assert step.findings == ["cuda.driver.too-old", "cuda.available.driver-too-old"]
    assert "torchvision==0.26.0" in step.commands[0].argv  # torch 2.11 pairs with torchvision 0.26
    assert any("alternative, not applied: Upgrade the NVIDIA driver" in n for n in step.notes)
    advice = {a.finding: a.why for a in plan.advice}
    assert "changes a shell's environment" in advice["extensions.cuda-home-no-headers"]
    only = planner.build(report, typed, inv, planner.PlanOptions(only=("extensions",)))
    assert not only.steps and [a.finding for a in only.advice] == [
        "extensions.cuda-home-no-headers"
    ]


def test_torchdoctors_own_pipx_environment_is_never_the_one_treated(tmp_path, monkeypatch):
    (tmp_path / "pipx_metadata.json").write_text("{}")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    facts = facts_record.load_facts(load_facts("cpu_linux"))
    assert "torchdoctor's own pipx/uv environment" in refusal(facts, _inventory(tmp_path))


def _record(tmp_path) -> dict:
    return {
        "python": PY,
        "prefix": str(tmp_path),
        "touched": ["torchvision"],
        "freeze": "",
        "distributions": {
            "torch": {"version": "2.13.0+cu128", "source": {"kind": "index", "index_url": "https://m/whl/cu128"}},
            "torchvision": {"version": "0.28.0+cu128", "source": {"kind": "index", "index_url": "https://m/whl/cu128"}},
            "numpy": {"version": "2.1.0", "source": {"kind": "url", "url": "file:///w/numpy-2.1.0.whl"}},
        },
    }  # fmt: skip


def test_a_restore_reinstalls_exact_versions_from_their_recorded_source_and_removes_what_was_added(
    tmp_path,
):
    now = _inventory(
        tmp_path, torch="2.13.0+cpu", torchvision="0.28.0+cpu", numpy="2.1.0", pillow="11.0"
    )
    argvs = restore.commands(_record(tmp_path), now)
    assert argvs == [
        [PY, "-m", "pip", "uninstall", "-y", "pillow"],
        [PY, "-m", "pip", "install", "--no-deps", "--force-reinstall",
         "torch===2.13.0+cu128", "torchvision===0.28.0+cu128", "--index-url", "https://m/whl/cu128"],
    ]  # fmt: skip
    now.dists["numpy"] = Dist("numpy", "2.2.0")
    assert [PY, "-m", "pip", "install", "--no-deps", "--force-reinstall",
            "numpy @ file:///w/numpy-2.1.0.whl"] in restore.commands(_record(tmp_path), now)  # fmt: skip


def test_freeze_diff_is_empty_only_when_every_line_is_equal():
    assert freeze_diff("a==1\nb==2\n", "b==2\na==1\n") == []
    assert freeze_diff("a==1\n", "a==1+cpu\n") == ["-a==1", "+a==1+cpu"]


def _outcome(**kw) -> Outcome:
    return Outcome(Plan(PY, "/p", "pip"), **kw)


@pytest.mark.parametrize(
    ("outcome", "code"),
    [
        (_outcome(state="verified", verified=Verified()), 0),
        (
            _outcome(state="failed", verified=Verified(new=["torch.install"]), restored=Restored()),
            4,
        ),
        (
            _outcome(
                state="failed",
                applied=Applied(failed=Ran(["pip"], 1, "", "", 0.1)),
                restored=Restored(diff=["-torch==2.13.0"]),
            ),
            5,
        ),
        (_outcome(state="interrupted", stopped_by=2, restored=Restored()), 130),
        (_outcome(state="interrupted", stopped_by=15, restored=Restored()), 143),
    ],
)
def test_exit_codes_follow_the_readme_table(outcome, code):
    assert outcome.exit_code() == code
    assert outcome.to_dict()["summary"]["exit_code"] == code


def test_every_fix_finding_id_has_its_page():
    missing = [i for i in IDS if not (REPO / "docs" / "fix" / f"{i}.md").is_file()]
    assert not missing
