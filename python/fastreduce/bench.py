"""python -m fastreduce.bench: fastreduce against torch (sum, amax, argmax, mean, var, norm) on the
same tensors, in one run; for float32 sums also the engine called directly, cupy.sum and (if
installed) cuda.compute.reduce_into.

Each row reduces one CUDA tensor (torch.rand, float32 or bfloat16): all of it ("full", sizes 2^10
to 2^--max-log2 every 2 powers) or along dim -1 of a (4096, n/4096) matrix ("dim", n = 2^20, 2^24,
2^28). A call's time is the wall time of a loop of back-to-back calls (synchronised once at the
end) divided by the calls, the median of nine loops, the loops of a row's methods interleaved:
what a Python program pays per call, host overhead included. "engine" calls the compiled module
directly with a preallocated output: the engine's time without the Python layer. Every result is
checked against torch in float64 (argmax: the same index, or an equal value at it); the exit
status is 1 if any row disagrees.

    python -m fastreduce.bench --csv out.csv --plot out.png
    python -m fastreduce.bench --quick --ops sum,argmax --dtypes bfloat16
"""
from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import time

OPS = ("sum", "amax", "argmax", "mean", "var", "norm")
DTYPES = ("float32", "bfloat16")
ROWS = 4096  # the rows of the matrices reduced along dim -1


def _loop_calls(fn, sync, budget_s):
    """How many back-to-back calls of fn take about budget_s (fn warmed first)."""
    fn()
    sync()
    calls, elapsed = 1, 0.0
    while elapsed < budget_s / 4 and calls < 1 << 20:
        calls *= 2
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        elapsed = time.perf_counter() - t0
    return max(1, int(calls * budget_s / max(elapsed, 1e-9)))


def _time_per_call(methods, sync, budget_s=0.05, repeats=9):
    """Each method's time per call (us): the median of `repeats` loops. The loops of the methods are
    interleaved, in an order rotated every round, so that a drift of the host's speed during a row
    reaches every method alike."""
    names = list(methods)
    calls = {m: _loop_calls(methods[m], sync, budget_s) for m in names}
    samples = {m: [] for m in names}
    for r in range(repeats):
        for m in names[r % len(names):] + names[:r % len(names)]:
            fn, k = methods[m], calls[m]
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            sync()
            samples[m].append((time.perf_counter() - t0) / k * 1e6)
    return {m: statistics.median(samples[m]) for m in names}


def _list(choices, what):
    """argparse type: a comma list of names out of choices."""
    def parse(text):
        names = [s.strip() for s in text.split(",") if s.strip()]
        bad = [s for s in names if s not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"unknown {what} {','.join(bad)!r} (choose from {','.join(choices)})"
                                             if bad else f"no {what} given")
        return names
    return parse


