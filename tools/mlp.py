"""Training of a two-layer perceptron (MNIST-style) in plain NumPy: the
paper's Listing 2 at a realistic size.

Usage::

    python tools/mlp.py [batch] [iterations]

    batch       examples in the (full) batch (default 4096)
    iterations  SGD steps (default 5)

float32 throughout: inputs of 1024 features, a ReLU hidden layer of 2048
units, 10 classes, softmax cross-entropy.  Each iteration is one forward
pass, one backward pass and one SGD step (learning rate 0.02), written as a
NumPy user writes it: ``h = np.maximum(X @ W1 + b1, 0)``, ``logits = h @ W2
+ b2``, the max-subtracted softmax (``exp``, ``sum(axis=1, keepdims=True)``),
``dlogits = (p - Y) / batch``, ``dW2 = h.T @ dlogits``, ``dh = (dlogits @
W2.T) * (h > 0)``, ``dW1 = X.T @ dh``, bias gradients by ``sum(axis=0)`` and
``W1 = W1 - lr * dW1`` (rebinding, not in place).  Per iteration that is
two 4096 x 1024 x 2048 matrix products (about 34 GFLOP together), two thin
ones with the 10 classes and the elementwise work and reductions around
them.  The data are a seeded Gaussian mixture: one centre per class plus
unit noise, so the loss falls.

Output: per iteration the mean cross-entropy of the batch before the step
(float32, printed to 4 decimals, about 5 significant digits, so that a few
ULP of difference in the matrix products cannot change the text).  When
GRUMPY_AB_OUTDIR is set the final W2 is saved there as W2.npy.
"""

import os
import sys

import numpy as np

FEATURES, HIDDEN, CLASSES = 1024, 2048, 10
LEARNING_RATE = 0.02


def parse(argv):
    batch = int(argv[1]) if len(argv) > 1 else 4096
    iterations = int(argv[2]) if len(argv) > 2 else 5
    return batch, iterations


def make_inputs(batch):
    """X (batch, 1024), one-hot Y (batch, 10) and the initial weights, float32."""
    rng = np.random.default_rng(20180225)
    labels = rng.integers(0, CLASSES, batch)
    centres = rng.standard_normal((CLASSES, FEATURES), dtype=np.float32) * 0.25
    X = centres[labels] + rng.standard_normal((batch, FEATURES), dtype=np.float32)
    Y = np.eye(CLASSES, dtype=np.float32)[labels]
    # He initialisation; Python float factors keep float32 (NEP 50)
    W1 = rng.standard_normal((FEATURES, HIDDEN), dtype=np.float32) * (2.0 / FEATURES) ** 0.5
    b1 = np.zeros(HIDDEN, dtype=np.float32)
    W2 = rng.standard_normal((HIDDEN, CLASSES), dtype=np.float32) * (1.0 / HIDDEN) ** 0.5
    b2 = np.zeros(CLASSES, dtype=np.float32)
    return X, Y, [W1, b1, W2, b2]


def step(X, Y, W1, b1, W2, b2, lr):
    """One forward + backward pass and SGD step: (loss, new parameters)."""
    batch = X.shape[0]
    # forward
    h = np.maximum(X @ W1 + b1, 0)
    logits = h @ W2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    p = e / s
    loss = -(Y * (shifted - np.log(s))).sum() / batch
    # backward
    dlogits = (p - Y) / batch
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dh = (dlogits @ W2.T) * (h > 0)
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    # SGD
    W1 = W1 - lr * dW1
    b1 = b1 - lr * db1
    W2 = W2 - lr * dW2
    b2 = b2 - lr * db2
    return loss, [W1, b1, W2, b2]


def report_iteration(i, loss):
    print(f"iteration {i}: loss={float(loss):.4f}")


def save(W2):
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "W2.npy"), W2)


def main(argv, step=step):
    """Runs the benchmark; peers pass their own step (same work, other engine)."""
    batch, iterations = parse(argv)
    X, Y, params = make_inputs(batch)
    print(f"mlp batch={batch} layers={FEATURES}-{HIDDEN}-{CLASSES} dtype=float32 iterations={iterations} "
          f"lr={LEARNING_RATE}")
    for i in range(iterations):
        loss, params = step(X, Y, *params, LEARNING_RATE)
        report_iteration(i, loss)
    save(params[2])


if __name__ == "__main__":
    main(sys.argv)
