"""Row norms and a dense layer over a stack, in plain NumPy: the einsum of
scikit-learn's ``row_norms`` and ``x @ W`` of an (batch, tokens, features)
stack with one weight matrix, as in attention / MLP inference code.

Usage::

    python tools/rownorms_dense.py [n] [iterations]

    n           rows of the (n, 8) samples (default 400_000); the stack is
                (n // 3200, 125, 256) float64
    iterations  passes (default 5)

Per pass: ``np.einsum("ij,ij->i", X, X)`` (squared row norms), the rows
scaled to unit norm, and ``np.reshape(np.reshape(A, (b, 125, 1, 256)) @ W,
(b, 125, 256))`` followed by ``np.tanh``.

Output: per pass the sums of the norms and of the layer's output
(9 significant digits).  When GRUMPY_AB_OUTDIR is set the last pass's
norms and layer output are saved as norms.npy and layer.npy.
"""

import os
import sys

import numpy as np


def main(argv):
    n = int(argv[1]) if len(argv) > 1 else 400_000
    iterations = int(argv[2]) if len(argv) > 2 else 5
    rng = np.random.default_rng(77)
    X = rng.standard_normal((n, 8))
    b = max(n // 3200, 1)
    A = rng.standard_normal((b, 125, 256))
    W = rng.standard_normal((256, 256)) / 16.0
    print(f"rownorms_dense n={n} stack=({b}, 125, 256) iterations={iterations}")
    norms = layer = None
    for i in range(iterations):
        norms = np.einsum("ij,ij->i", X, X)
        Xn = X / np.sqrt(norms)[:, None]
        layer = np.tanh(np.reshape(np.reshape(A, (b, 125, 1, 256)) @ W, (b, 125, 256)) * (1.0 + 0.1 * i))
        print(f"pass {i}: norms={float(norms.sum()):.8e} unit={float(np.abs(Xn).sum()):.8e} "
              f"layer={float(layer.sum()):.8e}")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "norms.npy"), norms)
        np.save(os.path.join(out, "layer.npy"), layer)


if __name__ == "__main__":
    main(sys.argv)
