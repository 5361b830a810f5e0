"""The Python API: PyTorch-style reductions of CUDA arrays on fastreduce's engine.

Inputs are read in place (torch tensors through their data pointer; CuPy, Numba and other
``__cuda_array_interface__`` arrays through it; JAX arrays through their buffer); the reduced
dims are folded into the engine's (outer, length, inner) with strides, and copied only when
they cannot be (reduced dims interleaved with kept ones in a way no three strides describe).
Results come back in the input's framework, on the framework's current stream.
"""
import sys

from . import _core

__all__ = ["sum", "prod", "amin", "amax", "min", "max", "is_available"]

# Type codes shared with python/src/core.cpp.
_BOOL, _I8, _U8, _I16, _U16, _I32, _U32, _I64, _U64, _F16, _BF16, _F32, _F64 = range(13)
_OPS = {"sum": 0, "prod": 1, "amin": 2, "amax": 3}
_MODES = ("fast", "reproducible")
# numpy-style type names (CuPy, __cuda_array_interface__ typestr, JAX) -> code
_NAME_CODES = {"bool": _BOOL, "int8": _I8, "uint8": _U8, "int16": _I16, "uint16": _U16, "int32": _I32,
               "uint32": _U32, "int64": _I64, "uint64": _U64, "float16": _F16, "bfloat16": _BF16,
               "float32": _F32, "float64": _F64}
_TYPESTR = {"|b1": "bool", "|i1": "int8", "|u1": "uint8", "<i2": "int16", "<u2": "uint16", "<i4": "int32",
            "<u4": "uint32", "<i8": "int64", "<u8": "uint64", "<f2": "float16", "<f4": "float32", "<f8": "float64"}
_ITEMSIZE = {_BOOL: 1, _I8: 1, _U8: 1, _I16: 2, _U16: 2, _I32: 4, _U32: 4, _I64: 8, _U64: 8, _F16: 2, _BF16: 2,
             _F32: 4, _F64: 8}
_INTEGER = {_BOOL, _I8, _U8, _I16, _U16, _I32, _U32, _I64, _U64}
_NARROW = {_F16, _BF16}


def is_available() -> bool:
    """Whether a CUDA device is visible to the engine."""
    return _core.device_count() > 0


