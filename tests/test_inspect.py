"""`torchdoctor inspect` on checkpoint files made here (tests/ckpt_factory.py)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from torchdoctor.inspect.checkpoint import dangerous_globals
from torchdoctor.inspect.weights_only import WEIGHTS_ONLY_ALLOWED
from torchdoctor.probes.child import pickle_scan

from .conftest import NO_GPU, REPO, REPORT_SCHEMA, needs_torch, plain_load, run_cli


def inspect(path: Path, *args: str) -> tuple[int, dict]:
    r = run_cli("inspect", str(path), "--json", *args, env=NO_GPU)  # as where no GPU is
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(doc)  # the shared contract
    assert doc["command"] == "inspect" and doc["summary"]["exit_code"] == r.returncode
    return r.returncode, doc


@needs_torch
def test_inspect_findings_carry_ids_and_can_be_silenced(ckpts):
    _, r = inspect(ckpts / "cuda_state_dict.pt")
    (finding,) = r["findings"]
    assert finding["id"] == "inspect.saved-on-missing-device" and finding["level"] == "error"
    assert "map_location='cpu'" in finding["remedies"][0]["text"]
    assert finding["doc"].endswith("/docs/inspect/inspect.saved-on-missing-device.md")
    rc, r = inspect(ckpts / "cuda_state_dict.pt", "--ignore", "inspect.saved-on-missing-device")
    assert r["findings"] == [] and r["summary"]["silenced"] == 1
    assert rc == 1  # the exit code still says whether the file loads here as it is


@needs_torch
def test_crafted_cuda_checkpoint_really_fails_a_plain_load(ckpts):
    r = plain_load(ckpts / "cuda_state_dict.pt")
    assert r.returncode != 0 and "Attempting to deserialize object on a CUDA device" in r.stderr


@needs_torch
def test_cuda_checkpoint_on_cpu_machine_gets_map_location(ckpts):
    rc, r = inspect(ckpts / "cuda_state_dict.pt")
    assert rc == 1
    assert r["saved_locations"] == {"cuda:0": 9}
    assert r["loads_as_is"] is False
    path = str(ckpts / "cuda_state_dict.pt")
    assert r["load_call"] == f"torch.load({path!r}, map_location='cpu', weights_only=True)"
    c = r["content"]
    assert c["kind"] == "state_dict" and c["tensors"] == 9
    assert c["dtypes"] == {"float32": 8, "int64": 1}
    assert c["elements"] == 4 * 3 + 3 + 3 * 4 + 1 + 3 * 2 + 2  # weights, biases, BN stats, count


@needs_torch
def test_cpu_checkpoint_loads_as_is(ckpts):
    rc, r = inspect(ckpts / "cpu_state_dict.pt")
    assert rc == 0 and r["loads_as_is"] and r["saved_locations"] == {"cpu": 9}
    assert "map_location" not in r["load_call"]


@needs_torch
def test_legacy_format_cuda_checkpoint(ckpts):
    rc, r = inspect(ckpts / "legacy_cuda.pt")
    assert rc == 1 and r["format"] == "torch-legacy"
    assert r["saved_locations"] == {"cuda:0": 9} and "map_location='cpu'" in r["load_call"]


@needs_torch
def test_training_checkpoint_parts(ckpts):
    rc, r = inspect(ckpts / "checkpoint.pt")
    assert rc == 0
    parts = r["content"]["parts"]
    assert parts["model"]["kind"] == "state_dict"
    assert parts["optimizer"]["kind"] == "optimizer_state_dict"
    assert parts["epoch"]["kind"] == "int"


@needs_torch
@pytest.mark.parametrize(
    ("name", "call", "prefixed"),
    [
        ("cpu_state_dict.pt", "model.load_state_dict(ckpt)", 0),
        ("checkpoint.pt", "model.load_state_dict(ckpt['model'])", 0),
        (
            "dp_state_dict.pt",
            'model.load_state_dict({k.removeprefix("module."): v for k, v in ckpt.items()})',
            9,
        ),
        (
            "dp_checkpoint.pt",
            "model.load_state_dict("
            "{k.removeprefix(\"module.\"): v for k, v in ckpt['state_dict'].items()})",
            9,
        ),
    ],
)
def test_module_prefix_and_the_load_state_dict_call_that_fits(ckpts, name, call, prefixed):
    rc, r = inspect(ckpts / name)
    assert rc == 0
    assert r["state_dict"]["call"] == call
    assert r["state_dict"]["module_prefixed"] == prefixed and r["state_dict"]["keys"] == 9
    # The call really loads into the bare model (strict load_state_dict raises otherwise).
    code = (
        f"import sys, torch; sys.path.insert(0, {str(REPO / 'tests')!r});"
        "from ckpt_factory import model; model = model();"
        f"ckpt = torch.load({str(ckpts / name)!r}, weights_only=True); {call}"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if prefixed:
        text = run_cli("inspect", str(ckpts / name)).stdout
        assert "starts with `module.` (saved from a DataParallel" in text
        assert f"  into model: {call}  # ckpt = the torch.load(...) result" in text


@needs_torch
def test_pickled_module_is_described_never_loaded(ckpts):
    rc, r = inspect(ckpts / "pickled_module.pt")
    assert rc == 1 and r["loads_as_is"] is False
    assert "torch.nn.modules.linear.Linear" in r["pickled_objects"]
    assert "weights_only=False" in r["load_call"] and "trusted" in r["load_call"]
    assert r["saved_locations"] == {"cpu": 9}  # read from the pickle opcodes
    assert any("pickled module" in p for p in r["problems"])


@needs_torch
def test_safetensors_header(ckpts):
    rc, r = inspect(ckpts / "weights.safetensors")
    assert r["format"] == "safetensors"
    assert r["content"]["tensors"] == 2 and r["content"]["dtypes"] == {"F32": 1, "I64": 1}
    assert "safetensors.torch.load_file" in r["load_call"]
    installed = r["content"] is not None and rc == 0
    assert installed or any("pip install safetensors" in p for p in r["problems"])


def test_not_a_checkpoint(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    rc, r = inspect(f)
    assert rc == 1 and r["format"] == "unknown" and r["problems"]


@needs_torch
def test_truncated_checkpoint_is_reported(ckpts, tmp_path):
    data = (ckpts / "cpu_state_dict.pt").read_bytes()
    bad = tmp_path / "cut.pt"
    bad.write_bytes(data[: len(data) // 2])
    rc, r = inspect(bad)
    assert rc == 1 and r["problems"]


def test_text_output_and_usage_error(tmp_path):
    r = run_cli("inspect", str(tmp_path / "missing.pt"))
    assert r.returncode == 2


def test_pickle_scan_reads_persistent_ids_without_torch(tmp_path):
    """A torch-style pickle, written with the standard library, scanned without executing it."""
    import pickle

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return obj if isinstance(obj, tuple) and obj and obj[0] == "storage" else None

    f = tmp_path / "x.pkl"
    with open(f, "wb") as fh:
        P(fh, protocol=2).dump(
            {
                "a": ("storage", "FloatStorage", "0", "cuda:1", 4),
                "b": ("storage", "x", "1", "cuda:1", 2),
            }
        )
    scan = pickle_scan.Scan()
    with open(f, "rb") as fh:
        scan.feed(fh)
    assert scan.locations == {"cuda:1": 2} and scan.location_elements == {"cuda:1": 6}


def test_a_reader_that_hangs_is_killed_at_the_deadline(tmp_path):
    """A stand-in interpreter that never answers: inspect reports it instead of hanging."""
    hang = tmp_path / "python"
    hang.write_text("#!/bin/sh\nsleep 60\n")
    hang.chmod(0o755)
    f = tmp_path / "m.pt"
    f.write_bytes(b"PK\x03\x04")
    r = run_cli("inspect", str(f), "--python", str(hang), "--timeout", "1", "--json", timeout=30)
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["probe"]["status"] == "timeout"
    assert any("deadline" in p for p in doc["problems"])


class _Evil:
    """Pickles as a call to os.system; pickle.dumps only records it, nothing runs."""

    def __reduce__(self):

        return (os.system, ("touch SHOULD_NOT_EXIST",))


def test_dangerous_global_is_named_and_no_load_call(tmp_path):
    import pickle

    f = tmp_path / "evil.pkl"
    f.write_bytes(pickle.dumps({"w": _Evil()}, protocol=2))
    rc, r = inspect(f)
    assert rc == 1 and r["load_call"] is None
    assert r["dangerous_globals"] and r["dangerous_globals"][0].startswith("posix.system")
    text = run_cli("inspect", str(f)).stdout
    assert "DANGEROUS: references posix.system, which torch.load(weights_only=True)" in text
    assert "globals:   posix.system" in text and "load with" not in text
    assert not (REPO / "SHOULD_NOT_EXIST").exists() and not (tmp_path / "SHOULD_NOT_EXIST").exists()


def _short_unicode(text: str) -> bytes:
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def crafted_pickle(protocol: int, module: str, name: str) -> bytes:
    """`module.name('id')` as a pickle of ``protocol``, written opcode by opcode: names that do
    not exist here (Python 2's `commands`, Windows' `nt`) cannot go through pickle.dumps."""
    head = b"\x80" + bytes([protocol]) if protocol >= 2 else b""
    if protocol >= 4:
        glob = _short_unicode(module) + _short_unicode(name) + b"\x93"  # STACK_GLOBAL
    else:
        glob = b"c" + f"{module}\n{name}\n".encode()  # GLOBAL
    return head + glob + b"(S'id'\ntR."  # MARK, STRING, TUPLE, REDUCE, STOP


# Reported: a protocol-2 pickle whose global is `commands.call` (Python 2's name, which
# unpickling maps to subprocess.call) was not flagged. The allowlist flags every one of these.
HOSTILE = ["commands.call", "posix.system", "builtins.eval", "nt.system", "os.path.join"]


@pytest.mark.parametrize("protocol", range(6))
@pytest.mark.parametrize("name", HOSTILE)
def test_every_global_outside_weights_only_is_flagged_in_every_protocol(protocol, name, tmp_path):
    data = crafted_pickle(protocol, *name.rsplit(".", 1))
    scan = pickle_scan.Scan()
    scan.feed(io.BytesIO(data))
    assert scan.complete and list(scan.globals) == [name]
    assert [d.split(" ")[0] for d in dangerous_globals(list(scan.globals))] == [name]
    alone = tmp_path / f"p{protocol}.pkl"  # a file of its own (protocols 0 and 1: no header)
    alone.write_bytes(data)
    assert pickle_scan.is_pickle(str(alone))
    assert pickle_scan.scan_legacy(str(alone))["globals"] == [name]
    archive = tmp_path / f"p{protocol}.pt"  # inside a torch.save-style zip
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("archive/data.pkl", data)
    assert pickle_scan.scan_zip(str(archive))["globals"] == [name]


def test_real_pickler_output_is_judged_in_every_protocol():
    import pickle

    class Call:
        def __reduce__(self):
            return (os.path.join, ("a", "b"))

    for protocol in range(6):
        scan = pickle_scan.Scan()
        scan.feed(io.BytesIO(pickle.dumps([Call()], protocol=protocol)))
        flagged = dangerous_globals(list(scan.globals))
        assert flagged and flagged[0].startswith("posixpath.join"), (protocol, flagged)


def test_the_allowlist_not_a_denylist():
    allowed = [
        "torch._utils._rebuild_tensor_v2",
        "collections.OrderedDict",
        "builtins.set",
        "__builtin__.set",  # Python 2's name for it, mapped as unpickling does
        "torch.FloatStorage",
        "torch.bfloat16",
        "torch.nn.modules.linear.Linear",  # torch's own layers: a pickled model, not flagged here
    ]
    odd = ["torch.load", "torch.nn.modules.module.os", "<copyreg extension 7>"]
    odd.append(pickle_scan.COMPUTED_GLOBAL)
    assert dangerous_globals(allowed) == []
    assert [d.split(" (")[0] for d in dangerous_globals(odd)] == odd


@needs_torch
def test_allowlist_is_the_installed_torchs_weights_only_list():
    code = (
        "from torch._weights_only_unpickler import _get_allowed_globals as g; "
        "import json; print(json.dumps(sorted(g())))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    theirs = set(json.loads(out.stdout))
    assert set(WEIGHTS_ONLY_ALLOWED) == theirs, (
        sorted(theirs - WEIGHTS_ONLY_ALLOWED),
        sorted(WEIGHTS_ONLY_ALLOWED - theirs),
    )


@needs_torch
def test_real_torch_save_files_are_not_flagged(ckpts):
    for name in ("cpu_state_dict.pt", "checkpoint.pt", "legacy_cuda.pt", "cuda_state_dict.pt"):
        _, r = inspect(ckpts / name)
        assert r["globals"] and r["dangerous_globals"] == [], (name, r["globals"])


def test_crafted_cuda_location_does_not_crash():
    from torchdoctor.inspect.checkpoint import _loadable_here

    machine = {"cuda_available": True, "cuda_device_count": 2}
    assert _loadable_here("cuda:1", machine) and _loadable_here("cuda", machine)
    assert not _loadable_here("cuda:x", machine) and not _loadable_here("cuda:2", machine)


def test_truncated_safetensors_is_reported(tmp_path):
    import struct

    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    f = tmp_path / "cut.safetensors"
    f.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    rc, r = inspect(f)
    assert rc == 1 and r["loads_as_is"] is False
    assert any("truncated" in p and "8 bytes" in p for p in r["problems"])
