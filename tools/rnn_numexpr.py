"""Peer of tools/rnn.py written with numexpr: the elementwise work of each
time step (the cell's sum and ``tanh``, the readout's bias and error, the
squared-error sum, ``dh * (1 - h * h)``) and the SGD updates in
``ne.evaluate``; the matrix products with NumPy's ``@``, the bias
gradients' column sums in NumPy (numexpr has no partial reductions) and
the gradient accumulation as NumPy's in-place ``+=`` (one pass already),
as a numexpr user would mix them.

Usage::

    python tools/rnn_numexpr.py [batch] [hidden] [steps] [iterations]

Same arguments, inputs, work and output as tools/rnn.py.  numexpr treats
Python float literals as float64 and would upcast the float32 arrays, so
the constants are bound to float32 names first.
"""

import sys

import numexpr as ne
import numpy as np

import rnn  # the main program: inputs, driver and output are shared


def step(xs, targets, Wx, Wh, b, Wy, by, lr):
    steps, batch = xs.shape[0], xs.shape[1]
    f32 = np.float32
    one, half, scale, lr = f32(1.0), f32(0.5), f32(batch * steps), f32(lr)
    # forward
    hs = [np.zeros((batch, Wh.shape[0]), dtype=np.float32)]
    ys = []
    for t in range(steps):
        xWx = xs[t] @ Wx
        hWh = hs[-1] @ Wh
        h = ne.evaluate("tanh(xWx + hWh + b)")
        hs.append(h)
        hWy = h @ Wy
        ys.append(ne.evaluate("hWy + by"))
    # backward through time
    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    db = np.zeros_like(b)
    dWy = np.zeros_like(Wy)
    dby = np.zeros_like(by)
    dh_next = np.zeros_like(hs[0])
    loss = 0.0
    for t in reversed(range(steps)):
        y, target = ys[t], targets[t]
        diff = ne.evaluate("y - target")
        loss += float(half * ne.evaluate("diff * diff").sum() / scale)
        dy = ne.evaluate("diff / scale")
        dWy += hs[t + 1].T @ dy
        dby += dy.sum(axis=0)
        dyWy = dy @ Wy.T
        h = hs[t + 1]
        dh_raw = ne.evaluate("(dyWy + dh_next) * (one - h * h)")
        dWx += xs[t].T @ dh_raw
        dWh += hs[t].T @ dh_raw
        db += dh_raw.sum(axis=0)
        dh_next = dh_raw @ Wh.T
    # SGD
    Wx = ne.evaluate("Wx - lr * dWx")
    Wh = ne.evaluate("Wh - lr * dWh")
    b = ne.evaluate("b - lr * db")
    Wy = ne.evaluate("Wy - lr * dWy")
    by = ne.evaluate("by - lr * dby")
    return loss, [Wx, Wh, b, Wy, by]


if __name__ == "__main__":
    rnn.main(sys.argv, step=step)
