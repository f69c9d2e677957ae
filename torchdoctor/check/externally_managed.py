"""Remedies for an externally managed Python (PEP 668), such as Debian's and Ubuntu's system one.

pip refuses to install into it ("error: externally-managed-environment"), so a remedy that runs
``<python> -m pip install …`` there would fail. Such a remedy becomes: make a virtual environment
from that Python and install into it; pipx is named for command-line applications.
"""

from __future__ import annotations

import shlex

from ..report.result import Remedy
from .checks.common import python_cmd
from .record import Facts

VENV = ".venv"


def _in_venv(remedy: Remedy, facts: Facts, marker: str) -> Remedy:
    pip = python_cmd(facts)
    # Debian and Ubuntu ship venv's ensurepip separately, in pythonX.Y-venv.
    version = ".".join((facts.platform.python_version or "3").split(".")[:2])
    setup = (
        [] if facts.platform.ensurepip is not False else [f"sudo apt install python{version}-venv"]
    )
    setup.append(f"{shlex.quote(facts.platform.executable or 'python3')} -m venv {VENV}")
    # In a fresh environment there is nothing to uninstall: keep the installs and other steps.
    kept = [
        c.replace(pip, f"{VENV}/bin/python -m pip", 1)
        for c in remedy.commands
        if not c.startswith(pip) or c.startswith(f"{pip} install")
    ]
    return Remedy(
        f"{remedy.text} This Python is externally managed (PEP 668, {marker}): pip refuses to "
        "install into it with 'error: externally-managed-environment'. Install into a virtual "
        f"environment instead and run your code with {VENV}/bin/python (or activate it); for a "
        "command-line application, `pipx install APP` makes such an environment for you.",
        (*setup, *kept),
        (*remedy.evidence, "platform.externally_managed"),
    )


def adapt(remedies: list[Remedy], facts: Facts) -> list[Remedy]:
    marker = facts.platform.externally_managed
    if not marker:
        return remedies
    install = f"{python_cmd(facts)} install"
    return [
        _in_venv(r, facts, str(marker)) if any(c.startswith(install) for c in r.commands) else r
        for r in remedies
    ]
