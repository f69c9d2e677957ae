"""Which remedy commands fix may run, read as argv lists.

A remedy's commands are shell text for people. fix runs only those that are package installs or
removals for the examined environment: ``<that interpreter> -m pip install|uninstall …`` with
options known to be harmless, or conda's install/remove for that environment. Everything else —
sudo, a driver, ``export``, a pipe, another interpreter, an option fix does not know — is advice,
and the reason is kept to say so.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, replace

from ..check.requirements import normalise
from ..data import compat

PYTORCH_INDEX = "https://download.pytorch.org/whl"
# pip options fix passes on: flags, and options that take a value (the next word).
PIP_FLAGS = {
    "install": {"--force-reinstall", "--no-deps", "--no-cache-dir", "-U", "--upgrade", "--pre"},
    "uninstall": {"-y", "--yes"},
}
PIP_VALUED = {"install": {"--index-url", "-i", "--extra-index-url", "-f", "--find-links"}}
CONDA_FLAGS = {"-y", "--yes", "--force", "--no-deps", "--override-channels"}
CONDA_VALUED = {"-c", "--channel", "-p", "--prefix"}
CONDA_EXES = ("conda", "mamba", "micromamba")
SHELL_WORDS = {"&&", "||", "|", ";", ">", ">>", "<", "&"}
# A requirement fix installs: a name, an optional exact or bounded version; no URL, no path.
_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?([=<>!~]=?[^\s;@]*)?$"
)
_CONDA_SPEC = re.compile(r"^([A-Za-z0-9_.-]+::)?[A-Za-z0-9][A-Za-z0-9._-]*([=<>!][^\s]*)?$")


@dataclass(frozen=True)
class PackageCommand:
    """A command fix may run: a package install or removal in the examined environment."""

    tool: str  # pip | conda
    action: str  # install | uninstall (conda: remove)
    argv: tuple[str, ...]
    requirements: tuple[str, ...]  # the requirement words, as written

    @property
    def names(self) -> list[str]:
        return [normalise(re.split(r"[\[=<>!~:]", r.split("::")[-1])[0]) for r in self.requirements]

    def text(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True)
class NotRun:
    """A command fix leaves to the user, and why."""

    command: str
    why: str


VERIFY = "verify"  # a remedy's closing `torchdoctor check …`: fix verifies in its own way


def classify(command: str, python: str, conda_prefix: str | None) -> PackageCommand | NotRun | str:
    """A command fix may run, the verify step (``VERIFY``), or why it stays advice."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return NotRun(command, "not a plain command (unbalanced quotes)")
    if not argv:
        return NotRun(command, "empty")
    if argv[:2] == ["torchdoctor", "check"]:
        return VERIFY
    why = _refused_word(argv)
    if why:
        return NotRun(command, why)
    if argv[0] in CONDA_EXES or os.path.basename(argv[0]) in CONDA_EXES:
        return _conda(command, argv, conda_prefix)
    if argv[1:3] == ["-m", "pip"]:
        if not _same_program(argv[0], python):
            return NotRun(command, f"pip of another interpreter ({argv[0]}), not the examined one")
        return _pip(command, argv)
    return NotRun(command, f"not a package install or removal ({argv[0]})")


def _refused_word(argv: list[str]) -> str | None:
    if argv[0] == "sudo":
        return "needs sudo (system packages and drivers are left to you)"
    if argv[0] in ("export", "set", "unset", "env") or "=" in argv[0]:
        return "changes a shell's environment, which fix cannot do for you"
    if any(w in SHELL_WORDS or w.startswith(("$(", "`")) for w in argv):
        return "a shell pipeline or redirection"
    if any(w in ("nvidia-smi", "ubuntu-drivers", "apt", "apt-get", "dnf", "yum") for w in argv):
        return "a driver or system package: printed advice only"
    return None


def _same_program(a: str, b: str) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b) and os.path.dirname(os.path.abspath(a)) == os.path.dirname(
            os.path.abspath(b)
        )
    except OSError:
        return False


def _options(words: list[str], flags: set[str], valued: set[str]) -> tuple[list[str], str | None]:
    """The requirement words, or why an option makes the command advice."""
    reqs: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        name = word.split("=", 1)[0]
        if word in flags:
            i += 1
        elif name in valued:
            i += 1 if "=" in word else 2
        elif word.startswith("-"):
            return [], f"option {word} is not one fix applies"
        else:
            reqs.append(word)
            i += 1
    if i > len(words):
        return [], f"option {words[-1]} has no value"
    return reqs, None


