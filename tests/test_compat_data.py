"""The compat tables agree with themselves and give the fixes people needed in public reports."""

from __future__ import annotations

import dataclasses

from torchdoctor.data import compat


def test_tables_have_no_contradictions():
    assert compat.contradictions() == []


def test_companion_pair_for_a_release_without_arch_list_is_caught():
    rows = dict(compat.RELEASES)
    rows["2.7"] = dataclasses.replace(rows["2.7"], variants={"cu128": ()}, pypi="cu128")
    assert any("no arch list" in p for p in compat.contradictions(rows))


def test_variant_whose_cuda_has_no_driver_minimum_is_caught():
    rows = dict(compat.RELEASES)
    rows["2.7"] = dataclasses.replace(
        rows["2.7"], variants={**rows["2.7"].variants, "cu127": ("sm_90",)}
    )
    assert any("cu127" in p and "driver minimum" in p for p in compat.contradictions(rows))


def test_companions_going_backwards_are_caught():
    rows = dict(compat.RELEASES)
    rows["2.8"] = dataclasses.replace(rows["2.8"], torchvision="0.21")
    assert any("torchvision 0.21" in p for p in compat.contradictions(rows))


def test_every_release_from_1_8_to_2_15_is_in_the_table():
    minors = [f"1.{n}" for n in range(8, 14)] + [f"2.{n}" for n in range(16)]
    assert [m for m in minors if m not in compat.RELEASES] == []


def test_rtx_5090_sm_120_on_cu124_wheel_gets_cu128_torch_2_7_not_a_source_build():
    # "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current
    # PyTorch installation" (torch 2.6 cu124, driver 570): the fix was the cu128 wheel of 2.7.
    choice = compat.pick_wheel("2.6.0+cu124", "570.133.07", [(12, 0)], "3.12")
    assert (choice.release, choice.variant, choice.support) == ("2.7", "cu128", "full")


def test_gtx_1080_sm_61_on_cu128_wheel_gets_cu126():
    # "… sm_61 is not compatible … supports CUDA capabilities sm_75 sm_80 sm_86 sm_90 sm_100
    # sm_120 compute_120" (torch 2.7 cu128): the same release's cu126 wheel still has sm_60.
    choice = compat.pick_wheel("2.7.0+cu128", "570.133.07", [(6, 1)])
    assert (choice.release, choice.variant) == ("2.7", "cu126")


def test_dropped_gpus_name_the_newest_release_that_still_runs_them():
    assert compat.newest_supporting((3, 7)) == compat.WheelChoice("2.7", "cu118", "unknown")
    assert compat.newest_supporting((6, 1)).variant == "cu126"
    assert compat.newest_supporting((12, 0)).release == compat.newest_release()


def test_cuda_10_2_era_driver_maps_to_torch_1_12_cu102():
    choice = compat.pick_wheel("2.13.0", "440.33.01", [(7, 5)], "3.10")
    assert (choice.release, choice.variant, choice.support) == ("1.12", "cu102", "full")
    # … and to nothing on a Python no such wheel exists for.
    assert compat.pick_wheel("2.13.0", "440.33.01", [(7, 5)], "3.11") is None


def test_old_releases_install_with_local_tags_from_their_index():
    assert compat.index_args("1.12", "cu102") == (
        "--extra-index-url https://download.pytorch.org/whl/cu102",
        True,
    )
    assert compat.index_args("1.8", "cu111")[0].startswith("-f ")
    assert compat.index_args("2.7", "cu128") == (
        "--index-url https://download.pytorch.org/whl/cu128",
        False,
    )


def test_exact_companion_versions():
    assert compat.companion_version("torchvision", "2.13.0+cpu") == "0.28.0"
    assert compat.companion_version("torchvision", "2.0.1") == "0.15.2"
    assert compat.companion_version("torchaudio", "1.13.1") == "0.13.1"
    assert compat.companion_version("torchaudio", "2.13.0") is None
    assert compat.torch_for_companion("torchaudio", "2.1.0") == "2.1"


def test_glibc_below_2_28_gets_torch_2_6():
    assert compat.newest_for_glibc((2, 17)) == "2.6"
    assert compat.newest_for_glibc((2, 5)) is None


def _fake_pypi() -> dict[str, dict]:
    """PyPI's index as scripts/check_compat.py reads it, built from the tables themselves."""
    files, versions = [], {p: set() for p in ("torchvision", "torchaudio", "torchtext", "triton")}
    for row in compat.RELEASES.values():
        lo, hi = (compat.parse_version(v)[1] for v in row.python)
        files += [
            {"filename": f"torch-{row.latest}-cp3{m}-cp3{m}-{row.manylinux}_x86_64.whl"}
            for m in range(lo, hi + 1)
        ]
        for pkg in versions:
            exact = compat.companion_version(pkg, row.latest)
            if exact:
                versions[pkg].add(exact)
            if getattr(row, pkg):
                versions[pkg].add(f"{getattr(row, pkg)}.0")
    return {"torch": {"files": files}, **{p: {"versions": sorted(v)} for p, v in versions.items()}}


def test_pypi_check_reports_a_companion_missing_from_pypi():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "check_compat",
        compat.__file__.replace("torchdoctor/data/compat.py", "scripts/check_compat.py"),
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    indexes = _fake_pypi()
    assert script.problems(indexes) == []
    indexes["torchvision"]["versions"].remove("0.28.0")
    indexes["torch"]["files"] = [
        f for f in indexes["torch"]["files"] if not f["filename"].startswith("torch-2.15.0-cp315")
    ]
    found = script.problems(indexes)
    assert "torch 2.13.0: torchvision 0.28.0 is not on PyPI" in found
    assert any(p.startswith("torch 2.15.0: PyPI has Python 3.11–3.14") for p in found)
