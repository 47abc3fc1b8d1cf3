"""axis=, keepdims= and the other keywords of reductions, arg-reductions,
scans and concatenate, as grumpy reads them (hooks/args.c) against plain
NumPy: the same value or NumPy's own exception (type and message), and a
captured call really computed by a kernel with no fallback counted.
Anything unusual (a repeated axis, one out of range, a bool, a float, a
list) is NumPy's, so NumPy raises its own error."""

import numpy as np
import pytest

import grumpy
from gpcheck import counters, plain

SHAPE = (60, 50, 41)  # 984 KB of float64: captured at the tests' 64 KiB threshold


def base():
    return plain(1 + np.random.default_rng(5).standard_normal(SHAPE) * 0.01)  # a plain ndarray


def grumpy_array(a):
    g = grumpy._ext().as_grumpy(np.array(a, copy=True))
    assert isinstance(g, grumpy.ndarray)
    return g


def outcome(fn, x):
    """(value as a plain array, None) or (None, (exception type, message))."""
    try:
        r = fn(x)
        return (np.asarray(plain(r)), type(r)), None
    except Exception as e:  # noqa: BLE001 - type and message are compared
        return None, (type(e), str(e))


def check(fn, must_capture):
    """fn on a grumpy array against fn on the same plain array: NumPy's value
    or error; when must_capture, one kernel or more and no fallback."""
    a = base()
    g = grumpy_array(a)
    want, want_err = outcome(fn, a)
    launched0, fallbacks0 = counters()
    got, got_err = outcome(fn, g)
    launched1, fallbacks1 = counters()
    assert got_err == want_err
    if want_err is not None:
        return
    assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
    assert np.allclose(got[0], want[0], rtol=1e-12, atol=0), "values differ"  # the order of a sum may differ
    if want[1] is not np.ndarray:
        assert got[1] is want[1]  # NumPy's scalar type for a full reduction
    if must_capture:
        assert launched1 > launched0, "not computed by a kernel"
        assert fallbacks1 == fallbacks0, grumpy.stats()["fallbacks"]


# axis values and whether NumPy accepts them for a reduction over 3 dims
AXES = [
    (None, True), (0, True), (2, True), (-1, True), (-3, True), ((0, 2), True), ((-1, 0), True),
    ((0, 1, 2), True), (np.int64(1), True), (np.int64(-1), True), ((np.int64(0), 2), True),
    (np.intp(2), True),
    ((2, -1), False), ((0, 0), False),            # duplicates: NumPy's ValueError
    (3, False), (-4, False), ((0, 3), False),     # out of range: NumPy's AxisError
    (True, False), ((True,), False),              # bools are not axes: NumPy's TypeError
    (1.0, False), ("1", False), ([0, 1], False),  # neither are floats, strings, lists
    ((), False),                                  # no axis: NumPy's copy, not captured
]
AXIS_IDS = [repr(a) for a, _ in AXES]


def split_axes(axis):
    """A tuple of axes of SHAPE around a kept one ((0, 2)): a float product
    over them is one chain of multiplications in NumPy's order, which no
    kernel computes (plan.c inner_reduced_alone): NumPy does, bit for bit."""
    if not isinstance(axis, tuple):
        return False
    try:
        a = sorted({int(d) % len(SHAPE) for d in axis})
    except TypeError:
        return False
    return len(a) > 1 and a[-1] - a[0] + 1 != len(a)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis,ok", AXES, ids=AXIS_IDS)
@pytest.mark.parametrize("fn", ["sum", "prod", "max", "min", "mean"])
def test_reduction_axes(fn, axis, ok, keepdims):
    if ok and fn == "prod" and split_axes(axis):
        ok = False
        with grumpy.disabled():
            want = np.prod(base(), axis=axis, keepdims=keepdims)
        assert np.array_equal(np.asarray(np.prod(grumpy_array(base()), axis=axis, keepdims=keepdims)), want)
    check(lambda x: getattr(np, fn)(x, axis=axis, keepdims=keepdims), ok)
    check(lambda x: getattr(x, fn)(axis=axis, keepdims=keepdims), ok)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis,ok", AXES, ids=AXIS_IDS)
@pytest.mark.parametrize("fn", ["argmin", "argmax"])
def test_arg_reduction_axes(fn, axis, ok, keepdims):
    ok = ok and not isinstance(axis, tuple)  # one axis or None: NumPy's TypeError for a tuple
    # along an outer axis NumPy's transposed copy and contiguous scan beat a
    # kernel's strided one (capture.c gp_capture_argreduce): NumPy's at once
    ok = ok and (axis is None or int(axis) % 3 == 2)
    check(lambda x: getattr(np, fn)(x, axis=axis, keepdims=keepdims), ok)
    check(lambda x: getattr(x, fn)(axis, keepdims=keepdims), ok)


@pytest.mark.parametrize("axis,ok", AXES, ids=AXIS_IDS)
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_scan_axes(fn, axis, ok):
    ok = ok and not isinstance(axis, tuple)
    check(lambda x: getattr(np, fn)(x * 0.001 + 1, axis=axis), ok)
    check(lambda x: getattr(x, fn)(axis=axis), ok)


@pytest.mark.parametrize("axis,ok", AXES, ids=AXIS_IDS)
@pytest.mark.parametrize("ufunc", ["add", "multiply", "maximum"])
def test_ufunc_methods_axes(ufunc, axis, ok):
    """ufunc.reduce takes NumPy's axes as the reductions do; accumulate one
    axis only, also as a tuple of one."""
    u = getattr(np, ufunc)
    check(lambda x: u.reduce(x, axis=axis), ok and not (ufunc == "multiply" and split_axes(axis)))
    one = ok and (not isinstance(axis, tuple) or len(axis) == 1) and axis is not None
    check(lambda x: u.accumulate(x * 0.001 + 1, axis=axis), one and ufunc != "maximum")  # cumsum, cumprod


