"""A compiled extension built for another torch, read from the loader's 'undefined symbol' line a
user pastes (docs/atlas.md: the class new:extension-built-for-other-torch). Each test is named
after the thread whose error it rebuilds."""

from __future__ import annotations

import json

from torchdoctor.check import paste_evidence
from torchdoctor.check.checks import extension_abi

from .conftest import REPO, judge_facts, run_cli

ATLAS = REPO / "tests" / "atlas"
FINDING = "torch.install.extension-other-torch"
REPORT = """PyTorch version: 2.2.0+cu121
CUDA used to build PyTorch: 12.1
OS: Ubuntu 22.04.3 LTS (x86_64)
Is CUDA available: True
"""


def findings(text: str) -> list[dict]:
    doc = json.loads(run_cli("check", "--facts", "-", "--json", input=text).stdout)
    return doc["findings"]


def extension_findings(text: str) -> list[dict]:
    return [f for f in findings(text) if f["id"] == FINDING]


def test_flash_attn_2_cuda_undefined_symbol_SetDevice_flash_attention_931():
    (found,) = extension_findings((ATLAS / "Dao-AILab_flash-attention_931.txt").read_text())
    assert found["level"] == "error"
    (remedy,) = found["remedies"]
    command = remedy["commands"][0]
    # Rebuilt against the installed torch, never a resolver's choice of another torch.
    assert "--no-deps" in command and "--no-build-isolation" in command
    assert command.endswith("--no-binary flash-attn flash-attn")
    assert "2.2.0+cu121" in remedy["text"]
    assert any(p.startswith("report.evidence.") for p in remedy["evidence"])


def test_torch_scatter_version_cuda_undefined_symbol_pytorch_scatter_348():
    (found,) = extension_findings((ATLAS / "rusty1s_pytorch_scatter_348.txt").read_text())
    command = found["remedies"][0]["commands"][0]
    assert "https://data.pyg.org/whl/torch-1.8.0+cu111.html" in command
    # PyPI has only torch-scatter's source at a higher version: a binary from the index only.
    assert "--only-binary torch-scatter" in command and "--no-deps" in command


def test_stale_deform_conv_cuda_in_the_project_tree_mmdetection_1189():
    (found,) = extension_findings((ATLAS / "open-mmlab_mmdetection_1189.txt").read_text())
    (remedy,) = found["remedies"]
    assert "build/ directory" in remedy["text"]
    # Nothing to pip-install: the project's own build is what is stale.
    assert remedy["commands"] == [] or all("pip install" not in c for c in remedy["commands"])
    assert "deform_conv_cuda" in found["message"]


def test_torchvision_C_undefined_symbol_is_left_to_the_companion_check_ASFF_52():
    line = (
        "ImportError: /usr/lib/python3/site-packages/torchvision/_C.so: undefined symbol: "
        "_ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_RKSs\n"
    )
    assert extension_findings(line + REPORT) == []


def test_a_missing_symbol_of_another_library_is_not_torchs_doing():
    line = (
        "ImportError: /env/lib/python3.10/site-packages/bitsandbytes/libbitsandbytes_cuda121.so: "
        "undefined symbol: cget_col_row_stats\n"
    )
    assert extension_findings(line + REPORT) == []


def test_two_lines_of_one_extension_make_one_finding():
    line = (
        "ImportError: /env/lib/python3.10/site-packages/mmcv/_ext.cpython-310-x86_64-linux-gnu.so"
        ": undefined symbol: _ZN3c106Symbol14fromQualStringERKSs\n"
    )
    other = line.replace("fromQualString", "fromDomainAndUnqualString")
    (found,) = extension_findings(line + other + REPORT)
    assert "--no-binary mmcv mmcv" in found["remedies"][0]["commands"][0]


def test_detectron2_is_rebuilt_from_its_repository_not_pypi_detectron2_3710():
    line = (
        "ImportError: /env/lib/python3.8/site-packages/detectron2/_C.cpython-38-x86_64-linux-gnu"
        ".so: undefined symbol: _ZNK2at10TensorBase8data_ptrIdEEPT_v\n"
    )
    (found,) = extension_findings(line + REPORT)
    assert found["remedies"][0]["commands"][0].endswith(
        "'git+https://github.com/facebookresearch/detectron2.git'"
    )


