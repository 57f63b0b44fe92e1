"""devlint: find and fix PyTorch device bugs."""

__version__ = "0.2.0"
