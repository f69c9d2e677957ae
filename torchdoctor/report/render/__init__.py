"""Renderers: a table of functions from a report document (a dict) to text. They decide nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import envelope, json_, junit, markdown, text

Renderer = Callable[[dict[str, Any], bool, bool], str]

RENDERERS: dict[str, Renderer] = {
    "text": text.render,
    "json": json_.render,
    "markdown": markdown.render,
    "junit": junit.render,
    "sarif": envelope.render_sarif,  # the findings, for code-scanning dashboards
}
