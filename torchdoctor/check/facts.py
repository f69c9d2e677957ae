"""Facts at the edge: a facts file read into the typed record (``load``), and written (``dumps``).

Everything between reads the record (record/), whose ``raw`` is its JSON. Gathering is the only
side-effecting step of a diagnosis; it lives in gather.py, so that reading and judging facts never
loads a probe. A recorded facts file replays the whole diagnosis anywhere (``--facts FILE``),
which is how every check is tested without a GPU.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..safeio import InputError, read_text_bounded
from ..typed_json import too_deep
from .record import Facts, ShapeError, load_facts, read_facts

FACTS_VERSION = 1


def dig(doc: dict[str, Any], path: str, default: Any = None) -> Any:
    """``dig(doc, "versions.torch")``: a nested lookup in a JSON document that tolerates missing
    levels. For reports the fleet reads; checks read the typed facts record (record/)."""
    node: Any = doc
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return default if node is None else node


class FactsError(ValueError):
    """A facts file that cannot be used; the message is one line for the user."""


def load(path: str) -> Facts:
    """Read a facts file (``-``: stdin): bounded, parsed, and checked against its shape.

    A facts file is untrusted input (pasted into an issue, edited by hand): whatever it holds,
    the result is either facts every check and renderer can trust, or a FactsError. A pasted
    collect_env report is read leniently instead (what did not fit: ``Facts.misfits``).
    """
    try:
        text = read_text_bounded(path)
    except InputError as exc:
        raise FactsError(str(exc)) from None
    try:
        data = json.loads(text, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise FactsError(f"{path!r} is nested too deeply to be a facts file") from None
    except ValueError as exc:
        from .collect_env import parse  # pasted `python -m torch.utils.collect_env` output

        report = parse(text)
        if report is not None:
            return read_facts(report)
        if text.lstrip().startswith(("{", "[")):
            raise FactsError(f"facts file {path!r} is not valid JSON: {exc}") from None
        where = "standard input" if path == "-" else repr(path)
        raise FactsError(f"{where} is not a facts/report JSON or a collect_env report") from None
    return from_json(data, path)


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")  # Python's json accepts it; checks cannot


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def from_json(data: Any, path: str) -> Facts:
    """Parsed JSON -> checked facts (a whole ``check --json`` report is accepted too)."""
    if isinstance(data, dict) and "facts" in data and "schema_version" in data:
        data = data["facts"]  # a whole report: its facts replay the diagnosis
    if not isinstance(data, dict) or "facts_version" not in data:
        raise FactsError(f"{path!r} is not a torchdoctor facts file (no facts_version)")
    if data["facts_version"] != FACTS_VERSION:
        raise FactsError(
            f"{path!r} has facts_version {str(data['facts_version'])[:20]}; "
            f"this torchdoctor reads version {FACTS_VERSION}"
        )
    if too_deep(data):
        raise FactsError(f"{path!r} is nested too deeply to be a facts file")
    try:
        return load_facts(data)  # the typed record's definition is the file format
    except ShapeError as exc:
        raise FactsError(str(exc)) from None


def dumps(facts: Facts) -> str:
    """The facts file of ``facts``: the JSON they were read from, unknown fields included."""
    return json.dumps(facts.raw, indent=2, sort_keys=True) + "\n"
