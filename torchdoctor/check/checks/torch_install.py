"""torch.install: is torch importable, from where, once, with matching companions and NumPy?"""

from __future__ import annotations

import re

from torchdoctor.data import compat
from torchdoctor.report.result import Problem, Remedy, Status, Verdict, from_problems, verdict

from ..collect_env import NO_REASON
from ..record import Facts
from ..record.probe import TorchProbe
from . import companions, extension_abi, import_errors, other_pythons, torch_owners, torch_tree
from .common import (
    Context,
    current_variant,
    grounded,
    install_command,
    installed_family,
    not_in_report,
    nvml_gpus,
    python_cmd,
    quote,
    quoted,
    said,
    set_env,
    torch_version_path,
    wheel_for,
)

ID = "torch.install"
TITLE = "PyTorch installation"
ORDER = 20  # position in the report: basic facts first, the smoke test last
# The facts judged here (a pasted report without them skips this check).
NEEDS = ("torch.status", "torch.version")
# The problems of an importable torch, each its own finding id (torch.install.<code>).
FINDINGS = {
    **companions.CODES,
    "extension-other-torch": "a compiled extension (not a companion) built for another torch",
    "numpy-too-new": "NumPy 2 with a torch older than 2.3, which was built against NumPy 1.x",
    "numpy-abi-error": "torch printed a NumPy ABI error while importing",
    "user-site": "torch imported from the user site, not from the environment",
    "duplicate-installs": "several copies of torch visible to this Python",
}


def local_tag(version: str | None) -> str | None:
    """'2.8.0+cu128' -> 'cu128'; None for a PyPI build without a local tag."""
    return version.split("+", 1)[1] if version and "+" in version else None


def _install_choice(facts: Facts) -> tuple[str, str | None]:
    """(variant, release) to install: a CUDA wheel the driver and GPUs take, else the CPU build."""
    choice = wheel_for(facts) if nvml_gpus(facts) else None
    if choice:
        return choice.variant, choice.release
    return (current_variant(facts) or "cpu"), None


def _torch_and_nvidia_wheels(facts: Facts) -> list[str]:
    """Exactly the distributions one wheel index installs together: nothing else is removed."""
    nvidia = sorted(facts.packages.nvidia_wheels)
    return [*installed_family(facts), *(n for n in nvidia if n != "nvidia-ml-py")]


INTEL_MAC_RELEASE = compat.INTEL_MAC_RELEASE


def _missing(facts: Facts, ctx: Context) -> Verdict:
    variant, release = _install_choice(facts)
    release = release or compat.newest_release(facts.platform.python_version)
    why = (
        f"an NVIDIA driver {facts.nvml.driver_version} is present, so the {variant} build fits"
        if variant != "cpu"
        else "no NVIDIA GPU is visible, so the CPU build (a few hundred MB, not several GB) fits"
    )
    index = f" --index-url {compat.INDEX_URL.format(variant=variant)}"
    if facts.platform.system == "Darwin":
        intel = facts.platform.machine == "x86_64"
        release = INTEL_MAC_RELEASE if intel else release
        why = (
            f"torch {release} is the last release with Intel macOS wheels"
            if intel
            else "on macOS the PyPI wheel includes MPS support"
        )
        index = ""
    cmd = f"{python_cmd(facts)} install {quote(facts, f'torch=={release}.*')}{index}"
    remedies = [
        Remedy(
            f"Install torch {release}: {why}.",
            (cmd,),
            grounded(
                facts, "torch.status", "platform.system", "platform.machine", "nvml.driver_version"
            ),
        )
    ]
    elsewhere = other_pythons.remedy(facts)
    return verdict(
        Status.FAIL,
        f"torch is not installed for {facts.platform.executable or 'this Python'}",
        {"error": _error_raw(facts), "looked_at": other_pythons.looked_at(facts)},
        remedies + ([elsewhere] if elsewhere else []),
    )


def _installed_variant(facts: Facts) -> str:
    """The index the installed (unimportable) torch came from: its tag, or PyPI's build."""
    installed = facts.packages.distributions.get("torch")
    version = installed.version if installed else None
    system = facts.platform.system
    return current_variant(facts) or companions.variant_of(version, version, system) or "cpu"


def _error_raw(facts: Facts) -> dict | None:
    return facts.torch.error.raw if facts.torch.error else None


