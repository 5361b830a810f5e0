"""The GPU tier: fastreduce against torch (float64 references) over shapes, dims, dtypes, strided
views, NaN, empty tensors, keepdim and out=, batch invariance, streams, CUDA graphs and
torch.compile; CuPy and JAX inputs. Skipped, with the reason, without a GPU or torch."""
import random

import pytest

import fastreduce as fr

if not fr.is_available():
    pytest.skip("no CUDA device found: the GPU tier is skipped", allow_module_level=True)
torch = pytest.importorskip("torch", reason="the GPU tier compares against torch, which is not installed")

DEV = "cuda"
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def rand(shape, dtype, seed):
    g = torch.Generator(device=DEV).manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g, device=DEV) < 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, device=DEV, dtype=torch.float32) * 2 - 1).to(dtype)
    lo, hi = (0, 100) if dtype == torch.uint8 else (-100, 100)
    return torch.randint(lo, hi, shape, generator=g, device=DEV, dtype=torch.int64).to(dtype)


def check_close(got, x, op, dim, keepdim):
    ref_fn = {"sum": torch.sum, "prod": torch.prod, "amin": torch.amin, "amax": torch.amax}[op]
    dim = dim if dim is not None else tuple(range(x.dim()))  # torch's all-dims form, keepdim honoured
    if op in ("amin", "amax"):
        want = ref_fn(x, dim=dim, keepdim=keepdim)
        assert got.dtype == want.dtype
        assert torch.equal(got, want) or torch.allclose(got.double(), want.double(), equal_nan=True)
        return
    want_dtype = ref_fn(x, dim=dim, keepdim=keepdim).dtype
    assert got.dtype == want_dtype, (got.dtype, want_dtype)
    assert got.shape == ref_fn(x, dim=dim, keepdim=keepdim).shape
    if x.dtype.is_floating_point:
        ref = ref_fn(x.double(), dim=dim, keepdim=keepdim)
        n = max(1, x.numel() // max(1, ref.numel()))
        eps = {torch.float32: 6e-8, torch.float64: 1.2e-16, torch.float16: 6e-8, torch.bfloat16: 6e-8}[x.dtype]
        if got.dtype in (torch.float16, torch.bfloat16):  # rounded once to the narrow type at the end
            eps_out = 1e-3 if got.dtype == torch.float16 else 8e-3
            tol = ref.abs() * eps_out + x.double().abs().sum(dim=dim, keepdim=keepdim) * 64 * eps
        else:
            absum = x.double().abs().sum(dim=dim, keepdim=keepdim)
            tol = absum * 64 * eps * (1 if op == "sum" else n) + 1e-300
        assert ((got.double() - ref).abs() <= tol + 1e-30).all(), (got, ref)
    else:
        ref = ref_fn(x, dim=dim, keepdim=keepdim)
        assert torch.equal(got, ref), (got, ref)


SHAPES = [(0,), (1,), (31,), (33,), (1000003,), (7, 0), (4, 5), (33, 129), (3, 4, 5), (2, 3, 4, 5), (1 << 20,), (257, 4100)]


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool])
def test_every_dtype_over_random_dims(dtype):
    rng = random.Random(1234)
    for i, shape in enumerate(SHAPES):
        x = rand(shape, dtype, i)
        dims = [None] + [d for d in range(len(shape))] + ([tuple(rng.sample(range(len(shape)), 2))] if len(shape) > 2 else [])
        for dim in dims:
            for keepdim in (False, True):
                check_close(fr.sum(x, dim=dim, keepdim=keepdim), x, "sum", dim, keepdim)
                if all(n > 0 for n in shape):  # torch.amax has no identity for empty dims either
                    check_close(fr.amax(x, dim=dim, keepdim=keepdim), x, "amax", dim, keepdim)
                    check_close(fr.amin(x, dim=dim, keepdim=keepdim), x, "amin", dim, keepdim)


def test_hypothesis_shapes_and_dims():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=60, deadline=None)
    @hypothesis.given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=4), data=st.data(),
                      dtype=st.sampled_from([torch.float32, torch.float64, torch.int32, torch.bfloat16]))
    def run(shape, data, dtype):
        x = rand(tuple(shape), dtype, 7)
        dims = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda d: d % len(shape), max_size=len(shape)))
        dim = tuple(dims) if dims else None
        keepdim = data.draw(st.booleans())
        check_close(fr.sum(x, dim=dim, keepdim=keepdim), x, "sum", dim, keepdim)

    run()


def test_strided_views():
    x = rand((64, 96, 5), torch.float32, 3)
    views = [x.transpose(0, 1), x[:, ::2], x[..., 1:], x.permute(2, 0, 1), x[:, 3], x.transpose(0, 2)[1:, ::3]]
    for v in views:
        for dim in (None, 0, 1, -1, (0, 1), (0, -1)):
            check_close(fr.sum(v, dim=dim), v, "sum", dim, False)
    ex = torch.ones(1, 5, device=DEV).expand(1000, 5)  # a zero stride
    assert torch.equal(fr.sum(ex, dim=0), torch.full((5,), 1000.0, device=DEV))


def test_nan_and_inf():
    x = rand((100, 50), torch.float32, 5)
    x[3, 7] = float("nan")
    s = fr.sum(x, dim=1)
    assert torch.isnan(s[3]) and not torch.isnan(s[:3]).any() and not torch.isnan(s[4:]).any()
    assert torch.isnan(fr.amax(x)) and torch.isnan(fr.amin(x, dim=0)[7])
    y = torch.tensor([1.0, float("inf"), 2.0], device=DEV)
    assert fr.sum(y).item() == float("inf")


