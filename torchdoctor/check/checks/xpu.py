"""xpu: Intel GPU builds of torch — torch.xpu availability and devices."""

from __future__ import annotations

from dataclasses import replace

from torchdoctor.data import compat
from torchdoctor.data import xpu as xpu_data
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from . import bus_gpus
from .common import (
    Context,
    grounded,
    nvml_gpus,
    probe_stuck,
    python_cmd,
    quote,
    reinstall_torch,
    stage_error,
    torch_ok,
    torch_unavailable,
    torch_version_of,
    wheel_tag,
)

ID = "xpu"
TITLE = "Intel XPU"
ORDER = 100  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("torch.build", "torch.xpu")
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "xpu"
FINDINGS = {
    "build-missing": "torch is not an XPU build, but an Intel GPU, IPEX or --expect xpu wants one",
}

DRIVER_DOCS = "https://dgpu-docs.intel.com/driver/installation.html"


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    build = facts.torch.build
    if build.variant != "xpu" and not build.xpu_built:
        missing = build_missing(facts, ctx)
        if missing:
            return from_problems([missing], {"variant": build.variant}, "")
        return verdict(Status.SKIP, f"not an XPU build of torch ({build.variant or '?'})")
    stuck = probe_stuck(facts, ("xpu",))
    if stuck:
        return stuck
    xpu = facts.torch.xpu
    if not xpu:
        err = stage_error(facts, "xpu")
        if err:
            return verdict(Status.ERROR, f"torch.xpu failed: {err.message}", {"error": err.raw})
        return verdict(Status.SKIP, "these facts were recorded without XPU facts")
    render = xpu.nodes.render
    details = {"xpu": xpu.raw}
    if xpu.available and xpu.device_count:
        names = ", ".join(d.name or "?" for d in xpu.devices)
        return verdict(
            Status.PASS, f"XPU available: {xpu.device_count} device(s): {names}", details
        )
    if ctx.expect in ("cpu", "mps"):
        return verdict(Status.SKIP, f"XPU build, no XPU device (expected: {ctx.expect})", details)
    driver = Remedy(
        f"Install Intel's GPU driver and compute runtime ({DRIVER_DOCS}), let this user open the "
        "render nodes, then check the runtime sees the GPU.",
        ("ls -l /dev/dri", "sudo usermod -aG render $USER", "sycl-ls"),
        evidence=grounded(facts, "torch.xpu", "torch.build.xpu_built", "torch.build.variant"),
    )
    if not render:
        # No GPU render node at all: most likely no Intel GPU, so the XPU wheel is dead weight.
        return verdict(
            Status.WARN,
            "XPU build of torch, but no GPU render node (/dev/dri/renderD*): no Intel GPU visible",
            details,
            [
                reinstall_torch(facts, "cpu", "Without an Intel GPU the CPU build does the same."),
                driver,
            ],
        )
    unreadable = [n.path or "?" for n in render if not n.rw]
    why = f"cannot open {', '.join(unreadable)}" if unreadable else "driver or runtime missing?"
    return verdict(
        Status.FAIL, f"XPU build of torch, but torch.xpu sees no device ({why})", details, [driver]
    )


# --- xpu.build-missing: a torch without XPU where an XPU build was wanted ----------------------
# A CPU wheel beside an Intel iGPU is the normal laptop and stays quiet: only a discrete Intel GPU,
# IPEX, a torch labelled +xpu or --expect xpu say an XPU build was meant
# (intel/intel-extension-for-pytorch#244, pytorch/pytorch#150260).


def _nvidia_present(facts: Facts) -> bool:
    on_bus = any(g.vendor == "0x10de" for g in facts.host.pci_gpus or [])
    return on_bus or bool(nvml_gpus(facts))


def _ipex_version(facts: Facts) -> str | None:
    dist = facts.packages.distributions.get(xpu_data.IPEX)
    return (dist.version or "?") if dist else None


IPEX_PATH = f"packages.distributions.{xpu_data.IPEX}.version"


