"""The first run a user sees: tools/programs/ with an empty kernel cache.

Usage::

    python tools/cold_start.py [--reps N] [--only NAME,...] [--env VAR=VALUE ...]

    --reps  runs per variant, interleaved (default 3); the median is shown
    --only  only these programs (names as in tools/programs/run_all.py)
    --env   a variable for a second grumpy variant (repeatable): its column
            shows the same cold runs with the variable set

Each grumpy run gets a fresh, empty ``GRUMPY_CACHE_DIR``, so every kernel
it launches is compiled in that run (as in a user's first run, or any run
after grumpy or its libraries changed); NumPy runs the same program in its
own process.  Wall time per process, start-up included.  Outputs are not
compared here (tools/programs/run_all.py does that, warm).

Prints one row per program (NumPy s, grumpy s and speed-up, then the
variant's) and the geometric means of the speed-ups.
"""

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "programs"))
sys.path.insert(0, TOOLS)

import run_all  # noqa: E402  (after the path is set)


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return dt


def cold_grumpy(script, args, extra):
    d = tempfile.mkdtemp(prefix="grumpy-cold-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
        env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR=d, **extra)
        return timed([sys.executable, "-m", "grumpy.run", script] + args, env)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--env", action="append", default=[])
    o = ap.parse_args()
    variant = dict(e.split("=", 1) for e in o.env)
    only = set(filter(None, o.only.split(",")))
    plain_env = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
    rows, logs = [], {"grumpy": [], "variant": []}
    for p in run_all.programs(1.0):
        if only and p.name not in only:
            continue
        script = os.path.join(TOOLS, "programs", p.script)
        t = {"numpy": [], "grumpy": [], "variant": []}
        for _ in range(o.reps):
            t["numpy"].append(timed([sys.executable, script] + p.args, plain_env))
            t["grumpy"].append(cold_grumpy(script, p.args, {}))
            if variant:
                t["variant"].append(cold_grumpy(script, p.args, variant))
        m = {k: statistics.median(v) for k, v in t.items() if v}
        row = [p.name, f"{m['numpy']:.3f}", f"{m['grumpy']:.3f}", f"{m['numpy'] / m['grumpy']:.2f}"]
        logs["grumpy"].append(math.log(m["numpy"] / m["grumpy"]))
        if variant:
            row += [f"{m['variant']:.3f}", f"{m['numpy'] / m['variant']:.2f}"]
            logs["variant"].append(math.log(m["numpy"] / m["variant"]))
        rows.append(row)
        print(" | ".join(row), flush=True)
    head = ["program", "numpy s", "grumpy cold s", "x"]
    if variant:
        head += [" ".join(o.env) + " cold s", "x"]
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    for k, v in logs.items():
        if v:
            name = "grumpy" if k == "grumpy" else " ".join(o.env)
            print(f"geometric mean, {name}, cold: {math.exp(sum(v) / len(v)):.2f}x over {len(v)} programs")


if __name__ == "__main__":
    main()
