"""The CPU tier: what works without a GPU (argument rules, the folding of dims into the engine's
axes, the messages), run in CI after `pip install .`."""
import ast
import inspect
import math
import pathlib
import types

import pytest

import fastreduce as fr
from fastreduce import _api, _core


def test_import_and_api():
    assert fr.__version__
    for name in ("sum", "prod", "amin", "amax", "min", "max", "argmax", "argmin", "mean", "var", "std", "norm", "dot",
                 "vdot", "is_available"):
        assert callable(getattr(fr, name)), name
    assert isinstance(fr.is_available(), bool)


def test_non_arrays_are_type_errors():
    with pytest.raises(TypeError, match="expected a CUDA array"):
        fr.sum([1.0, 2.0])
    with pytest.raises(TypeError, match="expected a CUDA array"):
        fr.amax(3.0)


def test_dims_follow_torch():
    assert _api._dims(None, 3, "sum") == (0, 1, 2)
    assert _api._dims(-1, 3, "sum") == (2,)
    assert _api._dims((0, -1), 3, "sum") == (0, 2)
    with pytest.raises(IndexError, match=r"range of \[-3, 2\], but got 3"):
        _api._dims(3, 3, "sum")
    with pytest.raises(IndexError):
        _api._dims(-4, 3, "sum")
    with pytest.raises(TypeError):
        _api._dims(1.5, 3, "sum")
    with pytest.raises(RuntimeError, match="multiple times"):
        _api._dims((1, -2), 3, "sum")
    assert _api._dims(None, 0, "sum") == ()
    assert _api._dims(0, 0, "sum") == ()  # a 0-d tensor takes dim 0 or -1, as torch does


@pytest.mark.parametrize("shape, strides, dims, folded", [
    ((4, 5), (5, 1), {0, 1}, (1, 20, 1, 0, 1, 0)),          # all of a contiguous matrix: 1-D
    ((4, 5), (5, 1), {1}, (4, 5, 1, 5, 1, 0)),              # row sums
    ((4, 5), (5, 1), {0}, (1, 4, 5, 0, 5, 1)),              # column sums
    ((2, 3, 4), (12, 4, 1), {1}, (2, 3, 4, 12, 4, 1)),      # the middle axis
    ((2, 3, 4), (12, 4, 1), {1, 2}, (2, 12, 1, 12, 1, 0)),  # trailing axes merge
    ((5, 4), (1, 5), {1}, (5, 4, 1, 1, 5, 0)),              # a transposed matrix's rows
    ((4, 1, 5), (5, 5, 1), {1}, (20, 1, 1, 1, 0, 0)),       # a size-1 reduced dim: nothing to reduce
    ((3, 4), (-4, 1), {0}, (1, 3, 4, 0, -4, 1)),            # a negative stride
])
def test_fold(shape, strides, dims, folded):
    assert _api._fold(shape, strides, dims) == folded


def test_fold_gives_up_on_interleaved_dims():
    assert _api._fold((2, 3, 4), (12, 4, 1), {0, 2}) is None  # reduced, kept, reduced: a copy makes them contiguous
    assert _api._fold((2, 3, 4, 5), (60, 20, 5, 1), {1, 3}) is None


def test_result_kinds():
    C = _api
    assert C._result_kind("sum", C._BF16, C._BF16) == C._RESULT_NARROW  # rounded once by the engine
    assert C._result_kind("amax", C._F16, C._F16) == C._RESULT_NARROW
    assert C._result_kind("sum", C._BF16, C._F32) == C._RESULT_ACC  # dtype=float32: the engine's float
    assert C._result_kind("sum", C._I32, C._I64) == C._RESULT_WIDE  # accumulated in int64, no copy
    assert C._result_kind("prod", C._U32, C._U64) == C._RESULT_WIDE
    assert C._result_kind("amax", C._I32, C._I32) == C._RESULT_ACC
    assert C._result_kind("sum", C._F32, C._F32) == C._RESULT_ACC


