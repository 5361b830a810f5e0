"""The Python API: PyTorch-style reductions of CUDA arrays on fastreduce's engine.

Inputs are read in place (torch tensors through their data pointer; CuPy, Numba and other
``__cuda_array_interface__`` arrays through it; JAX arrays through their buffer); the reduced
dims are folded into the engine's (outer, length, inner) with strides, and copied only when
they cannot be (reduced dims interleaved with kept ones in a way no three strides describe).
Results come back in the input's framework, on the framework's current stream.
"""
import collections
import math
import sys

from . import _core

__all__ = ["sum", "prod", "amin", "amax", "min", "max", "argmax", "argmin", "mean", "var", "std", "norm", "dot",
           "vdot", "is_available"]

# Type codes shared with python/src/core.cpp.
_BOOL, _I8, _U8, _I16, _U16, _I32, _U32, _I64, _U64, _F16, _BF16, _F32, _F64 = range(13)
_OPS = {"sum": 0, "prod": 1, "amin": 2, "amax": 3}
_MODES = {"fast": 0, "reproducible": 1, "exact": 2}  # the engine's Mode, as _core takes it
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


def _captured(call, args, need, temp_alloc):
    """After call(*args), a _core entry point, returned need > 0: the stream captures a CUDA graph,
    nothing was enqueued, and the call needs `need` bytes of temporary storage. They come from
    temp_alloc(n) -> (array, pointer), the framework's allocator, and the call is made again."""
    temp = temp_alloc(need)
    call(*args, temp[1], need)


def _torch_temp(torch, x):
    """temp_alloc for torch: bytes on x's device from torch's allocator (under capture: the graph's
    private pool, returned when the graph is freed)."""
    def temp(n):
        t = torch.empty(n, dtype=torch.uint8, device=x.device)
        return t, t.data_ptr()
    return temp


# Temporary storage of CuPy calls captured into CUDA graphs. CuPy's pool has no pool per graph: a
# buffer freed after the capture could be handed to eager work while a replay of the graph still
# uses it, so these are kept for the life of the process (a graph may be replayed at any time).
_cupy_captured = []


def _cupy_capturing(stream):
    """Whether a CuPy stream is capturing a CUDA graph."""
    try:
        return bool(stream.is_capturing())
    except (AttributeError, RuntimeError):
        return False


def _cupy_temp(cupy):
    """temp_alloc for CuPy: bytes from CuPy's pool, never returned (see _cupy_captured)."""
    def temp(n):
        a = cupy.empty(n, dtype=cupy.uint8)
        _cupy_captured.append(a)
        return a, a.data.ptr
    return temp


_torch_codes = None  # torch dtype -> type code, and back


def _torch_tables(torch):
    """(codes, by_code): torch's dtypes to the type codes and back, built once."""
    global _torch_codes
    if _torch_codes is None:
        codes = {torch.bool: _BOOL, torch.int8: _I8, torch.uint8: _U8, torch.int16: _I16, torch.int32: _I32,
                 torch.int64: _I64, torch.float16: _F16, torch.bfloat16: _BF16, torch.float32: _F32,
                 torch.float64: _F64}
        for name, code in (("uint16", _U16), ("uint32", _U32), ("uint64", _U64)):
            if hasattr(torch, name):
                codes[getattr(torch, name)] = code
        _torch_codes = codes, {c: t for t, c in codes.items()}
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


def _split(shape, dims, keepdim):
    """The kept dims, the result's shape, the reduced length and the number of outputs."""
    ndim = len(shape)
    kept = [d for d in range(ndim) if d not in dims]
    out_shape = tuple(1 if d in dims else shape[d] for d in range(ndim)) if keepdim else tuple(shape[d] for d in kept)
    length = 1
    for d in dims:
        length *= shape[d]
    outputs = 1
    for d in kept:
        outputs *= shape[d]
    return kept, out_shape, length, outputs


_RESULT_ACC, _RESULT_NARROW, _RESULT_WIDE = 0, 1, 2  # _core.reduce's result kinds


def _result_kind(op, code, want_code):
    """What the engine writes (_core.reduce's result kind) for op over code when the caller wants
    want_code: float16/bfloat16 in their own type (rounded once by the engine), int32/uint32 sums
    and products in 64 bits (accumulated in them), else the engine's accumulator type."""
    if code in _NARROW and want_code == code:
        return _RESULT_NARROW
    if op in ("sum", "prod") and code in (_I32, _U32) and want_code in (_I64, _U64):
        return _RESULT_WIDE
    return _RESULT_ACC


def _reduce_view(name, op, v, dims, keepdim, mode_code, stream, alloc, copy_contiguous, record, temp_alloc,
                 result_kind=_RESULT_ACC, out_code=None):
    """Reduces view v over dims into a new array from alloc(shape, code); returns it. `record`, a
    list (or None), receives (folded axes, output shape, engine type) when the input was read in
    place. temp_alloc as _captured's. result_kind: as _result_kind; out_code: the type allocated for
    _RESULT_WIDE (int64 or uint64: the engine writes the same bits). The engine type recorded is the
    type the engine writes."""
    kept, out_shape, length, outputs = _split(v.shape, dims, keepdim)
    if length == 0 and op in ("amin", "amax") and outputs > 0:
        raise RuntimeError(f"fastreduce.{name}: the reduced dims of the input are empty (no identity for {name})")
    acc = (v.code if result_kind == _RESULT_NARROW else out_code if result_kind == _RESULT_WIDE
           else _engine_acc(op, v.code))
    result = alloc(out_shape, acc)
    if outputs == 0:
        return result[0]
    folded = _fold(v.shape, v.strides, set(dims))
    if folded is None:
        v = copy_contiguous(kept + list(dims))
        folded = (outputs, length, 1, length, 1, 1)
    elif record is not None:
        record.append((folded, out_shape, acc))
    args = (v.code, _OPS[op], mode_code, v.ptr, *folded, result[1], result_kind, stream, v.device)
    need = _core.reduce(*args)
    if need:
        _captured(_core.reduce, args, need, temp_alloc)
    return result[0]


def _mode_code(name, mode):
    if not isinstance(mode, str) or mode not in _MODES:
        raise ValueError(f"fastreduce.{name}: mode must be 'fast', 'reproducible' or 'exact', got {mode!r}")
    return _MODES[mode]


# The result types that hold every value of an input type exactly: its own, or a wider float.
_EXACT_INTO = {_F16: (_F16, _F32, _F64), _BF16: (_BF16, _F32, _F64), _F32: (_F32, _F64), _F64: (_F64,)}


def _check_mode(name, mode, op=None, code=None, want=None):
    """The mode's code for _core; RuntimeError where the mode has no form of the call. code: the
    input's type code as given (before any dtype= conversion); want: the result's (mode="exact"
    rounds the exact sum of the input's values once, into float32 or float64, or into a
    float16/bfloat16 input's own type: a dtype= that converts the elements first, or a result
    narrower than the input, would round twice)."""
    m = _mode_code(name, mode)
    if m != 0 and op == "prod" and (code not in _INTEGER or (want is not None and want not in _INTEGER)):
        raise RuntimeError(f"fastreduce.{name}: {mode} mode has no floating-point prod (it makes sums "
                           f"{mode}; integer ops, amin and amax are exact in every mode)")
    if m == 2 and op == "sum" and code in _FLOATS and want not in _EXACT_INTO.get(code, ()):
        raise RuntimeError(f"fastreduce.{name}: mode='exact' rounds the exact sum of the input's values once, into "
                           f"the input's type or a wider float, not {_dtype_name(want) if want is not None else want} "
                           f"for {_dtype_name(code)} input (a second rounding would not be exact)")
    if m == 2 and op == "sum" and code in _INTEGER and want in _FLOATS and code not in _INTS_EXACT_IN[want]:
        raise RuntimeError(f"fastreduce.{name}: mode='exact' would round each {_dtype_name(code)} element into "
                           f"{_dtype_name(want)} before the exact sum's own rounding (sum into int64, or a float "
                           "that holds every value of the input)")
    return m


