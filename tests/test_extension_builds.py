"""Building CUDA extensions: a host compiler nvcc refuses, and no toolkit where one is built.

Recorded machines (tests/facts/*.json) with the toolchain facts each public report describes;
the probe's new facts (the host compiler nvcc runs, the toolkit's gate, the project's build
files) are gathered live on stand-ins.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from torchdoctor.check import engine
from torchdoctor.check.checks import by_id
from torchdoctor.check.checks.common import Context
from torchdoctor.check.record import read_facts
from torchdoctor.data import host_compilers
from torchdoctor.probes import toolchain
from torchdoctor.report.result import Status


def judge(facts: dict):
    return engine.run_check(by_id()["extensions"], read_facts(facts), Context())


def codes(result) -> list[str]:
    return [p.code for p in result.problems]


def commands(result) -> list[str]:
    return [c for r in result.remedies for c in r.commands]


def gcc(version: str, source: str = "gcc on PATH (nvcc's default host compiler)") -> dict:
    return {
        "name": "gcc",
        "source": source,
        "path": "/usr/bin/gcc",
        "ok": True,
        "returncode": 0,
        "output": f"gcc (Ubuntu {version}-1ubuntu1) {version}",
        "kind": "gcc",
        "version": version,
    }


def with_nvcc(f: dict, release: str, version: str, torch_cuda: str | None = None) -> dict:
    """The machine's toolkit is CUDA ``release`` (and torch built for ``torch_cuda``)."""
    home = f"/usr/local/cuda-{release}"
    f["toolchain"]["cuda_home"] = {
        "path": home,
        "source": f"nvcc on PATH ({home}/bin/nvcc)",
        "exists": True,
        "has_headers": True,
    }
    f["toolchain"]["nvcc"] = {
        "path": f"{home}/bin/nvcc",
        "exists": True,
        "ok": True,
        "returncode": 0,
        "output": f"release {release}, V{version}",
        "release": release,
        "version": version,
    }
    f["toolchain"]["toolkits"] = [{"path": home, "release": release, "has_headers": True}]
    f["torch"]["build"]["cuda"] = torch_cuda or release
    return f


def without_toolkit(f: dict) -> dict:
    f["toolchain"]["cuda_home"] = {"path": None, "source": "not found"}
    f["toolchain"]["nvcc"] = {}
    f["toolchain"]["toolkits"] = []
    return f


def builds_here(f: dict, path: str = "setup.py", marker: str = "CUDAExtension") -> dict:
    f["toolchain"]["project"] = {
        "root": "/home/u/proj",
        "cuda_builds": [{"path": path, "marker": marker}],
        "files_read": 3,
        "truncated": False,
    }
    return f


# ------------------------------------------------------------------ the host compiler's gate


def test_gcc_16_with_cuda_13_0_unsupported_gnu_version_later_than_15(facts):
    f = facts("h100_healthy")
    f["toolchain"]["host_cc"] = gcc("16.1.0")
    result = judge(f)
    assert codes(result) == ["host-compiler-too-new"] and result.status == Status.WARN
    assert "gcc versions later than 15 are not supported" in result.summary
    assert "sudo apt-get install -y gcc-15 g++-15" in commands(result)
    assert "export CC=gcc-15 CXX=g++-15 CUDAHOSTCXX=g++-15" in commands(result)
    # no CUDA 13.x accepts GCC 16: no toolkit is offered that would not help
    assert not any("cuda-toolkit" in c for c in commands(result))


def test_gcc_13_with_nvcc_12_1_later_than_12_instant_ngp_1562_offers_gcc_12_or_cuda_12_4(facts):
    """NVlabs/instant-ngp#1562: Ubuntu 24.04's gcc 13.2 with cuda_12.1, 'gcc versions later
    than 12 are not supported!'."""
    f = with_nvcc(facts("h100_healthy"), "12.1", "12.1.105")
    f["toolchain"]["host_cc"] = gcc("13.2.0")
    result = judge(f)
    assert codes(result) == ["host-compiler-too-new"]
    assert "export CC=gcc-12 CXX=g++-12 CUDAHOSTCXX=g++-12" in commands(result)
    # the smallest CUDA 12 step that takes GCC 13 is 12.4 (torch warns on the minor, builds)
    assert "sudo apt-get install -y cuda-toolkit-12-4" in commands(result)


