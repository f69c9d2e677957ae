"""The shared core of every command's output: the result model (result.py), the findings
envelope (findings.py), documentation URLs (docs.py), redaction (redact.py) and the renderers
(render/). It imports nothing above it: data tables at most."""
