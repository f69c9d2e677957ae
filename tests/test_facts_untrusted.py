"""A facts file is untrusted input: whatever it holds, `check --facts` exits 0, 1 or 2 and never
shows a traceback; a malformed one is exit 2 naming the bad field, before any renderer runs.

The fuzzer mutates the real fixtures in tests/facts/ with Hypothesis (wrong types, null, lists,
objects, deep nesting, deleted keys) and runs every renderer in-process through the CLI's own
``main``. It is derandomized, so CI sees the same bounded set of examples on every run; set
TORCHDOCTOR_FUZZ_EXAMPLES (e.g. 2000) to explore further with fresh random examples.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchdoctor.check.record import load_facts
from torchdoctor.cli import main

from .conftest import FACTS_DIR, REPO, needs_torch, run_cli

FIXTURES = {p.stem: json.loads(p.read_text()) for p in sorted(FACTS_DIR.glob("*.json"))}
FORMATS = ["text", "json", "markdown", "junit"]
DELETE = object()
EXPLORE = int(os.environ.get("TORCHDOCTOR_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=EXPLORE or 100,
    derandomize=not EXPLORE,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def paths(node, prefix=()):
    """Every place in a JSON document, as a tuple of keys/indexes (the root excluded)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield (*prefix, k)
            yield from paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield (*prefix, i)
            yield from paths(v, (*prefix, i))


def nested(depth: int):
    value: object = 1
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
BAD_VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.text(max_size=6), SCALARS, max_size=3),
    st.lists(st.dictionaries(st.text(max_size=6), SCALARS, max_size=2), max_size=2),
    st.integers(min_value=1, max_value=120).map(nested),
    st.just(DELETE),
)


@st.composite
def mutated_facts(draw):
    doc = copy.deepcopy(FIXTURES[draw(st.sampled_from(sorted(FIXTURES)))])
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        where = list(paths(doc))
        if not where:
            break
        *parents, last = draw(st.sampled_from(where))
        node = doc
        for key in parents:
            node = node[key]
        value = draw(BAD_VALUES)
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return doc


def run_main(args: list[str]) -> tuple[int, str, str]:
    """torchdoctor's own entry point, in-process (fast enough to fuzz): code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = None
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code
        finally:  # main sets the process's signal handlers, as it should for a process
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "facts.json"


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(doc=mutated_facts(), verbose=st.booleans())
def test_fuzzed_facts_never_crash_a_renderer(scratch, fmt, doc, verbose):
    scratch.write_text(json.dumps(doc))
    args = ["check", "--facts", str(scratch), "--format", fmt] + (["-v"] if verbose else [])
    code, out, err = run_main(args)
    assert code in (0, 1, 2), err
    assert "Traceback" not in err and "internal error" not in err
    if code == 2:
        assert err.startswith("Error: --facts: ") and err.count("\n") == 1, err
    else:
        # Facts that pass validation must be facts every check can read.
        assert "the check itself failed" not in out, out


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda f: f["torch"].update(version=["2", "4"]), "field 'torch.version' must be a string, got list"),
        (lambda f: f.update(platform="Linux"), "field 'platform' must be an object, got string"),
        (lambda f: f["torch"].update(build=None), "field 'torch.build' must be an object, got null"),
        (lambda f: f["nvml"]["devices"].append(3), "field 'nvml.devices[1]' must be an object, got integer"),
        (lambda f: f["nvml"]["devices"][0].update(capability=[9]), "'nvml.devices[0].capability' must hold 2 items"),
        (lambda f: f["platform"].update(python_version="three"), "must be a version like '3.11.7'"),
        (lambda f: f["env"].update(CUDA_VISIBLE_DEVICES=0), "field 'env.CUDA_VISIBLE_DEVICES' must be a string"),
        (lambda f: f["torch"]["build"].update(cuda="twelve"), "'torch.build.cuda' must be a version like '12.4'"),
        (lambda f: f["nvml"]["devices"][0].pop("index"), "field 'nvml.devices[0].index' is missing"),
    ],
)  # fmt: skip
def test_malformed_field_is_named_in_one_line_exit_2(tmp_path, mutate, message):
    facts = copy.deepcopy(FIXTURES["h100_healthy"])
    mutate(facts)
    p = tmp_path / "f.json"
    p.write_text(json.dumps(facts))
    for fmt in FORMATS:
        code, out, err = run_main(["check", "--facts", str(p), "--format", fmt])
        assert code == 2 and out == ""
        assert err.startswith("Error: --facts: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_string_where_an_object_is_expected_was_exit_3_in_text_and_markdown(tmp_path, fmt):
    """The reported crash, end to end in a real process: exit 2 and the field, no traceback."""
    facts = copy.deepcopy(FIXTURES["cpu_linux"])
    facts["torch"]["build"] = "2.4.0"
    p = tmp_path / "f.json"
    p.write_text(json.dumps(facts))
    proc = run_cli("check", "--facts", str(p), "--format", fmt)
    assert proc.returncode == 2
    assert proc.stderr == "Error: --facts: field 'torch.build' must be an object, got string\n"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_not_json_and_are_refused(tmp_path, number):
    p = tmp_path / "f.json"
    p.write_text('{"facts_version": 1, "host": {"cgroup": {"cpu_quota": ' + number + "}}}")
    code, _, err = run_main(["check", "--facts", str(p)])
    assert code == 2 and "is not valid JSON" in err and err.count("\n") == 1


def test_every_fixture_fits_the_typed_record():
    for name, facts in FIXTURES.items():
        assert load_facts(facts).raw is facts, name


@needs_torch
@pytest.mark.slow
def test_facts_gathered_on_this_machine_replay_without_complaint(tmp_path):
    dump = tmp_path / "facts.json"
    first = run_cli("check", "--json", "--dump-facts", str(dump))
    assert first.returncode in (0, 1), first.stderr
    again = run_cli("check", "--facts", str(dump), "--json")
    assert again.returncode == first.returncode, again.stderr


def test_100000_deep_json_is_exit_2_in_one_line(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    proc = run_cli("check", "--facts", str(p))
    assert proc.returncode == 2
    assert proc.stderr == f"Error: --facts: {str(p)!r} is nested too deeply to be a facts file\n"


def test_deep_but_parseable_unknown_field_is_refused_before_anything_walks_it(tmp_path):
    facts = copy.deepcopy(FIXTURES["cpu_linux"])
    facts["extra"] = nested(500)  # json.loads copes; the report's json.dumps and redact would not
    p = tmp_path / "f.json"
    p.write_text(json.dumps(facts))
    code, _, err = run_main(["check", "--facts", str(p), "--json", "--redact"])
    assert code == 2 and "nested too deeply" in err


@pytest.mark.parametrize(
    "args",
    [["check", "--facts", "/dev/zero"], ["dist", "--replay", "/dev/zero"]],
    ids=["check", "dist"],
)
def test_dev_zero_is_refused_not_read_until_memory_runs_out(args):
    proc = run_cli(*args, timeout=60)
    assert proc.returncode == 2
    assert "is not a regular file (a character device)" in proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_as_facts_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "facts.fifo"
    os.mkfifo(fifo)
    proc = run_cli("check", "--facts", str(fifo), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"Error: --facts: {str(fifo)!r} is not a regular file (a FIFO)\n"


def test_facts_from_stdin_are_read_and_checked():
    src = FACTS_DIR / "cpu_linux.json"
    proc = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--facts", "-", "--json"],
        stdin=src.open("rb"),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["facts"]["platform"]["system"] == "Linux"
