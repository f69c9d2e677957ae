"""The launch and network checks: distributed-launch settings that do not fit the machine, each
rebuilt from a public thread (repo#number) on the healthy H100 facts with the fields it changes."""

from __future__ import annotations

import copy
import errno
import os
import socket
from typing import Any

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks.common import Context
from torchdoctor.check.checks.network import nccl_selects
from torchdoctor.check.record import read_facts
from torchdoctor.probes import network
from torchdoctor.report.result import Status

from .conftest import load_facts

LO = {"name": "lo", "up": True, "operstate": "unknown", "ipv4": True, "ipv6": True}
DOCKER0 = {"name": "docker0", "up": True, "operstate": "up", "ipv4": True, "ipv6": False}
ENS3 = {"name": "ens3", "up": True, "operstate": "up", "ipv4": True, "ipv6": True}


def rebuilt(changes: dict[str, Any]) -> dict:
    """h100_healthy with ``changes`` set at dotted paths (as the scenario harness applies them)."""
    facts = copy.deepcopy(load_facts("h100_healthy"))
    for path, value in changes.items():
        *parents, last = path.split(".")
        node: Any = facts
        for step in parents:
            node = node[int(step)] if isinstance(node, list) else node.setdefault(step, {})
        node[last] = value
    return facts


def findings(changes: dict[str, Any]) -> dict[str, Any]:
    """{finding id: problem} of the launch and network checks on the rebuilt facts."""
    facts = read_facts(rebuilt(changes))
    out = {}
    for module in engine.select(["launch", "network"]):
        result = engine.run_check(module, facts, Context())
        out.update({f"{module.ID}.{p.code}": p for p in result.problems})
    return out


def fixes(problem) -> str:
    return " | ".join(r.text + " " + " ".join(r.commands) for r in problem.remedies)


def test_healthy_machine_and_old_facts_get_no_finding():
    assert findings({}) == {}
    # a single-node torchrun rank on the one GPU, interfaces and port fine
    assert (
        findings(
            {
                "env.WORLD_SIZE": "1",
                "env.LOCAL_WORLD_SIZE": "1",
                "env.LOCAL_RANK": "0",
                "env.MASTER_ADDR": "127.0.0.1",
                "env.MASTER_PORT": "29500",
                "network.interfaces": [LO, ENS3],
                "network.master_port": {"port": 29500, "source": "MASTER_PORT", "in_use": False},
            }
        )
        == {}
    )


def test_pytorch_76069_init_process_group_hangs_multi_node_localhost():
    """pytorch/pytorch#76069: a 4-node Slurm job where every node used localhost as the
    rendezvous; the maintainer's fix is the first host of $SLURM_JOB_NODELIST."""
    found = findings(
        {
            "env.SLURM_JOB_ID": "123",
            "env.SLURM_NNODES": "4",
            "env.MASTER_ADDR": "localhost",
            "env.MASTER_PORT": "29500",
        }
    )
    problem = found["launch.master-addr-loopback"]
    assert problem.status == Status.FAIL and "SLURM_NNODES=4" in problem.message
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1' in fixes(problem)
    assert "env.MASTER_ADDR" in problem.remedies[0].evidence
    # the real node 0 address: nothing to say
    assert "launch.master-addr-loopback" not in findings(
        {"env.SLURM_NNODES": "4", "env.MASTER_ADDR": "node001"}
    )


def test_pick_pytorch_14_invalid_device_ordinal_nproc_per_node_4_on_2_gpus():
    """wenwenyu/PICK-pytorch#14: --nproc_per_node=4 with CUDA_VISIBLE_DEVICES=1,2 (two GPUs):
    ranks 2 and 3 die with 'invalid device ordinal'."""
    found = findings(
        {"env.LOCAL_WORLD_SIZE": "4", "env.LOCAL_RANK": "2", "torch.cuda.device_count": 2}
    )
    problem = found["launch.nproc-exceeds-gpus"]
    assert "invalid device ordinal" in problem.message
    assert "--nproc-per-node=2" in fixes(problem)
    assert "torch.cuda.device_count" in problem.remedies[0].evidence


def test_summarize_from_feedback_5_invalid_device_ordinal_local_rank_1_one_gpu():
    """openai/summarize-from-feedback#5: a second rank on a machine exposing one GPU."""
    problem = findings({"env.LOCAL_RANK": "1"})["launch.local-rank-exceeds-gpus"]
    assert "LOCAL_RANK=1" in problem.message and "--nproc-per-node=1" in fixes(problem)
    # a CPU machine (gloo ranks): no GPU to exceed
    assert findings({"env.LOCAL_RANK": "1", "torch.cuda.device_count": 0}) == {}


def test_lightning_10098_ntasks_per_node_must_match_gpus():
    """Lightning-AI/pytorch-lightning#10098: --ntasks-per-node must equal the GPUs per node."""
    found = findings({"env.SLURM_NTASKS_PER_NODE": "2", "env.SLURM_GPUS_ON_NODE": "1"})
    problem = found["launch.slurm-tasks-exceed-gpus"]
    assert "--ntasks-per-node=1" in fixes(problem) and "--gpus-per-node=1" in fixes(problem)


