"""Time per step of a loop of one small statement: what a back end's launch
costs (driver calls, copies, waits) when the work itself is small.

    python tools/step_overhead.py [n] [steps] [batches]
    GRUMPY_DEVICE=gpu python -m grumpy.run tools/step_overhead.py 1048576

n        float64 points of a 1-D grid (default 1048576: 8 MiB)
steps    steps per timed batch (default 200)
batches  timed batches after one untimed (default 5)

Each step is an explicit heat-equation update written in place,
``u[1:-1] += 0.25 * (u[2:] - 2.0 * u[1:-1] + u[:-2])``: one fused kernel
per step under grumpy, its grid resident on a GPU.  A batch ends by
reading one value (``float(u[n // 2])``), which brings the grid back to
the host.  Prints the median microseconds per step over the batches and a
checksum; every operation is basic float arithmetic, so a correct run
prints NumPy's checksum exactly.
"""

import statistics
import sys
import time

import numpy as np


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 1 << 20
    steps = int(argv[2]) if len(argv) > 2 else 200
    batches = int(argv[3]) if len(argv) > 3 else 5
    u = np.zeros(n)
    u[n // 4: n // 2] = 1.0
    per_step = []
    for b in range(batches + 1):
        t0 = time.perf_counter()
        for _ in range(steps):
            u[1:-1] += 0.25 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        float(u[n // 2])
        if b:  # the first batch compiles
            per_step.append((time.perf_counter() - t0) / steps * 1e6)
    print(f"n={n} steps={steps}x{batches}: {statistics.median(per_step):.1f} us per step "
          f"(min {min(per_step):.1f}, max {max(per_step):.1f})", file=sys.stderr)
    print(f"checksum {float(u.sum())!r} {float((u * u).sum())!r}")


if __name__ == "__main__":
    main(sys.argv)
