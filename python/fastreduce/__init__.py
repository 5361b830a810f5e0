"""fastreduce: parallel reductions of CUDA arrays (PyTorch, CuPy, JAX, Numba) on fastreduce's engine.

    import fastreduce as fr
    fr.sum(x)                                   # 0-d result, same framework as x
    fr.sum(x, dim=1, keepdim=True)              # any int or tuple of dims, negative ones too
    fr.sum(x, dim=(0, 2), mode="reproducible")  # batch-invariant, GPU-independent bits
    fr.amax(x, dim=-1, out=y)                   # into an existing array
"""
from ._api import amax, amin, is_available, max, min, prod, sum

__all__ = ["sum", "prod", "amin", "amax", "min", "max", "is_available"]
__version__ = "0.2.0"
