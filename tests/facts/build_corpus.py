"""Builds the constructed facts corpus from the facts recorded on the CPU machine.

``cpu_linux.json`` and ``torchvision_nms_cpu_torch.json`` are real: the second is
``torchdoctor check --python VENV/bin/python --no-smoke --dump-facts …`` on a venv where
``pip install torch==2.13.0 torchvision`` gave PyPI's cu130 torchvision beside the CPU torch
(``RuntimeError: operator torchvision::nms does not exist``). ``cpu_linux.json`` is
``torchdoctor check --dump-facts tests/facts/cpu_linux.json`` on the 2-core CPU CI machine
(torch 2.13.0+cpu). Every other file starts from it and changes only what
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
    cu130_wheels(f)
    f["toolchain"] = cuda_toolchain("13.0", "13.0.88")
    return f


def cuda_toolchain(release: str, version: str) -> dict[str, Any]:
    """A CUDA toolkit installed the usual way, with CUDA_HOME pointing at it."""
    home = f"/usr/local/cuda-{release}"
    return {
        "status": "ok",
        "cuda_home": {"path": home, "exists": True, "has_headers": True, "source": "CUDA_HOME"},
        "toolkits": [{"path": home, "release": release, "has_headers": True}],
        "nvcc": {"path": f"{home}/bin/nvcc", "exists": True, "ok": True, "returncode": 0,
                 "output": f"release {release}, V{version}", "release": release, "version": version},
        "cxx": {"name": "c++", "path": "/usr/bin/c++", "ok": True, "returncode": 0,
                "output": "c++ (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0", "version": "13.3.0"},
        "ninja": {"name": "ninja", "path": "/usr/bin/ninja", "ok": True, "returncode": 0,
                  "output": "1.11.1", "version": "1.11.1"},
        "rocm_home": None,
    }  # fmt: skip


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


def cudnn_import_error() -> dict[str, Any]:
    """What the probe records when `import torch` cannot find the cuDNN wheel's library."""
    return {
        "status": "import_error",
        "error": {
            "type": "ImportError",
            "message": "libcudnn.so.9: cannot open shared object file: No such file or directory",
            "traceback": "",
        },
    }


def torch_import_error() -> dict[str, Any]:
    f = base()
    f["torch"] = cudnn_import_error()
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


# --- deeper forensics (issue 5): libraries, variables, extension toolchain, ROCm, XPU ---------
# The pins mimic the shape of a cu130 torch's Requires-Dist (CUDA 13 wheels drop the -cu13 suffix
# except cuDNN and NCCL); the versions are illustrative, consistent with the cuDNN 9.19 / NCCL
# 2.27.7 of the fixtures above.
CU130_PINS = {
    "nvidia-cuda-nvrtc": "13.0.88",
    "nvidia-cuda-runtime": "13.0.96",
    "nvidia-cuda-cupti": "13.0.85",
    "nvidia-cudnn-cu13": "9.19.0.56",
    "nvidia-cublas": "13.1.0.3",
    "nvidia-cufft": "12.0.0.61",
    "nvidia-curand": "10.4.0.35",
    "nvidia-cusolver": "12.0.4.66",
    "nvidia-cusparse": "12.6.3.3",
    "nvidia-nccl-cu13": "2.27.7",
    "nvidia-nvjitlink": "13.0.88",
}
# (component, wheel directory under site-packages/nvidia, file, owning wheel)
CU130_LIBS = [
    ("cudart", "cu13/lib", "libcudart.so.13", "nvidia-cuda-runtime"),
    ("cublas", "cu13/lib", "libcublas.so.13", "nvidia-cublas"),
    ("cublas", "cu13/lib", "libcublasLt.so.13", "nvidia-cublas"),
    ("cudnn", "cudnn/lib", "libcudnn.so.9", "nvidia-cudnn-cu13"),
    ("nccl", "nccl/lib", "libnccl.so.2", "nvidia-nccl-cu13"),
    ("nvrtc", "cu13/lib", "libnvrtc.so.13", "nvidia-cuda-nvrtc"),
    ("nvjitlink", "cu13/lib", "libnvJitLink.so.13", "nvidia-nvjitlink"),
]


