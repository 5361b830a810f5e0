"""Host time per call of fastreduce's ops against torch's, at the sizes where a call is bound by the
host, through both planned paths of one install: "c", the plan found and run in C++
(fastreduce._torch_core, results from torch's allocator), and "py", the Python path (the same
plans made without it), alternated
in one process as the host's speed drifts; then the cost of pieces of the Python path. Prints µs
per call (fastreduce.bench's timing: calls back to back, the median of nine batches).

    python scripts/probe/python_percall.py [--ops sum,amax,argmax,mean,var,norm] [--rounds 2] [--logs 10,16,20]
"""
import argparse

import torch

import fastreduce as fr
from fastreduce import _api
from fastreduce.bench import _time_per_call as _time_methods


def _time_per_call(fn, sync):
    return _time_methods({"call": fn}, sync)["call"]


CALLS = {"sum": (fr.sum, torch.sum, {}), "amax": (fr.amax, torch.amax, {}), "argmax": (fr.argmax, torch.argmax, {}),
         "mean": (fr.mean, torch.mean, {}), "var": (fr.var, torch.var, {}),
         "norm": (fr.norm, torch.linalg.vector_norm, {})}


def use(path, tc):
    """Makes the next calls plan afresh with (c) or without (py) fastreduce._torch_core."""
    _api._tc = tc
    _api._forget_plans()
    _api._tc = tc if path == "c" else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", default=",".join(CALLS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--logs", type=lambda t: [int(v) for v in t.split(",")], default=[10, 16, 20],
                        help="whole tensors of 2^k elements (default 10,16,20), then (4096, 256) along dim -1")
    args = parser.parse_args()
    sync = torch.cuda.synchronize
    fr.sum(torch.ones(4, device="cuda"))  # torch seen: _torch_core loaded where it is built
    tc = _api._tc
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, _torch_core "
          f"{'loaded' if tc is not None else 'MISSING'}", flush=True)
    paths = ("c", "py") if tc is not None else ("py",)
    shapes = [(1 << k,) for k in args.logs] + [(4096, 256)]
    for rnd in range(args.rounds):
        for op in args.ops.split(","):
            f, t, kw = CALLS[op]
            for dt in (torch.float32, torch.bfloat16):
                for shape in shapes:
                    x = torch.randn(shape, device="cuda").to(dt)
                    k = dict(kw, dim=-1) if len(shape) > 1 else kw
                    r = {"torch": _time_per_call(lambda: t(x, **k), sync)}
                    for p in paths:
                        use(p, tc)
                        f(x, **k)  # the plan
                        r[p] = _time_per_call(lambda: f(x, **k), sync)
                    print(f"round {rnd} {op:6s} {str(dt)[6:]:8s} {'x'.join(map(str, shape)):>9s}  "
                          + "  ".join(f"{m} {v:6.2f}" for m, v in r.items())
                          + "  " + "  ".join(f"{p}/torch {r[p] / r['torch']:.3f}" for p in paths), flush=True)
    use("c", tc)
    x = torch.randn(1 << 16, device="cuda")
    c = {
        "x.new_empty(())": _time_per_call(lambda: x.new_empty(()), sync),
        "key": _time_per_call(lambda: ("sum", x.dtype, x.shape, x.stride(), None, False, "fast"), sync),
        "torch.compiler.is_compiling()": _time_per_call(lambda: torch.compiler.is_compiling(), sync),
    }
    print("components: " + "  ".join(f"{k} {v:.3f}" for k, v in c.items()))


if __name__ == "__main__":
    main()
