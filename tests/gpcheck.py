"""Helpers shared by the pytest files: plain-NumPy references and
comparisons with NumPy's results (exact, or within N ULP)."""

import os

import numpy as np

import grumpy


def plain(x):
    """x as a plain numpy.ndarray (a view; computed first if pending)."""
    if isinstance(x, np.ndarray):
        return np.asarray(x).view(np.ndarray)
    return x


def ulp_distance(a, b):
    """Elementwise distance in units in the last place between float arrays
    of the same dtype (NaN vs NaN = 0)."""
    a = plain(a)
    b = plain(b)
    itype = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ai = a.view(itype).astype(np.int64)
    bi = b.view(itype).astype(np.int64)
    # map the sign-magnitude order onto a monotonic integer line
    big = np.int64(1) << (8 * a.dtype.itemsize - 1)
    ai = np.where(ai < 0, -(ai + big), ai)
    bi = np.where(bi < 0, -(bi + big), bi)
    d = np.abs(ai - bi)
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan, 0, d)


def assert_same(got, want, max_ulp=0):
    """got (grumpy) equals want (NumPy): dtype, shape, values; bit-identical
    for max_ulp=0 (NaN payloads aside), else floats within max_ulp."""
    got_p = plain(got)
    want_p = plain(want)
    assert got_p.dtype == want_p.dtype, (got_p.dtype, want_p.dtype)
    assert got_p.shape == want_p.shape, (got_p.shape, want_p.shape)
    if got_p.dtype.kind == "f":
        nan_g = np.isnan(got_p)
        nan_w = np.isnan(want_p)
        assert np.array_equal(nan_g, nan_w), "NaN positions differ"
        if max_ulp == 0:
            ok = (got_p == want_p) | nan_g
            ok &= (np.signbit(got_p) == np.signbit(want_p)) | nan_g
            bad = np.flatnonzero(~ok)
            assert bad.size == 0, f"{bad.size} values differ, first at {bad[:5]}: {got_p.ravel()[bad[:5]]} vs {want_p.ravel()[bad[:5]]}"
        else:
            d = ulp_distance(got_p, want_p)
            assert d.max(initial=0) <= max_ulp, f"max ULP distance {d.max()} > {max_ulp}"
    else:
        assert np.array_equal(got_p, want_p)


def counters():
    s = grumpy.stats()
    return s["kernels_launched"], sum(s["fallbacks"].values())


NDARRAY_CTYPES = np.ndarray.__dict__["ctypes"]


def raw_address(a):
    """a's data pointer as C code that was handed the array reads it
    (PyArray_DATA): not through grumpy's .ctypes, which computes the array
    first.  For tests of the page guard: reads and writes through it meet
    a pending buffer."""
    return NDARRAY_CTYPES.__get__(a, type(a)).data



def subprocess_env(strip=("GRUMPY",), **overrides):
    """os.environ for a program the test runs in its own process: without
    the variables whose names start with a prefix in `strip` (the grumpy
    defaults apply), but with GRUMPY_FIRST_LAUNCH_MS=0 (every kernel
    compiles on the calling thread at its first launch, as in the rest of
    the suite: tests count kernels, disk-cache hits and replays), then
    `overrides` (a value of None removes the variable).  A new dict."""
    prefixes = (strip,) if isinstance(strip, str) else tuple(strip)
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env["GRUMPY_FIRST_LAUNCH_MS"] = "0"
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env