# The integer types whose every value a float type holds.
_INTS_EXACT_IN = {_F16: (_BOOL, _I8, _U8), _BF16: (_BOOL, _I8, _U8), _F32: (_BOOL, _I8, _U8, _I16, _U16),
                  _F64: (_BOOL, _I8, _U8, _I16, _U16, _I32, _U32)}


# Plans of torch calls read in place, by (op, dtype, shape, strides, dim, keepdim, mode): a repeated
# call skips the checks, the folding and the type rules (everything they decide is in the key).
_plans = {}
_PLAN_LIMIT = 4096


def _plan_put(cache, key, plan):
    """Keeps a plan (a cache past _PLAN_LIMIT entries starts again)."""
    if len(cache) >= _PLAN_LIMIT:
        cache.clear()
    cache[key] = plan


def _keep_plan(cache, key, entry, cplan, op_code, param, values, x, dim, keepdim, mode):
    """Keeps a plan: entry + (cplan,) in cache (_plans, _fplans), and the capsule cplan in
    _torch_core under the call's own arguments (where there is one)."""
    _plan_put(cache, key, entry + (cplan,))
    if cplan is not None:
        _tc.remember(op_code, param, values, x, dim, keepdim, mode, cplan)


def _forget_plans():
    """Drops every plan (the next calls plan afresh): _plans, _fplans and _torch_core's."""
    _plans.clear()
    _fplans.clear()
    if _tc is not None:
        _tc.forget()


def _torch_input(torch, name, x, dtype, op=None, check=None):
    """x (converted to dtype where the engine cannot read it as it is: float16/bfloat16 are read
    as they are for float32, and for op's 64-bit results int32/uint32 as they are, which the
    engine accumulates in: _result_kind's _RESULT_WIDE), its type code, the table from codes to
    dtypes, and what check(code) returned: check, given the code the engine will read, runs after
    the type checks and before any conversion (a call the mode refuses copies nothing). Integer
    sums and products into another integer dtype are read as they are too: the engine's result,
    cast, has the same bits."""
    if not x.is_cuda:
        raise TypeError(f"fastreduce.{name}: expected a CUDA tensor, got one on {x.device}")
    codes, by_code = _torch_tables(torch)
    code = codes.get(x.dtype)
    if code is None:
        raise TypeError(f"fastreduce.{name}: unsupported dtype {x.dtype}")
    convert = False
    if dtype is not None:
        if dtype not in codes:
            raise TypeError(f"fastreduce.{name}: unsupported dtype {dtype}")
        # integer sums and products into another integer type (not bool): the engine's wider (or
        # equal) result cast afterwards has the same bits, modulo 2^bits, without a copy first
        read_as_is = ((code in _NARROW and dtype == torch.float32)
                      or _result_kind(op, code, codes[dtype]) == _RESULT_WIDE
                      or (op in ("sum", "prod") and code in _INTEGER and code != _BOOL
                          and codes[dtype] in _INTEGER and codes[dtype] != _BOOL))
        convert = not read_as_is and dtype != x.dtype
    checked = check(codes[dtype] if convert else code) if check is not None else None
    if convert:
        x = x.to(dtype)
        code = codes[dtype]
    return x, code, by_code, checked


def _torch_callbacks(torch, by_code, x, code, device):
    """alloc(shape, code) and copy_contiguous(order) of torch tensors for _reduce_view/_family_view,
    and the list that keeps the copies alive until the kernels are enqueued (the caching allocator
    orders their reuse on the stream)."""
    keep = []

    def alloc(shape, acc):
        t = torch.empty(shape, dtype=by_code[acc], device=x.device)
        return t, t.data_ptr()

    def copy_contiguous(order):
        c = x.permute(order).contiguous()
        keep.append(c)
        return _View(c.data_ptr(), code, tuple(c.shape), tuple(c.stride()), device)

    return alloc, copy_contiguous, keep


def _plain_dim(dim):
    """dim is None, an int or a tuple or list of ints, none of them a bool (or a float): only those
    may key a plan, as True and 1.0 hash as 1 and must reach the checks that refuse them."""
    if dim is None or type(dim) is int:
        return True
    return type(dim) in (tuple, list) and all(type(d) is int for d in dim)


def _reduce_torch(torch, name, op, x, dim, keepdim, dtype, out, mode):
    if dtype is None and out is None and x.is_cuda and _plain_dim(dim):
        key = (op, x.dtype, x.shape, x.stride(), tuple(dim) if isinstance(dim, list) else dim, keepdim, mode)
        try:
            plan = _plans.get(key)
        except TypeError:  # an unhashable dim or mode: the checks below say which
            key, plan = None, None
        if plan is not None:
            return _run_plan(plan, x)
    else:
        key = None
    codes = _torch_tables(torch)[0]
    in_code = codes.get(x.dtype)  # before any dtype=
    # (int32 and uint32 sums: int64, accumulated so by the engine)
    want = dtype if dtype is not None else _default_result(torch, op, x)
    want_code = codes.get(want)
    x, code, by_code, mode_code = _torch_input(torch, name, x, dtype, op,
                                               lambda _: _check_mode(name, mode, op, in_code, want_code))
    # float16/bfloat16 results in their own type and int32/uint32 sums in int64 (torch's, no wrap):
    # written so by the engine, with no conversion before or after it.
    kind = _result_kind(op, code, want_code)
    dims = _dims(dim, x.dim(), name)
    device = x.device.index if x.device.index is not None else torch.cuda.current_device()
    stream = _torch_stream(torch, device)
    alloc, copy_contiguous, keep = _torch_callbacks(torch, by_code, x, code, device)
    record = []
    v = _View(x.data_ptr(), code, tuple(x.shape), tuple(x.stride()), device)
    result = _reduce_view(name, op, v, dims, keepdim, mode_code, stream, alloc, copy_contiguous, record,
                          _torch_temp(torch, x), kind, want_code)
    if key is not None and record and key[1] == x.dtype:  # read in place, with no conversion first
        folded, out_shape, acc = record[0]
        # acc None: the result is of x's own dtype (new_empty without a dtype= is the cheaper call)
        _keep_plan(_plans, key, (code, _OPS[op], mode_code, folded, out_shape,
                                 None if by_code[acc] == x.dtype else by_code[acc],
                                 None if by_code[acc] == want else want, kind),
                   _c_plan(code, _OPS[op], 0, mode_code, folded, kind, out_shape, acc,
                           -1 if by_code[acc] == want else want_code, False),
                   _OPS[op], 0, 0, x, dim, keepdim, mode)
    if result.dtype != want:
        result = result.to(want)
    return _write_out(torch, name, result, out, mode)


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


