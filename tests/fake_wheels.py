"""Small wheels named torch and torchvision, and a local package index that serves them.

`torchdoctor fix` installs from PyTorch's wheel indexes; only PyPI is reachable here, and a real
torch wheel is hundreds of MB. These wheels are built with the standard library (a zip with the
metadata pip reads: METADATA, WHEEL, RECORD) and say what the torch probe asks: `torch.__version__`
with a local tag (`+cpu`, `+cu128`), `torch.version.cuda`, `torch.cuda.is_available()`, and
`torchvision.version.cuda` for the companion check. The index has the layout of
https://download.pytorch.org/whl (one PEP 503 simple index per variant: `<root>/cpu/torch/`), so
`fix --index-mirror file://<root>` stands in for it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import zipfile
from pathlib import Path

TORCH = "2.13.0"
VISION = "0.28.0"
CUDA = {"cpu": None, "cu128": "12.8"}


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(
    out: Path,
    name: str,
    version: str,
    files: dict[str, str | bytes],
    requires: tuple[str, ...] = (),
) -> Path:
    """A pure-Python wheel ``name-version-py3-none-any.whl`` holding ``files``."""
    dist_info = f"{name}-{version}.dist-info"
    meta = "\n".join(
        ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        + [f"Requires-Dist: {r}" for r in requires]
    )
    wheel_meta = "Wheel-Version: 1.0\nGenerator: torchdoctor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = {**files, f"{dist_info}/METADATA": meta + "\n", f"{dist_info}/WHEEL": wheel_meta}
    record = []
    path = out / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, content in entries.items():
            data = content.encode() if isinstance(content, str) else content
            zf.writestr(arc, data)
            record.append(f"{arc},{_digest(data)},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        zf.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return path


def torch_files(variant: str) -> dict[str, str | bytes]:
    cuda = CUDA[variant]
    return {
        "torch/__init__.py": (
            f"__version__ = '{TORCH}+{variant}'\n"
            "from . import version, cuda, backends, _C, __config__  # noqa\n"
            "def get_num_threads():\n    return 1\n"
        ),
        "torch/version.py": f"cuda = {cuda!r}\nhip = None\ngit_version = 'fake'\ndebug = False\n",
        "torch/cuda.py": "def is_available():\n    return False\n"
        "def device_count():\n    return 0\n",
        "torch/backends.py": "",
        "torch/_C.py": "",  # torch.libs reads torch._C's cuDNN bindings (none here)
        "torch/__config__.py": "def show():\n    return ''\n",
    }


def vision_files(variant: str, broken: bool = False, padding: int = 0) -> dict[str, str | bytes]:
    """torchvision; ``broken``: its import fails the way a build for another torch does;
    ``padding``: that many extra files, so installing it takes long enough to interrupt."""
    init = f"__version__ = '{VISION}+{variant}'\nfrom . import version  # noqa\n"
    if broken:
        init = "raise RuntimeError('operator torchvision::nms does not exist')\n"
    files: dict[str, str | bytes] = {
        "torchvision/__init__.py": init,
        "torchvision/version.py": f"__version__ = '{VISION}+{variant}'\ncuda = {CUDA[variant]!r}\n",
    }
    for i in range(padding):
        files[f"torchvision/_pad/f{i}.bin"] = os.urandom(2048)
    return files


def write_index(root: Path, variant: str, wheels: list[Path]) -> None:
    """``root/variant/<project>/index.html`` listing each wheel (kept beside it)."""
    by_project: dict[str, list[Path]] = {}
    for wheel in wheels:
        by_project.setdefault(wheel.name.split("-")[0], []).append(wheel)
    for project, files in by_project.items():
        folder = root / variant / project
        folder.mkdir(parents=True, exist_ok=True)
        links = []
        for wheel in files:
            target = folder / wheel.name
            if not target.exists():
                os.link(wheel, target)
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            name = html.escape(wheel.name)
            links.append(f'<a href="{name}#sha256={digest}">{name}</a><br/>')
        (folder / "index.html").write_text(
            "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
        )


def build_mirror(root: Path, broken_cpu_vision: bool = False, padding: int = 0) -> Path:
    """A mirror of the PyTorch indexes with torch and torchvision for the cpu and cu128 variants."""
    wheels = root / "_wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for variant in CUDA:
        variant_wheels = wheels / variant
        variant_wheels.mkdir(exist_ok=True)
        torch = build_wheel(variant_wheels, "torch", f"{TORCH}+{variant}", torch_files(variant))
        broken = broken_cpu_vision and variant == "cpu"
        vision = build_wheel(
            variant_wheels,
            "torchvision",
            f"{VISION}+{variant}",
            vision_files(variant, broken, padding if variant == "cpu" else 0),
            (f"torch=={TORCH}",),
        )
        write_index(root, variant, [torch, vision])
    return root
