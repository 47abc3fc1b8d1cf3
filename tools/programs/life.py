"""Conway's Game of Life on a torus with ``np.roll``, bool and uint8, in
plain NumPy.

Usage::

    python tools/programs/life.py [n] [generations]

    n            cells per side (default 2000: a 3.8 MiB bool board)
    generations  generations (default 150)

The board is a bool array (30% alive, seeded).  Each generation counts the
eight neighbours of every cell as uint8 by summing rolled copies of the
board (``np.roll`` along one axis, or both for the diagonals), then
applies the rule as boolean algebra::

    alive = (count == 3) | (board & (count == 2))

Output: the population every 10 generations and at the end, and how many
cells changed in the last generation (integers, exact).  When
GRUMPY_AB_OUTDIR is set the final board and neighbour counts are saved
there as board.npy and counts.npy.
"""

import os
import sys

import numpy as np

SHIFTS = [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]


def neighbours(board):
    cells = board.astype(np.uint8)
    count = np.zeros(board.shape, dtype=np.uint8)
    for dy, dx in SHIFTS:
        count += np.roll(cells, (dy, dx), axis=(0, 1))
    return count


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 2000
    generations = int(argv[2]) if len(argv) > 2 else 150
    rng = np.random.default_rng(1970)
    board = rng.random((n, n)) < 0.3
    print(f"life n={n} generations={generations} population={int(board.sum())}")
    count = None
    changed = 0
    for gen in range(1, generations + 1):
        count = neighbours(board)
        new = (count == 3) | (board & (count == 2))
        changed = int(np.count_nonzero(new != board))
        board = new
        if gen % 10 == 0 or gen == generations:
            print(f"generation {gen}: population={int(board.sum())}")
    print(f"changed in the last generation: {changed}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "board.npy"), board)
        np.save(os.path.join(out, "counts.npy"), count)


if __name__ == "__main__":
    main(sys.argv)
