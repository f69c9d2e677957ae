from __future__ import annotations

import json
from typing import Any


def render(doc: dict[str, Any], verbose: bool = False, color: bool = False) -> str:
    """The same shape at every verbosity: ``verbose`` is deliberately ignored."""
    return json.dumps(doc, indent=2, default=str) + "\n"
