"""torch and the packages compiled against it from different distributors (atlas class
new:companion-distributor-mix). The conda layouts are built as conda writes them
(conda-meta/<name>-<version>-<build>.json with "name", "version", "build", "channel" (the channel
URL with its subdir) and "url"; conda/conda conda/models/records.py) and gathered by the real
probe code:

- pytorch/audio#3335: `pytorch 1.13.1 cpu_py38haaa41f7_0` (no channel column in conda list:
  Anaconda's defaults) with torchaudio 0.13.1 from the pytorch channel: `OSError:
  libtorchaudio.so: undefined symbol: _ZNK5torch8autograd4Node4nameB5cxx11Ev`;
- rusty1s/pytorch_scatter#462: NGC's nvcr.io/nvidia/pytorch:24.05-py3, torch
  2.4.0a0+07cecf4168, with torch-scatter 2.1.2 from data.pyg.org/whl/torch-2.4.0+cu124.html:
  `_version_cuda.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb`;
- rusty1s/pytorch_scatter#470: `pytorch 2.4.0 cuda118_py312h3690e1b_301 conda-forge` beside
  torchvision/torchaudio from the pytorch channel and torch-scatter from PyG's cu118 page: the
  same undefined symbol.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from torchdoctor.check.distributor import package_origin, torch_origin
from torchdoctor.check.record import read_facts
from torchdoctor.data import distributors as dist
from torchdoctor.probes import conda_owner
from torchdoctor.report.result import Status

from .test_conda_ownership import (
    CONDA_FORGE,
    PYTORCH_CHANNEL,
    codes,
    commands,
    gathered,
    judge,
    torch_metadata,
)

DEFAULTS = "https://repo.anaconda.com/pkgs/main/linux-64"
PYG_CHANNEL = "https://conda.anaconda.org/pyg/linux-64"
CHECK = "torch.distributor"


def conda_record(prefix: Path, name: str, version: str, build: str, channel: str, files: list):
    """A conda-meta record as conda writes one: name, version, build, channel, url, files."""
    meta = prefix / "conda-meta"
    meta.mkdir(exist_ok=True)
    fn = f"{name}-{version}-{build}"
    record = {
        "build": build,
        "channel": channel,
        "files": files,
        "fn": f"{fn}.conda",
        "name": name,
        "subdir": channel.rsplit("/", 1)[-1],
        "url": f"{channel}/{fn}.conda",
        "version": version,
    }
    (meta / f"{fn}.json").write_text(json.dumps(record))


def companion(site: Path, name: str, version: str, installer: str = "conda") -> list[str]:
    """A companion's metadata directory; returns its files relative to site-packages."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "INSTALLER").write_text(installer + "\n")
    return [f"{info.name}/METADATA", f"{info.name}/INSTALLER"]


def conda_env(prefix: Path, python: str, packages: list[tuple[str, str, str, str]]) -> Path:
    """A conda environment holding ``packages`` (name, version, build, channel URL); pytorch's
    record owns torch's metadata; a channel of None means pip installed it."""
    site = prefix / "lib" / f"python{python}" / "site-packages"
    sp = f"lib/python{python}/site-packages/"
    for name, version, build, channel in packages:
        if name == "pytorch":
            files = torch_metadata(site, f"torch-{version}.dist-info", version, "conda")
        else:
            pip_name = {"pytorch-scatter": "torch-scatter"}.get(name, name)
            files = companion(site, pip_name, version, "conda" if channel else "pip")
        if channel:
            conda_record(prefix, name, version, build, channel, [sp + f for f in files])
    return site


def live(facts, prefix: Path, site: Path, monkeypatch, torch_version: str, cuda=None) -> dict:
    f = gathered(facts, prefix, site, monkeypatch, torch_version)
    f["torch"]["build"]["cuda"] = cuda
    f["torch"]["build"]["variant"] = "cuda" if cuda else "cpu"
    f["torch"]["companions"] = {
        p: {"imported": True, "version": d["version"]}
        for p, d in f["packages"]["distributions"].items()
        if p in ("torchvision", "torchaudio")
    }
    return f


def fails(f: dict, pkg: str, message: str) -> dict:
    f["torch"]["companions"][pkg] = {
        "imported": False,
        "error": {"type": "OSError", "message": message},
    }
    return f


# ---------------------------------------------------------------- the conda layout, as recorded


