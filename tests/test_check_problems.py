"""A check's sub-problems are findings of their own: ``<check id>.<code>``, declared in the check's
``FINDINGS``, documented on its page, silenced one by one."""

from __future__ import annotations

import copy
import json

import pytest

from torchdoctor.check import engine
from torchdoctor.check.checks import ALL
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.report import docs
from torchdoctor.report.findings import Selection

from .conftest import FACTS_DIR, REPO, load_facts, run_cli

CORPUS = sorted(p.stem for p in FACTS_DIR.glob("*.json"))


def _small_shm_cuda_container() -> dict:
    """Docker's default 64 MiB /dev/shm and a CUDA wheel in a container started without --gpus:
    the two problems people meet together in `docker run` without `--shm-size` and `--gpus`."""
    f = copy.deepcopy(load_facts("cpu_linux"))
    f["container"] = {
        "detected": True,
        "kind": "docker",
        "evidence": [{"source": "/.dockerenv", "kind": "docker"}],
        "shm": {"path": "/dev/shm", "exists": True, "mounted": True, "size_bytes": 64 << 20},
        "nvidia": {"driver_libs": {}},
    }
    f["env"] = {"NVIDIA_VISIBLE_DEVICES": "all"}
    f["torch"]["build"].update(variant="cuda", cuda="12.8")
    return f


def test_each_problem_is_its_own_finding_with_its_own_fix():
    report = engine.diagnose(
        read_facts(_small_shm_cuda_container()), Context(), engine.select(["container"])
    )
    found = {f.id: f for f in report.all_findings()}
    assert set(found) == {"container.shm-small", "container.gpu-not-delivered"}
    shm = found["container.shm-small"]
    assert shm.level == "warning" and "Bus error" in shm.message
    assert "--shm-size" in shm.remedies[0]["text"]
    assert "--gpus all" in found["container.gpu-not-delivered"].remedies[0]["text"]
    assert shm.doc == docs.check_url("container") + "#container.shm-small"


def test_ignoring_one_problem_keeps_the_other_and_counts_it_silenced():
    """The accepted 64 MiB /dev/shm of a CI runner must not hide a GPU that never arrived."""
    report = engine.diagnose(
        read_facts(_small_shm_cuda_container()),
        Context(),
        engine.select(["container"]),
        selection=Selection(ignore=("container.shm-small",)),
    )
    kept, silenced = report.findings()
    assert [f.id for f in kept] == ["container.gpu-not-delivered"] and silenced == 1
    # and the whole check still goes with its own id
    everything = Selection(ignore=("container",))
    report.selection = everything
    assert report.findings() == ([], 2)


def test_json_report_lists_each_problem_under_its_check(tmp_path):
    p = tmp_path / "facts.json"
    p.write_text(json.dumps(_small_shm_cuda_container()))
    proc = run_cli("check", "--facts", str(p), "--only", "container", "--json")
    report = json.loads(proc.stdout)
    (check,) = report["checks"]
    assert [x["id"] for x in check["problems"]] == [f["id"] for f in report["findings"]]
    gpu = check["problems"][1]
    toolkit = next(r for r in gpu["remedies"] if r["commands"])  # every fix ends with its verify
    assert toolkit["commands"][-1].endswith("--only container")


@pytest.mark.parametrize("expect", ["auto", "cpu", "cuda", "mps", "xpu"])
def test_every_problem_code_a_check_emits_is_declared(expect):
    """Over the whole corpus: an undeclared code would be an id with no page and no list entry."""
    for name in CORPUS:
        report = engine.diagnose(
            read_facts(load_facts(name)), Context(expect=expect), engine.select()
        )
        for check in report.checks:
            declared = getattr(engine.select([check.id])[0], "FINDINGS", {})
            for problem in check.problems:
                assert problem.code in declared, (name, check.id, problem.code)


