"""One torch directory with two installs' files (torch.install.duplicate-installs): libraries an
older torch left in torch/lib, read against the installed torch's RECORD (pytorch/pytorch#10234),
and conda's pytorch and pytorch-nightly packages both installed (pytorch/pytorch#12031)."""

from __future__ import annotations

import json
import os

from torchdoctor.probes import torch_leftovers

from .conftest import REPO, run_cli


def _site(tmp_path, record: str | None, libs: list[str]):
    meta = tmp_path / "torch-2.0.1.dist-info"
    meta.mkdir()
    if record is not None:
        (meta / "RECORD").write_text(record)
    (tmp_path / "torch" / "lib").mkdir(parents=True)
    for name in libs:
        (tmp_path / "torch" / "lib" / name).write_bytes(b"\x7fELF")
    return str(meta), str(tmp_path)


RECORD = (
    "torch/__init__.py,sha256=x,10\n"
    "torch/lib/libtorch.so,sha256=x,10\n"
    "torch/lib/libc10.so,sha256=x,10\n"
    "torch-2.0.1.dist-info/RECORD,,\n"
)


def test_pytorch_10234_old_libtorch_so_1_beside_the_new_install_is_a_leftover(tmp_path):
    """'torch/lib/libtorch.so.1: undefined symbol: _ZTIN2at4TypeE': torch 0.4's library left
    beside the new build's; a DLL copied in by hand is not torch's and not reported."""
    meta, loc = _site(tmp_path, RECORD, ["libtorch.so", "libc10.so", "libtorch.so.1", "zlib.dll"])
    assert torch_leftovers.leftovers(meta, loc) == ["libtorch.so.1"]


def test_a_clean_install_has_no_leftovers(tmp_path):
    meta, loc = _site(tmp_path, RECORD, ["libtorch.so", "libc10.so"])
    assert torch_leftovers.leftovers(meta, loc) == []


def test_without_a_record_listing_torch_lib_nothing_is_claimed(tmp_path):
    """conda's metadata and egg-info directories list no torch/lib files: not judged."""
    meta, loc = _site(tmp_path, "torch/__init__.py,,\n", ["libtorch.so.1"])
    assert torch_leftovers.leftovers(meta, loc) is None
    os.remove(os.path.join(meta, "RECORD"))
    assert torch_leftovers.leftovers(meta, loc) is None
    os.mkfifo(os.path.join(meta, "RECORD"))  # never waited on
    assert torch_leftovers.leftovers(meta, loc) is None


def test_the_live_facts_carry_the_installed_torchs_leftovers():
    out = run_cli("check", "--json", "--no-smoke", "--only", "torch.install")
    dists = json.loads(out.stdout)["facts"]["packages"]["torch_distributions"]
    assert dists and dists[0]["leftover_libs"] == []


def _check(tmp_path, base: str, **set_: object) -> dict:
    facts = json.loads((REPO / "tests" / "facts" / base).read_text())
    for dotted, value in set_.items():
        node = facts
        *parents, last = dotted.split("__")
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        node[last] = value
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    return json.loads(run_cli("check", "--facts", str(path), "--json").stdout)


def _finding(doc: dict, prefix: str) -> dict:
    [found] = [f for f in doc["findings"] if f["id"].startswith(prefix)]
    return found


def test_pytorch_10234_import_error_gets_the_leftover_deleted_by_name(tmp_path):
    loc = "/usr/local/lib/python3.6/site-packages"
    doc = _check(
        tmp_path,
        "h100_healthy.json",
        torch__status="import_error",
        torch__version=None,
        torch__error={
            "type": "ImportError",
            "message": f"{loc}/torch/lib/libtorch.so.1: undefined symbol: _ZTIN2at4TypeE",
        },
        packages__torch_distributions__0__location=loc,
        packages__torch_distributions__0__leftover_libs=["libtorch.so.1"],
    )
    found = _finding(doc, "torch.install")
    assert found["level"] == "error"
    commands = [c for r in found["remedies"] for c in r["commands"]]
    assert f"rm -f {loc}/torch/lib/libtorch.so.1" in commands
    evidence = found["remedies"][0]["evidence"]
    assert "packages.torch_distributions.0.leftover_libs" in evidence


def test_a_leftover_beside_a_torch_that_imports_is_a_warning(tmp_path):
    doc = _check(
        tmp_path,
        "h100_healthy.json",
        packages__torch_distributions__0__leftover_libs=["libc10.so.old"],
    )
    found = _finding(doc, "torch.install.duplicate-installs")
    assert found["level"] == "warning" and "libc10.so.old" in found["message"]


def test_windows_leftover_is_deleted_with_del(tmp_path):
    loc = "C:\\Users\\u\\venv\\Lib\\site-packages"
    doc = _check(
        tmp_path,
        "h100_healthy.json",
        platform__system="Windows",
        packages__torch_distributions__0__location=loc,
        packages__torch_distributions__0__leftover_libs=["c10_old.dll"],
    )
    found = _finding(doc, "torch.install.duplicate-installs")
    assert f"del {loc}\\torch\\lib\\c10_old.dll" in found["remedies"][0]["commands"]


def test_pytorch_12031_conda_pytorch_and_pytorch_nightly_both_installed(tmp_path):
    """'import torch' gives the old version: conda's pytorch and pytorch-nightly both own torch."""
    doc = _check(
        tmp_path,
        "h100_healthy.json",
        platform__conda_packages={"pytorch": "0.4.1", "pytorch-nightly": "1.0.0.dev20181005"},
        torch__version="0.4.1",
    )
    found = _finding(doc, "torch.install.duplicate-installs")
    assert found["level"] == "error"
    assert found["remedies"][0]["commands"][:2] == [
        "conda remove -y pytorch-nightly",
        "conda install -y --force-reinstall pytorch -c pytorch",
    ]


def test_healthy_facts_get_no_mixed_tree_finding(tmp_path):
    doc = _check(tmp_path, "h100_healthy.json", packages__torch_distributions__0__leftover_libs=[])
    assert not [f for f in doc["findings"] if f["id"] == "torch.install.duplicate-installs"]