def cu130_wheels(f: dict[str, Any]) -> None:
    """A pip cu130 torch with its nvidia-* wheels installed, intact and loaded."""
    torch_dir = f["torch"]["file"].rsplit("/", 1)[0]
    site = torch_dir.rsplit("/", 1)[0]
    dist = f["packages"]["distributions"]["torch"]
    dist["requires"] = [
        *dist.get("requires", []),
        *(f'{n}=={v}; platform_system == "Linux"' for n, v in CU130_PINS.items()),
    ]
    f["packages"]["nvidia_wheels"] = {**f["packages"].get("nvidia_wheels", {}), **CU130_PINS}
    loaded = [
        {"component": "torch", "path": f"{torch_dir}/lib/{name}", "realpath": None,
         "version": None, "origin": "torch", "wheel": None}
        for name in ("libtorch_cpu.so", "libc10.so", "libtorch_cuda.so", "libc10_cuda.so")
    ]  # fmt: skip
    for comp, sub, name, wheel in CU130_LIBS:
        loaded.append(
            {
                "component": comp,
                "path": f"{site}/nvidia/{sub}/{name}",
                "realpath": None,
                "version": name.split(".so.")[1],
                "origin": "wheel",
                "wheel": f"{wheel}=={CU130_PINS[wheel]}",
            }
        )
    loaded.append(
        {"component": "cuda_driver", "path": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04",
         "realpath": None, "version": "580.159.04", "origin": "system", "wheel": None}
    )  # fmt: skip
    f["torch"]["libs"] = {
        "platform": "linux",
        "torch_dir": torch_dir,
        "maps_available": True,
        "loaded": loaded,
        "ld_library_path": [],
        "ld_preload": [],
        "nvidia_wheel_files": {
            n: {"version": v, "libs": 3, "missing": []} for n, v in CU130_PINS.items()
        },
        "config": ["OpenMP 201511 (a.k.a. OpenMP 4.5)"],
        "cudnn": {"compiled": [9, 19, 0], "runtime": [9, 19, 0]},
    }


def h100_wheels() -> dict[str, Any]:
    return h100_healthy()  # the healthy H100 already carries its intact cu130 wheel set


