"""Host time per call of fastreduce's sum and amax against torch's, at small sizes where a call is
bound by the host, and the cost of the pieces of fastreduce's planned path (output allocation,
plan key, device, compile check). Run it with two installs side by side to compare them in one
run: `PYTHONPATH=/path/to/old python scripts/probe/python_percall.py old`, then with the new
one installed, `python scripts/probe/python_percall.py new`; alternate the two a few times, as
the host's speed drifts. Prints µs per call (fastreduce.bench's timing: calls back to back, the
median of seven batches)."""
import sys

import torch

import fastreduce as fr
from fastreduce.bench import _time_per_call


def main():
    sync = torch.cuda.synchronize
    tag = sys.argv[1] if len(sys.argv) > 1 else "this"
    for dt in (torch.float32, torch.bfloat16):
        for n in (1 << 10, 1 << 16, 1 << 20):
            x = torch.randn(n, device="cuda").to(dt)
            fr.sum(x)
            fr.amax(x)
            r = {
                "torch.sum": _time_per_call(lambda: torch.sum(x), sync),
                "fr.sum": _time_per_call(lambda: fr.sum(x), sync),
                "torch.amax": _time_per_call(lambda: torch.amax(x), sync),
                "fr.amax": _time_per_call(lambda: fr.amax(x), sync),
            }
            print(f"{tag} {str(dt):15s} n=2^{n.bit_length() - 1:<2d} " + "  ".join(f"{k} {v:6.2f}" for k, v in r.items())
                  + f"  sum ratio {r['fr.sum'] / r['torch.sum']:.3f} amax ratio {r['fr.amax'] / r['torch.amax']:.3f}",
                  flush=True)
    x = torch.randn(1 << 16, device="cuda")
    dev = x.device
    c = {
        "x.new_empty(())": _time_per_call(lambda: x.new_empty(()), sync),
        "x.new_empty((), dtype=f32)": _time_per_call(lambda: x.new_empty((), dtype=torch.float32), sync),
        "torch.empty((), device=dev)": _time_per_call(lambda: torch.empty((), device=dev), sync),
        "x.get_device()": _time_per_call(lambda: x.get_device(), sync),
        "key": _time_per_call(lambda: ("sum", x.dtype, x.shape, x.stride(), None, False, "fast"), sync),
        "torch.compiler.is_compiling()": _time_per_call(lambda: torch.compiler.is_compiling(), sync),
    }
    print(tag, "components: " + "  ".join(f"{k} {v:.3f}" for k, v in c.items()))


if __name__ == "__main__":
    main()
