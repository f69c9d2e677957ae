"""The typed facts record: one definition that checks read, files are held to, and the published
JSON Schema is generated from."""

from __future__ import annotations

import copy
import json
import sys

import jsonschema
import pytest

from torchdoctor.check import engine, pipeline
from torchdoctor.check import gather as gathering
from torchdoctor.check.checks import ALL
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import Facts, empty_facts, facts_schema, load_facts, read_facts
from torchdoctor.probes import nvml
from torchdoctor.typed_json import Record, ShapeError, fields_of

from .conftest import REPO

SCHEMA_FILE = REPO / "torchdoctor" / "schema" / "facts.schema.json"
FIXTURES = {
    p.stem: json.loads(p.read_text()) for p in sorted((REPO / "tests/facts").glob("*.json"))
}
VALIDATOR = jsonschema.Draft202012Validator(facts_schema())


def test_published_schema_is_generated_from_the_record():
    """Regenerate with `python -m torchdoctor.check.record > torchdoctor/schema/facts.schema.json`."""
    assert json.loads(SCHEMA_FILE.read_text()) == facts_schema()
    jsonschema.Draft202012Validator.check_schema(facts_schema())


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, (*path, i))
    else:
        yield path


def _set(doc, path, value):
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


@pytest.mark.parametrize(
    "name", ["h100_healthy", "rocm_gfx1031", "mps_mac", "libs_shadowed_cudart"]
)
def test_schema_and_loader_agree_on_every_wrong_type(name):
    """Each leaf of a real record replaced by a wrong-typed value: the loader refuses exactly
    the documents the published schema refuses (unknown fields and free-form maps pass both)."""
    base = FIXTURES[name]
    assert not list(VALIDATOR.iter_errors(base))
    refused = 0
    for path in _leaves(base):
        for wrong in ({"x": 1}, "1.x" if isinstance(_get(base, path), str) else "text"):
            doc = copy.deepcopy(base)
            _set(doc, path, wrong)
            schema_ok = not list(VALIDATOR.iter_errors(doc))
            try:
                load_facts(doc)
                loader_ok = True
            except ShapeError:
                loader_ok = False
            assert schema_ok == loader_ok, (path, wrong)
            refused += not loader_ok
    assert refused > 50  # the mutations did reach typed fields


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def test_misspelt_field_is_an_error_not_a_silent_none():
    facts = load_facts(FIXTURES["h100_healthy"])
    assert facts.torch.build.cuda == "13.0"
    with pytest.raises(AttributeError):
        facts.torch.build.cuda_version  # noqa: B018 - the misspelling dig("…") returned None for


def test_absent_objects_read_empty_and_falsy_absent_scalars_none():
    facts = load_facts({"facts_version": 1})
    assert not facts.torch.build and facts.torch.build.cuda is None
    assert facts.nvml.devices == [] and facts.packages.distributions == {}
    assert load_facts(FIXTURES["h100_healthy"]).torch.build  # present: truthy
    assert empty_facts().torch == facts.torch


def test_never_looked_is_kept_apart_from_found_nothing():
    """shadowing skips when the probe never looked (None) and passes when it found none ([])."""
    assert load_facts({"facts_version": 1}).platform.torch_shadows is None
    looked = {"facts_version": 1, "platform": {"python_version": "3.12.1", "torch_shadows": []}}
    assert load_facts(looked).platform.torch_shadows == []


def test_required_field_missing_is_named():
    doc = {"facts_version": 1, "nvml": {"devices": [{"name": "H100"}]}}
    with pytest.raises(ShapeError, match=r"field 'nvml.devices\[0\].index' is missing"):
        load_facts(doc)


def test_live_facts_that_do_not_fit_are_read_as_absent_and_listed():
    """A probe writing a wrong type (a bug, or a torch that reports a version as a tuple) must
    not turn every check into "the check itself failed": the field reads as absent and the
    report says which field it was."""
    doc = copy.deepcopy(FIXTURES["h100_healthy"])
    doc["torch"]["version"] = ["2", "13"]
    doc["nvml"]["devices"][0]["capability"] = [9, 0, 1]
    report = engine.diagnose(read_facts(doc), Context(), ALL)
    assert report.facts_problems == [
        "field 'nvml.devices[0].capability' must hold 2 items, got 3",
        "field 'torch.version' must be a string, got list",
    ]
    assert not [c.id for c in report.checks if c.summary.startswith("the check itself failed")]
    assert report.to_dict()["facts_problems"] == report.facts_problems


def test_gathering_reads_the_probes_json_into_the_record_and_keeps_what_did_not_fit(
    monkeypatch,
):
    """Gathering hands on the typed record, read leniently from what the probes sent: a field
    that does not fit (an NVML binding answering a count as text) reads as absent, is listed
    in the report, and its JSON stays as sent in the report's facts."""
    monkeypatch.setattr(nvml, "gather", lambda: {"status": "ok", "device_count": "1"})
    facts = gathering.gather(gathering.GatherOptions(python=sys.executable, smoke=False))
    assert isinstance(facts, Facts) and facts.nvml.status == "ok"
    assert facts.nvml.device_count is None
    assert facts.misfits == ["field 'nvml.device_count' must be an integer, got string"]
    report = pipeline.judge(facts, pipeline.CheckOptions(smoke=False))
    doc = report.to_dict()
    assert doc["facts_problems"] == facts.misfits
    assert doc["facts"]["nvml"] == {"status": "ok", "device_count": "1"}


def _has_path(cls, path: str) -> bool:
    for key in path.split("."):
        fields = {f.name: f for f in fields_of(cls)}
        if key not in fields:
            return False
        cls = fields[key].kind
    return True


def test_every_declared_need_is_a_field_of_the_record():
    """NEEDS names fact paths as text (a pasted report lists what it carries): a misspelt path
    would silently skip the check on every pasted report."""
    for module in ALL:
        for path in getattr(module, "NEEDS", ()):
            assert _has_path(Facts, path), (module.ID, path)


def test_every_record_class_is_frozen():
    facts = load_facts(FIXTURES["h100_healthy"])
    with pytest.raises(AttributeError):
        facts.torch = None  # checks are pure: they cannot change what the next check reads
    assert isinstance(facts.torch, Record)


def test_checks_read_attributes_not_string_paths():
    """`dig(facts, "torch.build.cuda_version")` was a silent None for a misspelt path; checks now
    read the record's attributes, where a misspelling fails the first test that reaches it."""
    import ast

    for path in sorted((REPO / "torchdoctor" / "checks").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        assert "dig" not in names, path.name
