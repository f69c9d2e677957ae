"""Where each id's documentation page lives: one page per check and per scan rule under docs/.

One base URL for every link torchdoctor prints (a finding's ``doc``, SARIF's ``helpUri``,
``list-checks``), so moving the docs means changing one line. The pages themselves are in the
repository's ``docs/`` folder; tests/test_docs.py fails when an id has no page.
"""

from __future__ import annotations

DOCS_BASE = "https://github.com/torchdoctor/torchdoctor/blob/main/docs"


def check_page(check_id: str) -> str:
    """The docs/ path of a check's page (e.g. ``checks/cuda.driver.md``)."""
    return f"checks/{check_id}.md"


def scan_rule_page(rule_id: str) -> str:
    return f"scan/{rule_id}.md"


def url(page: str) -> str:
    return f"{DOCS_BASE}/{page}"


def check_url(check_id: str, code: str = "") -> str:
    """A check's page; a finding of one of its problems links to its section (an explicit
    ``<a id="<check id>.<code>">`` on the page, so the anchor does not depend on the renderer)."""
    return url(check_page(check_id)) + (f"#{check_id}.{code}" if code else "")


def scan_rule_url(rule_id: str) -> str:
    return url(scan_rule_page(rule_id))


# Ids of findings that are not checks or scan rules: the model audit's and the export audit's.
AUDIT_IDS = (
    "mixed-devices",
    "tensor-attribute",
    "forward-mixed-devices",
    "forward-failed",
    "scripted-not-traced",
)


def finding_page(finding_id: str) -> str:
    """The page of any finding id: a scan rule, an export or audit finding, or a check."""
    if finding_id[:2].upper() == "TD" and finding_id[2:].isdigit():
        return scan_rule_page(finding_id.upper())
    if finding_id.startswith("export."):
        return f"export/{finding_id}.md"
    if finding_id in AUDIT_IDS:
        return f"audit/{finding_id}.md"
    if finding_id.startswith("inspect."):
        return f"inspect/{finding_id}.md"
    if finding_id.startswith("fleet."):
        return f"fleet/{finding_id}.md"
    if finding_id.startswith("fix."):
        return f"fix/{finding_id}.md"
    return check_page(finding_id)


def finding_url(finding_id: str) -> str:
    return url(finding_page(finding_id))