def test_dim_forms():
    x = rand((6, 7), torch.float32, 15)
    assert torch.allclose(fr.sum(x, dim=()), x.sum(), atol=1e-4)  # torch: () is every dim
    assert torch.allclose(fr.sum(x, dim=[0]), x.sum(dim=0), atol=1e-5)
    with pytest.raises(TypeError):
        fr.sum(x, dim=True)
    fr.sum(x, dim=1)  # a cached plan for dim=1 must not let dim=True through
    with pytest.raises(TypeError):
        fr.sum(x, dim=True)


def test_empty():
    assert fr.sum(torch.empty(0, device=DEV)).item() == 0
    assert fr.prod(torch.empty(0, device=DEV)).item() == 1
    assert fr.sum(torch.empty(3, 0, device=DEV), dim=1).tolist() == [0, 0, 0]
    assert fr.sum(torch.empty(0, 4, device=DEV), dim=1).shape == (0,)
    with pytest.raises(RuntimeError):
        fr.amax(torch.empty(0, device=DEV))


def test_keepdim_out_and_dtypes():
    x = rand((8, 16, 4), torch.float32, 9)
    out = torch.empty(8, 1, 4, device=DEV)
    r = fr.sum(x, dim=1, keepdim=True, out=out)
    assert r is out
    assert torch.allclose(out, x.sum(dim=1, keepdim=True), atol=1e-5)
    with pytest.raises(RuntimeError, match="shape"):
        fr.sum(x, dim=1, out=torch.empty(3, device=DEV))
    assert fr.sum(rand((10,), torch.int32, 1)).dtype == torch.int64
    assert fr.sum(rand((10,), torch.bool, 1)).dtype == torch.int64
    h = rand((1000,), torch.float16, 2)
    assert fr.sum(h).dtype == torch.float16
    assert fr.sum(h, dtype=torch.float32).dtype == torch.float32
    assert abs(fr.sum(h, dtype=torch.float32).item() - h.double().sum().item()) < 1e-3
    big = torch.full((1 << 20,), 2 ** 20, dtype=torch.int32, device=DEV)  # wraps in int32, not in int64
    assert fr.sum(big).item() == 2 ** 40


def test_errors():
    with pytest.raises(TypeError, match="CUDA tensor"):
        fr.sum(torch.ones(3))
    with pytest.raises(TypeError, match="dtype"):
        fr.sum(torch.ones(3, device=DEV, dtype=torch.complex64))
    with pytest.raises(IndexError):
        fr.sum(torch.ones(3, 4, device=DEV), dim=2)
    with pytest.raises(ValueError):
        fr.sum(torch.ones(3, device=DEV), mode="exact")
    with pytest.raises(RuntimeError, match="Reproducible"):
        fr.prod(torch.ones(3, device=DEV), mode="reproducible")


def test_reproducible_batch_invariance():
    x = rand((37, 10007), torch.float32, 11)
    rows = fr.sum(x, dim=1, mode="reproducible")
    for i in (0, 5, 36):
        alone = fr.sum(x[i].clone(), mode="reproducible")
        assert rows[i].view(torch.int32).item() == alone.view(torch.int32).item()
    sub = fr.sum(x[10:20], dim=1, mode="reproducible")
    assert torch.equal(sub.view(torch.int32), rows[10:20].view(torch.int32))
    cols = fr.sum(x.t(), dim=0, mode="reproducible")  # the same rows, read as strided columns
    assert torch.equal(cols.view(torch.int32), rows.view(torch.int32))


def test_two_streams():
    xs = [rand((1 << 22,), torch.float32, s) for s in (1, 2)]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    outs = []
    for x, s in zip(xs, streams):
        with torch.cuda.stream(s):
            outs.append(fr.sum(x, mode="reproducible"))
    torch.cuda.synchronize()
    for x, o in zip(xs, outs):
        assert abs(o.item() - x.double().sum().item()) < 1e-2


def test_cuda_graph_capture():
    x = rand((64, 4096), torch.float32, 12)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fr.sum(x, dim=1)  # warm-up: sizes the temporary storage for this stream
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        y = fr.sum(x, dim=1)
    x.copy_(rand((64, 4096), torch.float32, 13))
    g.replay()
    torch.cuda.synchronize()
    assert torch.allclose(y, x.sum(dim=1), atol=1e-3)


def test_torch_compile():
    if not hasattr(torch, "compile"):
        pytest.skip("torch.compile is not available")

    def f(x):
        return fr.sum(x, dim=0) * 2

    x = rand((128, 33), torch.float32, 14)
    got = torch.compile(f, fullgraph=True)(x)  # no graph break: the custom op is in the graph
    assert torch.allclose(got, x.sum(dim=0) * 2, atol=1e-4)
    assert hasattr(torch.ops.fastreduce, "reduce")  # registered through torch.library


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    x = cupy.random.rand(1000, 37).astype(cupy.float32)
    r = fr.sum(x, dim=0)
    assert isinstance(r, cupy.ndarray) and r.shape == (37,)
    assert cupy.allclose(r, x.sum(axis=0), atol=1e-4)
    assert fr.sum(cupy.arange(10, dtype=cupy.int32)).dtype == cupy.int64
    assert float(fr.amax(x[:, ::3])) == float(x[:, ::3].max())


def test_jax_arrays():
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU here")
    import jax.numpy as jnp
    x = jnp.arange(1000, dtype=jnp.float32).reshape(100, 10)
    r = fr.sum(x, dim=1)
    assert isinstance(r, jax.Array)
    assert jnp.allclose(r, x.sum(axis=1))
