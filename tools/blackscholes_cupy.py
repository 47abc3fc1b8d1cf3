"""Peer of tools/blackscholes.py written with CuPy: the same ``price``
(NumPy's functions dispatch to CuPy's arrays through ``__array_ufunc__`` and
``__array_function__``: one CuPy kernel per operation, with temporaries),
inputs copied to the GPU once, the means copied back each iteration.

Usage::

    python tools/blackscholes_cupy.py [n] [dtype] [iterations]

Same arguments, inputs, work and output as tools/blackscholes.py.  Needs
CuPy and a GPU (the peer of ``make test-gpu``'s A/B run).
"""

import sys

import cupy as cp
import numpy as np

from blackscholes import VOLATILITY, make_inputs, parse, price, rate, report_iteration, save


def main(argv):
    n, dtype, iterations = parse(argv)
    S, X, T = (cp.asarray(a) for a in make_inputs(n, dtype))
    print(f"blackscholes n={n} dtype={dtype} iterations={iterations} v={VOLATILITY}")
    call = put = None
    for i in range(iterations):
        r = rate(i)
        call, put = price(S, X, T, r, VOLATILITY)
        report_iteration(i, r, call, put)
    save(cp.asnumpy(call), cp.asnumpy(put))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main(sys.argv)
