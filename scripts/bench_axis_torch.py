#!/usr/bin/env python3
"""torch's reductions over the shapes of `fastreduce bench-axis`, for the comparison table:
sum, max (amax), argmax, mean, var, norm2 (linalg.vector_norm), each along the dim.

Rows: x.view(total // length, length).sum(dim=1); columns: x.view(length, total // length).sum(dim=0).
Timed like the CLI: CUDA events around batches of back-to-back calls (about 2 ms each), median
batch, inputs rotated among slices beyond the L2. GB/s = (bytes read + bytes written) / time.
With --cupy, cupy.sum / cupy.max over the same shapes too.

  python3 scripts/bench_axis_torch.py --out docs/results/bench_axis_torch_H100.json
"""
import argparse
import json
import statistics

import torch

DTYPES = {"float": torch.float32, "bfloat16": torch.bfloat16}


def lengths_for(total):
    return [1 << p for p in (0, 2, 4, 6, 8, 10, 12, 16, 20, 22, 24, 26, 28) if (1 << p) <= total]


def time_call(fn, slices, repetitions):
    for i in range(3):
        fn(i)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(3):
        fn(i)
    stop.record()
    stop.synchronize()
    per_call_ms = start.elapsed_time(stop) / 3
    calls = max(1, min(1000, int(2.0 / max(per_call_ms, 1e-3))))
    times = []
    for r in range(repetitions):
        start.record()
        for i in range(calls):
            fn(r * calls + i)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000 / calls)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--totals", default="16777216,268435456")
    parser.add_argument("--types", default="float,bfloat16")
    parser.add_argument("--ops", default="sum,max")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--cupy", action="store_true", help="also time CuPy")
    parser.add_argument("--out", help="JSON file (default: print)")
    args = parser.parse_args()
    cp = None
    if args.cupy:
        import cupy as cp  # noqa: F401
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for total in [int(t) for t in args.totals.split(",")]:
        for type_name in args.types.split(","):
            dtype = DTYPES[type_name]
            in_bytes = total * torch.tensor([], dtype=dtype).element_size()
            slices = max(1, min(64, 3 * l2 // in_bytes))
            arena = torch.randn(slices, total, device="cuda").to(dtype)
            for op in args.ops.split(","):
                for axis in ("rows", "columns"):
                    for length in lengths_for(total):
                        outputs = total // length
                        # torch returns the input's dtype (argmax: int64 indices)
                        out_size = 8 if op == "argmax" else torch.tensor([], dtype=dtype).element_size()
                        out_bytes = outputs * out_size
                        shape = (outputs, length) if axis == "rows" else (length, outputs)
                        dim = 1 if axis == "rows" else 0
                        views = [arena[s].view(shape) for s in range(slices)]
                        fn = {
                            "sum": lambda i: torch.sum(views[i % slices], dim=dim),
                            "max": lambda i: torch.amax(views[i % slices], dim=dim),
                            "argmax": lambda i: torch.argmax(views[i % slices], dim=dim),
                            "mean": lambda i: torch.mean(views[i % slices], dim=dim),
                            "var": lambda i: torch.var(views[i % slices], dim=dim),
                            "norm2": lambda i: torch.linalg.vector_norm(views[i % slices], dim=dim),
                        }[op]
                        us = time_call(fn, slices, args.repetitions)
                        row = {"framework": "torch", "type": type_name, "op": op, "axis": axis, "total": total,
                               "length": length, "us": us, "gbps": (in_bytes + out_bytes) / (us * 1e-6) / 1e9}
                        rows.append(row)
                        if cp is not None and op in ("sum", "max"):
                            cviews = [cp.asarray(v) for v in views]
                            cfn = (lambda i: cp.sum(cviews[i % slices], axis=dim)) if op == "sum" else \
                                (lambda i: cp.max(cviews[i % slices], axis=dim))
                            cus = time_call(cfn, slices, args.repetitions)
                            rows.append(dict(row, framework="cupy", us=cus,
                                             gbps=(in_bytes + out_bytes) / (cus * 1e-6) / 1e9))
                        print(f"{type_name} {op} {axis} total={total} length={length}: torch {us:.1f} us "
                              f"{row['gbps']:.0f} GB/s", flush=True)
            del arena
            torch.cuda.empty_cache()
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    else:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
