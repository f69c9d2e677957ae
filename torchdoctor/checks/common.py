"""What check modules share: the context they judge under and the remedies they keep proposing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..data import compat
from ..facts import Facts, dig
from ..model import Remedy, Status, Verdict, verdict


@dataclass(frozen=True)
class Context:
    """How to judge: what the environment is expected to provide."""

    expect: str = "auto"  # auto | cpu | cuda | mps
    smoke: bool = True


def python_cmd(facts: Facts) -> str:
    """The interpreter being diagnosed, so a remedy fixes that environment, not another."""
    exe = dig(facts, "platform.executable") or dig(facts, "collected.python")
    return f"{exe} -m pip" if exe else "python -m pip"


def installed_family(facts: Facts) -> list[str]:
    """torch plus the companions that are installed and must come from the same index."""
    dists = dig(facts, "packages.distributions", {})
    return ["torch"] + [p for p in ("torchvision", "torchaudio") if p in dists]


def reinstall_torch(facts: Facts, variant: str, why: str) -> Remedy:
    """Reinstall torch (and its installed companions) from one wheel index."""
    pkgs = " ".join(installed_family(facts))
    url = compat.INDEX_URL.format(variant=variant)
    return Remedy(
        f"{why} Reinstall torch{' and its companions' if ' ' in pkgs else ''} from the "
        f"{variant} index so they match each other.",
        (f"{python_cmd(facts)} install --force-reinstall {pkgs} --index-url {url}",),
    )


def gpu_variant(facts: Facts) -> str | None:
    """The newest CUDA wheel variant the detected driver fully supports, for this torch release."""
    driver = dig(facts, "nvml.driver_version")
    return compat.best_variant_for_driver(driver, dig(facts, "torch.version"))


def nvml_gpus(facts: Facts) -> list[dict[str, Any]]:
    return dig(facts, "nvml.devices", []) if dig(facts, "nvml.status") == "ok" else []


def torch_ok(facts: Facts) -> bool:
    return dig(facts, "torch.status") == "ok"


def torch_unavailable(facts: Facts) -> Verdict:
    """The verdict for a torch-dependent check when torch itself could not be examined."""
    status = dig(facts, "torch.status", "unknown")
    return verdict(Status.SKIP, f"torch could not be examined ({status}); see torch.install")


def probe_stuck(facts: Facts, stages: tuple[str, ...]) -> Verdict | None:
    """An ``error`` verdict when the probe hung or died inside one of ``stages``."""
    probe = dig(facts, "probe.torch", {})
    stuck = probe.get("unfinished_stage")
    if probe.get("status") in ("timeout", "crashed", "failed") and stuck in stages:
        how = {
            "timeout": "did not finish before the deadline",
            "crashed": f"was killed by {probe.get('signal') or 'a signal'}",
            "failed": f"exited with code {probe.get('returncode')}",
        }[probe["status"]]
        return verdict(
            Status.ERROR,
            f"the torch probe {how} while running stage '{stuck}'",
            {"probe": probe},
            [
                Remedy(
                    "A hang or crash in CUDA initialisation usually means a wedged driver or a "
                    "missing /dev/nvidia-uvm. Check that nvidia-smi answers; if it does, reload the "
                    "UVM module (or reboot).",
                    ("nvidia-smi", "sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm"),
                )
            ],
        )
    return None


def stage_error(facts: Facts, stage: str) -> dict[str, Any] | None:
    return dig(facts, f"torch.stage_errors.{stage}")