_LIB = re.compile(r"(lib[\w+-]+\.so(?:\.[\d.]+)?)")


def _import_error(facts: Facts) -> Verdict:
    err = facts.torch.error
    message = f"{(err and err.type) or 'Error'}: {(err and err.message) or ''}".strip()
    details: dict[str, object] = {"error": _error_raw(facts) or {}}
    details |= quoted(said(facts, "torch.error.message"))  # torch's words, as on a paste
    pip = python_cmd(facts)
    lib = _LIB.search(message)
    remedies: list[Remedy]
    because = grounded(facts, "torch.error.message", "torch.error.type", "torch.status")
    beside = import_errors.mkl_symbol(facts, message, because)
    beside = beside or import_errors.libstdcxx(facts, message, because)
    beside = beside or import_errors.foreign_nvidia(facts, message, because)
    beside = beside or import_errors.windows_dll(facts, message, because)
    beside = beside or torch_tree.remedies(facts)
    beside = beside or import_errors.libtorch_on_loader_path(facts, because)
    beside = beside or import_errors.nvidia_wheels_elsewhere(facts, message, because)
    if beside:
        remedies = beside
    elif "undefined symbol" in message and "LD_LIBRARY_PATH" in facts.env:
        remedies = [
            Remedy(
                "A library on LD_LIBRARY_PATH (often a system CUDA) shadows the one torch's wheel "
                "ships. Run Python without those paths.",
                ("env -u LD_LIBRARY_PATH python -c 'import torch'",),
                (*because, "env.LD_LIBRARY_PATH"),
            )
        ]
    elif lib and "cannot open shared object file" in message and facts.platform.jetson:
        # Jetson wheels link against the CUDA of one JetPack release (pytorch/pytorch#41975,
        # libcufft.so.10.0 on JetPack 4.4) or libraries JetPack leaves out (NVIDIA/Isaac-GR00T#343,
        # libcudss.so.0): PyPI and the PyTorch indexes have no wheel to reinstall from.
        details["missing_library"] = lib.group(1)
        release = (facts.platform.jetson or "").lstrip("# ").split(", GCID")[0]
        remedies = [
            Remedy(
                f"This torch wheel needs {lib.group(1)}, which this JetPack ({release}) does not "
                "provide: install the wheel NVIDIA builds for this JetPack release (NVIDIA's "
                "'PyTorch for Jetson' page or the jetson-ai-lab index for your JetPack), or add "
                "the missing library from NVIDIA's CUDA apt repository for Jetson (cuDSS: "
                "`sudo apt-get install cudss`).",
                evidence=(*because, *grounded(facts, "platform.jetson")),
            )
        ]
    elif lib and "cannot open shared object file" in message:
        details["missing_library"] = lib.group(1)
        remedies = [
            Remedy(
                f"{lib.group(1)} comes from a pip `nvidia-*` wheel that is missing or half "
                "uninstalled. Remove torch and every nvidia-* wheel, then reinstall from one index.",
                (
                    f"{pip} uninstall -y {' '.join(_torch_and_nvidia_wheels(facts))}",
                    install_command(facts, *_install_choice(facts), force=False),
                ),
                because,
            )
        ]
    elif "numpy" in message.lower():
        remedies = [
            Remedy(
                "torch was built against another NumPy ABI.",
                (f'{pip} install "numpy<2"',),
                (*because, *grounded(facts, "packages.distributions.numpy.version")),
            )
        ]
    else:
        remedies = [
            Remedy(
                "Reinstall torch cleanly into this environment, same version, same index.",
                (install_command(facts, _installed_variant(facts)) + " --no-cache-dir",),
                because,
            )
        ]
    if facts.collected.source == "collect_env" and (err and err.message) == NO_REASON:
        # The report says only that the import failed: the error itself comes first.
        python = pip.removesuffix(" -m pip")
        why = "Run the import by hand to see the error."
        if facts.platform.system == "Windows":
            why += (
                " On Windows, '[WinError 126] … c10.dll' (or another torch DLL) means the "
                "Microsoft Visual C++ Redistributable (x64) is missing: install it."
            )
        remedies.insert(
            0, Remedy(why, (f'{python} -c "import torch"',), (*because, "collected.source"))
        )
    return verdict(
        Status.FAIL, f"import torch failed: {message.splitlines()[0][:200]}", details, remedies
    )


