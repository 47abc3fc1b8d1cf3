"""Lattice random walks in two dimensions: mean squared displacement,
return to the origin and first passage, with integer arrays, in plain
NumPy.

Usage::

    python tools/programs/random_walk.py [walkers] [steps]

    walkers  independent walkers (default 10_000)
    steps    steps per walk (default 1500: 15M moves, int8 and int32 arrays)

Each move is one of four directions, drawn as int8 codes
``rng.integers(0, 4, size=(walkers, steps), dtype=np.int8)`` (seeded);
the unit steps ``dx = (code == 0).astype(np.int8) - (code == 1)`` and
``dy`` likewise; positions by ``np.cumsum(..., axis=1, dtype=np.int32)``;
the squared distance ``x*x + y*y`` (int32).  Statistics:

- the mean squared displacement over the walkers at every step
  (``r2.mean(axis=0)``) and the diffusion coefficient from a
  least-squares line through it (``np.polyfit``; 2-D lattice walks have
  MSD = t);
- the fraction of walkers back at the origin at least once
  (``(r2 == 0).any(axis=1)``);
- the first passage to distance L = 20 (``np.argmax(r2 >= L*L,
  axis=1)``, with walkers that never get there marked) and its mean.

Output: MSD at a few times (9 significant digits), the fitted slope (6
significant digits), the return fraction and the first-passage count and
mean (exact or 9 digits).  When GRUMPY_AB_OUTDIR is set the MSD curve
and the first-passage times are saved there as msd.npy and passage.npy.
"""

import os
import sys

import numpy as np


def main(argv):
    walkers = int(argv[1]) if len(argv) > 1 else 10000
    steps = int(argv[2]) if len(argv) > 2 else 1500
    L = 20
    rng = np.random.default_rng(1905)
    code = rng.integers(0, 4, size=(walkers, steps), dtype=np.int8)
    dx = (code == 0).astype(np.int8) - (code == 1)
    dy = (code == 2).astype(np.int8) - (code == 3)
    x = np.cumsum(dx, axis=1, dtype=np.int32)
    y = np.cumsum(dy, axis=1, dtype=np.int32)
    r2 = x * x + y * y
    msd = r2.mean(axis=0)
    t = np.arange(1, steps + 1)
    slope, intercept = np.polyfit(t, msd, 1)
    returned = (r2 == 0).any(axis=1)
    reached = r2 >= L * L
    passage = np.where(reached.any(axis=1), np.argmax(reached, axis=1) + 1, -1)
    ok = passage > 0
    print(f"random_walk walkers={walkers} steps={steps}")
    for k in (10, 100, steps // 2, steps):
        print(f"MSD at step {k}: {float(msd[k - 1]):.9e}")
    print(f"MSD slope={slope:.5e} (theory 1) intercept={intercept:.2e}")
    print(f"returned to origin: {int(returned.sum())} of {walkers}")
    print(f"reached distance {L}: {int(ok.sum())} of {walkers}, mean first passage={float(passage[ok].mean()):.9e}")
    print(f"farthest: {float(np.sqrt(r2.max())):.9e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "msd.npy"), msd)
        np.save(os.path.join(out, "passage.npy"), passage)


if __name__ == "__main__":
    main(sys.argv)
