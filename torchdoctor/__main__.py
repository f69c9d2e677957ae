"""``python -m torchdoctor`` and the ``torchdoctor`` command.

Nothing is imported before the guard: Ctrl-C while click and the CLI load (the first tens of ms)
is exit 130 with one line, like Ctrl-C at any later moment.
"""

import os
import sys


def _drop_working_directory() -> None:
    """``python -m torchdoctor`` puts the working directory first on sys.path, so a user's
    dis.py or random.py there would be imported in place of the standard library's while click
    loads (pytorch/pytorch#14014 is that failure for torch). torchdoctor itself is imported by
    then and finds its submodules through its package path: the entry can go."""
    try:
        cwd = os.getcwd()
        if sys.path and os.path.abspath(sys.path[0] or os.curdir) == cwd:
            del sys.path[0]
    except OSError:  # a deleted working directory holds nothing to import
        pass


def _interrupted() -> None:
    sys.stderr.write("Interrupted.\n")
    sys.exit(130)


def entry() -> None:
    try:
        from torchdoctor import interrupts  # builtin modules only
    except KeyboardInterrupt:
        _interrupted()
    try:
        # First: a Ctrl-C that lands in a callback while the CLI loads must not be lost.
        interrupts.install_redelivery()
        from torchdoctor.cli import main
    except BaseException as exc:
        if not interrupts.from_ctrl_c(exc):
            raise
        _interrupted()
    main()


if __name__ == "__main__":
    _drop_working_directory()
    entry()
