"""Seconds per pricing of tools/blackscholes.py's book: the priced part
(``price`` and the two means it reports), without making the inputs.

    python tools/bench_priced.py numpy|cupy [n] [dtype] [reps]
    python -m grumpy.run tools/bench_priced.py grumpy [n] [dtype] [reps]

One warm-up pricing (kernels compiled, inputs moved to a GPU), then reps
timed pricings, each ended by its means as Python floats (so a lazy or
asynchronous result is complete).  Prints one line: the label, the median
and the minimum seconds of a pricing, and the last means.
"""

import statistics
import sys
import time

import numpy as np

from blackscholes import VOLATILITY, make_inputs, price, rate


def main(argv):
    mode = argv[1]
    n = int(argv[2]) if len(argv) > 2 else 10_000_000
    dtype = np.dtype(argv[3] if len(argv) > 3 else "float64")
    reps = int(argv[4]) if len(argv) > 4 else 10
    S, X, T = make_inputs(n, dtype)
    if mode == "cupy":
        import cupy as cp
        S, X, T = (cp.asarray(a) for a in (S, X, T))
    times, means = [], None
    for i in range(reps + 1):
        t0 = time.perf_counter()
        call, put = price(S, X, T, rate(i), VOLATILITY)
        means = (float(call.mean(dtype=np.float64)), float(put.mean(dtype=np.float64)))
        if i:
            times.append(time.perf_counter() - t0)
    print(f"{mode} n={n} {dtype}: median {statistics.median(times):.6f} s min {min(times):.6f} s "
          f"means {means[0]:.8e} {means[1]:.8e}")


if __name__ == "__main__":
    main(sys.argv)