def _dims(dim, ndim, name):
    """The reduced dims as a sorted tuple (all of them for None), like torch's checks."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:  # torch reads dim=() as every dim
        return tuple(range(ndim))
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"fastreduce.{name}: dim must be an int or a tuple of ints, got {d!r}")
        lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
        if not lo <= d <= hi:
            raise IndexError(f"fastreduce.{name}: dimension out of range (expected to be in range of [{lo}, {hi}], "
                             f"but got {d})")
        d = d + ndim if d < 0 else d
        if d in out and ndim > 0:
            raise RuntimeError(f"fastreduce.{name}: dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(sorted(set(out) & set(range(ndim)))) if ndim > 0 else ()


def _fold(shape, strides, reduced):
    """(outer, length, inner, outer_stride, length_stride, inner_stride) in elements, or None when
    no three strides describe the reduction (the caller then makes the reduced dims contiguous)."""
    entries = []  # [size, stride, is_reduced], size-1 dims dropped, mergeable neighbours merged
    for d, (n, s) in enumerate(zip(shape, strides)):
        if n == 1:
            continue
        r = d in reduced
        if entries and entries[-1][2] == r and entries[-1][1] == s * n:
            entries[-1][0] *= n
            entries[-1][1] = s
        else:
            entries.append([n, s, r])
    kinds = "".join("R" if e[2] else "K" for e in entries)
    if kinds not in ("", "K", "R", "KR", "RK", "KRK", "KK"):
        return None
    outer = inner = length = (1, 0)
    if kinds == "KK":
        outer, inner = tuple(entries[0][:2]), tuple(entries[1][:2])
    else:
        r_at = kinds.find("R")
        for i, (e, k) in enumerate(zip(entries, kinds)):
            if k == "R":
                length = tuple(e[:2])
            elif r_at < 0 or i < r_at:
                outer = tuple(e[:2])
            else:
                inner = tuple(e[:2])
    return outer[0], length[0], inner[0], outer[1], length[1], inner[1]


_raw_stream = None


def _torch_stream(torch, device):
    """The raw cudaStream_t of torch's current stream on `device` (torch's private call, the
    cheapest; the public one where it is missing)."""
    global _raw_stream
    if _raw_stream is None:
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _raw_stream(device)


_torch_codes = None


def _torch_tables(torch):
    global _torch_codes
    if _torch_codes is None:
        _torch_codes = {torch.bool: _BOOL, torch.int8: _I8, torch.uint8: _U8, torch.int16: _I16, torch.int32: _I32,
                        torch.int64: _I64, torch.float16: _F16, torch.bfloat16: _BF16, torch.float32: _F32,
                        torch.float64: _F64}
        for name, code in (("uint16", _U16), ("uint32", _U32), ("uint64", _U64)):
            if hasattr(torch, name):
                _torch_codes[getattr(torch, name)] = code
    return _torch_codes


def _result_code(op, code):
    """The type torch returns for op over code (sums and products of integers and bool: int64,
    uint64 of uint64)."""
    if op in ("sum", "prod") and code in _INTEGER and code != _U64:
        return _I64
    return code


def _engine_acc(op, code):
    """The type the engine writes for op over code (fastreduce::acc_t)."""
    if code in _NARROW:
        return _F32
    if op in ("sum", "prod") and code in (_BOOL, _I8, _U8, _I16, _U16):
        return _I64
    return code


class _View:
    """What the engine needs of an input: pointer, type code, shape, strides (elements), device."""
    __slots__ = ("ptr", "code", "shape", "strides", "device")

    def __init__(self, ptr, code, shape, strides, device):
        self.ptr, self.code, self.shape, self.strides, self.device = ptr, code, shape, strides, device


def _reduce_view(name, op, v, dims, keepdim, reproducible, stream, alloc, copy_contiguous, record=None):
    """Reduces view v over dims into a new array from alloc(shape, code); returns it. `record`, a
    list, receives (folded axes, output shape, engine type) when the input was read in place."""
    ndim = len(v.shape)
    kept = [d for d in range(ndim) if d not in dims]
    out_shape = tuple(1 if d in dims else v.shape[d] for d in range(ndim)) if keepdim else tuple(v.shape[d] for d in kept)
    length = 1
    for d in dims:
        length *= v.shape[d]
    outputs = 1
    for d in kept:
        outputs *= v.shape[d]
    if length == 0 and op in ("amin", "amax") and outputs > 0:
        raise RuntimeError(f"fastreduce.{name}: the reduced dims of the input are empty (no identity for {name})")
    acc = _engine_acc(op, v.code)
    result = alloc(out_shape, acc)
    if outputs == 0:
        return result[0]
    folded = _fold(v.shape, v.strides, set(dims))
    if folded is None:
        v = copy_contiguous(kept + list(dims))
        folded = (outputs, length, 1, length, 1, 1)
    elif record is not None:
        record.append((folded, out_shape, acc))
    outer, length_, inner, so, sl, si = folded
    _core.reduce(v.code, _OPS[op], reproducible, v.ptr, outer, length_, inner, so, sl, si,
                 result[1], stream, v.device)
    return result[0]


def _check_mode(name, mode, op=None, code=None):
    if mode not in _MODES:
        raise ValueError(f"fastreduce.{name}: mode must be 'fast' or 'reproducible', got {mode!r}")
    if mode == "reproducible" and op == "prod" and code not in _INTEGER:
        raise RuntimeError(f"fastreduce.{name}: Reproducible mode has no floating-point prod (it makes sums "
                           "reproducible; integer ops, amin and amax are exact in every mode)")
    return mode == "reproducible"


# Plans of torch calls read in place, by (op, dtype, shape, strides, dim, keepdim, mode): a repeated
# call skips the checks, the folding and the type rules (everything they decide is in the key).
_plans = {}
_PLAN_LIMIT = 4096


def _reduce_torch(torch, name, op, x, dim, keepdim, dtype, out, mode):
    if dtype is None and out is None and x.is_cuda and type(dim) is not bool:
        key = (op, x.dtype, x.shape, x.stride(), tuple(dim) if isinstance(dim, list) else dim, keepdim, mode)
        plan = _plans.get(key)
        if plan is not None:
            code, op_code, reproducible, folded, out_shape, acc, want = plan
            device = x.get_device()
            result = x.new_empty(out_shape, dtype=acc)
            _core.reduce(code, op_code, reproducible, x.data_ptr(), *folded, result.data_ptr(),
                         _torch_stream(torch, device), device)
            return result if want is None else result.to(want)
    else:
        key = None
    if not x.is_cuda:
        raise TypeError(f"fastreduce.{name}: expected a CUDA tensor, got one on {x.device}")
    codes = _torch_tables(torch)
    code = codes.get(x.dtype)
    if code is None:
        raise TypeError(f"fastreduce.{name}: unsupported dtype {x.dtype}")
    reproducible = _check_mode(name, mode, op, code if dtype is None else codes.get(dtype, code))
    want = None  # the dtype of the result
    if dtype is not None:
        if dtype not in codes:
            raise TypeError(f"fastreduce.{name}: unsupported dtype {dtype}")
        if not (code in _NARROW and dtype == torch.float32) and dtype != x.dtype:
            x = x.to(dtype)
            code = codes[dtype]
        want = dtype
    if op in ("sum", "prod") and code in (_I32, _U32):
        x = x.to(torch.int64)  # torch sums these into int64 without wrapping
        code = _I64
    by_code = {c: t for t, c in codes.items()}
    if want is None:
        want = by_code[_result_code(op, code)] if code not in _NARROW or op not in ("sum", "prod") else x.dtype
    dims = _dims(dim, x.dim(), name)
    device = x.device.index if x.device.index is not None else torch.cuda.current_device()
    stream = _torch_stream(torch, device)

    def alloc(shape, acc):
        t = torch.empty(shape, dtype=by_code[acc], device=x.device)
        return t, t.data_ptr()

    def copy_contiguous(order):
        c = x.permute(order).contiguous()
        keep.append(c)  # alive until the kernels are enqueued (the caching allocator orders reuse on the stream)
        return _View(c.data_ptr(), code, tuple(c.shape), tuple(c.stride()), device)

    keep = []
    record = []
    v = _View(x.data_ptr(), code, tuple(x.shape), tuple(x.stride()), device)
    result = _reduce_view(name, op, v, dims, keepdim, reproducible, stream, alloc, copy_contiguous, record)
    if key is not None and record and key[1] == x.dtype:  # read in place, with no conversion first
        if len(_plans) >= _PLAN_LIMIT:
            _plans.clear()
        folded, out_shape, acc = record[0]
        _plans[key] = (code, _OPS[op], reproducible, folded, out_shape, by_code[acc],
                       None if by_code[acc] == want else want)
    if result.dtype != want:
        result = result.to(want)
    if out is not None:
        if not isinstance(out, torch.Tensor) or out.device != x.device:
            raise RuntimeError(f"fastreduce.{name}: out must be a tensor on {x.device}")
        if tuple(out.shape) != tuple(result.shape):
            raise RuntimeError(f"fastreduce.{name}: out has shape {tuple(out.shape)}, the result {tuple(result.shape)}")
        out.copy_(result)
        return out
    return result


def _cai_view(name, x):
    cai = x.__cuda_array_interface__
    type_name = _TYPESTR.get(cai["typestr"])
    if type_name is None:
        raise TypeError(f"fastreduce.{name}: unsupported dtype {cai['typestr']}")
    code = _NAME_CODES[type_name]
    shape = tuple(cai["shape"])
    item = _ITEMSIZE[code]
    if cai.get("strides") is None:
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= n
        strides = tuple(reversed(strides))
    else:
        if any(s % item for s in cai["strides"]):
            raise TypeError(f"fastreduce.{name}: strides that are not whole elements")
        strides = tuple(s // item for s in cai["strides"])
    return code, shape, strides, cai["data"][0]


def _reduce_cupy(cupy, name, op, x, dim, keepdim, dtype, out, mode):
    reproducible = _check_mode(name, mode, op, _NAME_CODES.get(str(cupy.dtype(dtype if dtype is not None else x.dtype))))
    if dtype is not None and cupy.dtype(dtype) != x.dtype:
        narrow = x.dtype == cupy.float16 and cupy.dtype(dtype) == cupy.float32
        if not narrow:
            x = x.astype(dtype)
    code, shape, strides, ptr = _cai_view(name, x)
    if op in ("sum", "prod") and code in (_I32, _U32):  # NumPy sums these into 64 bits, no wrap
        x = x.astype(cupy.int64 if code == _I32 else cupy.uint64)
        code, shape, strides, ptr = _cai_view(name, x)
    dims = _dims(dim, len(shape), name)
    device = x.device.id
    with cupy.cuda.Device(device):
        stream = cupy.cuda.get_current_stream().ptr
        keep = []

        def alloc(shape_, acc):
            a = cupy.empty(shape_, dtype=_dtype_name(acc))
            return a, a.data.ptr

        def copy_contiguous(order):
            c = cupy.ascontiguousarray(x.transpose(order))
            keep.append(c)
            c_code, c_shape, c_strides, c_ptr = _cai_view(name, c)
            return _View(c_ptr, c_code, c_shape, c_strides, device)

        result = _reduce_view(name, op, _View(ptr, code, shape, strides, device), dims, keepdim, reproducible, stream,
                              alloc, copy_contiguous)
        unsigned = code in (_U8, _U16, _U32, _U64)
        want = cupy.dtype(dtype) if dtype is not None else (
            x.dtype if code in _NARROW or op in ("amin", "amax")
            else cupy.dtype("uint64" if unsigned else _dtype_name(_result_code(op, code))))
        if result.dtype != want:
            result = result.astype(want)
        if out is not None:
            if tuple(out.shape) != tuple(result.shape):
                raise RuntimeError(f"fastreduce.{name}: out has shape {tuple(out.shape)}, the result {tuple(result.shape)}")
            out[...] = result
            return out
        return result


def _dtype_name(code):
    for k, v in _NAME_CODES.items():
        if v == code:
            return k
    raise TypeError(code)


def _reduce(name, op, x, dim, keepdim, dtype, out, mode):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if _torch_op is None:
            _register_torch_op(torch)
        if _in_graph(torch):
            r = torch.ops.fastreduce.reduce(x, list(_dims(dim, x.dim(), name)), keepdim, op, mode, dtype)
            if out is None:
                return r
            out.copy_(r)
            return out
        return _reduce_torch(torch, name, op, x, dim, keepdim, dtype, out, mode)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return _reduce_cupy(cupy, name, op, x, dim, keepdim, dtype, out, mode)
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(x, jax.Array):
        return _reduce_jax(jax, name, op, x, dim, keepdim, dtype, out, mode)
    if hasattr(x, "__cuda_array_interface__"):
        import cupy as cp  # other CUDA arrays (Numba, ...): viewed and answered through CuPy
        return _reduce_cupy(cp, name, op, cp.asarray(x), dim, keepdim, dtype, out, mode)
    if hasattr(x, "__dlpack__"):
        raise TypeError(f"fastreduce.{name}: expected a CUDA array (torch, CuPy, JAX, Numba), got {type(x).__name__} "
                        "(a CPU array?)")
    raise TypeError(f"fastreduce.{name}: expected a CUDA array (torch, CuPy, JAX, Numba), got {type(x).__name__}")


def _reduce_jax(jax, name, op, x, dim, keepdim, dtype, out, mode):
    """JAX arrays: the reduction runs through torch (or CuPy) on the array's buffer, after the
    array is ready, and the result comes back as a JAX array through DLPack."""
    devices = list(x.devices())
    if len(devices) != 1 or devices[0].platform != "gpu":
        raise TypeError(f"fastreduce.{name}: expected a JAX array on one GPU, got one on {devices}")
    if out is not None:
        raise TypeError(f"fastreduce.{name}: JAX arrays are immutable: out= is not supported")
    x.block_until_ready()  # JAX's own stream has written it
    import jax.dlpack
    try:
        import torch
        t = torch.from_dlpack(x)
        r = _reduce_torch(torch, name, op, t, dim, keepdim, dtype, None, mode)
        torch.cuda.current_stream(t.device).synchronize()  # x may be freed by JAX once this returns
    except ImportError:
        import cupy
        r = _reduce_cupy(cupy, name, op, cupy.from_dlpack(x), dim, keepdim, dtype, None, mode)
        cupy.cuda.get_current_stream().synchronize()
    return jax.dlpack.from_dlpack(r)


_torch_op = None


def _register_torch_op(torch):
    """fastreduce::reduce as a torch.library custom op (with a fake for shapes), which
    torch.compile graphs call; eager calls skip the dispatcher."""
    global _torch_op
    if _torch_op is not None or not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        _torch_op = False
        return
    from typing import List, Optional

    @torch.library.custom_op("fastreduce::reduce", mutates_args=())
    def reduce_op(x: torch.Tensor, dim: List[int], keepdim: bool, op: str, mode: str,
                  dtype: Optional[torch.dtype]) -> torch.Tensor:
        return _reduce_torch(torch, op, op, x, tuple(dim), keepdim, dtype, None, mode)

    @reduce_op.register_fake
    def _(x, dim, keepdim, op, mode, dtype):
        dims = set(_dims(tuple(dim), x.dim(), op))
        shape = [1 if d in dims else n for d, n in enumerate(x.shape) if keepdim or d not in dims]
        codes = _torch_tables(torch)
        code = codes[dtype if dtype is not None else x.dtype]
        by_code = {c: t for t, c in codes.items()}
        want = dtype if dtype is not None else (x.dtype if code in _NARROW or op in ("amin", "amax")
                                                else by_code[_result_code(op, code)])
        return x.new_empty(shape, dtype=want)

    _torch_op = reduce_op


def _in_graph(torch):
    if "torch._dynamo" not in sys.modules:  # nothing is being compiled before dynamo is loaded
        return False
    try:
        return torch.compiler.is_compiling()
    except AttributeError:
        return False


def sum(x, dim=None, keepdim=False, *, dtype=None, out=None, mode="fast"):
    """Sum of the elements of x over dim (all dims by default), like torch.sum.

    x: a CUDA array (torch.Tensor, CuPy, JAX, Numba or any __cuda_array_interface__ array), any
    strides. dim: an int or a tuple of ints, negative ones counted from the end. Integer and bool
    inputs sum into int64; float16 and bfloat16 accumulate in float32 and return their own type
    unless dtype asks for another. mode="reproducible": floating-point sums are compensated and
    their bits are the same on every GPU and for every batch (each output equals the sum of its
    own elements alone). The work is enqueued on the framework's current stream; nothing waits.
    """
    return _reduce("sum", "sum", x, dim, keepdim, dtype, out, mode)


def prod(x, dim=None, keepdim=False, *, dtype=None, out=None, mode="fast"):
    """Product of the elements of x over dim, like torch.prod (integers multiply into int64)."""
    return _reduce("prod", "prod", x, dim, keepdim, dtype, out, mode)


def amin(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Minimum over dim, like torch.amin: NaN propagates; the result has x's dtype."""
    return _reduce("amin", "amin", x, dim, keepdim, None, out, mode)


def amax(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Maximum over dim, like torch.amax: NaN propagates; the result has x's dtype."""
    return _reduce("amax", "amax", x, dim, keepdim, None, out, mode)


def min(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Minimum of all elements, like torch.min(x). With dim, torch returns (values, indices): that
    needs the arg-extreme reductions, which fastreduce does not have yet (NotImplementedError)."""
    if dim is not None:
        raise NotImplementedError("fastreduce.min with dim returns (values, indices), which needs arg-extreme "
                                  "reductions (not built yet): use fastreduce.amin for the values")
    return _reduce("min", "amin", x, None, False, None, out, mode)


def max(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Maximum of all elements, like torch.max(x); with dim see fastreduce.min."""
    if dim is not None:
        raise NotImplementedError("fastreduce.max with dim returns (values, indices), which needs arg-extreme "
                                  "reductions (not built yet): use fastreduce.amax for the values")
    return _reduce("max", "amax", x, None, False, None, out, mode)