def test_an_installed_newer_toolkit_is_offered_before_installing_one(facts):
    f = with_nvcc(facts("h100_healthy"), "12.1", "12.1.105")
    f["toolchain"]["toolkits"].append(
        {"path": "/usr/local/cuda-12.6", "release": "12.6", "has_headers": True}
    )
    f["toolchain"]["host_cc"] = gcc("13.3.0")
    result = judge(f)
    assert "export CUDA_HOME=/usr/local/cuda-12.6" in commands(result)
    assert not any("apt-get install -y cuda-toolkit" in c for c in commands(result))


def test_gcc_8_with_cuda_10_0_torchproteinlibrary_25_gcc_later_than_7_not_supported(facts):
    """lamoureux-lab/TorchProteinLibrary#25: '#error -- unsupported GNU version! gcc versions
    later than 7 are not supported!' from CUDA 10.0 with gcc 8; 10.1 accepts gcc 8."""
    f = with_nvcc(facts("h100_healthy"), "10.0", "10.0.130")
    f["toolchain"]["host_cc"] = gcc("8.4.0")
    result = judge(f)
    assert "later than 7 are not supported" in result.summary
    assert "export CC=gcc-7 CXX=g++-7 CUDAHOSTCXX=g++-7" in commands(result)
    assert "sudo apt-get install -y cuda-toolkit-10-1" in commands(result)


def test_gcc_6_with_nvcc_9_0_detectron2_761_fails_in_torch_headers_not_at_the_gate(facts):
    """facebookresearch/detectron2#761: 'nvcc 9.0 with gcc 6 ... nvcc 9.0 only supports gcc
    <=5'. nvcc 9.0's own gate lets GCC 6 through ('later than 6'); what fails is GCC 6's <tuple>
    in torch's headers (pytorch/pytorch#8863), so turning the gate off does not help."""
    f = with_nvcc(facts("h100_healthy"), "9.0", "9.0.176")
    f["toolchain"]["host_cc"] = gcc("6.5.0")
    f["env"]["NVCC_APPEND_FLAGS"] = "-allow-unsupported-compiler"
    # a GPU of the thread's time: nvcc 9.0 cannot compile for the base facts' H100 at all
    f["nvml"]["devices"][0].update(name="Tesla V100-SXM2-16GB", capability=[7, 0])
    f["torch"]["cuda"]["devices"][0].update(name="Tesla V100-SXM2-16GB", capability=[7, 0])
    result = judge(f)
    assert codes(result) == ["host-compiler-too-new"]
    assert "not a return-statement" in result.summary and "GCC 5 at most" in result.summary
    assert "export CC=gcc-5 CXX=g++-5 CUDAHOSTCXX=g++-5" in commands(result)
    assert "sudo apt-get install -y cuda-toolkit-9-2" in commands(result)  # 9.2 fixed <tuple>


def test_on_rocky_linux_the_older_gcc_comes_from_gcc_toolset(facts):
    f = with_nvcc(facts("h100_healthy"), "12.4", "12.4.131")
    f["platform"]["distro"] = {"id": "rocky", "version_id": "9.4"}
    f["toolchain"]["host_cc"] = gcc("14.2.1")
    result = judge(f)
    bin_ = "/opt/rh/gcc-toolset-13/root/usr/bin"
    assert "sudo dnf install -y gcc-toolset-13-gcc gcc-toolset-13-gcc-c++" in commands(result)
    assert f"export CC={bin_}/gcc CXX={bin_}/g++ CUDAHOSTCXX={bin_}/g++" in commands(result)
    assert not any("apt-get" in c and "gcc" in c for c in commands(result))


def test_allow_unsupported_compiler_in_nvcc_append_flags_is_the_users_choice(facts):
    f = facts("h100_healthy")
    f["toolchain"]["host_cc"] = gcc("16.1.0")
    for var in ("NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"):
        f["env"] = {var: "-O2 --allow-unsupported-compiler"}
        assert judge(f).status == Status.PASS


