"""Whose files each torch metadata directory is: conda's (its pytorch package carries torch's
own metadata, so pip lists it as torch: pytorch/pytorch#12470) or another installer's.

Read from ``packages.torch_distributions.N.conda`` (the conda-meta record whose "files" list
holds the directory) and ``.conda_checked`` (whether conda-meta was read at all).
"""

from __future__ import annotations

from torchdoctor.data import compat

from ..record import Facts


def known(facts: Facts) -> bool:
    """Ownership was read for every torch metadata directory (older facts lack it: unknown)."""
    dists = facts.packages.torch_distributions
    return bool(dists) and all(d.conda_checked is True for d in dists)


def is_pypi(channel: str | None) -> bool:
    """conda's record of a pip install ("pypi", or a channel URL ending in it), not conda's files."""
    parts = (channel or "").rstrip("/").split("/")
    return "pypi" in parts


def conda_owned(facts: Facts, i: int) -> bool:
    owner = facts.packages.torch_distributions[i].conda
    return bool(owner.name) and not is_pypi(owner.channel)


def foreign(facts: Facts) -> list[int]:
    """Indices of the torch metadata directories no conda package of a conda channel owns."""
    dists = facts.packages.torch_distributions
    return [i for i in range(len(dists)) if not conda_owned(facts, i)]


def same_release(a: str | None, b: str | None) -> bool:
    """'1.13.1.post200' (conda-forge's torch) and '1.13.1' (its conda package) are one release;
    so are '1.11.0' and '1.11.0+cu113'."""
    ra, rb = compat.parse_version(compat.public_version(a))[:3], compat.parse_version(b)[:3]
    return bool(ra) and ra == rb


def one_install(facts: Facts, conda_version: str) -> bool:
    """Every torch metadata directory is conda's, of the conda package's release: one install."""
    dists = facts.packages.torch_distributions
    return (
        known(facts)
        and not foreign(facts)
        and all(same_release(d.version, conda_version) for d in dists)
    )


def paths(facts: Facts) -> tuple[str, ...]:
    """The ownership facts of every torch metadata directory (evidence of a finding)."""
    out: list[str] = []
    for i in range(len(facts.packages.torch_distributions)):
        base = f"packages.torch_distributions.{i}"
        out += [f"{base}.metadata", f"{base}.installer", f"{base}.conda.record"]
        out += [f"{base}.conda.channel", f"{base}.conda_checked"]
    return tuple(out)