def libs_shadowed_cudart() -> dict[str, Any]:
    """A module file put an older CUDA 13.0 on LD_LIBRARY_PATH: its cudart and nvJitLink win."""
    f = h100_wheels()
    f["env"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-13.0/lib64:/opt/tools/lib"
    real = "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
    libs = f["torch"]["libs"]
    libs["ld_library_path"] = [
        {"dir": "/usr/local/cuda-13.0/lib64", "real": real, "exists": True,
         "libs": ["libcudart.so", "libcudart.so.13", "libcudart.so.13.0.48", "libnvJitLink.so.13"]},
        {"dir": "/opt/tools/lib", "real": "/opt/tools/lib", "exists": True, "libs": []},
    ]  # fmt: skip
    for lib in libs["loaded"]:
        if lib["component"] in ("cudart", "nvjitlink"):
            name = (
                "libcudart.so.13.0.48"
                if lib["component"] == "cudart"
                else "libnvJitLink.so.13.0.39"
            )
            lib.update(path=f"{real}/{name}", origin="system", wheel=None,
                       version=name.split(".so.")[1])  # fmt: skip
    return f


def returnn_1802_nccl_cu11_cu12() -> dict[str, Any]:
    """rwth-i6/returnn#1802 (2026-01-17): ``import torch`` fails with "libtorch_cuda.so: undefined
    symbol: ncclMemFree"; collect_env lists nvidia-nccl-cu11==2.14.3 beside nvidia-nccl-cu12==
    2.27.3, and ldd shows libnccl.so.2 taken from the shared site-packages/nvidia/nccl/lib. The
    torch version is not in the thread as read; modelled with the pin that matches (2.27.3)."""
    f = h100_wheels()
    torch = f["packages"]["distributions"]["torch"]
    torch["requires"] = [
        r.replace("nvidia-nccl-cu13==2.27.7", "nvidia-nccl-cu12==2.27.3") for r in torch["requires"]
    ]
    wheels = f["packages"]["nvidia_wheels"]
    del wheels["nvidia-nccl-cu13"]
    wheels.update({"nvidia-nccl-cu12": "2.27.3", "nvidia-nccl-cu11": "2.14.3"})
    site = torch["location"]
    f["torch"] = {
        "status": "import_error",
        "error": {
            "type": "ImportError",
            "message": f"{site}/torch/lib/libtorch_cuda.so: undefined symbol: ncclMemFree",
            "traceback": "",
        },
    }
    return f


def cudnn_wheel_missing() -> dict[str, Any]:
    """nvidia-cudnn-cu13 was uninstalled (a dependency resolver 'fixed' a conflict): no import."""
    f = h100_wheels()
    del f["packages"]["nvidia_wheels"]["nvidia-cudnn-cu13"]
    f["torch"] = cudnn_import_error()
    return f


def env_misconfigured() -> dict[str, Any]:
    """A typo in the allocator config and CUDA_LAUNCH_BLOCKING left on from a debugging session."""
    f = h100_wheels()
    f["env"].update(PYTORCH_ALLOC_CONF="expandable_segment:True", CUDA_LAUNCH_BLOCKING="1")
    return f


def nvcc_mismatch() -> dict[str, Any]:
    """A cu130 torch with the system's CUDA 12.1 toolkit on PATH: every CUDA extension build fails."""
    f = h100_wheels()
    f["toolchain"] = cuda_toolchain("12.1", "12.1.105")
    f["toolchain"]["cuda_home"]["source"] = "nvcc on PATH (/usr/local/cuda-12.1/bin/nvcc)"
    return f


ROCM_TARGETS = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100",
                "gfx1101", "gfx1200", "gfx1201"]  # fmt: skip


def rocm_gfx1031() -> dict[str, Any]:
    """An RX 6700 XT (gfx1031) with a rocm7.1 wheel built for gfx1030 but not gfx1031."""
    f = base()
    version = "2.13.0+rocm7.1"
    f["torch"]["version"] = version
    f["packages"]["distributions"]["torch"]["version"] = version
    f["torch"]["build"].update(variant="rocm", cuda=None, hip="7.1.25424", arch_list=ROCM_TARGETS)
    f["torch"]["cuda"] = {
        "available": True,
        "device_count": 1,
        "devices": [
            {"index": 0, "name": "AMD Radeon RX 6700 XT", "capability": [10, 3],
             "multi_processor_count": 20, "total_memory_bytes": 12272 * MIB, "uuid": None,
             "gcn_arch_name": "gfx1031"}
        ],
    }  # fmt: skip
    node = {"exists": True, "char_device": True, "mode": "0o660", "rw": True}
    f["torch"]["rocm"] = {
        "hip": "7.1.25424",
        "hsa_override_gfx_version": None,
        "nodes": {
            "kfd": {"path": "/dev/kfd", "group": "render", **node},
            "render": [{"path": "/dev/dri/renderD128", "group": "render", **node}],
            "uid": 1000,
            "groups": ["alice", "render", "video"],
        },
    }
    return f


