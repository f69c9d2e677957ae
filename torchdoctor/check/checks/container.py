"""container: which container we run in, its /dev/shm, and whether the NVIDIA runtime gave it a GPU."""

from __future__ import annotations

import re

from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..record import Facts
from ..record.container import Container
from .common import Context, grounded, nvml_gpus, pinned_family, python_cmd, reinstall_torch

ID = "container"
TITLE = "Container: shared memory and GPU passthrough"
ORDER = 120  # position in the report: basic facts first, the smoke test last
# The problems it reports one by one, each its own finding id (container.<code>).
FINDINGS = {
    "shm-missing": "no /dev/shm at all",
    "shm-small": "/dev/shm under 1 GiB: DataLoader workers die with 'Bus error'",
    "shm-not-writable": "/dev/shm exists but this user cannot create files in it",
    "gpu-hidden": "NVIDIA_VISIBLE_DEVICES tells the NVIDIA runtime to give no GPU",
    "gpu-not-delivered": "a GPU was asked for but none reached the container",
    "driver-libs-missing": "GPU device nodes without the driver library libcuda.so.1",
    "cuda-wheel-cpu-image": "a CUDA build of torch in a container meant for the CPU",
}

GIB = 1024**3
MIB = 1024**2
# Docker, Podman and Kubernetes give a container 64 MiB; DataLoader workers pass every batch
# through /dev/shm and die with "Bus error" once it is full.
SMALL_SHM_BYTES = 1 * GIB
SUGGESTED_SHM = "8g"
NAMES = {
    "docker": "Docker",
    "podman": "Podman",
    "buildah": "Buildah",
    "oci": "OCI",
    "cri-o": "CRI-O",
    "containerd": "containerd",
    "kubernetes": "Kubernetes",
    "lxc": "LXC",
}
# NVIDIA_VISIBLE_DEVICES values that mean "no GPU for this container" to the NVIDIA runtime.
NO_GPU_VALUES = ("", "void", "none")


def _size(n: float) -> str:
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n / MIB:.0f} MiB"


def gpu_requested(facts: Facts) -> bool:
    """Was this container meant to get a GPU? (NVIDIA_VISIBLE_DEVICES names one or ``all``.)"""
    value = facts.env.get("NVIDIA_VISIBLE_DEVICES")
    return value is not None and value.strip().lower() not in NO_GPU_VALUES


def _gpu_nodes(facts: Facts) -> list[str]:
    return [n for n in facts.host.nvidia.dev_nodes if re.fullmatch(r"nvidia\d+", n)]


def describe(c: Container) -> str:
    if not c.detected:
        return "no container detected"
    kind, engine = c.kind, c.engine
    name = NAMES.get(kind or "", kind or "unknown")
    if kind == "kubernetes" and engine:
        name += f" pod ({NAMES.get(engine, engine)})"
    clues = ", ".join(e.source or "?" for e in c.evidence[:2])
    return f"{name} container ({clues})"


