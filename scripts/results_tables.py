#!/usr/bin/env python3
"""Regenerate the result tables of README.md and docs/ladder.md from the measurements in docs/results/.

Each table sits between <!-- NAME --> and <!-- /NAME --> markers, NAME ending in the GPU (H200,
H100); the newest file of each kind for that GPU is used:
  ladder-2p28-*, -2p24-*, -2p20-*: ladder_<GPU>_<date>_2p28.json (`fastreduce ladder --format json`), with
                               the counters of ladder_ncu_<GPU>_<date>_2p28.json (scripts/ladder_profile.py)
  ladder-int32-2p24-*:         ladder_int32_<GPU>_<date>_2p24.json, ladder_ncu_int32_<GPU>_<date>_2p24.json
  held-*:                      ladder_held_<GPU>_<date>_2p24.json (`fastreduce ladder --hold-sms N`)
  rung-<id>-*:                 one line per size for docs/ladder.md, from the ladder and counter files
  sweep-*:                     ladder_sweep_<GPU>_<date>_2p24.json (`... --sweep-blocks`)
  bench-summary-*, bench-float-sum-*: bench_<GPU>_<date>.json (`fastreduce bench --format json`)
  modes-*:                     modes_<GPU>_<date>.json (`fastreduce bench --modes fast,reproducible,exact`)
  axis-exact-*:                axis_exact_<GPU>_<date>.json (`bench-axis --modes fast,reproducible,exact`)
  exact-wide-*:                exact_wide_<GPU>_<date>.json (`bench --data wide --modes fast,reproducible,exact`)
  exact-cccl-*:                exact_vs_cccl_<GPU>_<date>.md (scripts/exact_vs_cccl.py: Mode::Exact against
                               CCCL's gpu_to_gpu Sum, bench/cccl_rfa.cu, same run)
  axis-*, axis-summary-*:      axis_<GPU>_<date>.json (`fastreduce bench-axis --format json`) with
                               axis_torch_<GPU>_<date>.json (scripts/bench_axis_torch.py), same run
  axis-modes-*:                axis_modes_<GPU>_<date>.json (`bench-axis --modes fast,reproducible`)
  gpus-H200x2, gpus-H100x2:    gpus_H200x2_<date>.json, gpus_H100x2_<date>.json (`fastreduce bench --gpus 1,2 --format json`)
  python-H100, python-H200:    python_<GPU>_<date>.csv (`python -m fastreduce.bench --csv`)
  ops-*:                       ops_<GPU>_<date>.json (scripts/bench_ops_torch.py: `fastreduce bench --ops
                               argmax,var,norm2,dot` with torch in the same run)
Usage: results_tables.py [--check]   (--check: exit 1 if README.md is out of date)
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results")


def newest(pattern):
    files = sorted(glob.glob(os.path.join(RESULTS, pattern)))
    return files[-1] if files else None


# The lecture's V100 figures (seed 004, block 256, N = 2^30 floats), as % of its 898 GB/s peak:
# rungs 1-4 and the coarsened loads F = 4 ... 64 (the lecture's reduce5 ... reduce9).
V100_GBPS = {"1": 182.67, "2": 287.91, "3": 382.45, "4": 684.03,
             "8f4": 870.91, "8f8": 873.42, "8f16": 875.47, "8f32": 875.18, "8f64": 872.02}
V100_PEAK = 898.0


def ladder_profile(path, gpu):
    """The Nsight Compute file of the same GPU, type and size as a ladder file, or None."""
    data = json.load(open(path))
    size = os.path.basename(path).rsplit("_", 1)[1]
    kind = "" if data["type"] == "float" else data["type"] + "_"
    found = newest(f"ladder_ncu_{kind}{gpu}_*_{size}")
    if not found:
        return None, {}
    prof = json.load(open(found))
    if prof["n"] != data["n"] or prof["type"] != data["type"] or prof["op"] != data["op"]:
        return None, {}
    return found, {r["rung"]: r for r in prof["rows"]}


def ladder_rows(data):
    """The rungs at block 256 (in order), then the reference rows."""
    rungs = [r for r in data["rows"] if not r.get("reference") and r["block"] == 256] or \
        [r for r in data["rows"] if not r.get("reference")]
    return rungs, [r for r in data["rows"] if r.get("reference")]


def ladder_table(path, gpu):
    data = json.load(open(path))
    dev = data["device"]
    prof_path, prof = ladder_profile(path, gpu)
    rungs, references = ladder_rows(data)
    head = (f"`{os.path.relpath(path, ROOT)}`" + (f" and `{os.path.relpath(prof_path, ROOT)}`" if prof_path else "") +
            f": {data['type']} {data['op']}, n = {data['n']:,}, block 256, on {dev['name']} "
            f"(theoretical {dev['theoretical_gbps']:.0f} GB/s, device copy {dev['copy_gbps']:.0f} GB/s read + write)")
    cols = "| rung | kernel | time (µs) | GB/s | % of peak | V100 % of peak | step | cumulative |"
    rule = "|---|---|---:|---:|---:|---:|---:|---:|"
    if prof:
        cols += " DRAM % | warp eff. % | divergent branches | bank conflicts | occupancy % | instr. / element | requests / 1k el. |"
        rule += "---:|---:|---:|---:|---:|---:|---:|"
    out = [head, "", cols + " check |", rule + ":---:|"]
    first = rungs[0]["time_us"]
    prev = None

    def counters(r):
        p = prof.get(r["rung"])
        if not prof:
            return ""
        if not p:
            return " - | - | - | - | - | - | - |"
        return (f" {p['dram_pct']:.1f} | {p['warp_efficiency']:.1f} | {p.get('divergent_branches', 0):,.0f} | {p['bank_conflicts']:,.0f} | "
                f"{p['occupancy_pct']:.1f} | {p['inst_per_element']:.3f} | {p['requests_per_kelement']:.1f} |")

    for r in rungs:
        step = f"{prev / r['time_us']:.2f}x" if prev else "-"
        v100 = f"{100 * V100_GBPS[r['rung']] / V100_PEAK:.1f}" if r["rung"] in V100_GBPS and data["type"] == "float" else "-"
        out.append(f"| {r['rung']} | {r['kernel']} | {r['time_us']:.1f} | {r['gbps']:.0f} | {r['pct_peak']:.1f} | {v100} | "
                   f"{step} | {first / r['time_us']:.2f}x |{counters(r)} {'pass' if r['pass'] else 'FAIL'} |")
        prev = r["time_us"]
    for r in references:
        out.append(f"| *{r['rung']}* | {r['kernel']} | {r['time_us']:.1f} | {r['gbps']:.0f} | {r['pct_peak']:.1f} | - | "
                   f"- | {first / r['time_us']:.2f}x |{counters(r)} {'pass' if r['pass'] else 'FAIL'} |")
    return "\n".join(out)


def held_table(path):
    data = json.load(open(path))
    alone = {r["rung"]: r["time_us"] for r in data["rows"] if r.get("reference") or r["block"] == 256}
    out = [f"`{os.path.relpath(path, ROOT)}`: {data['type']} {data['op']}, n = {data['n']:,}, on {data['device']['name']}, "
           f"one run of each row while another kernel holds {data['held_sms']} of {data['device']['sms']} SMs "
           "(one block per SM, all its shared memory), one-second deadline", "",
           "| rung | alone (µs, median) | while held (µs) | outcome |", "|---|---:|---:|---|"]
    for h in data["held"]:
        if h["finished"]:
            outcome, held = "finished on the free SMs", f"{h['time_us']:.1f}"
        elif h["problem"]:
            outcome, held = f"launch failed: {h['problem']}", "-"
        else:
            outcome, held = f"not finished after {h['time_us'] / 1e3:.0f} ms: waits for the held SMs", "-"
        out.append(f"| {h['rung']} | {alone.get(h['rung'], 0):.1f} | {held} | {outcome} |")
    return "\n".join(out)


def rung_facts(gpu):
    """Per rung id, a bullet per size for docs/ladder.md: time, bandwidth and counters on `gpu`."""
    facts = {}
    for size in ("2p24", "2p28"):
        path = newest(f"ladder_{gpu}_*_{size}.json")
        if not path:
            continue
        data = json.load(open(path))
        _, prof = ladder_profile(path, gpu)
        rungs, references = ladder_rows(data)
        prev = None
        for r in rungs + references:
            text = (f"- {data['device']['name']}, n = 2^{size[2:]}: {r['time_us']:.1f} µs, {r['gbps']:.0f} GB/s "
                    f"({r['pct_peak']:.1f}% of peak)")
            if prev and not r.get("reference"):
                text += f", {prev / r['time_us']:.2f}x the rung before"
            p = prof.get(r["rung"])
            if p:
                text += (f"; DRAM {p['dram_pct']:.1f}% of peak, warp efficiency {p['warp_efficiency']:.1f}%, "
                         f"{p.get('divergent_branches', 0):,.0f} divergent branches, {p['bank_conflicts']:,.0f} bank conflicts, occupancy {p['occupancy_pct']:.1f}%, "
                         f"{p['inst_per_element']:.3f} warp instructions per element, "
                         f"{p['requests_per_kelement']:.1f} load requests per 1000 elements")
                if p.get("tensor_pct", 0) >= 0.05:
                    text += f", tensor pipe active {p['tensor_pct']:.1f}% of its peak"
            facts.setdefault(r["rung"], []).append(text)
            if not r.get("reference"):
                prev = r["time_us"]
    return {rung: "\n".join(lines) for rung, lines in facts.items()}


def sweep_table(path):
    data = json.load(open(path))
    rungs, blocks, cell = [], [], {}
    for r in data["rows"]:
        if r.get("reference"):
            continue
        if r["rung"] not in rungs:
            rungs.append(r["rung"])
        if r["block"] not in blocks:
            blocks.append(r["block"])
        cell[(r["rung"], r["block"])] = r
    out = [f"`{os.path.relpath(path, ROOT)}`: GB/s by block size, {data['type']} {data['op']}, "
           f"n = {data['n']:,}, on {data['device']['name']}", "",
           "| block | " + " | ".join(f"rung {r}" for r in rungs) + " |",
           "|---:|" + "---:|" * len(rungs)]
    for b in sorted(blocks):
        out.append(f"| {b} | " + " | ".join(f"{cell[(r, b)]['gbps']:.0f}" for r in rungs) + " |")
    return "\n".join(out)


def bench_table(path, only=None):
    data = json.load(open(path))
    dev = data["device"]
    out = [f"`{os.path.relpath(path, ROOT)}`: µs per call back to back, on {dev['name']} "
           f"(device copy {dev['copy_gbps']:.0f} GB/s read + write)", "",
           "| type | op | mode | n | fastreduce µs | GB/s | CUB µs | GB/s | thrust µs | CUB / fastreduce |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        if only and (r["type"], r["op"]) != only:
            continue
        thrust = f"{r['thrust_us']:.1f}" if r.get("thrust_us") else "-"
        out.append(f"| {r['type']} | {r['op']} | {r['mode']} | {r['n']:,} | {r['fastreduce_us']:.2f} | "
                   f"{r['fastreduce_gbps']:.0f} | {r['cub_us']:.2f} | {r['cub_gbps']:.0f} | {thrust} | "
                   f"{r['cub_us'] / r['fastreduce_us']:.2f}x |")
    return "\n".join(out)


def bench_summary(path):
    """One row per type and op: the smallest CUB/fastreduce ratio over all sizes, over
    2^14..2^20, and at 2^28, with the 2^28 bandwidth."""
    data = json.load(open(path))
    groups = {}
    for r in data["rows"]:
        groups.setdefault((r["type"], r["op"]), []).append(r)
    out = [f"`{os.path.relpath(path, ROOT)}` on {data['device']['name']}: CUB time / fastreduce time "
           "(above 1: fastreduce faster)", "",
           "| type | op | lowest, all sizes (at n) | lowest, 2^14 ≤ n ≤ 2^20 | at 2^28 | fastreduce GB/s at 2^28 | CUB GB/s at 2^28 |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for (t, op), rows in groups.items():
        ratio = lambda r: r["cub_us"] / r["fastreduce_us"]
        low = min(rows, key=ratio)
        mid = min((r for r in rows if 2**14 <= r["n"] <= 2**20), key=ratio)
        big = next(r for r in rows if r["n"] == 2**28)
        out.append(f"| {t} | {op} | {ratio(low):.3f}x (n = {low['n']:,}) | {ratio(mid):.2f}x (n = {mid['n']:,}) | "
                   f"{ratio(big):.3f}x | {big['fastreduce_gbps']:.0f} | {big['cub_gbps']:.0f} |")
    return "\n".join(out)


def axis_peers(path):
    """The bench-axis rows, each with torch's time for the same shape (None when not measured)."""
    data = json.load(open(path))
    torch_path = path.replace("axis_", "axis_torch_", 1) if "axis_torch_" not in path else None
    torch_path = os.path.join(os.path.dirname(path), os.path.basename(path).replace("axis_", "axis_torch_", 1))
    torch = {}
    if os.path.exists(torch_path):
        for r in json.load(open(torch_path))["rows"]:
            if r.get("framework", "torch") == "torch":
                torch[(r["type"], r["op"], r["axis"], r["total"], r["length"])] = r["us"]
    for r in data["rows"]:
        r["torch_us"] = torch.get((r["type"], r["op"], r["axis"], r["total"], r["length"]))
        peers = [u for u in (r["cub_us"] or None, r["torch_us"]) if u]
        r["best_peer_us"] = min(peers) if peers else None
    return data, torch_path if torch else None