def _numpy(facts: Facts, torch_version: str) -> Problem | None:
    numpy = facts.packages.distributions.get("numpy")
    np = numpy.version if numpy else None
    if (
        np
        and compat.parse_version(np)[:1] >= (2,)
        and compat.parse_version(torch_version)[:2] < (2, 3)
    ):
        return Problem(
            "numpy-too-new",
            Status.FAIL,
            f"numpy {np} with torch {torch_version}: torch older than 2.3 was built against NumPy 1.x",
            [
                Remedy(
                    "Pin NumPy below 2, or upgrade torch.",
                    (f'{python_cmd(facts)} install "numpy<2"',),
                    grounded(
                        facts, "packages.distributions.numpy.version", torch_version_path(facts)
                    ),
                )
            ],
        )
    return None


NUMPY_ABI_SIGNS = ("compiled using NumPy 1.x", "_ARRAY_API not found", "Failed to initialize NumPy")


def _numpy_import_warning(facts: Facts) -> Problem | None:
    """NumPy trouble torch printed while importing (a warning, or raw text on stderr)."""
    text = " ".join(facts.torch.warnings) + " " + (facts.probe.torch.stderr_tail or "")
    sign = next((s for s in NUMPY_ABI_SIGNS if s in text), None)
    if not sign:
        return None
    if "No module named 'numpy'" in text:
        return None  # numpy simply absent: reported as a note, not a problem
    fix = Remedy(
        "An extension was built against another NumPy major version. Pin NumPy below 2 or "
        "upgrade the package that was built against NumPy 1.x.",
        (f'{python_cmd(facts)} install "numpy<2"',),
        grounded(
            facts,
            *(f"torch.warnings.{i}" for i, w in enumerate(facts.torch.warnings) if sign in w),
            *(
                ("probe.torch.stderr_tail",)
                if sign in (facts.probe.torch.stderr_tail or "")
                else ()
            ),
        ),
    )
    why = f"torch printed a NumPy ABI error on import ({sign!r})"
    return Problem("numpy-abi-error", Status.FAIL, why, [fix])


def _keep_one_torch(facts: Facts, why: str) -> Remedy:
    # pip uninstalls the copy found first on sys.path: the user-site one.
    uninstall = (f"{python_cmd(facts)} uninstall -y torch",)
    if _pip_would_remove_conda_files(facts):
        uninstall = ()
        why += (
            " Not with `pip uninstall torch` here: the copy pip would remove is conda's pytorch "
            "(or its owner could not be read), and pip would delete files conda lists as its own."
        )
    n = len(facts.packages.torch_distributions)
    return Remedy(
        why,
        (*uninstall, set_env(facts, "PYTHONNOUSERSITE", "1")),
        grounded(
            facts,
            "torch.file",
            "platform.user_site",
            "platform.conda_packages.pytorch",
            *(f"packages.torch_distributions.{i}.location" for i in range(n)),
            *torch_owners.paths(facts),
        ),
    )


def _pip_would_remove_conda_files(facts: Facts) -> bool:
    """pip uninstalls the imported copy (first on sys.path): is it conda's pytorch, or, with conda's
    pytorch installed, can its owner not be told (older facts)?"""
    if not (facts.platform.conda_packages or {}).get("pytorch"):
        return False
    where = facts.torch.file or ""
    dists = facts.packages.torch_distributions
    first = [i for i, d in enumerate(dists) if d.location and where.startswith(d.location)]
    if not first or not torch_owners.known(facts):
        return True
    return any(torch_owners.conda_owned(facts, i) for i in first)


def _outside_env(facts: Facts) -> Problem | None:
    """torch imported from outside the interpreter's prefix: usually ~/.local (user site)."""
    where, prefix = facts.torch.file or "", facts.platform.prefix or ""
    user_site = facts.platform.user_site or ""
    if where and user_site and where.startswith(user_site):
        return Problem(
            "user-site",
            Status.FAIL,
            f"torch is imported from the user site ({user_site}), not from the environment {prefix}",
            [
                _keep_one_torch(
                    facts,
                    "A user-site torch shadows the environment's. Remove it, or isolate the "
                    "environment from the user site.",
                )
            ],
        )
    return None


