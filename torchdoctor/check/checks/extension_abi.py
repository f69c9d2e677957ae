"""A compiled extension that is not one of torch's companions (flash-attn, mmcv, detectron2,
torch-scatter, a project's own CUDA ops) built against another torch. Its import fails with the
loader's ``undefined symbol`` for one of torch's C++ symbols: the binary was linked against
another torch release (the atlas class ``new:extension-built-for-other-torch``: ten settled
threads, among them Dao-AILab/flash-attention#931, open-mmlab/mmdetection#3991 and #1189,
facebookresearch/detectron2#3710, rusty1s/pytorch_scatter#259 and #348). torchdoctor imports
only torch's companions, so the line comes from a pasted traceback."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain

from torchdoctor.data.torch_symbols import TORCH_OWN_MODULES, TORCH_SYMBOL
from torchdoctor.report.result import Problem, Remedy, Status

from .. import distributor
from ..record import Facts
from .common import current_variant, grounded, pasted, python_cmd, torch_version_of

SITE = ("site-packages", "dist-packages")
# PyG's compiled packages come from its own index, one page per torch minor release (X.Y.0) and
# variant (rusty1s/pytorch_scatter README, 2025-08; pages seen on data.pyg.org/whl).
PYG = ("torch_scatter", "torch_sparse", "torch_cluster", "torch_spline_conv", "pyg_lib")
# Modules whose pip name is not the module's (flash-attn's kernels, exllamav2's).
DISTRIBUTION = {"flash_attn_2_cuda": "flash-attn", "exllamav2_ext": "exllamav2"}
NOT_ON_PYPI = {
    "detectron2": "'git+https://github.com/facebookresearch/detectron2.git'",
    "pyg_lib": "'git+https://github.com/pyg-team/pyg-lib.git'",  # PyPI has no source of it
}


def module_of(library: str) -> tuple[str, bool]:
    """(the top-level module a compiled library belongs to, whether it is installed in a
    site-packages) from the library's path; a path outside one is a project's own build."""
    parts = [p for p in re.split(r"[\\/]", library) if p]
    for i, part in enumerate(parts[:-1]):
        if part in SITE:
            return parts[i + 1].split(".", 1)[0], True
    return (parts[-1].split(".", 1)[0] if parts else library), False


def _install(facts: Facts, module: str) -> str:
    """The command that puts a build for the installed torch in place, without touching torch
    (--no-deps: a resolver may otherwise replace torch with the release the package wants)."""
    pip = python_cmd(facts)
    name = distribution(module)
    if module in PYG and official_torch(facts):
        version = (torch_version_of(facts) or "").split("+", 1)[0]
        major_minor = ".".join(version.split(".")[:2])
        variant = current_variant(facts) or "cpu"
        index = f"https://data.pyg.org/whl/torch-{major_minor}.0+{variant}.html"
        # Binary only: PyPI holds only the source of these, at a higher version pip would prefer.
        return f"{pip} install --force-reinstall --no-deps --only-binary {name} {name} -f {index}"
    source = NOT_ON_PYPI.get(module, name)
    # From source, never a wheel built for some other torch; without build isolation the build
    # sees the installed torch rather than one pip would fetch for it.
    flags = f"--force-reinstall --no-cache-dir --no-build-isolation --no-deps --no-binary {name}"
    return f"{pip} install {flags} {source}"


def official_torch(facts: Facts) -> bool:
    """PyG's index builds for PyTorch's own torch: another distributor's (conda-forge, NGC's
    2.4.0a0+git) needs the package built from source (rusty1s/pytorch_scatter#462, #470).
    Unknown counts as PyTorch's own, the common case."""
    return distributor.torch_origin(facts).distributor in (None, distributor.OFFICIAL)


def distribution(module: str) -> str:
    """The pip name of a top-level module (flash_attn_2_cuda is flash-attn's)."""
    return DISTRIBUTION.get(module, module.replace("_", "-"))


def _pyg_fix(facts: Facts, module: str, because: tuple[str, ...]) -> Remedy:
    return Remedy(
        f"{distribution(module)} was built against another torch. Reinstall it from PyG's index "
        f"page for torch {torch_version_of(facts)} and its CUDA variant; torch is left as it is.",
        (_install(facts, module),),
        because,
    )


def _problem(facts: Facts, because: tuple[str, ...], library: str, symbol: str) -> Problem:
    """``library`` fails to load for want of torch's ``symbol``: the fix its kind of build needs
    (a PyG wheel, a package in site-packages, the project's own build)."""
    module, installed = module_of(library)
    torch = torch_version_of(facts) or "the installed torch"
    because = (*because, *grounded(facts, "torch.version"))
    name = distribution(module) if installed else module
    if installed and module in PYG and official_torch(facts):
        fix = _pyg_fix(facts, module, because)
    elif installed:
        fix = Remedy(
            f"{name} was built against another torch. Install the prebuilt wheel made for "
            f"exactly torch {torch} and its CUDA variant, or build it from source against the "
            "installed torch: the command below does that (it needs the CUDA toolkit and a "
            "compiler, can take long, and leaves torch as it is).",
            (_install(facts, module),),
            because,
        )
    else:
        fix = Remedy(
            f"{module} is a compiled part of the project, left over from a build against another "
            f"torch. Delete the project's build/ directory and its compiled .so files, then build "
            f"it again against torch {torch} (the project's install command, e.g. "
            "`pip install -v -e .`).",
            (),
            because,
        )
    why = (
        f"{name} ({library}) fails to load: {symbol}, which its binary expects and torch "
        f"{torch} does not have"
    )
    return Problem("extension-other-torch", Status.FAIL, why, [fix])


def _live(facts: Facts) -> Iterator[tuple[str, Problem]]:
    """Extensions whose files link to torch functions (or libraries) the installed torch lacks,
    as probes/extension_links.py read them: the loader's verdict before anything imports them."""
    for i, lib in enumerate(facts.compiled_extensions.mismatched):
        if not lib.path:
            continue
        if lib.needs_missing:
            symbol = f"library {lib.needs_missing[0]} (torch/lib has no such file)"
        elif lib.missing:
            more = f" and {lib.missing_count - 1} more" if (lib.missing_count or 0) > 1 else ""
            symbol = f"undefined symbol {lib.missing[0]}{more}"
        else:
            continue
        because = (f"compiled_extensions.mismatched.{i}",)
        yield module_of(lib.path)[0], _problem(facts, because, lib.path, symbol)


def _pasted(facts: Facts) -> Iterator[tuple[str, Problem]]:
    """Import errors pasted with a report that name a missing torch symbol."""
    for path, record in pasted(facts, "undefined-symbol"):
        if not record.library or not TORCH_SYMBOL.match(record.symbol or ""):
            continue
        module = module_of(record.library)[0]
        if module in TORCH_OWN_MODULES or module.startswith("libtorch"):
            continue
        symbol = f"undefined symbol {record.symbol}"
        yield module, _problem(facts, (path,), record.library, symbol)


# PyG's wheels name the torch they were built for in their local version: 2.0.9+pt19cu111 is
# for torch 1.9 and CUDA 11.1, 2.1.2+pt212cpu for torch 2.12 on the CPU.
PYG_TAG = re.compile(r"\+pt(\d)(\d{1,2})(cu\d{2,3}|cpu)?$")


def pyg_mismatch(facts: Facts, name: str, version: str) -> str | None:
    """Why the installed PyG wheel ``name`` does not fit the installed torch, or None."""
    tag = PYG_TAG.search(version)
    torch = torch_version_of(facts)
    if not tag or not torch:
        return None
    built = f"{tag.group(1)}.{tag.group(2)}"
    release = ".".join(torch.split("+", 1)[0].split(".")[:2])
    variant = current_variant(facts)
    if built != release:
        return f"{name} {version} is PyG's wheel for torch {built}, and torch {torch} is installed"
    if tag.group(3) and variant and tag.group(3) != variant:
        return f"{name} {version} is PyG's {tag.group(3)} wheel, and torch {torch} is {variant}"
    return None


def _pyg(facts: Facts) -> Iterator[tuple[str, Problem]]:
    """rusty1s/pytorch_scatter#259: a torch-1.9.1 index wheel under torch 1.10.0; seen live in
    the installed versions, before anything imports them."""
    for name, dist in facts.packages.distributions.items():
        module = name.replace("-", "_")
        why = pyg_mismatch(facts, name, dist.version) if module in PYG else None
        if why:
            because = grounded(facts, f"packages.distributions.{name}.version", "torch.version")
            fix = _pyg_fix(facts, module, because)
            yield module, Problem("extension-other-torch", Status.FAIL, why, [fix])


def _mixed_pyg(facts: Facts) -> set[str]:
    """PyG wheels (tagged +ptXY) beside a torch PyTorch did not build: torch.distributor's
    pyg-wheel-mix names them, with the source build; not reported twice."""
    if official_torch(facts):
        return set()
    dists = facts.packages.distributions
    return {
        name.replace("-", "_")
        for name, dist in dists.items()
        if name.replace("-", "_") in PYG and PYG_TAG.search(dist.version or "")
    }


def problems(facts: Facts) -> list[Problem]:
    """One problem per compiled extension built for another torch: a PyG wheel whose version
    names another torch, an extension whose file links to what torch lacks, or a pasted import
    error naming a missing torch symbol; torch's own libraries and its companions are judged
    elsewhere. One per module, the first source that names it."""
    found: dict[str, Problem] = {}
    for module, problem in chain(_pyg(facts), _live(facts), _pasted(facts)):
        if module not in _mixed_pyg(facts):
            found.setdefault(module, problem)
    return list(found.values())
