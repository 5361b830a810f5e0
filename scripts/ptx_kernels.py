#!/usr/bin/env python3
"""Compare the kernels of two PTX files by their bodies, names aside.

    scripts/ptx_kernels.py old.ptx new.ptx [--demangle]

Each .entry is cut out, its own name and its parameters' names replaced by placeholders, so that
a kernel whose template arguments were renamed (a reduction type instead of an op) but whose code
is the same compares equal. Prints, per kernel of the old file, whether a kernel of the new file
has the same body, and a summary; exit status 1 if any old kernel has no twin."""
import re
import subprocess
import sys
from collections import Counter


def kernels(path):
    text = open(path).read()
    out = {}
    for m in re.finditer(r"\.visible \.entry (\S+)\((.*?)\n\}\n", text, re.S):
        name, body = m.group(1), m.group(2)
        norm = body.replace(name, "KERNEL")
        norm = re.sub(r"\b_Z\w+", "SYMBOL", norm)  # other mangled names (parameters, globals)
        norm = re.sub(r"\$L__\w+", lambda l: l.group(0).split("_")[-1], norm)
        out[name] = norm
    return out


def demangle(names):
    try:
        r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        return r.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return list(names)


def main():
    old, new = kernels(sys.argv[1]), kernels(sys.argv[2])
    pretty = "--demangle" in sys.argv
    new_bodies = Counter(new.values())
    same = 0
    missing = []
    for name, body in old.items():
        if new_bodies[body] > 0:
            new_bodies[body] -= 1
            same += 1
        else:
            missing.append(name)
    names = demangle(missing) if pretty else missing
    for n in names:
        print("changed:", n[:200])
    print(f"{same} of {len(old)} kernels of {sys.argv[1]} have a twin in {sys.argv[2]} ({len(new)} kernels)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
