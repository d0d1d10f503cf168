"""klineage: learn when a kernel optimization is sound, under one validation gate."""

__version__ = "0.1.0"
__all__ = ["__version__"]
