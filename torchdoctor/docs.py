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


def check_url(check_id: str) -> str:
    return url(check_page(check_id))


def scan_rule_url(rule_id: str) -> str:
    return url(scan_rule_page(rule_id))
