"""Start-up cost of grumpy on a trivial NumPy script (issue "never slower":
within 10 ms and 10 MiB of plain NumPy).

    python tools/startup.py [--runs 15]

Runs, interleaved, ``python trivial.py``, ``python -m grumpy.run trivial.py``,
``GRUMPY=1 python trivial.py`` and ``python -m grumpy.run`` with
``GRUMPY_DEVICE=cpu`` (which never looks for a CUDA driver), where trivial.py imports NumPy and sums
three ones; prints the median wall time (ms) and the median peak resident
memory (MiB, ru_maxrss of the child) of each, and their differences from
plain NumPy.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

TRIVIAL = "import numpy as np\nprint(np.ones(3).sum())\n"


def once(argv, env):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{argv}: exit {p.returncode}")
    return wall * 1e3, usage.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(TRIVIAL)
    base = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
    base["PYTHONPATH"] = root
    variants = {
        "numpy": ([sys.executable, f.name], base),
        "python -m grumpy.run": ([sys.executable, "-m", "grumpy.run", f.name], base),
        "GRUMPY=1": ([sys.executable, f.name], dict(base, GRUMPY="1")),
        # on a machine with a CUDA driver, GRUMPY_DEVICE=auto (the default)
        # looks for the driver at start; cpu never does
        "grumpy.run, device cpu": ([sys.executable, "-m", "grumpy.run", f.name], dict(base, GRUMPY_DEVICE="cpu")),
    }
    for argv, env in variants.values():  # warm the page cache
        once(argv, env)
    got = {name: [] for name in variants}
    for _ in range(args.runs):
        for name, (argv, env) in variants.items():
            got[name].append(once(argv, env))
    os.unlink(f.name)
    ms0 = statistics.median(w for w, _ in got["numpy"])
    mb0 = statistics.median(m for _, m in got["numpy"])
    print(f"{'variant':<22} {'median ms':>10} {'+ms':>8} {'median MiB':>11} {'+MiB':>7}   ({args.runs} interleaved runs)")
    for name, rows in got.items():
        ms = statistics.median(w for w, _ in rows)
        mb = statistics.median(m for _, m in rows)
        print(f"{name:<22} {ms:>10.1f} {ms - ms0:>+8.1f} {mb:>11.1f} {mb - mb0:>+7.1f}")


if __name__ == "__main__":
    main()
