"""Builds the constructed facts corpus from the facts recorded on the CPU machine.

``cpu_linux.json`` is real: ``torchdoctor check --dump-facts tests/facts/cpu_linux.json`` on the
2-core CPU CI machine (torch 2.13.0+cpu). Every other file starts from it and changes only what
differs on the machine it models, with figures from public reports (compat-tables.md: a real H100
ran torch 2.11.0+cu130, driver 580.159.04, 132 SMs, 81559 MiB). Run this script to rebuild them:

    python tests/facts/build_corpus.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MIB = 1024 * 1024

CU130_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
CU128_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


def base() -> dict[str, Any]:
    return json.loads((HERE / "cpu_linux.json").read_text())


def cuda_build(f: dict[str, Any], version: str, cuda: str, archs: list[str]) -> None:
    f["torch"]["version"] = version
    f["packages"]["distributions"]["torch"]["version"] = version
    for d in f["packages"]["torch_distributions"]:
        d["version"] = version
    b = f["torch"]["build"]
    b.update(
        variant="cuda", cuda=cuda, arch_list=archs, cudnn=91900, nccl="2.27.7", nccl_available=True
    )


def nvml_gpu(
    name: str,
    cap: list[int],
    total_mib: int,
    used_mib: int = 500,
    index: int = 0,
    pcie: tuple[int, int] = (5, 16),
) -> dict[str, Any]:
    return {
        "index": index,
        "name": name,
        "uuid": f"GPU-1a2b3c4d-0000-1111-2222-33334444555{index}",
        "serial": f"165322010000{index}",
        "pci_bus_id": f"00000000:{0x18 + index:02X}:00.0",
        "capability": cap,
        "memory_total_bytes": total_mib * MIB,
        "memory_used_bytes": used_mib * MIB,
        "pcie": {
            "gen_current": pcie[0],
            "gen_max": pcie[0],
            "width_current": pcie[1],
            "width_max": pcie[1],
        },
        "mig_mode": 0,
    }


def nvml(driver: str, cuda_api: int, gpus: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "status": "ok",
        "driver_version": driver,
        "cuda_driver_version": cuda_api,
        "device_count": len(gpus),
        "devices": gpus,
    }


def torch_devices(gpus: list[dict[str, Any]], sms: int) -> list[dict[str, Any]]:
    return [
        {
            "index": g["index"],
            "name": g["name"],
            "capability": g["capability"],
            "multi_processor_count": sms,
            "total_memory_bytes": g["memory_total_bytes"],
            "uuid": g["uuid"][4:],
            "gcn_arch_name": None,
        }
        for g in gpus
    ]


def h100_healthy() -> dict[str, Any]:
    f = base()
    cuda_build(f, "2.11.0+cu130", "13.0", CU130_ARCHS)
    gpu = nvml_gpu("NVIDIA H100 80GB HBM3", [9, 0], 81559)
    f["nvml"] = nvml("580.159.04", 13000, [gpu])
    f["host"]["nvidia"] = {
        "dev_nodes": ["nvidia0", "nvidiactl", "nvidia-uvm"],
        "proc_driver_version": "NVRM version: 580.159.04",
        "uvm_loaded": True,
    }
    f["torch"]["cuda"] = {
        "available": True,
        "device_count": 1,
        "devices": torch_devices([gpu], 132),
    }
    f["torch"]["cuda_init"] = {
        "init_s": 0.41,
        "memory": [
            {"index": 0, "free_bytes": 80000 * MIB, "total_bytes": 81559 * MIB, "context_s": 0.38}
        ],
    }
    with_smoke(f, ["cuda:0"])
    return f


def gpu_smoke(device: str, h2d_pinned: float = 53.1) -> dict[str, Any]:
    """Plausible H100 (PCIe Gen5 x16) smoke figures; pinned H2D ~50-55 GB/s on a healthy link."""
    ok = {"ok": True, "matmul_rel_err": 1e-4, "conv2d_rel_err": 1e-4, "tolerance": 5e-3, "ms": 2.0}
    return {
        "device": device,
        "compute": {
            "ok": True,
            "dtypes": {
                "float32": ok,
                "float16": {**ok, "tolerance": 2e-2},
                "bfloat16": {**ok, "tolerance": 8e-2},
            },
        },
        "transfer": {
            "roundtrip_pageable_exact": True,
            "roundtrip_pinned_exact": True,
            "h2d_pinned_gbps": h2d_pinned,
            "d2h_pinned_gbps": 52.4,
            "h2d_pageable_gbps": 14.2,
            "d2h_pageable_gbps": 9.8,
            "sizes": {},
        },
        "memory": {"sync_us": 6.1, "empty_cache_us": 212.0, "block_mib": 64, "returned_mib": 64.0},
    }


def with_smoke(f: dict[str, Any], devices: list[str]) -> None:
    f["smoke"] = {
        "enabled": True,
        "size": "quick",
        "ran": True,
        "planned": ["cpu", *devices],
        "devices": {"cpu": f["smoke"]["devices"]["cpu"], **{d: gpu_smoke(d) for d in devices}},
        "peers": {},
        "failures": {},
        "reruns": 0,
    }


def driver_too_old() -> dict[str, Any]:
    f = base()
    cuda_build(f, "2.11.0+cu130", "13.0", CU130_ARCHS)
    gpu = nvml_gpu("NVIDIA A100-SXM4-40GB", [8, 0], 40960)
    f["nvml"] = nvml("535.183.01", 12020, [gpu])
    f["torch"]["cuda"] = {
        "available": False,
        "device_count": 0,
        "devices": [],
        "warnings": [
            "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
            "(found version 12020). Please update your GPU driver by downloading and installing a "
            "new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go "
            "to: https://pytorch.org to install a PyTorch version that has been compiled with your "
            "version of the CUDA driver."
        ],
    }
    return f


def gpu_too_old() -> dict[str, Any]:
    f = base()
    cuda_build(f, "2.11.0+cu128", "12.8", CU128_ARCHS)
    gpu = nvml_gpu("Tesla P100-PCIE-16GB", [6, 0], 16384, pcie=(3, 16))
    f["nvml"] = nvml("570.133.20", 12080, [gpu])
    f["torch"]["cuda"] = {
        "available": True,
        "device_count": 1,
        "devices": torch_devices([gpu], 56),
        "warnings": [
            "UserWarning: Found GPU0 Tesla P100-PCIE-16GB which is of "
            "cuda capability 6.0. PyTorch no longer supports this GPU "
            "because it is too old."
        ],
    }
    f["torch"]["cuda_init"] = {
        "init_s": 0.3,
        "memory": [{"index": 0, "free_bytes": 16000 * MIB, "total_bytes": 16384 * MIB}],
    }
    return f


def cpu_wheel_on_gpu() -> dict[str, Any]:
    f = base()
    gpus = [nvml_gpu("NVIDIA A100-SXM4-80GB", [8, 0], 81920, index=i) for i in range(2)]
    f["nvml"] = nvml("570.133.20", 12080, gpus)
    return f


def mps_mac() -> dict[str, Any]:
    f = base()
    f["platform"].update(
        system="Darwin",
        release="24.1.0",
        machine="arm64",
        libc=None,
        mac_ver="15.1",
        rosetta=False,
        executable="/Users/alice/venv/bin/python3",
        prefix="/Users/alice/venv",
    )
    f["torch"]["version"] = "2.13.0"
    f["torch"]["file"] = "/Users/alice/venv/lib/python3.11/site-packages/torch/__init__.py"
    f["torch"]["build"].update(mps_built=True, mkl=False, cpu_capability="NO AVX")
    f["torch"]["mps"] = {"built": True, "available": True}
    f["nvml"] = {
        "status": "unavailable",
        "error": "NVMLError_LibraryNotFound: NVML Shared Library Not Found",
    }
    f["host"]["cgroup"] = {"version": None, "cpu_quota": None, "memory_limit_bytes": None}
    f["host"]["cpu_affinity_count"] = None
    return f


def torch_missing() -> dict[str, Any]:
    f = base()
    f["torch"] = {
        "status": "missing",
        "error": {
            "type": "ModuleNotFoundError",
            "message": "No module named 'torch'",
            "traceback": "",
        },
    }
    f["packages"]["distributions"].pop("torch", None)
    f["packages"]["torch_distributions"] = []
    return f


def torch_import_error() -> dict[str, Any]:
    f = base()
    f["torch"] = {
        "status": "import_error",
        "error": {
            "type": "ImportError",
            "message": "libcudnn.so.9: cannot open shared object file: No such file or directory",
            "traceback": "",
        },
    }
    return f


def probe_hang_cuda_init() -> dict[str, Any]:
    f = h100_healthy()
    del f["torch"]["cuda_init"]
    f["smoke"] = {
        "enabled": True,
        "size": "quick",
        "ran": False,
        "planned": [],
        "devices": {},
        "peers": {},
        "failures": {},
        "reruns": 0,
        "reason": "probe did not finish within its deadline; it was stuck in: cuda.init",
    }
    f["probe"]["torch"].update(
        status="timeout",
        unfinished_stage="cuda.init",
        returncode=-9,
        message="probe did not finish within its deadline; it was stuck in: cuda.init",
    )
    return f


CORPUS = {
    "h100_healthy": h100_healthy,
    "driver_too_old": driver_too_old,
    "gpu_too_old": gpu_too_old,
    "cpu_wheel_on_gpu": cpu_wheel_on_gpu,
    "mps_mac": mps_mac,
    "torch_missing": torch_missing,
    "torch_import_error": torch_import_error,
    "probe_hang_cuda_init": probe_hang_cuda_init,
}

if __name__ == "__main__":
    for name, build in CORPUS.items():
        facts = build()
        facts["collected"]["constructed_by"] = "tests/facts/build_corpus.py"
        (HERE / f"{name}.json").write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
        print("wrote", name)