@pytest.mark.parametrize(
    ("channel", "url", "name"),
    [
        ("https://conda.anaconda.org/conda-forge/linux-64", None, "conda-forge"),
        ("https://conda.anaconda.org/conda-forge/", None, "conda-forge"),
        ("https://conda.anaconda.org/pytorch/osx-arm64", None, "pytorch"),
        ("conda-forge", None, "conda-forge"),
        ("pkgs/main", None, "pkgs/main"),
        ("https://repo.anaconda.com/pkgs/main/win-64", None, "pkgs/main"),
        ("https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud/pytorch/linux-64", None, "pytorch"),
        (None, "https://conda.anaconda.org/pytorch/linux-64/torchaudio-0.13.1-py38_cpu.tar.bz2",
         "pytorch"),
        (None, None, None),
        ("https://conda.anaconda.org/", None, None),
    ],
)  # fmt: skip
def test_conda_meta_channel_spellings_name_one_channel(channel, url, name):
    assert conda_owner.channel_name(channel, url) == name


def test_live_conda_records_give_torchs_family_channel_build_and_url(tmp_path):
    """conda-meta as conda writes it: the family's records become packages.conda."""
    conda_env(
        tmp_path,
        "3.8",
        [
            ("pytorch", "1.13.1", "cpu_py38haaa41f7_0", DEFAULTS),
            ("torchaudio", "0.13.1", "py38_cpu", PYTORCH_CHANNEL),
        ],
    )
    conda_record(tmp_path, "numpy", "1.24.3", "py38h_0", DEFAULTS, [])  # not torch's family
    out = conda_owner.annotate({}, {"prefix": str(tmp_path)})
    assert set(out["conda"]) == {"pytorch", "torchaudio"}
    assert out["conda"]["pytorch"]["channel"] == "pkgs/main"
    assert out["conda"]["pytorch"]["build"] == "cpu_py38haaa41f7_0"
    assert out["conda"]["torchaudio"]["channel"] == "pytorch"
    assert out["conda"]["torchaudio"]["url"].endswith("/linux-64/torchaudio-0.13.1-py38_cpu.conda")


def test_broken_or_foreign_family_record_is_left_out_without_a_traceback(tmp_path):
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    (meta / "torchvision-0.14.1-py38_cpu.json").write_text("{not json")
    (meta / "torchaudio-0.13.1-py38_cpu.json").write_text(json.dumps(["a", "list"]))
    (meta / "torchtext-0.14.1-py38.json").write_text(json.dumps({"name": 3, "version": None}))
    out = conda_owner.annotate({}, {"prefix": str(tmp_path)})
    assert "conda" not in out


def test_a_prefix_without_conda_meta_records_no_conda_packages(tmp_path):
    assert "conda" not in conda_owner.annotate({}, {"prefix": str(tmp_path)})


# ------------------------------------------------------------------------ the three threads


def test_torchaudio_from_pytorch_channel_under_anaconda_pytorch_undefined_symbol_audio_3335(
    facts, tmp_path, monkeypatch
):
    site = conda_env(
        tmp_path,
        "3.8",
        [
            ("pytorch", "1.13.1", "cpu_py38haaa41f7_0", DEFAULTS),
            ("torchaudio", "0.13.1", "py38_cpu", PYTORCH_CHANNEL),
        ],
    )
    f = live(facts, tmp_path, site, monkeypatch, "1.13.1")
    assert torch_origin(read_facts(f)).distributor == dist.ANACONDA
    assert package_origin(read_facts(f), "torchaudio").distributor == dist.OFFICIAL
    # the mix alone, importing fine, is no finding
    quiet = judge(f, CHECK)
    assert quiet.status == Status.PASS and "torchaudio 0.13.1" in quiet.summary
    fails(
        f,
        "torchaudio",
        f"{site}/torchaudio/lib/libtorchaudio.so: undefined symbol: "
        "_ZNK5torch8autograd4Node4nameB5cxx11Ev",
    )
    result = judge(f, CHECK)
    assert codes(result) == ["companion-mix"] and result.status == Status.WARN
    assert "Anaconda's build" in result.summary and "pkgs/main" in result.summary
    assert (
        commands(result)[0] == "conda install pytorch==1.13.1 torchaudio==0.13.1 cpuonly -c pytorch"
    )
    # torch 1.13.1 predates conda-forge's torchaudio (2.4.1): no conda-forge command for it
    assert not any("conda-forge::" in c for c in commands(result))
    assert "packages.conda.pytorch.channel" in result.remedies[0].evidence


