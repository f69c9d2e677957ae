"""What check modules share: the context they judge under and the remedies they keep proposing."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from torchdoctor.data import compat
from torchdoctor.report.result import Remedy, Status, Verdict, verdict

from ..record import Facts
from ..record.base import ProbeError
from ..record.nvml import NvmlDevice


@dataclass(frozen=True)
class Context:
    """How to judge: what the environment is expected to provide."""

    expect: str = "auto"  # auto | cpu | cuda | mps
    smoke: bool = True


def quote(facts: Facts, arg: str) -> str:
    """Quote a command argument for the shell of the examined OS: cmd.exe and PowerShell both
    take double quotes, and cmd.exe passes single quotes on literally."""
    if facts.platform.system == "Windows":
        return f'"{arg}"' if re.search(r'[\s*<>|&^()"]', arg) else arg
    return shlex.quote(arg)


def set_env(facts: Facts, name: str, value: str) -> str:
    """The command that sets an environment variable in the examined OS's shell (cmd.exe)."""
    if facts.platform.system == "Windows":
        return f"set {name}={value}"
    return f"export {name}={quote(facts, value)}"


# A pasted report names no interpreter: the command that reaches the usual one on each OS
# (`py` is Windows' launcher; it honours an active virtual environment).
DEFAULT_PYTHON = {"Windows": "py", "Darwin": "python3"}


def python_cmd(facts: Facts) -> str:
    """pip of the interpreter being diagnosed, so a remedy fixes that environment, not another."""
    exe = facts.platform.executable or facts.collected.python
    if not exe:
        return f"{DEFAULT_PYTHON.get(facts.platform.system or '', 'python')} -m pip"
    return f"{quote(facts, exe)} -m pip"


# macOS has had no CUDA since NVIDIA dropped it, and PyTorch publishes no CUDA wheels for it.
NO_CUDA_ON_MACOS = Remedy(
    "macOS has no CUDA and PyTorch ships no CUDA wheels for it: use the Apple GPU through MPS "
    "(`--expect mps`), or run CUDA work on a Linux or Windows machine with an NVIDIA GPU."
)


def driver_install_hint(facts: Facts | None) -> str:
    """Where the NVIDIA driver comes from on the examined OS (WSL2 takes the Windows one)."""
    platform = facts.platform if facts else None
    if platform and (platform.system == "Windows" or platform.wsl):
        inside = " — never a Linux driver inside WSL2" if platform.wsl else ""
        return f"Windows: the NVIDIA App or nvidia.com/drivers{inside}"
    return "Ubuntu: `sudo ubuntu-drivers install`; elsewhere your distribution's driver package"


# What a report's reader would call a missing fact section.
REPORT_WORDS = {
    "nvml": "NVIDIA driver or GPU lines",
    "torch.build": "the torch build",
    "torch.cuda": "the 'Is CUDA available' line",
    "torch.xpu": "XPU devices",
    "torch.mps": "MPS availability",
    "torch.version": "the torch version",
    "platform": "OS and Python lines",
}


def not_in_report(facts: Facts, needs: tuple[str, ...] | None) -> Verdict | None:
    """For facts read from a pasted report (collect_env): a skip when the report does not carry
    every fact path in ``needs`` (None: the check never declared what it judges). Never a guess."""
    source = facts.collected.source
    if source in (None, "probe"):
        return None
    carried = facts.collected.carries or []
    if needs is None:
        return verdict(Status.SKIP, "not in the report", {"source": source})
    missing = [n for n in needs if not any(n == c or n.startswith(c + ".") for c in carried)]
    if not missing:
        return None
    words = ", ".join(REPORT_WORDS.get(n, n) for n in missing)
    return verdict(
        Status.SKIP, f"not in the report (needs {words})", {"source": source, "missing": missing}
    )


# Companions built against one torch release (C++ ABI): reinstalled with torch, pinned exactly.
PAIRED = ("torchvision", "torchaudio", "torchtext")
# Packages that carry a CUDA local tag (+cu128) on the wheel indexes.
TAGGED = ("torch", "torchvision", "torchaudio")


def installed_family(facts: Facts) -> list[str]:
    """torch plus the companions that are installed and must come from the same index."""
    dists = facts.packages.distributions
    return ["torch"] + [p for p in PAIRED if p in dists]


