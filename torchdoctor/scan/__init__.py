"""`torchdoctor scan`: find device pitfalls in Python source without importing it."""

from .engine import ScanOptions, scan_paths
from .model import FileError, Finding, ScanResult
from .rules import RULES

__all__ = ["RULES", "FileError", "Finding", "ScanOptions", "ScanResult", "scan_paths"]
