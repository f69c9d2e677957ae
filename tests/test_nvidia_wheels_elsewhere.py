"""torch and its nvidia-* wheels in two site-packages: pytorch/pytorch#165812, "ImportError:
libcudnn.so.9: cannot open shared object file" on AlmaLinux, where the venv put torch under
lib64/site-packages and the nvidia-* wheels under lib/site-packages."""

from __future__ import annotations

import json

from .conftest import REPO, judge_facts

LIB = "/home/u/venv/lib/python3.12/site-packages"
LIB64 = "/home/u/venv/lib64/python3.12/site-packages"


def _import_error(tmp_path, locations: dict[str, str]) -> dict:
    facts = json.loads((REPO / "tests" / "facts" / "h100_healthy.json").read_text())
    facts["torch"] = {
        "status": "import_error",
        "error": {
            "type": "ImportError",
            "message": "libcudnn.so.9: cannot open shared object file: No such file or directory",
        },
    }
    facts["packages"]["torch_distributions"][0]["location"] = LIB64
    facts["packages"]["nvidia_wheels"] = {n: "9.1.0.70" for n in locations}
    facts["packages"]["nvidia_wheel_locations"] = locations
    [found] = [f for f in judge_facts(tmp_path, facts) if f["id"] == "torch.install"]
    return found


def test_pytorch_165812_torch_in_lib64_nvidia_wheels_in_lib_libcudnn_not_found(tmp_path):
    found = _import_error(
        tmp_path,
        {"nvidia-cudnn-cu12": LIB, "nvidia-cublas-cu12": LIB, "nvidia-ml-py": LIB64},
    )
    [remedy] = found["remedies"]
    assert remedy["commands"][0] == f"ln -s {LIB}/nvidia {LIB64}/nvidia"
    assert "packages.nvidia_wheel_locations.nvidia-cudnn-cu12" in remedy["evidence"]


def test_wheels_beside_torch_keep_the_reinstall_advice(tmp_path):
    found = _import_error(tmp_path, {"nvidia-cudnn-cu12": LIB64, "nvidia-ml-py": LIB})
    commands = " ".join(c for r in found["remedies"] for c in r["commands"])
    assert "ln -s" not in commands and "uninstall" in commands
