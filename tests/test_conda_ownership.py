"""One torch or two in a conda environment: conda's ``pytorch`` package carries torch's own Python
metadata, so pip lists it as ``torch`` (pytorch/pytorch#12470, #66785). The layouts below are the
ones conda leaves, as public reports show them, gathered by the real probe code and judged by the
real checks:

- pytorch/pytorch#81654: `conda install -c pytorch pytorch==1.11.0 cudatoolkit=11.3` lists
  `pytorch 1.11.0 py3.7_cuda11.3_cudnn8.2.0_0 pytorch` in conda and `torch 1.11.0` in pip, from
  `site-packages/torch-1.11.0-py3.7.egg-info/` (no INSTALLER: an egg-info has none);
- conda-forge's build of torch 1.13.1 reports `1.13.1.post200` (its build number as a post
  release; reported in coqui-ai/TTS#2292, a thread not in our search corpus: the version string
  is confirmed only by public code that strips such suffixes) from a `.dist-info` whose INSTALLER
  conda-build rewrites to "conda" (conda/conda-build conda_build/post.py);
- conda-meta/<name>-<version>-<build>.json: "files" lists the package's files relative to the
  prefix; "channel" is the channel URL with the subdir, "url" the package's (conda/conda
  conda/models/records.py, PrefixRecord).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.probes import conda_owner
from torchdoctor.probes.child import torch_probe
from torchdoctor.report.result import Status

PYTORCH_CHANNEL = "https://conda.anaconda.org/pytorch/linux-64"
CONDA_FORGE = "https://conda.anaconda.org/conda-forge/linux-64"


def conda_record(prefix: Path, name: str, version: str, build: str, channel: str, files: list[str]):
    """A conda-meta record shaped as conda writes one (the fields this reads, and a few beside)."""
    meta = prefix / "conda-meta"
    meta.mkdir(exist_ok=True)
    fn = f"{name}-{version}-{build}"
    record = {
        "build": build,
        "build_number": int(build.rsplit("_", 1)[-1]) if build[-1].isdigit() else 0,
        "channel": channel,
        "depends": ["python >=3.7,<3.8.0a0"],
        "files": files,
        "fn": f"{fn}.tar.bz2",
        "name": name,
        "subdir": "linux-64",
        "url": f"{channel}/{fn}.tar.bz2",
        "version": version,
        "paths_data": {"paths": [{"_path": f, "path_type": "hardlink"} for f in files]},
    }
    (meta / f"{fn}.json").write_text(json.dumps(record))


def torch_metadata(site: Path, dirname: str, version: str, installer: str | None) -> list[str]:
    """A torch metadata directory and package; returns its files relative to site-packages."""
    info = site / dirname
    info.mkdir(parents=True)
    egg = dirname.endswith(".egg-info")
    (info / ("PKG-INFO" if egg else "METADATA")).write_text(
        f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
    )
    if installer is not None:
        (info / "INSTALLER").write_text(installer + "\n")
    (site / "torch").mkdir(exist_ok=True)
    (site / "torch" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    return [f"{dirname}/{p.name}" for p in sorted(info.iterdir())] + ["torch/__init__.py"]


def gathered(facts, prefix: Path, site: Path, monkeypatch, imported: str) -> dict:
    """Facts as gather() assembles them for an interpreter whose prefix is ``prefix``."""
    monkeypatch.setattr(sys, "path", [str(site)])
    f = copy.deepcopy(facts("cpu_linux"))
    f["platform"].update(prefix=str(prefix), conda_prefix=str(prefix), in_venv=False)
    f["platform"]["conda_packages"] = torch_probe._conda_packages(str(prefix))
    f["packages"] = conda_owner.annotate(torch_probe.package_facts(), f["platform"])
    f["torch"].update(version=imported, file=str(site / "torch" / "__init__.py"))
    return f


def judge(facts: dict, check_id: str):
    return engine.run_check(by_id()[check_id], read_facts(facts), Context())


def commands(result) -> list[str]:
    return [c for r in result.remedies for c in r.commands]


def codes(result) -> list[str]:
    return [p.code for p in result.problems] if getattr(result, "problems", None) else []


def summary(result) -> str:
    return result.summary + " ".join(codes(result))


def pytorch_1_11(prefix: Path) -> Path:
    """pytorch/pytorch#81654: conda's pytorch 1.11.0 with its torch-1.11.0-py3.7.egg-info."""
    site = prefix / "lib" / "python3.7" / "site-packages"
    files = torch_metadata(site, "torch-1.11.0-py3.7.egg-info", "1.11.0", None)
    sp = "lib/python3.7/site-packages/"
    build = "py3.7_cuda11.3_cudnn8.2.0_0"
    conda_record(prefix, "pytorch", "1.11.0", build, PYTORCH_CHANNEL, [sp + f for f in files])
    conda_record(prefix, "pytorch-mutex", "1.0", "cuda", PYTORCH_CHANNEL, [])
    return site


