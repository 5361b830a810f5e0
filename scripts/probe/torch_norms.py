"""torch's sum and L2, L1 and inf norms along dim -1 of bfloat16 and float16 matrices, timed as the
probes time the engine (probe_timing.hpp: CUDA events around batches of 100 back-to-back calls,
the median of 7 batches, the same input each call), for wide_halves.cu's shapes.

    python3 scripts/probe/torch_norms.py
"""
import torch


def per_call_us(fn, reps=100):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(7):
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000 / reps)
    return sorted(times)[3]


print("# torch", torch.__version__, torch.cuda.get_device_name(), "us per call, the same input each call")
for dt in (torch.bfloat16, torch.float16):
    for shape in ((4096, 4096), (16384, 1024), (4096, 256), (65536, 4096)):
        x = torch.randn(shape, device="cuda", dtype=dt)
        row = {"sum": per_call_us(lambda: x.sum(dim=-1)),
               "l2": per_call_us(lambda: torch.linalg.vector_norm(x, dim=-1)),
               "l1": per_call_us(lambda: torch.linalg.vector_norm(x, ord=1, dim=-1)),
               "inf": per_call_us(lambda: torch.linalg.vector_norm(x, ord=float("inf"), dim=-1))}
        print(str(dt).replace("torch.", ""), "x".join(map(str, shape)), " ".join(f"{k} {v:.2f}" for k, v in row.items()))
        del x
