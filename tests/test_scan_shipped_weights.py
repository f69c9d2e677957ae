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


def test_a_path_that_climbs_is_looked_up_inside_the_repository_only(tmp_path):
    """`../` from metrics/ names the repository's root (where the file is: low); beside the
    repository (its parent folder holds the file: high) is not the project's."""
    repo = _repo(tmp_path, LPIPS.replace("metrics/lpips_weights.ckpt", "../lpips_weights.ckpt"))
    (repo / "lpips_weights.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(repo)] == ["low"]
    (repo / "lpips_weights.ckpt").rename(tmp_path / "lpips_weights.ckpt")
    (repo / "metrics" / "lpips.py").write_text(LPIPS.replace("metrics/", "../../"))
    assert [c for c, _ in _td102(repo)] == ["high"]


HUNYUAN = """import os
import torch

script_directory = os.path.dirname(os.path.abspath(__file__))


class HyVideoEmptyTextEmbeds:
    def process(self):
        return torch.load(os.path.join(script_directory, "hunyuan_empty_prompt_embeds_dict.pt"))
"""


def _node(tmp_path, source: str, shipped: str | None = "hunyuan_empty_prompt_embeds_dict.pt"):
    repo = tmp_path / "ComfyUI-HunyuanVideoWrapper"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("")
    (repo / "nodes_rf_inversion.py").write_text(source)
    if shipped:
        (repo / shipped).write_bytes(b"\x80\x02")
    return repo


def test_embeds_beside_the_module_through_script_directory_hunyuanvideowrapper(tmp_path):
    """ComfyUI-HunyuanVideoWrapper's nodes_rf_inversion.py loads the empty-prompt embeddings it
    commits, through a module-level `script_directory` (labelled a lookalike, set 108)."""
    ((conf, grounds),) = _td102(_node(tmp_path, HUNYUAN))
    assert conf == "low"
    assert "hunyuan_empty_prompt_embeds_dict.pt ships with the code" in grounds


def test_the_same_join_without_the_file_is_unsafe_pickle(tmp_path):
    assert [c for c, _ in _td102(_node(tmp_path, HUNYUAN, shipped=None))] == ["high"]


def test_a_pathlib_folder_of_the_file_counts(tmp_path):
    source = HUNYUAN.replace(
        "os.path.dirname(os.path.abspath(__file__))", "Path(__file__).resolve().parent"
    ).replace(
        'os.path.join(script_directory, "hunyuan_empty_prompt_embeds_dict.pt")',
        'script_directory / "hunyuan_empty_prompt_embeds_dict.pt"',
    )
    source = "from pathlib import Path\n" + source
    assert [c for c, _ in _td102(_node(tmp_path, source))] == ["low"]


def test_a_folder_name_bound_elsewhere_too_is_not_the_files_folder(tmp_path):
    """A second binding (a folder the user sets) makes the joined path the user's choice."""
    source = HUNYUAN.replace(
        "\n\n\nclass",
        '\nscript_directory = os.environ.get("EMBEDS", script_directory)\n\n\nclass',
    )
    assert "EMBEDS" in source
    assert [c for c, _ in _td102(_node(tmp_path, source))] == ["high"]


def test_a_function_that_rebinds_the_name_chooses_its_own_folder(tmp_path):
    source = HUNYUAN.replace(
        "    def process(self):\n", "    def process(self, script_directory):\n"
    )
    assert [c for c, _ in _td102(_node(tmp_path, source))] == ["high"]


def test_a_user_chosen_name_joined_to_the_files_folder_is_not_shipped(tmp_path):
    source = HUNYUAN.replace("def process(self):", "def process(self, name):").replace(
        '"hunyuan_empty_prompt_embeds_dict.pt"', "name"
    )
    assert [c for c, _ in _td102(_node(tmp_path, source))] == ["high"]


DMCONTROL = """import torch


class ColorWrapper:
    def __init__(self, mode):
        self._mode = mode
        self._colors = torch.load(f'src/env/data/{self._mode}.pt')
"""


def _env(tmp_path, source: str = DMCONTROL, shipped: tuple[str, ...] = ("color_easy.pt",)):
    repo = tmp_path / "dmcontrol-generalization-benchmark"
    (repo / "src" / "env" / "data").mkdir(parents=True)
    (repo / "setup.py").write_text("")
    (repo / "src" / "env" / "wrappers.py").write_text(source)
    for name in shipped:
        (repo / "src" / "env" / "data" / name).write_bytes(b"\x80\x02")
    return repo


def test_colour_tables_named_by_an_fstring_are_shipped_dmcontrol(tmp_path):
    """dmcontrol-generalization-benchmark's wrappers.py loads src/env/data/{mode}.pt, which it
    commits (color_easy.pt, color_hard.pt; labelled a lookalike, set 111)."""
    ((conf, grounds),) = _td102(_env(tmp_path))
    assert conf == "low"
    assert "color_easy.pt ships with the code" in grounds


def test_an_fstring_whose_folder_holds_no_such_file_is_unsafe_pickle(tmp_path):
    assert [c for c, _ in _td102(_env(tmp_path, shipped=("readme.txt",)))] == ["high"]


def test_an_fstring_that_names_any_file_is_never_looked_up(tmp_path):
    """`f"{name}.pt"` or a folder chosen at run time: any committed .pt would match."""
    for path in ("{self._mode}.pt", "src/{self._mode}/data.pt", "src/env/data/{self._mode}"):
        source = DMCONTROL.replace("src/env/data/{self._mode}.pt", path)
        repo = _env(tmp_path / path.replace("/", "_").strip("{}"), source)
        for extra in ("x.pt", "src/env/data.pt"):
            (repo / extra).write_bytes(b"\x80\x02")
        assert [c for c, _ in _td102(repo)] == ["high"], path


def test_glob_characters_in_the_fstring_are_taken_literally(tmp_path):
    source = DMCONTROL.replace("src/env/data/{self._mode}.pt", "src/env/data/[ab]{self._mode}.pt")
    repo = _env(tmp_path, source, shipped=("a_easy.pt",))
    assert [c for c, _ in _td102(repo)] == ["high"]
    (repo / "src" / "env" / "data" / "[ab]_easy.pt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(repo)] == ["low"]


def test_a_folder_name_rebound_anywhere_in_the_file_is_not_the_files_folder(tmp_path):
    """An import, a loop or `+=` of the same name makes its value unknown where it is read."""
    for i, rebinding in enumerate(
        (
            "from config import script_directory",
            "for script_directory in []:\n    pass",
            "script_directory += '/models'",
            "if os.environ.get('X'):\n    script_directory = os.environ['X']",
        )
    ):
        source = HUNYUAN.replace("\n\n\nclass", f"\n{rebinding}\n\n\nclass")
        (tmp_path / str(i)).mkdir()
        repo = _node(tmp_path / str(i), source)
        assert [c for c, _ in _td102(repo)] == ["high"], rebinding


# mas_music_generation (blind set 250): train_chord.py loads the datasets the repository
# commits, through names config/__init__.py re-exports from config/params_chord.py. The
# labeller judged all eleven such loads lookalikes; the scan flagged them high.
MAS_TRAIN = """import torch
from config import TRAIN_DATASET_PATH_CHORD, VAL_DATASET_PATH_CHORD, MODEL_URL

train = torch.load(TRAIN_DATASET_PATH_CHORD)
val = torch.load(VAL_DATASET_PATH_CHORD)
model = torch.load(MODEL_URL)
"""
MAS_PARAMS = """TRAIN_DATASET_PATH_CHORD = "data/dataset/chord_dataset_train.pt"
VAL_DATASET_PATH_CHORD = "data/dataset/chord_dataset_val.pt"
MODEL_URL = "/home/someone/chord_model.pt"
"""


def _mas(tmp_path):
    repo = tmp_path / "mas_music_generation"
    for folder in ("config", "agents/chord", "data/dataset"):
        (repo / folder).mkdir(parents=True)
    (repo / "config" / "__init__.py").write_text("from .params_chord import *\n")
    (repo / "config" / "params_chord.py").write_text(MAS_PARAMS)
    (repo / "agents" / "chord" / "train_chord.py").write_text(MAS_TRAIN)
    (repo / "data" / "dataset" / "chord_dataset_train.pt").write_bytes(b"PK")
    return repo


def test_a_committed_file_named_by_a_constant_of_the_projects_config_is_low(tmp_path):
    found = _td102(_mas(tmp_path))
    assert [c for c, _ in found] == ["low", "high", "high"]  # val absent; an absolute path
    assert "chord_dataset_train.pt ships with the code at the fixed path " in found[0][1]
    assert "TRAIN_DATASET_PATH_CHORD names (config)" in found[0][1]


def test_a_constant_the_config_binds_twice_says_nothing(tmp_path):
    repo = _mas(tmp_path)
    params = repo / "config" / "params_chord.py"
    params.write_text(MAS_PARAMS + 'TRAIN_DATASET_PATH_CHORD = "elsewhere/train.pt"\n')
    assert [c for c, _ in _td102(repo)] == ["high", "high", "high"]


def test_a_module_level_constant_of_the_loading_file_itself(tmp_path):
    repo = _repo(tmp_path, "import torch\nWEIGHTS = 'metrics/w.ckpt'\nnet = torch.load(WEIGHTS)\n")
    (repo / "metrics" / "w.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(repo)] == ["low"]


def test_a_committed_file_beside_the_module_by_concatenation_avian_mesh(tmp_path):
    """avian-mesh (blind set 251): bird_model.py loads its committed prior as
    `this_dir + '/pose_bone_prior.pth'` (a lookalike), while load_detector.py loads
    `this_dir + '/model_best.pth'`, which the README has users download (a must-flag)."""
    source = (
        "import os\nimport torch\n\ndef prior():\n"
        "    this_dir = os.path.dirname(__file__)\n"
        "    return torch.load(this_dir + '/pose_bone_prior.pth')\n"
    )
    repo = _repo(tmp_path, source)
    assert [c for c, _ in _td102(repo)] == ["high"]  # not in the tree: whoever puts it there
    (repo / "metrics" / "pose_bone_prior.pth").write_bytes(b"\x80\x02")
    ((conf, grounds),) = _td102(repo)
    assert conf == "low" and "pose_bone_prior.pth ships with the code" in grounds


def test_a_loop_variable_named_like_a_module_constant_is_not_that_constant(tmp_path):
    source = (
        "import torch\nckpt = 'metrics/w.ckpt'\n\n"
        "def load_all(paths):\n    for ckpt in paths:\n        torch.load(ckpt)\n"
    )
    repo = _repo(tmp_path, source)
    (repo / "metrics" / "w.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(repo)] == ["high"]


def test_str_of_a_path_found_from_file_is_the_packages_own_layout_aware_monodepth(tmp_path):
    """layout_aware_monodepth (blind set 322) loads its committed DeepLSD weights as
    `torch.load(str(ckpt))`, `ckpt = f"{Path(__file__).parent.parent}/artifacts/…"`: labelled
    lookalikes for TD101 and TD102. The `str()` around the name hid where the path comes from."""
    source = (
        "import torch\nfrom pathlib import Path\n\ndef load_deeplsd(net):\n"
        '    ckpt = f"{Path(__file__).parent.parent}/artifacts/deeplsd/deeplsd_md.tar"\n'
        '    net.load_state_dict(torch.load(str(ckpt))["model"])\n'
    )
    assert _td102(_repo(tmp_path, source)) == []
    src2 = source.replace("str(ckpt)", "str(user_path)")
    assert [c for c, _ in _td102(_repo(tmp_path / "b", src2))] == ["high"]


def test_an_fstring_on_the_files_folder_name_and_its_parent(tmp_path):
    """`f"{HERE}/w.ckpt"` reads the file beside the module; `HERE.parent / "w.ckpt"` the one a
    folder up: shipped when the tree holds it there, and only there."""
    head = "import torch\nfrom pathlib import Path\nHERE = Path(__file__).parent\n"
    beside = _repo(tmp_path / "a", head + 'net = torch.load(f"{HERE}/w.ckpt")\n')
    assert [c for c, _ in _td102(beside)] == ["high"]
    (beside / "metrics" / "w.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(beside)] == ["low"]
    above = _repo(tmp_path / "b", head + 'net = torch.load(HERE.parent / "w.ckpt")\n')
    (above / "metrics" / "w.ckpt").write_bytes(b"\x80\x02")  # beside, not above: unknown
    assert [c for c, _ in _td102(above)] == ["high"]
    (above / "w.ckpt").write_bytes(b"\x80\x02")
    assert [c for c, _ in _td102(above)] == ["low"]