def test_the_toolkits_own_gate_wins_over_the_table(facts):
    """A 12.1 whose host_config.h was read as 'later than 13' (a patched or newer header): the
    live fact decides, not the table's 12."""
    f = with_nvcc(facts("h100_healthy"), "12.1", "12.1.105")
    f["toolchain"]["cuda_home"]["host_gcc_max"] = 13
    f["toolchain"]["host_cc"] = gcc("13.3.0")
    assert judge(f).status == Status.PASS


def test_a_supported_gcc_and_an_unrecorded_host_compiler_stay_quiet(facts):
    f = facts("h100_healthy")
    assert judge(f).status == Status.PASS  # recorded before the host compiler was
    f["toolchain"]["host_cc"] = gcc("13.3.0")
    assert judge(f).status == Status.PASS
    f["toolchain"]["host_cc"] = {**gcc("15.2.0"), "kind": None}  # not recognised: not judged
    f["toolchain"]["host_cc"]["version"] = "99.0"
    assert judge(f).status == Status.PASS


def test_a_ccbin_in_nvcc_append_flags_is_what_the_remedy_changes(facts):
    f = facts("h100_healthy")
    f["env"]["NVCC_APPEND_FLAGS"] = "-O2 -ccbin /opt/gcc-16/bin/gcc"
    f["toolchain"]["host_cc"] = gcc("16.1.0", "-ccbin in NVCC_APPEND_FLAGS")
    result = judge(f)
    assert "export NVCC_APPEND_FLAGS='-O2 -ccbin gcc-15'" in commands(result)


def test_clang_21_with_cuda_13_0_unsupported_clang_version(facts):
    f = facts("h100_healthy")
    f["toolchain"]["cuda_home"]["host_clang_max"] = 20
    f["toolchain"]["host_cc"] = {
        "name": "clang",
        "source": "CC (torch's cpp_extension passes -ccbin $CC to nvcc)",
        "path": "/usr/bin/clang",
        "kind": "clang",
        "version": "21.1.0",
    }
    result = judge(f)
    assert codes(result) == ["host-compiler-too-new"]
    assert "must be less than 21" in result.summary
    assert "export CC=clang-20 CXX=clang++-20" in commands(result)
    f["toolchain"]["host_cc"]["version"] = "20.1.8"
    assert judge(f).status == Status.PASS


def test_first_toolkit_accepting_a_gcc_stays_in_the_major():
    assert host_compilers.first_accepting(13, 12) == (12, 4)
    assert host_compilers.first_accepting(6, 9) == (9, 2)  # not 9.0/9.1 (<tuple>)
    assert host_compilers.first_accepting(16, 13) is None
    assert host_compilers.gate((11, 4), "11.4.48") == 10 and host_compilers.gate((11, 4)) == 11


# ------------------------------------------------------------------ no toolkit, and a build here


def test_cuda_torch_without_nvcc_and_nothing_to_build_skips(facts):
    """A machine that only runs wheels needs no toolkit: nothing to say."""
    f = without_toolkit(facts("h100_healthy"))
    assert judge(f).status == Status.SKIP
    f["toolchain"]["project"] = {"root": "/home/u", "cuda_builds": [], "files_read": 40}
    assert judge(f).status == Status.SKIP


def test_cuda_home_not_set_building_a_cudaextension_extension_cpp_26(facts):
    """pytorch/extension-cpp#26, QWTforGithub/PUDM#20: 'OSError: CUDA_HOME environment variable
    is not set. Please set it to your CUDA install root.' while building a CUDAExtension."""
    f = builds_here(without_toolkit(facts("h100_healthy")))
    result = judge(f)
    assert codes(result) == ["cuda-toolkit-missing"] and result.status == Status.WARN
    assert "CUDA_HOME environment variable is not set" in result.summary
    assert "/home/u/proj/setup.py builds a CUDA extension" in result.summary
    assert commands(result)[:3] == [
        "sudo apt-get install -y cuda-toolkit-13-0",
        "export CUDA_HOME=/usr/local/cuda-13.0",
        'export PATH="$CUDA_HOME/bin:$PATH"',
    ]


