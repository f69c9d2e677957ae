"""The release tables held against each release's shipped source (issue 25).

torchdoctor/data/release_strings.json is the compact output of scripts/release_strings.py over
the wheel of every torch minor from 1.8 to 2.13 (Linux x86_64 CUDA builds; macOS arm64 for MPS):
per release, which library, header or Python file holds each variable name and allocator key.
A row of torch_env.VARIABLES or alloc_keys.KEYS that says a release reads (or rejects) something
its own wheel contradicts fails here, and so does a release left ``unsure`` that a wheel settles.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchdoctor.data import alloc_keys, torch_env

SUMMARY = json.loads(
    (Path(torch_env.__file__).parent / "release_strings.json").read_text(encoding="utf-8")
)


def _releases(platform: str) -> dict[str, dict]:
    return SUMMARY["macos" if platform == "mps" else "linux"]["releases"]


def _seen(release: dict, name: str, shipped_in: tuple[str, ...], quoted: bool = False) -> bool:
    members = release["found"].get(name, []) + (release["quoted"].get(name, []) if quoted else [])
    return any(Path(m).name.startswith(shipped_in) for m in members)


@pytest.mark.parametrize("name", [n for n, r in torch_env.VARIABLES.items() if r.shipped_in])
def test_variable_rows_agree_with_each_release_wheel(name: str) -> None:
    row = torch_env.VARIABLES[name]
    for minor, release in _releases(row.platform).items():
        seen = _seen(release, name, row.shipped_in)
        if minor in row.unsure:
            # only a ROCm build's name (hipified) can hide from the CUDA wheel of its release
            assert row.platform == "rocm" and not seen, f"{release['wheel']} settles {name}"
            continue
        assert torch_env.reads(name, minor) is seen, (name, release["wheel"])


@pytest.mark.parametrize("key", sorted(alloc_keys.KEYS))
def test_allocator_key_rows_agree_with_each_release_wheel(key: str) -> None:
    row = alloc_keys.KEYS[key]
    for minor, release in _releases("cuda").items():
        assert minor not in row.unsure, f"{key}: {release['wheel']} settles {minor}"
        seen = _seen(release, key, alloc_keys.SHIPPED_IN)
        assert alloc_keys.accepts(key, minor) is seen, (key, release["wheel"])


def test_every_release_from_1_8_to_2_13_was_read_from_its_wheel() -> None:
    assert list(_releases("cuda")) == list(torch_env.minors("1.8", "2.13"))
    assert {m: r["wheel"] for m, r in _releases("cuda").items()} == torch_env.WHEELS
    for minor, wheel in torch_env.MAC_WHEELS.items():
        assert _releases("mps")[minor]["wheel"] == wheel
    assert list(_releases("mps")) == list(torch_env.minors("1.12", "2.12"))
    for platform, tag in (("cuda", "manylinux"), ("mps", "macosx")):
        for minor, release in _releases(platform).items():
            assert release["wheel"].startswith(f"torch-{minor}.") and tag in release["wheel"]


def test_deprecation_warning_text_ships_only_in_the_releases_said_to_print_it() -> None:
    # "PYTORCH_CUDA_ALLOC_CONF is deprecated, use PYTORCH_ALLOC_CONF" in libc10.so
    for minor, release in _releases("cuda").items():
        if minor in alloc_keys.DEPRECATION_UNSURE:
            continue
        seen = _seen(release, "is deprecated, use PYTORCH_ALLOC_CONF", ("libc10",), quoted=True)
        assert alloc_keys.warns_deprecated(minor) is seen, release["wheel"]
