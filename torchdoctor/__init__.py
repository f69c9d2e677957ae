"""torchdoctor: a doctor for PyTorch environments."""

__version__ = "0.1.0"
