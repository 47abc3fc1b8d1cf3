"""Per-step time of the Jacobi + heat loop of tools/jacobi.py, in NumPy, CuPy or grumpy.

Usage::

    python tools/bench_jacobi.py numpy|cupy N STEPS
    GRUMPY_DEVICE=gpu python -m grumpy.run tools/bench_jacobi.py grumpy N STEPS

Each step is ``center[:] = 0.2 * (center + north + east + west + south)`` on
views of an N x N float64 grid and ``inner += 0.1 * lap`` with the 5-point
Laplacian of views of a second grid.  Three steps first (compiles, the
device opened), then STEPS steps timed, the grids made anew (so their
upload counts): microseconds per step, the two grids' sums, and for
grumpy its device counters.  CuPy is synchronized before the clock stops.
"""
import sys
import time


def main(argv):
    which, n, steps = argv[1], int(argv[2]), int(argv[3])
    if which == "cupy":
        import cupy as np

        sync = np.cuda.Device().synchronize
    else:
        import numpy as np

        def sync():
            pass

    def run(n, steps):
        grid = np.zeros((n, n))
        grid[0, :] = 1.0
        grid[-1, :] = -1.0
        grid[:, 0] = 0.5
        center, north, east = grid[1:-1, 1:-1], grid[0:-2, 1:-1], grid[1:-1, 2:]
        west, south = grid[1:-1, 0:-2], grid[2:, 1:-1]
        u = np.zeros((n, n))
        u[n // 4: n // 2, n // 4: n // 2] = 1.0
        inner = u[1:-1, 1:-1]
        for _ in range(steps):
            center[:] = 0.2 * (center + north + east + west + south)
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * inner
            inner += 0.1 * lap
        return float(grid.sum()), float(u.sum())

    run(n, 3)
    sync()
    t = time.perf_counter()
    sums = run(n, steps)
    sync()
    dt = time.perf_counter() - t
    extra = ""
    if which == "grumpy":
        import grumpy

        s = grumpy.stats()
        extra = (f" gpu_kernels={s['gpu_kernels_launched']} kernel_s={s['gpu_kernel_seconds']:.4f}"
                 f" copy_s={s['gpu_copy_seconds']:.4f} h2d={s['bytes_h2d']} d2h={s['bytes_d2h']}")
    print(f"{which} n={n} steps={steps}: {dt / steps * 1e6:.1f} us/step sums={sums}{extra}")


if __name__ == "__main__":
    main(sys.argv)
