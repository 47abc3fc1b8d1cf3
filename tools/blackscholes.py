"""Black-Scholes European option pricing in plain NumPy (the paper's benchmark).

Usage::

    python tools/blackscholes.py [n] [dtype] [iterations]

    n           options in the book (default 10_000_000)
    dtype       float64 or float32 (default float64)
    iterations  pricings of the whole book, each under another risk-free
                rate (default 5)

``price(S, X, T, r, v)`` returns the (call, put) prices of n options with
spot S, strike X and time to expiry T (years; arrays), risk-free rate r and
volatility v (Python floats, so float32 inputs stay float32 under NEP 50).
The normal CDF is the classic 5-term polynomial approximation (Abramowitz &
Stegun 26.2.17, absolute error < 7.5e-8), selected with ``np.where``.  It is
all elementwise work: exp, log, sqrt, abs, where and arithmetic.

Output: per iteration the mean call and put price (accumulated in float64,
printed to 9 significant digits for float64 and 5 for float32, so that
4-ULP differences in the prices cannot change the text).  When
GRUMPY_AB_OUTDIR is set the last iteration's call and put arrays are saved
there as call.npy and put.npy.
"""

import os
import sys

import numpy as np

VOLATILITY = 0.30
RSQRT2PI = 0.39894228040143267794  # 1 / sqrt(2 pi)
A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429


def cnd(d):
    """Cumulative normal distribution of array d (polynomial approximation)."""
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    ret = RSQRT2PI * np.exp(-0.5 * d * d) * (k * (A1 + k * (A2 + k * (A3 + k * (A4 + k * A5)))))
    return np.where(d > 0, 1.0 - ret, ret)


def price(S, X, T, r, v):
    """Black-Scholes (call, put) prices; arrays shaped like S, of S's dtype."""
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / X) + (r + 0.5 * v * v) * T) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    cnd_d1 = cnd(d1)
    cnd_d2 = cnd(d2)
    discount = np.exp(-r * T)
    call = S * cnd_d1 - X * discount * cnd_d2
    put = X * discount * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
    return call, put


def parse(argv):
    n = int(argv[1]) if len(argv) > 1 else 10_000_000
    dtype = argv[2] if len(argv) > 2 else "float64"
    iterations = int(argv[3]) if len(argv) > 3 else 5
    if dtype not in ("float64", "float32"):
        raise SystemExit(f"blackscholes: dtype must be float64 or float32, not {dtype!r}")
    return n, np.dtype(dtype), iterations


def make_inputs(n, dtype):
    """Spot, strike and expiry of n options, uniformly drawn (seeded)."""
    rng = np.random.default_rng(20180224)
    S = rng.uniform(5.0, 30.0, n).astype(dtype)
    X = rng.uniform(1.0, 100.0, n).astype(dtype)
    T = rng.uniform(0.25, 10.0, n).astype(dtype)
    return S, X, T


def rate(i):
    """Risk-free rate of iteration i."""
    return 0.02 + 0.005 * i


def report_iteration(i, r, call, put):
    digits = 8 if call.dtype == np.float64 else 4
    mean_call = float(call.mean(dtype=np.float64))
    mean_put = float(put.mean(dtype=np.float64))
    print(f"iteration {i}: r={r:.3f} mean call={mean_call:.{digits}e} mean put={mean_put:.{digits}e}")


def save(call, put):
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "call.npy"), call)
        np.save(os.path.join(out, "put.npy"), put)


def run_book(argv, price_fn, on_device=None, to_host=None):
    """The program: parse argv, make the inputs (moved with on_device, for
    a GPU peer), print the header, price the book `iterations` times with
    price_fn(S, X, T, r, v) -> (call, put) and report each, save the last
    (brought back with to_host).  Every variant of this program runs it."""
    n, dtype, iterations = parse(argv)
    S, X, T = (on_device(a) if on_device else a for a in make_inputs(n, dtype))
    print(f"blackscholes n={n} dtype={dtype} iterations={iterations} v={VOLATILITY}")
    call = put = None
    for i in range(iterations):
        r = rate(i)
        call, put = price_fn(S, X, T, r, VOLATILITY)
        report_iteration(i, r, call, put)
    save(*((to_host(call), to_host(put)) if to_host and call is not None else (call, put)))


def main(argv):
    run_book(argv, price)


if __name__ == "__main__":
    main(sys.argv)
