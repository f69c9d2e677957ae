"""torch.distributor: do torch and the packages compiled against it come from one distributor?

torchvision, torchaudio and PyG's packages link against torch's C++ symbols, and two builds of one
torch release by different distributors do not export the same ones: torchaudio from the pytorch
channel under Anaconda's pytorch (pytorch/audio#3335), PyG's wheels under conda-forge's pytorch
(rusty1s/pytorch_scatter#470) or NGC's 2.4.0a0+07cecf4168 (rusty1s/pytorch_scatter#462) fail to
load with ``undefined symbol``. Who built each is torchdoctor.check.distributor's decision.

A companion from another distributor warns only when its import fails; PyG's wheels, built for
PyTorch's own torch, warn beside any other torch (their maintainer's answer in both threads).
"""

from __future__ import annotations

import re

from torchdoctor.data import compat
from torchdoctor.data import distributors as dist
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..distributor import CONDA_NAMES, PYG, Origin, mixed, package_origin, torch_origin, words
from ..record import Facts
from .common import (
    Context,
    current_variant,
    grounded,
    pasted,
    python_cmd,
    quote,
    reinstall_torch,
)

ID = "torch.distributor"
TITLE = "Who built torch and its compiled companions"
ORDER = 25  # after torch.install: a companion's own failure is told there first
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("packages.distributions",)
FINDINGS = {
    "companion-mix": "torchvision or torchaudio from another distributor than torch fails to load",
    "pyg-wheel-mix": "a PyG wheel built for PyTorch's own torch beside another distributor's torch",
}
COMPANIONS = ("torchvision", "torchaudio", "torchtext")
# The pytorch channel's last release (it stopped publishing after 2.5; conda_build.py) and the
# first whose CUDA builds take `pytorch-cuda` from the nvidia channel, not `cudatoolkit`.
LAST_CONDA_RELEASE = (2, 5)
FIRST_PYTORCH_CUDA = (1, 13)


def _release_of(facts: Facts, origin: Origin) -> str | None:
    """The torch release a reinstall keeps: the installed one, or for a source or vendor build
    (2.4.0a0+07cecf4168) its release's newest patch."""
    version = facts.torch.version or (
        facts.packages.distributions["torch"].version
        if "torch" in facts.packages.distributions
        else None
    )
    public = compat.public_version(version)
    conda = facts.packages.conda.get("pytorch") or facts.packages.conda.get("torch")
    if origin.channel and conda and conda.version:
        public = conda.version  # conda-forge's torch says 1.13.1.post200 for its 1.13.1
    if public and re.fullmatch(r"\d+\.\d+\.\d+", public):
        return public
    minor = compat.torch_minor(public)
    return compat.latest_patch(minor) if minor else None


def _load_error(facts: Facts, pkg: str) -> tuple[str, tuple[str, ...]] | None:
    """The companion's failure to load: its import error in the probe, or a pasted loader error
    naming its library."""
    probed = facts.torch.companions.get(pkg)
    if probed and probed.error and probed.error.message:
        first = probed.error.message.strip().splitlines()[0][:300]
        return f"{probed.error.type or 'Error'}: {first}", grounded(
            facts, f"torch.companions.{pkg}.error.message"
        )
    for path, record in pasted(facts, "undefined-symbol"):
        if re.search(rf"[\\/]{pkg}[\\/]", record.library or ""):
            return f"{record.library}: undefined symbol: {record.symbol}", (path,)
    return None


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _pytorch_channel(
    facts: Facts, release: str | None, pkgs: list[str], pyg_too: str = ""
) -> Remedy | None:
    """torch and ``pkgs`` from the pytorch channel, as pytorch.org's previous-versions page
    installs them, keeping torch's release and CPU/CUDA variant; None past its last release or
    for a variant it never built."""
    v = compat.parse_version(release)
    if not release or len(v) < 2 or v[:2] > LAST_CONDA_RELEASE or v[:2] < (1, 8):
        return None
    specs = [f"pytorch=={release}"]
    for pkg in pkgs:
        pin = compat.companion_version(pkg, release)
        if not pin:
            return None  # no such companion release for that torch
        specs.append(f"{pkg}=={pin}")
    cuda = facts.torch.build.cuda
    channels = "-c pytorch"
    if facts.torch.build.hip or facts.torch.build.variant in ("xpu",):
        return None  # the pytorch channel built CPU and CUDA only
    if cuda:
        digits = "".join(str(p) for p in compat.parse_version(cuda)[:2])
        row = compat.RELEASES.get(f"{v[0]}.{v[1]}")
        if not row or f"cu{digits}" not in row.variants:
            return None  # no such CUDA build of that release
        mm = compat.cuda_major_minor(cuda)
        if v[:2] >= FIRST_PYTORCH_CUDA:
            specs.append(f"pytorch-cuda={mm}")
            channels += " -c nvidia"
        else:
            specs.append(f"cudatoolkit={mm}")
    elif facts.platform.system != "Darwin":
        specs.append("cpuonly")  # the pytorch channel's CPU builds on Linux and Windows
    build = f"CUDA {compat.cuda_major_minor(cuda)}" if cuda else "CPU"
    what = _listed([f"torch {release}", *pkgs])
    return Remedy(
        f"Take {what} from one distributor: PyTorch's own conda channel, the {build} build, at "
        f"the releases built together{pyg_too}.",
        (f"conda install {' '.join(specs)} {channels}",),
        grounded(
            facts,
            "packages.conda.pytorch.channel",
            "packages.conda.pytorch.version",
            "torch.version",
            "torch.build.cuda",
            *(f"packages.distributions.{p}.version" for p in pkgs),
        ),
    )