def test_pasted_conda_list_without_channel_is_not_the_pytorch_channel_audio_3335(facts):
    """conda list leaves the channel column empty for Anaconda's defaults; the build string
    (cpu_py38haaa41f7_0, not py3.8_cpu_0) says it is not the pytorch channel's."""
    f = copy.deepcopy(facts("cpu_linux"))
    f["torch"]["version"] = "1.13.1"
    f["packages"]["distributions"]["torchaudio"] = {"version": "0.13.1+b90d798"}
    f["packages"]["conda"] = {"pytorch": {"version": "1.13.1", "build": "cpu_py38haaa41f7_0"}}
    f["torch"]["companions"] = {
        "torchaudio": {
            "imported": False,
            "error": {"message": "libtorchaudio.so: undefined symbol: _ZNK5torch8autograd4Node4n"},
        }
    }
    assert torch_origin(read_facts(f)).distributor == dist.CONDA_OTHER
    result = judge(f, CHECK)
    assert codes(result) == ["companion-mix"]
    assert "cpuonly -c pytorch" in " ".join(commands(result))


def test_ngc_torch_2_4_0a0_with_pyg_pt24cu124_wheel_parse_schema_or_name_scatter_462(facts):
    f = copy.deepcopy(facts("h100_healthy"))
    f["torch"]["version"] = "2.4.0a0+07cecf4168"
    f["torch"]["build"]["cuda"] = "12.4"
    f["packages"]["distributions"]["torch"]["version"] = "2.4.0a0+07cecf4168"
    f["packages"]["distributions"]["torch-scatter"] = {"version": "2.1.2+pt24cu124"}
    result = judge(f, CHECK)
    assert codes(result) == ["pyg-wheel-mix"] and result.status == Status.WARN
    assert "custom build" in result.summary and "2.4.0a0+07cecf4168" in result.summary
    cmds = commands(result)
    build = next(c for c in cmds if "--no-binary torch-scatter" in c)
    assert "--no-build-isolation" in build and "--no-deps" in build
    assert build.endswith("torch-scatter==2.1.2")  # the installed release, without PyG's tag
    # the official build of that release, with the CUDA variant kept
    assert any("torch==2.4.1" in c and "whl/cu124" in c for c in cmds)


def test_conda_forge_pytorch_with_pyg_wheel_and_pytorch_channel_companions_scatter_470(
    facts, tmp_path, monkeypatch
):
    site = conda_env(
        tmp_path,
        "3.12",
        [
            ("pytorch", "2.4.0", "cuda118_py312h3690e1b_301", CONDA_FORGE),
            ("torchvision", "0.19.0", "py312_cu118", PYTORCH_CHANNEL),
            ("torchaudio", "2.4.0", "py312_cu118", PYTORCH_CHANNEL),
            ("torch-scatter", "2.1.2+pt24cu118", "", None),  # pip, from data.pyg.org
        ],
    )
    conda_record(tmp_path, "libtorch", "2.4.0", "cuda118_h8db9d67_301", CONDA_FORGE, [])
    conda_record(tmp_path, "pytorch-cuda", "11.8", "h7e8668a_6", PYTORCH_CHANNEL, [])
    f = live(facts, tmp_path, site, monkeypatch, "2.4.0", cuda="11.8")
    assert f["packages"]["conda"]["pytorch"]["channel"] == "conda-forge"
    result = judge(f, CHECK)
    assert codes(result) == ["pyg-wheel-mix"], result.summary
    assert "conda-forge's build" in result.summary
    cmds = commands(result)
    assert any("--no-binary torch-scatter" in c for c in cmds)
    assert (
        "conda install pytorch==2.4.0 torchvision==0.19.0 torchaudio==2.4.0 pytorch-cuda=11.8 "
        "-c pytorch -c nvidia" in cmds
    )