def _shm_remedies(c: Container, limit: int | None) -> list[Remedy]:
    size = SUGGESTED_SHM
    if limit and limit < 16 * GIB:
        # shm pages count against the memory limit: offer half of it, in 64 MiB steps.
        mib = max(64, (limit // 2 // MIB) // 64 * 64)
        size = f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"
    kind = c.kind if c.detected else "host"
    # Options of the `docker run` that starts the container: prose, since only the user knows
    # the rest of that command line.
    docker = Remedy(
        f"Give the container a bigger /dev/shm: add `--shm-size={size}` (its pages count against "
        f"the container's memory limit) or `--ipc=host` to its `docker run`. Compose: `shm_size: {size}`.",
        evidence=("container.detected",),
    )
    podman = Remedy(
        f"Give the container a bigger /dev/shm: add `--shm-size={size}` or `--ipc=host` to its `podman run`.",
        evidence=("container.detected",),
    )
    k8s_size = f"{size[:-1]}Gi" if size.endswith("g") else f"{size[:-1]}Mi"
    k8s = Remedy(
        "In the pod spec, mount a memory-backed emptyDir at /dev/shm: "
        f"volumes: [{{name: dshm, emptyDir: {{medium: Memory, sizeLimit: {k8s_size}}}}}] and, "
        "in the container, volumeMounts: [{name: dshm, mountPath: /dev/shm}].",
        evidence=("container.detected",),
    )
    host = Remedy(
        "Enlarge the tmpfs on /dev/shm (make it permanent in /etc/fstab).",
        (f"sudo mount -o remount,size={size.upper()} /dev/shm",),
        evidence=("container.detected",),
    )
    workaround = Remedy(
        "Meanwhile, DataLoader(num_workers=0) avoids shared memory, and "
        "torch.multiprocessing.set_sharing_strategy('file_system') moves it to files.",
        evidence=("container.detected",),
    )
    by_kind = {"docker": [docker], "podman": [podman], "kubernetes": [k8s], "host": [host]}
    return [*by_kind.get(kind, [docker, podman, k8s]), workaround]


def _shm_not_writable(c: Container) -> Problem:
    """shm_open fails with 'Permission denied' (NCCL's "unhandled system error", DataLoader's
    "unable to open shared memory object"): a read-only mount, or a mode without write for this
    user where the usual one is 1777 (pytorch/pytorch#37004)."""
    ro = c.shm.read_only
    because = ("container.shm.writable", *(("container.shm.read_only",) if ro else ()))
    if ro:
        where = "in the container's run options (e.g. no `:ro` on a /dev/shm volume or tmpfs)"
        fixes = [
            Remedy(
                f"/dev/shm is mounted read-only: mount it read-write, {where}; on a host:",
                ("sudo mount -o remount,rw /dev/shm",),
                because,
            )
        ]
    else:
        fixes = [
            Remedy(
                "Give /dev/shm its usual mode (everyone may write, the sticky bit keeps files "
                "private); make it permanent with mode=1777 on its fstab line.",
                ("sudo chmod 1777 /dev/shm",),
                because,
            )
        ]
    fixes.append(
        Remedy(
            "Until then: NCCL_SHM_DISABLE=1 keeps NCCL off shared memory (slower on one node), "
            "DataLoader(num_workers=0) keeps batches in one process.",
            evidence=because,
        )
    )
    why = (
        f"/dev/shm is not writable by this user{' (mounted read-only)' if ro else ''}: NCCL and "
        "DataLoader workers fail with 'Permission denied' on shm_open"
    )
    return Problem("shm-not-writable", Status.WARN, why, fixes)


def _judge_shm(c: Container, facts: Facts) -> Problem | None:
    limit = facts.host.cgroup.memory_limit_bytes
    if not c.shm.exists:
        why = "no /dev/shm: DataLoader workers and NCCL need it"
        return Problem("shm-missing", Status.WARN, why, _shm_remedies(c, limit))
    if c.shm.writable is False:
        return _shm_not_writable(c)
    size = c.shm.size_bytes
    if size is not None and size < SMALL_SHM_BYTES:
        why = f"/dev/shm is only {_size(size)}: DataLoader workers die with 'Bus error' once batches fill it"
        return Problem("shm-small", Status.WARN, why, _shm_remedies(c, limit))
    return None


def _gpu_remedies(c: Container) -> list[Remedy]:
    toolkit = Remedy(
        "The host needs the NVIDIA driver and the NVIDIA Container Toolkit, registered with the engine.",
        (
            "sudo apt-get install -y nvidia-container-toolkit",
            "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker",
        ),
        evidence=("container.detected",),
    )
    docker = Remedy(
        "Start the container with GPU access: add `--gpus all` to its `docker run`.",
        evidence=("container.detected",),
    )
    podman = Remedy(
        "Podman reaches GPUs through CDI: generate the spec once on the host, then add "
        "`--device nvidia.com/gpu=all` to the `podman run`.",
        ("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",),
        evidence=("container.detected",),
    )
    k8s = Remedy(
        "Request a GPU in the pod spec (resources: limits: nvidia.com/gpu: 1); the NVIDIA device "
        "plugin or GPU Operator must run on the node.",
        evidence=("container.detected",),
    )
    by_kind = {"docker": [docker, toolkit], "podman": [podman], "kubernetes": [k8s]}
    return by_kind.get(c.kind or "", [docker, toolkit, podman, k8s])


def cuda_only_bytes(facts: Facts) -> int:
    """Bytes a CPU wheel would not install: nvidia-* wheels, triton, torch's CUDA libraries."""
    return int(sum(v for v in facts.packages.cuda_sizes.values() if v))


def _cpu_wheel_remedies(facts: Facts) -> list[Remedy]:
    saved = cuda_only_bytes(facts)
    how_much = f"about {saved / 1e9:.1f} GB, measured from the installed files" if saved else "GBs"
    extras = sorted(facts.packages.cuda_sizes)
    extras = [n for n in extras if not n.startswith("torch")]
    remedies = [
        reinstall_torch(facts, "cpu", f"The CPU build drops the CUDA libraries ({how_much}).")
    ]
    if extras:
        remedies.append(
            Remedy(
                "Then remove the CUDA-only packages the CUDA build pulled in.",
                (f"{python_cmd(facts)} uninstall -y {' '.join(extras)}",),
                evidence=grounded(
                    facts,
                    "container.detected",
                    "container.kind",
                    "container.shm",
                    "container.nvidia",
                    "container.evidence",
                ),
            )
        )
    remedies.append(
        Remedy(
            "In the image itself, install torch from the CPU index (see Dockerfile.cpu in "
            f"torchdoctor): `RUN pip install {' '.join(pinned_family(facts))} "
            "--index-url https://download.pytorch.org/whl/cpu`.",
            evidence=grounded(
                facts,
                "container.detected",
                "container.kind",
                "container.shm",
                "container.nvidia",
                "container.evidence",
            ),
        )
    )
    return remedies


def _judge_gpu(c: Container, facts: Facts, ctx: Context) -> Problem | None:
    """Inside a container: a CUDA build that got no GPU, or a GPU with no driver libraries."""
    if facts.torch.build.variant != "cuda":
        return None
    nvd = facts.env.get("NVIDIA_VISIBLE_DEVICES")
    caps = facts.env.get("NVIDIA_DRIVER_CAPABILITIES")
    libcuda = c.nvidia.driver_libs.get("libcuda.so.1")
    sees_gpu = bool(nvml_gpus(facts) or _gpu_nodes(facts))
    bad = Status.FAIL if ctx.expect == "cuda" else Status.WARN
    if not sees_gpu:
        if gpu_requested(facts) or ctx.expect == "cuda":
            asked = f"NVIDIA_VISIBLE_DEVICES={nvd}" if nvd is not None else "--expect cuda"
            if nvd is not None and nvd.strip().lower() in NO_GPU_VALUES:
                why = f"NVIDIA_VISIBLE_DEVICES={nvd!r} tells the NVIDIA runtime to give it none"
                fix = Remedy(
                    "Unset the variable (or set it to `all`) and start the container with GPUs: "
                    "`docker run --gpus all -e NVIDIA_VISIBLE_DEVICES=all …`.",
                    evidence=grounded(
                        facts,
                        "container.detected",
                        "container.kind",
                        "container.shm",
                        "container.nvidia",
                        "container.evidence",
                    ),
                )
                why = f"CUDA build of torch, but no GPU reached this container: {why}"
                return Problem("gpu-hidden", bad, why, [fix])
            return Problem(
                "gpu-not-delivered",
                bad,
                f"CUDA build of torch and a GPU was asked for ({asked}), but no GPU reached this "
                f"container: no /dev/nvidia[0-9] device, {'no' if not libcuda else 'but'} "
                f"libcuda.so.1 mounted (started without --gpus, or no NVIDIA Container Toolkit?)",
                _gpu_remedies(c),
            )
        return Problem(
            "cuda-wheel-cpu-image",
            Status.WARN,
            "CUDA build of torch in a container meant for CPU "
            f"(NVIDIA_VISIBLE_DEVICES={nvd if nvd is not None else 'unset'}, no GPU device): "
            "the image carries CUDA libraries it cannot use",
            _cpu_wheel_remedies(facts),
        )
    missing = (caps or "unset (= utility)").lower()
    no_compute = "all" not in missing and "compute" not in missing
    # NVML (the utility capability) may work while libcuda (compute) is not mounted: nvidia-smi
    # answers and CUDA does not (mudler/LocalAI#11973).
    if not libcuda and (no_compute or not nvml_gpus(facts)) and not facts.torch.cuda.available:
        if not no_compute:
            why = "the driver library libcuda.so.1 is not mounted"
        else:
            why = f"NVIDIA_DRIVER_CAPABILITIES={missing} lacks 'compute', so libcuda.so.1 is not mounted"
        return Problem(
            "driver-libs-missing",
            bad,
            f"GPU device nodes are present but {why}",
            [
                Remedy(
                    "Ask the NVIDIA runtime for the compute (CUDA) and utility (nvidia-smi, NVML) "
                    "driver libraries: `docker run --gpus all -e "
                    "NVIDIA_DRIVER_CAPABILITIES=compute,utility …`.",
                    evidence=grounded(
                        facts,
                        "container.detected",
                        "container.kind",
                        "container.shm",
                        "container.nvidia",
                        "container.evidence",
                    ),
                ),
                *_gpu_remedies(c)[1:2],
            ],
        )
    return None


def check(facts: Facts, ctx: Context) -> Verdict:
    c = facts.container
    if c.detected is None:
        return verdict(
            Status.SKIP,
            "no container facts (recorded by a torchdoctor without container detection); "
            "re-run `torchdoctor check` to gather them",
        )
    details = {
        "detected": c.detected,
        "kind": c.kind,
        "engine": c.engine,
        "evidence": [e.raw for e in c.evidence],
        "shm": c.shm.raw,
        "memory_limit_bytes": facts.host.cgroup.memory_limit_bytes,
        "cpu_quota": facts.host.cgroup.cpu_quota,
        "nvidia_visible_devices": facts.env.get("NVIDIA_VISIBLE_DEVICES"),
        "nvidia_driver_capabilities": facts.env.get("NVIDIA_DRIVER_CAPABILITIES"),
        "nvidia_device_nodes": facts.host.nvidia.dev_nodes,
        "nvidia_driver_libs": c.nvidia.driver_libs,
    }
    if facts.torch.build.variant == "cuda":
        details["cuda_only_bytes"] = cuda_only_bytes(facts)
    found = [_judge_shm(c, facts), _judge_gpu(c, facts, ctx) if c.detected else None]
    size = c.shm.size_bytes
    shm_text = f"/dev/shm {_size(size)}" if size is not None else "/dev/shm size unknown"
    where = describe(c)
    problems = [p for p in found if p]
    return from_problems(problems, details, f"{where}; {shm_text}", prefix=f"{where}: ")
