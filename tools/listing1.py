"""Listing 1 of Ravishankar & Grover: ``z = x*x + 2*x*y + y*y`` at scale.

Usage::

    python tools/listing1.py [n] [dtype] [iterations]

    n           elements of x, y and z (default 10_000_000)
    dtype       int32 (the paper's) or float64 (default float64)
    iterations  times z is computed (default 10)

A plain NumPy program (it does not know about grumpy).  NumPy computes the
expression as six passes over memory with four temporaries; a fusing
runtime can do one pass that reads x and y and writes z, i.e.
3 * n * itemsize bytes per iteration.  Each iteration reads one element of z,
which forces z to be computed.

Output: a few lines on stdout, exact for int32 and rounded for float64 so
that 4-ULP differences cannot change them.  When GRUMPY_AB_OUTDIR is set (by
``python -m grumpy.ab``) the last z is saved there as z.npy.
"""

import os
import sys

import numpy as np


def make_inputs(n, dtype):
    """x, y: n values of ``dtype`` from NumPy's legacy global generator."""
    np.random.seed(20180224)
    if dtype == "int32":
        # |x|, |y| < 10_000: z = (x + y)**2 < 4e8 fits int32, no wrap-around
        x = np.random.randint(-10_000, 10_000, size=n, dtype=np.int32)
        y = np.random.randint(-10_000, 10_000, size=n, dtype=np.int32)
    elif dtype == "float64":
        x = np.random.uniform(-1.0, 1.0, n)
        y = np.random.uniform(-1.0, 1.0, n)
    else:
        raise SystemExit(f"listing1: dtype must be int32 or float64, not {dtype!r}")
    return x, y


def parse(argv):
    n = int(argv[1]) if len(argv) > 1 else 10_000_000
    dtype = argv[2] if len(argv) > 2 else "float64"
    iterations = int(argv[3]) if len(argv) > 3 else 10
    return n, dtype, iterations


def sample_index(i, n):
    """Which element of z iteration i reads (spread over the array)."""
    return (i * 7_919_993 + 12_345) % n


def report(z, samples, dtype, iterations):
    """Print the summary and save z; shared with the numexpr peer."""
    n = z.size
    if dtype == "int32":
        print(f"listing1 n={n} dtype=int32 iterations={iterations}")
        print("samples:", " ".join(str(int(s)) for s in samples))
        print(f"sum(z) = {int(z.sum(dtype=np.int64))}")
    else:
        print(f"listing1 n={n} dtype=float64 iterations={iterations}")
        print("samples:", " ".join(f"{float(s):.10e}" for s in samples))
        print(f"sum(z) = {float(z.sum()):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "z.npy"), z)


def main(argv):
    n, dtype, iterations = parse(argv)
    x, y = make_inputs(n, dtype)
    samples = []
    z = None
    for i in range(iterations):
        z = x * x + 2 * x * y + y * y
        samples.append(z[sample_index(i, n)])
    report(z, samples, dtype, iterations)


if __name__ == "__main__":
    main(sys.argv)
