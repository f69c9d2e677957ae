"""`torch.load` of weights committed with the code, at a fixed relative path (project.py,
"shipped"): as trusted as the code that loads them, so TD102 is `low` there. Labelled lookalikes
in two blind corpora: stargan-v2's metrics/lpips_weights.ckpt (twenty-seventh) and Amphion's
maskgct ckpt/wav2vec2bert_stats.pt (eighteenth)."""

from __future__ import annotations

from torchdoctor.scan import ScanOptions, scan_paths

LPIPS = """import torch

def load_lpips(net):
    state_dict = torch.load('metrics/lpips_weights.ckpt')
    net.load_state_dict(state_dict)
"""


def _td102(root) -> list[tuple[str, str]]:
    found = scan_paths([str(root)], ScanOptions(confidence="low"), jobs=1).findings
    return [(f.confidence, f.grounds or "") for f in found if f.rule == "TD102"]


def _repo(tmp_path, source: str = LPIPS):
    repo = tmp_path / "stargan-v2"
    (repo / "metrics").mkdir(parents=True)
    (repo / "setup.py").write_text("")
    (repo / "metrics" / "lpips.py").write_text(source)
    return repo


def test_lpips_weights_committed_with_the_code_are_low_stargan_v2(tmp_path):
    repo = _repo(tmp_path)
    (repo / "metrics" / "lpips_weights.ckpt").write_bytes(b"\x80\x02")
    ((conf, grounds),) = _td102(repo)
    assert conf == "low"
    assert "lpips_weights.ckpt ships with the code at that fixed path" in grounds


def test_the_same_path_without_the_file_is_unsafe_pickle(tmp_path):
    """Nothing in the tree: whoever puts a file there chooses what gets unpickled."""
    assert [c for c, _ in _td102(_repo(tmp_path))] == ["high"]


def test_weights_shipped_zipped_count_fastspeech2(tmp_path):
    """FastSpeech2 commits hifigan/generator_LJSpeech.pth.tar.zip, unzipped by its user."""
    source = LPIPS.replace("metrics/lpips_weights.ckpt", "hifigan/generator.pth.tar")
    repo = _repo(tmp_path, source)
    (repo / "hifigan").mkdir()
    (repo / "hifigan" / "generator.pth.tar.zip").write_bytes(b"PK")
    assert [c for c, _ in _td102(repo)] == ["low"]


def test_a_file_above_the_repository_root_is_not_the_projects(tmp_path):
    repo = _repo(tmp_path)
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "lpips_weights.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(repo)] == ["high"]


def test_a_folder_of_that_name_is_not_a_weights_file(tmp_path):
    repo = _repo(tmp_path)
    (repo / "metrics" / "lpips_weights.ckpt").mkdir()
    assert [c for c, _ in _td102(repo)] == ["high"]


def test_absolute_paths_and_urls_are_never_looked_up(tmp_path):
    weights = tmp_path / "w.ckpt"
    weights.write_bytes(b"\x80\x02")
    repo = _repo(tmp_path, LPIPS.replace("'metrics/lpips_weights.ckpt'", repr(str(weights))))
    assert [c for c, _ in _td102(repo)] == ["high"]


def test_a_name_assigned_only_that_path_counts(tmp_path):
    source = LPIPS.replace(
        "    state_dict = torch.load('metrics/lpips_weights.ckpt')",
        "    path = 'metrics/lpips_weights.ckpt'\n    state_dict = torch.load(path)",
    )
    repo = _repo(tmp_path, source)
    (repo / "metrics" / "lpips_weights.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(repo)] == ["low"]


def test_a_cached_scan_sees_the_weights_file_removed(tmp_path):
    """The file's existence is looked up at every run, never cached with the analysis."""
    repo = _repo(tmp_path)
    weights = repo / "metrics" / "lpips_weights.ckpt"
    weights.write_bytes(b"\x80\x02")
    opts = ScanOptions(cache=True, cache_dir=str(tmp_path / "cache"), confidence="low")
    first = scan_paths([str(repo)], opts, jobs=1)
    weights.unlink()
    second = scan_paths([str(repo)], opts, jobs=1)
    assert second.cache_hits == 2  # lpips.py and setup.py: nothing analysed again
    assert [f.confidence for f in first.findings if f.rule == "TD102"] == ["low"]
    assert [f.confidence for f in second.findings if f.rule == "TD102"] == ["high"]


def test_a_path_that_climbs_out_of_its_folder_is_not_looked_up(tmp_path):
    repo = _repo(tmp_path, LPIPS.replace("metrics/lpips_weights.ckpt", "../lpips_weights.ckpt"))
    (repo / "lpips_weights.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(repo)] == ["high"]
