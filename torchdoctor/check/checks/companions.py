"""Companion packages (torchvision, torchaudio, torchtext, triton, xformers) against torch.

A companion carries compiled operators linked against one torch build: another torch release or
another CUDA variant fails at import (``operator torchvision::nms does not exist``) or at the
first call. Judged from the companion's own import in the probe, its Requires-Dist pin on torch,
the release tables, and the CUDA variant each was built for.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date

from torchdoctor.data import compat
from torchdoctor.data.distributors import SOURCE
from torchdoctor.report.result import Problem, Remedy, Status

from .. import requirements
from ..record import Facts
from ..record.packages import Distribution
from .common import (
    current_variant,
    grounded,
    python_cmd,
    quote,
    torch_version_of,
    torch_version_path,
    wheel_tag,
)

PACKAGES = ("torchvision", "torchaudio", "torchtext", "triton", "xformers")
# What torch.install reports for a companion, by its first reason (torch.install.<code>).
CODES = {
    "companion-import-error": "a companion package fails to import after torch",
    "companion-release": "a companion package built for another torch release",
    "companion-variant": "a companion package built for another CUDA variant than torch",
}


def _pin_on(dist: Distribution | None, name: str) -> str | None:
    """The version ``dist`` pins of ``name`` (torchvision's ``torch==2.13.0``)."""
    for text in dist.requires if dist else []:
        req = requirements.parse(text)
        if req and req.name == name and req.specifier.startswith(("==", "~=")):
            return req.specifier[2:].strip()
    return None


def variant_of(version: str | None, torch_version: str | None, system: str | None) -> str | None:
    """The index a build came from: its local tag, or for an untagged Linux wheel PyPI's variant
    of that torch release (PyPI's Linux torchvision is a CUDA build)."""
    if version and "+" in version:
        # A source build's local version is a git hash (0.8.0a0+a4736ea), not an index.
        return wheel_tag(version)
    if system in ("Windows", "Darwin"):
        return "cpu"  # PyPI's torchvision/torchaudio for Windows and macOS are CPU builds
    row = compat.release(torch_version)
    return row.pypi if row and system == "Linux" else None


def _pairing(facts: Facts, pkg: str, version: str, torch_version: str) -> str | None:
    """Why ``pkg`` ``version`` does not pair with this torch, from the pins and the tables."""
    dists = facts.packages.distributions
    public = compat.public_version(torch_version)
    if _same_nightly(version, torch_version):
        return None  # nightlies of one day pair, whatever their version numbers say
    if _development(torch_version) and _development(version):
        # Two main-branch builds pair by date, not number: torch's main was 1.13.0a0 a week
        # after its 1.12 branch cut while torchvision's nightly still said 0.13 (pytorch#78492).
        return None
    pin = _pin_on(dists.get(pkg), "torch")
    if pin and compat.parse_version(pin) != compat.parse_version(public):
        return f"{pkg} {version} requires torch=={pin}, not {public}"
    if pkg in ("torchvision", "torchaudio", "torchtext") and compat.release(torch_version):
        want = compat.companion_minor(pkg, torch_version)
        if want != compat.torch_minor(compat.public_version(version)):
            built_for = compat.torch_for_companion(pkg, version)
            what = f"built for torch {built_for}" if built_for else "not built for this torch"
            pair = f"pairs with {pkg} {want}.x" if want else f"has no {pkg} release"
            return f"{pkg} {version} is {what}; torch {public} {pair}"
    if pkg == "triton":
        want = _pin_on(dists.get("torch"), "triton")
        if want and compat.torch_minor(want) != compat.torch_minor(version):
            return f"triton {version} is installed; torch {public} requires triton {want}"
    return None


def _variant(facts: Facts, pkg: str, version: str, torch_version: str) -> str | None:
    """A companion built for another CUDA variant than torch (CUDA torchvision beside CPU torch)."""
    probed = facts.torch.companions.get(pkg)
    torch_cuda = facts.torch.build.cuda
    if probed and probed.cuda_known:
        theirs = probed.cuda
        if compat.cuda_major_minor(theirs) != compat.cuda_major_minor(torch_cuda):
            return (
                f"{pkg} {version} is built for {f'CUDA {theirs}' if theirs else 'the CPU'} but "
                f"torch {torch_version} for {f'CUDA {torch_cuda}' if torch_cuda else 'the CPU'}"
            )
        return None
    if pkg not in ("torchvision", "torchaudio"):
        return None
    own = facts.packages.conda.get(pkg)
    if own and own.channel and own.channel != "pypi":
        return None  # a conda build: its variant is in its build string, not PyPI's table
    system = facts.platform.system
    ours, theirs = current_variant(facts), variant_of(version, torch_version, system)
    if ours and theirs and ours != theirs:
        where = system or ""
        how = "" if "+" in version else f" (an untagged {where} wheel is PyPI's {theirs} build)"
        return f"{pkg} {version} is a {theirs} build{how} but torch {torch_version} is {ours}"
    return None


def _development(version: str | None) -> bool:
    """A nightly or a source build (1.13.0a0+gitcbdb694, 0.13.0.dev20220517), not a release."""
    return bool(re.search(r"\d(?:a|b|rc)\d|\.dev\d", version or ""))


def _source_fix(facts: Facts, pkg: str, torch_version: str) -> Remedy | None:
    """torch built from source (+git): no wheel is made for it, the companion is built here."""
    repo = SOURCE.get(pkg)
    if "+git" not in torch_version or not repo:
        return None
    flags = "--force-reinstall --no-build-isolation --no-deps"
    return Remedy(
        f"torch {torch_version} is a source build, which no {pkg} wheel is made for: build {pkg} "
        f"from source against it, from the commit of the same date as torch's (the command takes "
        f"the main branch).",
        (f"{python_cmd(facts)} install {flags} {quote(facts, f'git+{repo}')}",),
        grounded(facts, f"packages.distributions.{pkg}.version", torch_version_path(facts)),
    )


def _nightly(version: str | None) -> date | None:
    m = re.search(r"\.dev(\d{4})(\d{2})(\d{2})", version or "")
    return date(*map(int, m.groups())) if m else None


def _same_nightly(version: str, torch_version: str) -> bool:
    """Nightly companions are built each day against that day's torch (torchaudio's version
    number can lag torch's for months): same day or the next is a pair."""
    ours, theirs = _nightly(torch_version), _nightly(version)
    return bool(ours and theirs and abs((ours - theirs).days) <= 1)


def _import_error(facts: Facts, pkg: str) -> str | None:
    probed = facts.torch.companions.get(pkg)
    err = probed.error if probed else None
    if not err:
        return None
    first = (err.message or "").strip().splitlines()
    return f"import {pkg} fails: {err.type or 'Error'}: {first[0][:200] if first else ''}"


def _fix(facts: Facts, pkg: str, torch_version: str) -> Remedy:
    """Reinstall just the companion, at the exact version built for this torch, from torch's index."""
    pip = python_cmd(facts)
    variant = current_variant(facts)
    minor = compat.torch_minor(torch_version) or compat.newest_release()
    index = compat.index_args(minor, variant)[0] if variant else ""
    public = compat.public_version(torch_version)
    if pkg == "triton":
        want = _pin_on(facts.packages.distributions.get("torch"), "triton")
        spec = f"'triton=={want}'" if want else "triton"
        return Remedy(
            "Install the triton release torch pins (PyPI).",
            (f"{pip} install --force-reinstall --no-deps {spec}",),
            evidence=grounded(
                facts, f"packages.distributions.{pkg}.version", torch_version_path(facts)
            ),
        )
    if pkg == "xformers":
        # xformers pins torch exactly: with torch pinned, pip picks the xformers built for it.
        return Remedy(
            f"Install the xformers built for torch {public}, from torch's index, keeping torch.",
            (f"{pip} install 'torch=={public}' xformers {index}".rstrip(),),
            evidence=grounded(
                facts, f"packages.distributions.{pkg}.version", torch_version_path(facts)
            ),
        )
    source = _source_fix(facts, pkg, torch_version)
    if source:
        return source
    exact = compat.companion_version(pkg, torch_version)
    if not compat.release(torch_version):
        # torchdoctor's release tables start at torch 1.8: name the pairing, not a version.
        return Remedy(
            f"Reinstall {pkg} at the release built for torch {public}, from the same wheel index "
            f"as torch ({variant or 'its index'}); torchdoctor's tables do not go back that far.",
            evidence=(f"packages.distributions.{pkg}.version", "torch.version"),
        )
    if not exact:
        return Remedy(
            f"No {pkg} release is built for torch {public}: remove it, or move torch to a release "
            f"that has one.",
            (f"{pip} uninstall -y {pkg}",),
            evidence=grounded(
                facts, f"packages.distributions.{pkg}.version", torch_version_path(facts)
            ),
        )
    conda = _conda_channel(facts)
    if conda:
        return Remedy(
            f"Reinstall {pkg} {exact}, the build for torch {public}, from the conda channel torch "
            f"came from ({conda}).",
            (f"conda install -c {conda} {pkg}={exact}",),
            evidence=grounded(
                facts,
                f"packages.distributions.{pkg}.version",
                torch_version_path(facts),
                "packages.conda.pytorch.channel",
                "packages.conda.torch.channel",
            ),
        )
    tag = f"+{variant}" if variant and compat.index_args(minor, variant)[1] else ""
    # cmd.exe passes single quotes on literally; POSIX shells need them around ==.
    req = f"{pkg}=={exact}{tag}"
    spec = quote(facts, req) if facts.platform.system == "Windows" else f"'{req}'"
    return Remedy(
        f"Reinstall {pkg} {exact}, the build for torch {public}, from the same index as torch "
        "(--no-deps leaves torch as it is).",
        (f"{pip} install --force-reinstall --no-deps {spec} {index}".rstrip(),),
        evidence=grounded(
            facts, f"packages.distributions.{pkg}.version", torch_version_path(facts)
        ),
    )


def _conda_channel(facts: Facts) -> str | None:
    """The conda channel torch itself came from, when conda (not pip inside conda) installed it:
    a companion fix then goes through conda too, or the two package managers fight."""
    conda = facts.packages.conda
    own = conda.get("pytorch") or conda.get("torch")
    return own.channel if own and own.channel and own.channel != "pypi" else None


def _error_paths(facts: Facts, pkg: str) -> tuple[str, ...]:
    """The companion's import error and the torch's words read from it (report.evidence.N)."""
    return grounded(facts, f"torch.companions.{pkg}.error.message")


def problems(facts: Facts) -> list[Problem]:
    """A problem, with its fix, for each installed companion that does not fit the installed
    torch; its code names the first reason (the import error, else the release, else the variant)."""
    torch_version = torch_version_of(facts)
    dists = facts.packages.distributions
    out: list[Problem] = []
    if not torch_version:
        return out
    for pkg in PACKAGES:
        if pkg not in dists:
            continue
        version = dists[pkg].version
        reasons = (
            ("companion-import-error", _import_error(facts, pkg)),
            ("companion-release", _pairing(facts, pkg, version, torch_version)),
            ("companion-variant", _variant(facts, pkg, version, torch_version)),
        )
        found = [(code, why) for code, why in reasons if why]
        if found:
            why = "; ".join(w for _, w in found)
            fix = _fix(facts, pkg, torch_version)
            if found[0][0] == "companion-import-error":  # it rests on the import error too
                fix = replace(fix, evidence=(*fix.evidence, *_error_paths(facts, pkg)))
            # Beside a nightly or source build of torch, a release mismatch seen only in the
            # numbers may still load: an error once its import fails, a warning until then.
            unseen = found[0][0] == "companion-release" and _development(torch_version)
            out.append(Problem(found[0][0], Status.WARN if unseen else Status.FAIL, why, [fix]))
    return out