def test_modes_are_checked():
    C = _api
    with pytest.raises(ValueError, match="'fast', 'reproducible' or 'exact'"):
        C._check_mode("sum", "compensated")
    with pytest.raises(ValueError, match="'fast', 'reproducible' or 'exact'"):
        C._check_mode("sum", ["exact"])
    assert C._check_mode("sum", "fast", "sum", C._F32, C._F32) == 0
    assert C._check_mode("sum", "reproducible", "sum", C._F16, C._F16) == 1
    assert C._check_mode("sum", "exact", "sum", C._F32, C._F32) == 2
    assert C._check_mode("sum", "exact", "sum", C._BF16, C._F32) == 2  # dtype=float32: rounded once
    assert C._check_mode("sum", "exact", "sum", C._I32, C._I64) == 2  # integers are exact already
    assert C._check_mode("amax", "exact", "amax", C._F16, C._F16) == 2
    assert C._check_mode("sum", "exact", "sum", C._F16, C._F16) == 2  # the engine rounds once into float16
    assert C._check_mode("sum", "exact", "sum", C._BF16, C._BF16) == 2
    assert C._check_mode("sum", "exact", "sum", C._F32, C._F64) == 2  # every float32 is a float64
    for code, want in ((C._BF16, C._F16), (C._F32, C._F16), (C._F64, C._F32), (C._F32, C._BF16)):
        with pytest.raises(RuntimeError, match="a second rounding"):
            C._check_mode("sum", "exact", "sum", code, want)
    for mode in ("reproducible", "exact"):
        with pytest.raises(RuntimeError, match="no floating-point prod"):
            C._check_mode("prod", mode, "prod", C._F32, C._F32)
        assert C._check_mode("prod", mode, "prod", C._I64, C._I64) == C._MODES[mode]


def test_min_max_with_dim_check_their_input():
    with pytest.raises(TypeError, match="expected a CUDA array"):
        fr.min(object(), dim=0)
    with pytest.raises(TypeError, match="expected a CUDA array"):
        fr.max([1.0], dim=1)


ALL = ["sum", "prod", "amin", "amax", "min", "max", "argmax", "argmin", "mean", "var", "std", "norm", "dot", "vdot",
       "is_available"]


def _stub_signatures():
    tree = ast.parse((pathlib.Path(fr.__file__).parent / "__init__.pyi").read_text())
    return {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}


