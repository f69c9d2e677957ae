"""``python -m torchdoctor`` and the ``torchdoctor`` command.

Nothing is imported before the guard: Ctrl-C while click and the CLI load (the first tens of ms)
is exit 130 with one line, like Ctrl-C at any later moment.
"""

import sys


def entry() -> None:
    try:
        from torchdoctor.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)
    main()


if __name__ == "__main__":
    entry()