def xpu_no_devices() -> dict[str, Any]:
    """An XPU wheel on a machine whose Intel GPU render node this user may not open."""
    f = base()
    version = "2.13.0+xpu"
    f["torch"]["version"] = version
    f["packages"]["distributions"]["torch"]["version"] = version
    f["torch"]["build"].update(variant="xpu", xpu_built=True)
    f["torch"]["xpu"] = {
        "available": False,
        "device_count": 0,
        "devices": [],
        "nodes": {
            "kfd": {"path": "/dev/kfd", "exists": False, "error": "No such file or directory"},
            "render": [
                {"path": "/dev/dri/renderD128", "exists": True, "char_device": True,
                 "group": "render", "mode": "0o660", "rw": False}
            ],
            "uid": 1000,
            "groups": ["alice"],
        },
    }  # fmt: skip
    return f


# --- issue 13: what people actually hit, rebuilt from public reports ---------------------------
# torch's own list in "… is not compatible with the current PyTorch installation. The current
# PyTorch install supports CUDA capabilities …" (data/compat.py, arch lists).
CU12_ARCHS = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CU128_27_ARCHS = [*CU128_ARCHS, "compute_120"]


def not_compatible(name: str, cap: list[int], archs: list[str]) -> str:
    sm = f"sm_{cap[0]}{cap[1]}"
    return (
        f"UserWarning: {name} with CUDA capability {sm} is not compatible with the current PyTorch "
        f"installation. The current PyTorch install supports CUDA capabilities {' '.join(archs)}. "
        "If you want to use the GPU with PyTorch, please check the instructions at "
        "https://pytorch.org/get-started/locally/"
    )


def gpu_on_wheel(
    version: str, cuda: str, archs: list[str], gpu: dict[str, Any], driver: str, api: int, sms: int
) -> dict[str, Any]:
    """A CUDA wheel whose arch list may not cover the GPU: torch still lists the device."""
    f = base()
    cuda_build(f, version, cuda, archs)
    f["nvml"] = nvml(driver, api, [gpu])
    f["torch"]["cuda"] = {
        "available": True,
        "device_count": 1,
        "devices": torch_devices([gpu], sms),
    }
    if tuple(int(x) for x in version.split("+")[0].split(".")[:2]) < (2, 3):
        f["packages"]["distributions"]["numpy"]["version"] = "1.26.4"  # what such an env had
    cap = gpu["capability"]
    if not any(
        a.startswith("sm_")
        and int(a[3:].rstrip("af")) // 10 == cap[0]
        and int(a[3:].rstrip("af")) % 10 <= cap[1]
        for a in archs
    ):
        f["torch"]["cuda"]["warnings"] = [not_compatible(gpu["name"], cap, archs)]
    return f  # fmt: skip


def rtx5090_cu124_wheel() -> dict[str, Any]:
    """RTX 5090 (sm_120) on torch 2.6.0+cu124, driver 570: 'no kernel image is available'."""
    gpu = nvml_gpu("NVIDIA GeForce RTX 5090", [12, 0], 32607)
    return gpu_on_wheel("2.6.0+cu124", "12.4", CU12_ARCHS, gpu, "570.133.07", 12080, 170)


def rtx5060ti_cu126_wheel() -> dict[str, Any]:
    """RTX 5060 Ti (sm_120) on torch 2.7.0+cu126 (PyPI's default for 2.7), driver 575."""
    gpu = nvml_gpu("NVIDIA GeForce RTX 5060 Ti", [12, 0], 16311)
    return gpu_on_wheel("2.7.0+cu126", "12.6", CU12_ARCHS, gpu, "575.64.03", 12090, 36)


def gtx1080_cu128_wheel() -> dict[str, Any]:
    """GTX 1080 (Pascal, sm_61) on torch 2.7.0+cu128: Pascal is not in the cu128 list."""
    gpu = nvml_gpu("NVIDIA GeForce GTX 1080", [6, 1], 8192, pcie=(3, 16))
    return gpu_on_wheel("2.7.0+cu128", "12.8", CU128_27_ARCHS, gpu, "570.133.07", 12080, 20)


