"""The GPU tier: fastreduce against torch (float64 references) over shapes, dims, dtypes, strided
views, NaN, empty tensors, keepdim and out=, batch invariance, streams, CUDA graphs and
torch.compile; CuPy and JAX inputs. Skipped, with the reason, without a GPU or torch."""
import math
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
    fr.sum(x, dim=1)  # a cached plan for dim=1 must not let dim=True (or 1.0) through
    fr.sum(x, dim=(1,))
    fr.amax(x, dim=1)
    fr.mean(x, dim=1)
    for bad in (True, 1.0, (True,), [1.0]):
        for f in (fr.sum, fr.amax, fr.mean):
            with pytest.raises(TypeError):
                f(x, dim=bad)


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
    # int32 sums and products accumulate in int64 inside the engine (no widening copy), on every layout.
    m = torch.randint(-2 ** 31, 2 ** 31 - 1, (513, 300), dtype=torch.int32, device=DEV)
    f = torch.tensor([-1, 1, 3], dtype=torch.int32, device=DEV)[torch.randint(0, 3, (513, 300), device=DEV)]  # odd: never 0 mod 2^64
    for v, w, d in ((m, f, 1), (m, f, 0), (m.t(), f.t(), 1), (m[::2, 1:], f[::2, 1:], (0, 1))):
        assert torch.equal(fr.sum(v, dim=d), v.sum(dim=d)), d
        assert torch.equal(fr.prod(w, dim=d if isinstance(d, int) else None),
                           w.prod(dim=d) if isinstance(d, int) else w.prod()), d


def test_errors():
    with pytest.raises(TypeError, match="CUDA tensor"):
        fr.sum(torch.ones(3))
    with pytest.raises(TypeError, match="dtype"):
        fr.sum(torch.ones(3, device=DEV, dtype=torch.complex64))
    with pytest.raises(IndexError):
        fr.sum(torch.ones(3, 4, device=DEV), dim=2)
    with pytest.raises(ValueError):
        fr.sum(torch.ones(3, device=DEV), mode="Exact")
    with pytest.raises(RuntimeError, match="reproducible"):
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
    u = cupy.full(1 << 20, 2 ** 31, dtype=cupy.uint32)  # NumPy's rule: uint32 sums into uint64, no wrap
    assert fr.sum(u).dtype == cupy.uint64 and int(fr.sum(u)) == 2 ** 51
    # dtype=int64 on int32 (and uint32): read as they are, the engine's 64-bit sums, NumPy's bits.
    i = cupy.random.default_rng(5).integers(-2 ** 31, 2 ** 31 - 1, (301, 7), dtype=cupy.int32)
    for d in (None, 0, 1):
        got = fr.sum(i, dim=d, dtype=cupy.int64)
        assert got.dtype == cupy.int64 and bool((got == i.sum(axis=d, dtype=cupy.int64)).all()), d
    assert int(fr.sum(u, dtype=cupy.int64)) == 2 ** 51
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


# ---------------------------------------------------------------------------------------------
# CUDA graphs: capture with no warm-up, on torch.cuda.graph's own side stream; storage from the
# graph's pool, never the eager cache.

def _seeded(shape, dtype=torch.float32):
    return rand(shape, dtype, random.randrange(1 << 30))


def test_graph_capture_without_warm_up():
    x = _seeded((64, 4096))
    z = _seeded((33, 1000))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # torch's default side stream: fastreduce has never run on it
        y = fr.sum(x, dim=1)
        m, i = fr.max(x, dim=0)
        v = fr.var(z, dim=1)
        n = fr.norm(z, 2)
        a = fr.argmin(z)
        d = fr.dot(x[0], x[1])
        c = fr.sum(x, dim=0, mode="reproducible")
    for _ in range(3):
        x.copy_(_seeded((64, 4096)))
        z.copy_(_seeded((33, 1000)))
        g.replay()
        torch.cuda.synchronize()
        xd, zd = x.double(), z.double()
        assert torch.allclose(y.double(), xd.sum(dim=1), atol=1e-3)
        want = torch.max(x, dim=0)
        assert torch.equal(m, want.values) and torch.equal(i, want.indices)
        assert torch.allclose(v.double(), zd.var(dim=1), rtol=1e-5)
        assert abs(n.item() - torch.linalg.vector_norm(zd).item()) < 1e-4 * abs(n.item())
        assert a.item() == torch.argmin(z).item()
        assert abs(d.item() - (xd[0] * xd[1]).sum().item()) < 1e-3
        assert torch.allclose(c.double(), xd.sum(dim=0), atol=1e-4)


def test_graph_replay_on_one_stream_while_eager_calls_run_on_another():
    x = _seeded((256, 8192))
    s_capture = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s_capture):
        y = fr.sum(x, dim=1)
        am = fr.argmax(x, dim=1)
    xs = [_seeded((256, 8192)) for _ in range(4)]
    a, b = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    for k in range(4):
        x.copy_(xs[k])
        torch.cuda.synchronize()
        with torch.cuda.stream(a):
            g.replay()
        with torch.cuda.stream(b):  # eager calls of the same sizes, at the same time, on another stream
            eager = [fr.sum(e, dim=1) for e in xs] + [fr.argmax(e, dim=1) for e in xs]
        with torch.cuda.stream(s_capture):  # and on the capture stream itself (its eager cache)
            on_capture = [fr.sum(e, dim=1) for e in xs]
        torch.cuda.synchronize()
        assert torch.allclose(y.double(), xs[k].double().sum(dim=1), atol=1e-3)
        assert torch.equal(am, torch.argmax(xs[k], dim=1))
        for e, r in zip(xs, eager[:4]):
            assert torch.allclose(r.double(), e.double().sum(dim=1), atol=1e-3)
        for e, r in zip(xs, eager[4:]):
            assert torch.equal(r, torch.argmax(e, dim=1))
        for e, r in zip(xs, on_capture):
            assert torch.allclose(r.double(), e.double().sum(dim=1), atol=1e-3)


def test_graph_memory_is_returned_with_the_graph():
    import gc
    x = _seeded((1 << 22,))
    fr.sum(x)  # the eager cache of this stream exists before the baseline
    torch.cuda.synchronize()
    gc.collect()
    base = torch.cuda.memory_allocated()
    for _ in range(3):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = fr.sum(x, mode="reproducible")
            w = fr.std(x.view(1024, -1), dim=1)
        g.replay()
        torch.cuda.synchronize()
        assert abs(y.item() - x.double().sum().item()) < 1e-2
        assert torch.allclose(w.double(), x.view(1024, -1).double().std(dim=1), rtol=1e-5)
        del g, y, w
        gc.collect()
        torch.cuda.synchronize()
        assert torch.cuda.memory_allocated() == base


def test_capture_with_two_graphs_of_different_sizes():
    xs = [_seeded((n,)) for n in (1000, 1 << 20, 1 << 24)]
    graphs, outs = [], []
    for x in xs:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            outs.append(fr.mean(x))
        graphs.append(g)
    for g in reversed(graphs):
        g.replay()
    torch.cuda.synchronize()
    for x, o in zip(xs, outs):
        assert abs(o.item() - x.double().mean().item()) < 1e-6