def test_conda_forge_remedy_keeps_variant_and_uninstalls_pips_copy_first(facts):
    """torch 2.5.1 from conda-forge, torch-scatter from PyG's wheel page: conda-forge builds
    torch-scatter against its own pytorch; pip's copy goes first or both stay."""
    f = copy.deepcopy(facts("h100_healthy"))
    f["torch"]["version"] = "2.5.1"
    f["torch"]["build"]["cuda"] = "12.4"
    f["packages"]["distributions"]["torch-scatter"] = {"version": "2.1.2+pt25cu124"}
    f["packages"]["conda"] = {
        "pytorch": {"version": "2.5.1", "build": "cuda126_py311h_303", "channel": "conda-forge"}
    }
    cmds = commands(judge(f, CHECK))
    uninstall = next(i for i, c in enumerate(cmds) if c.endswith("uninstall -y torch-scatter"))
    install = cmds.index(
        "conda install 'conda-forge::pytorch=2.5.1=cuda*' conda-forge::torch-scatter"
    )
    assert uninstall < install


# -------------------------------------------------------------- healthy machines stay quiet


def test_official_pip_torch_with_official_companions_and_pyg_wheel_is_quiet(facts):
    f = copy.deepcopy(facts("h100_healthy"))
    f["packages"]["distributions"]["torchvision"] = {"version": "0.26.0+cu130"}
    f["packages"]["distributions"]["torchaudio"] = {"version": "2.11.0"}
    f["packages"]["distributions"]["torch-scatter"] = {"version": "2.1.2+pt211cu130"}
    result = judge(f, CHECK)
    assert result.status == Status.PASS and "PyTorch's own build" in result.summary


QUIET_CONDA_ENVS = {
    "all-conda-forge": (
        "3.12",
        [
            ("pytorch", "2.7.1", "cuda126_py312h_300", CONDA_FORGE),
            ("torchvision", "0.22.1", "cuda126_py312h_0", CONDA_FORGE),
            ("torchaudio", "2.7.1", "cuda126_py312h_0", CONDA_FORGE),
            ("torch-scatter", "2.1.2", "cuda126_py312h_0", CONDA_FORGE),
        ],
        ("2.7.1", "12.6", "conda-forge's build"),
    ),
    "all-pytorch-channel-with-pyg-channel": (
        "3.10",
        [
            ("pytorch", "2.1.2", "py3.10_cuda12.1_cudnn8.9.2_0", PYTORCH_CHANNEL),
            ("torchvision", "0.16.2", "py310_cu121", PYTORCH_CHANNEL),
            ("torchaudio", "2.1.2", "py310_cu121", PYTORCH_CHANNEL),
            ("pytorch-scatter", "2.1.2", "py310_torch_2.1.0_cu121", PYG_CHANNEL),
        ],
        ("2.1.2", "12.1", ""),
    ),
}


@pytest.mark.parametrize("env", sorted(QUIET_CONDA_ENVS))
def test_one_distributor_conda_environment_is_quiet(facts, tmp_path, monkeypatch, env):
    python, packages, (version, cuda, said) = QUIET_CONDA_ENVS[env]
    site = conda_env(tmp_path, python, packages)
    f = live(facts, tmp_path, site, monkeypatch, version, cuda=cuda)
    result = judge(f, CHECK)
    assert result.status == Status.PASS and not codes(result), result.summary
    assert said in result.summary


def test_ngc_torch_with_ngcs_own_torchvision_is_quiet(facts):
    f = copy.deepcopy(facts("h100_healthy"))
    f["torch"]["version"] = "2.4.0a0+07cecf4168"
    f["packages"]["distributions"]["torchvision"] = {"version": "0.19.0a0"}
    assert judge(f, CHECK).status == Status.PASS


def test_pip_torch_over_condas_pytorch_is_judged_by_the_imported_copy(facts, tmp_path, monkeypatch):
    """conda's record is of 1.11.0; the torch imported is pip's 2.0.1: PyTorch's own wheel."""
    site = conda_env(tmp_path, "3.7", [("pytorch", "1.11.0", "py3.7_cpu_0", CONDA_FORGE)])
    torch_metadata(site, "torch-2.0.1.dist-info", "2.0.1", "pip")
    f = live(facts, tmp_path, site, monkeypatch, "2.0.1")
    assert torch_origin(read_facts(f)).distributor == dist.OFFICIAL


