"""Peer of tools/mlp.py written with numexpr: every elementwise step (bias
and ReLU, softmax, cross-entropy terms, the ReLU mask of the gradient,
the SGD updates) in ``ne.evaluate``, the matrix products with NumPy's
``@`` and the row max and the row and column sums in NumPy (numexpr has no
partial reductions), as a numexpr user would mix them.

Usage::

    python tools/mlp_numexpr.py [batch] [iterations]

Same arguments, inputs, work and output as tools/mlp.py.  numexpr treats
Python float literals as float64 and would upcast the float32 arrays, so
the constants are bound to float32 names first; numexpr has no
``maximum``, so the ReLU is a ``where``.
"""

import sys

import numexpr as ne
import numpy as np

import mlp  # the main program: inputs, driver and output are shared


def step(X, Y, W1, b1, W2, b2, lr):
    f32 = np.float32
    zero, nb, lr = f32(0.0), f32(X.shape[0]), f32(lr)
    # forward
    XW1 = X @ W1
    h = ne.evaluate("where(XW1 + b1 > zero, XW1 + b1, zero)")
    hW2 = h @ W2
    logits = ne.evaluate("hW2 + b2")
    m = logits.max(axis=1, keepdims=True)
    shifted = ne.evaluate("logits - m")
    e = ne.evaluate("exp(shifted)")
    s = e.sum(axis=1, keepdims=True)
    p = ne.evaluate("e / s")
    loss = -ne.evaluate("Y * (shifted - log(s))").sum() / nb
    # backward
    dlogits = ne.evaluate("(p - Y) / nb")
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dhW2 = dlogits @ W2.T
    dh = ne.evaluate("where(h > zero, dhW2, zero)")
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    # SGD
    W1 = ne.evaluate("W1 - lr * dW1")
    b1 = ne.evaluate("b1 - lr * db1")
    W2 = ne.evaluate("W2 - lr * dW2")
    b2 = ne.evaluate("b2 - lr * db2")
    return loss, [W1, b1, W2, b2]


if __name__ == "__main__":
    mlp.main(sys.argv, step=step)
