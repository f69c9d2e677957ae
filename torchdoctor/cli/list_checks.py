"""`torchdoctor list-checks`: every check's id, title, accelerator, documentation page and finding ids."""

from __future__ import annotations

import json

import click

from .options import (
    resolve_format,
)


@click.command("list-checks")
@click.option(
    "--format", "fmt", type=click.Choice(("text", "json")), default=None, help="Output format."
)
@click.option("--json", "as_json", is_flag=True, help="Short for --format json.")
def list_checks(fmt: str | None, as_json: bool) -> None:
    """List every check: id, title, the accelerator it is about, and its documentation page."""
    from ..check.checks import ALL
    from ..report.docs import check_url

    rows = [
        {
            "id": m.ID,
            "title": m.TITLE,
            "accelerator": getattr(m, "ACCELERATOR", None),
            "doc": check_url(m.ID),
            # the ids of the problems it reports one by one (each silenced alone)
            "findings": [
                {"id": f"{m.ID}.{code}", "title": title, "doc": check_url(m.ID, code)}
                for code, title in getattr(m, "FINDINGS", {}).items()
            ],
        }
        for m in ALL
    ]
    if resolve_format(fmt, as_json) == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    width = max(len(r["id"]) for r in rows)
    for r in rows:
        click.echo(f"{r['id']:<{width}}  {r['title']}")
