"""xpu: Intel GPU builds of torch — torch.xpu availability and devices."""

from __future__ import annotations

from torchdoctor.report.result import Remedy, Status, Verdict, verdict

from ..record import Facts
from .common import (
    Context,
    grounded,
    probe_stuck,
    reinstall_torch,
    stage_error,
    torch_ok,
    torch_unavailable,
)

ID = "xpu"
TITLE = "Intel XPU"
ORDER = 100  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("torch.build", "torch.xpu")
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "xpu"

DRIVER_DOCS = "https://dgpu-docs.intel.com/driver/installation.html"


def check(facts: Facts, ctx: Context) -> Verdict:
    if not torch_ok(facts):
        return torch_unavailable(facts)
    build = facts.torch.build
    if build.variant != "xpu" and not build.xpu_built:
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
