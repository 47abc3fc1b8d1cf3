"""Mandelbrot set escape times on complex arrays with boolean-mask
compaction, in plain NumPy.

Usage::

    python tools/programs/mandelbrot.py [width] [height] [max_iter]

    width, height  pixels (default 1600 x 1200: 31 MB of complex128)
    max_iter       iteration cap (default 100)

The classic vectorised form: ``c = x[None, :] + 1j * y[:, None]`` over
[-2.2, 0.8] x [-1.2, 1.2], flattened; ``z = 0``; each iteration::

    z = z * z + c
    escaped = z.real * z.real + z.imag * z.imag > 4.0
    counts[index[escaped]] = it
    keep = ~escaped
    z, c, index = z[keep], c[keep], index[keep]

so the arrays shrink as points escape (``z[mask]`` compaction).  Points
that never escape keep ``max_iter``.

Output: how many points are still iterating every 20 iterations, the
number in the set, the area estimate (9 significant digits) and the mean
escape count of the escaped points.  When GRUMPY_AB_OUTDIR is set the
escape counts are saved there as counts.npy (int32, compared exactly).
"""

import os
import sys

import numpy as np


def main(argv):
    width = int(argv[1]) if len(argv) > 1 else 1600
    height = int(argv[2]) if len(argv) > 2 else 1200
    max_iter = int(argv[3]) if len(argv) > 3 else 100
    x0, x1, y0, y1 = -2.2, 0.8, -1.2, 1.2
    x = np.linspace(x0, x1, width)
    y = np.linspace(y0, y1, height)
    c = (x[None, :] + 1j * y[:, None]).ravel()
    z = np.zeros_like(c)
    index = np.arange(c.size)
    counts = np.full(c.size, max_iter, dtype=np.int32)
    print(f"mandelbrot {width}x{height} max_iter={max_iter}")
    for it in range(max_iter):
        z = z * z + c
        escaped = z.real * z.real + z.imag * z.imag > 4.0
        counts[index[escaped]] = it
        keep = ~escaped
        z, c, index = z[keep], c[keep], index[keep]
        if (it + 1) % 20 == 0:
            print(f"iteration {it + 1}: {z.size} points still iterating")
    inside = int(np.count_nonzero(counts == max_iter))
    pixel_area = (x1 - x0) / (width - 1) * (y1 - y0) / (height - 1)
    outside = counts[counts < max_iter]
    print(f"in the set: {inside} points, area ~ {inside * pixel_area:.9e}")
    print(f"mean escape count: {float(outside.mean()):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "counts.npy"), counts.reshape(height, width))


if __name__ == "__main__":
    main(sys.argv)