def test_conda_pytorch_1_11_egg_info_is_one_install_pytorch_pytorch_81654(
    facts, tmp_path, monkeypatch
):
    site = pytorch_1_11(tmp_path)
    f = gathered(facts, tmp_path, site, monkeypatch, "1.11.0")
    (dist,) = f["packages"]["torch_distributions"]
    assert dist["metadata"].endswith("torch-1.11.0-py3.7.egg-info")
    assert dist["installer"] is None  # an egg-info has no INSTALLER
    assert dist["conda"]["name"] == "pytorch" and dist["conda_checked"] is True
    assert dist["conda"]["build"] == "py3.7_cuda11.3_cudnn8.2.0_0"
    platform = judge(f, "platform")
    assert "conda-and-pip" not in codes(platform), platform.summary
    assert "installed twice" not in platform.summary
    assert "duplicate-installs" not in codes(judge(f, "torch.install"))
    assert not any("uninstall" in c or "conda remove" in c for c in commands(platform))


def test_conda_forge_torch_1_13_1_post200_dist_info_installer_conda_is_one_install(
    facts, tmp_path, monkeypatch
):
    """coqui-ai/TTS#2292 (unverified here): conda-forge's torch reports 1.13.1.post200; its conda
    package is 1.13.1."""
    site = tmp_path / "lib" / "python3.10" / "site-packages"
    files = torch_metadata(site, "torch-1.13.1.post200.dist-info", "1.13.1.post200", "conda")
    sp = "lib/python3.10/site-packages/"
    build = "cuda112py310he33e0d6_200"
    conda_record(tmp_path, "pytorch", "1.13.1", build, CONDA_FORGE, [sp + f for f in files])
    f = gathered(facts, tmp_path, site, monkeypatch, "1.13.1.post200")
    (dist,) = f["packages"]["torch_distributions"]
    assert dist["installer"] == "conda" and dist["conda"]["channel"] == CONDA_FORGE
    platform = judge(f, "platform")
    assert "conda-and-pip" not in codes(platform), platform.summary


def pip_over_conda(prefix: Path) -> Path:
    """`pip install torch==2.0.1` over conda's pytorch 1.11.0: pip's dist-info is in no conda
    record's file list, and conda's egg-info stays (pytorch/pytorch#12470's mix, made real)."""
    site = pytorch_1_11(prefix)
    torch_metadata(site, "torch-2.0.1.dist-info", "2.0.1", "pip")
    return site


def test_pip_torch_over_conda_pytorch_is_two_installs_and_conda_goes_first(
    facts, tmp_path, monkeypatch
):
    site = pip_over_conda(tmp_path)
    f = gathered(facts, tmp_path, site, monkeypatch, "2.0.1")
    owners = {
        Path(d["metadata"]).name: d.get("conda") for d in f["packages"]["torch_distributions"]
    }
    assert owners["torch-2.0.1.dist-info"] is None
    assert owners["torch-1.11.0-py3.7.egg-info"]["name"] == "pytorch"
    platform = judge(f, "platform")
    assert platform.status == Status.WARN
    assert "conda's pytorch 1.11.0 and pip's torch 2.0.1" in platform.summary
    assert "torch-2.0.1.dist-info" in platform.summary
    cmds = commands(platform)
    assert cmds[0] == "conda remove --force pytorch"
    assert not any("uninstall" in c for c in cmds)  # the import takes pip's: pip's stays
    evidence = platform.remedies[0].evidence
    assert "packages.torch_distributions.1.metadata" in evidence


