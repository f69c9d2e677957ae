"""Network facts a distributed launch depends on: the interfaces NCCL/Gloo may pick, and whether
the rendezvous port is already taken.

The port test binds the one port the job will use (MASTER_PORT, else torchrun's default 29500
inside a launcher or Slurm job) and closes the socket at once: it never listens or connects, so a
process already holding the port is not disturbed (our bind just fails). It is not tried at all
on a machine with no distributed settings, nor inside a launched rank (RANK or
TORCHELASTIC_RUN_ID set), where the job's own store is meant to hold the port.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path
from typing import Any

import psutil

# A Kubernetes node can carry hundreds of veth pairs; the record keeps this many.
MAX_INTERFACES = 256
DEFAULT_PORT = 29500  # torchrun's and torch.distributed.launch's --master-port default
# Variables that say a distributed launch is being prepared here (torchrun's PET_* settings,
# Slurm's allocation): only then is the default port worth testing.
LAUNCH_VARS = ("WORLD_SIZE", "PET_NNODES", "PET_NPROC_PER_NODE", "SLURM_JOB_ID")
IN_JOB_VARS = ("RANK", "TORCHELASTIC_RUN_ID")


def _operstate(root: Path, name: str) -> str | None:
    try:
        with open(root / "sys/class/net" / name / "operstate", encoding="ascii") as f:
            return f.read(32).strip() or None
    except (OSError, ValueError):
        return None


def interfaces(root: Path = Path("/")) -> dict[str, Any]:
    """Each interface's name, up flag, Linux operstate and address families (never the
    addresses: they identify the machine and no check needs them)."""
    try:
        stats = psutil.net_if_stats()
        addrs = psutil.net_if_addrs()
    except (OSError, psutil.Error):
        return {"interfaces": None, "interfaces_truncated": None}
    names = sorted(set(stats) | set(addrs))
    listed = []
    for name in names[:MAX_INTERFACES]:
        families = {a.family for a in addrs.get(name, [])}
        listed.append(
            {
                "name": name,
                "up": stats[name].isup if name in stats else None,
                "operstate": _operstate(root, name),
                "ipv4": socket.AF_INET in families,
                "ipv6": socket.AF_INET6 in families,
            }
        )
    return {"interfaces": listed, "interfaces_truncated": len(names) > MAX_INTERFACES}


def _port_to_test(env: dict[str, str]) -> tuple[int | None, str | None, str | None]:
    """(port, source, why not tested)."""
    raw = env.get("MASTER_PORT", "").strip()
    if raw:
        if not raw.isdigit() or not 0 < int(raw) < 65536:
            return None, "MASTER_PORT", "MASTER_PORT is not a port number"
        port, source = int(raw), "MASTER_PORT"
    elif any(env.get(v) for v in LAUNCH_VARS):
        port, source = DEFAULT_PORT, "default"
    else:
        return None, None, "no distributed launch is set up here"
    if any(env.get(v) for v in IN_JOB_VARS):
        return port, source, "inside a launched rank: its own job holds the port"
    return port, source, None


def _bind_error(host: str, port: int) -> int | None:
    """The errno of binding host:port (None: it bound). SO_REUSEADDR as torch's TCPStore sets
    it, so a leftover TIME_WAIT connection does not count as taken; Windows' SO_REUSEADDR would
    share a held port instead, so it is not set there."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            if os.name != "nt":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:  # no IPv4 at all reads as an error too, not as "in use"
        return exc.errno or -1
    return None


def _owner(port: int) -> dict[str, Any]:
    """The pid and name listening on ``port`` where psutil may see it (others' sockets need
    root on Linux, any on macOS)."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (OSError, psutil.Error):
        return {}
    pids = [c.pid for c in conns if c.laddr and c.laddr.port == port and c.status == "LISTEN"]
    pid = next((p for p in pids if p), None)
    if pid is None:
        return {}
    try:
        me = psutil.Process()
        ours = {me.pid, *(p.pid for p in me.parents())}
        name = psutil.Process(pid).name()
    except (OSError, psutil.Error):
        return {"owner_pid": pid}
    return {"owner_pid": pid, "owner_name": name, "own_job": pid in ours}


def master_port(env: dict[str, str]) -> dict[str, Any]:
    port, source, skipped = _port_to_test(env)
    out: dict[str, Any] = {"port": port, "source": source, "skipped": skipped}
    if port is None or skipped:
        return out
    errors = [_bind_error(host, port) for host in ("127.0.0.1", "0.0.0.0")]
    out["in_use"] = errno.EADDRINUSE in errors
    other = next((e for e in errors if e not in (None, errno.EADDRINUSE)), None)
    if other is not None:
        out["error"] = os.strerror(other) if other > 0 else "bind failed"
    if out["in_use"]:
        out.update(_owner(port))
    return out


def gather(env: dict[str, str] | None = None, root: Path = Path("/")) -> dict[str, Any]:
    env = dict(os.environ) if env is None else env
    return {**interfaces(root), "master_port": master_port(env)}