@pytest.mark.parametrize("ufunc", ["add", "multiply", "maximum", "minimum"])
def test_reduce_without_axis_is_over_axis_0(ufunc):
    """ufunc.reduce(x) with no axis= reduces axis 0, as NumPy's default
    (before: grumpy read a missing axis as None and returned the full
    reduction, a scalar where NumPy gives a (50, 41) array)."""
    u = getattr(np, ufunc)
    check(lambda x: u.reduce(x), True)
    check(lambda x: u.reduce(x * 0.001 + 1), True)
    check(lambda x: u.accumulate(x * 0.001 + 1), ufunc in ("add", "multiply"))  # cumsum, cumprod


@pytest.mark.parametrize("keepdims", [np.True_, None, "yes", 1.5, np.array([1, 2]), []])
def test_reduction_keepdims_numpy_rejects(keepdims):
    """ufunc.reduce reads keepdims= as a C int: NumPy raises TypeError for a
    NumPy bool, None, a string, a float or an array (before: grumpy took
    their truth value and returned a result, or a SystemError for an array
    whose truth value raises)."""
    check(lambda x: np.sum(x, axis=0, keepdims=keepdims), False)
    check(lambda x: np.add.reduce(x, axis=1, keepdims=keepdims), False)
    check(lambda x: x.max(axis=(0, 1), keepdims=keepdims), False)


@pytest.mark.parametrize("keepdims", [0, 1, False, True])
def test_reduction_keepdims_ints(keepdims):
    check(lambda x: np.sum(x, axis=0, keepdims=keepdims), True)
    check(lambda x: np.argmax(x, axis=2, keepdims=keepdims), True)  # (an outer axis is NumPy's)


def test_arg_reduction_keepdims_truth_value():
    """ndarray.argmin reads keepdims= by its truth value (NumPy's
    PyArray_BoolConverter): NumPy's answer for any object."""
    for k in (np.True_, "", "yes", None, [1]):
        check(lambda x, k=k: x.argmin(axis=2, keepdims=k), False)
        check(lambda x, k=k: np.argmax(x, axis=0, keepdims=k), False)
    check(lambda x: x.argmin(axis=2, keepdims=np.array([1, 2])), False)  # NumPy's ValueError


@pytest.mark.parametrize("axis", [None, 0, 2])
def test_the_functions_keepdims_novalue_is_not_given(axis):
    """np.nanargmax(a) calls np.argmax(a, axis=None, out=None,
    keepdims=np._NoValue): the function's "not given", not a true value
    as the method would take it.  grumpy returned array([i]) for NumPy's
    int64 i (scipy's COBYLA then built (n, 1) columns: 8 of
    scipy.optimize's tests failed under capture)."""
    for fn in (np.argmax, np.argmin):  # (along an outer axis NumPy's by design)
        check(lambda x, fn=fn: fn(x, axis=axis, keepdims=np._NoValue), axis != 0)
    check(lambda x: np.nanargmax(x, axis=axis), False)
    check(lambda x: np.nanargmin(x, axis=axis), False)
    check(lambda x: x.argmax(axis=axis, keepdims=np._NoValue), False)  # the method: its truth value


@pytest.mark.parametrize("axis,ok", [(0, True), (-1, True), (np.int64(2), True), (3, False), (True, False),
                                     (None, False), ((0,), False), (1.0, False)], ids=repr)
def test_concatenate_axis(axis, ok):
    check(lambda x: np.concatenate([x * 2.0, x + 1.0], axis=axis), ok)


def test_keyword_fallback_reason():
    """A keyword grumpy does not capture (initial=) is counted as such."""
    g = grumpy_array(base())
    before = dict(grumpy.stats()["fallback_reasons"])
    np.sum(g, axis=0, initial=1.0)
    after = grumpy.stats()["fallback_reasons"]
    key = [k for k in after if k.startswith("a keyword argument")][0]
    assert after[key] == before.get(key, 0) + 1


@pytest.mark.parametrize("axes", [1, ([2], [0]), ([np.int64(2)], [0]), (np.int64(-1), 0), ([2, 2], [0, 0]),
                                  ([3], [0]), ([True], [0]), ([1.0], [0])], ids=repr)
def test_tensordot_axes(axes):
    a = base()
    b = plain(np.random.default_rng(6).standard_normal((41, 30)))
    gb = grumpy._ext().as_grumpy(b.copy())  # small: may stay a plain ndarray
    want, want_err = outcome(lambda x: np.tensordot(x, b, axes=axes), a)
    got, got_err = outcome(lambda x: np.tensordot(x, gb, axes=axes), grumpy_array(a))
    assert got_err == want_err
    if want_err is None:
        assert np.allclose(got[0], want[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("axes", [([True], [0]), (True, 0), ([1], [np.True_]), ([1], [0]), (np.int64(1), [0])], ids=repr)
def test_tensordot_bool_axes(axes):
    """np.tensordot takes an axis by Python indexing, then transposes with
    it: NumPy raises TypeError for a bool (before: grumpy read True as 1
    and returned the product)."""
    b = plain(np.random.default_rng(7).standard_normal((50, 30)))
    gb = grumpy._ext().as_grumpy(b.copy())
    want, want_err = outcome(lambda x: np.tensordot(x, b, axes=axes), base())
    got, got_err = outcome(lambda x: np.tensordot(x, gb, axes=axes), grumpy_array(base()))
    assert got_err == want_err
    if want_err is None:
        assert np.allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
