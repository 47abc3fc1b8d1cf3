"""Scans (cumsum / cumprod as map-scan kernels, paper section 3.2), the
statistics functions NumPy builds from ufuncs (var, std, nan*, average,
ptp, count_nonzero) and np.copyto: NumPy's values, bit for bit, and how the
work was done (kernels launched, fallbacks counted)."""

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, counters, plain


def grumpy_array(a):
    return grumpy._ext().as_grumpy(np.array(a, copy=True))


def base(dtype=np.float64, shape=(300, 400), seed=0):
    r = np.random.default_rng(seed)
    v = r.standard_normal(shape)
    if np.dtype(dtype).kind == "f":
        v[3, 5] = -0.0
        v[0, 0] = -0.0
        return v.astype(dtype)
    if np.dtype(dtype).kind == "b":
        return v > 0
    return (v * 100).astype(dtype)


def fallbacks():
    return dict(grumpy.stats()["fallbacks"])


LAYOUTS = {
    "contiguous": lambda a: a,
    "strided": lambda a: a[::2, ::3],
    "negative": lambda a: a[::-1, ::-2],
    "transposed": lambda a: a.T,
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("axis", [0, 1, -1, None])
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_scan_of_a_map_is_one_kernel(fn, axis, layout):
    """cumsum / cumprod of an elementwise expression: one map-scan kernel
    (the expression is not materialized), NumPy's bits, no fallback."""
    v = LAYOUTS[layout](base())
    g = LAYOUTS[layout](grumpy_array(base()))
    f = getattr(np, fn)
    launched0, fb0 = counters()
    got = f(g * 0.01 + 1, axis=axis)
    assert grumpy.is_pending(got)
    got = plain(got)
    launched1, fb1 = counters()
    # axis=None flattens first: a view (ravel) of a pending array computes it
    # (views are not lazy index transforms yet), then the scan is one kernel
    assert launched1 - launched0 == (1 if axis is not None else 2)
    assert fb1 == fb0
    assert_same(got, f(v * 0.01 + 1, axis=axis))


@pytest.mark.parametrize("dtype,kw", [(np.int32, {}), (np.int32, {"dtype": np.int32}), (np.int8, {}),
                                      (np.uint16, {}), (np.bool_, {}), (np.float32, {}),
                                      (np.float32, {"dtype": np.float64}), (np.int64, {"dtype": np.float32})])
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_scan_dtypes(fn, dtype, kw):
    """Result dtypes as NumPy resolves them (small integers and bool to
    int64; dtype= honoured), integer wrap-around as NumPy's."""
    v = base(dtype, (200, 700))
    g = grumpy_array(v)
    for axis in (0, 1):
        with np.errstate(all="ignore"):  # int64 products overflow, as in NumPy
            got = getattr(np, fn)(g, axis=axis, **kw)
            assert grumpy.is_pending(got)
            assert_same(got, getattr(np, fn)(v, axis=axis, **kw))


def test_scan_signed_zero_nan_and_inf():
    """The first element is NumPy's (-0.0 stays -0.0), NaN and inf propagate
    as in NumPy's accumulate."""
    v = np.zeros((4, 40000))
    v[0] = -0.0
    v[1, 7] = np.nan
    v[2, 3] = np.inf
    v[2, 9] = -np.inf
    v[3] = np.linspace(-1, 1, 40000)
    g = grumpy_array(v)
    with np.errstate(all="ignore"):  # inf - inf, inf * 0: NumPy's invalid values
        for f in (np.cumsum, np.cumprod):
            assert_same(f(g, axis=1), f(v, axis=1))
            assert_same(f(g, axis=0), f(v, axis=0))


def test_scan_3d_and_method():
    v = base().reshape(30, 10, 400)
    g = grumpy_array(v)
    assert_same(np.cumsum(g + 1, axis=1), np.cumsum(v + 1, axis=1))
    assert_same((g * 2).cumprod(axis=2), (v * 2).cumprod(axis=2))
    assert_same(np.add.accumulate(g, axis=0), np.add.accumulate(v, axis=0))


def test_scan_errors_are_numpys():
    g = grumpy_array(base())
    with pytest.raises(np.exceptions.AxisError):
        np.cumsum(g, axis=2)


STATS = ["var", "std", "nansum", "nanmean", "nanprod", "nancumsum", "nanargmin", "nanargmax",
         "count_nonzero", "average", "ptp", "mean", "nanvar", "nanstd"]
# name -> the operations NumPy still computes: nanmin and nanmax are NumPy's fast path for an
# ndarray (fmin / fmax .reduce of the computed array, then "All-NaN slice encountered"): its
# subclass path, which recorded kernels, warns "All-NaN axis encountered" instead
STATS_WITH_FALLBACKS = {"nanmin": {"fmin.reduce"}, "nanmax": {"fmax.reduce"}}


STAT_CASES = [(fn, kw) for fn in STATS + list(STATS_WITH_FALLBACKS)
              for kw in ({}, {"axis": 0}, {"axis": 1}, {"axis": 1, "keepdims": True})
              if not (fn == "nancumsum" and "keepdims" in kw)]  # nancumsum has no keepdims


@pytest.mark.parametrize("fn,kw", STAT_CASES, ids=[f"{fn}-{kw}" for fn, kw in STAT_CASES])
def test_statistics_are_captured(fn, kw):
    """NumPy's own implementations run on grumpy arrays: their ufunc calls
    are recorded and fused; values bit-identical to NumPy's (NaN skipped by
    the nan* forms, propagated by the others)."""
    v = base()
    v[5, 7] = np.nan
    v[100, 3] = np.nan
    g = grumpy_array(v)
    f = getattr(np, fn)
    fb0, (launched0, _) = fallbacks(), counters()
    with np.errstate(all="ignore"):
        got = f(g, **kw)
        want = f(v, **kw)
    got = got if np.ndim(got) == 0 else plain(got)
    fb1, (launched1, _) = fallbacks(), counters()
    # count_nonzero(a) without an axis is NumPy's C loop over the computed array
    assert launched1 > launched0 or (fn == "count_nonzero" and "axis" not in kw) or fn in STATS_WITH_FALLBACKS
    new = {k for k in fb1 if fb1[k] != fb0.get(k, 0)}
    assert new == STATS_WITH_FALLBACKS.get(fn, set())
    if np.ndim(want) == 0:
        assert type(got) is type(want)
        assert (got == want) or (np.isnan(got) and np.isnan(want))
    else:
        assert_same(got, want)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_copyto_where_is_a_lazy_masked_write(layout):
    """np.copyto(dst, src, where=mask) writes in place lazily (one kernel,
    no fallback); readers of dst's old values see them."""
    v = LAYOUTS[layout](base())
    d = grumpy_array(base())
    g = LAYOUTS[layout](d)
    before_old = plain(g * 2).copy()
    old_reader = g * 2  # pending, reads the old values
    mask_v = v > 0.5
    mask = grumpy_array(mask_v)
    launched0, fb0 = counters()
    np.copyto(g, 7.0, where=mask)
    np.copyto(g, g.dtype.type(3), where=~mask & (g < -1))
    launched1, fb1 = counters()
    assert fb1 == fb0
    want = v.copy()
    np.copyto(want, 7.0, where=mask_v)
    np.copyto(want, want.dtype.type(3), where=~mask_v & (want < -1))
    assert_same(g, want)
    assert_same(old_reader, before_old)
    assert launched1 >= launched0


def test_copyto_plain_and_casting_rules():
    v = base()
    g = grumpy_array(v)
    src32 = grumpy_array(base(np.float32, seed=1))
    np.copyto(g, src32)
    assert_same(g, base(np.float32, seed=1).astype(np.float64))
    gi = grumpy_array(base(np.int32))
    with pytest.raises(TypeError):
        np.copyto(gi, g)  # float64 -> int32 is not same_kind: NumPy's TypeError
    np.copyto(gi, g, casting="unsafe")
    assert_same(gi, plain(g).astype(np.int32))
    with pytest.raises(ValueError):
        np.copyto(g, grumpy_array(np.ones(7)))  # broadcast error is NumPy's


@pytest.mark.parametrize("pending_out", [False, True])
def test_ufunc_where_with_out_is_lazy(pending_out):
    """np.subtract(x, y, out=x, where=m): under an error state that ignores
    everything, one lazy where(m, x - y, x), NumPy's bits, no fallback.
    (Under a "warn" state NumPy computes it: its warnings come from the
    unmasked elements only.)"""
    v, w = base(seed=3), base(seed=4)
    m_v = v > 0
    x, y, m = grumpy_array(v), grumpy_array(w), grumpy_array(m_v)
    if pending_out:
        x = x * 1.0
    fb0 = fallbacks()
    with np.errstate(all="ignore"):
        np.subtract(x, y, out=x, casting="unsafe", where=m)
        np.multiply(x, x, out=x, where=~m)
    assert grumpy.is_pending(x)
    assert fallbacks() == fb0
    want = v.copy()
    np.subtract(want, w, out=want, casting="unsafe", where=m_v)
    np.multiply(want, want, out=want, where=~m_v)
    assert_same(x, want)


def test_masked_ufunc_warns_only_for_unmasked_elements():
    x = grumpy_array(np.linspace(-1, 1, 100_000))
    o = grumpy_array(np.zeros(100_000))
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        np.log(x, out=o, where=x > 0)
        plain(o)
    assert w == []  # NumPy's: log of the negative, masked-out elements never runs
    want = np.zeros(100_000)
    np.log(np.linspace(-1, 1, 100_000), out=want, where=np.linspace(-1, 1, 100_000) > 0)
    assert_same(o, want)