@pytest.mark.parametrize("name", ALL)
def test_stubs_match_the_functions(name):
    """The .pyi stubs name the same parameters, kinds and defaults as the functions."""
    stub = _stub_signatures()[name]
    sig = inspect.signature(getattr(fr, name))
    a = stub.args
    positional = [x.arg for x in a.args]
    keyword = [x.arg for x in a.kwonlyargs]
    assert positional == [p.name for p in sig.parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert keyword == [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY]
    defaults = [ast.literal_eval(d) for d in a.defaults]
    assert defaults == [p.default for p in sig.parameters.values()
                        if p.kind == p.POSITIONAL_OR_KEYWORD and p.default is not p.empty]
    assert fr.__all__ == ALL


@pytest.mark.parametrize("name", ALL[:-1])
def test_every_op_has_a_docstring(name):
    doc = getattr(fr, name).__doc__
    assert doc and ("torch" in doc or "fastreduce" in doc), name


def test_every_reduction_takes_out():
    for name in ALL[:-1]:
        assert "out" in inspect.signature(getattr(fr, name)).parameters, name


class _Array:
    """A stand-in for a CuPy array: a shape, a dtype and what was written into it."""

    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype, self.written = shape, dtype, None

    def __setitem__(self, key, value):
        assert key is Ellipsis
        self.written = value


def test_out_is_checked_before_it_is_written():
    r = _Array((3, 4))
    for out, error, message in ((_Array((4, 3)), RuntimeError, "shape"), ([1.0], TypeError, "_Array, as the result, got builtins.list"),
                                ((_Array((3, 4)), _Array((3, 4))), TypeError, "_Array, as the result, got builtins.tuple")):
        with pytest.raises(error, match=message):
            _api._write_out(None, "mean", r, out, "fast")
        for o in out if isinstance(out, tuple) else (out,):
            assert getattr(o, "written", None) is None
    elsewhere = _Array((3, 4))
    elsewhere.device = types.SimpleNamespace(id=1)
    with pytest.raises(RuntimeError, match="on device None"):
        _api._write_out(None, "mean", r, elsewhere, "fast")
    assert elsewhere.written is None
    pair = (_Array((3,)), _Array((3,), "int64"))
    for out in (_Array((3,)), (_Array((3,)),), (_Array((3,)), _Array((4,), "int64"))):
        with pytest.raises((TypeError, RuntimeError), match="tuple of 2|shape"):
            _api._write_out(None, "max", pair, out, "fast")
        assert all(o.written is None for o in (out if isinstance(out, tuple) else (out,)))
    good = _Array((3, 4))
    assert _api._write_out(None, "mean", r, good, "fast") is good and good.written is r
    assert _api._write_out(None, "mean", r, None, "fast") is r
    outs = (_Array((3,)), _Array((3,), "int64"))
    assert _api._write_out(None, "max", pair, outs, "fast") is outs
    assert outs[0].written is pair[0] and outs[1].written is pair[1]


def test_exact_sums_of_integers_into_floats_that_hold_them():
    C = _api
    for code, want in ((C._I8, C._F16), (C._U8, C._BF16), (C._I16, C._F32), (C._U16, C._F32), (C._I32, C._F64),
                       (C._U32, C._F64), (C._BOOL, C._F16), (C._I64, C._I64), (C._I32, C._I64)):
        assert C._check_mode("sum", "exact", "sum", code, want) == 2
    for code, want in ((C._I16, C._F16), (C._I16, C._BF16), (C._I32, C._F32), (C._I64, C._F64), (C._U64, C._F64)):
        with pytest.raises(RuntimeError, match="would round each"):
            C._check_mode("sum", "exact", "sum", code, want)
        assert C._check_mode("sum", "reproducible", "sum", code, want) == 1  # the same bits every time
    with pytest.raises(RuntimeError, match="no floating-point prod"):
        C._check_mode("prod", "reproducible", "prod", C._I32, C._F64)  # integers multiplied as doubles
    assert C._check_mode("prod", "exact", "prod", C._I32, C._I64) == 2


def test_a_cupy_out_takes_the_result_cast_as_numpy():
    numpy = pytest.importorskip("numpy")
    r = numpy.ones(3, numpy.float32)
    for mode in ("fast", "reproducible"):
        o = numpy.zeros(3, numpy.float16)
        assert _api._write_out(None, "mean", r, o, mode) is o and (o == 1).all()
    o = numpy.zeros(3, numpy.float16)
    with pytest.raises(RuntimeError, match="round it again"):
        _api._write_out(None, "mean", r, o, "exact")
    assert (o == 0).all()
    o = numpy.zeros(3, numpy.float64)
    assert _api._write_out(None, "mean", r, o, "exact") is o and (o == 1).all()
    o = numpy.zeros(3, numpy.float64)  # an exact integer sum is rounded once by the cast
    assert _api._write_out(None, "sum", numpy.ones(3, numpy.int64), o, "exact") is o and (o == 1).all()


@pytest.mark.parametrize("call", [
    lambda: fr.argmax([1.0, 2.0]), lambda: fr.argmin(3.0, dim=0), lambda: fr.mean(object()),
    lambda: fr.var([1.0], dim=0), lambda: fr.std(object(), correction=0), lambda: fr.norm([1.0], 1),
    lambda: fr.dot([1.0], [2.0]), lambda: fr.vdot(object(), object()),
])
def test_new_ops_refuse_non_arrays(call):
    with pytest.raises(TypeError, match="expected a CUDA array"):
        call()


def test_arg_dims_are_one_int_or_none():
    assert _api._family_dims("argmax", "argmax", None, 3) == (0, 1, 2)
    assert _api._family_dims("argmax", "argmax", -1, 3) == (2,)
    with pytest.raises(TypeError, match="int or None"):
        _api._family_dims("argmax", "argmax", (0, 1), 3)
    with pytest.raises(TypeError):
        _api._family_dims("max", "argmax", True, 3)
    with pytest.raises(IndexError):
        _api._family_dims("argmin", "argmin", 3, 3)
    assert _api._family_dims("mean", "mean", (0, -1), 3) == (0, 2)  # the stats take tuples as sum does


def test_arg_dim_none_reads_row_major_order():
    # dim=None on a contiguous tensor: one axis over every element, so the index is the flat index
    assert _api._fold((2, 3, 4), (12, 4, 1), {0, 1, 2}) == (1, 24, 1, 0, 1, 0)
    # a transposed one does not fold: it is copied in row-major order first
    assert _api._fold((4, 3), (1, 4), {0, 1}) is None


def test_corrections():
    assert _api._correction("var", None, None) == 1
    assert _api._correction("var", 0, None) == 0
    assert _api._correction("var", 2.0, None) == 2
    assert _api._correction("var", None, False) == 0
    assert _api._correction("var", None, True) == 1
    with pytest.raises(TypeError, match="not both"):
        _api._correction("var", 1, True)
    with pytest.raises(ValueError, match="non-negative integer"):
        _api._correction("var", -1, None)
    with pytest.raises(ValueError, match="non-negative integer"):
        _api._correction("std", 0.5, None)
    with pytest.raises(TypeError):
        _api._correction("std", "1", None)
    with pytest.raises(ValueError):
        fr.var(object(), correction=-1)


def test_norm_orders():
    for p in (0, 3, -math.inf, "nuc", True):
        with pytest.raises(ValueError, match="p must be"):
            fr.norm(object(), p)
    with pytest.raises(ValueError, match="p must be"):
        fr.norm(object(), ord=0.5)
    assert _api._NORMS[1] == "norm1" and _api._NORMS[2] == "norm2" and _api._NORMS["fro"] == "norm2"
    assert _api._NORMS[math.inf] == "norminf" and _api._NORMS[float("inf")] == "norminf"


def test_family_type_and_mode_rules():
    C = _api
    assert C._family_check("mean", "mean", C._F32, "fast", False) == 0
    assert C._family_check("argmax", "argmax", C._BF16, "reproducible", False) == 1
    assert C._family_check("norm", "norminf", C._F16, "reproducible", False) == 1
    assert C._family_check("argmax", "argmax", C._F32, "exact", False) == 2
    with pytest.raises(RuntimeError, match="reproducible"):
        C._family_check("std", "std", C._F64, "reproducible", False)
    assert C._family_check("var", "var", C._F32, "exact", False) == 2  # along any dims
    assert C._family_check("std", "std", C._F16, "exact", False) == 2  # into float16, rounded once by the engine
    with pytest.raises(RuntimeError, match="reproducible"):
        C._family_check("dot", "dot", C._F64, "reproducible", False)
    with pytest.raises(RuntimeError, match="'exact' has no form of this op yet"):
        C._family_check("var", "var", C._F64, "exact", False)
    # The L2 norm has both modes (over any dims; float64 refused).
    assert C._family_check("norm", "norm2", C._F32, "exact", False, C._F32) == 2
    assert C._family_check("norm", "norm2", C._BF16, "reproducible", False) == 1
    assert C._family_check("norm", "norm2", C._F16, "exact", False) == 2
    with pytest.raises(RuntimeError, match="no form of this op yet for float64"):
        C._family_check("norm", "norm2", C._F64, "reproducible", False)
    # The dot product has both modes for float32 (float16/bfloat16 inputs: converted by the caller).
    assert C._family_check("dot", "dot", C._F32, "exact", False) == 2
    assert C._family_check("vdot", "dot", C._BF16, "reproducible", False) == 1
    with pytest.raises(RuntimeError, match=r"rounded twice \(convert the inputs to float32"):
        C._family_check("dot", "dot", C._BF16, "exact", False)
    with pytest.raises(RuntimeError, match="no form of this op yet for float64"):
        C._family_check("dot", "dot", C._F64, "exact", False)
    # The L1 norm has the sum's modes; exact results are rounded once, into float32 or float64 (or a
    # float16/bfloat16 input's own type, the default).
    assert C._family_check("norm", "norm1", C._F32, "exact", False) == 2
    assert C._family_check("norm", "norm1", C._BF16, "exact", False) == 2
    with pytest.raises(RuntimeError, match=r"rounded twice \(pass dtype=float32\)"):
        C._family_check("norm", "norm1", C._F16, "exact", True, C._F16, C._BF16)
    with pytest.raises(RuntimeError, match="rounded twice$"):
        C._family_check("norm", "norm1", C._F64, "exact", True, C._I64, C._F64)  # int64 -> float64 can round
    assert C._family_check("norm", "norm1", C._F32, "exact", True, C._F32, C._F64) == 2
    assert C._family_check("norm", "norm1", C._F64, "reproducible", False) == 1
    assert C._family_check("norm", "norm1", C._BF16, "exact", True, C._BF16, C._F32) == 2
    assert C._family_check("norm", "norm1", C._F16, "reproducible", False, C._F16, C._F16) == 1
    # The mean too: the exact sum divided by the count, rounded once by the same rule.
    assert C._family_check("mean", "mean", C._F32, "reproducible", False) == 1
    assert C._family_check("mean", "mean", C._F64, "exact", False) == 2
    assert C._family_check("mean", "mean", C._F16, "exact", True, C._F16, C._F32) == 2
    assert C._family_check("mean", "mean", C._BF16, "exact", False) == 2
    for given, result in ((C._BF16, C._F16), (C._F64, C._F32), (C._F32, C._F16), (C._F32, C._BF16)):
        with pytest.raises(RuntimeError, match="rounded twice"):
            C._family_check("norm", "norm1", given, "exact", False, given, result)
    # What the engine writes in a float16/bfloat16 input's own type: the statistics and norms, every
    # mode (the dot product and the arg-extremes' values are not among them).
    for op in ("mean", "var", "std", "norm1", "norm2", "norminf"):
        assert C._narrow_stat(op, C._F16) and C._narrow_stat(op, C._BF16), op
        assert not C._narrow_stat(op, C._F32)
    assert not C._narrow_stat("dot", C._F16) and not C._narrow_stat("argmax", C._BF16)
    with pytest.raises(RuntimeError, match="floating point"):
        C._family_check("mean", "mean", C._I64, "fast", False)  # torch: mean of integers needs dtype=
    with pytest.raises(TypeError, match="dtype"):
        C._family_check("argmax", "argmax", C._BOOL, "fast", False)
    with pytest.raises(TypeError, match="dtype"):
        C._family_check("argmax", "argmax", C._U64, "fast", False)
    with pytest.raises(ValueError, match="'fast', 'reproducible' or 'exact'"):
        C._family_check("argmax", "argmax", C._F32, "Exact", False)
    for code in (C._I8, C._U8, C._I16, C._I32, C._I64, C._F16, C._BF16, C._F32, C._F64):
        C._family_check("argmin", "argmin", code, "fast", False)
    assert C._family_acc("mean", C._F16) == C._F32 and C._family_acc("std", C._F64) == C._F64
    assert C._family_acc("argmax", C._BF16) == C._BF16


def test_dot_argument_checks():
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        _api._dot_check("dot", (2, 3), (6,), "float32", "float32")
    with pytest.raises(RuntimeError, match="same dtype"):
        _api._dot_check("dot", (3,), (3,), "float32", "float64")
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        _api._dot_check("dot", (3,), (4,), "float32", "float32")
    _api._dot_check("dot", (0,), (0,), "float32", "float32")


def test_op_codes_match_the_module():
    assert _api._FAMILY == {"argmax": 16, "argmin": 17, "mean": 18, "var": 19, "std": 20, "norm1": 21, "norm2": 22,
                            "norminf": 23, "dot": 24}
    sig = _core.reduce_family.__doc__ or ""
    assert "temp_bytes" in sig and "temp_bytes" in (_core.reduce.__doc__ or "")


@pytest.mark.skipif(fr.is_available(), reason="a GPU is present (the GPU tier runs)")
def test_no_device_is_a_clear_runtime_error():
    with pytest.raises(RuntimeError, match="fastreduce: "):
        _core.reduce(11, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0, 0)
    with pytest.raises(RuntimeError, match="fastreduce: "):
        _core.reduce_family(11, 18, 0, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0, 0, 0)
    with pytest.raises(RuntimeError, match="fastreduce: "):
        _core.reduce(11, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0, 0, 0, 4096)


def test_cpu_torch_tensor_is_a_type_error():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="CUDA tensor"):
        fr.sum(torch.ones(3))


