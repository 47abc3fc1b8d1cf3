"""Time NumPy's ``np.multiply(a, b, out=t)`` by where ``t`` starts relative
to ``a`` and ``b`` modulo 4096 bytes: the "4K aliasing" behind grumpy's
cache-line-aligned plain buffers (hooks/allocator.c).

Usage::

    python tools/aliasing.py [n ...]      # float64 elements per array (default 2048 32768)

All three arrays are views of one buffer, placed at chosen byte offsets
from a page boundary, so that only their relative placement changes.
Prints, for each n and each offset of ``t`` (bytes, modulo 4096, from
``a`` and ``b``, which share a page offset), the best time per call of
five batches in microseconds.  Plain NumPy: run it without grumpy.

glibc's malloc puts a 16-byte header before each chunk, so NumPy's arrays
of the same 2^k-byte size, allocated one after another, start 16 or 32
bytes apart modulo 4096: the offsets that measure slow here.
"""

import sys
import time

import numpy as np

OFFSETS = [0, 16, 32, 48, 64, 128, 256, 1024, 2048, 4096 - 64, 4096 - 48, 4096 - 32, 4096 - 16]


def best_time_us(f, calls):
    for _ in range(max(calls // 10, 10)):
        f()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def sweep(n):
    """n: float64 elements per array.  Returns [(offset bytes, us)]."""
    nbytes = 8 * n
    region = 3 * (nbytes + 8192) + 4096
    buf = np.zeros(region // 8)
    lead = -buf.ctypes.data % 4096  # bytes to the first page boundary

    def at(offset):  # the n-element view starting `offset` bytes past that boundary
        start = (lead + offset) // 8
        return buf[start:start + n]

    a, b = at(0), at(nbytes + 8192)
    a[:] = 1.0
    b[:] = 2.0
    calls = max(20, int(4e6 / n))
    return [(off, best_time_us(lambda t=at(2 * (nbytes + 8192) + off): np.multiply(a, b, out=t), calls))
            for off in OFFSETS]


def main(argv):
    sizes = [int(s) for s in argv[1:]] or [2048, 32768]
    print("| n (float64) | " + " | ".join(str(o) for o in OFFSETS) + " |")
    print("|---" * (len(OFFSETS) + 1) + "|")
    for n in sizes:
        row = sweep(n)
        print(f"| {n} | " + " | ".join(f"{us:.2f}" for _, us in row) + " |")


if __name__ == "__main__":
    main(sys.argv)