def test_module_of_reads_site_packages_and_project_paths():
    assert extension_abi.module_of("/a/site-packages/torch_scatter/_scatter_cuda.so") == (
        "torch_scatter",
        True,
    )
    assert extension_abi.module_of("/a/dist-packages/flash_attn_2_cuda.cpython-310.so") == (
        "flash_attn_2_cuda",
        True,
    )
    assert extension_abi.module_of("/src/proj/ops/dcn/deform_conv_cuda.cpython-36m.so") == (
        "deform_conv_cuda",
        False,
    )


def test_the_library_path_read_from_a_hostile_line_is_bounded():
    line = "x" * 1_000_000 + "/site-packages/ext.so: undefined symbol: _ZN3c105ErrorC1Ev"
    (record,) = paste_evidence.read([line])
    assert len(record["library"]) <= 304 and record["library"].endswith("/ext.so")


def facts_with(torch_version: str, scatter_version: str) -> str:
    facts = json.loads((REPO / "tests" / "facts" / "h100_healthy.json").read_text())
    inner = facts.get("facts", facts)
    inner["torch"]["version"] = torch_version
    inner["packages"]["distributions"]["torch-scatter"] = {"version": scatter_version}
    return json.dumps(facts)


def test_torch_scatter_from_the_1_9_1_index_under_torch_1_10_0_pytorch_scatter_259():
    (found,) = extension_findings(facts_with("1.10.0+cu111", "2.0.9+pt19cu111"))
    assert "torch 1.9" in found["message"]
    command = found["remedies"][0]["commands"][0]
    assert command.endswith("-f https://data.pyg.org/whl/torch-1.10.0+cu111.html")
    assert "packages.distributions.torch-scatter.version" in found["remedies"][0]["evidence"]


def test_torch_scatter_for_another_cuda_variant():
    (found,) = extension_findings(facts_with("2.1.0+cu121", "2.1.2+pt21cu118"))
    assert "cu118" in found["message"] and "cu121" in found["message"]


def test_torch_scatter_for_the_installed_torch_is_fine():
    assert extension_findings(facts_with("1.8.1+cu111", "2.0.8+pt18cu111")) == []
    assert extension_findings(facts_with("2.1.0+cu121", "2.1.2")) == []  # built from source


def _live_scatter(tmp_path, torch_version: str, scatter_version: str) -> list[dict]:
    facts = json.loads((REPO / "tests" / "facts" / "h100_healthy.json").read_text())
    facts["torch"]["version"] = torch_version
    facts["packages"]["distributions"]["torch"]["version"] = torch_version
    facts["packages"]["torch_distributions"][0]["version"] = torch_version
    facts["packages"]["distributions"]["torch-scatter"] = {
        "version": scatter_version,
        "location": "/opt/conda/lib/python3.10/site-packages",
    }
    lib = "/opt/conda/lib/python3.10/site-packages/torch_scatter/_version_cuda.so"
    facts["compiled_extensions"] = {
        "status": "ok",
        "scanned": 1,
        "mismatched": [
            {
                "path": lib,
                "needs_missing": [],
                "missing": ["_ZN5torch3jit17parseSchemaOrNameERKSsb"],
                "missing_count": 1,
            }
        ],
    }
    return judge_facts(tmp_path, facts)


def test_torch_scatter_built_here_against_ngc_torch_is_rebuilt_from_source_pytorch_scatter_462(
    tmp_path,
):
    """NGC's torch 2.4.0a0+git: PyG's index builds for PyTorch's own torch, so the live finding
    rebuilds from source instead (an untagged torch-scatter, built here, now stale)."""
    found = _live_scatter(tmp_path, "2.4.0a0+07cecf4168", "2.1.2")
    (ext,) = [f for f in found if f["id"] == FINDING]
    command = ext["remedies"][0]["commands"][0]
    assert "data.pyg.org" not in command and "--no-binary torch-scatter" in command


def test_a_pyg_wheel_beside_ngc_torch_is_reported_once_by_the_distributor_check(tmp_path):
    found = _live_scatter(tmp_path, "2.4.0a0+07cecf4168", "2.1.2+pt24cu124")
    ids = [f["id"] for f in found]
    assert FINDING not in ids and "torch.distributor.pyg-wheel-mix" in ids