def test_an_installed_toolkit_of_torchs_cuda_is_pointed_at(facts):
    f = builds_here(without_toolkit(facts("h100_healthy")), "ops/build.py", "cpp_extension.load")
    f["toolchain"]["toolkits"] = [
        {"path": "/usr/local/cuda-12.8", "release": "12.8", "has_headers": True},
        {"path": "/usr/local/cuda-13.0", "release": "13.0", "has_headers": True},
    ]
    result = judge(f)
    assert commands(result)[:2] == [
        "export CUDA_HOME=/usr/local/cuda-13.0",
        'export PATH="$CUDA_HOME/bin:$PATH"',
    ]


def test_cuda_home_on_condas_cudatoolkit_without_nvcc_gandissect_19(facts):
    """CSAILVision/gandissect#19: conda's cudatoolkit package has no nvcc. CUDA_HOME set by hand
    is itself the sign of a build; the fix is a toolkit with nvcc and CUDA_HOME on it."""
    f = facts("h100_healthy")
    f["env"] = {"CUDA_HOME": "/opt/conda/envs/gd", "CONDA_PREFIX": "/opt/conda/envs/gd"}
    f["toolchain"]["cuda_home"] = {
        "path": "/opt/conda/envs/gd",
        "source": "CUDA_HOME",
        "exists": True,
        "has_headers": False,
    }
    f["toolchain"]["nvcc"] = {"path": "/opt/conda/envs/gd/bin/nvcc", "exists": False}
    f["toolchain"]["toolkits"] = []
    result = judge(f)
    assert codes(result) == ["cuda-toolkit-missing"]
    assert "CUDA_HOME is set" in result.summary and "no bin/nvcc" in result.summary
    assert commands(result)[:2] == [
        "conda install -y -c nvidia cuda-toolkit=13.0",
        'export CUDA_HOME="$CONDA_PREFIX"',
    ]


# ------------------------------------------------------------------ the probe, live


def _fake_compiler(folder: Path, name: str, banner: str) -> Path:
    exe = folder / name
    exe.write_text(f"#!/bin/sh\nprintf '%s\\n' {banner!r}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_probe_reads_the_host_compiler_nvcc_would_run(tmp_path):
    _fake_compiler(
        tmp_path,
        "gcc",
        "gcc (GCC) 16.1.1 20260501 (Red Hat 16.1.1-1)\nCopyright (C) 2026 Free Software Foundation, Inc.",
    )
    _fake_compiler(
        tmp_path, "clang-21", "Ubuntu clang version 21.1.2 (1)\nTarget: x86_64-pc-linux-gnu"
    )

    def which(name: str) -> str | None:
        return str(tmp_path / name) if (tmp_path / name).exists() else None

    default = toolchain.host_compiler({}, which)
    assert (default["kind"], default["version"]) == ("gcc", "16.1.1")
    assert default["source"].startswith("gcc on PATH")
    cc = toolchain.host_compiler({"CC": "clang-21", "NVCC_CCBIN": "gcc"}, which)
    assert (cc["kind"], cc["version"], cc["name"]) == ("clang", "21.1.2", "clang-21")
    # a -ccbin appended by NVCC_APPEND_FLAGS comes last on nvcc's command line and wins over CC
    env = {"CC": "clang-21", "NVCC_APPEND_FLAGS": f"-ccbin {tmp_path}"}
    assert toolchain.host_compiler(env, which)["path"] == str(tmp_path / "gcc")
    assert toolchain.host_compiler_name({"NVCC_PREPEND_FLAGS": "--compiler-bindir=gcc-12"}) == (
        "gcc-12",
        "-ccbin in NVCC_PREPEND_FLAGS",
    )
    assert toolchain.host_compiler_name({"NVCC_CCBIN": "g++-13"})[0] == "g++-13"


def test_probe_reads_the_gate_from_the_toolkits_host_config(tmp_path):
    crt = tmp_path / "include" / "crt"
    crt.mkdir(parents=True)
    (crt / "host_config.h").write_text(
        "#if defined(__GNUC__)\n\n#if __GNUC__ > 13\n\n#error -- unsupported GNU version! gcc "
        "versions later than 13 are not supported!\n\n#endif\n"
        "#if (__clang_major__ >= 18) || (__clang_major__ < 3) || ((__clang_major__ == 3) &&  "
        "(__clang_minor__ < 3))\n#error -- unsupported clang version! clang version must be less "
        "than 18 and greater than 3.2 .\n"
    )
    assert toolchain.host_limits(str(tmp_path)) == {"host_gcc_max": 13, "host_clang_max": 17}
    assert toolchain.host_limits(str(tmp_path / "none")) == {}


def test_probe_finds_a_cudaextension_build_in_a_project_and_not_in_venvs_or_comments(tmp_path):
    proj = tmp_path / "proj"
    (proj / "csrc").mkdir(parents=True)
    (proj / "README.py").write_text("# CUDAExtension( is mentioned here only\n")
    (proj / ".hidden").mkdir()
    (proj / ".hidden" / "setup.py").write_text("CUDAExtension('x', ['k.cu'])\n")
    venv = proj / "venv2"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "setup.py").write_text("CUDAExtension('x', ['k.cu'])\n")
    assert toolchain.project_facts(str(proj))["cuda_builds"] == []

    (proj / "csrc" / "jit.py").write_text(
        "from torch.utils.cpp_extension import load\n"
        "ops = load(name='ops', sources=['ops.cpp', 'ops_kernel.cu'])\n"
    )
    (proj / "big.py").write_bytes(b"CUDAExtension('x')\n" + b"#" * (1024 * 1024))  # over the cap
    found = toolchain.project_facts(str(proj))
    assert found["cuda_builds"] == [
        {"path": os.path.join("csrc", "jit.py"), "marker": "cpp_extension.load with CUDA sources"}
    ]
    assert found["root"] == str(proj) and found["truncated"] is False

    (proj / "setup.py").write_text(
        "from setuptools import setup\nfrom torch.utils.cpp_extension import BuildExtension, "
        "CUDAExtension\nsetup(ext_modules=[CUDAExtension('lltm_cuda', ['lltm_cuda.cpp', "
        "'lltm_cuda_kernel.cu'])], cmdclass={'build_ext': BuildExtension})\n"
    )
    first = toolchain.project_facts(str(proj))["cuda_builds"][0]
    assert first == {"path": "setup.py", "marker": "CUDAExtension"}  # build files first


