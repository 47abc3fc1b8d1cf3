"""Measure the size from which grumpy's lazy path beats NumPy's eager one.

Usage::

    GRUMPY_MIN_BYTES=65536 python -m grumpy.run tools/threshold.py   # grumpy
    python tools/threshold.py                                         # NumPy

(GRUMPY_MIN_BYTES must be in the environment before grumpy starts: it is
read once, when capture is enabled.)

For float64 arrays of n elements, times the statement ``d = (a * b + c) * 0.5 - a``
followed by reading one element of d (which forces it), as a median of
repeated runs, and prints microseconds per statement for each n.  The
crossover of the two columns is the threshold behind GRUMPY_MIN_BYTES.
"""

import sys
import time

import numpy as np


def main():
    sizes = [8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]
    for n in sizes:
        rng = np.random.default_rng(0)
        a, b, c = (rng.standard_normal(n) for _ in range(3))
        for _ in range(5):
            float(((a * b + c) * 0.5 - a)[n // 2])
        reps = max(10, int(2e7 / n))
        ts = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(reps):
                d = (a * b + c) * 0.5 - a
                float(d[n // 2])
            ts.append((time.perf_counter() - t0) / reps)
        ts.sort()
        print(f"n={n:8d} bytes={8 * n:9d} us_per_statement={ts[3] * 1e6:9.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