def torch_version_of(facts: Facts) -> str | None:
    installed = facts.packages.distributions.get("torch")
    return facts.torch.version or (installed.version if installed else None)


def pinned_family(
    facts: Facts, release: str | None = None, variant: str | None = None
) -> list[str]:
    """Exact requirement strings for torch and its installed companions, so a fix never moves
    torch to another release by accident: this exact version, or ``release``'s newest patch.
    A companion with no release for that torch is left out (installing it would move torch)."""
    version = compat.public_version(torch_version_of(facts))
    current = compat.torch_minor(version)
    release = release or current
    # A source build (2.7.0a0+git…) has no wheel of its own version: take the release's newest.
    released = bool(version and re.fullmatch(r"\d+\.\d+\.\d+", version))
    exact = version if release == current and released else compat.latest_patch(release or "")
    tagged = bool(variant and release and compat.index_args(release, variant)[1])
    pins = []
    for pkg in installed_family(facts):
        pin = exact if pkg == "torch" else compat.companion_version(pkg, exact)
        if not pin:
            continue
        tag = f"+{variant}" if tagged and pkg in TAGGED else ""
        pins.append(quote(facts, f"{pkg}=={pin}{tag}"))
    return pins


def unpaired_companions(facts: Facts, release: str | None = None) -> list[str]:
    """Installed companions that have no release built for ``release`` (torchaudio on 2.12+)."""
    release = release or compat.torch_minor(torch_version_of(facts))
    return [
        p for p in installed_family(facts)[1:] if release and not compat.companion_minor(p, release)
    ]


def current_variant(facts: Facts) -> str | None:
    """The wheel index the installed torch came from: its local tag, else what it was built with
    (PyPI's Linux wheel has no tag but is a CUDA build); None when that cannot be told."""
    version = torch_version_of(facts)
    if version and "+" in version:
        return version.split("+", 1)[1]
    cuda = facts.torch.build.cuda
    if cuda:
        return "cu" + "".join(str(p) for p in compat.parse_version(cuda)[:2])
    return "cpu" if facts.torch.build.variant == "cpu" else None


def install_command(
    facts: Facts, variant: str, release: str | None = None, force: bool = True
) -> str:
    """pip install of torch and its installed companions, pinned exactly, from one wheel index."""
    release = release or compat.torch_minor(torch_version_of(facts)) or compat.newest_release()
    pkgs = " ".join(pinned_family(facts, release, variant))
    index, _ = compat.index_args(release, variant)
    flag = " --force-reinstall" if force else ""
    return f"{python_cmd(facts)} install{flag} {pkgs} {index}"


def reinstall_torch(facts: Facts, variant: str, why: str, release: str | None = None) -> Remedy:
    """Reinstall torch (and its installed companions) from one wheel index, versions pinned."""
    which = f"torch {compat.latest_patch(release)}" if release else "torch"
    companions = " and its companions" if len(installed_family(facts)) > 1 else ""
    text = f"{why} Reinstall {which}{companions} from the {variant} index so they match each other."
    commands = [install_command(facts, variant, release)]
    orphans = unpaired_companions(facts, release)
    if orphans:
        text += f" No {' or '.join(orphans)} release is built for that torch: remove it."
        commands.insert(0, f"{python_cmd(facts)} uninstall -y {' '.join(orphans)}")
    return Remedy(text, tuple(commands))


def gpu_capabilities(facts: Facts) -> list[tuple[int, int]]:
    return [(g.capability[0], g.capability[1]) for g in nvml_gpus(facts) if g.capability]


def wheel_for(
    facts: Facts,
    capabilities: list[tuple[int, int]] | None = None,
    any_driver: bool = False,
    any_python: bool = False,
) -> compat.WheelChoice | None:
    """The CUDA wheel the detected driver serves (any driver with ``any_driver``: what to install
    after a driver upgrade), whose arch list covers the GPUs and that has a wheel for this Python
    (any Python with ``any_python``)."""
    if capabilities is None:
        capabilities = gpu_capabilities(facts)
    driver = None if any_driver else facts.nvml.driver_version
    python = None if any_python else facts.platform.python_version
    return compat.pick_wheel(torch_version_of(facts), driver, capabilities, python)