def k80_new_torch() -> dict[str, Any]:
    """Tesla K80 (Kepler, sm_37) with driver 470 (its last branch) on torch 2.13.0+cu126."""
    gpu = nvml_gpu("Tesla K80", [3, 7], 11441, pcie=(3, 16))
    return gpu_on_wheel("2.13.0+cu126", "12.6", CU12_ARCHS, gpu, "470.256.02", 11040, 13)


def cpu_source_build_driver_440() -> dict[str, Any]:
    """A CPU-only source build of torch on a T4 whose driver (440) dates from CUDA 10.2, Python 3.8."""
    f = base()
    f["nvml"] = nvml("440.100", 10020, [nvml_gpu("Tesla T4", [7, 5], 15109, pcie=(3, 16))])
    f["torch"]["version"] = "2.4.0a0+gitd990dad"
    f["packages"]["distributions"]["torch"]["version"] = "2.4.0a0+gitd990dad"
    f["platform"]["python_version"] = "3.8.10"
    return f


def cu126_wheel_driver_440() -> dict[str, Any]:
    """torch 2.13.0+cu126 on Python 3.11 with a T4 whose driver 440 serves CUDA 10.2 at most:
    'The NVIDIA driver on your system is too old (found version 10020)'."""
    gpu = nvml_gpu("Tesla T4", [7, 5], 15109, pcie=(3, 16))
    f = gpu_on_wheel("2.13.0+cu126", "12.6", CU12_ARCHS, gpu, "440.100", 10020, 40)
    f["torch"]["cuda"] = {"available": False, "device_count": 0, "devices": [], "warnings": [
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
        "version 10020). Please update your GPU driver by downloading and installing a new version "
        "from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: "
        "https://pytorch.org to install a PyTorch version that has been compiled with your version "
        "of the CUDA driver."]}  # fmt: skip
    return f


def torch113_torchaudio2() -> dict[str, Any]:
    """torch 1.13.1+cu117 with torchaudio 2.0.2 (pip upgraded torchaudio alone)."""
    f = gpu_on_wheel("1.13.1+cu117", "11.7", ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75",
                     "sm_80", "sm_86"], nvml_gpu("NVIDIA A10G", [8, 6], 23028), "525.85.12",
                     12000, 80)  # fmt: skip
    f["packages"]["distributions"]["torchaudio"] = {
        "version": "2.0.2", "location": f["packages"]["distributions"]["torch"]["location"],
        "requires": ["torch (==2.0.1)"],
    }  # fmt: skip
    f["torch"]["companions"] = {
        "torchaudio": {"imported": False, "error": {"type": "OSError", "message": (
            "/venv/lib/python3.10/site-packages/torchaudio/lib/libtorchaudio.so: undefined symbol: "
            "_ZN3c104impl3cow11cow_deleterEPv")}}
    }  # fmt: skip
    return f


def cuda_init_error(f: dict[str, Any], error: str) -> None:
    """torch.cuda.is_available() is False with torch's warning for a failed cudaGetDeviceCount()."""
    f["torch"]["cuda"] = {
        "available": False,
        "device_count": 0,
        "devices": [],
        "warnings": [
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you "
            "run some cuda functions before calling NumCudaDevices() that might have already set an "
            f"error? {error} (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)"
        ],
    }
    f["torch"].pop("cuda_init", None)