def test_pip_over_conda_importing_conda_never_uninstalls_with_pip_before_conda_lets_go(
    facts, tmp_path, monkeypatch
):
    """pip's uninstall of torch would delete files conda lists as pytorch's: conda's record is
    removed first, so pip removes only what is no longer conda's."""
    site = pip_over_conda(tmp_path)
    f = gathered(facts, tmp_path, site, monkeypatch, "1.11.0")
    cmds = commands(judge(f, "platform"))
    uninstall = next(i for i, c in enumerate(cmds) if "uninstall -y torch" in c)
    assert cmds.index("conda remove --force pytorch") < uninstall
    assert cmds.index("conda install pytorch=1.11.0") > uninstall


def test_conda_record_from_pypi_channel_is_not_conda_files(facts, tmp_path, monkeypatch):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    files = torch_metadata(site, "torch-2.5.1.dist-info", "2.5.1", "pip")
    sp = "lib/python3.11/site-packages/"
    conda_record(tmp_path, "pytorch", "2.5.1", "pypi_0", "pypi", [sp + f for f in files])
    f = gathered(facts, tmp_path, site, monkeypatch, "2.5.1")
    assert "conda-and-pip" in codes(judge(f, "platform"))


def test_old_facts_without_ownership_keep_the_finding_but_remove_nothing(
    facts, tmp_path, monkeypatch
):
    """Facts recorded before ownership was gathered: same release in conda and pip may be one
    install (pytorch/pytorch#81654), so the remedy only shows how to tell."""
    site = pytorch_1_11(tmp_path)
    f = gathered(facts, tmp_path, site, monkeypatch, "1.11.0")
    for d in f["packages"]["torch_distributions"]:
        for key in ("metadata", "installer", "conda", "conda_checked"):
            d.pop(key, None)
    platform = judge(f, "platform")
    assert "conda-and-pip" in codes(platform)
    cmds = commands(platform)
    assert cmds and not any("uninstall" in c or "remove" in c for c in cmds)
    assert "conda list pytorch" in cmds


def test_unreadable_conda_record_leaves_ownership_unknown(tmp_path):
    """A FIFO or a broken JSON in conda-meta is not read as "conda owns nothing"."""
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    (meta / "pytorch-2.5.1-py3.11_cpu_0.json").write_text("{not json")
    assert conda_owner.owner_records(str(tmp_path)) is None
    info = tmp_path / "lib" / "torch-2.5.1.dist-info"
    packages = {"torch_distributions": [{"version": "2.5.1", "metadata": str(info)}]}
    out = conda_owner.annotate(packages, {"prefix": str(tmp_path)})
    assert out["torch_distributions"][0]["conda_checked"] is False


@pytest.mark.skipif(sys.platform == "win32", reason="no FIFOs")
def test_fifo_in_conda_meta_is_refused_without_waiting(tmp_path):
    import os

    (tmp_path / "conda-meta").mkdir()
    os.mkfifo(tmp_path / "conda-meta" / "pytorch-2.5.1-py3.11_cpu_0.json")
    assert conda_owner.owner_records(str(tmp_path)) is None


def test_duplicate_copies_never_pip_uninstall_condas_imported_copy(facts, tmp_path, monkeypatch):
    """A second copy in the user site with conda's pytorch imported: pip would remove conda's."""
    site = pytorch_1_11(tmp_path)
    f = gathered(facts, tmp_path, site, monkeypatch, "1.11.0")
    user = tmp_path / "home" / ".local" / "lib" / "python3.7" / "site-packages"
    f["platform"]["user_site"] = str(user)
    f["packages"]["torch_distributions"].append(
        {"version": "2.0.1", "location": str(user), "metadata": str(user / "torch-2.0.1.dist-info"),
         "installer": "pip", "conda_checked": True}
    )  # fmt: skip
    result = judge(f, "torch.install")
    assert "duplicate-installs" in codes(result)
    assert not any("uninstall" in c for c in commands(result))
