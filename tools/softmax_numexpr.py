"""Peer of tools/softmax.py written with numexpr: the elementwise steps in
``ne.evaluate``, the row max and row sum in NumPy (numexpr has no partial
max, and its sum would not keep the dimension), as a user would mix them.

Usage::

    python tools/softmax_numexpr.py [n] [k] [dtype] [iterations]

Same arguments, inputs, work and output as tools/softmax.py.
"""

import sys

import numexpr as ne

from softmax import make_logits, parse, report_iteration, save, temperature


def softmax_logsumexp(logits, t):
    x = ne.evaluate("logits / t")
    m = x.max(axis=1, keepdims=True)
    e = ne.evaluate("exp(x - m)")
    s = e.sum(axis=1, keepdims=True)
    return ne.evaluate("e / s"), ne.evaluate("m + log(s)")[:, 0]


def main(argv):
    n, k, dtype, iterations = parse(argv)
    logits = make_logits(n, k, dtype)
    print(f"softmax n={n} k={k} dtype={dtype} iterations={iterations}")
    p = lse = None
    for i in range(iterations):
        p, lse = softmax_logsumexp(logits, dtype.type(temperature(i)))
        report_iteration(i, p, lse)
    save(p, lse)


if __name__ == "__main__":
    main(sys.argv)
