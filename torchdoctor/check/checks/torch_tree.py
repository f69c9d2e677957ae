"""One torch directory holding two installs' files: libraries an older torch left in torch/lib
(pytorch/pytorch#10234: torch 0.4's libtorch.so.1 beside the new build, 'undefined symbol:
_ZTIN2at4TypeE'), or conda's ``pytorch`` and ``pytorch-nightly`` packages both installed, each
writing the same torch package (pytorch/pytorch#12031). The imported torch is a mix of two
builds: an import error, or the older release's version and attributes."""

from __future__ import annotations

from torchdoctor.report.result import Problem, Remedy, Status

from ..record import Facts
from .common import grounded, python_cmd, quote

# conda package names that install the torch Python package over one another.
CONDA_TWINS = ("pytorch", "pytorch-nightly")


def _leftovers(facts: Facts) -> list[tuple[int, str, str]]:
    """(distribution index, its location, file) for each torch library its RECORD does not list."""
    return [
        (i, d.location, name)
        for i, d in enumerate(facts.packages.torch_distributions)
        if d.location
        for name in d.leftover_libs or ()
    ]


def _path(facts: Facts, location: str, name: str) -> str:
    sep = "\\" if facts.platform.system == "Windows" else "/"
    return sep.join((location.rstrip("/\\"), "torch", "lib", name))


def _remove(facts: Facts, path: str) -> str:
    if facts.platform.system == "Windows":
        return f"del {quote(facts, path)}"
    return f"rm -f {quote(facts, path)}"


def _leftover_problem(facts: Facts, status: Status) -> Problem | None:
    found = _leftovers(facts)
    if not found:
        return None
    paths = [_path(facts, loc, name) for _, loc, name in found]
    because = grounded(
        facts,
        *{f"packages.torch_distributions.{i}.leftover_libs" for i, _, _ in found},
        *{f"packages.torch_distributions.{i}.metadata" for i, _, _ in found},
    )
    pip = python_cmd(facts)
    remove = Remedy(
        "These libraries are not the installed torch's (its RECORD does not list them): an older "
        "install left them, and the loader can take them for torch's own. Delete them; the "
        "installed torch keeps every file it installed.",
        tuple(_remove(facts, p) for p in paths),
        because,
    )
    clean = Remedy(
        "Or uninstall torch until pip says it is not installed, delete what is left of the torch "
        "directory, and reinstall it (or recreate the environment).",
        (f"{pip} uninstall -y torch",),
        because,
    )
    names = ", ".join(name for _, _, name in found)
    why = (
        f"torch/lib holds libraries the installed torch did not install ({names}): files of an "
        "earlier install, which the loader mixes with this one"
    )
    return Problem("duplicate-installs", status, why, [remove, clean])


def _conda_twins_problem(facts: Facts) -> Problem | None:
    conda = facts.platform.conda_packages or {}
    if not all(name in conda for name in CONDA_TWINS):
        return None
    version = facts.torch.version or ""
    keep = "pytorch-nightly" if "dev" in version else "pytorch"
    drop = next(n for n in CONDA_TWINS if n != keep)
    channel = "pytorch-nightly" if keep == "pytorch-nightly" else "pytorch"
    because = grounded(
        facts, *(f"platform.conda_packages.{n}" for n in CONDA_TWINS), "torch.version"
    )
    fix = Remedy(
        f"conda's {drop} and {keep} packages both install the torch package, over one another: "
        f"remove {drop}, then reinstall {keep} so its files are whole again (or use a fresh "
        "environment).",
        (f"conda remove -y {drop}", f"conda install -y --force-reinstall {keep} -c {channel}"),
        because,
    )
    listing = ", ".join(f"{n} {conda[n]}" for n in CONDA_TWINS)
    why = f"conda has two packages that install torch ({listing}): its files are a mix of both"
    return Problem("duplicate-installs", Status.FAIL, why, [fix])


def problems(facts: Facts, status: Status = Status.WARN) -> list[Problem]:
    """The mixed-tree problems; ``status`` for leftovers (FAIL once torch failed to import)."""
    found = (_leftover_problem(facts, status), _conda_twins_problem(facts))
    return [p for p in found if p]


def remedies(facts: Facts) -> list[Remedy]:
    """For an import error: the remedies of a mixed tree, if these facts show one."""
    return [r for p in problems(facts, Status.FAIL) for r in p.remedies]
