"""launch: do the launch variables (torchrun's, Slurm's) fit this machine and each other?

Read from the allow-listed variables in ``facts.env`` only. Nothing is judged where nothing is
set: a machine that is not running or preparing a distributed job passes.
"""

from __future__ import annotations

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems

from ..record import Facts
from .common import Context, grounded
from .launch_env import count, in_torchrun, is_loopback, multi_node, visible_gpus

ID = "launch"
TITLE = "Distributed launch variables (torchrun, Slurm)"
ORDER = 46  # beside `distributed`
NEEDS = ("env",)
FINDINGS = {
    "master-addr-loopback": "a multi-node job whose MASTER_ADDR is localhost: no other node can "
    "reach it",
    "local-rank-exceeds-gpus": "LOCAL_RANK names a GPU this process cannot see: invalid device "
    "ordinal",
    "nproc-exceeds-gpus": "more processes per node (LOCAL_WORLD_SIZE) than visible GPUs",
    "slurm-tasks-exceed-gpus": "Slurm starts more tasks per node than the node has GPUs",
    "world-size-not-slurm-ntasks": "WORLD_SIZE differs from the tasks srun starts: ranks wait "
    "for peers that never come",
}
SLURM_FIRST_HOST = 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'


def _master_addr(facts: Facts, env: dict[str, str]) -> Problem | None:
    addr, spans = env.get("MASTER_ADDR"), multi_node(env)
    if not addr or not spans or not is_loopback(addr):
        return None
    because = grounded(facts, "env.MASTER_ADDR", f"env.{spans}", "env.LOCAL_WORLD_SIZE")
    if env.get("SLURM_JOB_ID") and facts.platform.system != "Windows":
        fix = Remedy(
            "Point MASTER_ADDR at the job's first node, the same value on every node, and use "
            "one MASTER_PORT for all of them.",
            (SLURM_FIRST_HOST,),
            grounded(facts, *because, "env.SLURM_JOB_ID"),
        )
    else:
        fix = Remedy(
            "Set MASTER_ADDR (torchrun --master-addr) to the hostname or IP address of node 0 "
            "that the other nodes can reach, the same value on every node.",
            evidence=because,
        )
    message = (
        f"MASTER_ADDR={addr} in a job over several nodes ({spans}={env[spans]}): every node "
        "looks for the rendezvous on itself, and init_process_group hangs until its timeout"
    )
    return Problem("master-addr-loopback", Status.FAIL, message, [fix])


def _nproc_fix(facts: Facts, gpus: int, gpus_path: str, *paths: str) -> Remedy:
    return Remedy(
        f"Start one process per visible GPU: torchrun --nproc-per-node={gpus} (or make "
        "CUDA_VISIBLE_DEVICES list as many GPUs as processes).",
        evidence=grounded(facts, *paths, gpus_path, "env.CUDA_VISIBLE_DEVICES"),
    )


def _ranks_vs_gpus(facts: Facts, env: dict[str, str]) -> list[Problem]:
    gpus, path = visible_gpus(facts)
    if not gpus or path is None:  # no GPU: a CPU (gloo) job, judged by nothing here
        return []
    problems = []
    local, rank = count(env, "LOCAL_WORLD_SIZE"), count(env, "LOCAL_RANK")
    if local is not None and local > gpus:
        problems.append(
            Problem(
                "nproc-exceeds-gpus",
                Status.FAIL,
                f"LOCAL_WORLD_SIZE={local} processes on this node but {gpus} visible GPU(s): "
                f"ranks from local rank {gpus} on fail with 'CUDA error: invalid device "
                "ordinal' (or share a GPU, which NCCL refuses)",
                [_nproc_fix(facts, gpus, path, "env.LOCAL_WORLD_SIZE")],
            )
        )
    elif rank is not None and rank >= gpus:
        problems.append(
            Problem(
                "local-rank-exceeds-gpus",
                Status.FAIL,
                f"LOCAL_RANK={rank} but this process sees {gpus} GPU(s) (cuda:0 to "
                f"cuda:{gpus - 1}): torch.cuda.set_device(LOCAL_RANK) fails with 'CUDA error: "
                "invalid device ordinal'",
                [_nproc_fix(facts, gpus, path, "env.LOCAL_RANK")],
            )
        )
    return problems


def _slurm_tasks(facts: Facts, env: dict[str, str]) -> list[Problem]:
    problems = []
    per_node, gpus = count(env, "SLURM_NTASKS_PER_NODE"), count(env, "SLURM_GPUS_ON_NODE")
    gpus_path = "env.SLURM_GPUS_ON_NODE"
    if gpus is None:
        gpus, seen = visible_gpus(facts)
        gpus_path = seen or gpus_path
    if per_node is not None and gpus and per_node > gpus:
        problems.append(
            Problem(
                "slurm-tasks-exceed-gpus",
                Status.WARN,
                f"Slurm starts {per_node} tasks per node (SLURM_NTASKS_PER_NODE) on a node with "
                f"{gpus} GPU(s): the tasks past {gpus} get no GPU of their own",
                [
                    Remedy(
                        f"Request one task per GPU: #SBATCH --ntasks-per-node={gpus} with "
                        f"--gpus-per-node={gpus} (or --ntasks-per-node=1 when torchrun starts "
                        "the processes).",
                        evidence=grounded(facts, "env.SLURM_NTASKS_PER_NODE", gpus_path),
                    )
                ],
            )
        )
    world, tasks = count(env, "WORLD_SIZE"), count(env, "SLURM_NTASKS")
    # Under torchrun inside Slurm, one task per node starts several ranks: WORLD_SIZE differs
    # from SLURM_NTASKS by design. Only a rank srun started itself must match.
    if world and tasks and world != tasks and env.get("SLURM_PROCID") and not in_torchrun(env):
        problems.append(_world_size(facts, world, tasks))
    return problems


def _world_size(facts: Facts, world: int, tasks: int) -> Problem:
    fix = Remedy(
        f"Make srun start WORLD_SIZE tasks: --ntasks={world} (--ntasks-per-node = GPUs per "
        f"node, times --nodes), or export WORLD_SIZE=$SLURM_NTASKS ({tasks}).",
        evidence=grounded(facts, "env.WORLD_SIZE", "env.SLURM_NTASKS", "env.SLURM_PROCID"),
    )
    message = (
        f"WORLD_SIZE={world} but srun starts {tasks} task(s) (SLURM_NTASKS): "
        "init_process_group waits for ranks that never start"
    )
    return Problem("world-size-not-slurm-ntasks", Status.WARN, message, [fix])


def check(facts: Facts, ctx: Context) -> Verdict:
    env = facts.env
    problems = [p for p in (_master_addr(facts, env),) if p]
    problems += _ranks_vs_gpus(facts, env)
    problems += _slurm_tasks(facts, env)
    names = [n for n in sorted(env) if n.startswith(("SLURM_", "PET_")) or n in _TORCHRUN]
    details = {"variables": {n: env[n] for n in names}, "multi_node": multi_node(env)}
    passed = (
        f"launch variables consistent ({', '.join(names)})"
        if names
        else "no distributed launch variables set"
    )
    problems.sort(key=lambda p: p.status != Status.FAIL)
    return from_problems(problems, details, passed)


_TORCHRUN = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_WORLD_SIZE",
    "NNODES",
)
