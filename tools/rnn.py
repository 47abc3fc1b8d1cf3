"""Training of a recurrent network (tanh cell) in plain NumPy: the paper's
fourth benchmark.

Usage::

    python tools/rnn.py [batch] [hidden] [steps] [iterations]

    batch       sequences in the batch (default 256)
    hidden      hidden units (default 512)
    steps       time steps of each sequence (default 50)
    iterations  SGD steps (default 5)

float32 throughout; 256 input features and 32 outputs.  The cell is
``h_t = np.tanh(x_t @ Wx + h_{t-1} @ Wh + b)`` from ``h_0 = 0``; every
hidden state is read out linearly (``y_t = h_t @ Wy + by``) against a
target sequence, and the loss is the squared error ``0.5 * sum((y_t -
target_t) ** 2) / (batch * steps)`` summed over the steps.  Each iteration
runs the forward pass over all steps, the full backward pass through time,
written as a NumPy user writes it (``dh_raw = dh * (1 - h * h)``, ``dWx +=
x_t.T @ dh_raw``, ``dWh += h_{t-1}.T @ dh_raw``, ``dh_prev = dh_raw @
Wh.T``), and an SGD step by rebinding (``Wh = Wh - lr * dWh``, learning
rate 0.5).  Per time step that is eight matrix products, five of them
batch x input x hidden or batch x hidden x hidden (about 0.54 GFLOP
together at the defaults) and three thin ones with the 32 outputs, with
elementwise work and reductions between them.  Inputs, targets and
initial weights are seeded draws.

Output: per iteration the loss before the step (float32 terms summed in a
Python float, printed to 5 significant digits so that a few ULP of
difference in the products cannot change the text).  When
GRUMPY_AB_OUTDIR is set the final Wh is saved there as Wh.npy.
"""

import os
import sys

import numpy as np

INPUTS, OUTPUTS = 256, 32
LEARNING_RATE = 0.5


def parse(argv):
    batch = int(argv[1]) if len(argv) > 1 else 256
    hidden = int(argv[2]) if len(argv) > 2 else 512
    steps = int(argv[3]) if len(argv) > 3 else 50
    iterations = int(argv[4]) if len(argv) > 4 else 5
    return batch, hidden, steps, iterations


def make_inputs(batch, hidden, steps):
    """xs (steps, batch, 256), targets (steps, batch, 32) and the initial
    parameters [Wx, Wh, b, Wy, by], float32."""
    rng = np.random.default_rng(20180226)
    xs = rng.standard_normal((steps, batch, INPUTS), dtype=np.float32)
    targets = rng.standard_normal((steps, batch, OUTPUTS), dtype=np.float32) * 0.5
    # Python float factors keep float32 (NEP 50)
    Wx = rng.standard_normal((INPUTS, hidden), dtype=np.float32) * (1.0 / INPUTS) ** 0.5
    Wh = rng.standard_normal((hidden, hidden), dtype=np.float32) * (0.5 / hidden) ** 0.5
    b = np.zeros(hidden, dtype=np.float32)
    Wy = rng.standard_normal((hidden, OUTPUTS), dtype=np.float32) * (1.0 / hidden) ** 0.5
    by = np.zeros(OUTPUTS, dtype=np.float32)
    return xs, targets, [Wx, Wh, b, Wy, by]


def step(xs, targets, Wx, Wh, b, Wy, by, lr):
    """Forward over all steps, backward through time, SGD: (loss, new parameters)."""
    steps, batch = xs.shape[0], xs.shape[1]
    # forward
    hs = [np.zeros((batch, Wh.shape[0]), dtype=np.float32)]
    ys = []
    for t in range(steps):
        h = np.tanh(xs[t] @ Wx + hs[-1] @ Wh + b)
        hs.append(h)
        ys.append(h @ Wy + by)
    # backward through time
    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    db = np.zeros_like(b)
    dWy = np.zeros_like(Wy)
    dby = np.zeros_like(by)
    dh_next = np.zeros_like(hs[0])
    loss = 0.0
    for t in reversed(range(steps)):
        diff = ys[t] - targets[t]
        loss += float(0.5 * (diff * diff).sum() / (batch * steps))
        dy = diff / (batch * steps)
        dWy += hs[t + 1].T @ dy
        dby += dy.sum(axis=0)
        dh = dy @ Wy.T + dh_next
        h = hs[t + 1]
        dh_raw = dh * (1 - h * h)
        dWx += xs[t].T @ dh_raw
        dWh += hs[t].T @ dh_raw
        db += dh_raw.sum(axis=0)
        dh_next = dh_raw @ Wh.T
    # SGD
    Wx = Wx - lr * dWx
    Wh = Wh - lr * dWh
    b = b - lr * db
    Wy = Wy - lr * dWy
    by = by - lr * dby
    return loss, [Wx, Wh, b, Wy, by]


def report_iteration(i, loss):
    print(f"iteration {i}: loss={loss:.4e}")


def save(Wh):
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "Wh.npy"), Wh)


def main(argv, step=step):
    """Runs the benchmark; peers pass their own step (same work, other engine)."""
    batch, hidden, steps, iterations = parse(argv)
    xs, targets, params = make_inputs(batch, hidden, steps)
    print(f"rnn batch={batch} input={INPUTS} hidden={hidden} output={OUTPUTS} steps={steps} dtype=float32 "
          f"iterations={iterations} lr={LEARNING_RATE}")
    for i in range(iterations):
        loss, params = step(xs, targets, *params, LEARNING_RATE)
        report_iteration(i, loss)
    save(params[1])


if __name__ == "__main__":
    main(sys.argv)
