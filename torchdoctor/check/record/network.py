"""The network a distributed job meets on this machine: its interfaces and the rendezvous port."""

from __future__ import annotations

from torchdoctor.typed_json import Record

from .base import Bool, Int, Str, record


@record
class NetInterface(Record):
    """One interface as NCCL and Gloo choose among them (addresses themselves are not kept)."""

    name: Str
    up: Bool  # the administrative IFF_UP flag (psutil.net_if_stats().isup)
    operstate: Str  # Linux /sys/class/net/<name>/operstate: up, down, unknown (loopback), ...
    ipv4: Bool  # has an IPv4 address
    ipv6: Bool  # has an IPv6 address


@record
class PortProbe(Record):
    """Whether the rendezvous port (MASTER_PORT, else torchrun's 29500) could be bound here."""

    port: Int
    source: Str  # "MASTER_PORT" or "default" (torchrun's 29500 inside a Slurm/launcher job)
    in_use: Bool  # a bind on 127.0.0.1 or 0.0.0.0 failed with "Address already in use"
    error: Str  # any other bind error (e.g. a port below 1024 without root): unknown
    skipped: Str  # why no bind was tried (a launched rank: its own job holds the port)
    owner_pid: Int
    owner_name: Str
    own_job: Bool  # the owner is this process or one of its parents (torchrun's agent)


@record
class Network(Record):
    interfaces: list[NetInterface] | None  # None: never looked (older facts, a paste)
    interfaces_truncated: Bool  # more interfaces than were recorded
    master_port: PortProbe