def _cupy_callbacks(cupy, name, x, device):
    """alloc(shape, code) and copy_contiguous(order) of CuPy arrays for _reduce_view/_family_view,
    and the list that keeps the copies alive until the kernels are enqueued."""
    keep = []

    def alloc(shape_, acc):
        a = cupy.empty(shape_, dtype=_dtype_name(acc))
        return a, a.data.ptr

    def copy_contiguous(order):
        c = cupy.ascontiguousarray(x.transpose(order))
        keep.append(c)
        c_code, c_shape, c_strides, c_ptr = _cai_view(name, c)
        return _View(c_ptr, c_code, c_shape, c_strides, device)

    return alloc, copy_contiguous, keep


def _reduce_cupy(cupy, name, op, x, dim, keepdim, dtype, out, mode):
    wanted = _NAME_CODES.get(str(cupy.dtype(dtype if dtype is not None else x.dtype)))
    mode_code = _check_mode(name, mode, op, _NAME_CODES.get(str(x.dtype)), wanted)
    if dtype is not None and cupy.dtype(dtype) != x.dtype:
        narrow = x.dtype == cupy.float16 and cupy.dtype(dtype) == cupy.float32
        # int32/uint32 sums and products into 64 bits: the engine accumulates in them (no copy).
        wide = _result_kind(op, _NAME_CODES.get(str(x.dtype)), wanted) == _RESULT_WIDE
        if not narrow and not wide:
            x = x.astype(dtype)
    code, shape, strides, ptr = _cai_view(name, x)
    dims = _dims(dim, len(shape), name)
    device = x.device.id
    unsigned = code in (_U8, _U16, _U32, _U64)
    want = cupy.dtype(dtype) if dtype is not None else (
        x.dtype if code in _NARROW or op in ("amin", "amax")
        else cupy.dtype("uint64" if unsigned else _dtype_name(_result_code(op, code))))
    with cupy.cuda.Device(device):
        s = cupy.cuda.get_current_stream()
        stream = s.ptr
        alloc, copy_contiguous, keep = _cupy_callbacks(cupy, name, x, device)

        want_code = _NAME_CODES.get(str(want))
        # NumPy sums int32/uint32 into 64 bits, no wrap: the engine accumulates in them.
        result = _reduce_view(name, op, _View(ptr, code, shape, strides, device), dims, keepdim, mode_code, stream,
                              alloc, copy_contiguous, None, _cupy_temp(cupy), _result_kind(op, code, want_code),
                              want_code)
        if _cupy_capturing(s):  # every array the graph reads or writes outlives it (see _cupy_captured)
            _cupy_captured.append((x, keep, result))
        if result.dtype != want:
            result = result.astype(want)
        return _write_out(None, name, result, out, mode)


def _dtype_name(code):
    for k, v in _NAME_CODES.items():
        if v == code:
            return k
    raise TypeError(code)


def _reduce(name, op, x, dim, keepdim, dtype, out, mode):
    torch = _torch_mod or _torch_module()
    if torch is not None and isinstance(x, torch.Tensor):
        if _torch_op is None:
            _register_torch_op(torch)
        dtype = _out_dtype(torch, name, op, x, out, dtype)
        if _in_graph(torch) and _torch_op:
            r = torch.ops.fastreduce.reduce(x, list(_dims(dim, x.dim(), name)), keepdim, op, mode, dtype)
            return _write_out(torch, name, r, out, mode)
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


def _torch_dtype(torch, dtype):
    """A JAX or NumPy dtype as torch's (None stays None)."""
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    import jax.numpy as jnp
    name = str(jnp.dtype(dtype))
    t = getattr(torch, name, None)
    if not isinstance(t, torch.dtype):
        raise TypeError(f"fastreduce: unsupported dtype {name}")
    return t


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
        r = _reduce_torch(torch, name, op, t, dim, keepdim, _torch_dtype(torch, dtype), None, mode)
        torch.cuda.current_stream(t.device).synchronize()  # x may be freed by JAX once this returns
    except ImportError:
        import cupy
        r = _reduce_cupy(cupy, name, op, cupy.from_dlpack(x), dim, keepdim, dtype, None, mode)
        cupy.cuda.get_current_stream().synchronize()
    return jax.dlpack.from_dlpack(r)


_torch_op = None


_torch_mod = None  # torch, once seen (a global read is all that torch.compile traces through)
_is_compiling = None
_Tensor = None  # torch.Tensor, once torch has been seen: the planned path takes exactly this type
# fastreduce._torch_core (python/src/torch_core.cpp), once torch has been seen: planned calls with
# their results allocated in C++. None where it was not built (no torch at build time) or does not
# load (another torch than the one it was built against): the planned calls then run in Python.
_tc = None


def _torch_module():
    """The torch module once it has been imported, else None."""
    global _torch_mod, _is_compiling, _Tensor, _tc
    if _torch_mod is None:
        t = sys.modules.get("torch")
        if t is not None and hasattr(t, "Tensor"):
            _is_compiling = getattr(getattr(t, "compiler", None), "is_compiling", None) or (lambda: False)
            _Tensor = t.Tensor
            try:
                from . import _torch_core as tc
            except Exception:  # not built, or for another torch (ImportError), or a mismatched _core
                tc = None
            _tc = tc
            _torch_mod = t
    return _torch_mod


def _c_plan(code, op_code, param, mode_code, folded, kind, out_shape, out_code, want_code, values):
    """The capsule of a plan for _torch_core.run (python/src/plan.hpp), or None where there is no
    _torch_core (or the result has more dims than a plan holds)."""
    if _tc is None:
        return None
    return _core.plan(code, op_code, param, mode_code, *folded, kind, out_shape, out_code, want_code, values)


def _register_torch_op(torch):
    """fastreduce::reduce as a torch.library custom op (with a fake for shapes), which
    torch.compile graphs call; eager calls skip the dispatcher."""
    global _torch_op
    if _torch_op is not None or not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        _torch_op = False
        return
    from typing import List, Optional, Tuple

    @torch.library.custom_op("fastreduce::reduce", mutates_args=())
    def reduce_op(x: torch.Tensor, dim: List[int], keepdim: bool, op: str, mode: str,
                  dtype: Optional[torch.dtype]) -> torch.Tensor:
        return _reduce_torch(torch, op, op, x, tuple(dim), keepdim, dtype, None, mode)

    @reduce_op.register_fake
    def _(x, dim, keepdim, op, mode, dtype):
        dims = set(_dims(tuple(dim), x.dim(), op))
        shape = [1 if d in dims else n for d, n in enumerate(x.shape) if keepdim or d not in dims]
        codes, by_code = _torch_tables(torch)
        code = codes[dtype if dtype is not None else x.dtype]
        want = dtype if dtype is not None else (x.dtype if code in _NARROW or op in ("amin", "amax")
                                                else by_code[_result_code(op, code)])
        return x.new_empty(shape, dtype=want)

    @torch.library.custom_op("fastreduce::family", mutates_args=())
    def family_op(x: torch.Tensor, y: Optional[torch.Tensor], dim: Optional[List[int]], keepdim: bool, op: str,
                  param: int, mode: str, dtype: Optional[torch.dtype]) -> torch.Tensor:
        d = None if dim is None else (dim[0] if op in _ARG else tuple(dim))
        return _family_torch(torch, op, op, x, y, d, keepdim, param, dtype, mode, False)

    @family_op.register_fake
    def _(x, y, dim, keepdim, op, param, mode, dtype):
        d = None if dim is None else (dim[0] if op in _ARG else tuple(dim))
        dims = set(_family_dims(op, op, d, x.dim()))
        shape = [1 if i in dims else n for i, n in enumerate(x.shape) if keepdim or i not in dims]
        want = torch.int64 if op in _ARG else (dtype if dtype is not None else x.dtype)
        return x.new_empty(shape, dtype=want)

    @torch.library.custom_op("fastreduce::minmax", mutates_args=())
    def minmax_op(x: torch.Tensor, dim: int, keepdim: bool, op: str, mode: str) -> Tuple[torch.Tensor, torch.Tensor]:
        r = _family_torch(torch, op, op, x, None, dim, keepdim, 0, None, mode, True)
        return r.values, r.indices

    @minmax_op.register_fake
    def _(x, dim, keepdim, op, mode):
        dims = set(_family_dims(op, op, dim, x.dim()))
        shape = [1 if i in dims else n for i, n in enumerate(x.shape) if keepdim or i not in dims]
        return x.new_empty(shape), x.new_empty(shape, dtype=torch.int64)

    _torch_op = reduce_op


