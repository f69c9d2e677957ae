"""cuda.driver: does the NVIDIA driver support the CUDA version torch was built with?"""

from __future__ import annotations

from dataclasses import replace

from torchdoctor.data import compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from . import driver_state
from .common import (
    NO_CUDA_ON_MACOS,
    Context,
    driver_install_hint,
    gpus_below_every_wheel,
    grounded,
    keep_driver_fixes,
    no_driver_helps,
    pasted,
    quoted,
    upgrade_driver,
    wheel_for,
)

ID = "cuda.driver"
TITLE = "NVIDIA driver vs the wheel's CUDA"
ORDER = 50  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("nvml", "torch.build")
# torch's own "no driver" / "driver too old" lines pasted with a report are judged without them.
EVIDENCE = ("no-driver", "driver-too-old")
# An accelerator-specific check: with --expect naming another target, its failures only warn.
ACCELERATOR = "cuda"
# The problems it reports, each its own finding id (cuda.driver.<code>).
FINDINGS = {
    "driver-mismatch": "NVIDIA driver/library version mismatch: kernel module and user space differ",
    "no-driver": "no NVIDIA driver found (with --expect cuda)",
    "minor-compat": "the driver runs the wheel's CUDA only through minor-version compatibility",
    "too-old": "the NVIDIA driver is too old for the wheel's CUDA",
    "unknown-cuda": "no table entry for the wheel's CUDA version",
}


def cuda_from_driver_api(value: int | None) -> str | None:
    """NVML's 12020 -> '12.2' (the newest CUDA the driver supports)."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _no_driver(facts: Facts, ctx: Context) -> Verdict:
    """NVML did not answer: a mismatched driver, or none at all (a skip unless CUDA is expected)."""
    nv = facts.nvml
    mismatch = driver_state.nvml_mismatch(facts)
    if mismatch:
        problem = Problem("driver-mismatch", Status.FAIL, mismatch[0], [mismatch[1]])
        return from_problems([problem], {"nvml": nv.raw}, "")
    reason = nv.error or nv.status or "no NVML"
    summary = f"no NVIDIA driver found ({reason})"
    if ctx.expect != "cuda":
        return verdict(Status.SKIP, summary, {"nvml": nv.raw})
    fix = (
        NO_CUDA_ON_MACOS
        if facts.platform.system == "Darwin"
        else Remedy(
            "Install the NVIDIA driver; in a container, start it with `--gpus all`.",
            evidence=grounded(facts, "nvml.status", "nvml.error"),
        )
    )
    return from_problems([Problem("no-driver", Status.FAIL, summary, [fix])], {"nvml": nv.raw}, "")


def _support_problem(facts: Facts, base: str, details: dict) -> Problem | None:
    """The driver against the wheel's CUDA: None when it fully supports it."""
    wheel_cuda = facts.torch.build.cuda or ""
    support = compat.driver_support(facts.nvml.driver_version, wheel_cuda)
    details["support"] = support
    mm = compat.cuda_major_minor(wheel_cuda) or ""
    need = compat.TOOLKIT_MIN_DRIVER.get(mm)
    details["min_driver_full"] = need
    if support == "full":
        return None
    if support not in ("minor_compat", "too_old"):
        fix = Remedy(
            "Compare the driver with NVIDIA's CUDA release notes by hand.",
            evidence=grounded(facts, "nvml.driver_version", "torch.build.cuda"),
        )
        why = f"{base}; no table entry for CUDA {wheel_cuda}"
        return Problem("unknown-cuda", Status.WARN, why, [fix])
    # Keeping the driver: a wheel built for a CUDA it serves, unless that is the one installed.
    choice = wheel_for(facts)
    same = choice and choice.variant == f"cu{mm.replace('.', '')}" and choice.support == support
    because = grounded(facts, "nvml.driver_version", "torch.build.cuda")
    fix_wheel = [] if same else keep_driver_fixes(facts, None, "Or keep this driver.", because)
    fixes = [upgrade_driver(need, facts=facts, because=because), *fix_wheel]
    if gpus_below_every_wheel(facts):
        # No driver for this GPU runs the wheel's CUDA, and no wheel runs on the GPU.
        fixes = [no_driver_helps(facts)]
    if support == "minor_compat":
        why = (
            f"{base} runs the wheel's CUDA {wheel_cuda} only through minor-version compatibility "
            f"(full support needs ≥ {need}); PTX JIT of newer code will fail"
        )
        return Problem("minor-compat", Status.WARN, why, fixes)
    why = (
        f"{base} is too old for the wheel's CUDA {wheel_cuda} (needs ≥ {need or 'a newer driver'})"
    )
    return Problem("too-old", Status.FAIL, why, fixes)


def _from_words(facts: Facts) -> Verdict | None:
    """A report without nvidia-smi's lines, but with torch's own words about the driver."""
    if facts.collected.source in (None, "probe") or "nvml" in (facts.collected.carries or []):
        return None
    none_found = pasted(facts, "no-driver")
    too_old = pasted(facts, "driver-too-old")
    details = quoted(none_found + too_old)
    paths = tuple(details)
    if too_old:
        e = too_old[0][1]
        need = compat.TOOLKIT_MIN_DRIVER.get(compat.cuda_major_minor(facts.torch.build.cuda) or "")
        why = (
            f"torch says the NVIDIA driver is too old (it supports CUDA {e.driver_cuda or '?'}; "
            f"the wheel's CUDA is {facts.torch.build.cuda or 'not in the report'})"
        )
        fix = replace(upgrade_driver(need, facts=facts), evidence=paths)
        return from_problems([Problem("too-old", Status.FAIL, why, [fix])], details, "")
    if none_found and facts.torch.build.variant == "cuda":
        fix = (
            replace(NO_CUDA_ON_MACOS, evidence=paths)
            if facts.platform.system == "Darwin"
            else Remedy(
                "Check first that the machine has an NVIDIA GPU (the report lists none: "
                "`nvidia-smi`, `lspci | grep -i nvidia`); then install its driver "
                f"({driver_install_hint(facts)}).",
                ("nvidia-smi",),
                evidence=paths,
            )
        )
        why = "torch found no NVIDIA driver on the machine (its own warning, quoted)"
        return from_problems([Problem("no-driver", Status.FAIL, why, [fix])], details, "")
    return verdict(Status.SKIP, "not in the report (needs NVIDIA driver or GPU lines)", details)


def check(facts: Facts, ctx: Context) -> Verdict:
    words = _from_words(facts)
    if words:
        return words
    nv = facts.nvml
    if nv.status != "ok":
        return _no_driver(facts, ctx)
    if not nv.driver_version:
        return verdict(Status.SKIP, "not in the report (needs the NVIDIA driver version line)")
    wheel_cuda = facts.torch.build.cuda
    driver = nv.driver_version
    max_cuda = cuda_from_driver_api(nv.cuda_driver_version)
    details = {"driver_version": driver, "driver_max_cuda": max_cuda, "wheel_cuda": wheel_cuda}
    base = f"driver {driver}" + (f" (supports CUDA ≤ {max_cuda})" if max_cuda else "")
    if facts.torch.status != "ok":
        return verdict(
            Status.PASS, f"{base}; torch itself could not be examined (see torch.install)", details
        )
    if not wheel_cuda:
        return verdict(Status.PASS, f"{base}; the installed torch is not a CUDA build", details)
    problem = _support_problem(facts, base, details)
    passed = f"{base} fully supports the wheel's CUDA {wheel_cuda}"
    return from_problems([problem] if problem else [], details, passed)
