"""Compiled extensions built against another torch, read from their files (probes/elf.py,
probes/extension_links.py) before anything imports them: the atlas class
new:extension-built-for-other-torch, seen live.

The extensions here are real shared libraries linked by the system compiler against the
installed torch's libraries, and each verdict is held against the dynamic loader's own: the
library is loaded with ``RTLD_NOW`` after ``import torch`` in a child, and must fail with the
same ``undefined symbol`` (or load) exactly when the files say so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from torchdoctor.probes import extension_links
from torchdoctor.probes.elf import Elf

from .conftest import run_cli, torch_installed

pytestmark = [
    pytest.mark.skipif(not torch_installed(), reason="needs torch installed (its libraries)"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF: Linux only"),
]

# c10::Error's constructor as torch <= 1.x's old-ABI std::string spelled it: the symbol
# unlimblue/KNN_CUDA#2 and GOATmessi8/ASFF#52 could not resolve.
OLD_ABI_SYMBOL = "_ZN3c105ErrorC1ENS_14SourceLocationERKSs"
# c10::cuda::SetDevice(int): an int before torch 2.3 (Dao-AILab/flash-attention#931,
# turboderp-org/exllamav2#457), and only in libc10_cuda.so at all.
SET_DEVICE_INT = "_ZN3c104cuda9SetDeviceEi"
# c10::detail::torchCheckFail(const char*, const char*, uint32_t, const char*): TORCH_CHECK's
# failure path, in every torch 2.x's libc10.so.
CHECK_FAIL = "_ZN3c106detail14torchCheckFailEPKcS2_jS2_"


def _torch_dir() -> str:
    import torch

    return os.path.dirname(torch.__file__)


def build(path: Path, symbols: list[str], libs: list[str]) -> Path:
    """A shared library that calls ``symbols`` and links ``libs`` from torch/lib, as
    cpp_extension links an extension (-lc10 -ltorch_cpu ...)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler to build a test extension")
    work = Path(tempfile.mkdtemp(prefix="td-ext-"))  # sources and stubs outside the tree
    src = work / "ext.c"
    decls = "".join(f"extern void {s}(void);\n" for s in symbols)
    calls = "".join(f"  {s}();\n" for s in symbols)
    src.write_text(f"{decls}void entry(void) {{\n{calls}}}\n")
    lib_dir = os.path.join(_torch_dir(), "lib")
    # libc10_cuda.so is not in a CPU build: link against a stand-in that only names it.
    stub_dir = work
    link = []
    for lib in libs:
        if os.path.exists(os.path.join(lib_dir, f"lib{lib}.so")):
            link.append(f"-l{lib}")
        else:
            # named by its soname (as torch's own), found at link time only
            stub = stub_dir / f"lib{lib}.so"
            soname = f"-Wl,-soname,lib{lib}.so"
            cmd = [cc, "-shared", soname, "-o", str(stub), "-x", "c", "/dev/null"]
            subprocess.run(cmd, check=True, timeout=60)
            link += [f"-L{stub_dir}", f"-l{lib}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [cc, "-shared", "-fPIC", "-o", str(path), str(src), f"-L{lib_dir}"]
    subprocess.run([*cmd, "-Wl,--no-as-needed", *link], check=True, timeout=60)
    return path


def loader_error(path: Path) -> str | None:
    """What the dynamic loader says loading ``path`` after ``import torch`` (None: it loaded)."""
    code = (
        "import ctypes, os, sys, torch\n"
        "try:\n"
        "    ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)\n"
        "except OSError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip() or None


def judge(root: Path) -> dict:
    return extension_links.gather(_torch_dir(), [str(root)])


def test_reader_finds_every_torch_symbol_of_torchs_own_python_bindings_in_torch_lib():
    """The installed torch is consistent with itself: libtorch_python.so's undefined torch
    symbols (thousands) all resolve in torch/lib, as the loader resolves them on import."""
    lib = os.path.join(_torch_dir(), "lib", "libtorch_python.so")
    with Elf.open(lib) as elf:
        wanted = [s for s in elf.undefined() if extension_links.TORCH_SYMBOL.match(s)]
        assert "libtorch_cpu.so" in elf.needed() or "libtorch.so" in elf.needed()
    assert len(wanted) > 500
    libs = extension_links._TorchLibs(os.path.join(_torch_dir(), "lib"))
    try:
        assert [s for s in wanted if not libs.defines(s)] == []
        assert not libs.defines(OLD_ABI_SYMBOL)
    finally:
        libs.close()


def test_knn_cuda_2_undefined_symbol_c10_error_is_read_from_the_file_as_the_loader_reports_it(
    tmp_path,
):
    """unlimblue/KNN_CUDA#2: 'knn.so: undefined symbol: _ZN3c105ErrorC1ENS_14SourceLocationERKSs'."""
    so = build(tmp_path / "knn_cuda" / "knn.so", [OLD_ABI_SYMBOL, CHECK_FAIL], ["c10"])
    said = loader_error(so)
    assert said and f"undefined symbol: {OLD_ABI_SYMBOL}" in said
    found = judge(tmp_path)
    assert found["status"] == "ok" and found["scanned"] == 1
    [lib] = found["mismatched"]
    assert lib["path"] == str(so) and lib["missing"] == [OLD_ABI_SYMBOL]
    assert lib["missing_count"] == 1 and lib["needs_missing"] == []


def test_an_extension_built_against_this_torch_loads_and_is_not_reported(tmp_path):
    so = build(tmp_path / "ops" / "_C.so", [CHECK_FAIL], ["c10", "torch_cpu"])
    assert loader_error(so) is None
    found = judge(tmp_path)
    assert found["scanned"] == 1 and found["mismatched"] == []


def test_cuda_extension_beside_a_cpu_torch_needs_libc10_cuda_so_which_torch_lib_lacks(tmp_path):
    """A CUDA build of flash-attn on a CPU torch: the loader stops at the missing library
    before any symbol ('libc10_cuda.so: cannot open shared object file')."""
    if os.path.exists(os.path.join(_torch_dir(), "lib", "libc10_cuda.so")):
        pytest.skip("this torch is a CUDA build")
    name = "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so"
    so = build(tmp_path / name, [SET_DEVICE_INT], ["c10", "c10_cuda"])
    said = loader_error(so)
    assert said and "libc10_cuda.so" in said
    [lib] = judge(tmp_path)["mismatched"]
    assert lib["needs_missing"] == ["libc10_cuda.so"]


def test_libraries_that_do_not_link_torch_are_not_judged(tmp_path):
    build(tmp_path / "plain" / "_speedups.so", ["strlen"], [])
    (tmp_path / "notelf.so").write_bytes(b"\x7fELF" + b"\x00" * 100)
    (tmp_path / "empty.so").write_bytes(b"")
    found = judge(tmp_path)
    assert found == {**found, "status": "ok", "scanned": 0, "mismatched": []}


@pytest.mark.parametrize(
    "damage",
    ["truncated", "section-table-past-end", "string-table-link-out-of-range", "dynsym-entsize"],
)
def test_a_damaged_extension_file_is_skipped_not_a_traceback(tmp_path, damage):
    """Every offset in an ELF file is untrusted: a damaged one reads as 'not an extension'."""
    so = build(tmp_path / "src" / "bad.so", [OLD_ABI_SYMBOL], ["c10"])
    data = bytearray(so.read_bytes())
    shoff = int.from_bytes(data[0x28:0x30], "little")
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "section-table-past-end":
        data[0x28:0x30] = (len(data) + 4096).to_bytes(8, "little")
    else:
        shentsize = int.from_bytes(data[0x3A:0x3C], "little")
        shnum = int.from_bytes(data[0x3C:0x3E], "little")
        for i in range(shnum):
            at = shoff + i * shentsize
            kind = int.from_bytes(data[at + 4 : at + 8], "little")
            if kind == 11:  # .dynsym
                if damage == "dynsym-entsize":
                    data[at + 56 : at + 64] = (7).to_bytes(8, "little")
                else:
                    data[at + 40 : at + 44] = (9999).to_bytes(4, "little")
    (tmp_path / "bad.so").write_bytes(bytes(data))
    so.unlink()
    found = extension_links.gather(_torch_dir(), [str(tmp_path / "bad.so"), str(tmp_path)])
    assert found["status"] == "ok"
    assert all(lib["path"] != str(tmp_path / "src" / "bad.so") for lib in found["mismatched"])


def test_the_search_stops_at_its_budget_and_says_so(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
    monkeypatch.setattr(extension_links, "MAX_ENTRIES", 10)
    found = judge(tmp_path)
    assert found["status"] == "ok" and found["truncated"] is True


def test_fifos_symlinks_and_venvs_inside_the_project_are_not_read(tmp_path):
    so = build(tmp_path / "real" / "ops.so", [OLD_ABI_SYMBOL], ["c10"])
    os.mkfifo(tmp_path / "pipe.so")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "ops.so").symlink_to(so)
    venv = tmp_path / "venv"
    (venv / "lib").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    shutil.copy(so, venv / "lib" / "copy.so")
    paths = [lib["path"] for lib in judge(tmp_path)["mismatched"]]
    assert paths == [str(so)]


def test_roots_are_the_import_path_and_cwd_without_the_standard_library(tmp_path):
    prefix = tmp_path / "py"
    site = prefix / "lib" / "python3.11" / "site-packages"
    stdlib = prefix / "lib" / "python3.11"
    site.mkdir(parents=True)
    (stdlib / "lib-dynload").mkdir()
    proj = tmp_path / "proj"
    proj.mkdir()
    sys_path = [str(stdlib), str(stdlib / "lib-dynload"), str(site), "relative", str(proj)]
    roots = extension_links.roots_of(sys_path, str(proj), [str(prefix)])
    assert roots == [str(site), str(proj)]


def _live_check(cwd: Path, pythonpath: Path | None = None) -> list[dict]:
    env = {"PYTHONPATH": str(pythonpath)} if pythonpath else {}
    out = run_cli("check", "--json", "--no-smoke", "--only", "torch.install", cwd=cwd, env=env)
    doc = json.loads(out.stdout)
    return [f for f in doc["findings"] if f["id"] == "torch.install.extension-other-torch"]


def test_open_mmlab_mmdetection_1189_stale_ops_in_the_checkout_found_live(tmp_path):
    """open-mmlab/mmdetection#1189: after upgrading torch, the checkout's compiled ops still
    expect the old torch ('deform_conv_cuda...so: undefined symbol'); run from the checkout."""
    build(tmp_path / "mmdet" / "ops" / "dcn" / "deform_conv_cuda.so", [OLD_ABI_SYMBOL], ["c10"])
    [finding] = _live_check(tmp_path)
    assert "deform_conv_cuda" in finding["message"] and OLD_ABI_SYMBOL in finding["message"]
    assert "Delete the project's build/ directory" in finding["remedies"][0]["text"]


def test_dao_ailab_flash_attention_931_prebuilt_wheel_for_another_torch_found_live(tmp_path):
    """Dao-AILab/flash-attention#931: 'flash_attn_2_cuda...so: undefined symbol:
    _ZN3c104cuda9SetDeviceEi'; installed in a site-packages on the import path."""
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    name = "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so"
    build(site / name, [SET_DEVICE_INT], ["c10"])
    project = tmp_path / "project"
    project.mkdir()
    [finding] = _live_check(project, pythonpath=site)
    assert "flash-attn" in finding["message"] and SET_DEVICE_INT in finding["message"]
    commands = " ".join(finding["remedies"][0]["commands"])
    assert "--no-binary flash-attn" in commands and "--no-deps" in commands


def test_a_healthy_environment_gets_no_extension_finding_live(tmp_path):
    build(tmp_path / "ops" / "_C.so", [CHECK_FAIL], ["c10"])
    assert _live_check(tmp_path) == []


def test_only_what_import_can_reach_is_read(tmp_path):
    """A build tree's copy (build/lib.linux-x86_64-3.11/...) and a folder no import names
    (pytest-of-root/...) are not what a script run from here loads."""
    build(tmp_path / "build" / "lib.linux-x86_64-3.11" / "ops" / "_C.so", [OLD_ABI_SYMBOL], ["c10"])
    build(tmp_path / "pytest-of-root" / "ops.so", [OLD_ABI_SYMBOL], ["c10"])
    build(tmp_path / "not-a-module.so", [OLD_ABI_SYMBOL], ["c10"])
    kept = build(tmp_path / "pkg" / "_C.cpython-311-x86_64-linux-gnu.so", [OLD_ABI_SYMBOL], ["c10"])
    assert [lib["path"] for lib in judge(tmp_path)["mismatched"]] == [str(kept)]
