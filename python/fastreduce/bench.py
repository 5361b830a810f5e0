"""python -m fastreduce.bench: fastreduce against torch.sum, cupy.sum and (if installed)
cuda.compute.reduce_into on the same tensors, in one run.

Every method reduces the same float32 CUDA tensor. A call's time is the wall time of a loop of
back-to-back calls (synchronised once at the end) divided by the calls, the median of several
loops: what a Python program pays per call, host overhead included. "engine" calls the compiled
module directly with a preallocated output: the engine's time without the Python layer.

    python -m fastreduce.bench --csv out.csv --plot out.png
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


def _time_per_call(fn, sync, budget_s=0.05, repeats=7):
    fn()
    sync()
    calls, elapsed = 1, 0.0
    while elapsed < budget_s / 4 and calls < 1 << 20:  # size the loop to about budget_s
        calls *= 2
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        elapsed = time.perf_counter() - t0
    calls = max(1, int(calls * budget_s / max(elapsed, 1e-9)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fastreduce.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", help="write the rows as CSV here")
    parser.add_argument("--plot", help="write a PNG of time per call against n here (needs matplotlib)")
    parser.add_argument("--max-log2", type=int, default=28, help="largest full-reduction size, as a power of two")
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
    cases = [("full", (1 << k,), None) for k in range(10, args.max_log2 + 1, 2)]
    cases += [("rows", (1 << 14, 1 << 10), 1), ("columns", (1 << 14, 1 << 10), 0),
              ("rows", (1 << 16, 1 << 10), 1), ("columns", (1 << 16, 1 << 10), 0)]
    rows = []
    for kind, shape, dim in cases:
        x = torch.rand(shape, device="cuda", dtype=torch.float32)
        n = x.numel()
        out = torch.empty(() if dim is None else shape[1 - dim], device="cuda")
        outer, length, inner, so, sl, si = _api._fold(tuple(x.shape), tuple(x.stride()),
                                                      set(range(x.dim())) if dim is None else {dim})
        stream = _api._torch_stream(torch, device)
        methods = {
            "fastreduce": lambda: fr.sum(x, dim=dim),
            "engine": lambda: _core.reduce(11, 0, False, x.data_ptr(), outer, length, inner, so, sl, si,
                                           out.data_ptr(), stream, device),
            "torch.sum": (lambda: torch.sum(x)) if dim is None else (lambda: torch.sum(x, dim=dim)),
        }
        if cupy is not None:
            cx = cupy.asarray(x)
            methods["cupy.sum"] = (lambda: cx.sum()) if dim is None else (lambda: cx.sum(axis=dim))
        if cc is not None and dim is None:
            try:
                h_init = __import__("numpy").zeros(1, dtype="float32")
                d_out = torch.empty(1, device="cuda")
                methods["cuda.compute"] = lambda: cc.reduce_into(x, d_out, cc.OpKind.PLUS, n, h_init)
            except Exception as e:  # an API this script does not know
                print(f"fastreduce.bench: cuda.compute skipped ({e})", file=sys.stderr)
        got = fr.sum(x, dim=dim).double()
        ref = x.double().sum() if dim is None else x.double().sum(dim=dim)
        agree = bool(torch.allclose(got, ref, rtol=1e-4, atol=1e-3))
        times = {m: _time_per_call(f, sync) for m, f in methods.items()}
        row = {"kind": kind, "shape": "x".join(map(str, shape)), "n": n, "agree": agree}
        row.update({f"{m} us": round(t, 3) for m, t in times.items()})
        rows.append(row)
        print(f"{kind:8s} {row['shape']:>14s}  " + "  ".join(f"{m} {t:8.2f} us" for m, t in times.items())
              + f"  fastreduce/torch {times['fastreduce'] / times['torch.sum']:.2f}x", flush=True)
    columns = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(f"# {name}, torch {torch.__version__}" + (f", cupy {cupy.__version__}" if cupy else "") + "\n")
            f.write(",".join(columns) + "\n")
            for r in rows:
                f.write(",".join(str(r.get(c, "")) for c in columns) + "\n")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        full = [r for r in rows if r["kind"] == "full"]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for c in columns:
            if c.endswith(" us"):
                ax.plot([r["n"] for r in full], [r[c] for r in full], marker="o", label=c[:-3])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("float32 elements")
        ax.set_ylabel("time per call, µs (host overhead included)")
        ax.set_title(f"sum of a CUDA tensor from Python, {name}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
