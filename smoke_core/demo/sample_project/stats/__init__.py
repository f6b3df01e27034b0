from .core import mean, median, mode

__all__ = ["mean", "median", "mode"]
