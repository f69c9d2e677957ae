"""What check modules share: the context they judge under and the remedies they keep proposing."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from torchdoctor.data import compat, driver_archs, gpu_names
from torchdoctor.report import evidence
from torchdoctor.report.result import Remedy, Status, Verdict, verdict

from ..record import Facts
from ..record.base import ProbeError
from ..record.nvml import NvmlDevice
from ..record.report import ReportEvidence


@dataclass(frozen=True)
class Context:
    """How to judge: what the environment is expected to provide."""

    expect: str = "auto"  # auto | cpu | cuda | mps | xpu
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


def grounded(facts: Facts, *paths: str) -> tuple[str, ...]:
    """A remedy's evidence: those of ``paths`` that name a fact present in these facts, and the
    ``report.evidence.N`` read from them."""
    return cite(facts, *evidence.present(facts.raw, *paths))


def said(facts: Facts, *paths: str) -> list[tuple[str, ReportEvidence]]:
    """torch's own words read on a live check from the facts at ``paths`` (torch's warnings, its
    import error): (``report.evidence.N``, record) pairs, as ``pasted`` gives a paste's."""
    return [
        (f"report.evidence.{i}", e)
        for i, e in enumerate(facts.report.evidence)
        if e.source and e.source in paths
    ]


def cite(facts: Facts, *paths: str) -> tuple[str, ...]:
    """``paths`` and the ``report.evidence.N`` read from them: a remedy resting on torch's words
    names them as on a paste."""
    return (*paths, *(p for p, _ in said(facts, *paths) if p not in paths))


def torch_version_path(facts: Facts) -> str:
    """Where the examined torch's version was read: the probe, else the installed metadata."""
    return "torch.version" if facts.torch.version else "packages.distributions.torch.version"


def gpu_paths(facts: Facts, field: str = "capability") -> tuple[str, ...]:
    """``nvml.devices.N.<field>`` for every GPU NVML listed."""
    return tuple(f"nvml.devices.{i}.{field}" for i in range(len(nvml_gpus(facts))))


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
    "(`--expect mps`), or run CUDA work on a Linux or Windows machine with an NVIDIA GPU.",
    evidence=("platform.system",),
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


def not_in_report(
    facts: Facts, needs: tuple[str, ...] | None, kinds: tuple[str, ...] = ()
) -> Verdict | None:
    """For facts read from a pasted report (collect_env): a skip when the report does not carry
    every fact path in ``needs`` (None: the check never declared what it judges), unless torch's
    own words pasted with it are of a kind the check judges (``kinds``). Never a guess."""
    source = facts.collected.source
    if source in (None, "probe") or pasted(facts, *kinds):
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


# The local tags of download.pytorch.org's wheel indexes (cu128, rocm6.2, cpu, xpu).
_WHEEL_TAG = re.compile(r"cu\d{2,3}|rocm\d+(?:\.\d+){0,2}|cpu|xpu")


def wheel_tag(version: str | None) -> str | None:
    """'cu128' for '2.7.1+cu128'; None for a source or vendor build ('1.7.0a0+9ddd3df',
    '2.0.0a0+ec3941ad.nv23.02'): its local version is a git hash, not a wheel index."""
    tag = (version or "").partition("+")[2]
    return tag if _WHEEL_TAG.fullmatch(tag) else None


def current_variant(facts: Facts) -> str | None:
    """The wheel index the installed torch came from: its local tag, else what it was built with
    (PyPI's Linux wheel has no tag but is a CUDA build); None when that cannot be told."""
    version = torch_version_of(facts)
    if version and wheel_tag(version):
        return wheel_tag(version)
    cuda = facts.torch.build.cuda
    if cuda:
        return "cu" + "".join(str(p) for p in compat.parse_version(cuda)[:2])
    return "cpu" if facts.torch.build.variant == "cpu" else None


def install_command(
    facts: Facts, variant: str, release: str | None = None, force: bool = True
) -> str:
    """pip install of torch and its installed companions, pinned exactly, from one wheel index."""
    release = release or compat.torch_minor(torch_version_of(facts)) or compat.newest_release()
    if facts.platform.system == "Darwin" and facts.platform.machine == "x86_64":
        # An Intel Mac: no wheel after the last Intel release would install (pytorch/pytorch#149260).
        release = min(release, compat.INTEL_MAC_RELEASE, key=compat.parse_version)
    pkgs = " ".join(pinned_family(facts, release, variant))
    index, _ = compat.index_args(release, variant)
    flag = " --force-reinstall" if force else ""
    return f"{python_cmd(facts)} install{flag} {pkgs} {index}"


