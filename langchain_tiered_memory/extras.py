"""The package's optional extras, and how to install one (a leaf: any layer may use it).

The package is not on a package index: it is installed from a checkout of its
repository (``pip install -e .``) or from a wheel built there
(``pip wheel --no-deps -w dist .``). An extra is installed the same way, with
its name in brackets. Two extras need the benches' own distribution,
``tiered-memory-bench`` in ``benchmarks/``, installed beside the package.

Example:
    >>> checkout, wheel = install_hint("postgres").split(" (or the wheel: ")
    >>> checkout
    "pip install -e '.[postgres]' in a checkout"
    >>> wheel.removesuffix(")").replace(__version__, "X")
    "pip install 'dist/langchain_tiered_memory-X-py3-none-any.whl[postgres]'"
"""

from __future__ import annotations

from langchain_tiered_memory.version import __version__

__all__ = ["EXTRAS", "install_hint"]

#: The extras ``pyproject.toml`` defines (a test keeps the two in step).
EXTRAS = ("bench", "classic", "dev", "local", "mcp", "postgres", "wordllama")

#: Extras that need ``tiered-memory-bench`` (the ``benchmarks/`` folder), on no index either.
_WITH_BENCHES = frozenset({"bench", "dev"})

#: The wheel ``pip wheel --no-deps -w dist .`` builds in a checkout.
WHEEL = f"dist/langchain_tiered_memory-{__version__}-py3-none-any.whl"
#: The benches' wheel, ``pip wheel --no-deps -w benchmarks/dist ./benchmarks`` (a shell glob).
_BENCH_WHEEL = "benchmarks/dist/tiered_memory_bench-*.whl"


def install_hint(extra: str) -> str:
    """How to install ``extra``: from a checkout, or the wheel built in one.

    Raises:
        ValueError: for a name that is not one of :data:`EXTRAS`.
    """
    if extra not in EXTRAS:
        raise ValueError(f"no extra {extra!r}; the extras are {', '.join(EXTRAS)}")
    checkout = f"pip install -e '.[{extra}]'"
    wheel = f"pip install '{WHEEL}[{extra}]'"
    if extra in _WITH_BENCHES:
        checkout += " -e ./benchmarks"
        wheel += f" {_BENCH_WHEEL}"
    return f"{checkout} in a checkout (or the wheel: {wheel})"