def _pip_installed(facts: Facts, pkgs: list[str]) -> list[str]:
    """Those of ``pkgs`` that pip, not conda, installed (conda's record would name them)."""
    conda = facts.packages.conda
    return [
        p
        for p in pkgs
        if not any((c := conda.get(n)) and c.channel != "pypi" for n in CONDA_NAMES.get(p, (p,)))
    ]


def _conda_forge(facts: Facts, release: str | None, pkgs: list[str]) -> Remedy | None:
    """torch and ``pkgs`` all from conda-forge, torch's release and variant kept; None where
    conda-forge has no build of one of them."""
    if not release:
        return None
    for pkg in pkgs:
        since = dist.CONDA_FORGE_SINCE.get(pkg)
        if since and compat.parse_version(release) < compat.parse_version(since):
            return None
        if pkg in PYG and pkg not in dist.CONDA_FORGE_PYG:
            return None
    variant = "cuda*" if facts.torch.build.cuda else "cpu*"
    specs = [quote(facts, f"conda-forge::pytorch={release}={variant}")]
    specs += [f"conda-forge::{dist.CONDA_FORGE_PYG.get(p, p)}" for p in pkgs]
    commands = []
    pip_ones = _pip_installed(facts, pkgs)
    if pip_ones:  # conda would install over pip's files, and pip's copy would stay
        commands.append(f"{python_cmd(facts)} uninstall -y {' '.join(pip_ones)}")
    commands.append(f"conda install {' '.join(specs)}")
    return Remedy(
        f"Take {_listed([f'torch {release}', *pkgs])} all from conda-forge, whose packages "
        "are built against its own pytorch (the same CPU/CUDA variant).",
        tuple(commands),
        grounded(
            facts,
            "packages.conda.pytorch.channel",
            "torch.version",
            "torch.build.cuda",
            *(f"packages.distributions.{p}.version" for p in pkgs),
        ),
    )


def _official_pip(facts: Facts, origin: Origin, because: tuple[str, ...]) -> Remedy:
    """PyTorch's own wheels for torch and its installed companions, release and variant kept."""
    if facts.platform.externally_managed:
        # pip may not change a Python the OS manages (PEP 668): PyTorch's wheels go in a venv
        return Remedy(
            f"Use PyTorch's own build in a virtual environment: torch here is {words(origin)} "
            f"({origin.how}) in a Python the OS manages, which pip may not change.",
            ("python3 -m venv ~/.venvs/torch",),
            (*because, *grounded(facts, "platform.externally_managed")),
        )
    variant = current_variant(facts) or "cpu"
    return reinstall_torch(
        facts,
        variant,
        f"Use PyTorch's own build instead: torch here is {words(origin)} ({origin.how}).",
        because=because,
    )


def _pyg_source(facts: Facts, pkgs: list[str]) -> Remedy:
    """PyG's packages compiled here, against the installed torch."""
    pip = python_cmd(facts)
    commands = []
    for pkg in pkgs:
        git = dist.PYG_FROM_GIT.get(pkg)
        if git:
            commands.append(f"{pip} install --force-reinstall --no-build-isolation --no-deps {git}")
            continue
        version = compat.public_version(facts.packages.distributions[pkg].version)
        flags = f"--force-reinstall --no-cache-dir --no-build-isolation --no-deps --no-binary {pkg}"
        commands.append(f"{pip} install {flags} {quote(facts, f'{pkg}=={version}')}")
    cuda = facts.torch.build.cuda
    need = f"a C++ compiler and CUDA {cuda}'s nvcc" if cuda else "a C++ compiler"
    return Remedy(
        f"Build {', '.join(pkgs)} from source against the installed torch (needs {need}; "
        "--no-build-isolation so the build sees this torch, --no-deps so torch stays).",
        tuple(commands),
        grounded(facts, "torch.version", *(f"packages.distributions.{p}.version" for p in pkgs)),
    )


def _companion_source(facts: Facts, pkgs: list[str], release: str | None) -> Remedy | None:
    """The companions compiled here from their release tag, against the installed torch."""
    commands = []
    for pkg in pkgs:
        pin = compat.companion_version(pkg, release)
        repo = dist.SOURCE.get(pkg)
        if not pin or not repo:
            return None
        source = quote(facts, f"git+{repo}@v{pin}")
        flags = "--force-reinstall --no-build-isolation --no-deps"
        commands.append(f"{python_cmd(facts)} install {flags} {source}")
    return Remedy(
        f"Build {', '.join(pkgs)} from source against this torch, at the release made for torch "
        f"{release} (needs a C++ compiler{', and nvcc' if facts.torch.build.cuda else ''}).",
        tuple(commands),
        grounded(facts, "torch.version", *(f"packages.distributions.{p}.version" for p in pkgs)),
    )


