"""network: can a distributed job's sockets work here? The interfaces NCCL and Gloo are told to
use (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), whether a multi-node job has a routable one, and
whether the rendezvous port (MASTER_PORT) is already taken on this machine.

NCCL_SOCKET_IFNAME's syntax, as NCCL's environment-variable docs give it: a comma list of name
prefixes; a leading ``^`` excludes what the list matches; a leading ``=`` (after any ``^``)
makes every entry an exact name. GLOO_SOCKET_IFNAME is a comma list of exact names.
"""

from __future__ import annotations

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems

from ..record import Facts
from ..record.network import NetInterface
from .common import Context, grounded, set_env
from .launch_env import is_loopback, multi_node

ID = "network"
TITLE = "Network for distributed jobs: socket interfaces, rendezvous port"
ORDER = 47  # after `launch`
NEEDS = ("network",)
FINDINGS = {
    "socket-ifname-matches-none": "NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME names no interface "
    "with an address here",
    "socket-ifname-down": "the interfaces NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME names are down",
    "no-routable-interface": "a job over several nodes, but only loopback or container-bridge "
    "interfaces are up",
    "master-port-in-use": "MASTER_PORT (or torchrun's 29500) is already bound on this machine",
}
# NCCL's own last resorts: loopback, then Docker's bridge; neither reaches another machine.
LOCAL_ONLY = ("lo", "docker", "veth", "virbr", "br-")
FAILS_WITH = {
    "NCCL_SOCKET_IFNAME": ": NCCL stops with 'no socket interface found' (ncclSystemError)",
    "GLOO_SOCKET_IFNAME": ": init_process_group cannot find the device Gloo is told to use",
}


def _has_address(i: NetInterface) -> bool:
    return bool(i.ipv4 or i.ipv6)


def _is_up(i: NetInterface) -> bool:
    return i.up is not False and i.operstate != "down"


def nccl_selects(value: str, names: list[str]) -> list[str]:
    """The interface names NCCL_SOCKET_IFNAME=value lets NCCL consider."""
    exclude = value.startswith("^")
    spec = value[1:] if exclude else value
    exact = spec.startswith("=")
    entries = [e.strip() for e in (spec[1:] if exact else spec).split(",") if e.strip()]

    def matches(name: str) -> bool:
        return any(name == e if exact else name.startswith(e) for e in entries)

    return [n for n in names if matches(n) != exclude]


def _routable(interfaces: list[NetInterface]) -> list[str]:
    """Up interfaces with an address that could reach another machine, by name."""
    return [
        i.name
        for i in interfaces
        if i.name and _is_up(i) and _has_address(i) and not i.name.startswith(LOCAL_ONLY)
    ]


def _ifname_problem(facts: Facts, var: str, interfaces: list[NetInterface]) -> Problem | None:
    value = facts.env.get(var, "").strip()
    if not value:
        return None
    by_name = {i.name: i for i in interfaces if i.name}
    if var == "NCCL_SOCKET_IFNAME":
        picked = [by_name[n] for n in nccl_selects(value, sorted(by_name))]
        usable = [i for i in picked if _has_address(i)]
        missing = not usable
    else:  # Gloo: exact names, each of which must exist
        wanted = [n.strip() for n in value.split(",") if n.strip()]
        missing = any(n not in by_name for n in wanted)
        usable = [by_name[n] for n in wanted if n in by_name]
    if not missing and any(_is_up(i) for i in usable):
        return None
    candidates = _routable(interfaces) or [i.name for i in interfaces if i.name and _is_up(i)]
    code = "socket-ifname-matches-none" if missing else "socket-ifname-down"
    have = ", ".join(f"{i.name} ({'up' if _is_up(i) else 'down'})" for i in interfaces[:8])
    what = "matches no interface with an address" if missing else "matches only interfaces down"
    fails = FAILS_WITH.get(var, "")
    message = f"{var}={value!r} {what} on this machine (interfaces: {have or 'none'}){fails}"
    return Problem(code, Status.FAIL, message, _ifname_fixes(facts, var, candidates))


def _ifname_fixes(facts: Facts, var: str, candidates: list[str]) -> list[Remedy]:
    because = grounded(facts, f"env.{var}", "network.interfaces")
    if not candidates:
        return [Remedy(f"Bring up an IP interface for {var} to name.", evidence=because)]
    pick = candidates[0]
    value = f"={pick}" if var == "NCCL_SOCKET_IFNAME" else pick
    return [
        Remedy(
            f"Name an interface that exists and is up here ({', '.join(candidates[:4])}): "
            f"{var}={value}, or unset {var} to let it choose.",
            (set_env(facts, var, value),),
            because,
        )
    ]