def test_unknown_mode_codes_are_value_errors():
    with pytest.raises(ValueError, match="mode code"):
        _core.reduce(11, 0, 3, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="mode code"):
        _core.reduce_family(11, 18, 0, -1, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0, 0, 0)


def test_unknown_codes_are_value_errors():
    with pytest.raises(ValueError, match="result kind"):
        _core.reduce_family(11, 18, 0, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 2, 0, 0)
    for code, op in ((10, 24), (10, 16), (11, 18)):  # narrow results: bfloat16/float16 stats and norms only
        with pytest.raises(ValueError, match="input's type"):
            _core.reduce_family(code, op, 0, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 1, 0, 0)
    with pytest.raises((ValueError, RuntimeError)):
        _core.reduce_family(11, 99, 0, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0, 0, 0)
    with pytest.raises((ValueError, RuntimeError)):
        _core.reduce_family(0, 18, 0, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0, 0, 0)  # bool has no mean


def test_torch_library_registration_needs_no_torch_at_import():
    import sys
    import subprocess
    code = ("import sys; sys.modules['torch'] = None; import fastreduce as fr; "
            "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_plans_for_the_torch_core():
    """_core.plan: a capsule of python/src/plan.hpp for fastreduce._torch_core; None past the dims
    a plan holds; unknown op and mode codes refused; the C interface exported."""
    p = _core.plan(11, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, (3, 4), 11, -1, False)
    assert type(p).__name__ == "PyCapsule" and "fastreduce._core.Plan" in repr(p)
    assert _core.plan(11, 16, 0, 0, 1, 10, 1, 10, 1, 1, 0, (), 11, -1, True) is not None
    assert _core.plan(11, 0, 0, 0, 1, 10, 1, 10, 1, 1, 0, (1,) * 65, 11, -1, False) is None
    with pytest.raises(ValueError, match="op code"):
        _core.plan(11, 7, 0, 0, 1, 10, 1, 10, 1, 1, 0, (), 11, -1, False)
    with pytest.raises(ValueError, match="mode code"):
        _core.plan(11, 0, 0, 5, 1, 10, 1, 10, 1, 1, 0, (), 11, -1, False)
    for bad in ((13, 11, -1, 0), (11, 13, -1, 0), (11, 11, 99, 0), (11, 11, -1, 3)):
        code, out_code, want_code, result = bad
        with pytest.raises(ValueError, match="type code|result kind"):
            _core.plan(code, 0, 0, 0, 1, 10, 1, 10, 1, 1, result, (), out_code, want_code, False)
    with pytest.raises(ValueError, match="result kind"):  # the family's kinds are 0 and 1
        _core.plan(10, 18, 0, 0, 1, 10, 1, 10, 1, 1, 2, (), 10, -1, False)
    assert "fastreduce._core._C_API" in repr(_core._C_API)
