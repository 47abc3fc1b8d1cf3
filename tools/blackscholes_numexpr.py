"""Peer of tools/blackscholes.py written with numexpr, one ``ne.evaluate``
per statement of ``price`` and ``cnd``, as a numexpr user would write it.

Usage::

    python tools/blackscholes_numexpr.py [n] [dtype] [iterations]

Same arguments, inputs, work and output as tools/blackscholes.py.  numexpr
treats Python float literals as float64 and would upcast float32 arrays, so
the constants are bound to names of the inputs' dtype first.
"""

import sys

import numexpr as ne

from blackscholes import A1, A2, A3, A4, A5, RSQRT2PI, run_book


def cnd(d, c):
    a1, a2, a3, a4, a5 = c(A1), c(A2), c(A3), c(A4), c(A5)
    one, half, p, rsqrt2pi = c(1.0), c(0.5), c(0.2316419), c(RSQRT2PI)
    k = ne.evaluate("one / (one + p * abs(d))")
    ret = ne.evaluate("rsqrt2pi * exp(-half * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))))")
    return ne.evaluate("where(d > 0, one - ret, ret)")


def price(S, X, T, r, v):
    c = S.dtype.type
    r, v, half, one = c(r), c(v), c(0.5), c(1.0)
    sqrt_t = ne.evaluate("sqrt(T)")
    d1 = ne.evaluate("(log(S / X) + (r + half * v * v) * T) / (v * sqrt_t)")
    d2 = ne.evaluate("d1 - v * sqrt_t")
    cnd_d1 = cnd(d1, c)
    cnd_d2 = cnd(d2, c)
    discount = ne.evaluate("exp(-r * T)")
    call = ne.evaluate("S * cnd_d1 - X * discount * cnd_d2")
    put = ne.evaluate("X * discount * (one - cnd_d2) - S * (one - cnd_d1)")
    return call, put


def main(argv):
    run_book(argv, price)


if __name__ == "__main__":
    main(sys.argv)