def _intent(facts: Facts, ctx: Context) -> tuple[Status, str, tuple[str, ...]] | None:
    """(severity, what says an XPU build was wanted, the facts that say it); None: nothing does."""
    if ctx.expect not in ("auto", "xpu"):
        return None
    version = torch_version_of(facts) or "?"
    ipex = _ipex_version(facts)
    if ctx.expect == "xpu":
        return Status.FAIL, "XPU is expected (--expect xpu)", ()
    if wheel_tag(version) == "xpu":
        # pytorch/pytorch#150260: the XPU index served a CPU-only nightly under the +xpu label.
        why = "its +xpu label says it came from the XPU index"
        return Status.FAIL, why, (torch_path(facts),)
    if ipex and xpu_data.ipex_is_xpu_build(ipex):
        why = f"{xpu_data.IPEX} {ipex} (an XPU build) is installed and needs an XPU torch"
        return Status.FAIL, why, (IPEX_PATH,)
    discrete = bus_gpus.intel_discrete(facts)
    # IPEX's CPU build alone proves nothing: it is a CPU library too. Beside an integrated GPU
    # (intel/intel-extension-for-pytorch#244's Alder Lake) only --expect xpu says XPU was meant.
    if discrete and not _nvidia_present(facts) and facts.torch.build.variant in ("cpu", "cuda"):
        i, family = discrete[0]
        g = (facts.host.pci_gpus or [])[i]
        why = f"a discrete Intel GPU, {family} ({g.address}, device {g.device}), goes unused"
        if ipex:
            why += f" with {xpu_data.IPEX} {ipex} installed"
        paths = tuple(f"host.pci_gpus.{j}.device" for j, _ in discrete)
        return Status.WARN, why, (*paths, *((IPEX_PATH,) if ipex else ()))
    return None


def torch_path(facts: Facts) -> str:
    return "torch.version" if facts.torch.version else "packages.distributions.torch.version"


def _fits(facts: Facts, minor: str) -> bool:
    """Whether ``minor`` has XPU wheels for this OS and this Python."""
    system = facts.platform.system or "Linux"
    first = xpu_data.FIRST_XPU_RELEASE.get(system)
    row = compat.RELEASES.get(minor)
    if not first or minor not in xpu_data.XPU_RELEASES or row is None:
        return False
    if compat.parse_version(minor) < compat.parse_version(first):
        return False
    py = compat.parse_version(facts.platform.python_version)[:2]
    lo, hi = (compat.parse_version(v) for v in row.python)
    return len(py) < 2 or lo <= py <= hi


def native_release(facts: Facts) -> str | None:
    """The torch release to install from the XPU index: this one where it has XPU wheels, else
    the newest that fits this Python (XPU matured fast: 2.5 was a prototype without Battlemage on
    Linux); None where this torch is newer than the table, or no XPU release fits."""
    current = compat.torch_minor(torch_version_of(facts))
    if current and _fits(facts, current):
        return current
    newest = max(xpu_data.XPU_RELEASES, key=compat.parse_version)
    if current and compat.parse_version(current) > compat.parse_version(newest):
        return None
    fitting = [m for m in xpu_data.XPU_RELEASES if _fits(facts, m)]
    return max(fitting, key=compat.parse_version) if fitting else None


def _native_fix(facts: Facts, because: tuple[str, ...], ipex: str | None) -> Remedy:
    current = compat.torch_minor(torch_version_of(facts))
    release = native_release(facts)
    if release is None:
        return _no_wheel_fix(facts, because)
    why = (
        "torch runs Intel GPUs itself (torch.xpu) from 2.5, without IPEX."
        if ipex
        else "An XPU build of torch (wheels from 2.5) runs on the Intel GPU through torch.xpu."
    )
    if wheel_tag(torch_version_of(facts)) == "xpu":
        why += (
            " The installed wheel is labelled +xpu but was built without XPU (the XPU index "
            "served CPU-only nightlies in 2025-03, pytorch/pytorch#149995): check "
            "torch.xpu._is_compiled() after installing."
        )
    if release != current:
        why += f" torch {current or '?'} has no XPU wheel for this OS and Python."
    fix = reinstall_torch(
        facts, "xpu", why, release=None if release == current else release, because=because
    )
    if not ipex:
        return fix
    drop = f"{python_cmd(facts)} uninstall -y {xpu_data.IPEX}"
    text = fix.text + (
        " IPEX is no longer developed (no release after 2.8, archived 2026-03): remove it and "
        "drop `import intel_extension_for_pytorch` from the code."
    )
    return replace(fix, text=text, commands=(drop, *fix.commands))


