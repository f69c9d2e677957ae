"""benchmarks/scan_features.py: the per-repository shares and the class oracle behind
docs/scan-precision.md's twenty-second-session paragraph, on rows made here."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load():
    spec = importlib.util.spec_from_file_location("scan_features", BENCH / "scan_features.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scan_features"] = mod
    spec.loader.exec_module(mod)
    return mod


sf = _load()


def row(repo: str, real: bool, **kw) -> dict:
    base = {"repo": repo, "rule": "TD101", "confidence": "high", "real": real}
    return base | {"file_falls_back": False, "file_saves": False} | kw


def test_a_repository_weighs_one_whatever_its_finding_count():
    """ClassSR's one file of eighteen loads must not outweigh seventeen other repositories."""
    rows = [row("big/one", False) for _ in range(18)] + [row("small/two", True)]
    (real_repos, repos, real, findings) = sf.shares(rows, lambda r: "all")["all"]
    assert (real_repos, repos, real, findings) == (1.0, 2, 1, 19)


def test_the_oracle_takes_classes_best_first_while_precision_holds():
    good = [row(f"r/{i}", True) for i in range(9)]
    half = [row(f"h/{i}", i % 2 == 0, file_falls_back=True) for i in range(10)]
    assert sf.oracle(good + half) == (9, 0)  # the half-real class would take it to 73 %
    assert sf.oracle(good + half, floor=0.7) == (14, 5)


def test_a_load_of_a_file_the_project_saves_from_device_data():
    trainer = (
        "import torch\ndef save(model):\n    torch.save(model.state_dict(), 'best_model.pth')\n"
    )
    cache = "import torch\ndef keep(x):\n    torch.save(x.cpu(), 'feats.pt')\n"
    saved = sf.device_saves({"train.py": trainer, "cache.py": cache})
    assert "file:best_model.pth" in saved and "file:feats.pt" not in saved
    test = textwrap.dedent(
        """
        import torch
        net.load_state_dict(torch.load("best_model.pth"))
        """
    )
    assert sf.load_keys("test.py", test, 3) & saved == {"file:best_model.pth"}


def test_a_hard_coded_device_beside_the_functions_own_device_variable():
    src = textwrap.dedent(
        """
        def step(self, x):
            y = x.to(self.device)
            noise = torch.randn(3, device="cuda")
            return y + noise
        """
    )
    assert sf.uses_device_variable(src, 4) is True
    assert sf.uses_device_variable(src.replace("x.to(self.device)", "x"), 4) is False
    assert sf.uses_device_variable("x = 1\n", 1) is None


def test_a_transform_no_config_names_is_not_named_elsewhere_ppiformer(tmp_path):
    """PPIformer (set 219): `.cuda()` in a transform class nothing constructs and no config
    names. The split asks whether the finding's top-level class or function is named anywhere
    else in the project: another file, its own file past the definition, a config, a README."""
    text = textwrap.dedent(
        """\
        import torch

        class PrecomputeBases:
            def __call__(self, data):
                return data.x.cuda()

        def helper():
            return 1
        """
    )
    files = {"transforms.py": text, "train.py": "from transforms import helper\nhelper()\n"}
    assert sf.outer_definition(text, 5) == "PrecomputeBases"
    assert sf.outer_definition(text, 1) is None  # module level
    assert not sf.named_elsewhere("PrecomputeBases", "transforms.py", files, "")
    assert sf.named_elsewhere("helper", "transforms.py", files, "")
    assert sf.named_elsewhere(
        "PrecomputeBases", "transforms.py", files, "_target_: t.PrecomputeBases"
    )
    (tmp_path / "conf.yaml").write_text("_target_: transforms.PrecomputeBases\n")
    (tmp_path / "big.json").write_text("PrecomputeBases" + " " * 64)
    assert "PrecomputeBases" in sf.other_texts(tmp_path)
    assert sf.other_texts(tmp_path, limit=48).count("PrecomputeBases") == 1  # big.json: over