def _agree(torch, op, x, dim, got, ref):
    """Whether fastreduce's result `got` matches torch's float64 one `ref` (argmax: the same indices,
    or equal values at them where there are ties)."""
    if tuple(got.shape) != tuple(ref.shape):
        return False
    if op == "argmax":
        if torch.equal(got, ref):
            return True
        at = (lambda i: x.flatten()[i]) if dim is None else (lambda i: x.gather(dim, i.unsqueeze(dim)).squeeze(dim))
        return torch.equal(at(got), at(ref))
    rtol, atol = (1e-4, 1e-3) if x.dtype == torch.float32 else (1e-2, 1e-3)  # bfloat16: its rounding of the result
    return bool(torch.allclose(got.double(), ref, rtol=rtol, atol=atol))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fastreduce.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", help="write the rows as CSV here")
    parser.add_argument("--plot", help="write a PNG of time per call against n here, a panel per op (needs matplotlib)")
    parser.add_argument("--max-log2", type=int, default=30, help="largest size, as a power of two (default 30)")
    parser.add_argument("--ops", type=_list(OPS, "op"), default=list(OPS), help=f"comma list (default {','.join(OPS)})")
    parser.add_argument("--dtypes", type=_list(DTYPES, "dtype"), default=list(DTYPES),
                        help=f"comma list (default {','.join(DTYPES)})")
    parser.add_argument("--quick", action="store_true",
                        help="fewer sizes (2^10, 2^16, 2^20, 2^24 full; 2^24 along dim -1): a few minutes")
    args = parser.parse_args(argv)

    import torch
    import fastreduce as fr
    from fastreduce import _core, _api
    if not torch.cuda.is_available() or not fr.is_available():
        print("fastreduce.bench: no CUDA device found", file=sys.stderr)
        return 1
    try:
        import cupy
    except ImportError:
        cupy = None
    try:
        import cuda.compute as cc  # NVIDIA's cuda-cccl Python package
    except ImportError:
        cc = None
    sync = torch.cuda.synchronize
    device = torch.cuda.current_device()
    name = torch.cuda.get_device_name(device)
    # op -> (fastreduce's function, torch's, positional arguments after x); torch's over float64 is the reference
    functions = {"sum": (fr.sum, torch.sum, ()), "amax": (fr.amax, torch.amax, ()),
                 "argmax": (fr.argmax, torch.argmax, ()), "mean": (fr.mean, torch.mean, ()),
                 "var": (fr.var, torch.var, ()), "norm": (fr.norm, torch.linalg.vector_norm, (2,))}
    full_logs = (10, 16, 20, 24) if args.quick else range(10, args.max_log2 + 1, 2)
    dim_logs = (24,) if args.quick else (20, 24, 28)
    cases = [("full", (1 << k,), None) for k in full_logs if k <= args.max_log2]
    cases += [("dim", (ROWS, (1 << k) // ROWS), -1) for k in dim_logs if k <= args.max_log2]
    torch.manual_seed(0)
    rows = []
    for op in args.ops:
        fr_fn, torch_fn, extra = functions[op]
        for dtype_name in args.dtypes:
            dtype = getattr(torch, dtype_name)
            for kind, shape, dim in cases:
                x = torch.rand(shape, device="cuda", dtype=dtype)
                n = x.numel()
                kw = {} if dim is None else {"dim": dim}  # no dim at all for full reductions, as a caller writes it
                row = {"op": op, "dtype": dtype_name, "kind": kind, "shape": "x".join(map(str, shape)), "n": n}
                try:
                    got = fr_fn(x, *extra, **kw)
                except Exception as e:  # an op or type this build refuses: a row that disagrees, the run goes on
                    print(f"{op:6s} {dtype_name:8s} {kind:4s} {row['shape']:>12s}  fastreduce failed: {e}", flush=True)
                    rows.append({**row, "agree": False})
                    continue
                row["agree"] = _agree(torch, op, x, dim, got, torch_fn(x.double(), *extra, **kw))
                methods = {"fastreduce": functools.partial(fr_fn, x, *extra, **kw),
                           "torch": functools.partial(torch_fn, x, *extra, **kw)}
                if op == "sum" and dtype == torch.float32:
                    out = torch.empty(shape[:-1] if dim is not None else (), device="cuda")
                    folded = _api._fold(tuple(x.shape), tuple(x.stride()),
                                        set(range(x.dim())) if dim is None else {x.dim() - 1})
                    stream = _api._torch_stream(torch, device)
                    methods["engine"] = lambda: _core.reduce(_api._F32, _api._OPS["sum"], 0, x.data_ptr(), *folded,
                                                             out.data_ptr(), 0, stream, device)
                    if cupy is not None:
                        cx = cupy.asarray(x)
                        methods["cupy.sum"] = functools.partial(cx.sum, **({} if dim is None else {"axis": dim}))
                    if cc is not None and dim is None:
                        try:
                            h_init = __import__("numpy").zeros(1, dtype="float32")
                            d_out = torch.empty(1, device="cuda")
                            methods["cuda.compute"] = functools.partial(cc.reduce_into, x, d_out, cc.OpKind.PLUS, n,
                                                                        h_init)
                        except Exception as e:  # an API this script does not know
                            print(f"fastreduce.bench: cuda.compute skipped ({e})", file=sys.stderr)
                times = _time_per_call(methods, sync)
                row["fastreduce us"] = round(times["fastreduce"], 3)
                row["torch us"] = round(times["torch"], 3)
                row["fastreduce/torch"] = round(times["fastreduce"] / times["torch"], 3)
                row.update({f"{m} us": round(t, 3) for m, t in times.items() if m not in ("fastreduce", "torch")})
                rows.append(row)
                print(f"{op:6s} {dtype_name:8s} {kind:4s} {row['shape']:>12s}  "
                      + "  ".join(f"{m} {t:8.2f} us" for m, t in times.items())
                      + f"  fastreduce/torch {row['fastreduce/torch']:.2f}x" + ("" if row["agree"] else "  DISAGREES"),
                      flush=True)
    columns = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(f"# {name}, fastreduce {fr.__version__}, torch {torch.__version__}"
                    + (f", cupy {cupy.__version__}" if cupy else "") + "\n")
            f.write(",".join(columns) + "\n")
            for r in rows:
                f.write(",".join(str(r.get(c, "")) for c in columns) + "\n")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        ncols = min(3, len(args.ops))
        nrows = math.ceil(len(args.ops) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.8 * nrows), squeeze=False)
        for ax, op in zip(axes.flat, args.ops):
            for dtype_name in args.dtypes:
                full = [r for r in rows if r["op"] == op and r["dtype"] == dtype_name and r["kind"] == "full"
                        and "torch us" in r]
                for method, color in (("fastreduce", "C0"), ("torch", "C1")):
                    ax.plot([r["n"] for r in full], [r[f"{method} us"] for r in full], color=color, marker="o",
                            markersize=3, linestyle="-" if dtype_name == "float32" else "--",
                            label=f"{method} {dtype_name}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(op)
            ax.set_xlabel("elements")
            ax.set_ylabel("µs per call")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize="small")
        for ax in list(axes.flat)[len(args.ops):]:
            ax.set_visible(False)
        fig.suptitle(f"full reductions of a CUDA tensor from Python, host overhead included, {name}")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    bad = [r for r in rows if not r["agree"]]
    for r in bad:
        print(f"fastreduce.bench: {r['op']} {r['dtype']} {r['kind']} {r['shape']} disagrees with torch",
              file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