def test_lightning_6206_world_size_differs_from_slurm_ntasks():
    """Lightning-AI/pytorch-lightning#6206: SLURM_NTASKS must be nodes x GPUs, else the ranks
    wait for peers that never start."""
    job = {"env.SLURM_NTASKS": "1", "env.SLURM_PROCID": "0", "env.WORLD_SIZE": "4"}
    problem = findings(job)["launch.world-size-not-slurm-ntasks"]
    assert "--ntasks=4" in fixes(problem)
    # torchrun inside Slurm: one task per node starts several ranks, by design
    assert findings({**job, "env.TORCHELASTIC_RUN_ID": "none"}) == {}


def test_nccl_docs_no_socket_interface_found_ifname_names_missing_interface():
    """NCCL's 'no socket interface found': NCCL_SOCKET_IFNAME=eth0 on a machine whose
    interface is ens3. The fix names the interface that exists (nvidia/nccl#210's advice)."""
    found = findings({"env.NCCL_SOCKET_IFNAME": "eth0", "network.interfaces": [LO, ENS3]})
    problem = found["network.socket-ifname-matches-none"]
    assert "export NCCL_SOCKET_IFNAME==ens3" in fixes(problem)
    assert problem.remedies[0].evidence == ("env.NCCL_SOCKET_IFNAME", "network.interfaces")
    # prefixes match, as NCCL reads them
    assert findings({"env.NCCL_SOCKET_IFNAME": "ens", "network.interfaces": [LO, ENS3]}) == {}
    down = {**ENS3, "up": False, "operstate": "down"}
    found = findings({"env.GLOO_SOCKET_IFNAME": "ens3", "network.interfaces": [LO, down]})
    assert "network.socket-ifname-down" in found


def test_nccl_socket_ifname_syntax_from_nccls_docs():
    names = ["docker0", "eth0", "eth1", "lo"]
    assert nccl_selects("eth", names) == ["eth0", "eth1"]
    assert nccl_selects("=eth0", names) == ["eth0"]
    assert nccl_selects("^docker,lo", names) == ["eth0", "eth1"]
    assert nccl_selects("^=docker0", names) == ["eth0", "eth1", "lo"]
    assert nccl_selects("=eth", names) == []


def test_pytorch_23363_unhandled_system_error_two_docker_containers():
    """pytorch/pytorch#23363: two bridged containers on two nodes, NCCL 'unhandled system
    error'; settled fix: --network=host (or NCCL_SOCKET_IFNAME on a routable interface)."""
    problem = findings(
        {
            "env.WORLD_SIZE": "2",
            "env.LOCAL_WORLD_SIZE": "1",
            "container.detected": True,
            "network.interfaces": [LO, DOCKER0],
        }
    )["network.no-routable-interface"]
    assert "--network=host" in fixes(problem) and "NCCL_SOCKET_IFNAME" in fixes(problem)


def test_nvidia_nccl_210_socket_creation_failed_no_ip_interface():
    """NVIDIA/nccl#210: no IP interface at all, so NCCL cannot bootstrap even on one node."""
    bare = {"name": "lo", "up": False, "operstate": "down", "ipv4": False, "ipv6": False}
    found = findings({"env.WORLD_SIZE": "2", "network.interfaces": [bare]})
    assert "NCCL_SOCKET_IFNAME" in fixes(found["network.no-routable-interface"])


PORT_TAKEN = {"port": 29500, "source": "MASTER_PORT", "in_use": True}


def test_megatron_lm_343_address_already_in_use():
    """NVIDIA/Megatron-LM#343 (and Lightning-AI/pytorch-lightning#401, thu-coai/CDial-GPT#103):
    the rendezvous port is bound by another job: 'RuntimeError: Address already in use'."""
    owned = {**PORT_TAKEN, "owner_pid": 4242, "owner_name": "python"}
    problem = findings({"env.MASTER_PORT": "29500", "network.master_port": owned})[
        "network.master-port-in-use"
    ]
    assert problem.status == Status.FAIL and "python (pid 4242)" in problem.message
    assert "--master-port" in fixes(problem) and "kill 4242" in fixes(problem)
    # the owner is this job's own store (torchrun's agent, or dist's rank 0): fine
    assert findings({"network.master_port": {**owned, "own_job": True}}) == {}


def _listener() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s


def test_port_probe_finds_a_listener_and_never_disturbs_it():
    with _listener() as held:
        port = held.getsockname()[1]
        seen = network.master_port({"MASTER_PORT": str(port)})
        assert seen["in_use"] is True and seen["source"] == "MASTER_PORT"
        assert seen.get("owner_pid") in (None, os.getpid())
        held.settimeout(0.1)  # still listening: a client still connects
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            pass
    free = network.master_port({"MASTER_PORT": str(port)})
    assert free["in_use"] is False


@pytest.mark.parametrize(
    "env, skipped",
    [
        ({}, "no distributed launch is set up here"),
        (
            {"MASTER_PORT": "29500", "RANK": "0"},
            "inside a launched rank: its own job holds the port",
        ),
        ({"MASTER_PORT": "http"}, "MASTER_PORT is not a port number"),
    ],
)
def test_port_probe_binds_nothing_outside_a_launch_or_inside_a_rank(env, skipped, monkeypatch):
    monkeypatch.setattr(network, "_bind_error", pytest.fail)
    assert network.master_port(env)["skipped"] == skipped


def test_port_probe_default_port_only_in_a_launcher_job(monkeypatch):
    monkeypatch.setattr(network, "_bind_error", lambda host, port: errno.EADDRINUSE)
    monkeypatch.setattr(network, "_owner", lambda port: {})
    seen = network.master_port({"SLURM_JOB_ID": "7"})
    assert seen == {"port": 29500, "source": "default", "skipped": None, "in_use": True}
