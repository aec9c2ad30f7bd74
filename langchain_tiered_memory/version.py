"""The package's version (a leaf: any layer may read it without importing the facades).

Example:
    >>> __version__.count(".") >= 2
    True
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
