"""Where torch would come from, without importing it: the installed copy, and anything hiding it.

Standard library only, and used three ways: by torchdoctor itself (its own interpreter), by
torch_probe.py, and run as the probe child under another interpreter, which then prints one
JSON event (``{"event": "end", "stage": "locate", ...}``) in the torch probe's format.

A ``torch.py`` or ``torch/`` package in the directory a script runs from (or in a PYTHONPATH entry)
is imported instead of the installed torch. It is told apart from a real installation by what an
installer leaves: distribution metadata beside it, or the compiled ``torch._C`` extension inside.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import sysconfig
from importlib.machinery import PathFinder


def _spec(entry, name="torch"):
    try:
        return PathFinder.find_spec(name, [entry])
    except (ImportError, OSError, ValueError):
        return None


def _installed(entry, spec, name="torch"):
    """Did an installer put this torch here (metadata beside it, or a built torch._C inside)?"""
    meta = (f"{name}-*.dist-info", f"{name}-*.egg-info", f"{name}.egg-info")
    beside = (os.path.join(glob.escape(entry), pattern) for pattern in meta)
    inside = (os.path.join(glob.escape(d), "_C.*") for d in spec.submodule_search_locations or [])
    return any(glob.glob(pattern) for pattern in (*beside, *inside))


def _shadow(entry, spec, via):
    package = bool(spec.submodule_search_locations)
    if spec.origin in (None, "namespace"):  # a bare folder: a namespace package
        path, kind = next(iter(spec.submodule_search_locations)), "namespace"
    else:
        path = os.path.dirname(spec.origin) if package else spec.origin
        kind = "package" if package else "module"
    return {"path": os.path.abspath(path), "kind": kind, "via": via}


# Standard-library modules that `import torch` imports and a fresh interpreter has not already
# loaded (builtins and start-up modules cannot be shadowed): measured on torch 2.13.0 (CPU),
# Python 3.11.7, 2026-11-26, as the top-level names in sys.modules after `import torch`, less
# those present after start-up. A file named like one of them in the directory a script runs from
# is imported instead: pytorch/pytorch#14014, a script named dis.py ("module 'dis' has no
# attribute 'COMPILER_FLAG_NAMES'" from inspect, during `import torch`).
TORCH_STDLIB = (
    "argparse", "array", "ast", "asyncio", "base64", "binascii", "bisect", "bz2", "calendar",
    "cmath", "concurrent", "contextvars", "copy", "csv", "ctypes", "dataclasses", "datetime",
    "difflib", "dis", "email", "fcntl", "gettext", "glob", "grp", "gzip", "hashlib", "heapq",
    "http", "inspect", "json", "linecache", "locale", "logging", "lzma", "math", "mmap",
    "multiprocessing", "numbers", "opcode", "pickle", "pickletools", "pkgutil", "platform",
    "pprint", "queue", "quopri", "random", "runpy", "select", "selectors", "shutil", "signal",
    "socket", "ssl", "string", "struct", "subprocess", "tarfile", "tempfile", "textwrap",
    "threading", "timeit", "token", "tokenize", "traceback", "typing", "unittest", "uuid",
    "weakref", "zipfile", "zlib",
)  # fmt: skip
MAX_CWD_ENTRIES = 100_000
COMPANION_NAMES = (
    "torchvision",
    "torchaudio",
)  # a huge working directory is read this far, not whole


def stdlib_shadows(cwd):
    """Files and packages in ``cwd`` named like a standard-library module torch imports."""
    if not cwd:
        return []
    names = set()
    try:
        with os.scandir(cwd) as it:
            for i, entry in enumerate(it):
                if i >= MAX_CWD_ENTRIES:
                    break
                names.add(entry.name)
    except OSError:
        return []
    builtin = set(sys.builtin_module_names)
    out = []
    for module in TORCH_STDLIB:
        if module in builtin:
            continue
        file, package = module + ".py", os.path.join(cwd, module, "__init__.py")
        if file in names and os.path.isfile(os.path.join(cwd, file)):
            out.append({"path": os.path.join(cwd, file), "kind": "stdlib", "via": "cwd"})
        elif module in names and os.path.isfile(package):
            path = os.path.join(cwd, module)
            out.append({"path": path, "kind": "stdlib", "via": "cwd"})
    return out


def companion_shadows(entries, cwd):
    """A torchvision/ or torchaudio/ source checkout in ``cwd`` (or earlier on the path) ahead of
    the installed copy: a script run there imports the checkout, whose compiled ops are not
    built (pytorch/vision#2228: "object has no attribute nms" from /private/tmp/vision)."""
    out = []
    for name in COMPANION_NAMES:
        where = find_torch(entries, cwd, name)
        if where["torch"]:  # only ahead of an installed copy: alone, it is the install
            out += [dict(s, module=name) for s in where["shadows"] if s["kind"] != "namespace"]
    return out


def find_torch(entries, cwd=None, name="torch"):
    """The installed torch (or ``name``) among ``entries`` (a sys.path: the probe child puts no
    folder of ours on it), and the shadows a user's script started in ``cwd`` would import first.

    A namespace folder only wins when no regular torch exists anywhere (PEP 420), so it is a
    shadow only then.
    """
    path = [(cwd, "cwd")] if cwd else []
    path += [(e or os.curdir, "sys.path") for e in entries]
    found, shadows, namespaces, seen = None, [], [], set()
    for entry, via in path:
        try:
            entry = os.path.abspath(entry)  # '' and '.' mean the working directory
        except (OSError, TypeError):  # a deleted working directory; a non-path entry
            continue
        if entry in seen or not os.path.isdir(entry):
            continue
        seen.add(entry)
        spec = _spec(entry, name)
        if spec is None:
            continue
        if spec.origin in (None, "namespace"):
            namespaces.append(_shadow(entry, spec, via))
        elif _installed(entry, spec, name):
            found = {"origin": spec.origin, "entry": entry}
            break
        else:
            shadows.append(_shadow(entry, spec, via))
    if found is None and not shadows:
        shadows = namespaces[:1]
    return {"torch": found, "shadows": shadows}


class InstalledTorchFinder:
    """A meta-path finder that resolves ``import torch`` to the installed copy, so the probe
    describes the real torch even when a shadow sits earlier on its path."""

    def __init__(self, entry):
        self.entry = entry

    def find_spec(self, name, path=None, target=None):
        return _spec(self.entry) if name == "torch" else None


def prefer_installed_torch():
    """In a probe child, before ``import torch``: a torch.py that PYTHONPATH puts ahead of the
    installed torch must not fool the probe."""
    where = find_torch(sys.path)
    if where["torch"] and where["shadows"]:
        sys.meta_path.insert(0, InstalledTorchFinder(where["torch"]["entry"]))


def externally_managed():
    """The EXTERNALLY-MANAGED marker (PEP 668) that makes pip refuse to install, or None.

    pip ignores the marker inside a virtual environment, and so do we.
    """
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        return None
    try:
        marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
    except (KeyError, TypeError):
        return None
    return marker if os.path.isfile(marker) else None


def user_cwd():
    try:
        return os.getcwd()
    except OSError:  # run from a deleted directory: nothing there can shadow anything
        return None


def describe(cwd):
    return {
        "executable": sys.executable,
        "prefix": sys.prefix,
        "version": ".".join(map(str, sys.version_info[:3])),
        "externally_managed": externally_managed(),
        **find_torch(sys.path, cwd),
    }


if __name__ == "__main__":
    data = describe(user_cwd())
    sys.stdout.write(json.dumps({"event": "end", "stage": "locate", "data": data}) + "\n")
    sys.stdout.write(json.dumps({"event": "done"}) + "\n")
    sys.stdout.flush()