def test_probe_finds_gandissects_aliased_load_three_folders_down_gandissect_19(tmp_path):
    """CSAILVision/gandissect#19 builds PrRoIPool at import time through
    ``from torch.utils.cpp_extension import load as load_extension`` with a .cu source, in
    netdissect/upsegmodel/prroi_pool/functional.py."""
    deep = tmp_path / "netdissect" / "upsegmodel" / "prroi_pool"
    deep.mkdir(parents=True)
    (deep / "functional.py").write_text(
        "from os.path import join as pjoin\n"
        "from torch.utils.cpp_extension import load as load_extension\n"
        "_p = load_extension('_prroi_pooling', [pjoin('src', 'prroi_pooling_gpu.c'), "
        "pjoin('src', 'prroi_pooling_gpu_impl.cu')], verbose=True)\n"
    )
    found = toolchain.project_facts(str(tmp_path))["cuda_builds"]
    assert found == [
        {
            "path": os.path.join("netdissect", "upsegmodel", "prroi_pool", "functional.py"),
            "marker": "cpp_extension.load with CUDA sources",
        }
    ]


def test_probe_project_look_is_bounded(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"m{i:02}.py").write_text("x = 1\n")
    monkeypatch.setattr(toolchain, "PROJECT_MAX_FILES", 10)
    found = toolchain.project_facts(str(tmp_path))
    assert found["files_read"] == 10 and found["truncated"] is True


def test_gathered_facts_carry_the_project_and_host_compiler(tmp_path, monkeypatch):
    (tmp_path / "setup.py").write_text(
        "from torch.utils.cpp_extension import CUDAExtension\nCUDAExtension('a', ['a.cu'])\n"
    )
    monkeypatch.chdir(tmp_path)
    gathered = toolchain.gather(environ={"PATH": os.environ.get("PATH", "")})
    facts = read_facts({"toolchain": gathered})
    assert facts.toolchain.project.cuda_builds[0].path == "setup.py"
    assert facts.toolchain.host_cc.source.startswith("gcc on PATH")
