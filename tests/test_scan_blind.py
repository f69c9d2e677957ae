"""benchmarks/scan_blind.py: how findings are matched to the blind labels of issue 20, on a
tiny corpus made here (the real source trees are not needed), and the shipped labels."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load():
    spec = importlib.util.spec_from_file_location("scan_blind", BENCH / "scan_blind.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scan_blind"] = mod  # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    return mod


sb = _load()

CORPUS = json.loads((BENCH / "scan_blind" / "corpus.json").read_text(encoding="utf-8"))
LABELS = sb.read_labels(BENCH / "scan_blind" / "labels.csv")


def test_labels_csv_parses_with_the_counts_method_md_states():
    assert len(LABELS) == 128
    assert sum(lab.must_flag for lab in LABELS) == 35
    by_sev = {s: sum(lab.must_flag and lab.severity == s for lab in LABELS) for s in sb.SEVERITIES}
    assert by_sev == {"crash": 17, "security": 11, "perf": 7}


def test_every_label_names_a_file_of_corpus_json_and_a_kind_with_rules():
    in_scope = {(r["repo"], f) for r in CORPUS["repos"] for f in r["files_in_scope"]}
    for lab in LABELS:
        assert (lab.repo, lab.file) in in_scope, lab
        assert lab.rules, lab  # KeyError here: a kind the script cannot match


def test_labels_csv_header_is_the_one_the_script_reads():
    with open(BENCH / "scan_blind" / "labels.csv", newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh))
    assert header == ["repo", "file", "line", "kind", "severity", "must_flag", "reason"]


def _label(line, kind, must_flag=True, severity="crash", file="a.py"):
    return sb.Label("o/r", file, line, kind, severity, must_flag)


def _finding(line, rule, file="a.py"):
    return sb.Finding("o/r", file, line, rule, "medium")


def test_a_finding_matches_its_rule_within_two_lines_in_the_same_file_only():
    lab = _label(10, "TD101 load-without-map-location")
    assert sb.verdict(_finding(12, "TD101"), [lab]) == "tp"
    assert sb.verdict(_finding(8, "TD101"), [lab]) == "tp"
    assert sb.verdict(_finding(13, "TD101"), [lab]) == "unlabelled"
    assert sb.verdict(_finding(10, "TD102"), [lab]) == "unlabelled"
    assert sb.verdict(_finding(10, "TD101", file="b.py"), [lab]) == "unlabelled"


def test_a_lookalike_makes_a_false_positive_and_a_real_row_on_the_line_wins():
    # bark generation.py:212 holds a TD102 `yes` row and a TD101 `no` row
    labels = [
        _label(212, "TD102 load-without-weights-only"),
        _label(212, "TD101 load-without-map-location (lookalike)", must_flag=False),
    ]
    assert sb.verdict(_finding(212, "TD102"), labels) == "tp"
    assert sb.verdict(_finding(212, "TD101"), labels) == "fp"
    both = [_label(5, "factory-without-device (lookalike)", False), _label(6, "TD303 x")]
    assert sb.verdict(_finding(5, "TD303"), both) == "tp"


def test_kinds_that_are_not_rule_ids_match_the_rules_listed_for_them():
    lab = _label(90, "guard-covers-too-little")
    assert sb.verdict(_finding(90, "TD004"), [lab]) == "tp"
    assert sb.verdict(_finding(90, "TD003"), [lab]) == "tp"
    assert sb.verdict(_finding(90, "TD001"), [lab]) == "unlabelled"
    odd = _label(469, "cpu-roundtrip (legacy .type(torch.FloatTensor))", severity="perf")
    assert odd.rules == {"TD303", "TD402"}


def test_recall_per_severity_and_per_root_cause():
    labels = [
        _label(90, "guard-covers-too-little", file="m.py"),
        _label(110, "guard-covers-too-little", file="m.py"),
        _label(5, "TD102 load-without-weights-only", severity="security"),
        _label(7, "TD402 sync-in-loop", severity="perf"),
        _label(20, "TD402 sync-in-loop (lookalike)", must_flag=False, severity="perf"),
    ]
    sb.ONE_ROOT.add(("o/r", "m.py"))
    try:
        r = sb.recall(labels, [_finding(90, "TD004", file="m.py"), _finding(20, "TD402")])
    finally:
        sb.ONE_ROOT.discard(("o/r", "m.py"))
    assert r["crash"] == (1, 2)
    assert r["security"] == (0, 1)
    assert r["perf"] == (0, 1)  # the finding on the lookalike does not count
    assert r["crash+security"] == (1, 3)
    assert r["crash+security, per root"] == (1, 2)


def test_judged_findings_are_counted_apart_from_the_blind_ones(tmp_path):
    judged = tmp_path / "judged.csv"
    judged.write_text("repo,file,line,rule,verdict,reason\no/r,a.py,40,TD001,true,x\n")
    verdicts = sb.read_judged(judged)
    labels = [_label(10, "TD001 hardcoded-cuda-call (lookalike)", must_flag=False)]
    found = [_finding(10, "TD001"), _finding(40, "TD001"), _finding(50, "TD001")]
    c = sb.tally(found, labels, verdicts)
    assert (c["tp"], c["fp"], c["jtrue"], c["jfalse"], c["unjudged"]) == (0, 1, 1, 0, 1)
    assert sb.read_judged(tmp_path / "absent.csv") == {}


def test_scan_of_a_tiny_tree_keeps_repo_relative_paths_and_lines(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "model.py").write_text(
        'import torch\nD = "cuda" if torch.cuda.is_available() else "cpu"\n'
        "class Net:\n    def load(self):\n        return self.m.cuda()\n"
    )
    found = sb.scan_repo(tmp_path, "o/r", "low", 1)
    assert [(f.file, f.line, f.rule) for f in found] == [("pkg/model.py", 5, "TD001")]
    assert not (tmp_path / ".torchdoctor_cache").exists()  # the corpus trees stay untouched
    lab = sb.Label("o/r", "pkg/model.py", 5, "TD001 hardcoded-cuda-call", "crash", True)
    assert sb.recall([lab], found)["crash"] == (1, 1)


def test_a_missing_tree_says_how_to_fetch_it(tmp_path):
    entry = CORPUS["repos"][0]
    with pytest.raises(SystemExit) as exc:
        sb.tree_of(tmp_path, entry)
    assert f"checkout {entry['commit']}" in str(exc.value)
    assert f"github.com/{entry['repo']}" in str(exc.value)


def test_lookalikes_flagged_count_only_rows_a_finding_points_at():
    labels = [_label(10, "TD003 x (lookalike)", False), _label(30, "TD003 x (lookalike)", False)]
    assert sb.flagged_lookalikes(labels, [_finding(11, "TD003")]) == (1, 2)


# CheXNet_torch's infer.py loads the committed model/model.pth, which the snapshot left out (too
# large): the scan saw a tree without it and flagged the load (blind set 255). A clone has it.
def test_a_committed_file_the_export_left_out_is_restored_empty(tmp_path):
    tree = tmp_path / "CheXNet_torch"
    (tree / "data").mkdir(parents=True)
    (tree / "data" / "kept.pt").write_bytes(b"PK\x03\x04 real")
    corpus = {
        "missing_blobs_left_out_of_export": {
            "taneishi/CheXNet_torch": ["model/model.pth", "data/kept.pt", "../outside.pt", "/abs"]
        },
        "repos": [],
    }
    entry = {"repo": "taneishi/CheXNet_torch", "local_path": str(tree)}
    assert sb.tree_of(tmp_path, entry, corpus) == tree
    assert (tree / "model" / "model.pth").read_bytes() == b""
    assert (tree / "data" / "kept.pt").read_bytes() == b"PK\x03\x04 real"  # never overwritten
    assert not (tmp_path / "outside.pt").exists()
    assert sb.missing_blobs({"missing_blobs_left_out_of_export": "none"}, "a/b") == []


def test_missing_blobs_listed_in_a_table_are_restored_too():
    """Muti-Speaker_Tacotron2_with_Post-Filter's inference.py loads the committed
    HiFi_GAN/g_02500000 (set 401), which corpus.json lists under `missing_from_snapshot`: the
    scorer read only plain lists and left it out, so the load looked like one of no shipped
    file."""
    corpus = {
        "missing_blobs_left_out_of_export": {
            "BabaiLi/tacotron": {
                "missing_from_snapshot": ["HiFi_GAN/g_02500000"],
                "left_out_for_disk_space_over_60000_bytes": ["data/big.pt"],
                "submodules_not_exported": ["third_party/hifigan"],
            }
        }
    }
    assert sb.missing_blobs(corpus, "BabaiLi/tacotron") == ["HiFi_GAN/g_02500000", "data/big.pt"]