def axis_table(path):
    data, torch_path = axis_peers(path)
    out = [f"`{os.path.relpath(path, ROOT)}`" + (f" and `{os.path.relpath(torch_path, ROOT)}`" if torch_path else "") +
           f", float sum on {data['device']['name']}: GB/s = (bytes read + written) / time; "
           "1-D: `fastreduce::reduce` of the same elements in the same run; speedup: the best peer's time / ours", "",
           "| elements | axis | length | path | fastreduce GB/s | of 1-D | CUB segmented GB/s | torch.sum(dim) µs | fastreduce µs | speedup vs best peer |",
           "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        if (r["type"], r["op"], r["mode"]) != ("float", "sum", "fast"):
            continue
        length = "power law" if r["axis"] == "segments" else f"{r['length']:,}"
        cub = f"{r['cub_gbps']:.0f}" if r["cub_us"] else "-"
        torch = f"{r['torch_us']:.1f}" if r["torch_us"] else "-"
        speedup = f"{r['best_peer_us'] / r['fastreduce_us']:.2f}x" if r["best_peer_us"] else "-"
        out.append(f"| 2^{r['total'].bit_length() - 1} | {r['axis']} | {length} | {r['path']} | {r['fastreduce_gbps']:.0f} | "
                   f"{100 * r['fastreduce_gbps'] / r['flat_gbps']:.0f}% | {cub} | {torch} | {r['fastreduce_us']:.1f} | {speedup} |")
    return "\n".join(out)


def axis_summary(path):
    data, _ = axis_peers(path)
    groups = {}
    for r in data["rows"]:
        if r["mode"] == "fast":
            groups.setdefault((r["type"], r["op"], r["total"], r["axis"]), []).append(r)
    out = [f"`{os.path.relpath(path, ROOT)}` on {data['device']['name']}, every shape of the table per line: "
           "the lowest share of the 1-D bandwidth and the lowest speedup over the best peer (CUB segmented, torch)", "",
           "| type | op | elements | axis | lowest of 1-D (length) | lowest speedup vs best peer (length) | shapes at ≥ 90% of 1-D |",
           "|---|---|---:|---|---:|---:|---:|"]
    for (t, op, total, axis), rows in groups.items():
        share = lambda r: r["fastreduce_gbps"] / r["flat_gbps"]
        low = min(rows, key=share)
        peered = [r for r in rows if r["best_peer_us"]]
        name = lambda r: "power law" if axis == "segments" else f"{r['length']:,}"
        speed = "-"
        if peered:
            worst = min(peered, key=lambda r: r["best_peer_us"] / r["fastreduce_us"])
            speed = f"{worst['best_peer_us'] / worst['fastreduce_us']:.2f}x ({name(worst)})"
        good = sum(share(r) >= 0.9 for r in rows)
        out.append(f"| {t} | {op} | 2^{total.bit_length() - 1} | {axis} | {100 * share(low):.0f}% ({name(low)}) | {speed} | "
                   f"{good}/{len(rows)} |")
    return "\n".join(out)


def axis_modes(path):
    data = json.load(open(path))
    cell = {}
    for r in data["rows"]:
        cell.setdefault((r["axis"], r["total"], r["length"]), {})[r["mode"]] = r
    out = [f"`{os.path.relpath(path, ROOT)}`: float sum on {data['device']['name']}, both modes in the same run", "",
           "| elements | axis | length | fast µs | reproducible µs | reproducible / fast speed |",
           "|---:|---|---:|---:|---:|---:|"]
    for (axis, total, length), m in cell.items():
        if "fast" in m and "reproducible" in m:
            f, q = m["fast"]["fastreduce_us"], m["reproducible"]["fastreduce_us"]
            out.append(f"| 2^{total.bit_length() - 1} | {axis} | {length:,} | {f:.1f} | {q:.1f} | {f / q:.2f}x |")
    return "\n".join(out)


def modes_table(path):
    """`fastreduce bench --modes fast,reproducible,exact`: per type and size, each mode's µs per call
    (same run) and exact mode's speed relative to fast mode."""
    data = json.load(open(path))
    dev = data["device"]
    cell = {}
    for r in data["rows"]:
        cell.setdefault((r["type"], r["op"], r["n"]), {})[r["mode"]] = r
    modes = [m for m in ("fast", "reproducible", "exact") if any(m in c for c in cell.values())]
    out = [f"`{os.path.relpath(path, ROOT)}`: µs per call back to back, on {dev['name']} "
           f"(device copy {dev['copy_gbps']:.0f} GB/s read + write)", "",
           "| type | op | n | " + " | ".join(f"{m} µs" for m in modes) + " | CUB µs |"
           + (" exact GB/s | fast / exact |" if "exact" in modes else ""),
           "|---|---|---:|" + "---:|" * (len(modes) + 1) + ("---:|---:|" if "exact" in modes else "")]
    for (t, op, n), c in cell.items():
        times = " | ".join(f"{c[m]['fastreduce_us']:.2f}" if m in c else "-" for m in modes)
        cub = next(iter(c.values()))["cub_us"]
        line = f"| {t} | {op} | {n:,} | {times} | {cub:.2f} |"
        if "exact" in modes:
            e = c.get("exact")
            line += (f" {e['fastreduce_gbps']:.0f} | {c['fast']['fastreduce_us'] / e['fastreduce_us']:.2f} |"
                     if e and "fast" in c else " - | - |")
        out.append(line)
    return "\n".join(out)


def axis_exact(path):
    """`bench-axis --modes fast,reproducible,exact`: per type, axis and length, each mode's µs and
    exact mode's speed relative to fast mode."""
    data = json.load(open(path))
    cell = {}
    for r in data["rows"]:
        cell.setdefault((r["type"], r["axis"], r["total"], r["length"]), {})[r["mode"]] = r
    out = [f"`{os.path.relpath(path, ROOT)}`: sums on {data['device']['name']}, the three modes in the same run "
           "(segments: power-law lengths)", "",
           "| type | elements | axis | length | fast µs | reproducible µs | exact µs | fast / exact | exact's path |",
           "|---|---:|---|---:|---:|---:|---:|---:|---|"]
    for (t, axis, total, length), m in sorted(cell.items()):
        if "fast" in m and "exact" in m:
            f, e = m["fast"]["fastreduce_us"], m["exact"]["fastreduce_us"]
            q = f"{m['reproducible']['fastreduce_us']:.1f}" if "reproducible" in m else "-"
            shown = "" if axis == "segments" else f"{length:,}"
            out.append(f"| {t} | 2^{total.bit_length() - 1} | {axis} | {shown} | {f:.1f} | {q} | {e:.1f} | {f / e:.3f} "
                       f"| {m['exact'].get('path', '-')} |")
    return "\n".join(out)


def markdown_file(path):
    """A table written as markdown by the script that measured it (scripts/exact_vs_cccl.py)."""
    return f"`{os.path.relpath(path, ROOT)}`:\n\n" + open(path).read().strip()


def gpus_table(path):
    """The multi-GPU sum (`fastreduce bench --gpus ... --format json`): the collective against the
    single-GPU pass, per GPU count, size per GPU and mode."""
    data = json.load(open(path))
    single = {(r["n_per_gpu"], r["mode"]): r["local_us"] for r in data["rows"] if r["gpus"] == 1}
    fast = {(r["gpus"], r["n_per_gpu"]): r["collective_us"] for r in data["rows"] if r["mode"] == "fast"}
    modes = {r["mode"] for r in data["rows"]}
    ratio_name = "fast / reproducible" if modes <= {"fast", "reproducible"} else "fast / this mode"
    lines = [f"| GPUs | floats per GPU | mode | 1-GPU pass µs | collective µs | above the pass µs | weak scaling | {ratio_name} | bits |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in data["rows"]:
        n, mode, g = r["n_per_gpu"], r["mode"], r["gpus"]
        ratio = f'{fast[(g, n)] / r["collective_us"]:.2f}' if mode != "fast" and (g, n) in fast else ""
        bits = ("same on every rank" + (", = 1-GPU reduce of the whole array" if mode != "fast" else "")) if r["agree"] else "DIFFER"
        lines.append(f'| {g} | 2^{n.bit_length() - 1} | {mode} | {r["local_us"]:.1f} | {r["collective_us"]:.1f} | '
                     f'{r["collective_us"] - r["local_us"]:.1f} | {100 * r["local_us"] / r["collective_us"]:.1f}% | {ratio} | {bits} |')
    return "\n".join(lines)


def python_table(path):
    """`python -m fastreduce.bench --csv`: microseconds per call from Python, host overhead included,
    per op and dtype against torch (and, for float32 sums, the engine called directly)."""
    lines = [l for l in open(path).read().splitlines() if l and not l.startswith("#")]
    header = lines[0].split(",")
    rows = [dict(zip(header, l.split(","))) for l in lines[1:]]
    out = ["| op | dtype | input | fastreduce µs | torch µs | fastreduce / torch | engine µs | agree |",
           "|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        n = int(r["n"])
        shape = f"2^{n.bit_length() - 1}" if r["kind"] == "full" else r["shape"].replace("x", " x ") + ", dim -1"
        us = lambda k: f"{float(r[k]):.1f}" if r.get(k) else "-"
        ratio = (f'{float(r["fastreduce us"]) / float(r["torch us"]):.2f}x'
                 if r.get("fastreduce us") and r.get("torch us") else "-")
        out.append(f'| {r["op"]} | {r["dtype"]} | {shape} | {us("fastreduce us")} | {us("torch us")} | {ratio} | '
                   f'{us("engine us")} | {"yes" if r["agree"] == "True" else "NO"} |')
    return "\n".join(out)


def ops_table(path):
    """argmax, var, norm2 and dot against fast Sum over the same bytes, CUB/cuBLAS and torch."""
    data = json.load(open(path))
    lines = ["| op | n | fastreduce µs | GB/s | of Sum | peer | peer µs | peer / fastreduce | torch µs | torch / fastreduce | agree |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in data["rows"]:
        us, n = r["fastreduce_us"], r["n"]
        peer, peer_us = (r["peer"], f'{r["peer_us"]:.2f}') if r["peer_us"] > 0 else ("none", "-")
        peer_ratio = f'{r["peer_us"] / us:.2f}x' if r["peer_us"] > 0 else "-"
        lines.append(f'| {r["op"]} | 2^{n.bit_length() - 1} | {us:.2f} | {r["bytes"] / us / 1e3:.0f} | '
                     f'{100 * r["sum_us"] / us:.1f}% | {peer} | {peer_us} | {peer_ratio} | '
                     f'{r["torch_us"]:.2f} | {r["torch_us"] / us:.2f}x | {"yes" if r["agree"] else "NO"} |')
    return "\n".join(lines)


def main():
    tables = {}
    specs = []
    for gpu in ("H200", "H100"):
        ladder = lambda p, g=gpu: ladder_table(p, g)
        specs += [(f"ladder-2p28-{gpu}", f"ladder_{gpu}_*_2p28.json", ladder),
                  (f"ladder-2p24-{gpu}", f"ladder_{gpu}_*_2p24.json", ladder),
                  (f"ladder-2p20-{gpu}", f"ladder_{gpu}_*_2p20.json", ladder),
                  (f"ladder-int32-2p24-{gpu}", f"ladder_int32_{gpu}_*_2p24.json", ladder),
                  (f"held-{gpu}", f"ladder_held_{gpu}_*.json", held_table),
                  (f"sweep-{gpu}", f"ladder_sweep_{gpu}_*.json", sweep_table),
                  (f"bench-summary-{gpu}", f"bench_{gpu}_*.json", bench_summary),
                  (f"bench-float-sum-{gpu}", f"bench_{gpu}_*.json", lambda p: bench_table(p, ("float", "sum"))),
                  (f"modes-{gpu}", f"modes_{gpu}_*.json", modes_table),
                  (f"axis-exact-{gpu}", f"axis_exact_{gpu}_*.json", axis_exact),
                  (f"exact-wide-{gpu}", f"exact_wide_{gpu}_*.json", modes_table),
                  (f"exact-cccl-{gpu}", f"exact_vs_cccl_{gpu}_*.md", markdown_file),
                  (f"axis-{gpu}", f"axis_{gpu}_*.json", axis_table),
                  (f"axis-summary-{gpu}", f"axis_{gpu}_*.json", axis_summary),
                  (f"axis-modes-{gpu}", f"axis_modes_{gpu}_*.json", axis_modes),
                  (f"ops-{gpu}", f"ops_{gpu}_*.json", ops_table)]
    specs.append(("gpus-H200x2", "gpus_H200x2_*.json", gpus_table))
    specs.append(("gpus-H100x2", "gpus_H100x2_*.json", gpus_table))
    specs.append(("python-H100", "python_H100_*.csv", python_table))
    specs.append(("python-H200", "python_H200_*.csv", python_table))
    for name, pattern, render in specs:
        path = newest(pattern)
        if path:
            tables[name] = render(path)
    for gpu in ("H200", "H100"):
        for rung, text in rung_facts(gpu).items():
            tables[f"rung-{rung}-{gpu}"] = text
    stale = []
    for doc in ("README.md", os.path.join("docs", "ladder.md")):
        doc_path = os.path.join(ROOT, doc)
        if not os.path.exists(doc_path):
            continue
        text = open(doc_path).read()
        updated = text
        for name, table in tables.items():
            updated = re.sub(rf"(<!-- {re.escape(name)} -->\n)(?:.*?\n)?(<!-- /{re.escape(name)} -->)",
                             lambda m: m.group(1) + table + "\n" + m.group(2), updated, flags=re.S)
        if updated != text:
            stale.append(doc)
            if "--check" not in sys.argv:
                open(doc_path, "w").write(updated)
    if "--check" in sys.argv:
        if stale:
            print("out of date: " + ", ".join(stale) + " (run scripts/results_tables.py)")
        sys.exit(1 if stale else 0)
    print(("regenerated: " + ", ".join(stale)) if stale else "README.md and docs/ladder.md up to date")


if __name__ == "__main__":
    main()