def _in_graph(torch):
    return _is_compiling()


def _planned(op, x, dim, keepdim, mode):
    """A repeated eager call on a plain torch CUDA tensor that has a plan (_plans, made by an
    earlier call of the same key): the plan's output and one engine call, nothing else. None where
    there is none (any other type, a subclass, a traced call, a key not seen, an unhashable dim).
    With _torch_core the key, the lookup and the call are all in C++ (_torch_core.planned)."""
    if _tc is not None:
        return None if _is_compiling() else _tc.planned(_OPS[op], 0, 0, x, dim, keepdim, mode)
    if type(x) is not _Tensor or not _plain_dim(dim) or _is_compiling():
        return None
    try:
        plan = _plans[(op, x.dtype, x.shape, x.stride(), dim, keepdim, mode)]
    except (KeyError, TypeError):  # a list dim: the full path keys it as a tuple
        return None
    if not x.is_cuda:  # a CPU (or other device's) tensor of a planned shape: the full path says what is wrong
        return None
    return _run_plan(plan, x)


def _run_plan(plan, x):
    """A torch call by its plan (_plans): the output, one engine call on torch's current stream
    (both in C++ where _torch_core is there)."""
    if plan[-1] is not None:
        return _tc.run(plan[-1], x)
    code, op_code, mode_code, folded, out_shape, acc, want, kind, _ = plan
    device = x.get_device()
    result = x.new_empty(out_shape) if acc is None else x.new_empty(out_shape, dtype=acc)
    args = (code, op_code, mode_code, x.data_ptr(), *folded, result.data_ptr(), kind, _raw_stream(device), device)
    need = _core.reduce(*args)
    if need:
        _captured(_core.reduce, args, need, _torch_temp(_torch_module(), x))
    return result if want is None else result.to(want)


def sum(x, dim=None, keepdim=False, *, dtype=None, out=None, mode="fast"):
    """Sum of the elements of x over dim (all dims by default), like torch.sum.

    x: a CUDA array (torch.Tensor, CuPy, JAX, Numba or any __cuda_array_interface__ array), any
    strides. dim: an int or a tuple of ints, negative ones counted from the end. Integer and bool
    inputs sum into int64; float16 and bfloat16 accumulate in float32 and return their own type
    unless dtype asks for another. mode="reproducible": floating-point sums are compensated and
    their bits are the same on every GPU and for every batch (each output equals the sum of its
    own elements alone). mode="exact": the exact sum rounded once into the result's type (float16
    and bfloat16 too: the engine rounds into them itself), a function of the data alone. The work
    is enqueued on the framework's current stream; nothing waits. float16/bfloat16 results and
    int32/uint32 sums in 64 bits are written by the engine itself, with no conversion before or
    after it (other float dtype= convert the input first). out: an array of the result's shape;
    for torch tensors its dtype is the dtype (torch's rule), for CuPy arrays the result is cast
    into it (NumPy's), but not with mode="exact" where that would round again.
    """
    if dtype is None and out is None:
        r = _planned("sum", x, dim, keepdim, mode)
        if r is not None:
            return r
    return _reduce("sum", "sum", x, dim, keepdim, dtype, out, mode)


def prod(x, dim=None, keepdim=False, *, dtype=None, out=None, mode="fast"):
    """Product of the elements of x over dim, like torch.prod (integers multiply into int64); out
    as sum's."""
    if dtype is None and out is None:
        r = _planned("prod", x, dim, keepdim, mode)
        if r is not None:
            return r
    return _reduce("prod", "prod", x, dim, keepdim, dtype, out, mode)


def amin(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Minimum over dim, like torch.amin: NaN propagates; the result has x's dtype (and so must a
    torch out=; a CuPy out is cast into)."""
    if out is None:
        r = _planned("amin", x, dim, keepdim, mode)
        if r is not None:
            return r
    return _reduce("amin", "amin", x, dim, keepdim, None, out, mode)


def amax(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Maximum over dim, like torch.amax: NaN propagates; the result has x's dtype (out as
    amin's)."""
    if out is None:
        r = _planned("amax", x, dim, keepdim, mode)
        if r is not None:
            return r
    return _reduce("amax", "amax", x, dim, keepdim, None, out, mode)


