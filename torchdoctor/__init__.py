"""torchdoctor: a doctor for PyTorch environments."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `torchdoctor.audit` and `audit_export` import torch: load them on first use so
    # `import torchdoctor` stays torch-free and fast.
    if name == "audit":
        from .model_audit import audit

        return audit
    if name == "audit_export":
        from .export_audit import audit_export

        return audit_export
    raise AttributeError(f"module 'torchdoctor' has no attribute {name!r}")
