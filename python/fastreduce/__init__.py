"""fastreduce: parallel reductions of CUDA arrays (PyTorch, CuPy, JAX, Numba) on fastreduce's engine.

    import fastreduce as fr
    fr.sum(x)                                   # 0-d result, same framework as x
    fr.sum(x, dim=1, keepdim=True)              # any int or tuple of dims, negative ones too
    fr.sum(x, dim=(0, 2), mode="reproducible")  # batch-invariant, GPU-independent bits
    fr.amax(x, dim=-1, out=y)                   # into an existing array
    fr.max(x, dim=1)                            # (values, indices), as torch.max
    fr.argmax(x), fr.mean(x, dim=0), fr.var(x, dim=1, correction=0), fr.std(x)
    fr.norm(x, p=float("inf"), dim=-1), fr.dot(a, b)
CUDA graphs: capture works with no warm-up; captured calls take their temporary storage from the
framework (torch: the graph's private pool), never from the cache of eager calls.
"""
from ._api import (amax, amin, argmax, argmin, dot, is_available, max, mean, min, norm, prod, std, sum, var,
                   vdot)

__all__ = ["sum", "prod", "amin", "amax", "min", "max", "argmax", "argmin", "mean", "var", "std", "norm", "dot",
           "vdot", "is_available"]
__version__ = "0.2.0"

from . import _api as _api_module  # noqa: E402

_api_module._torch_module()  # torch, if it is imported already (torch.compile then traces no lookup)