def min(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Minimum, like torch.min. Without dim: the minimum of all elements (x's dtype, NaN
    propagating). With dim (an int): a named tuple (values, indices), torch.return_types.min for
    torch tensors: the minimum along dim and the index (int64) of its first occurrence (NaN counts
    as the minimum, its first index is returned). Every mode gives the same, exact, result."""
    if dim is None:
        return _reduce("min", "amin", x, None, False, None, out, mode)
    if out is None:
        r = _fplanned("argmin", 0, True, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("min", "argmin", x, None, dim, keepdim, 0, None, mode, values=True, out=out)


def max(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Maximum, like torch.max; with dim a named tuple (values, indices) as fastreduce.min."""
    if dim is None:
        return _reduce("max", "amax", x, None, False, None, out, mode)
    if out is None:
        r = _fplanned("argmax", 0, True, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("max", "argmax", x, None, dim, keepdim, 0, None, mode, values=True, out=out)


def argmax(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Index (int64) of the maximum, like torch.argmax: along dim (an int), or with dim=None the
    index into x flattened (row-major, whatever x's strides). The first index wins on ties; NaN
    counts as the maximum. Integer, float and half inputs (float16/bfloat16 compared as float32,
    which is exact). Every mode gives the same, exact, result. out: an int64 array of the
    result's shape (written as torch's out=, after the call's checks)."""
    if out is None:
        r = _fplanned("argmax", 0, False, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("argmax", "argmax", x, None, dim, keepdim, 0, None, mode, out=out)


def argmin(x, dim=None, keepdim=False, *, out=None, mode="fast"):
    """Index (int64) of the minimum, like torch.argmin (see argmax)."""
    if out is None:
        r = _fplanned("argmin", 0, False, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("argmin", "argmin", x, None, dim, keepdim, 0, None, mode, out=out)


def mean(x, dim=None, keepdim=False, *, dtype=None, out=None, mode="fast"):
    """Mean over dim (an int, a tuple, None for all), like torch.mean: floating-point inputs only
    (integers need dtype=, as in torch); float16/bfloat16 accumulate in double and return their
    own type (or dtype=float32 with no conversion of the input). NaN for no element.
    Floating-point inputs have the sum's modes: mode="reproducible" (the same bits on every GPU)
    and mode="exact" (the exact sum divided by the count, rounded once into the result's type:
    float16/bfloat16 too, by the engine itself). out: as var's (torch: its floating-point dtype is
    the dtype where dtype= is not given; CuPy: the result cast into it)."""
    if dtype is None and out is None:
        r = _fplanned("mean", 0, False, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("mean", "mean", x, None, dim, keepdim, 0, dtype, mode, out=out)


def _correction(name, correction, unbiased):
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"fastreduce.{name}: give correction or unbiased, not both")
        return 1 if unbiased else 0
    if correction is None:
        return 1
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"fastreduce.{name}: correction must be a number, got {correction!r}")
    if correction != int(correction) or correction < 0:
        raise ValueError(f"fastreduce.{name}: correction must be a non-negative integer (the engine's), got "
                         f"{correction!r}")
    return int(correction)


def var(x, dim=None, *, correction=None, keepdim=False, unbiased=None, out=None, mode="fast"):
    """Variance over dim, like torch.var: M2 / (n - correction), correction=1 by default
    (unbiased=True/False is the older spelling of 1/0); where n <= correction, torch's M2 / 0: inf
    (NaN where M2 = 0). One pass,
    robust (shifted sums, Chan's merge), accumulated in double. Floating-point inputs only; the
    result has x's dtype. mode="exact" and mode="reproducible" (the same kernels and bits) for
    float32 over any dims: each output's n sum x^2 - (sum x)^2 from the exact sums, in integers,
    rounded once to double, divided by n and by n - correction, then rounded once to float32
    (within an ulp of the correctly rounded variance, the bits a function of the output's elements
    alone); float16/bfloat16 the same, rounded once from that double into their own type by the
    engine; float64, RuntimeError. out: of the result's shape; a torch out's (floating-point)
    dtype is the dtype the input is read in, as torch's; CuPy casts into it, as NumPy."""
    param = _correction("var", correction, unbiased)
    if out is None:
        r = _fplanned("var", param, False, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("var", "var", x, None, dim, keepdim, param, None, mode, out=out)


def std(x, dim=None, *, correction=None, keepdim=False, unbiased=None, out=None, mode="fast"):
    """Standard deviation over dim, like torch.std: the square root of var's (the modes and out as
    var's: the square root taken in double before the one rounding into the result's type)."""
    param = _correction("std", correction, unbiased)
    if out is None:
        r = _fplanned("std", param, False, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("std", "std", x, None, dim, keepdim, param, None, mode, out=out)


_NORMS = {1: "norm1", 2: "norm2", "fro": "norm2", math.inf: "norminf"}


def norm(x, p=2, dim=None, keepdim=False, *, ord=None, dtype=None, out=None, mode="fast"):
    """Vector norm over dim, like torch.linalg.vector_norm (and torch.norm's vector norms):
    p (or ord) 1, 2 ("fro" too) or inf. Floating-point inputs only (integers need dtype=); the
    result has x's dtype; L2 of doubles is scaled (Blue's sums: no overflow or underflow).
    p=inf is exact in every mode. p=1 has the sum's modes: mode="reproducible" (the same bits on
    every GPU) and mode="exact" (the exact sum of |x| rounded once into the result's type:
    float16/bfloat16 too, by the engine itself). p=2 has both modes for float32, float16 and
    bfloat16 inputs, over any dims: the square root of each output's exact sum of squares, rounded
    to double, its root rounded to double and that once into the result's type (within an ulp of
    the correctly rounded norm), the same bits in both modes; for float64, RuntimeError. out: of
    the result's shape and dtype (torch; CuPy casts into it, as NumPy)."""
    if ord is not None:
        p = ord
    which = _NORMS.get(p) if not isinstance(p, bool) else None
    if which is None:
        raise ValueError(f"fastreduce.norm: p must be 1, 2, 'fro' or inf, got {p!r}")
    if dtype is None and out is None:
        r = _fplanned(which, 0, False, x, dim, keepdim, mode)
        if r is not None:
            return r
    return _family("norm", which, x, None, dim, keepdim, 0, dtype, mode, out=out)


def dot(a, b, *, out=None, mode="fast"):
    """Dot product of two 1-D arrays of one floating-point dtype and length, like torch.dot
    (accumulated in double; the result, 0-d, has their dtype). mode="exact" and
    mode="reproducible" (the same kernel and bits) for float32: the exact sum of the products
    rounded once; float16/bfloat16 inputs in exact mode: convert them to float32 (exact);
    float64: RuntimeError. out: a 0-d array of the result's dtype (torch; CuPy casts into it)."""
    return _family("dot", "dot", a, b, None, False, 0, None, mode, out=out)


def vdot(a, b, *, out=None, mode="fast"):
    """torch.vdot for real arrays: the same as dot (complex inputs are not supported)."""
    return _family("vdot", "dot", a, b, None, False, 0, None, mode, out=out)


# ---------------------------------------------------------------------------------------------
# The family ops (python/src/family.hpp's op codes): arg-extremes, mean, var, std, norms, dot.

_FAMILY = {"argmax": 16, "argmin": 17, "mean": 18, "var": 19, "std": 20, "norm1": 21, "norm2": 22, "norminf": 23,
           "dot": 24}
_ARG = ("argmax", "argmin")
_FLOATS = {_F16, _BF16, _F32, _F64}
_ARG_CODES = _FLOATS | {_I8, _U8, _I16, _I32, _I64}  # what python/src/family_*.cu instantiates
_EXACT = ("argmax", "argmin", "norminf")  # their results do not depend on the order: every mode
# The sums' reproducible and exact kernels (norm2, dot, var, std: float64 refused).
_SUM_LIKE = ("norm1", "mean", "norm2", "dot", "var", "std")
_Values = collections.namedtuple("_Values", ["values", "indices"])
min_result = collections.namedtuple("min", ["values", "indices"])  # CuPy and JAX; torch.return_types.min for torch
max_result = collections.namedtuple("max", ["values", "indices"])


_FAMILY_STAT, _FAMILY_NARROW = 0, 1  # _core.reduce_family's result kinds (python/src/family.hpp)
_NARROWABLE = ("mean", "var", "std", "norm1", "norm2", "norminf")


def _narrow_stat(op, code):
    """Whether the engine writes op's result for a float16/bfloat16 input in the input's own type:
    the statistics and norms, in every mode (rounded once by the kernel that writes it: the
    reproducible and exact mean and L1 norm from their exact value, the variance, standard
    deviation and L2 norm from the double their finish computes)."""
    return op in _NARROWABLE and code in _NARROW


def _family_acc(op, code):
    """What the engine writes: the input's type for the arg-extremes' values, else stat_t."""
    if op in _ARG:
        return code
    return _F64 if code == _F64 else _F32


def _family_check(name, op, code, mode, converted, given=None, result=None):
    """TypeError/RuntimeError as torch for types the op does not take; the mode. given, result: the
    codes of the input's dtype as given and of the result's (mode="exact" rounds the exact value
    once: into float32 or float64, holding the input's values exactly, as the sum's rule)."""
    if op in _ARG:
        if code not in _ARG_CODES:
            raise TypeError(f"fastreduce.{name}: unsupported dtype {_dtype_name(code)} (arg-extremes: int8, uint8, "
                            "int16, int32, int64, float16, bfloat16, float32, float64)")
    elif code not in _FLOATS:
        if code in _INTEGER and not converted:
            raise RuntimeError(f"fastreduce.{name}: could not infer output dtype. Input dtype must be a floating "
                               f"point dtype, got {_dtype_name(code)} (pass dtype=, as torch asks)")
        raise TypeError(f"fastreduce.{name}: unsupported dtype {_dtype_name(code)}")
    m = _mode_code(name, mode)
    if m != 0 and op not in _EXACT:
        if op not in _SUM_LIKE:
            raise RuntimeError(f"fastreduce.{name}: mode={mode!r} has no form of this op yet (its result depends on "
                               f"the order of its floating-point operations); {mode}: sum, amin, amax, min, max, "
                               "argmax, argmin, mean, norm(p=1, 2, inf), dot, var and std")
        if op in ("norm2", "dot", "var", "std") and code == _F64:
            terms = "products" if op == "dot" else "squares"
            how = "with a float32 result" if op == "norm2" else "exact mode on float32 copies, which are exact"
            raise RuntimeError(f"fastreduce.{name}: mode={mode!r} has no form of this op yet for float64 inputs"
                               f"{' or dtype=float64' if op == 'norm2' else ''} (the {terms} of doubles need more "
                               f"than a double); float32, float16 and bfloat16 have it ({how})")
        given = code if given is None else given
        result = given if result is None else result  # the result's dtype is the input's unless dtype= says
        # float16/bfloat16 statistics and norms also into their own type (_narrow_stat: the engine
        # rounds into it once)
        own = result == given and op in _NARROWABLE
        if mode == "exact" and (result not in _EXACT_INTO.get(given, ()) or (result in _NARROW and not own)):
            if op == "dot":  # no dtype=: float32 inputs hold the same values
                raise RuntimeError(f"fastreduce.{name}: mode='exact' rounds the exact dot product once, into "
                                   f"float32: a {_dtype_name(result)} result would be rounded twice (convert the "
                                   "inputs to float32, which is exact)")
            hint = " (pass dtype=float32)" if given in _NARROW else ""
            raise RuntimeError(f"fastreduce.{name}: mode='exact' rounds the exact result once, into float32 or "
                               f"float64 holding the input's values, or a float16/bfloat16 input's own type: a "
                               f"{_dtype_name(result)} result for {_dtype_name(given)} input would be rounded "
                               f"twice{hint}")
    return m


def _family_dims(name, op, dim, ndim):
    if op in _ARG:  # torch: one int, or None (the flattened input)
        if dim is None:
            return tuple(range(ndim))
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"fastreduce.{name}: dim must be an int or None, got {dim!r}")
    return _dims(dim, ndim, name)


def _family_view(name, op, v, ptr2, dims, keepdim, param, mode_code, stream, alloc, copy_contiguous,
                 temp_alloc, values=False, record=None, flat=False, narrow=False):
    """Reduces view v (and the second input at ptr2, with v's shape and strides) over dims.
    Returns the engine's result, or (values, indices) of the arg-extremes (values None unless
    asked for). record as _reduce_view's. narrow: a float16/bfloat16 statistic or norm is written
    by the engine in the input's own type (_narrow_stat; else in float32, _family_acc)."""
    kept, out_shape, length, outputs = _split(v.shape, dims, keepdim)
    arg = op in _ARG
    # torch divides by max(0, n - correction): with n <= correction, M2 / 0 (inf, NaN where M2 = 0);
    # the engine says NaN there. M2 / n times inf gives torch's (not cached as a plan).
    degenerate = op in ("var", "std") and 0 < length <= param
    if degenerate:
        param, record = 0, None
    if arg and length == 0:
        if flat:
            raise IndexError(f"fastreduce.{name}: Expected reduction dim to be specified for input.numel() == 0.")
        raise IndexError(f"fastreduce.{name}: Expected reduction dim {dims[0] if dims else 0} to have non-zero size.")
    # (n <= correction: the float M2 / n times inf below, which a half M2 / n that underflowed to 0
    # would turn into NaN)
    kind = _FAMILY_NARROW if narrow and not degenerate and _narrow_stat(op, v.code) else _FAMILY_STAT
    if arg:  # out = 0 (no values): the engine writes the indices alone
        vals = alloc(out_shape, v.code) if values else (None, 0)
        result = alloc(out_shape, _I64)
        out, out2 = vals[1], result[1]
    else:
        result = alloc(out_shape, v.code if kind == _FAMILY_NARROW else _family_acc(op, v.code))
        out, out2 = result[1], 0
    if outputs > 0:
        folded = _fold(v.shape, v.strides, set(dims))
        if (folded is not None and op in ("var", "std") and mode_code != 0 and folded[0] * folded[2] == 1
                and folded[1] > 1 and folded[4] != 1):
            folded = None  # a strided one-value view: copied, the exact variance's 1-D pass is faster
        if folded is None:
            v = copy_contiguous(kept + list(dims))
            folded = (outputs, length, 1, length, 1, 1)
        elif record is not None:
            record.append((folded, out_shape, kind))
        args = (v.code, _FAMILY[op], param, mode_code, v.ptr, ptr2, *folded, out, out2, kind, stream, v.device)
        need = _core.reduce_family(*args)
        if need:
            _captured(_core.reduce_family, args, need, temp_alloc)
    if arg:
        return _Values(vals[0], result[0])
    if degenerate:
        r = result[0]
        r *= float("inf")  # in place: no intermediate for a captured graph to outlive
        return r
    return result[0]


def _family(name, op, x, y, dim, keepdim, param, dtype, mode, values=False, out=None):
    torch = _torch_mod or _torch_module()
    if torch is not None and isinstance(x, torch.Tensor):
        if _torch_op is None:
            _register_torch_op(torch)
        dtype = _out_dtype(torch, name, op, x, out, dtype)
        if _in_graph(torch) and _torch_op:
            d = None if dim is None else ([dim] if isinstance(dim, int) else list(dim))
            if values:
                pair = torch.ops.fastreduce.minmax(x, dim, keepdim, op, mode)
                r = _torch_pair(torch, op, pair)
            else:
                r = torch.ops.fastreduce.family(x, y, d, keepdim, op, param, mode, dtype)
            return _write_out(torch, name, r, out, mode)
        return _write_out(torch, name, _family_torch(torch, name, op, x, y, dim, keepdim, param, dtype, mode, values),
                          out, mode)
    cupy = sys.modules.get("cupy")
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(x, jax.Array):
        if out is not None:
            raise TypeError(f"fastreduce.{name}: JAX arrays are immutable: out= is not supported")
        return _family_jax(jax, name, op, x, y, dim, keepdim, param, dtype, mode, values)
    if (cupy is not None and isinstance(x, cupy.ndarray)) or hasattr(x, "__cuda_array_interface__"):
        if cupy is None or not isinstance(x, cupy.ndarray):
            import cupy  # other CUDA arrays (Numba, ...): viewed and answered through CuPy
            x = cupy.asarray(x)
            y = cupy.asarray(y) if y is not None and hasattr(y, "__cuda_array_interface__") else y
        r = _family_cupy(cupy, name, op, x, y, dim, keepdim, param, dtype, mode, values)
        with cupy.cuda.Device(x.device.id):  # the copy on the current stream of x's device, as the reduction
            return _write_out(None, name, r, out, mode)
    if hasattr(x, "__dlpack__"):
        raise TypeError(f"fastreduce.{name}: expected a CUDA array (torch, CuPy, JAX, Numba), got {type(x).__name__} "
                        "(a CPU array?)")
    raise TypeError(f"fastreduce.{name}: expected a CUDA array (torch, CuPy, JAX, Numba), got {type(x).__name__}")


# Ops whose out= gives the result's dtype where dtype= is not given (torch's rule): sum, prod,
# mean, var and std; the input is then read in that dtype, as with dtype=. (CuPy arrays follow
# NumPy: the result, of its own dtype, is cast into out.)
_OUT_IS_DTYPE = ("sum", "prod", "mean", "var", "std")
_STATS = ("mean", "var", "std")


def _out_dtype(torch, name, op, x, out, dtype):
    """dtype= as a torch out= makes it: out's dtype for the ops of _OUT_IS_DTYPE when dtype= is
    None and out's is not the default result's (then None: no conversion); a dtype= that out's
    differs from, and an integer out of a statistic, are refused. Statistics of integer inputs keep
    dtype=None, so that _family_check refuses them as torch does. Checked before anything runs, as
    _write_out's checks of out itself are."""
    if out is None or op not in _OUT_IS_DTYPE:
        return dtype
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"fastreduce.{name}: out must be a tensor, got {type(out).__name__}")
    if op in _STATS:
        if not out.dtype.is_floating_point:
            raise RuntimeError(f"fastreduce.{name}: out must have a floating-point dtype, got {out.dtype}")
        if dtype is None and not x.dtype.is_floating_point:
            return None  # torch: the input must be floating-point, or dtype= given
    if dtype is None:
        return None if out.dtype == _default_result(torch, op, x) else out.dtype
    if dtype != out.dtype:
        raise RuntimeError(f"fastreduce.{name}: Expected out tensor to have dtype {dtype}, but got {out.dtype} "
                           "instead")
    return dtype


def _default_result(torch, op, x):
    """The dtype of op's result for torch tensor x without dtype= (sum, prod, amin, amax, mean, var,
    std; None where there is none: statistics of integers, an unsupported dtype)."""
    codes, by_code = _torch_tables(torch)
    code = codes.get(x.dtype)
    if code is None or (op in _STATS and code not in _FLOATS):
        return None
    if op in _STATS or code in _NARROW:
        return x.dtype
    return by_code[_result_code(op, code)]


def _write_out(torch, name, r, out, mode):
    """r (an array, or a (values, indices) pair) into out (an array, or a pair), returned; r itself
    where out is None. torch tensors as torch's out=: tensors on r's device, of r's shape and
    dtype, none an inference tensor outside inference mode or with elements that share memory.
    CuPy arrays as NumPy's: arrays of r's type on r's device, of r's shape, r cast into out's
    dtype, but not with mode='exact' where the cast would round a floating-point result again.
    Everything is checked before out is written."""
    if out is None:
        return r
    results = tuple(r) if isinstance(r, tuple) else (r,)
    if isinstance(r, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(results):
            raise TypeError(f"fastreduce.{name}: out must be a tuple of {len(results)} arrays")
        pairs = tuple(out)
    else:
        pairs = (out,)
    for o, v in zip(pairs, results):
        if torch is not None:
            if not isinstance(o, torch.Tensor):
                raise TypeError(f"fastreduce.{name}: out must be a tensor, got {type(o).__name__}")
            if o.device != v.device:
                raise RuntimeError(f"fastreduce.{name}: out must be a tensor on {v.device}, got one on {o.device}")
            if o.dtype != v.dtype:
                raise RuntimeError(f"fastreduce.{name}: Expected out tensor to have dtype {v.dtype}, but got "
                                   f"{o.dtype} instead")
            if not _in_graph(torch):  # (a compiled graph's copy_ is checked by torch itself)
                if o.is_inference() and not torch.is_inference_mode_enabled():
                    raise RuntimeError(f"fastreduce.{name}: out is an inference tensor, written outside inference "
                                       "mode")
                if o.numel() > 1 and torch._debug_has_internal_overlap(o) != 0:
                    raise RuntimeError(f"fastreduce.{name}: out has elements that share memory (an expanded view?)")
        else:
            if not isinstance(o, type(v)):
                raise TypeError(f"fastreduce.{name}: out must be a {_type_name(v)}, as the result, got {_type_name(o)}")
            device = getattr(getattr(v, "device", None), "id", None)
            if getattr(getattr(o, "device", None), "id", None) != device:
                raise RuntimeError(f"fastreduce.{name}: out must be an array on device {device}")
            if (mode == "exact" and o.dtype != v.dtype and v.dtype.kind == "f"
                    and not _np_can_cast_safely(v.dtype, o.dtype)):
                raise RuntimeError(f"fastreduce.{name}: mode='exact' rounds the exact result once, into {v.dtype}: "
                                   f"an out of dtype {o.dtype} would round it again (pass an out of {v.dtype})")
        if tuple(o.shape) != tuple(v.shape):
            raise RuntimeError(f"fastreduce.{name}: out has shape {tuple(o.shape)}, the result {tuple(v.shape)}")
    for o, v in zip(pairs, results):
        if torch is not None:
            o.copy_(v)
        else:
            o[...] = v
    return out


def _type_name(a):
    """cupy.ndarray, numpy.ndarray, ...: the top module and the class."""
    return f"{type(a).__module__.split('.')[0]}.{type(a).__name__}"


def _np_can_cast_safely(a, b):
    import numpy
    return numpy.can_cast(a, b, "safe")


def _dot_check(name, xs, ys, xdt, ydt):
    if len(xs) != 1 or len(ys) != 1:
        raise RuntimeError(f"fastreduce.{name}: 1D tensors expected, but got {len(xs)}D and {len(ys)}D tensors")
    if xdt != ydt:
        raise RuntimeError(f"fastreduce.{name}: expected both vectors to have same dtype, but found {xdt} and {ydt}")
    if xs[0] != ys[0]:
        raise RuntimeError(f"fastreduce.{name}: inconsistent tensor size, expected tensor [{xs[0]}] and src [{ys[0]}] "
                           f"to have the same number of elements, but got {xs[0]} and {ys[0]} elements respectively")


# Plans of torch family calls read in place (as _plans).
_fplans = {}


def _torch_pair(torch, op, pair):
    """(values, indices) of min/max with dim as torch's named tuple (op: "argmax" for max)."""
    return (torch.return_types.max if op == "argmax" else torch.return_types.min)(pair)


def _run_fplan(torch, plan, x, op, param, values):
    """A torch family call by its plan (_fplans), as _run_plan."""
    code, op_code, mode_code, folded, out_shape, acc, want, kind, cplan = plan
    if cplan is not None:
        r = _tc.run(cplan, x)
    else:
        device = x.get_device()
        stream = _torch_stream(torch, device)
        if op_code < 18:  # arg-extremes
            vals = x.new_empty(out_shape) if values else None
            result = x.new_empty(out_shape, dtype=torch.int64)
            out, out2 = (vals.data_ptr() if values else 0), result.data_ptr()
        else:
            result = x.new_empty(out_shape, dtype=acc)
            out, out2 = result.data_ptr(), 0
        args = (code, op_code, param, mode_code, x.data_ptr(), 0, *folded, out, out2, kind, stream, device)
        need = _core.reduce_family(*args)
        if need:
            _captured(_core.reduce_family, args, need, _torch_temp(torch, x))
        if op_code < 18:
            r = (vals, result) if values else result
        else:
            r = result if want is None else result.to(want)
    return _torch_pair(torch, op, r) if values else r


def _fplanned(op, param, values, x, dim, keepdim, mode):
    """A repeated eager family call on a plain torch CUDA tensor that has a plan (_fplans), as
    _planned; None where there is none."""
    if _tc is not None:
        if _is_compiling():
            return None
        r = _tc.planned(_FAMILY[op], param, values, x, dim, keepdim, mode)
        if r is None or not values:
            return r
        return _torch_pair(_torch_mod, op, r)
    if type(x) is not _Tensor or not _plain_dim(dim) or _is_compiling():
        return None
    try:
        plan = _fplans[(op, param, values, x.dtype, x.shape, x.stride(), dim, keepdim, mode)]
    except (KeyError, TypeError):
        return None
    if not x.is_cuda:
        return None
    return _run_fplan(_torch_mod, plan, x, op, param, values)


def _family_torch(torch, name, op, x, y, dim, keepdim, param, dtype, mode, values):
    if y is None and dtype is None and x.is_cuda and _plain_dim(dim):
        key = (op, param, values, x.dtype, x.shape, x.stride(), tuple(dim) if isinstance(dim, list) else dim, keepdim,
               mode)
        plan = _fplans.get(key)
        if plan is not None:
            return _run_fplan(torch, plan, x, op, param, values)
    else:
        key = None
    codes = _torch_tables(torch)[0]
    given, result = codes.get(x.dtype), codes.get(x.dtype if dtype is None else dtype)
    x, code, by_code, mode_code = _torch_input(
        torch, name, x, dtype, check=lambda c: _family_check(name, op, c, mode, dtype is not None, given, result))
    want = dtype
    device = x.device.index if x.device.index is not None else torch.cuda.current_device()
    ptr2 = 0
    if y is not None:
        if not isinstance(y, torch.Tensor):
            raise TypeError(f"fastreduce.{name}: expected a tensor, got {type(y).__name__}")
        _dot_check(name, tuple(x.shape), tuple(y.shape), x.dtype, y.dtype)
        if y.device != x.device:
            raise RuntimeError(f"fastreduce.{name}: expected both tensors on one device, got {x.device} and {y.device}")
        # Both inputs are read with one layout: views of different strides are copied first, and
        # for the exact dot product strided views too (its 1-D pass is faster).
        if x.stride() != y.stride() or (mode_code != 0 and x.numel() > 1 and x.stride() != (1,)):
            x, y = x.contiguous(), y.contiguous()
        ptr2 = y.data_ptr()
    if want is None:
        want = torch.int64 if op in _ARG else x.dtype
    dims = _family_dims(name, op, dim, x.dim())
    stream = _torch_stream(torch, device)
    alloc, copy_contiguous, keep = _torch_callbacks(torch, by_code, x, code, device)
    record = []
    v = _View(x.data_ptr(), code, tuple(x.shape), tuple(x.stride()), device)
    r = _family_view(name, op, v, ptr2, dims, keepdim, param, mode_code, stream, alloc, copy_contiguous,
                     _torch_temp(torch, x), values, record, dim is None, narrow=want == x.dtype)
    if op in _ARG:
        if key is not None and record:
            folded, out_shape, kind = record[0]
            _keep_plan(_fplans, key, (code, _FAMILY[op], mode_code, folded, out_shape, None, None, kind),
                       _c_plan(code, _FAMILY[op], param, mode_code, folded, kind, out_shape, code, -1, values),
                       _FAMILY[op], param, values, x, dim, keepdim, mode)
        if values:
            return _torch_pair(torch, op, (r.values, r.indices))
        return r.indices
    if key is not None and record and key[3] == x.dtype:
        folded, out_shape, kind = record[0]
        _keep_plan(_fplans, key, (code, _FAMILY[op], mode_code, folded, out_shape, r.dtype,
                                  None if r.dtype == want else want, kind),
                   _c_plan(code, _FAMILY[op], param, mode_code, folded, kind, out_shape, codes[r.dtype],
                           -1 if r.dtype == want else codes[want], False),
                   _FAMILY[op], param, values, x, dim, keepdim, mode)
    return r if r.dtype == want else r.to(want)


def _family_cupy(cupy, name, op, x, y, dim, keepdim, param, dtype, mode, values):
    code = _NAME_CODES.get(str(x.dtype))
    if code is None:
        raise TypeError(f"fastreduce.{name}: unsupported dtype {x.dtype}")
    given = code
    want = None
    if dtype is not None:
        dt = cupy.dtype(dtype)
        if str(dt) not in _NAME_CODES:
            raise TypeError(f"fastreduce.{name}: unsupported dtype {dt}")
        if not (code == _F16 and dt == cupy.float32) and dt != x.dtype:
            x = x.astype(dt)
        code = _NAME_CODES[str(x.dtype)]
        want = dt
    mode_code = _family_check(name, op, code, mode, dtype is not None, given,
                              _NAME_CODES.get(str(want if want is not None else x.dtype)))
    code, shape, strides, ptr = _cai_view(name, x)
    device = x.device.id
    ptr2 = 0
    if y is not None:
        if not isinstance(y, cupy.ndarray):
            raise TypeError(f"fastreduce.{name}: expected a CuPy array, got {type(y).__name__}")
        if y.device.id != x.device.id:
            raise RuntimeError(f"fastreduce.{name}: expected both arrays on one device, got {x.device} and {y.device}")
        _dot_check(name, shape, tuple(y.shape), x.dtype, y.dtype)
        if y.strides != x.strides or (mode_code != 0 and x.size > 1 and x.strides[0] != x.itemsize):
            x, y = cupy.ascontiguousarray(x), cupy.ascontiguousarray(y)
            code, shape, strides, ptr = _cai_view(name, x)
        ptr2 = _cai_view(name, y)[3]
    dims = _family_dims(name, op, dim, len(shape))
    with cupy.cuda.Device(device):
        s = cupy.cuda.get_current_stream()
        stream = s.ptr
        alloc, copy_contiguous, keep = _cupy_callbacks(cupy, name, x, device)

        # Under capture the storage comes from CuPy's pool and is kept (_cupy_captured).
        r = _family_view(name, op, _View(ptr, code, shape, strides, device), ptr2, dims, keepdim, param, mode_code,
                         stream, alloc, copy_contiguous, _cupy_temp(cupy), values, None, dim is None,
                         narrow=want is None or want == x.dtype)
        if _cupy_capturing(s):  # every array the graph reads or writes outlives it (see _cupy_captured)
            _cupy_captured.append((x, y, keep, r))
        if op in _ARG:
            if values:
                return (max_result if op == "argmax" else min_result)(r.values, r.indices)
            return r.indices
        want = want if want is not None else x.dtype
        return r if r.dtype == want else r.astype(want)


def _family_jax(jax, name, op, x, y, dim, keepdim, param, dtype, mode, values):
    """JAX arrays: as _reduce_jax (through torch, or CuPy, after the array is ready)."""
    for a in (x,) if y is None else (x, y):
        devices = list(a.devices())
        if len(devices) != 1 or devices[0].platform != "gpu":
            raise TypeError(f"fastreduce.{name}: expected a JAX array on one GPU, got one on {devices}")
        a.block_until_ready()
    import jax.dlpack
    try:
        import torch
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"fastreduce.{name}: JAX arrays cannot be reduced under CUDA graph capture (the call "
                               "waits for JAX's stream)")
        t = torch.from_dlpack(x)
        r = _family_torch(torch, name, op, t, None if y is None else torch.from_dlpack(y), dim, keepdim, param,
                          _torch_dtype(torch, dtype), mode, values)
        torch.cuda.current_stream(t.device).synchronize()
    except ImportError:
        import cupy
        r = _family_cupy(cupy, name, op, cupy.from_dlpack(x), None if y is None else cupy.from_dlpack(y), dim, keepdim,
                         param, dtype, mode, values)
        cupy.cuda.get_current_stream().synchronize()
    if isinstance(r, tuple):
        return (max_result if op == "argmax" else min_result)(jax.dlpack.from_dlpack(r[0]), jax.dlpack.from_dlpack(r[1]))
    return jax.dlpack.from_dlpack(r)