def test_cupy_graph_capture():
    cupy = pytest.importorskip("cupy")
    x = cupy.random.rand(128, 1000).astype(cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        # CuPy's pool may not cudaMalloc under capture: eager calls leave blocks of the sizes the
        # captured calls take from it (outputs and fastreduce's temporary storage, kept for the graph)
        fr.sum(x, dim=1), fr.argmax(x, dim=1)
        s.synchronize()
        s.begin_capture()
        y = fr.sum(x, dim=1)
        m = fr.argmax(x, dim=1)
        g = s.end_capture()
    x[...] = cupy.random.rand(128, 1000).astype(cupy.float32)
    g.launch(s)
    s.synchronize()
    assert cupy.allclose(y, x.sum(axis=1), atol=1e-3)
    assert cupy.array_equal(m, x.argmax(axis=1))


# ---------------------------------------------------------------------------------------------
# The family ops against torch (float64 references).

TOL = {torch.float32: 2e-6, torch.float64: 1e-13, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
SHAPES_F = [(1,), (31,), (1000003,), (4, 5), (33, 129), (3, 4, 5), (2, 3, 4, 5), (257, 4100), (5, 1, 7)]


def dims_of(shape, rng):
    nd = len(shape)
    out = [None] + list(range(nd)) + [-1]
    if nd > 1:
        out.append(tuple(rng.sample(range(-nd, 0), 2)))
    return out


def close(got, want, dtype, scale=None):
    """got (any dtype) against want (float64): relative to |want| (or scale) at dtype's precision."""
    assert got.shape == want.shape, (got.shape, want.shape)
    g, w = got.double(), want.double()
    both_nan = torch.isnan(g) & torch.isnan(w)
    ref = (w.abs() if scale is None else scale) + 1e-30
    bad = ~both_nan & ~((g - w).abs() <= TOL[dtype] * ref + 1e-300) & ~(g == w)
    assert not bad.any(), (got[bad][:5], want[bad][:5])


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean_var_std_against_torch(dtype):
    rng = random.Random(random.randrange(1 << 30))
    for shape in SHAPES_F:
        x = _seeded(shape, dtype) + 3  # an offset: the variance must keep its digits
        xd = x.double()
        for dim in dims_of(shape, rng):
            for keepdim in (False, True):
                r = fr.mean(x, dim=dim, keepdim=keepdim)
                ref = torch.mean(x, dim=dim, keepdim=keepdim)
                assert r.dtype == ref.dtype == dtype
                close(r, torch.mean(xd, dim=dim, keepdim=keepdim), dtype)
                for correction in (0, 1, 2):
                    for f, tf in ((fr.var, torch.var), (fr.std, torch.std)):
                        r = f(x, dim=dim, correction=correction, keepdim=keepdim)
                        want = tf(xd, dim=dim, correction=correction, keepdim=keepdim)
                        assert r.dtype == dtype and r.shape == tf(x, dim=dim, correction=correction,
                                                                  keepdim=keepdim).shape
                        close(r, want, dtype)
    x = _seeded((50, 7), dtype)
    assert torch.equal(fr.var(x, dim=0, unbiased=False), fr.var(x, dim=0, correction=0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_norms_against_torch(dtype):
    rng = random.Random(random.randrange(1 << 30))
    for shape in SHAPES_F:
        x = _seeded(shape, dtype)
        xd = x.double()
        for dim in dims_of(shape, rng):
            for keepdim in (False, True):
                for p in (1, 2, float("inf")):
                    r = fr.norm(x, p, dim=dim, keepdim=keepdim)
                    want = torch.linalg.vector_norm(xd, p, dim=dim, keepdim=keepdim)
                    # above the type's range the result is inf (the norm is rounded once, in dtype)
                    want = torch.where(want > torch.finfo(dtype).max * 1.001, float("inf"), want)
                    assert r.dtype == dtype
                    close(r, want, dtype)
                    assert torch.equal(fr.norm(x, ord=p, dim=dim, keepdim=keepdim), r)
    x = _seeded((100,), dtype)
    assert torch.equal(fr.norm(x, "fro"), fr.norm(x))
    assert torch.equal(fr.norm(x, float("inf"), mode="reproducible"), fr.norm(x, float("inf")))


@pytest.mark.parametrize("dtype", FLOATS)
def test_norm1_has_the_sums_modes(dtype):
    """norm(p=1) in the reproducible and exact modes: the sum's kernels on |x|, so its bits equal
    fr.sum(x.abs()) in the same mode on every shape; exact results round once into float32/64."""
    wide = {} if dtype in (torch.float32, torch.float64) else {"dtype": torch.float32}
    for shape, dim in (((100003,), None), ((257, 1000), 1), ((1000, 257), 0), ((64, 33, 5), (0, 2)), ((40, 5000), 1)):
        x = _seeded(shape, dtype) - 0.5  # both signs
        for mode in ("reproducible", "exact"):
            r = fr.norm(x, 1, dim=dim, mode=mode, **wide)
            s = fr.sum(x.abs(), dim=dim, mode=mode, **wide)
            assert r.dtype == s.dtype and torch.equal(r, s), (shape, dim, mode)
            close(r, torch.linalg.vector_norm(x.double(), 1, dim=dim), r.dtype)
    if wide:  # in their own type too, rounded once (test_narrow_statistics_in_every_mode_...)
        assert fr.norm(_seeded((100,), dtype), 1, mode="exact").dtype == dtype
        assert fr.norm(_seeded((100,), dtype), 1, mode="reproducible").dtype == dtype
    if dtype == torch.float64:
        with pytest.raises(RuntimeError, match="no form of this op"):
            fr.norm(_seeded((100, 7), dtype), 2, dim=1, mode="exact")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_norm2_has_the_exact_modes(dtype):
    """norm(p=2) in both modes: the square root of the exact sum of squares (here math.fsum of the
    squares, each exact in double: the correctly rounded double sum), rounded to double, then to
    float32; the same bits in both modes, for every length and alignment, and for every output
    along dims (rows, columns, a strided view)."""
    import struct
    wide = {} if dtype == torch.float32 else {"dtype": torch.float32}
    for n in (0, 1, 33, 4097, 100003, (1 << 20) + 3):
        for offset in (0, 1):
            x = (_seeded((n + offset,), dtype) - 0.5) * 3
            x = x[offset:]
            values = x.double().cpu().tolist()
            root = math.sqrt(math.fsum(v * v for v in values))
            want = struct.unpack("f", struct.pack("f", root))[0]  # round to nearest float32
            for mode in ("exact", "reproducible"):
                r = fr.norm(x, 2, mode=mode, **wide)
                assert r.dtype == torch.float32 and r.item() == want, (n, offset, mode, r.item(), want)
    # One value of a strided view (copied to one contiguous run first), and of every dim of a 2-D array.
    x = (_seeded((20001,), dtype) - 0.5) * 3
    for v in (x[::2], x[:20000].reshape(100, 200)):
        values = v.double().cpu().flatten().tolist()
        want = struct.unpack("f", struct.pack("f", math.sqrt(math.fsum(a * a for a in values))))[0]
        assert fr.norm(v, 2, mode="exact", **wide).item() == want
        assert fr.norm(v, 2, dim=tuple(range(v.dim())), mode="reproducible", **wide).item() == want
    if wide:  # in their own type too, rounded once (test_narrow_statistics_in_every_mode_...)
        assert fr.norm(_seeded((100,), dtype), 2, mode="exact").dtype == dtype
    # Along dims: each output's own exact norm; the same outputs of the transposed view.
    for shape, dim in (((257, 1000), 1), ((1000, 257), 0), ((64, 33, 5), (0, 2)), ((3, 40000), 1)):
        x = (_seeded(shape, dtype) - 0.5) * 3
        reduced = (dim,) if isinstance(dim, int) else dim
        keep = [d for d in range(x.dim()) if d not in reduced]
        rows = x.double().permute(*keep, *reduced).reshape(math.prod(x.shape[d] for d in keep), -1)
        want = [struct.unpack("f", struct.pack("f", math.sqrt(math.fsum(a * a for a in r))))[0]
                for r in rows.cpu().tolist()]
        last = x.dim() - 1
        swapped = tuple({0: last, last: 0}.get(d, d) for d in reduced)
        for mode in ("exact", "reproducible"):
            r = fr.norm(x, 2, dim=dim, mode=mode, **wide)
            assert r.dtype == torch.float32 and r.flatten().cpu().tolist() == want, (shape, dim, mode)
            t = fr.norm(x.transpose(0, -1), 2, dim=swapped, mode=mode, **wide)
            assert t.flatten().cpu().tolist() == want, (shape, dim, mode, "transposed")


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean_has_the_sums_modes(dtype):
    """mean in the reproducible and exact modes: exact is the exact sum divided by the count,
    rounded once (here against fractions.Fraction's quotient of the doubles), reproducible has the
    same bits for a row as for its elements alone; float16/bfloat16 take dtype=float32 in exact."""
    import fractions
    wide = {} if dtype in (torch.float32, torch.float64) else {"dtype": torch.float32}
    for shape, dim in (((100003,), None), ((257, 1000), 1), ((1000, 257), 0), ((64, 33, 5), (0, 2)), ((40, 5000), 1)):
        x = (_seeded(shape, dtype) - 0.5) * 3
        for mode in ("reproducible", "exact"):
            r = fr.mean(x, dim=dim, mode=mode, **wide)
            want_dtype = torch.float64 if dtype == torch.float64 else torch.float32
            assert r.dtype == want_dtype, (shape, dim, mode)
            close(r, x.double().mean(dim=dim), r.dtype)
            if mode == "reproducible" and dim == 1 and len(shape) == 2:
                row = x[7].clone()  # the row alone, elsewhere in memory
                assert torch.equal(fr.mean(row, mode=mode, **wide), r[7])
        if len(shape) == 1:
            exact = fractions.Fraction(0)
            for v in x.double().tolist():
                exact += fractions.Fraction(v)
            exact /= x.numel()
            r = fr.mean(x, mode="exact", **wide)
            want = torch.tensor(float(exact), dtype=torch.float64)  # Fraction -> float rounds once, to nearest even
            if r.dtype == torch.float32:
                # float(Fraction) is a double: round the Fraction itself into float32 through its neighbours
                lo = want.float()
                cand = [lo.item(), torch.nextafter(lo, torch.tensor(math.inf)).item(),
                        torch.nextafter(lo, torch.tensor(-math.inf)).item()]
                best = min(cand, key=lambda c: (abs(fractions.Fraction(c) - exact),
                                                int(torch.tensor(c, dtype=torch.float32).view(torch.int32)) & 1))
                assert r.item() == best, (r.item(), best)
            else:
                assert r.item() == float(exact)
    if wide:  # in their own type too, rounded once (test_narrow_statistics_in_every_mode_...)
        assert fr.mean(_seeded((100,), dtype), mode="exact").dtype == dtype
        assert fr.mean(_seeded((100,), dtype), mode="reproducible").dtype == dtype
    if dtype == torch.float64:
        with pytest.raises(RuntimeError, match="no form of this op"):
            fr.var(_seeded((100, 3), dtype), dim=0, mode="exact")


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64, torch.uint8, torch.int8, torch.int16])
def test_argmax_argmin_min_max_against_torch(dtype):
    rng = random.Random(random.randrange(1 << 30))
    for shape in SHAPES_F + [(0, 3)]:
        x = _seeded(shape, dtype)
        for dim in [None] + list(range(len(shape))) + [-1]:
            if x.numel() == 0 or (dim is not None and shape[dim] == 0):
                continue
            for keepdim in (False, True):
                for f, tf in ((fr.argmax, torch.argmax), (fr.argmin, torch.argmin)):
                    r = f(x, dim=dim, keepdim=keepdim)
                    want = tf(x, dim=dim, keepdim=keepdim)
                    assert r.dtype == torch.int64 and r.shape == want.shape
                    assert torch.equal(r, want), (shape, dim)
                if dim is not None:
                    for f, tf in ((fr.max, torch.max), (fr.min, torch.min)):
                        r = f(x, dim, keepdim)
                        want = tf(x, dim, keepdim)
                        assert type(r) is type(want)  # torch.return_types.max / min
                        assert torch.equal(r.values, want.values) and torch.equal(r.indices, want.indices)
                        v, i = r
                        assert v is r.values and i is r.indices
    # ties: the first index, as torch
    t = torch.tensor([[1, 3, 3, 0], [2, 2, 2, 2]], device=DEV).to(dtype)
    assert fr.argmax(t, dim=1).tolist() == [1, 0] and fr.argmin(t).item() == 3
    assert fr.argmax(t, mode="reproducible").item() == 1


def test_argmax_large_and_reproducible():
    x = _seeded((1 << 24,))
    assert fr.argmax(x).item() == torch.argmax(x).item()
    x[12345677] = 5
    assert fr.argmax(x, mode="reproducible").item() == 12345677
    y = _seeded((300, 70001), torch.bfloat16)
    assert torch.equal(fr.argmin(y, dim=1), torch.argmin(y, dim=1))
    assert torch.equal(fr.argmin(y.t(), dim=0), torch.argmin(y.t(), dim=0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_dot_vdot_against_torch(dtype):
    for n in (0, 1, 7, 1000, 1000003):
        a, b = _seeded((n,), dtype), _seeded((n,), dtype)
        r = fr.dot(a, b)
        want = torch.dot(a.double(), b.double())
        assert r.dtype == dtype and r.shape == ()
        close(r, want, dtype, scale=(a.double() * b.double()).abs().sum())
        assert torch.equal(fr.vdot(a, b), r)
    m = _seeded((1000, 3), dtype)
    close(fr.dot(m[:, 0], m[:, 2]), torch.dot(m[:, 0].double(), m[:, 2].double()), dtype,
          scale=(m[:, 0].double() * m[:, 2].double()).abs().sum())  # strided
    close(fr.dot(m[:, 1], m[:, 2].contiguous()), torch.dot(m[:, 1].double(), m[:, 2].double()), dtype,
          scale=(m[:, 1].double() * m[:, 2].double()).abs().sum())  # different strides


def _float32_of(total, scale_bits):
    """total / 2^scale_bits (a Python int over a power of two: an exact value) rounded once to
    float32, ties to even (normal results only, as here)."""
    negative, t = total < 0, abs(total)
    if t == 0:
        return 0.0
    shift = t.bit_length() - 24
    m = t >> shift if shift > 0 else t << -shift
    if shift > 0:
        rest, half = t & ((1 << shift) - 1), 1 << (shift - 1)
        m += 1 if rest > half or (rest == half and m & 1) else 0
    v = math.ldexp(m, shift - scale_bits)
    return -v if negative else v


def test_dot_has_the_exact_modes():
    """dot in both modes for float32: the exact sum of the products (Python integers) rounded once
    to float32, for every length, alignment and stride; among them a sum that a double would round
    onto a float32 tie (1 + 2^-24 + 2^-60); float16/bfloat16 in exact mode ask for float32 inputs."""
    def exact(a, b):
        total = 0
        for u, v in zip(a.double().cpu().tolist(), b.double().cpu().tolist()):
            num, den = (u * v).as_integer_ratio()  # every product of two floats is a double
            total += num * ((1 << 400) // den)
        return _float32_of(total, 400)
    for n in (0, 1, 33, 4097, 100003):
        for offset_a, offset_b in ((0, 0), (1, 1), (0, 1)):  # both aligned (vector loads), both off, one off
            a, b = _seeded((n + offset_a,)) - 0.5, _seeded((n + offset_b,)) - 0.5
            a, b = a[offset_a:], b[offset_b:]
            want = exact(a, b)
            for mode in ("exact", "reproducible"):
                r = fr.dot(a, b, mode=mode)
                assert r.dtype == torch.float32 and r.item() == want, (n, offset_a, offset_b, mode, r.item(), want)
    pairs = torch.randint(1, 128, (2, 20000), device=DEV).float()
    a = torch.cat([torch.tensor([1.0, 2.0 ** -12, 2.0 ** -30], device=DEV), pairs[0], pairs[0]])
    b = torch.cat([torch.tensor([1.0, 2.0 ** -12, 2.0 ** -30], device=DEV), pairs[1], -pairs[1]])
    order = torch.randperm(a.numel(), device=DEV)
    a, b = a[order], b[order]
    assert exact(a, b) == 1 + 2.0 ** -23
    assert fr.dot(a, b, mode="exact").item() == 1 + 2.0 ** -23
    assert fr.vdot(a[::2], b[::2], mode="exact").item() == exact(a[::2], b[::2])  # strided: copied first
    for dtype in (torch.float16, torch.bfloat16):
        with pytest.raises(RuntimeError, match="convert the inputs to float32"):
            fr.dot(_seeded((10,), dtype), _seeded((10,), dtype), mode="exact")
        a, b = _seeded((5001,), dtype), _seeded((5001,), dtype)  # reproducible: the exact float32, in their dtype
        assert fr.dot(a, b, mode="reproducible").item() == fr.dot(a.float(), b.float(), mode="exact").to(dtype).item()
    with pytest.raises(RuntimeError, match="float64"):
        fr.dot(_seeded((10,), torch.float64), _seeded((10,), torch.float64), mode="exact")


def test_var_std_have_the_exact_modes():
    """var/std of float32 in both modes: N = n sum x^2 - (sum x)^2 exactly (Python integers),
    rounded once to double, divided by n and by n - correction, the square root for std, rounded to
    float32; to one value at every length, offset and correction and for a strided view, and along
    dims (each output of its own elements: short and long rows and columns, transposed views, an
    empty dim); float64 refused (float16/bfloat16: test_narrow_statistics_in_every_mode_...)."""
    import struct
    def want(x, correction, root):
        values = x.double().cpu().flatten().tolist()
        n = len(values)
        if n == 0:
            return math.nan
        if n - correction <= 0:  # torch: M2 / 0, inf (NaN where M2 = 0)
            return math.inf * want(x, 0, root)
        s1 = sum(int(v * 2.0 ** 149) for v in values)  # exact: float32 values are multiples of 2^-149
        s2 = sum(int(v * v * 2.0 ** 298) for v in values)
        v = (((n * s2 - s1 * s1) / (1 << 298)) / n) / (n - correction)  # int / int: rounded once to double
        v = math.sqrt(v) if root else v
        return struct.unpack("f", struct.pack("f", v))[0]
    for n in (0, 1, 2, 33, 4097, 100003):
        for offset in (0, 1):
            x = (_seeded((n + offset,)) - 0.5) * 3 + 1000
            x = x[offset:]
            for correction in (0, 1, 2):
                for root, f in ((False, fr.var), (True, fr.std)):
                    w = want(x, correction, root)
                    for mode in ("exact", "reproducible"):
                        r = f(x, correction=correction, mode=mode)
                        assert r.dtype == torch.float32
                        assert (math.isnan(w) and math.isnan(r.item())) or r.item() == w, (n, offset, correction, root,
                                                                                           mode, r.item(), w)
    x = _seeded((300, 7))
    assert fr.var(x[:, 2], mode="exact").item() == want(x[:, 2], 1, False)  # strided: copied first
    assert fr.std(x, dim=(0, 1), mode="exact").item() == want(x, 1, True)
    # Along dims: each output is its elements' exact variance (short rows and columns, long ones,
    # transposed views, an empty dim).
    for shape, dim in (((300, 7), 1), ((300, 7), 0), ((5, 9000), 1), ((9000, 5), 0), ((4, 6, 5), (0, 2)), ((3, 0), 1)):
        x = (_seeded(shape) - 0.5) * 3 + 1000
        for view in (x, x.transpose(0, -1)):
            d = dim if view is x else tuple(view.dim() - 1 - k for k in ((dim,) if isinstance(dim, int) else dim))
            source = d if isinstance(d, tuple) else (d,)
            moved = view.movedim(source, tuple(range(-1, -1 - len(source), -1)))  # the reduced dims last
            outputs = math.prod(moved.shape[:moved.dim() - len(source)])
            rows = moved.reshape(outputs, -1) if moved.numel() else moved.reshape(outputs, 0)
            for correction, root, f in ((1, False, fr.var), (0, True, fr.std), (2, False, fr.var)):
                wants = [want(rows[q], correction, root) for q in range(outputs)]
                for mode in ("exact", "reproducible"):
                    got = f(view, dim=d, correction=correction, mode=mode).flatten().tolist()
                    for q, (g, w) in enumerate(zip(got, wants)):
                        assert (math.isnan(w) and math.isnan(g)) or g == w, (shape, dim, q, correction, mode, g, w)
    for dtype in (torch.float16, torch.bfloat16):
        assert fr.var(_seeded((10,), dtype), mode="exact").dtype == dtype
        assert fr.var(_seeded((10, 3), dtype), dim=0, mode="exact").dtype == dtype
    with pytest.raises(RuntimeError, match="float64"):
        fr.std(_seeded((10,), torch.float64), mode="reproducible")


def test_family_on_strided_and_transposed_views():
    x = _seeded((64, 96, 5))
    views = [x.transpose(0, 1), x[:, ::2], x[..., 1:], x.permute(2, 0, 1), x[:, 3], x.transpose(0, 2)[1:, ::3],
             x.flip(0)]
    for v in views:
        vd = v.double()
        for dim in (None, 0, 1, -1):
            close(fr.mean(v, dim=dim), vd.mean(dim=dim), torch.float32)
            close(fr.std(v, dim=dim), vd.std(dim=dim), torch.float32)
            close(fr.norm(v, 1, dim=dim), torch.linalg.vector_norm(vd, 1, dim=dim), torch.float32)
            assert torch.equal(fr.argmax(v, dim=dim), torch.argmax(v, dim=dim))
            assert torch.equal(fr.argmin(v, dim=dim), torch.argmin(v, dim=dim))
        for dim in ((0, 1), (0, -1)):
            close(fr.var(v, dim=dim), vd.var(dim=dim), torch.float32)
    ex = torch.arange(5.0, device=DEV).expand(1000, 5)  # a zero stride
    assert torch.equal(fr.argmax(ex, dim=1), torch.full((1000,), 4, device=DEV))
    assert torch.equal(fr.mean(ex, dim=0), torch.arange(5.0, device=DEV))


def test_family_nan_inf_and_empty():
    x = _seeded((100, 50))
    x[3, 7] = float("nan")
    x[5, 2] = float("inf")
    for f, tf in ((fr.mean, torch.mean), (fr.var, torch.var), (fr.std, torch.std)):
        r, want = f(x, dim=1), tf(x.double(), dim=1)
        assert torch.equal(torch.isnan(r), torch.isnan(want)) and torch.equal(torch.isinf(r), torch.isinf(want))
    assert torch.equal(fr.argmax(x, dim=1), torch.argmax(x, dim=1))  # NaN wins, as torch
    assert torch.equal(fr.argmin(x, dim=0), torch.argmin(x, dim=0))
    assert fr.argmax(x).item() == torch.argmax(x).item() == 3 * 50 + 7
    assert torch.isnan(fr.norm(x, 2)) and torch.isnan(fr.norm(x, float("inf")))
    e = torch.empty(0, device=DEV)
    assert torch.isnan(fr.mean(e)) and torch.isnan(fr.var(e)) and fr.norm(e).item() == 0 and fr.dot(e, e).item() == 0
    assert torch.isnan(fr.var(torch.ones(1, device=DEV)))  # n <= correction: NaN, as torch
    assert fr.mean(torch.empty(0, 4, device=DEV), dim=1).shape == (0,)
    assert fr.argmax(torch.empty(0, 4, device=DEV), dim=1).shape == (0,)
    assert torch.isnan(fr.mean(torch.empty(3, 0, device=DEV), dim=1)).all()

    def same_error(f, tf, *args, **kwargs):
        with pytest.raises(Exception) as want:
            tf(*args, **kwargs)
        with pytest.raises(want.type):
            f(*args, **kwargs)

    same_error(fr.argmax, torch.argmax, torch.empty(0, device=DEV))
    same_error(fr.argmax, torch.argmax, torch.empty(0, 3, device=DEV), dim=0)
    same_error(fr.max, torch.max, torch.empty(0, 3, device=DEV), 0)
    same_error(fr.argmin, torch.argmin, torch.ones(3, 4, device=DEV), dim=2)
    same_error(fr.mean, torch.mean, torch.ones(3, 4, device=DEV, dtype=torch.int64))
    same_error(fr.var, torch.var, torch.ones(3, device=DEV, dtype=torch.int32))
    same_error(fr.dot, torch.dot, torch.ones(3, device=DEV), torch.ones(4, device=DEV))
    same_error(fr.dot, torch.dot, torch.ones(3, device=DEV), torch.ones(3, device=DEV, dtype=torch.float64))
    same_error(fr.dot, torch.dot, torch.ones(2, 3, device=DEV), torch.ones(6, device=DEV))
    same_error(fr.mean, torch.mean, torch.ones(3, 4, device=DEV), dim=(0, 0))


def test_family_errors_and_dtypes():
    x = _seeded((10, 6))
    with pytest.raises(TypeError, match="CUDA tensor"):
        fr.argmax(torch.ones(3))
    with pytest.raises(TypeError, match="dtype"):
        fr.mean(torch.ones(3, device=DEV, dtype=torch.complex64))
    with pytest.raises(TypeError):
        fr.argmax(x, dim=(0, 1))  # torch: one dim
    with pytest.raises(TypeError):
        fr.argmax(torch.ones(3, device=DEV, dtype=torch.bool))
    with pytest.raises(ValueError):
        fr.norm(x, 3)
    with pytest.raises(ValueError):
        fr.mean(x, mode="compensated")
    for mode in ("reproducible", "exact"):
        for f in (lambda: fr.var(x.double(), mode=mode),
                  lambda: fr.norm(x.double(), 2, dim=1, mode=mode),
                  lambda: fr.dot(x[0].double(), x[1].double(), mode=mode)):
            with pytest.raises(RuntimeError, match=f"(?i){mode}"):
                f()
    with pytest.raises(ValueError, match="correction"):
        fr.var(x, correction=-1)
    i = torch.randint(0, 100, (10, 6), device=DEV)
    assert fr.mean(i, dtype=torch.float32).dtype == torch.float32
    assert abs(fr.mean(i, dtype=torch.float64).item() - i.double().mean().item()) < 1e-12
    h = _seeded((1000,), torch.float16)
    assert fr.mean(h, dtype=torch.float32).dtype == torch.float32
    assert abs(fr.mean(h, dtype=torch.float32).item() - h.double().mean().item()) < 1e-6
    assert fr.norm(h, dtype=torch.float32).dtype == torch.float32
    vals, idx = torch.empty(6, device=DEV), torch.empty(6, device=DEV, dtype=torch.int64)
    r = fr.max(x, 0, out=(vals, idx))
    assert r[0] is vals and torch.equal(idx, torch.argmax(x, dim=0))
    vals.fill_(-3)
    for bad in (torch.empty(6, device=DEV), torch.zeros(1, dtype=torch.int64, device=DEV).expand(6),
                torch.empty(5, dtype=torch.int64, device=DEV)):  # a wrong second out: the first is not written
        with pytest.raises(RuntimeError):
            fr.max(x, 0, out=(vals, bad))
        assert (vals == -3).all()
    assert fr.argmax(torch.tensor(3.0, device=DEV)).item() == 0  # 0-d, as torch


def _raises(call):
    try:
        call()
    except (RuntimeError, TypeError):
        return True
    return False


# Every op with out=: (fastreduce's call, torch's call, the result's dtype for float32 input).
_OUT_CALLS = [
    (lambda x, y, **k: fr.sum(x, 1, **k), lambda x, y, **k: torch.sum(x, 1, **k), torch.float32),
    (lambda x, y, **k: fr.prod(x, 1, **k), lambda x, y, **k: torch.prod(x, 1, **k), torch.float32),
    (lambda x, y, **k: fr.amax(x, 1, **k), lambda x, y, **k: torch.amax(x, 1, **k), torch.float32),
    (lambda x, y, **k: fr.amin(x, 1, **k), lambda x, y, **k: torch.amin(x, 1, **k), torch.float32),
    (lambda x, y, **k: fr.argmax(x, 1, **k), lambda x, y, **k: torch.argmax(x, 1, **k), torch.int64),
    (lambda x, y, **k: fr.argmin(x, 1, **k), lambda x, y, **k: torch.argmin(x, 1, **k), torch.int64),
    (lambda x, y, **k: fr.mean(x, 1, **k), lambda x, y, **k: torch.mean(x, 1, **k), torch.float32),
    (lambda x, y, **k: fr.var(x, 1, **k), lambda x, y, **k: torch.var(x, 1, **k), torch.float32),
    (lambda x, y, **k: fr.std(x, 1, correction=0, **k), lambda x, y, **k: torch.std(x, 1, correction=0, **k),
     torch.float32),
    (lambda x, y, **k: fr.norm(x, 1, 1, **k), lambda x, y, **k: torch.linalg.vector_norm(x, 1, 1, **k),
     torch.float32),
    (lambda x, y, **k: fr.norm(x, 2, 1, **k), lambda x, y, **k: torch.linalg.vector_norm(x, 2, 1, **k),
     torch.float32),
    (lambda x, y, **k: fr.norm(x, math.inf, 1, **k), lambda x, y, **k: torch.linalg.vector_norm(x, math.inf, 1, **k),
     torch.float32),
    (lambda x, y, **k: fr.dot(x[0], y[0], **k), lambda x, y, **k: torch.dot(x[0], y[0], **k), torch.float32),
    (lambda x, y, **k: fr.vdot(x[0], y[0], **k), lambda x, y, **k: torch.vdot(x[0], y[0], **k), torch.float32),
]


@pytest.mark.parametrize("which", range(len(_OUT_CALLS)))
def test_out_on_every_op_as_torch(which):
    """out= on every op: the result written into out (poisoned first) and out returned; a dtype
    torch refuses refused (RuntimeError), a wrong shape or device refused, out untouched then; sum,
    prod and mean take out's dtype as torch does (the result computed in it)."""
    fn, ref, acc = _OUT_CALLS[which]
    x = _seeded((37, 1001)) * (0.02 if which == 1 else 0.5) + (1.0 if which == 1 else 0.0)  # prod: near 1
    y = _seeded((37, 1001))
    want = fn(x, y)
    assert want.dtype == acc and want.shape == ref(x, y).shape
    out = torch.full(want.shape, -7, dtype=acc, device=DEV)
    assert fn(x, y, out=out) is out
    assert torch.equal(out, want), which
    for bad in (torch.float64, torch.float16, torch.int64, torch.float32):
        if bad == acc:
            continue
        o = torch.full(want.shape, 3, dtype=bad, device=DEV)
        # torch takes it (out's dtype is the dtype), but for an integer out of mean, which torch
        # fills with a mean computed in integers and fastreduce refuses
        theirs = o.clone()
        if not _raises(lambda: ref(x, y, out=theirs)) and not (which == 6 and not bad.is_floating_point):
            assert which in (0, 1, 6, 7, 8), ("torch takes an out of", bad, which)  # sum prod mean var std
            assert fn(x, y, out=o) is o
            assert torch.equal(o, fn(x.to(bad), y)), (which, bad)  # the input read in out's dtype
            if bad.is_floating_point:  # torch's own out= of that dtype, to the dtype's precision
                tol = 1e-12 if bad == torch.float64 else 2e-3
                assert torch.allclose(o.double(), theirs.double(), rtol=tol, atol=tol), (which, bad)
            else:
                assert torch.equal(o, theirs), (which, bad)
            continue
        with pytest.raises(RuntimeError, match="out tensor to have dtype|out must have a floating"):
            fn(x, y, out=o)
        assert (o == 3).all()
    o = torch.full((3,), 5, dtype=acc, device=DEV)
    with pytest.raises(RuntimeError, match="shape"):
        fn(x, y, out=o)
    o = torch.full(tuple(want.shape), 5, dtype=acc)  # on the host
    with pytest.raises(RuntimeError, match="on cuda"):
        fn(x, y, out=o)
    assert (o == 5).all()
    with pytest.raises(TypeError, match="out must be"):
        fn(x, y, out=[1.0])
    if want.dim() > 0:
        shared = torch.full((1,), 6, dtype=acc, device=DEV).expand(want.shape)  # one element seen many times
        with pytest.raises(RuntimeError, match="share memory"):
            fn(x, y, out=shared)
        assert (shared == 6).all()
    with torch.inference_mode():
        frozen = torch.full(want.shape, 6, dtype=acc, device=DEV)
    with pytest.raises(RuntimeError, match="inference"):
        fn(x, y, out=frozen)
    assert (frozen == 6).all()
    if which in (0, 6):  # a dtype= out's dtype differs from: torch's error
        o = torch.zeros(want.shape, dtype=torch.float64, device=DEV)
        assert _raises(lambda: ref(x, y, dtype=torch.float32, out=o))
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
            fn(x, y, dtype=torch.float32, out=o)


def test_out_keeps_exact_results_rounded_once():
    """mode='exact' with out=: out's dtype is the result's (sum and mean: it is dtype=), so an
    out narrower than the input's values is refused, not written through a second rounding; an
    int8 sum into an int64 out reads the input as it is."""
    x = _seeded((64, 999))
    for fn in (fr.sum, fr.mean):
        o = torch.full((64,), 9, dtype=torch.float16, device=DEV)
        with pytest.raises(RuntimeError, match="rounded|rounds"):
            fn(x, 1, out=o, mode="exact")
        assert (o == 9).all()
        o = torch.empty(64, dtype=torch.float64, device=DEV)
        assert torch.equal(fn(x, 1, out=o, mode="exact"), fn(x, 1, dtype=torch.float64, mode="exact"))
    with pytest.raises(RuntimeError, match="rounded twice"):
        fr.var(x, out=torch.empty((), dtype=torch.float16, device=DEV), mode="exact")
    h = x.to(torch.bfloat16)
    o = torch.empty(64, dtype=torch.bfloat16, device=DEV)
    assert torch.equal(fr.norm(h, 1, 1, out=o, mode="exact"), fr.norm(h, 1, 1, mode="exact"))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        fr.norm(h, 1, out=torch.empty((), dtype=torch.float32, device=DEV), mode="exact")
    o = torch.empty((), dtype=torch.float32, device=DEV)  # var's out dtype is its dtype: bfloat16 -> float32 exact
    assert torch.equal(fr.var(h, out=o, mode="exact"), fr.var(h.float(), mode="exact"))
    i = rand((64, 999), torch.int8, 5)
    o = torch.empty(64, dtype=torch.int64, device=DEV)
    assert torch.equal(fr.sum(i, 1, out=o), torch.sum(i, 1))
    w = rand((64, 999), torch.int32, 6) * 300000  # values a float32 does not hold
    o = torch.full((64,), 7.0, device=DEV)
    with pytest.raises(RuntimeError, match="would round each"):
        fr.sum(w, 1, out=o, mode="exact")
    assert (o == 7).all()
    h16 = rand((64, 999), torch.int16, 7)  # every int16 is a float32: the exact sum rounded once
    o = torch.empty(64, device=DEV)
    assert torch.equal(fr.sum(h16, 1, out=o, mode="exact"), torch.sum(h16, 1).float())
    with pytest.raises(RuntimeError, match="no floating-point prod"):
        fr.prod(h16, 1, out=torch.empty(64, dtype=torch.float64, device=DEV), mode="reproducible")


def test_integer_sums_into_other_integers_read_the_input_as_it_is():
    """dtype= (or a torch out=) of another integer type: the engine's sum or product cast, the
    same bits as torch's (modular), with no copy of the input first (the allocator's peak)."""
    x = rand((1 << 22,), torch.int8, 11).view(256, -1)
    for op, dt in (("sum", torch.int16), ("sum", torch.uint8), ("prod", torch.int32), ("sum", torch.int32)):
        fn, ref = getattr(fr, op), getattr(torch, op)
        want = ref(x, 1, dtype=dt)
        assert torch.equal(fn(x, 1, dtype=dt), want), (op, dt)
        o = torch.empty(256, dtype=dt, device=DEV)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        assert fn(x, 1, out=o) is o and torch.equal(o, want), (op, dt)
        torch.cuda.synchronize()
        assert torch.cuda.max_memory_allocated() - base < x.numel(), (op, dt)  # no converted copy
    big = (rand((4096,), torch.int64, 12) + 2 ** 40).view(64, 64)
    assert torch.equal(fr.sum(big, 1, dtype=torch.int32), torch.sum(big, 1, dtype=torch.int32))


def test_type_checks_come_before_the_mode_and_the_mode_before_any_copy():
    """A host tensor is a TypeError whatever the mode says of its dtype=; a call the mode refuses
    converts nothing first (the allocator's peak), for the sums and for the statistics."""
    with pytest.raises(TypeError, match="CUDA tensor"):
        fr.sum(torch.ones(8), dtype=torch.float16, mode="exact")
    with pytest.raises(TypeError, match="CUDA tensor"):
        fr.norm(torch.ones(8, dtype=torch.float16), dtype=torch.float64, mode="reproducible")
    h = rand((1 << 22,), torch.float16, 13)
    i = rand((1 << 22,), torch.int32, 14)
    for call in (lambda: fr.sum(h, dtype=torch.float64, mode="exact").item(),  # allowed: the control
                 lambda: fr.norm(h, dtype=torch.float64, mode="reproducible"),
                 lambda: fr.norm(h, dtype=torch.float64, mode="exact"),
                 lambda: fr.sum(i, dtype=torch.float32, mode="exact"),
                 lambda: fr.prod(i, dtype=torch.float64, mode="exact")):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        try:
            call()
            refused = False
        except RuntimeError:
            refused = True
        torch.cuda.synchronize()
        grew = torch.cuda.max_memory_allocated() - base
        if refused:
            assert grew == 0, grew
        else:
            assert grew >= h.numel() * 8, grew  # float16 into float64: the converted copy, seen


def test_cupy_out_as_numpy():
    cupy = pytest.importorskip("cupy")
    numpy = pytest.importorskip("numpy")
    x = cupy.random.default_rng(random.randrange(1 << 30)).random((64, 999), dtype=cupy.float32)
    u = cupy.arange(64 * 999, dtype=cupy.uint16).reshape(64, 999)
    o = cupy.empty(64, dtype=cupy.int64)
    assert fr.sum(u, 1, out=o) is o and (o.get() == u.get().sum(axis=1)).all()  # uint64 cast into int64
    o = cupy.empty(64, dtype=cupy.float16)
    assert fr.mean(x, 1, out=o) is o and (o == fr.mean(x, 1).astype(cupy.float16)).all()
    o = cupy.full(64, 5, dtype=cupy.float16)
    with pytest.raises(RuntimeError, match="round it again"):
        fr.mean(x, 1, out=o, mode="exact")
    with pytest.raises(RuntimeError, match="round it again"):
        fr.sum(x, 1, out=o, mode="exact")
    assert (o == 5).all()
    o = cupy.empty(64, dtype=cupy.float64)
    assert fr.sum(x, 1, out=o, mode="exact") is o and (o == fr.sum(x, 1, mode="exact")).all()
    vals, idx = cupy.empty(64, dtype=cupy.float32), cupy.empty(64, dtype=cupy.int64)
    r = fr.max(x, 1, out=(vals, idx))
    assert r[0] is vals and (idx == x.argmax(axis=1)).all() and (vals == x.max(axis=1)).all()
    host = numpy.zeros(64, dtype=numpy.int64)
    vals[...] = -1
    with pytest.raises(TypeError, match="out must be a cupy.ndarray, as the result, got numpy.ndarray"):
        fr.max(x, 1, out=(vals, host))
    assert (vals == -1).all() and (host == 0).all()
    o = cupy.empty(64, dtype=cupy.int64)
    assert fr.argmin(x, 1, out=o) is o and (o == x.argmin(axis=1)).all()


def test_family_cached_plans_are_safe():
    x = _seeded((33, 65))
    for _ in range(3):  # the second and third calls take the cached plans
        assert torch.equal(fr.argmax(x, dim=1), torch.argmax(x, dim=1))
        m = fr.max(x, 1)
        assert torch.equal(m.indices, torch.argmax(x, dim=1)) and torch.equal(m.values, x.amax(dim=1))
        close(fr.var(x, dim=0, correction=0), x.double().var(dim=0, correction=0), torch.float32)
        close(fr.var(x, dim=0, correction=2), x.double().var(dim=0, correction=2), torch.float32)
        close(fr.std(x, dim=0), x.double().std(dim=0), torch.float32)
        with pytest.raises(TypeError):
            fr.argmax(x, dim=True)


def test_family_cupy_and_jax():
    cupy = pytest.importorskip("cupy")
    x = cupy.random.rand(1000, 37).astype(cupy.float32)
    assert cupy.array_equal(fr.argmax(x, dim=0), x.argmax(axis=0))
    assert fr.argmax(x, dim=0).dtype == cupy.int64
    assert cupy.allclose(fr.mean(x, dim=0), x.mean(axis=0), rtol=1e-6)
    assert cupy.allclose(fr.var(x, dim=1), x.var(axis=1, ddof=1), rtol=1e-5)
    assert cupy.allclose(fr.std(x, dim=1, correction=0), x.std(axis=1), rtol=1e-5)
    assert cupy.allclose(fr.norm(x, 1, dim=1), cupy.abs(x).sum(axis=1), rtol=1e-5)
    m = fr.max(x, dim=1)
    assert cupy.array_equal(m.values, x.max(axis=1)) and cupy.array_equal(m.indices, x.argmax(axis=1))
    assert abs(float(fr.dot(x[:, 0], x[:, 1])) - float(x[:, 0] @ x[:, 1])) < 1e-3
    h = x.astype(cupy.float16)
    assert fr.mean(h).dtype == cupy.float16
    try:
        jax = pytest.importorskip("jax")
        if not any(d.platform == "gpu" for d in jax.devices()):
            pytest.skip("JAX has no GPU here")
    except RuntimeError:
        pytest.skip("JAX has no GPU backend here")
    import jax.numpy as jnp
    j = jnp.arange(1000, dtype=jnp.float32).reshape(100, 10)
    assert (fr.argmax(j, dim=1) == jnp.argmax(j, axis=1)).all()
    assert jnp.allclose(fr.mean(j, dim=0), j.mean(axis=0))
    assert jnp.allclose(fr.std(j, dim=1), j.std(axis=1, ddof=1))
    mm = fr.min(j, dim=0)
    assert (mm.values == j.min(axis=0)).all() and (mm.indices == j.argmin(axis=0)).all()


def test_family_torch_compile():
    if not hasattr(torch, "compile"):
        pytest.skip("torch.compile is not available")

    def f(x):
        m = fr.max(x, dim=1)
        return fr.mean(x, dim=0) * 2, fr.argmax(x, dim=1), fr.std(x), m.values + 1, m.indices

    x = _seeded((128, 33))
    got = torch.compile(f, fullgraph=True)(x)
    want = (x.mean(dim=0) * 2, x.argmax(dim=1), x.std(), x.amax(dim=1) + 1, x.argmax(dim=1))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.allclose(g.double(), w.double(), atol=1e-5)
    assert hasattr(torch.ops.fastreduce, "family") and hasattr(torch.ops.fastreduce, "minmax")


def test_torch_compile_with_out():
    if not hasattr(torch, "compile"):
        pytest.skip("torch.compile is not available")

    def f(x, o, i, v, d):
        fr.sum(x, 0, out=o)
        fr.argmax(x, 1, out=i)
        fr.var(x, 1, out=v)
        fr.mean(x, 1, out=d)  # float64: the input read as float64
        return o * 2

    x = _seeded((128, 33))
    o, i, v = torch.empty(33, device=DEV), torch.empty(128, dtype=torch.int64, device=DEV), torch.empty(128, device=DEV)
    d = torch.empty(128, dtype=torch.float64, device=DEV)
    got = torch.compile(f, fullgraph=True)(x, o, i, v, d)
    assert torch.allclose(got, x.sum(dim=0) * 2, atol=1e-4) and torch.equal(o, fr.sum(x, 0))
    assert torch.equal(i, x.argmax(dim=1)) and torch.allclose(v, x.var(dim=1), rtol=1e-5)
    assert torch.allclose(d, x.double().mean(dim=1), rtol=1e-14, atol=1e-15)


# Each planned call of the C++ path (fastreduce._torch_core) and of the Python path: op, args, kwargs.
_PLANNED = [
    ("sum", (), {"dim": 1}), ("sum", (), {}), ("amax", (), {"dim": 0}), ("prod", (), {"dim": 1}),
    ("argmax", (), {"dim": 1}), ("argmin", (), {}), ("max", (1,), {}), ("min", (0,), {"keepdim": True}),
    ("mean", (), {"dim": 1}), ("var", (), {"dim": 0, "correction": 0}), ("std", (), {}),
    ("norm", (1,), {"dim": 1}), ("norm", (), {}), ("norm", (math.inf,), {"dim": 0}),
]


def _planned_results(x):
    return [getattr(fr, op)(x, *a, **k) for op, a, k in _PLANNED]


def _same(a, b):
    if isinstance(a, tuple):
        return all(_same(u, v) for u, v in zip(a, b)) and type(a) is type(b)
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize("path", ["c", "py"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_planned_calls(path, dtype):
    """The second call of a shape takes its plan: the C++ path (results allocated by
    fastreduce._torch_core, where it is built) or the Python one. Its results equal the first
    call's bit for bit (types, shapes, named tuples); under capture on torch's side stream its
    temporary storage comes from the graph's pool, and the memory returns with the graph."""
    from fastreduce import _api
    _api._torch_module()
    tc = _api._tc
    if path == "c" and tc is None:
        pytest.skip("fastreduce._torch_core is not built (pip install --no-build-isolation . against torch)")
    saved = dict(_api._plans), dict(_api._fplans)
    _api._forget_plans()
    _api._tc = tc if path == "c" else None
    try:
        x = _seeded((37, 1029), dtype)  # odd sizes; the plans are new for this test
        first = _planned_results(x)
        planned = [p for p in list(_api._plans.values()) + list(_api._fplans.values())]
        assert len(planned) == len(_PLANNED)
        assert all((p[-1] is not None) == (path == "c") for p in planned)
        if path == "c":  # remembered in C++ under the call's own arguments, and only under them
            assert tc.planned(0, 0, 0, x, 1, False, "fast") is not None  # sum(x, dim=1)
            assert tc.planned(16, 0, True, x, 1, False, "fast") is not None  # max(x, 1)
            for odd in ((0, 0, 0, x, True, False, "fast"), (0, 0, 0, x, 1, 1, "fast"), (0, 0, 0, x, 1, False, "Fast"),
                        (0, 0, 0, x, 1.0, False, "fast"), (0, 0, 0, x.t(), 1, False, "fast"),
                        (0, 0, 0, x.cpu(), 1, False, "fast"), (0, 0, 0, x[:, 1:], 1, False, "fast")):
                assert tc.planned(*odd) is None
        second = _planned_results(x)
        for (op, a, k), u, v in zip(_PLANNED, first, second):
            assert _same(u, v), (op, a, k)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):  # torch's side stream, planned calls
            captured = _planned_results(x)
        for _ in range(2):
            x.copy_(_seeded((37, 1029), dtype))
            g.replay()
            torch.cuda.synchronize()
            eager = _planned_results(x)
            for (op, a, k), u, v in zip(_PLANNED, captured, eager):
                assert _same(u, v), (op, a, k)
        import gc
        del eager
        gc.collect()
        torch.cuda.synchronize()
        with_graph = torch.cuda.memory_allocated()
        del captured
        gc.collect()
        kept = torch.cuda.memory_allocated()
        g2 = torch.cuda.CUDAGraph()  # the same captured calls again, then the graph freed
        with torch.cuda.graph(g2):
            captured = _planned_results(x)
        g2.replay()
        torch.cuda.synchronize()
        del g2, captured
        gc.collect()
        torch.cuda.synchronize()
        assert torch.cuda.memory_allocated() == kept, (with_graph, kept, torch.cuda.memory_allocated())
    finally:
        _api._tc = tc
        _api._forget_plans()
        _api._plans.update(saved[0])
        _api._fplans.update(saved[1])


_FULL = [("sum", (), {}), ("amax", (), {}), ("argmax", (), {}), ("mean", (), {}), ("var", (), {}), ("norm", (), {})]


def _kernels_of(fn):
    """The names of the CUDA kernels fn() launches (torch.profiler; None where it records none)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return names or None


def test_eager_full_reductions_are_one_launch_up_to_8_mb():
    """The module's eager storage carries the engine's finish counter: from 256 KB to 8 MB a full
    reduction is one kernel (its grid's last block combines); above, the blocks' partials go to a
    combine kernel, as under capture."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the 8 MB limit is sm_90's (4 MB elsewhere)")
    small, large = _seeded(((1 << 20) + 1,)), _seeded((3 * (1 << 20) + 7,))  # 4 MB and 12 MB of floats
    fr.sum(small), fr.sum(large), fr.var(small)  # plans made, modules loaded
    found = _kernels_of(lambda: fr.sum(small))
    if found is None:
        pytest.skip("torch.profiler records no CUDA kernels here")
    assert sum("fast_reduce_kernel" in k for k in found) == 1 and not any("combine_partials" in k for k in found), found
    found = _kernels_of(lambda: fr.var(small))
    assert len(found) == 1 and not any("combine_partials" in k for k in found), found
    found = _kernels_of(lambda: fr.sum(large))
    assert any("combine_partials" in k for k in found), found


def test_int32_sums_with_dtype_int64_read_the_input_as_it_is():
    """dtype=torch.int64 (or uint64) on int32/uint32 sums and products: the engine accumulates in 64
    bits already, so the input is read in place, with no widening copy first, and the bits are
    torch's."""
    g = torch.Generator(device=DEV).manual_seed(41)
    m = torch.randint(-2 ** 31, 2 ** 31 - 1, (513, 301), dtype=torch.int32, device=DEV, generator=g)
    f = torch.tensor([-1, 1, 3], dtype=torch.int32, device=DEV)[torch.randint(0, 3, (513, 301), device=DEV, generator=g)]
    for d in (None, 0, 1):
        got = fr.sum(m, dim=d, dtype=torch.int64)
        assert got.dtype == torch.int64 and torch.equal(got, m.sum(dim=d, dtype=torch.int64)), d
        got = fr.prod(f, dim=d, dtype=torch.int64)
        assert got.dtype == torch.int64 and torch.equal(got, f.prod(dim=d, dtype=torch.int64) if d is not None
                                                            else f.prod(dtype=torch.int64)), d
    found = _kernels_of(lambda: fr.sum(m, dtype=torch.int64))
    if found is None:
        pytest.skip("torch.profiler records no CUDA kernels here")
    engine = lambda names: all("reduce" in k or "combine" in k for k in names)  # noqa: E731
    assert found and engine(found), found  # no elementwise copy
    converted = _kernels_of(lambda: fr.sum(m, dtype=torch.float64))  # a real conversion does show
    assert not engine(converted), converted


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_full_reductions_of_several_blocks_eager_and_captured(dtype):
    """Eager calls over several blocks finish in the grid's last block (the finish counter of
    the module's cached storage: one launch); captured ones, whose storage comes from the graph's
    pool, leave the partials to a combine kernel. The bits are the same either way, call after
    call on one counter, and close to torch's."""
    sizes = [(1 << 18) + 3, (1 << 20) + 1, 3 * (1 << 20) + 7]
    xs = [_seeded((n,), dtype) for n in sizes]
    eager = [[getattr(fr, op)(x, *a, **k) for op, a, k in _FULL] for x in xs]
    again = [[getattr(fr, op)(x, *a, **k) for op, a, k in _FULL] for x in xs]  # the same counter, reused
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        captured = [[getattr(fr, op)(x, *a, **k) for op, a, k in _FULL] for x in xs]
    g.replay()
    torch.cuda.synchronize()
    for x, e, r, c in zip(xs, eager, again, captured):
        for (op, _, _), u, v, w in zip(_FULL, e, r, c):
            assert _same(u, v) and _same(u, w), (op, x.numel(), u, v, w)
            if op == "argmax":
                assert x[u] == x.max() and (x[:u] < x[u]).all(), (op, x.numel())  # the first maximum
                continue
            want = getattr(torch, op)(x.double()).item()
            got = u.double().item()
            narrow = 2.0 ** -8 * abs(want) if dtype == torch.bfloat16 else 0.0  # the result's own rounding
            scale = {"sum": x.double().abs().sum().item(), "mean": x.double().abs().mean().item(),
                     "amax": 0.0, "var": 10 * abs(want), "norm": abs(want)}[op]
            assert abs(got - want) <= 1e-5 * scale + narrow, (op, x.numel(), got, want)


def test_torch_compile_reduce_overhead():
    """mode="reduce-overhead": torch's CUDA graphs (cudagraph trees) capture the custom ops with no
    warm-up of fastreduce's own; replays read new inputs."""
    if not hasattr(torch, "compile"):
        pytest.skip("torch.compile is not available")

    def f(x):
        return fr.sum(x, dim=1), fr.var(x, dim=0), fr.argmin(x, dim=1)

    g = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    for _ in range(4):
        x = _seeded((256, 1000))
        s, v, a = g(x)
        assert torch.allclose(s.double(), x.double().sum(dim=1), atol=1e-3)
        assert torch.allclose(v.double(), x.double().var(dim=0), rtol=1e-5)
        assert torch.equal(a, torch.argmin(x, dim=1))
        s, v, a = s.clone(), v.clone(), a.clone()  # cudagraph trees reuse outputs across replays


def _exact_rounded(values, bits):
    """The exact sum of float32/float64 values (a NumPy array), rounded once to nearest even into
    float32 (bits 32) or float64: Python integers in units of 2^-1074, then exact comparisons."""
    import math
    from fractions import Fraction

    import numpy as np
    if bits == 64:
        return math.fsum(values.astype(np.float64).tolist())  # Shewchuk's partials: correctly rounded
    total = 0
    for v in values.astype(np.float64).tolist():
        n, d = v.as_integer_ratio()
        total += n * ((1 << 1074) // d)
    exact = Fraction(total, 1 << 1074)
    if exact == 0:
        return 0.0
    f = np.float32(float(exact))
    neighbours = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return float(min(neighbours, key=lambda c: (abs(Fraction(float(c)) - exact), int(np.array(c).view(np.int32)) & 1)))


_NARROW_TABLES = {}


def _exact_rounded_narrow(values, dtype):
    """The exact sum of float16/bfloat16 values (as a NumPy float array), rounded once to nearest
    even into `dtype` (a torch dtype): _nearest_narrow of the sum."""
    from fractions import Fraction
    return _nearest_narrow(sum((Fraction(float(v)) for v in values.tolist()), Fraction(0)), dtype)


def _nearest_narrow(exact, dtype):
    """A Fraction rounded once to nearest even into `dtype` (float16 or bfloat16): the nearest of
    all finite values of the type, found by bisection over the 65536 bit patterns, ties to the even
    pattern, past the range infinity."""
    import bisect
    from fractions import Fraction
    if dtype not in _NARROW_TABLES:
        patterns = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype).double().tolist()
        finite = sorted({(v, b) for b, v in zip(range(-32768, 32768), patterns) if math.isfinite(v) and v != 0 or b == 0},
                        key=lambda t: t[0])
        _NARROW_TABLES[dtype] = ([Fraction(v) for v, _ in finite], [v for v, _ in finite], [b for _, b in finite])
    keys, floats, patterns = _NARROW_TABLES[dtype]
    largest = keys[-1]
    ulp = largest - keys[-2]
    if abs(exact) >= largest + ulp / 2:
        return math.copysign(math.inf, exact)
    i = bisect.bisect_left(keys, exact)
    candidates = [j for j in (i - 1, i) if 0 <= j < len(keys)]
    best = min(candidates, key=lambda j: (abs(keys[j] - exact), patterns[j] & 1))
    return floats[best]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_exact_sum_is_correctly_rounded(dtype):
    """mode="exact": the correctly rounded sum, bit for bit, on wide-range and cancelling data, at
    aligned and misaligned addresses; float16/bfloat16 rounded once into their own type, and with
    dtype=float32 into float32."""
    import numpy as np
    seed = random.randrange(1 << 30)
    rng = np.random.default_rng(seed)
    tdtype = getattr(torch, dtype)
    for n in (0, 1, 33, 4097, 65537, (1 << 20) + 3):
        wide = rng.choice([-1.0, 1.0], n + 1) * 10.0 ** rng.uniform(-4 if dtype == "float16" else -30,
                                                                       4 if dtype == "float16" else 30, n + 1)
        big = rng.uniform(1e3, 2e3, n + 1)
        cancel = np.where(np.arange(n + 1) % 2 == 0, big, -np.roll(big, 1)) + rng.uniform(0, 1e-3, n + 1)
        for data in (wide, cancel):
            x = torch.tensor(data, device=DEV).to(tdtype)
            for offset in (0, 1):  # 16-byte aligned, and one element off
                v = x[offset:offset + n]
                values = v.float().cpu().numpy() if dtype in ("float16", "bfloat16") else v.cpu().numpy()
                bits = 64 if dtype == "float64" else 32
                want = _exact_rounded(values, bits)
                kwargs = {"dtype": torch.float32} if dtype in ("float16", "bfloat16") else {}
                got = fr.sum(v, mode="exact", **kwargs)
                assert got.dtype == (torch.float64 if bits == 64 else torch.float32)
                assert got.item() == want, (dtype, n, offset, got.item(), want, "seed", seed)
                if dtype in ("float16", "bfloat16"):
                    own = fr.sum(v, mode="exact")
                    assert own.dtype == tdtype
                    assert own.item() == _exact_rounded_narrow(values, tdtype), (dtype, n, offset, "seed", seed)


def test_exact_mode_rules():
    x = torch.randn(64, 33, device=DEV)
    assert torch.equal(fr.amax(x, mode="exact"), fr.amax(x))
    assert torch.equal(fr.argmax(x, dim=1, mode="exact"), fr.argmax(x, dim=1))
    i = torch.randint(-100, 100, (1000,), device=DEV, dtype=torch.int32)
    assert fr.sum(i, mode="exact").item() == int(i.sum().item())
    assert fr.sum(x.half(), mode="exact").dtype == torch.float16  # rounded once by the engine
    with pytest.raises(RuntimeError, match="second rounding"):
        fr.sum(x, mode="exact", dtype=torch.float16)  # the elements would be rounded first
    # Along a dim, strided and transposed too: every output the exact sum of its own elements.
    seed = random.randrange(1 << 30)
    g = torch.Generator(device=DEV).manual_seed(seed)
    w = (torch.rand(300, 129, generator=g, device=DEV, dtype=torch.float64) - 0.5) * 10.0 ** torch.randint(
        -20, 20, (300, 129), generator=g, device=DEV)
    for v, d in ((w, 1), (w, 0), (w.t(), 1), (w[::2, 1:], 0)):
        got = fr.sum(v, dim=d, mode="exact")
        rows = v.transpose(0, 1) if d == 0 else v
        want = torch.tensor([math.fsum(r) for r in rows.cpu().tolist()], dtype=torch.float64)
        assert torch.equal(got.cpu(), want), ("seed", seed, d)
    # float32 and float16 columns longer than two tiles (8193 rows), rounded once into float32.
    for dtype in (torch.float32, torch.float16):
        v = (torch.rand(8193, 5, generator=g, device=DEV) - 0.5).to(dtype) * 100
        got = fr.sum(v, dim=0, mode="exact", dtype=torch.float32)
        cols = v.float().cpu().numpy().T
        want = [_exact_rounded(c, 32) for c in cols]
        assert got.dtype == torch.float32 and got.cpu().tolist() == want, ("seed", seed, dtype)
    with pytest.raises(RuntimeError, match="prod"):
        fr.prod(x, mode="exact")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ["sum", "prod", "amin", "amax"])
def test_narrow_results_are_rounded_once_by_the_engine(dtype, op):
    """float16/bfloat16 results come out of the engine in their own type: the float32 result
    (dtype=float32; amin/amax: torch's) rounded once, for every layout; out= and keepdim too."""
    g = torch.Generator(device=DEV).manual_seed(random.randrange(1 << 30))
    x = (torch.rand(257, 1031, generator=g, device=DEV) * (0.02 if op == "prod" else 4.0)
         + (0.99 if op == "prod" else -2.0)).to(dtype)
    fn = getattr(fr, op)
    for v, dim in ((x, None), (x, 1), (x, 0), (x.t(), 1), (x[:, 1:], 1), (x[::2], (0, 1))):
        got = fn(v, dim=dim) if dim is not None else fn(v)
        if op in ("amin", "amax"):  # exact in any type: torch's own
            wide = getattr(torch, op)(v.float(), dim=dim) if dim is not None else getattr(torch, op)(v.float())
        else:
            wide = fn(v, dim=dim, dtype=torch.float32) if dim is not None else fn(v, dtype=torch.float32)
        assert got.dtype == dtype
        assert torch.equal(got.view(torch.int16), wide.to(dtype).view(torch.int16)), (op, dim)
    out = torch.empty(257, device=DEV, dtype=dtype)
    assert fn(x, dim=1, out=out) is out and torch.equal(out, fn(x, dim=1))
    assert fn(x, dim=1, keepdim=True).shape == (257, 1)


def _bits(t):
    return t.view(torch.int16).item()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_narrow_statistics_in_every_mode_are_rounded_once_by_the_engine(dtype):
    """float16/bfloat16 mean, L1 and L2 norms, var and std in the reproducible and exact modes come
    out of the engine in the input's own type, with no conversion kernel after it. Exact mode's mean
    and L1 norm are the exact value rounded once (0 ulp against Fractions), 1-D and along dims; the
    L2 norm, variance and standard deviation (both modes; var and std along dims too) the engine's
    double (the exact sum of squares, or n S2 - S1^2 exactly, rounded once to double, divided; the
    square root) rounded once; the reproducible mean and L1 norm within an ulp of exact, a row's bits its own."""
    from fractions import Fraction
    seed = random.randrange(1 << 30)
    g = torch.Generator(device=DEV).manual_seed(seed)

    def spread(shape):  # both signs, magnitudes over 2^-8 .. 2^8
        scale = 2.0 ** torch.randint(-8, 9, shape, generator=g, device=DEV)
        return ((torch.rand(shape, generator=g, device=DEV) - 0.5) * scale).to(dtype)

    def near(got, want):  # adjacent or equal bit patterns of one sign
        a, b = _bits(got), _bits(want)
        return a == b or ((a < 0) == (b < 0) and abs(a - b) == 1)

    for n in (1, 2, 33, 4097, 100003):
        for offset in (0, 1):
            x = spread((n + offset,))[offset:]
            values = [Fraction(v) for v in x.double().cpu().tolist()]
            s1, s1abs, s2 = sum(values), sum(abs(v) for v in values), sum(v * v for v in values)
            exact_mean, exact_l1 = _nearest_narrow(s1 / n, dtype), _nearest_narrow(s1abs, dtype)
            got = fr.mean(x, mode="exact")
            assert got.dtype == dtype and got.item() == exact_mean, (n, offset, got.item(), exact_mean, "seed", seed)
            got = fr.norm(x, 1, mode="exact")
            assert got.dtype == dtype and got.item() == exact_l1, (n, offset, got.item(), exact_l1, "seed", seed)
            for op, want in ((fr.mean, exact_mean), (lambda v, mode: fr.norm(v, 1, mode=mode), exact_l1)):
                got = op(x, mode="reproducible")
                assert got.dtype == dtype and near(got, torch.tensor(want, dtype=dtype)), (n, offset, "seed", seed)
            l2 = _nearest_narrow(Fraction(math.sqrt(float(s2))), dtype)
            for mode in ("exact", "reproducible"):
                got = fr.norm(x, 2, mode=mode)
                assert got.dtype == dtype and got.item() == l2, (n, offset, mode, got.item(), l2, "seed", seed)
            for correction in range(min(n, 3)):
                v = (float(n * s2 - s1 * s1) / n) / (n - correction)  # int / int: rounded once to double
                for mode in ("exact", "reproducible"):
                    for f, value in ((fr.var, v), (fr.std, math.sqrt(v))):
                        want = _nearest_narrow(Fraction(value), dtype)
                        got = f(x, correction=correction, mode=mode)
                        assert got.dtype == dtype and got.item() == want, (f.__name__, n, offset, correction, mode,
                                                                           got.item(), want, "seed", seed)
    # Data whose statistic a rounding through float would get wrong (the float lands on a midpoint
    # of the narrow type): each checked to tell the two roundings apart.
    import struct
    crafted = {torch.float16: [("norm2", [1, 2 ** -5, 2 ** -11, 2 ** -20]), ("var", [2, -2 ** -11])],
               torch.bfloat16: [("norm2", [1, 2 ** -4, 2 ** -4, 2 ** -8, 2 ** -20])]}[dtype]
    for op, values in crafted:
        fv = [Fraction(v) for v in values]
        if op == "norm2":
            v = math.sqrt(float(sum(a * a for a in fv)))
        else:  # correction 0
            v = (float(len(fv) * sum(a * a for a in fv) - sum(fv) ** 2) / len(fv)) / len(fv)
        once = _nearest_narrow(Fraction(v), dtype)
        through_float = _nearest_narrow(Fraction(struct.unpack("f", struct.pack("f", v))[0]), dtype)
        assert once != through_float, (op, values)
        x = torch.tensor(values, dtype=torch.float64).to(dtype).to(DEV)
        for mode in ("exact", "reproducible"):
            got = fr.norm(x, 2, mode=mode) if op == "norm2" else fr.var(x, correction=0, mode=mode)
            assert got.item() == once, (op, values, mode, got.item(), once, through_float)
    # Along dims: every output its own exact value rounded once; a row alone has the row's bits.
    x = spread((67, 301))
    rows = [[Fraction(v) for v in r] for r in x.double().cpu().tolist()]
    for dim, lines in ((1, rows), (0, [list(c) for c in zip(*rows)])):
        got = fr.mean(x, dim=dim, mode="exact")
        want = [_nearest_narrow(sum(line) / len(line), dtype) for line in lines]
        assert got.dtype == dtype and got.cpu().tolist() == want, (dim, "seed", seed)
        got = fr.norm(x, 1, dim=dim, mode="exact")
        want = [_nearest_narrow(sum(abs(v) for v in line), dtype) for line in lines]
        assert got.dtype == dtype and got.cpu().tolist() == want, (dim, "seed", seed)
        for mode in ("exact", "reproducible"):  # var (correction 1) and std (correction 0): the 1-D steps
            moments = [(len(line), sum(line), sum(v * v for v in line)) for line in lines]
            got = fr.var(x, dim=dim, mode=mode)
            want = [_nearest_narrow(Fraction((float(n * s2 - s1 * s1) / n) / (n - 1)), dtype) for n, s1, s2 in moments]
            assert got.dtype == dtype and got.cpu().tolist() == want, (dim, mode, "seed", seed)
            got = fr.std(x, dim=dim, correction=0, mode=mode)
            want = [_nearest_narrow(Fraction(math.sqrt((float(n * s2 - s1 * s1) / n) / n)), dtype)
                    for n, s1, s2 in moments]
            assert got.dtype == dtype and got.cpu().tolist() == want, (dim, mode, "seed", seed)
    r = fr.mean(x, dim=1, mode="reproducible")
    assert r.dtype == dtype and _bits(r[7]) == _bits(fr.mean(x[7].clone(), mode="reproducible"))
    # No conversion kernel after the engine's (the float32 result and .to() launched one).
    y = spread((4097,))
    for call in (lambda: fr.mean(y, mode="exact"), lambda: fr.var(y, mode="reproducible"),
                 lambda: fr.norm(y, 2, mode="exact"), lambda: fr.mean(x, dim=0, mode="reproducible")):
        found = _kernels_of(call)
        if found is None:
            pytest.skip("torch.profiler records no CUDA kernels here")
        assert found and not any("elementwise" in k for k in found), found
    converted = _kernels_of(lambda: fr.mean(y, mode="exact", dtype=torch.float32).to(dtype))
    assert any("elementwise" in k for k in converted), converted  # what a conversion shows
