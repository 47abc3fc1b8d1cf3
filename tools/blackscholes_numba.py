"""Peer of tools/blackscholes.py written with Numba: one ``@njit(parallel=True)``
loop over the options with ``prange``, scalar math from :mod:`math`.

Usage::

    python tools/blackscholes_numba.py [n] [dtype] [iterations]

Same arguments, inputs, work and output as tools/blackscholes.py.  Numba
would promote float32 to float64 when mixed with Python float literals, so
every constant is passed in an array of the inputs' dtype.  ``cache=True``
keeps the compiled loop in tools/__pycache__ between runs (as grumpy keeps
its kernels), so only the first run pays Numba's compile time.
"""

import math
import sys

import numpy as np
from numba import njit, prange

from blackscholes import A1, A2, A3, A4, A5, RSQRT2PI, run_book


@njit(cache=True)
def cnd(d, c):
    one, p, half, rsqrt2pi = c[0], c[1], c[2], c[3]
    k = one / (one + p * abs(d))
    ret = rsqrt2pi * math.exp(-half * d * d) * (k * (c[4] + k * (c[5] + k * (c[6] + k * (c[7] + k * c[8])))))
    return one - ret if d > 0 else ret


@njit(parallel=True, cache=True)
def price_into(S, X, T, c, call, put):
    one, half, r, v = c[0], c[2], c[9], c[10]
    for i in prange(S.shape[0]):
        sqrt_t = math.sqrt(T[i])
        d1 = (math.log(S[i] / X[i]) + (r + half * v * v) * T[i]) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        cnd_d1 = cnd(d1, c)
        cnd_d2 = cnd(d2, c)
        discount = math.exp(-r * T[i])
        call[i] = S[i] * cnd_d1 - X[i] * discount * cnd_d2
        put[i] = X[i] * discount * (one - cnd_d2) - S[i] * (one - cnd_d1)


def price(S, X, T, r, v):
    c = np.array([1.0, 0.2316419, 0.5, RSQRT2PI, A1, A2, A3, A4, A5, r, v], dtype=S.dtype)
    call = np.empty_like(S)
    put = np.empty_like(S)
    price_into(S, X, T, c, call, put)
    return call, put


def main(argv):
    run_book(argv, price)


if __name__ == "__main__":
    main(sys.argv)
