"""The CPU tier: what works without a GPU (argument rules, the folding of dims into the engine's
axes, the messages), run in CI after `pip install .`."""
import pytest

import fastreduce as fr
from fastreduce import _api, _core


def test_import_and_api():
    assert fr.__version__
    for name in ("sum", "prod", "amin", "amax", "min", "max", "is_available"):
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


def test_modes_are_checked():
    with pytest.raises(ValueError, match="'fast' or 'reproducible'"):
        _api._check_mode("sum", "exact")


def test_min_max_with_dim_say_what_is_missing():
    with pytest.raises(NotImplementedError, match="amin"):
        fr.min(object(), dim=0)
    with pytest.raises(NotImplementedError, match="amax"):
        fr.max(object(), dim=1)


@pytest.mark.skipif(fr.is_available(), reason="a GPU is present (the GPU tier runs)")
def test_no_device_is_a_clear_runtime_error():
    with pytest.raises(RuntimeError, match="fastreduce: "):
        _core.reduce(11, 0, False, 0, 1, 10, 1, 10, 1, 1, 0, 0, 0)


def test_cpu_torch_tensor_is_a_type_error():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="CUDA tensor"):
        fr.sum(torch.ones(3))