def test_every_declared_problem_has_its_anchor_on_the_check_page():
    for module in ALL:
        page = (REPO / "docs" / docs.check_page(module.ID)).read_text(encoding="utf-8")
        for code in getattr(module, "FINDINGS", {}):
            assert f'<a id="{module.ID}.{code}"></a>' in page, (module.ID, code)


def test_list_checks_names_each_problem_id_and_its_section():
    rows = json.loads(run_cli("list-checks", "--format", "json").stdout)
    container = next(r for r in rows if r["id"] == "container")
    ids = [f["id"] for f in container["findings"]]
    assert "container.shm-small" in ids
    assert all(f["doc"].endswith("container.md#" + f["id"]) for f in container["findings"])


def _ids(facts: dict, *checks: str, expect: str = "auto") -> list[str]:
    report = engine.diagnose(read_facts(facts), Context(expect=expect), engine.select(list(checks)))
    return [f.id for f in report.all_findings()]


def test_user_site_torch_and_its_second_copy_are_two_findings():
    """`pip install --user torch` beside the venv's: silencing the second copy (accepted on a
    shared machine) must still report that the user-site one is the one imported."""
    f = copy.deepcopy(load_facts("cpu_linux"))
    site = "/home/u/.local/lib/python3.11/site-packages"
    f["platform"]["user_site"] = site
    f["torch"]["file"] = f"{site}/torch/__init__.py"
    f["packages"]["torch_distributions"].append({"version": "2.1.0", "location": site})
    assert _ids(f, "torch.install") == [
        "torch.install.user-site",
        "torch.install.duplicate-installs",
    ]
    report = engine.diagnose(
        read_facts(f),
        Context(),
        engine.select(["torch.install"]),
        selection=Selection(ignore=("torch.install.duplicate-installs",)),
    )
    kept, silenced = report.findings()
    assert [k.id for k in kept] == ["torch.install.user-site"] and silenced == 1
    assert any("PYTHONNOUSERSITE=1" in c for c in kept[0].remedies[0]["commands"])


def test_torchvision_nms_does_not_exist_is_a_companion_import_error_finding():
    ids = _ids(load_facts("torchvision_nms_cpu_torch"), "torch.install")
    assert ids == ["torch.install.companion-import-error"]
    assert _ids(load_facts("xformers_other_torch"), "torch.install") == [
        "torch.install.companion-release"
    ]


def test_rocm_unsupported_gfx_and_an_unreadable_render_node_are_two_findings():
    """RX 6700 XT (gfx1031) and a user outside the render group: two fixes, two ids."""
    f = copy.deepcopy(load_facts("rocm_gfx1031"))
    nodes = f["torch"]["rocm"]["nodes"]
    nodes["groups"] = ["alice"]
    nodes["render"][0]["rw"] = False
    assert _ids(f, "rocm") == ["rocm.node-denied", "rocm.gfx-unsupported"]
    assert _ids(f, "rocm", expect="cpu") == ["rocm.node-denied", "rocm.gfx-unsupported"]
    report = engine.diagnose(read_facts(f), Context(expect="cpu"), engine.select(["rocm"]))
    assert {x.level for x in report.all_findings()} == {"warning"}
    nodes["kfd"]["exists"] = False
    assert _ids(f, "rocm")[0] == "rocm.kfd-missing"


def _rocm_fix(f: dict) -> tuple[str, list[str]]:
    report = engine.diagnose(read_facts(f), Context(), engine.select(["rocm"]))
    (found,) = [x for x in report.all_findings() if x.id == "rocm.node-denied"]
    return found.remedies[0]["text"], list(found.remedies[0]["commands"])


