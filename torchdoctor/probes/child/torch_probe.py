"""The torch probe: the only code of torchdoctor that imports torch.

It runs as the probe child (``runner.child_argv(python, "torch_probe")``) under whichever
interpreter is being diagnosed, so it must use the standard library only and must not import
torchdoctor. It writes one flushed
JSON line per event to stdout:

    {"event": "begin", "stage": "cuda.init"}
    {"event": "end", "stage": "cuda.init", "data": {...}}
    {"event": "error", "stage": "cuda.init", "error": {"type": ..., "message": ..., "traceback": ...}}
    {"event": "phase", "phase": "smoke"}

so that when CUDA init hangs or segfaults, the parent still knows every fact gathered before and
exactly which stage never finished.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import struct
import sys
import time
import traceback
import warnings

from . import accel_probe, dist_sizes, forked, libs_probe, locate

_OUT = sys.stdout


def emit(obj):
    _OUT.write(json.dumps(obj, default=str) + "\n")
    _OUT.flush()


def _error_record(exc):
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(tb)[-4000:],
    }


def stage(name, fn, *args):
    """Run one stage; emit begin/end/error. Returns the data, or None on error."""
    emit({"event": "begin", "stage": name})
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = fn(*args)
    except BaseException as exc:  # noqa: BLE001 - the probe reports everything, including SystemExit
        emit({"event": "error", "stage": name, "error": _error_record(exc)})
        return None
    if caught:
        data = dict(data or {})
        data["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    emit({"event": "end", "stage": name, "data": data, "duration_s": time.perf_counter() - t0})
    return data


def forked_stage(name, running):
    """Report a stage that ran in a forked child (forked.py) as if it had run here: begin, then
    end with its own duration or its error. Returns None: nothing is left to report."""
    emit({"event": "begin", "stage": name})
    res = running.result()
    if "error" in res:
        emit({"event": "error", "stage": name, "error": res["error"]})
        return None
    data = res.get("data")
    if res.get("warnings"):
        data = dict(data or {})
        data["warnings"] = res["warnings"]
    emit({"event": "end", "stage": name, "data": data, "duration_s": res.get("duration_s", 0.0)})
    return None


# --------------------------------------------------------------------------- stages without torch


def platform_facts():
    uname = platform.uname()
    release = uname.release.lower()
    facts = {
        "system": uname.system,
        "release": uname.release,
        "machine": uname.machine,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_bits": struct.calcsize("P") * 8,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "in_venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
        "conda_prefix": os.environ.get("CONDA_PREFIX"),
        # pip refuses to install into this interpreter (PEP 668): remedies must use a venv.
        "externally_managed": locate.externally_managed(),
        "ensurepip": importlib.util.find_spec("ensurepip") is not None,  # Debian: python3-venv
        # What `import torch` gets in a script run from the user's directory, if not torch.
        "torch_shadows": locate.find_torch(sys.path, locate.user_cwd())["shadows"]
        + locate.stdlib_shadows(locate.user_cwd())
        + locate.companion_shadows(sys.path, locate.user_cwd()),
        # Where compiled extensions are searched for (probes/extension_links.py): absolute.
        "sys_path": [os.path.abspath(p) for p in sys.path if _is_dir(p)][:64],
        "wsl": "microsoft" in release or os.path.exists("/proc/sys/fs/binfmt_misc/WSLInterop"),
        "libc": " ".join(platform.libc_ver()).strip() if uname.system == "Linux" else None,
    }
    if uname.system == "Linux":
        facts.update(linux_facts())
    if uname.system == "Darwin":
        facts["mac_ver"] = platform.mac_ver()[0]
        facts["rosetta"] = _sysctl("sysctl.proc_translated") == "1"
        # A macOS virtual machine (GitHub's macos-14 runners): its paravirtual GPU reports MPS.
        facts["vm"] = _sysctl("kern.hv_vmm_present") == "1"
    try:
        import site

        facts["user_site"] = site.getusersitepackages()
        facts["user_site_enabled"] = bool(site.ENABLE_USER_SITE)
    except Exception:  # noqa: BLE001 - some embedded Pythons lack site
        pass
    return facts


# CPU features that decide whether a wheel's code runs at all ("Illegal instruction") or which
# kernels torch dispatches to; only these are recorded, not the whole flag list.
ISA_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
    "amx_tile", "asimd", "sve", "sve2",
)  # fmt: skip


def _is_dir(entry):
    """A sys.path entry that is a directory ('' is the current one; path hooks are not)."""
    try:
        return isinstance(entry, str) and os.path.isdir(entry or ".")
    except (OSError, ValueError):
        return False


def _read(path, limit=1 << 20):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return None


def linux_facts():
    """Distribution, CPU model and ISA flags, Jetson, conda packages: what pip and the wheels
    depend on beyond the kernel."""
    out = {}
    release = {}
    for line in (_read("/etc/os-release") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key in ("ID", "NAME", "VERSION_ID", "PRETTY_NAME"):
            release[key.lower()] = value.strip().strip('"')
    out["distro"] = release or None
    glibc = platform.libc_ver()
    out["glibc"] = glibc[1] if glibc[0] == "glibc" else None
    model, flags = None, set()
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "cpu model") and model is None:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    out["cpu"] = {"model": model, "isa": [f for f in ISA_FLAGS if f in flags] if flags else None}
    tegra = _read("/etc/nv_tegra_release", 4096)
    out["jetson"] = tegra.splitlines()[0].strip() if tegra else None
    out["conda_packages"] = _conda_packages(os.environ.get("CONDA_PREFIX") or sys.prefix)
    return out


def _conda_packages(prefix):
    """torch-related packages a conda environment holds (its conda-meta records), or None."""
    meta = os.path.join(prefix, "conda-meta")
    try:
        names = os.listdir(meta)
    except OSError:
        return None
    wanted = ("pytorch", "torch", "cuda", "cudnn", "nccl", "nvidia", "mkl", "triton", "libtorch")
    wanted += ("cpuonly", "libstdcxx", "libgcc")  # pins the CPU build; the C++ runtime
    found = {}
    for name in names:
        if name.endswith(".json"):
            pkg, _, rest = name[:-5].rpartition("-")[0].rpartition("-")
            if pkg and any(w in pkg for w in wanted):
                found[pkg] = rest
    return found


def _sysctl(name):
    import subprocess

    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=2)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


# Read from metadata so that a broken torchvision is judged without importing it.
COMPANIONS = (
    "torch", "torchvision", "torchaudio", "torchtext", "numpy", "triton", "pytorch-triton-rocm",
    "xformers", "torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv", "pyg-lib",
    "intel-extension-for-pytorch",  # its XPU build needs an XPU torch (the xpu check)
)  # fmt: skip
# Companions with compiled code linked against torch: imported after torch to catch their real
# error, with the CUDA version each says it was built for (where it says).
IMPORTED_COMPANIONS = ("torchvision", "torchaudio", "torchtext", "triton", "xformers")


def package_facts():
    from importlib import metadata

    found = {}
    torch_locations = []
    nvidia = {}
    nvidia_where = {}  # where each nvidia-* wheel lies: torch finds their libraries beside it
    dists = list(metadata.distributions())
    for dist in dists:
        name = (dist.metadata.get("Name") or "").lower().replace("_", "-")
        if not name:
            continue
        location = str(dist.locate_file(""))
        if name == "torch":
            torch_locations.append(_torch_distribution(dist, location))
        if name in COMPANIONS and name not in found:
            found[name] = {"version": dist.version, "location": location}
            if name == "torch" or name in IMPORTED_COMPANIONS:
                found[name]["requires"] = list(dist.requires or [])
        elif name.startswith("nvidia-") and name not in nvidia:
            nvidia[name] = dist.version
            nvidia_where[name] = location
    # Sizes of what a CPU wheel would not carry.
    cuda_sizes = _try(lambda: dist_sizes.cuda_sizes(dists), {})
    return {
        "distributions": found,
        "torch_distributions": torch_locations,
        "nvidia_wheels": nvidia,
        "nvidia_wheel_locations": nvidia_where,
        "cuda_sizes": cuda_sizes,
    }


def _torch_distribution(dist, location):
    """One torch metadata directory and what its INSTALLER says: conda's pytorch package carries
    torch's own metadata too, so who owns it is judged later from conda-meta (not here)."""
    metadata = getattr(dist, "_path", None)  # PathDistribution's directory; others have none
    metadata = str(metadata) if metadata is not None else None
    installer = (_small_file(os.path.join(metadata, "INSTALLER")) if metadata else None) or ""
    return {
        "version": dist.version,
        "location": location,
        "metadata": metadata,
        "installer": installer.strip().splitlines()[0].strip() if installer.strip() else None,
    }