def test_every_recorded_machine_and_pasted_report_stays_without_a_warning():
    from torchdoctor.check import engine
    from torchdoctor.check.checks import by_id
    from torchdoctor.check.checks.common import Context
    from torchdoctor.check.facts import load

    from .conftest import FACTS_DIR, REPO

    paths = [*FACTS_DIR.glob("*.json"), *(REPO / "tests" / "collect_env").rglob("*.txt")]
    assert len(paths) > 50
    for path in paths:
        result = engine.run_check(by_id()[CHECK], load(str(path)), Context())
        assert result.status in (Status.PASS, Status.SKIP), (path.name, result.summary)


def test_pasted_report_with_conda_forge_pytorch_and_pyg_wheel_warns_scatter_470():
    """A collect_env report carries conda list's channel column: conda-forge's pytorch beside
    torch-scatter from PyG's page is seen without the machine."""
    from torchdoctor.check import collect_env

    from .conftest import REPO

    text = (REPO / "tests" / "collect_env" / "linux_torch2.13_cpu_real.txt").read_text()
    text = text.replace("PyTorch version: 2.13.0+cpu", "PyTorch version: 2.4.0")
    libraries = (
        "[pip3] numpy==1.26.4\n[pip3] torch==2.4.0\n[pip3] torch-scatter==2.1.2+pt24cpu\n"
        "[conda] pytorch                   2.4.0           cpu_generic_py312h_0    conda-forge\n"
        "[conda] torch-scatter             2.1.2+pt24cpu            pypi_0    pypi"
    )
    text = text.replace(
        "[pip3] numpy==2.4.6\n[pip3] torch==2.13.0+cpu\n[pip3] torchdoctor==0.1.0\n"
        "[conda] Could not collect",
        libraries,
    )
    f = collect_env.parse(text)
    assert f["packages"]["conda"]["pytorch"]["channel"] == "conda-forge"
    result = judge(f, CHECK)
    assert codes(result) == ["pyg-wheel-mix"], result.summary
    cmds = commands(result)
    assert any(c.endswith("--no-binary torch-scatter torch-scatter==2.1.2") for c in cmds)
    # conda-forge's own torch-scatter, built against its CPU pytorch, after pip's copy goes
    assert "conda install 'conda-forge::pytorch=2.4.0=cpu*' conda-forge::torch-scatter" in cmds


def test_pip_torchvision_under_conda_forge_torch_2_7_nms_missing_goes_to_conda_forge(facts):
    """No pytorch channel after 2.5: the one fix is conda-forge's torchvision, pip's removed."""
    f = copy.deepcopy(facts("cpu_linux"))
    f["torch"]["version"] = "2.7.1"
    f["packages"]["distributions"]["torchvision"] = {"version": "0.22.1"}
    f["packages"]["conda"] = {
        "pytorch": {"version": "2.7.1", "build": "cpu_generic_py311_0", "channel": "conda-forge"}
    }
    f["torch"]["companions"] = {
        "torchvision": {
            "imported": False,
            "error": {
                "type": "RuntimeError",
                "message": "operator torchvision::nms does not exist",
            },
        }
    }
    result = judge(f, CHECK)
    assert codes(result) == ["companion-mix"]
    cmds = commands(result)
    assert cmds[0].endswith("uninstall -y torchvision")
    assert cmds[1] == "conda install 'conda-forge::pytorch=2.7.1=cpu*' conda-forge::torchvision"
    assert not any("-c pytorch" in c for c in cmds)


def test_os_packaged_torch_with_pip_torchvision_failing_builds_it_or_uses_a_venv(facts):
    f = copy.deepcopy(facts("cpu_linux"))
    f["torch"]["version"] = "2.6.0"
    f["platform"]["externally_managed"] = "/usr/lib/python3.12/EXTERNALLY-MANAGED"
    f["packages"]["torch_distributions"] = [
        {"version": "2.6.0", "location": "/usr/lib/python3/dist-packages", "installer": "debian"}
    ]
    f["packages"]["distributions"]["torchvision"] = {"version": "0.21.0"}
    f["torch"]["companions"] = {
        "torchvision": {
            "imported": False,
            "error": {
                "message": "torchvision/_C.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev"
            },
        }
    }
    result = judge(f, CHECK)
    assert codes(result) == ["companion-mix"] and "operating system's package" in result.summary
    cmds = commands(result)
    assert any("git+https://github.com/pytorch/vision.git@v0.21.0" in c for c in cmds)
    assert "python3 -m venv ~/.venvs/torch" in cmds
    assert not any("install --force-reinstall torch==" in c for c in cmds)  # not into the OS's
