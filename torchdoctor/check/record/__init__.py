"""The facts record, typed: the one definition of what torchdoctor knows about a machine.

The probes write JSON (they run in the examined interpreter, which need not have torchdoctor);
``gather`` and ``--facts FILE`` both turn that JSON into a ``Facts`` record here, at the edge, and
the record is what travels from there to the checks (JSON again only to dump or report). Checks read it
as attributes (``facts.torch.build.cuda``), a misspelt field is an AttributeError in the test
suite instead of a silent None, and ``schema/facts.schema.json`` is generated from these classes
(``python -m torchdoctor.check.record``; a test keeps the file in step).

Field conventions (see typed_json): scalars are ``X | None`` (absent or unreadable reads None);
objects, lists and maps read empty when absent; ``X | None`` on an object or list keeps "absent"
apart from "empty" where a check needs that (e.g. "the probe never looked").
"""

from __future__ import annotations

from typing import Any

from torchdoctor.typed_json import Record, ShapeError, empty, load, schema

from .base import Collected, Int, record
from .container import Container
from .extensions import CompiledExtensions
from .host import Host
from .interpreter import Interpreter
from .network import Network
from .nvml import Nvml
from .packages import Packages
from .platform import Platform
from .probe import Probe
from .report import PastedReport
from .smoke import Smoke
from .toolchain import Toolchain
from .torch import Torch

__all__ = ["Facts", "ShapeError", "empty_facts", "facts_schema", "load_facts", "read_facts"]


@record
class Facts(Record):
    """Everything torchdoctor observed about one machine and one Python environment."""

    facts_version: Int
    collected: Collected
    env: dict[str, str]  # only the variables torchdoctor reads (probes/host.py TORCH_ENV_VARS)
    nvml: Nvml
    host: Host
    platform: Platform
    packages: Packages
    torch: Torch
    smoke: Smoke
    probe: Probe
    toolchain: Toolchain
    interpreter: Interpreter
    container: Container
    network: Network
    compiled_extensions: CompiledExtensions
    report: PastedReport

    @property
    def misfits(self) -> list[str]:
        """The fields that did not fit when these facts were read leniently (``read_facts``):
        they read as absent, and the report lists them beside the facts for the bug report."""
        return list(getattr(self, "_misfits", ()))


def load_facts(data: Any, errors: list[str] | None = None) -> Facts:
    """The typed record of a parsed facts document; ShapeError names the first bad field (with
    an ``errors`` list: each field that does not fit reads as absent and is listed there)."""
    return load(Facts, data, errors=errors)


def read_facts(data: Any) -> Facts:
    """Facts gathered live or parsed from a pasted report, read leniently: they are not the
    user's file to refuse, so each field that does not fit reads as absent and is kept in
    ``misfits``. (A facts file is loaded strictly instead: ``check.facts.load``.)"""
    errors: list[str] = []
    facts = load_facts(data, errors=errors)
    object.__setattr__(facts, "_misfits", tuple(errors))  # frozen, like ``raw``: beside the fields
    return facts


def empty_facts() -> Facts:
    return empty(Facts)


def facts_schema() -> dict[str, Any]:
    return schema(
        Facts,
        "torchdoctor facts",
        "https://github.com/torchdoctor/torchdoctor/blob/main/torchdoctor/schema/facts.schema.json",
    )