def _small_file(path, limit=256):
    """A short regular file's text, or None: never waits on a FIFO, never reads past limit."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- stages with torch


def import_torch():
    t0 = time.perf_counter()
    locate.prefer_installed_torch()
    import torch

    return {
        "version": torch.__version__,
        "file": torch.__file__,
        "import_s": round(time.perf_counter() - t0, 4),
    }


def _try(fn, default=None):
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a missing flag is a fact, not a failure
        return default


def build_facts():
    import torch

    version = torch.version
    cuda = getattr(version, "cuda", None)
    hip = getattr(version, "hip", None)
    xpu_built = (
        bool(_try(lambda: torch.xpu._is_compiled(), False)) if hasattr(torch, "xpu") else False
    )
    if cuda:
        variant = "cuda"
    elif hip:
        variant = "rocm"
    elif xpu_built:
        variant = "xpu"
    else:
        variant = "cpu"
    # get_arch_list() returns [] whenever CUDA is unavailable; the raw flags do not need a device.
    arch_flags = _try(lambda: torch._C._cuda_getArchFlags(), None)
    arch_list = arch_flags.split() if isinstance(arch_flags, str) else []
    dist = _try(lambda: torch.distributed.is_available(), False)
    return {
        "variant": variant,
        "cuda": cuda,
        "hip": hip,
        "git_version": getattr(version, "git_version", None),
        "debug": bool(getattr(version, "debug", False)),
        "arch_list": arch_list,
        "cudnn": _try(lambda: torch.backends.cudnn.version()) if cuda or hip else None,
        "nccl": _try(lambda: ".".join(map(str, torch.cuda.nccl.version()))) if cuda else None,
        "mkl": _try(lambda: torch.backends.mkl.is_available(), False),
        "mkldnn": _try(lambda: torch.backends.mkldnn.is_available(), False),
        "openmp": _try(lambda: torch.backends.openmp.is_available(), False),
        "cpu_capability": _try(lambda: torch.backends.cpu.get_cpu_capability()),
        "cxx11_abi": _try(lambda: bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
        "distributed": bool(dist),
        "nccl_available": bool(dist and _try(lambda: torch.distributed.is_nccl_available(), False)),
        "gloo_available": bool(dist and _try(lambda: torch.distributed.is_gloo_available(), False)),
        "mps_built": bool(_try(lambda: torch.backends.mps.is_built(), False)),
        "xpu_built": xpu_built,
        "num_threads": _try(lambda: torch.get_num_threads()),
        "num_interop_threads": _try(lambda: torch.get_num_interop_threads()),
    }


def cuda_facts():
    """Availability and device properties. is_available() does not create a context."""
    import torch

    available = bool(torch.cuda.is_available())
    count = torch.cuda.device_count() if available else 0
    devices = []
    for i in range(count):
        p = torch.cuda.get_device_properties(i)
        devices.append(
            {
                "index": i,
                "name": p.name,
                "capability": [p.major, p.minor],
                "multi_processor_count": p.multi_processor_count,
                "total_memory_bytes": p.total_memory,
                "uuid": str(getattr(p, "uuid", "")) or None,
                "gcn_arch_name": getattr(p, "gcnArchName", None),
            }
        )
    return {"available": available, "device_count": count, "devices": devices}


def cuda_init_facts(count):
    """Create a context on each device and read free memory (the stage that can hang)."""
    import torch

    t0 = time.perf_counter()
    torch.cuda.init()
    init_s = time.perf_counter() - t0
    mem = []
    for i in range(count):
        t0 = time.perf_counter()
        free, total = torch.cuda.mem_get_info(i)  # the first call creates the device's context
        ctx_s = time.perf_counter() - t0
        mem.append(
            {"index": i, "free_bytes": free, "total_bytes": total, "context_s": round(ctx_s, 4)}
        )
    return {"init_s": round(init_s, 4), "memory": mem}


def _installed(name):
    from importlib import metadata

    try:
        metadata.version(name)
    except Exception:  # noqa: BLE001 - not installed (or unreadable metadata): nothing to import
        return False
    return True


def cuda_text(value):
    """A companion's CUDA version as torch writes it ('13.0'), None for a CPU build.

    torchvision's ``version.cuda`` is an int, major*1000 + minor*10 (13000 on an H200 machine
    with 0.26.0+cu130, recorded 2026-11-26), or -1/None without CUDA; torchaudio's was a string.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return f"{value // 1000}.{value % 1000 // 10}" if value > 0 else None
    return str(value) or None