def keep_driver_fixes(
    facts: Facts, capabilities: list[tuple[int, int]] | None, why: str
) -> list[Remedy]:
    """A wheel this driver serves: for this Python, else in an environment with another Python."""
    choice = wheel_for(facts, capabilities)
    if choice:
        return [install_wheel(facts, choice, why)]
    other = wheel_for(facts, capabilities, any_python=True)
    if not other:
        return []
    lo, hi = compat.RELEASES[other.release].python
    version = compat.latest_patch(other.release)
    index, tagged = compat.index_args(other.release, other.variant)
    tag = f"+{other.variant}" if tagged else ""
    env = f"venv-torch{other.release}"
    return [
        Remedy(
            f"{why} This driver runs torch {version} ({other.variant}), which has wheels for "
            f"Python {lo}–{hi} only: create an environment with such a Python and install it.",
            (
                f"python{hi} -m venv {env}",
                f"{env}/bin/python -m pip install 'torch=={version}{tag}' {index}",
                f"torchdoctor check --python {env}/bin/python",
            ),
        )
    ]


def wheel_fixes(facts: Facts, capabilities: list[tuple[int, int]] | None, why: str) -> list[Remedy]:
    """The smallest change that works, in order: a wheel this driver serves (for this Python,
    else another); a driver upgrade and the wheel it enables; a source build only when no
    published wheel covers the GPUs."""
    fixes = keep_driver_fixes(facts, capabilities, why)
    if fixes and fixes[0].commands[0].startswith(python_cmd(facts)):
        return fixes
    later = wheel_for(facts, capabilities, any_driver=True)
    if later:
        need = compat.min_driver(later.variant)
        fixes += [
            upgrade_driver(need, f": the {later.variant} wheels need it"),
            install_wheel(facts, later, f"{why} Then, with the new driver:"),
        ]
    if not fixes:
        caps = " ".join(f"{c[0]}.{c[1]}" for c in capabilities or gpu_capabilities(facts))
        fixes.append(
            Remedy(
                f"{why} No published wheel covers these GPUs; build torch from source with "
                f'TORCH_CUDA_ARCH_LIST="{caps}".'
            )
        )
    return fixes


def install_wheel(facts: Facts, choice: compat.WheelChoice, why: str) -> Remedy:
    """reinstall_torch for a WheelChoice: same release when it fits, else the one that does."""
    current = compat.torch_minor(torch_version_of(facts))
    release = None if choice.release == current else choice.release
    caveat = " (through minor-version compatibility)" if choice.support == "minor_compat" else ""
    return reinstall_torch(
        facts, choice.variant, f"{why} The {choice.variant} build fits{caveat}.", release
    )


def upgrade_driver(need: str | None, then: str = "", facts: Facts | None = None) -> Remedy:
    """Driver upgrades are OS-specific (Windows and WSL2 take the Windows driver); the command
    after it confirms the version."""
    return Remedy(
        f"Upgrade the NVIDIA driver to {need or 'a newer release'} or later "
        f"({driver_install_hint(facts)}){then}.",
        ("nvidia-smi",),
    )


def nvml_gpus(facts: Facts) -> list[NvmlDevice]:
    return facts.nvml.devices if facts.nvml.status == "ok" else []


def torch_ok(facts: Facts) -> bool:
    return facts.torch.status == "ok"


def torch_unavailable(facts: Facts) -> Verdict:
    """The verdict for a torch-dependent check when torch itself could not be examined."""
    status = facts.torch.status or "unknown"
    return verdict(Status.SKIP, f"torch could not be examined ({status}); see torch.install")


def probe_stuck(facts: Facts, stages: tuple[str, ...]) -> Verdict | None:
    """An ``error`` verdict when the probe hung or died inside one of ``stages``."""
    probe = facts.probe.torch
    stuck = probe.unfinished_stage
    if probe.status in ("timeout", "crashed", "failed") and stuck in stages:
        how = {
            "timeout": "did not finish before the deadline",
            "crashed": f"was killed by {probe.signal or 'a signal'}",
            "failed": f"exited with code {probe.returncode}",
        }[probe.status]
        return verdict(
            Status.ERROR,
            f"the torch probe {how} while running stage '{stuck}'",
            {"probe": probe.raw},
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


def stage_error(facts: Facts, stage: str) -> ProbeError | None:
    return facts.torch.stage_errors.get(stage)