def error804_geforce_compat() -> dict[str, Any]:
    """A CUDA 13 container with cuda-compat on an RTX 4090 host with driver 535 (CUDA 12.2)."""
    f = h100_wheels()
    gpu = nvml_gpu("NVIDIA GeForce RTX 4090", [8, 9], 24564, pcie=(4, 16))
    f["nvml"] = nvml("535.183.01", 12020, [gpu])
    f["env"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat/lib64:/usr/local/nvidia/lib64"
    for lib in f["torch"]["libs"]["loaded"]:
        if lib["component"] == "cuda_driver":
            lib.update(
                path="/usr/local/cuda/compat/lib64/libcuda.so.580.65.06", version="580.65.06"
            )
    f["torch"]["libs"]["ld_library_path"] = [
        {"dir": "/usr/local/cuda/compat/lib64", "real": "/usr/local/cuda-13.0/compat/lib64",
         "exists": True, "libs": ["libcuda.so.1", "libcuda.so.580.65.06"]},
    ]  # fmt: skip
    cuda_init_error(f, "Error 804: forward compatibility was attempted on non supported HW")
    f["smoke"] = {"enabled": False}
    return f


def nvml_driver_mismatch() -> dict[str, Any]:
    """apt upgraded the driver 535 -> 550 and nobody rebooted: nvidia-smi says 'Failed to
    initialize NVML: Driver/library version mismatch'."""
    f = h100_wheels()
    f["nvml"] = {
        "status": "unavailable",
        "error": "NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.",
    }
    f["host"]["nvidia"]["proc_driver_version"] = (
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024"
    )
    for lib in f["torch"]["libs"]["loaded"]:
        if lib["component"] == "cuda_driver":
            lib.update(path="/usr/lib/x86_64-linux-gnu/libcuda.so.550.127.05", version="550.127.05")
    cuda_init_error(f, "Error 803: system has unsupported display driver / cuda driver combination")
    f["smoke"] = {"enabled": False}
    return f


CU11_ARCHS = ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"]


def rtx3090_cu102_wheel() -> dict[str, Any]:
    """RTX 3090 (sm_86) on torch 1.8.1+cu102: 'supports CUDA capabilities sm_37 sm_50 sm_60 sm_70'."""
    gpu = nvml_gpu("GeForce RTX 3090", [8, 6], 24268, pcie=(4, 16))
    f = gpu_on_wheel("1.8.1+cu102", "10.2", CU11_ARCHS[:4], gpu, "460.73.01", 11020, 82)
    f["platform"]["python_version"] = "3.8.10"
    return f


def h100_cu117_wheel() -> dict[str, Any]:
    """H100 (sm_90) on torch 1.13.1+cu117: '… supports CUDA capabilities sm_37 … sm_86'."""
    gpu = nvml_gpu("NVIDIA H100 PCIe", [9, 0], 81559)
    f = gpu_on_wheel("1.13.1+cu117", "11.7", CU11_ARCHS, gpu, "525.85.12", 12000, 114)
    f["platform"]["python_version"] = "3.10.12"
    return f


def xformers_other_torch() -> dict[str, Any]:
    """'xFormers was built for: PyTorch 2.1.1+cu121 … (you have 2.2.0+cu121)': pip moved torch."""
    gpu = nvml_gpu("NVIDIA A100-SXM4-80GB", [8, 0], 81920)
    f = gpu_on_wheel("2.2.0+cu121", "12.1", CU12_ARCHS, gpu, "535.183.01", 12020, 108)
    loc = f["packages"]["distributions"]["torch"]["location"]
    f["packages"]["distributions"]["xformers"] = {
        "version": "0.0.23", "location": loc, "requires": ["numpy", "torch ==2.1.1"]}  # fmt: skip
    f["torch"]["companions"] = {"xformers": {"imported": True, "version": "0.0.23"}}
    return f


def torchvision_upgraded_alone() -> dict[str, Any]:
    """`pip install -U torchvision` beside torch 2.0.1+cu118 left torchvision 0.16.0 (torch 2.1's)."""
    gpu = nvml_gpu("NVIDIA GeForce RTX 4090", [8, 9], 24564, pcie=(4, 16))
    f = gpu_on_wheel("2.0.1+cu118", "11.8", [*CU11_ARCHS, "sm_90"], gpu, "535.183.01", 12020, 128)
    loc = f["packages"]["distributions"]["torch"]["location"]
    f["packages"]["distributions"]["torchvision"] = {
        "version": "0.16.0+cu118", "location": loc, "requires": ["numpy", "torch (==2.1.0)"]}  # fmt: skip
    f["torch"]["companions"] = {"torchvision": {"imported": False, "error": {
        "type": "RuntimeError", "message": "operator torchvision::nms does not exist"}}}  # fmt: skip
    return f


def centos7_glibc217() -> dict[str, Any]:
    """CentOS 7 (glibc 2.17): pip says 'No matching distribution found for torch==2.7.0'."""
    f = base()
    f["platform"].update(glibc="2.17", libc="glibc 2.17", distro={
        "id": "centos", "name": "CentOS Linux", "version_id": "7",
        "pretty_name": "CentOS Linux 7 (Core)"})  # fmt: skip
    return f


def no_avx2_sigill() -> dict[str, Any]:
    """A VM with a generic CPU model (no AVX2): `import torch` dies with 'Illegal instruction'."""
    f = base()
    f["platform"]["cpu"] = {"model": "QEMU Virtual CPU version 2.5+", "isa": ["sse4_2"]}
    f["torch"] = {"status": "crashed"}
    f["probe"]["torch"].update(status="crashed", signal="SIGILL", unfinished_stage="import",
                               returncode=-4, message="probe was killed by SIGILL during: import")  # fmt: skip
    f["smoke"] = {"enabled": False}
    return f


def jetson_cpu_wheel() -> dict[str, Any]:
    """A Jetson Orin with PyPI's aarch64 torch: 'Torch not compiled with CUDA enabled'."""
    f = base()
    f["platform"].update(machine="aarch64", jetson="# R36 (release), REVISION: 4.0, GCID: 37537400, "
                         "BOARD: generic, EABI: aarch64, DATE: Fri Sep 13 04:36:44 UTC 2024",
                         cpu={"model": None, "isa": ["asimd"]})  # fmt: skip
    return f


def conda_and_pip_torch() -> dict[str, Any]:
    """`conda install pytorch` then `pip install torch` into the same environment."""
    f = base()
    f["platform"]["conda_packages"] = {
        "pytorch": "2.5.1",
        "pytorch-cuda": "12.4",
        "mkl": "2023.1.0",
    }
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
    "libs_shadowed_cudart": libs_shadowed_cudart,
    "cudnn_wheel_missing": cudnn_wheel_missing,
    "env_misconfigured": env_misconfigured,
    "nvcc_mismatch": nvcc_mismatch,
    "rocm_gfx1031": rocm_gfx1031,
    "xpu_no_devices": xpu_no_devices,
    "rtx5090_cu124_wheel": rtx5090_cu124_wheel,
    "rtx5060ti_cu126_wheel": rtx5060ti_cu126_wheel,
    "gtx1080_cu128_wheel": gtx1080_cu128_wheel,
    "k80_new_torch": k80_new_torch,
    "cpu_source_build_driver_440": cpu_source_build_driver_440,
    "torch113_torchaudio2": torch113_torchaudio2,
    "cu126_wheel_driver_440": cu126_wheel_driver_440,
    "error804_geforce_compat": error804_geforce_compat,
    "nvml_driver_mismatch": nvml_driver_mismatch,
    "rtx3090_cu102_wheel": rtx3090_cu102_wheel,
    "h100_cu117_wheel": h100_cu117_wheel,
    "xformers_other_torch": xformers_other_torch,
    "torchvision_upgraded_alone": torchvision_upgraded_alone,
    "centos7_glibc217": centos7_glibc217,
    "no_avx2_sigill": no_avx2_sigill,
    "jetson_cpu_wheel": jetson_cpu_wheel,
    "conda_and_pip_torch": conda_and_pip_torch,
    "returnn_1802_nccl_cu11_cu12": returnn_1802_nccl_cu11_cu12,
}

if __name__ == "__main__":
    for name, build in CORPUS.items():
        facts = build()
        facts["collected"]["constructed_by"] = "tests/facts/build_corpus.py"
        (HERE / f"{name}.json").write_text(json.dumps(facts, indent=2, sort_keys=True) + "\n")
        print("wrote", name)