def _duplicates(facts: Facts) -> Problem | None:
    dists = facts.packages.torch_distributions
    if len({d.location for d in dists}) > 1:
        listing = ", ".join(f"{d.version} in {d.location}" for d in dists)
        return Problem(
            "duplicate-installs",
            Status.FAIL,
            f"{len(dists)} copies of torch are visible ({listing})",
            [
                _keep_one_torch(
                    facts,
                    "Keep one: uninstall the copy you do not use (a user-site copy is the usual "
                    "culprit), or start Python with PYTHONNOUSERSITE=1.",
                )
            ],
        )
    return None


def _illegal_instruction(facts: Facts, probe: TorchProbe) -> Verdict:
    """SIGILL in the probe: the wheel's code uses instructions this CPU does not have."""
    isa = facts.platform.cpu.isa
    lacks = [f for f in ("avx", "avx2", "fma") if isa is not None and f not in isa]
    cpu = facts.platform.cpu.model or "this CPU"
    why = (
        f"{cpu} lacks {', '.join(lacks).upper()}"
        if lacks
        else f"{cpu} lacks an instruction it uses"
    )
    return verdict(
        Status.FAIL,
        f"torch died with 'Illegal instruction' (SIGILL) during {probe.unfinished_stage}: {why}",
        {"probe": probe.raw, "cpu": facts.platform.cpu.raw or None},
        [
            Remedy(
                "The wheel's code needs CPU instructions this machine lacks. Run on a CPU with "
                "AVX2 (a VM: pass the host CPU through, e.g. `-cpu host`), or build torch from "
                "source for this CPU.",
                evidence=grounded(
                    facts, "probe.torch.signal", "platform.cpu.isa", "platform.cpu.model"
                ),
            )
        ],
    )


def _probe_stopped(facts: Facts) -> Verdict:
    """The probe died or hung before ``import torch`` returned."""
    probe = facts.probe.torch
    if probe.signal == "SIGILL":
        return _illegal_instruction(facts, probe)
    because = grounded(facts, "probe.torch.status", "probe.torch.signal", "torch.status")
    shadowed = import_errors.libtorch_on_loader_path(facts, because)
    if shadowed:
        return verdict(
            Status.FAIL,
            "the torch probe died in `import torch` "
            f"({probe.signal or probe.message or facts.torch.status}), with a libtorch on "
            "LD_LIBRARY_PATH",
            {"probe": probe.raw, "ld_path_torch_libs": facts.host.ld_path_torch_libs},
            shadowed,
        )
    return verdict(
        Status.ERROR,
        "the torch probe did not get through `import torch`: "
        f"{probe.message or facts.torch.status}",
        {"probe": probe.raw},
        [
            Remedy(
                "Run the import by hand to see where it stops; a hang here is usually a "
                "network filesystem or a broken extension module on the path.",
                (f"{facts.platform.executable or 'python'} -X importtime -c 'import torch'",),
                grounded(facts, "probe.torch.status", "probe.torch.message", "torch.status"),
            )
        ],
    )


def check(facts: Facts, ctx: Context) -> Verdict:
    status = facts.torch.status
    if status == "missing":
        return _missing(facts, ctx)
    if status == "import_error":
        return _import_error(facts)
    if status != "ok":
        return _probe_stopped(facts)
    version = facts.torch.version or "?"
    dists = facts.packages.distributions
    details: dict[str, object] = {
        "version": version,
        "file": facts.torch.file,
        "import_s": facts.torch.import_s,
        "companions": {k: v.version for k, v in dists.items() if k != "torch"},
    }
    found = [
        _numpy(facts, version),
        _numpy_import_warning(facts),
        _outside_env(facts),
        _duplicates(facts),
    ]
    problems = (
        companions.problems(facts) + extension_abi.problems(facts) + torch_tree.problems(facts)
    )
    problems += [p for p in found if p]
    if problems:
        details["problems"] = [p.message for p in problems]
    # torch's words read from the companions' import errors on a live check, quoted.
    details |= quoted(said(facts, *(f"torch.companions.{p}.error.message" for p in dists)))
    where = facts.torch.file or ""
    summary = (
        f"torch {version} imports in {facts.torch.import_s or 0:.2f} s from {where.rsplit('/', 2)[0]}"
        if where
        else f"torch {version} imported where the report was made"
    )
    listed = not_in_report(facts, ("packages.distributions",)) is None  # a report's pip list
    if listed and "numpy" not in dists:
        summary += " (numpy not installed: tensor.numpy() will not work)"
    return from_problems(problems, details, summary)
