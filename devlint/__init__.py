"""devlint: find and fix PyTorch device bugs."""

__version__ = "0.1.0"
