"""Option types and helpers shared by torchdoctor's commands."""

from __future__ import annotations

import math
from collections.abc import Callable

import click


def write_or_usage_error(path: str, option: str, write: Callable[[str], object]) -> None:
    """Run ``write(path)``; a failure (disk full, /proc file) is a usage error, exit 2."""
    try:
        write(path)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {path!r}: {exc.strerror or exc}", param_hint=option
        ) from exc


class FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses nan and inf (nan would disable every deadline)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number