def companion_facts():
    """Import each installed companion after torch; its error is the diagnosis."""
    import importlib

    out = {}
    for name in IMPORTED_COMPANIONS:
        if not _installed(name):
            continue
        record = {"imported": False}
        try:
            mod = importlib.import_module(name)
            record["imported"] = True
            record["version"] = str(getattr(mod, "__version__", "") or "") or None
            version = getattr(mod, "version", None)
            if name in ("torchvision", "torchaudio") and hasattr(version, "cuda"):
                record["cuda_known"] = True
                record["cuda"] = cuda_text(version.cuda)
        except BaseException as exc:  # noqa: BLE001 - any failure, SystemExit included, is a fact
            record["error"] = {"type": type(exc).__name__, "message": str(exc)[:2000]}
        out[name] = record
    return out


def mps_facts():
    import torch

    mps = torch.backends.mps
    return {"built": bool(mps.is_built()), "available": bool(mps.is_available())}


# --------------------------------------------------------------------------- main


def _arg(argv, name, default=None):
    return (
        argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else default
    )


def main(argv):
    emit({"event": "hello", "pid": os.getpid(), "python": sys.executable})
    smoke_only = _arg(argv, "--smoke-only")
    if smoke_only is not None:
        # A rerun for the devices left after one hung or crashed: only the smoke phase.
        if stage("import", import_torch) is not None:
            from . import smoke_probe

            smoke_probe.run(stage, emit, _arg(argv, "--smoke", "quick"), smoke_only.split(","))
        emit({"event": "done"})
        return 0
    stage("platform", platform_facts)
    if "--no-packages" not in argv:  # the parent reads them itself when it runs this interpreter
        stage("packages", package_facts)
    if stage("import", import_torch) is None:
        emit({"event": "done"})
        return 0
    # Before anything touches CUDA: the companion imports run beside the stages below.
    companions = forked.start(companion_facts, _error_record)
    build = stage("build", build_facts) or {}
    cuda = None
    if build.get("variant") in ("cuda", "rocm"):
        cuda = stage("cuda", cuda_facts)
        if cuda and cuda.get("available") and "--no-cuda-init" not in argv:
            stage("cuda.init", cuda_init_facts, cuda["device_count"])
    if build.get("mps_built"):
        stage("mps", mps_facts)
    stage("libs", libs_probe.libs_facts)
    if companions is None:
        stage("companions", companion_facts)
    elif companions.ready():  # reported before the smoke tests where it can be
        companions = forked_stage("companions", companions)
    if build.get("variant") == "rocm":
        stage("rocm", accel_probe.rocm_facts)
    if build.get("xpu_built"):
        stage("xpu", accel_probe.xpu_facts)
    smoke_size = _arg(argv, "--smoke")
    if smoke_size is not None:
        from . import smoke_probe  # loaded only when smoke tests run

        smoke_probe.run(stage, emit, smoke_size)
    if companions is not None:
        forked_stage("companions", companions)
    emit({"event": "done"})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is reported; skip interpreter teardown, which after `import torch` costs ~0.3 s
    # (module finalisers, allocator caches) and can itself hang on a wedged driver.
    os._exit(code)