def _ipex_fix(facts: Facts, because: tuple[str, ...]) -> Remedy | None:
    """IPEX's XPU release for this torch, else its last one (for torch 2.8)."""
    current = compat.torch_minor(torch_version_of(facts))
    release = current if current in xpu_data.IPEX_FOR_TORCH else xpu_data.IPEX_LAST_TORCH
    if not _fits(facts, release):
        return None
    ipex = xpu_data.IPEX_FOR_TORCH[release]
    why = (
        f"To keep Intel Extension for PyTorch, it needs its XPU build ({ipex}, for torch "
        f"{release}) over an XPU torch; it is the last IPEX release line (development stopped "
        "after 2.8)."
        if release == xpu_data.IPEX_LAST_TORCH
        else f"Intel Extension for PyTorch needs its XPU build ({ipex}) over an XPU torch."
    )
    fix = reinstall_torch(
        facts, "xpu", why, release=None if release == current else release, because=because
    )
    pin = quote(facts, f"{xpu_data.IPEX}=={ipex}")
    add = f"{python_cmd(facts)} install {pin} --extra-index-url {xpu_data.IPEX_INDEX}"
    return replace(fix, text=fix.text + " Then install IPEX from Intel's index.",
                   commands=(*fix.commands, add))  # fmt: skip


def _no_wheel_fix(facts: Facts, because: tuple[str, ...]) -> Remedy:
    system = facts.platform.system or "?"
    if system == "Darwin":
        return Remedy("PyTorch publishes no XPU wheels for macOS: Intel GPUs need Linux or "
                      "Windows.", evidence=(*because, "platform.system"))  # fmt: skip
    newest = max(xpu_data.XPU_RELEASES, key=compat.parse_version)
    lo, hi = compat.RELEASES[newest].python
    return Remedy(
        f"No XPU wheel in the tables fits this torch and Python: pick XPU on the PyTorch selector "
        f"(https://pytorch.org/get-started/locally/) for the index URL ({xpu_data.XPU_INDEX}); "
        f"torch {newest} has XPU wheels for Python {lo} to {hi}, so an older Python needs a new "
        "environment.",
        evidence=(*because, "platform.python_version"),
    )


def _driver_fix(facts: Facts) -> Remedy | None:
    """A discrete Intel GPU no kernel driver serves: the XPU wheel alone will not see it."""
    idle = [
        i for i, _ in bus_gpus.intel_discrete(facts) if not (facts.host.pci_gpus or [])[i].driver
    ]
    if not idle or facts.platform.system != "Linux":
        return None
    return Remedy(
        f"No kernel driver serves the Intel GPU ({(facts.host.pci_gpus or [])[idle[0]].address})"
        f": install Intel's GPU driver and compute runtime (Level Zero; {DRIVER_DOCS}), then "
        "check that the runtime sees the GPU.",
        ("lspci -k -d 8086:", "sycl-ls"),
        grounded(facts, *(f"host.pci_gpus.{i}.driver" for i in idle)),
    )


def build_missing(facts: Facts, ctx: Context) -> Problem | None:
    intent = _intent(facts, ctx)
    if intent is None:
        return None
    status, why, paths = intent
    build = facts.torch.build
    because = grounded(facts, "torch.build.variant", "torch.build.xpu_built", *paths)
    ipex = _ipex_version(facts)
    native = _native_fix(facts, because, ipex)
    fixes = [native]
    if ipex:
        keep = _ipex_fix(facts, because)
        current = compat.torch_minor(torch_version_of(facts))
        if keep and current in xpu_data.IPEX_FOR_TORCH:
            fixes.insert(0, keep)  # IPEX's pair for this very torch: the smallest change
        elif keep:
            fixes.append(keep)
    driver = _driver_fix(facts)
    if driver:
        fixes.append(driver)
    message = (
        f"torch {torch_version_of(facts) or '?'} is a {build.variant or '?'} build without XPU "
        f"(torch.xpu._is_compiled() is False), but {why}"
    )
    return Problem("build-missing", status, message, fixes)
