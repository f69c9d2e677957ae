"""Container facts: are we in one, which kind (and the evidence), /dev/shm, NVIDIA runtime plumbing.

Everything reads small files under ``root`` (default ``/``) and a given environment, so tests can
point it at a fake tree. No processes, no torch: it runs in the parent and takes about a millisecond.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

# Where each runtime leaves a trace, in the order we trust them (first named kind wins).
# cgroup paths (v1, or v2 without a cgroup namespace) and mount sources name the runtime.
_PATH_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"kubepods|/var/lib/kubelet/pods/", "kubernetes"),
    (r"/docker[/-]|/var/lib/docker/", "docker"),
    (r"libpod|/var/lib/containers/storage/", "podman"),
    (r"crio-|/var/lib/containers/storage/", "cri-o"),
    (r"containerd", "containerd"),
    (r"/lxc[/.]|lxc\.payload", "lxc"),
)
# The driver libraries the NVIDIA container toolkit mounts into a container given a GPU.
DRIVER_LIBS = ("libcuda.so.1", "libnvidia-ml.so.1")
_LIB_DIRS = (
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "usr/lib64",
    "usr/lib",
    "usr/local/nvidia/lib64",  # GKE's driver installer
    "usr/lib/wsl/lib",
)
_SERVICE_ACCOUNT = (
    "var/run/secrets/kubernetes.io/serviceaccount",
    "run/secrets/kubernetes.io/serviceaccount",
)


def _read(path: Path, limit: int = 65536) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(limit)
    except OSError:
        return None


def _exists(path: Path, directory: bool = False) -> bool:
    """Like Path.exists()/is_dir(), but False where a parent is unreadable (non-root user)."""
    try:
        return path.is_dir() if directory else path.exists()
    except OSError:
        return False


def parse_size(text: str) -> int | None:
    """tmpfs ``size=`` option (``65536k``, ``64m``, ``2g`` or bytes) -> bytes."""
    m = re.fullmatch(r"(\d+)([kmgt]?)", text.strip().lower())
    if not m:
        return None
    return int(m.group(1)) * 1024 ** " kmgt".index(m.group(2) or " ")


def mounts(root: Path) -> list[dict[str, str]]:
    """/proc/self/mountinfo as dicts: mount point, fs type, source, fs root, the mount's own
    options (``rw``/``ro``, …) and the super block's options."""
    rows = []
    for line in (_read(root / "proc/self/mountinfo", 1 << 20) or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        rows.append(
            {
                "fs_root": fields[3],
                "mount_point": fields[4],
                "mount_options": fields[5] if len(fields) > 5 else "",
                "fs_type": tail[0],
                "source": tail[1],
                "options": tail[2] if len(tail) > 2 else "",
            }
        )
    return rows


def _kind_from_paths(text: str) -> str | None:
    for pattern, kind in _PATH_PATTERNS:
        if re.search(pattern, text):
            return kind
    return None


def _engine_from_containerenv(text: str) -> str:
    """podman, buildah and CRI-O write /run/.containerenv; podman and buildah name themselves."""
    m = re.search(r'^engine="([a-z-]+?)-[\d.]', text, re.MULTILINE)
    return m.group(1) if m else "oci"


def detect(root: Path, environ: dict[str, str], mount_rows: list[dict[str, str]]) -> dict[str, Any]:
    """Container kind and engine, with one evidence line per clue found."""
    evidence: list[dict[str, str]] = []

    def clue(source: str, kind: str) -> None:
        evidence.append({"source": source, "kind": kind})

    if _exists(root / ".dockerenv"):
        clue("/.dockerenv exists", "docker")
    containerenv = _read(root / "run/.containerenv")
    if containerenv is not None:
        clue("/run/.containerenv exists", _engine_from_containerenv(containerenv))
    systemd = (_read(root / "run/systemd/container") or "").strip()
    if systemd:
        clue(f"/run/systemd/container says {systemd[:32]!r}", systemd[:32])
    env_container = environ.get("container", "").strip()
    if env_container:
        clue(f"$container={env_container[:32]!r}", env_container[:32])
    if "KUBERNETES_SERVICE_HOST" in environ:
        clue("$KUBERNETES_SERVICE_HOST is set", "kubernetes")
    for rel in _SERVICE_ACCOUNT:
        if _exists(root / rel, directory=True):
            clue(f"/{rel} exists", "kubernetes")
            break
    for rel in ("proc/1/cgroup", "proc/self/cgroup"):
        kind = _kind_from_paths(_read(root / rel) or "")
        if kind:
            clue(f"/{rel} names {kind}", kind)
            break
    for row in mount_rows:
        if row["mount_point"] in ("/", "/etc/hostname", "/etc/hosts"):
            kind = _kind_from_paths(f"{row['fs_root']} {row['options']}")
            if kind:
                clue(f"mount of {row['mount_point']} comes from {kind}'s storage", kind)
                break
    kinds = [e["kind"] for e in evidence]
    engines = [k for k in kinds if k != "kubernetes"]
    kind = "kubernetes" if "kubernetes" in kinds else (engines[0] if engines else None)
    return {
        "detected": bool(evidence),
        "kind": kind,
        "engine": engines[0] if engines else None,
        "evidence": evidence,
    }


def shm(root: Path, mount_rows: list[dict[str, str]]) -> dict[str, Any]:
    """/dev/shm: is it its own mount, what backs it, its size (the mount option, else statvfs)."""
    rows = [r for r in mount_rows if r["mount_point"] == "/dev/shm"]
    row = rows[-1] if rows else None  # the last mount on a point is the one visible
    facts: dict[str, Any] = {
        "path": "/dev/shm",
        "exists": _exists(root / "dev/shm", directory=True),
        "mounted": row is not None,
        "fs_type": row["fs_type"] if row else None,
        "source": row["source"] if row else None,
        "size_bytes": None,
        "free_bytes": None,
        "writable": None,
        "read_only": _read_only(row) if row else None,
    }
    if row:
        opt = next((o for o in row["options"].split(",") if o.startswith("size=")), None)
        facts["size_bytes"] = parse_size(opt[5:]) if opt else None
    if facts["exists"]:
        # access(2) says what open(O_RDWR|O_CREAT) under it would: mode, owner, a ro mount.
        facts["writable"] = os.access(root / "dev/shm", os.W_OK | os.X_OK)
        try:
            st = os.statvfs(root / "dev/shm")
            facts["free_bytes"] = st.f_bavail * st.f_frsize
            if facts["size_bytes"] is None:
                facts["size_bytes"] = st.f_blocks * st.f_frsize
        except OSError:
            pass
    return facts


def _read_only(row: dict[str, str]) -> bool:
    """A read-only mount: ``ro`` among the mount's own options or the super block's."""
    options = f"{row.get('mount_options', '')},{row['options']}".split(",")
    return "ro" in options


def nvidia_runtime(root: Path) -> dict[str, Any]:
    """Driver pieces the NVIDIA container toolkit mounts (device nodes are in host.nvidia)."""
    libs: dict[str, str | None] = {}
    for lib in DRIVER_LIBS:
        found = next((d for d in _LIB_DIRS if _exists(root / d / lib)), None)
        libs[lib] = f"/{found}/{lib}" if found else None
    smi = next(
        (p for p in ("usr/bin/nvidia-smi", "usr/local/nvidia/bin/nvidia-smi") if _exists(root / p)),
        None,
    )
    return {"driver_libs": libs, "nvidia_smi": f"/{smi}" if smi else None}


def gather(root: Path = Path("/"), environ: dict[str, str] | None = None) -> dict[str, Any]:
    environ = dict(os.environ) if environ is None else environ
    rows = mounts(root)
    facts = detect(root, environ, rows)
    facts["shm"] = shm(root, rows)
    facts["nvidia"] = nvidia_runtime(root)
    return facts
