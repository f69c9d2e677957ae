"""torchdoctor: a doctor for PyTorch environments."""

from .version import __version__

__all__ = ["__version__", "audit", "audit_export"]


def __getattr__(name: str):
    # `torchdoctor.audit` and `audit_export` import torch: load them on first use so
    # `import torchdoctor` stays torch-free and fast.
    if name == "audit":
        from .export.model_audit import audit

        return audit
    if name == "audit_export":
        from .export.audit import audit_export

        return audit_export
    raise AttributeError(f"module 'torchdoctor' has no attribute {name!r}")