def reinstall_torch(
    facts: Facts,
    variant: str,
    why: str,
    release: str | None = None,
    because: tuple[str, ...] = (),
) -> Remedy:
    """Reinstall torch (and its installed companions) from one wheel index, versions pinned;
    ``because`` is the evidence of the problem it answers."""
    which = f"torch {compat.latest_patch(release)}" if release else "torch"
    companions = " and its companions" if len(installed_family(facts)) > 1 else ""
    text = f"{why} Reinstall {which}{companions} from the {variant} index so they match each other."
    commands = [install_command(facts, variant, release)]
    orphans = unpaired_companions(facts, release)
    if orphans:
        text += f" No {' or '.join(orphans)} release is built for that torch: remove it."
        commands.insert(0, f"{python_cmd(facts)} uninstall -y {' '.join(orphans)}")
    family = [f"packages.distributions.{p}.version" for p in installed_family(facts)[1:]]
    ev = (*because, *grounded(facts, torch_version_path(facts), *family))
    return Remedy(text, tuple(commands), tuple(dict.fromkeys(ev)))


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


def wheel_evidence(facts: Facts, driver: bool = True) -> tuple[str, ...]:
    """What a wheel choice rests on: the GPUs it must cover, the Python it must install on, and
    (unless it is for after a driver upgrade) the driver that must serve it."""
    paths = (*gpu_paths(facts), "platform.python_version", torch_version_path(facts))
    return grounded(facts, *(("nvml.driver_version",) if driver else ()), *paths)


def keep_driver_fixes(
    facts: Facts,
    capabilities: list[tuple[int, int]] | None,
    why: str,
    because: tuple[str, ...] = (),
) -> list[Remedy]:
    """A wheel this driver serves: for this Python, else in an environment with another Python."""
    because = (*because, *wheel_evidence(facts))
    choice = wheel_for(facts, capabilities)
    if choice:
        return [install_wheel(facts, choice, why, because)]
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
            tuple(dict.fromkeys(because)),
        )
    ]


def wheel_fixes(
    facts: Facts,
    capabilities: list[tuple[int, int]] | None,
    why: str,
    because: tuple[str, ...] = (),
) -> list[Remedy]:
    """The smallest change that works, in order: a wheel this driver serves (for this Python,
    else another); a driver upgrade and the wheel it enables; a source build only when no
    published wheel covers the GPUs. ``because`` is the evidence of the problem answered."""
    fixes = keep_driver_fixes(facts, capabilities, why, because)
    if fixes and fixes[0].commands[0].startswith(python_cmd(facts)):
        return fixes
    later = wheel_for(facts, capabilities, any_driver=True)
    if later:
        need = compat.min_driver(later.variant)
        then = (*because, *wheel_evidence(facts, driver=False))
        fixes += [
            upgrade_driver(need, f": the {later.variant} wheels need it", facts, because),
            install_wheel(facts, later, f"{why} Then, with the new driver:", then),
        ]
    if not fixes:
        caps = " ".join(f"{c[0]}.{c[1]}" for c in capabilities or gpu_capabilities(facts))
        fixes.append(
            Remedy(
                f"{why} No published wheel covers these GPUs; build torch from source with "
                f'TORCH_CUDA_ARCH_LIST="{caps}".',
                evidence=(*because, *grounded(facts, *gpu_paths(facts))),
            )
        )
    return fixes


def install_wheel(
    facts: Facts, choice: compat.WheelChoice, why: str, because: tuple[str, ...] = ()
) -> Remedy:
    """reinstall_torch for a WheelChoice: same release when it fits, else the one that does."""
    current = compat.torch_minor(torch_version_of(facts))
    release = None if choice.release == current else choice.release
    caveat = " (through minor-version compatibility)" if choice.support == "minor_compat" else ""
    return reinstall_torch(
        facts, choice.variant, f"{why} The {choice.variant} build fits{caveat}.", release, because
    )


def _gpu_names(facts: Facts, indices: list[int]) -> str:
    gpus = nvml_gpus(facts)
    return " and ".join(gpus[i].name or f"GPU {i}" for i in indices)


