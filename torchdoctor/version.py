"""The version every report, facts file and ``--version`` names."""

__version__ = "0.1.0"