def _pip(command: str, argv: list[str]) -> PackageCommand | NotRun:
    action = argv[3] if len(argv) > 3 else ""
    if action not in PIP_FLAGS:
        return NotRun(command, f"pip {action or '(no subcommand)'} is not an install or removal")
    reqs, why = _options(argv[4:], PIP_FLAGS[action], PIP_VALUED.get(action, set()))
    if why or not reqs:
        return NotRun(command, why or "names no package")
    bad = [r for r in reqs if not _REQUIREMENT.match(r)]
    if bad:
        return NotRun(command, f"{bad[0]!r} is not a package requirement (a path or URL?)")
    return PackageCommand("pip", action, tuple(argv), tuple(reqs))


def _conda(command: str, argv: list[str], prefix: str | None) -> PackageCommand | NotRun:
    action = argv[1] if len(argv) > 1 else ""
    if action not in ("install", "remove", "uninstall"):
        return NotRun(command, f"conda {action or '(no subcommand)'} is not an install or removal")
    if not prefix:
        return NotRun(command, "the examined Python is not a conda environment")
    words = argv[2:]
    if "-n" in words or "--name" in words:
        return NotRun(command, "names a conda environment by name, not the examined one")
    reqs, why = _options(words, CONDA_FLAGS, CONDA_VALUED)
    if why or not reqs:
        return NotRun(command, why or "names no package")
    if any(not _CONDA_SPEC.match(r) for r in reqs):
        return NotRun(command, "a package spec fix does not read")
    given = _value(words, ("-p", "--prefix"))
    if given and os.path.abspath(given) != os.path.abspath(prefix):
        return NotRun(command, f"another conda environment ({given})")
    tail = [] if given else ["--prefix", prefix]
    yes = [] if {"-y", "--yes"} & set(words) else ["--yes"]
    return PackageCommand("conda", action, (*argv, *tail, *yes), tuple(reqs))


def _value(words: list[str], names: tuple[str, ...]) -> str | None:
    for i, w in enumerate(words):
        if w in names and i + 1 < len(words):
            return words[i + 1]
        for n in names:
            if w.startswith(n + "="):
                return w.split("=", 1)[1]
    return None


def index_urls(cmd: PackageCommand) -> list[str]:
    """The indexes and find-links a pip command names, in order."""
    words = list(cmd.argv)
    out = []
    for i, w in enumerate(words):
        name, _, inline = w.partition("=")
        if name in PIP_VALUED["install"]:
            value = inline or (words[i + 1] if i + 1 < len(words) else "")
            if value:
                out.append(value)
    return out


def with_mirror(cmd: PackageCommand, mirror: str | None) -> PackageCommand:
    """PyTorch's wheel indexes read from a mirror (``--index-mirror``) that has their layout."""
    if not mirror:
        return cmd
    base = mirror.rstrip("/")
    argv = tuple(
        base + w[len(PYTORCH_INDEX) :] if w.startswith(PYTORCH_INDEX + "/") else w for w in cmd.argv
    )
    return replace(cmd, argv=argv)


def variant_of_command(cmd: PackageCommand) -> str | None:
    """The PyTorch wheel variant a pip command installs from (its index, or a +tag it pins)."""
    for url in index_urls(cmd):
        tail = url.rstrip("/").rsplit("/", 1)[-1]
        if re.fullmatch(r"cpu|cu\d+|rocm[\d.]+|xpu", tail):
            return tail
    for req in cmd.requirements:
        if "+" in req:
            return req.split("+", 1)[1]
    return None


COMPANIONS = ("torchvision", "torchaudio")


def with_companions(
    cmd: PackageCommand, installed: dict[str, str]
) -> tuple[PackageCommand, list[str]]:
    """An install that moves torch brings the installed torchvision/torchaudio along, pinned to
    the release built for that torch and from the same index, in the same resolve; a note for a
    companion with no release for it (it would be left unpaired)."""
    if cmd.tool != "pip" or cmd.action != "install" or "torch" not in cmd.names:
        return cmd, []
    torch_req = cmd.requirements[cmd.names.index("torch")]
    pin = re.match(r"torch==([0-9][0-9.]*)(\+\S+)?$", torch_req.strip("'\""))
    notes, extra = [], []
    for pkg in COMPANIONS:
        if pkg not in installed or pkg in cmd.names:
            continue
        # A companion is pinned or left alone: an unpinned one lets pip move torch again.
        version = compat.companion_version(pkg, pin.group(1)) if pin else None
        if not version or not pin:
            notes.append(
                f"{pkg} {installed[pkg]} is installed and no {pkg} release is known to pair with "
                f"{torch_req}: it is left as it is, and verification will judge it"
            )
            continue
        extra.append(f"{pkg}=={version}{pin.group(2) or ''}")
    if not extra:
        return cmd, notes
    at = cmd.argv.index(torch_req) + 1
    argv = (*cmd.argv[:at], *extra, *cmd.argv[at:])
    return replace(cmd, argv=argv, requirements=(*cmd.requirements, *extra)), notes