def _dropping_upgrade(facts: Facts, need: str, last: int, because: tuple[str, ...]) -> Remedy:
    """A driver upgrade past the last branch of a present GPU: name what it gives up and what
    else there is (hide that GPU; keep the last branch and a wheel covering every GPU)."""
    caps = gpu_capabilities(facts)
    dropped = driver_archs.dropped_by(driver_archs.branch(need) or 0, caps)
    kept = [i for i in range(len(caps)) if i not in dropped]
    names = _gpu_names(facts, dropped)
    # The newest driver of the last branch that keeps every GPU (any release of that branch).
    cover_all = compat.pick_wheel(torch_version_of(facts), f"{last}.999", caps)
    text = (
        f"Upgrade the NVIDIA driver to {need} or later only if you give up the {names}: R{last} "
        "is the last driver branch that runs it. To keep using the other GPUs with this torch, "
        "hide it from the job (CUDA numbers the rest in PCI order)."
    )
    if cover_all:
        text += (
            f" To keep every GPU, stay on an R{last} driver with torch "
            f"{compat.latest_patch(cover_all.release)} from the {cover_all.variant} index."
        )
    else:
        text += " No single torch wheel covers all of these GPUs with one driver."
    hide = ("export CUDA_DEVICE_ORDER=PCI_BUS_ID",)
    hide += (f"export CUDA_VISIBLE_DEVICES={','.join(map(str, kept))}",) if kept else ()
    return Remedy(text, (*hide, "nvidia-smi"), because)


def upgrade_driver(
    need: str | None,
    then: str = "",
    facts: Facts | None = None,
    because: tuple[str, ...] = (),
) -> Remedy:
    """Driver upgrades are OS-specific (Windows and WSL2 take the Windows driver); the command
    after it confirms the version. A branch that drops a present GPU is named, never implied."""
    last = driver_archs.last_branch_for(gpu_capabilities(facts)) if facts else None
    because = (*because, *(wheel_evidence(facts) if facts else ()))
    because = tuple(dict.fromkeys(because))
    if facts and need and last and (driver_archs.branch(need) or 0) > last:
        return _dropping_upgrade(facts, need, last, because)
    cap = ""
    if facts and last:
        limited = [
            i
            for i, c in enumerate(gpu_capabilities(facts))
            if driver_archs.supports(last + 1, c) is False
        ]
        cap = f", but stay on the R{last} branch: later ones drop the {_gpu_names(facts, limited)}"
    return Remedy(
        f"Upgrade the NVIDIA driver to {need or 'a newer release'} or later{cap} "
        f"({driver_install_hint(facts)}){then}.",
        ("nvidia-smi",),
        because,
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
                    grounded(facts, "probe.torch.status", "probe.torch.unfinished_stage"),
                )
            ],
        )
    return None


def stage_error(facts: Facts, stage: str) -> ProbeError | None:
    return facts.torch.stage_errors.get(stage)


def pasted(facts: Facts, *kinds: str) -> list[tuple[str, ReportEvidence]]:
    """torch's own words pasted with a report, of these kinds: (fact path, record) pairs, the
    path being what a remedy resting on the line names (``report.evidence.3``)."""
    return [
        (f"report.evidence.{i}", e) for i, e in enumerate(facts.report.evidence) if e.kind in kinds
    ]


def quoted(found: list[tuple[str, ReportEvidence]]) -> dict[str, str]:
    """Details that quote each evidence line, keyed by its fact path."""
    return {path: e.line or "" for path, e in found}


def device_capability(name: str | None, capability: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """A GPU's compute capability: what NVML or torch said, else what its product name fixes
    (an old driver's NVML cannot say it; a pasted report names GPUs only)."""
    return tuple(capability) or (gpu_names.capability(name) or ())


# No PyTorch wheel was ever built below sm_30 (Kepler): a GPU under it runs no wheel at all.
EVER_FLOOR = (3, 0)


def gpus_below_every_wheel(facts: Facts) -> bool:
    """Every GPU NVIDIA's tools list is older than any GPU a PyTorch wheel was built for: no
    driver update and no wheel makes torch use it (its last driver predates the CUDA torch uses)."""
    caps = [device_capability(g.name, g.capability) for g in nvml_gpus(facts)]
    return bool(caps) and all(len(c) == 2 and c < EVER_FLOOR for c in caps)


def no_driver_helps(facts: Facts) -> Remedy:
    return Remedy(
        "No driver helps: the GPU is older than any PyTorch wheel supports (see cuda.devices); "
        "use the CPU build of torch.",
        evidence=("nvml.driver_version", "nvml.devices.0.name"),
    )
