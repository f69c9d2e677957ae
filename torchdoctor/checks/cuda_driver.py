"""cuda.driver: does the NVIDIA driver support the CUDA version torch was built with?"""

from __future__ import annotations

from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict
from . import driver_state
from .common import (
    NO_CUDA_ON_MACOS,
    Context,
    keep_driver_fixes,
    upgrade_driver,
    wheel_for,
)

ID = "cuda.driver"
TITLE = "NVIDIA driver vs the wheel's CUDA"
ORDER = 50  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("nvml", "torch.build")
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"


def cuda_from_driver_api(value: int | None) -> str | None:
    """NVML's 12020 -> '12.2' (the newest CUDA the driver supports)."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def check(facts: Facts, ctx: Context) -> Verdict:
    nv = dig(facts, "nvml", {})
    wheel_cuda = dig(facts, "torch.build.cuda")
    mismatch = driver_state.nvml_mismatch(facts)
    if nv.get("status") != "ok" and mismatch:
        return verdict(Status.FAIL, mismatch[0], {"nvml": nv}, [mismatch[1]])
    if nv.get("status") != "ok":
        reason = nv.get("error") or nv.get("status") or "no NVML"
        status = Status.FAIL if ctx.expect == "cuda" else Status.SKIP
        return verdict(
            status,
            f"no NVIDIA driver found ({reason})",
            {"nvml": nv},
            [
                NO_CUDA_ON_MACOS
                if dig(facts, "platform.system") == "Darwin"
                else Remedy(
                    "Install the NVIDIA driver; in a container, start it with `--gpus all`."
                )
            ]
            if status == Status.FAIL
            else [],
        )
    driver = nv.get("driver_version")
    max_cuda = cuda_from_driver_api(nv.get("cuda_driver_version"))
    details = {"driver_version": driver, "driver_max_cuda": max_cuda, "wheel_cuda": wheel_cuda}
    base = f"driver {driver}" + (f" (supports CUDA ≤ {max_cuda})" if max_cuda else "")
    if dig(facts, "torch.status") != "ok":
        return verdict(
            Status.PASS, f"{base}; torch itself could not be examined (see torch.install)", details
        )
    if not wheel_cuda:
        return verdict(Status.PASS, f"{base}; the installed torch is not a CUDA build", details)
    support = compat.driver_support(driver, wheel_cuda)
    details["support"] = support
    mm = compat.cuda_major_minor(wheel_cuda)
    need = compat.TOOLKIT_MIN_DRIVER.get(mm or "")
    details["min_driver_full"] = need
    if support == "full":
        return verdict(Status.PASS, f"{base} fully supports the wheel's CUDA {wheel_cuda}", details)
    # Keeping the driver: a wheel built for a CUDA it serves, unless that is the one installed.
    choice = wheel_for(facts)
    same = choice and choice.variant == f"cu{mm.replace('.', '')}" and choice.support == support
    fix_wheel = [] if same else keep_driver_fixes(facts, None, "Or keep this driver.")
    upgrade = upgrade_driver(need, facts=facts)
    if support == "minor_compat":
        return verdict(
            Status.WARN,
            f"{base} runs the wheel's CUDA {wheel_cuda} only through minor-version compatibility "
            f"(full support needs ≥ {need}); PTX JIT of newer code will fail",
            details,
            [upgrade, *fix_wheel],
        )
    if support == "too_old":
        return verdict(
            Status.FAIL,
            f"{base} is too old for the wheel's CUDA {wheel_cuda} (needs ≥ {need or 'a newer driver'})",
            details,
            [upgrade, *fix_wheel],
        )
    return verdict(
        Status.WARN,
        f"{base}; no table entry for CUDA {wheel_cuda}",
        details,
        [Remedy("Compare the driver with NVIDIA's CUDA release notes by hand.")],
    )