def test_root_owned_0600_dev_kfd_needs_a_udev_rule_not_the_root_group_ROCT_Thunk_Interface_36():
    f = copy.deepcopy(load_facts("rocm_gfx1031"))
    kfd = f["torch"]["rocm"]["nodes"]["kfd"]
    kfd.update(group="root", mode="0o600", rw=False)
    text, cmds = _rocm_fix(f)
    assert "no group can open it" in text
    assert not any("usermod -aG root" in c for c in cmds)
    assert any('KERNEL=="kfd", GROUP="render", MODE="0660"' in c for c in cmds)
    assert "udevadm control --reload-rules" in " ".join(cmds)
    # A node its group may open: joining that group is the fix.
    kfd.update(group="render", mode="0o660")
    text, cmds = _rocm_fix(f)
    assert (
        "render group" in text
        and cmds[0] == "sudo usermod -aG render $USER"
        and "udevadm" not in " ".join(cmds)
    )


def test_preloaded_cudart_and_a_drifted_nccl_wheel_are_two_findings_failure_first():
    f = copy.deepcopy(load_facts("env_misconfigured"))
    f["packages"]["nvidia_wheels"]["nvidia-nccl-cu13"] = "2.26.2"
    path = "/usr/local/cuda/lib64/libcudart.so.13"
    f["torch"]["libs"]["ld_preload"] = [{"path": path, "component": "cudart"}]
    f["env"]["LD_PRELOAD"] = path
    lib = next(x for x in f["torch"]["libs"]["loaded"] if x["component"] == "cudart")
    lib.update(path=path, origin="system", wheel=None)
    report = engine.diagnose(read_facts(f), Context(), engine.select(["torch.libs"]))
    (check,) = report.checks
    assert [p.code for p in check.problems] == ["ld-preload", "nvidia-wheel-version"]
    assert check.summary.startswith("libcudart.so.13 from /usr/local/cuda/lib64 is forced")
    found = {x.id: x for x in report.all_findings()}
    assert found["torch.libs.ld-preload"].level == "error"
    assert found["torch.libs.nvidia-wheel-version"].level == "warning"
    assert "unset LD_PRELOAD" in found["torch.libs.ld-preload"].remedies[0]["commands"]
    # Preloaded through /etc/ld.so.preload, not LD_PRELOAD: never `unset LD_PRELOAD` (issue 25).
    del f["env"]["LD_PRELOAD"]
    report = engine.diagnose(read_facts(f), Context(), engine.select(["torch.libs"]))
    preload = next(x for x in report.all_findings() if x.id == "torch.libs.ld-preload")
    assert not any("unset LD_PRELOAD" in c for r in preload.remedies for c in r["commands"])
    assert "/etc/ld.so.preload" in preload.remedies[0]["text"]
    f["env"]["LD_PRELOAD"] = path
    assert (
        "nvidia-nccl-cu13==2.27.7"
        in found["torch.libs.nvidia-wheel-version"].remedies[0]["commands"][0]
    )


def test_driver_too_old_is_named_by_both_cuda_checks_with_their_own_ids():
    """'The NVIDIA driver on your system is too old': cuda.driver says why, cuda.available says
    that is why CUDA is unusable; each id can be accepted on its own."""
    f = load_facts("driver_too_old")
    ids = _ids(f, "cuda.driver", "cuda.available")
    assert ids == ["cuda.driver.too-old", "cuda.available.driver-too-old"]
    report = engine.diagnose(read_facts(f), Context(), engine.select(["cuda.available"]))
    assert report.checks[0].details["reason"] == "driver_too_old"  # the JSON field keeps its value


def test_gpu_held_by_another_process_is_apart_from_the_arch_list():
    """A full GPU is worth a warning, but not one that hides 'no kernel image is available'."""
    f = copy.deepcopy(load_facts("rtx5090_cu124_wheel"))
    total = f["torch"]["cuda"]["devices"][0]["total_memory_bytes"]
    f["torch"]["cuda_init"] = {"memory": [{"index": 0, "free_bytes": total // 50}]}
    report = engine.diagnose(
        read_facts(f),
        Context(),
        engine.select(["cuda.devices"]),
        selection=Selection(ignore=("cuda.devices.memory-held",)),
    )
    kept, silenced = report.findings()
    assert [x.id for x in kept] == ["cuda.devices.arch-missing"] and silenced == 1
    assert "no kernel image is available" in kept[0].message