def _no_routable(facts: Facts, interfaces: list[NetInterface]) -> Problem | None:
    env = facts.env
    spans = multi_node(env)
    live = [i for i in interfaces if i.name and _is_up(i) and _has_address(i)]
    if spans and not _routable(interfaces):
        why = f"a job over several nodes ({spans}={env[spans]})"
    elif not live and (spans or env.get("WORLD_SIZE") or env.get("MASTER_ADDR")):
        why = "a distributed job (NCCL needs an IP interface even on one node)"
    else:
        return None
    up = ", ".join(i.name or "" for i in live) or "none"
    message = (
        f"{why}, but the only interfaces up with an address here are: {up}. NCCL and Gloo "
        "cannot reach another machine through them ('unhandled system error', "
        "'Socket creation failed')"
    )
    because = grounded(facts, "network.interfaces", f"env.{spans}" if spans else "env.WORLD_SIZE")
    fixes = []
    if facts.container.detected:
        fixes.append(
            Remedy(
                "Run the container on the host's network (docker run --network=host) so the "
                "host's interfaces are seen inside it.",
                evidence=grounded(facts, *because, "container.detected"),
            )
        )
    fixes.append(
        Remedy(
            "Bring up the interface that connects the nodes, then name it: "
            "export NCCL_SOCKET_IFNAME=<that interface> (and GLOO_SOCKET_IFNAME).",
            evidence=because,
        )
    )
    return Problem("no-routable-interface", Status.FAIL, message, fixes)


def _port_problem(facts: Facts) -> Problem | None:
    mp = facts.network.master_port
    if not mp.in_use or mp.own_job or mp.port is None:
        return None
    env = facts.env
    named = "MASTER_PORT" if mp.source == "MASTER_PORT" else "torchrun's default port"
    owner = f" by {mp.owner_name} (pid {mp.owner_pid})" if mp.owner_pid else ""
    message = (
        f"port {mp.port} ({named}) is already bound on this machine{owner}: the rendezvous "
        "fails with 'RuntimeError: Address already in use' (EADDRINUSE)"
    )
    port_facts = ("network.master_port.in_use", "network.master_port.port", "env.MASTER_PORT")
    because = grounded(facts, *port_facts)
    fixes = [
        Remedy(
            f"Give this job a port nothing else holds, the same on every node: "
            f"torchrun --master-port=<another port> (e.g. {mp.port + 1}), or MASTER_PORT.",
            (set_env(facts, "MASTER_PORT", str(mp.port + 1)),),
            because,
        )
    ]
    if mp.owner_pid:
        fixes.append(
            Remedy(
                f"If {mp.owner_name or 'that process'} (pid {mp.owner_pid}) is left over from "
                "an earlier run (a crashed job's store keeps the port), stop it.",
                (f"kill {mp.owner_pid}",) if facts.platform.system != "Windows" else (),
                grounded(facts, *because, "network.master_port.owner_pid"),
            )
        )
    # On another node than MASTER_ADDR's, the port being taken here does not matter.
    status = (
        Status.WARN
        if multi_node(env) and not is_loopback(env.get("MASTER_ADDR", ""))
        else Status.FAIL
    )
    return Problem("master-port-in-use", status, message, fixes)


def check(facts: Facts, ctx: Context) -> Verdict:
    net = facts.network
    interfaces = (
        net.interfaces if net.interfaces is not None and not net.interfaces_truncated else None
    )
    problems = []
    if interfaces is not None:
        for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
            problems.append(_ifname_problem(facts, var, interfaces))
        problems.append(_no_routable(facts, interfaces))
    problems.append(_port_problem(facts))
    found = [p for p in problems if p]
    mp = net.master_port
    details = {
        "interfaces": [i.name for i in interfaces or []],
        "master_port": {"port": mp.port, "in_use": mp.in_use, "skipped": mp.skipped},
    }
    up = [i.name for i in interfaces or [] if i.name and _is_up(i)]
    passed = f"interfaces up: {', '.join(up) or 'not read'}"
    if mp.port is not None and mp.in_use is False:
        passed += f"; port {mp.port} free"
    return from_problems(found, details, passed)