def _fixes(
    facts: Facts, torch: Origin, pkgs: list[str], pyg: bool, because: tuple[str, ...]
) -> list[Remedy]:
    """Remedies that put torch and ``pkgs`` under one distributor, the whole family at once."""
    release = _release_of(facts, torch)
    family = [p for p in COMPANIONS if p in facts.packages.distributions and p not in pkgs]
    companions = [p for p in (*pkgs, *family) if p not in PYG]
    out: list[Remedy | None] = []
    # PyG's wheels then load: they are built for PyTorch's own torch
    pyg_too = f" ({_listed([p for p in pkgs if p in PYG])} as installed then fit)" if pyg else ""
    if pyg:
        out.append(_pyg_source(facts, pkgs))
    who = torch.distributor
    if who == dist.CONDA_FORGE:
        out += [_conda_forge(facts, release, [*companions, *(p for p in pkgs if p in PYG)])]
        out += [_pytorch_channel(facts, release, companions, pyg_too)]
    elif who in (dist.ANACONDA, dist.CONDA_OTHER):
        out += [_pytorch_channel(facts, release, companions, pyg_too)]
        out += [_conda_forge(facts, release, companions)] if not pyg else []
    elif who in (dist.CUSTOM, dist.DISTRO):
        out += [None if pyg else _companion_source(facts, pkgs, release)]
        out += [_official_pip(facts, torch, because)]
    elif torch.channel:  # PyTorch's own conda build: companions from its channel too
        out += [_pytorch_channel(facts, release, companions)]
    else:  # PyTorch's own wheel: its companions from its index
        out += [
            reinstall_torch(
                facts,
                current_variant(facts) or "cpu",
                f"{_listed(companions)} did not come from torch's own wheel index.",
                because=because,
            )
        ]
    return [r for r in out if r is not None]


def _with_because(remedies: list[Remedy], because: tuple[str, ...]) -> list[Remedy]:
    return [
        Remedy(r.text, r.commands, tuple(dict.fromkeys((*r.evidence, *because)))) for r in remedies
    ]


def check(facts: Facts, ctx: Context) -> Verdict:
    torch = torch_origin(facts)
    dists = facts.packages.distributions
    if not torch.distributor:
        return verdict(Status.SKIP, "who built torch cannot be told from these facts")
    details: dict[str, object] = {"torch": {"distributor": torch.distributor, "how": torch.how}}
    problems: list[Problem] = []
    quiet: list[str] = []
    for pkg in (p for p in COMPANIONS if p in dists):
        theirs = package_origin(facts, pkg)
        details[pkg] = {"distributor": theirs.distributor, "how": theirs.how}
        if not mixed(torch, theirs):
            continue
        said = f"{pkg} {dists[pkg].version} is {words(theirs)} ({theirs.how})"
        error = _load_error(facts, pkg)
        if not error:
            probed = facts.torch.companions.get(pkg)
            loads = "imports" if probed and probed.imported else "is not seen failing"
            quiet.append(f"{said}, beside {words(torch)} of torch, and {loads}")
            continue
        because = (*grounded(facts, *torch.evidence, *theirs.evidence), *error[1])
        why = f"{said} but torch is {words(torch)} ({torch.how}); {pkg} fails to load: {error[0]}"
        fixes = _with_because(_fixes(facts, torch, [pkg], False, because), because)
        problems.append(Problem("companion-mix", Status.WARN, why, fixes))
    wheels = [p for p in PYG if p in dists]
    mixed_pyg = []
    for pkg in wheels:
        theirs = package_origin(facts, pkg)
        details[pkg] = {"distributor": theirs.distributor, "how": theirs.how}
        if mixed(torch, theirs) and theirs.distributor == dist.OFFICIAL:
            mixed_pyg.append((pkg, theirs))
    if mixed_pyg:
        names = [p for p, _ in mixed_pyg]
        because = grounded(facts, *torch.evidence, *(e for _, o in mixed_pyg for e in o.evidence))
        listed = ", ".join(f"{p} {dists[p].version}" for p in names)
        why = (
            f"{listed}: PyG's wheels, built against PyTorch's own torch, but torch here is "
            f"{words(torch)} ({torch.how}); their libraries fail to load with `undefined symbol`"
        )
        fixes = _with_because(_fixes(facts, torch, names, True, because), because)
        problems.append(Problem("pyg-wheel-mix", Status.WARN, why, fixes))
    passed = f"torch is {words(torch)} ({torch.how})"
    if not problems and quiet:
        passed += "; " + "; ".join(quiet)
    elif not problems:
        passed += ", like the packages built against it"
    return from_problems(problems, details, passed)
