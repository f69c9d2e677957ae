"""torchdoctor: a doctor for PyTorch environments."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `torchdoctor.audit` imports torch: load it on first use so `import torchdoctor` stays
    # torch-free and fast.
    if name == "audit":
        from .model_audit import audit

        return audit
    raise AttributeError(f"module 'torchdoctor' has no attribute {name!r}")
