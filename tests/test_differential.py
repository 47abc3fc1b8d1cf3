"""Differential tests: every fused ufunc x dtype x layout against NumPy.

Integer, boolean and basic float operations must be bit-identical to
NumPy; transcendental functions within 4 ULP (DESIGN.md section 4).  Each
case also checks that grumpy captured the operation (the result was pending
and a kernel computed it) rather than handing it to NumPy."""

import warnings

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, counters, plain

N = 70001  # > 64 KiB for every dtype but bool/int8 (those use 2N)
DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float32, np.float64]
TRANSCENDENTAL = {"cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
                  "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
                  "arccosh", "arctanh", "arctan2", "hypot", "power"}
OPS = [name for name in grumpy._ext().captured_ops() if name not in ("add", "multiply") or True]
MAP_UFUNCS = sorted({n for n in OPS if isinstance(getattr(np, n, None), np.ufunc)
                     and n not in ("clip", "matmul")})  # matmul: tests/test_blas.py
UNARY = [n for n in MAP_UFUNCS if getattr(np, n).nin == 1]
BINARY = [n for n in MAP_UFUNCS if getattr(np, n).nin == 2]


def values(dtype, n, seed):
    """n values of dtype, with the edge values of the type mixed in."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        small = rng.integers(max(info.min, -20), min(info.max, 20), n, dtype=dt, endpoint=True)
        v = np.where(rng.random(n) < 0.6, small, v).astype(dt)
        edges = [e for e in (0, 1, int(info.max), int(info.min), int(info.max) - 1, 2, 3, 7, 8, 31, 63)
                 if info.min <= e <= info.max]
        edges = np.array(edges, dtype=dt)
        v[: len(edges)] = edges
        if dt.kind == "i":
            v[len(edges):len(edges) + 3] = np.array([-1, -2, -7], dtype=dt)
    else:
        v = (rng.standard_normal(n) * 10).astype(dt)
        v[::7] = rng.uniform(-1, 1, len(v[::7])).astype(dt)
        v[::11] = np.round(v[::11])
        specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.5,
                    np.finfo(dt).tiny, np.finfo(dt).max, -np.finfo(dt).max, 1e-30, 88.0, 710.0]
        v[: len(specials)] = np.array(specials, dtype=dt)
    return v.view(np.ndarray)


def grumpy_array(a):
    """a as a computed (materialized) grumpy array leaf."""
    g = grumpy._ext().as_grumpy(np.array(a, copy=True))
    assert isinstance(g, grumpy.ndarray)
    return g


def layouts_unary(dtype):
    n = N * (2 if np.dtype(dtype).itemsize == 1 else 1)
    v = values(dtype, 3 * n, 1)
    base = grumpy_array(v)
    yield "contiguous", base[:n], v[:n]
    yield "strided", base[::3], v[::3]
    yield "reversed", base[::-1][:n], v[::-1][:n]
    m = v[: (n // 100) * 100].reshape(100, -1)
    gm = grumpy_array(m)
    yield "transposed", gm.T, m.T


def expected(fn, *args):
    with np.errstate(all="ignore"):
        try:
            return fn(*[plain(a) for a in args]), None
        except Exception as e:  # noqa: BLE001 - the type is compared
            return None, type(e)


def run_case(fn, name, args, ref_args, must_capture):
    want, err = expected(fn, *ref_args)
    launched0, fallbacks0 = counters()
    if err is not None:
        with pytest.raises(err), np.errstate(all="ignore"):
            fn(*args)
        return
    with np.errstate(all="ignore"):
        got = fn(*args)
    if must_capture:
        assert grumpy.is_pending(got), f"{name} was not captured"
    assert_same(got, want, 4 if name in TRANSCENDENTAL else 0)
    if must_capture:
        launched1, fallbacks1 = counters()
        assert launched1 > launched0 and fallbacks1 == fallbacks0


def loop_is_uniform(ufunc, *dtypes):
    try:
        r = ufunc.resolve_dtypes(tuple(dtypes) + (None,))
    except Exception:  # noqa: BLE001
        return False
    supported = {np.dtype(t) for t in DTYPES}
    return len({d for d in r[:ufunc.nin]}) == 1 and all(d in supported for d in r)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary(name, dtype):
    uf = getattr(np, name)
    for layout, g, v in layouts_unary(dtype):
        # integer reciprocal (1 // x in NumPy) is left to NumPy
        cap = layout == "contiguous" and loop_is_uniform(uf, np.dtype(dtype)) and not (
            name == "reciprocal" and np.dtype(dtype).kind in "biu")
        run_case(uf, name, (g,), (v,), cap)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_binary(name, dtype):
    uf = getattr(np, name)
    n = N * (2 if np.dtype(dtype).itemsize == 1 else 1)
    a = values(dtype, n, 2)
    b = values(dtype, n, 3)
    if name in ("power", "left_shift", "right_shift") and np.dtype(dtype).kind in "iu":
        b = np.abs(b % 70).astype(dtype)  # NumPy raises for negative integer powers
    ga, gb = grumpy_array(a), grumpy_array(b)
    cap = loop_is_uniform(uf, np.dtype(dtype), np.dtype(dtype))
    # integer powers with an array exponent are left to NumPy (which raises
    # for negative exponents)
    arr_cap = cap and not (name == "power" and np.dtype(dtype).kind in "bi")
    run_case(uf, name, (ga, gb), (a, b), arr_cap)
    run_case(uf, name, (ga[::2], gb[1::2]), (a[::2], b[1::2]), False)
    k = 64
    m = n // k
    a2, b2 = a[: m * k].reshape(m, k), b[:k]
    run_case(uf, name, (grumpy_array(a2), b2), (a2, b2), arr_cap)  # broadcast a row
    col = b[:m].reshape(m, 1)
    run_case(uf, name, (col, grumpy_array(a2)), (col, a2), arr_cap)  # broadcast a column
    run_case(uf, name, (grumpy_array(a2), col), (a2, col), arr_cap)  # column as 2nd operand
    s = b[5].item()  # a Python scalar (weak, NEP 50)
    run_case(uf, name, (ga, s), (a, s), cap and not (name == "power" and False))
    run_case(uf, name, (dtype(b[6]), ga), (dtype(b[6]), a), False)  # NumPy scalar (strong)
    run_case(uf, name, (ga, np.array(b[7])), (a, np.array(b[7])), False)  # 0-d array


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
def test_where_and_clip(dtype):
    n = 2 * N
    a = values(dtype, n, 4)
    b = values(dtype, n, 5)
    ga, gb = grumpy_array(a), grumpy_array(b)
    run_case(lambda c, x, y: np.where(c, x, y), "where", (ga > gb, ga, gb), (a > b, a, b), True)
    run_case(lambda c, x, y: np.where(c, x, y), "where", (ga > gb, ga, 0), (a > b, a, 0), True)
    lo, hi = (np.array(3).astype(dtype).item(), np.array(40).astype(dtype).item())
    run_case(lambda x: np.clip(x, lo, hi), "clip", (ga,), (a,), True)
    run_case(lambda x, y: np.clip(x, y, hi), "clip", (ga, gb), (a, b), True)


@pytest.mark.parametrize("src", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", DTYPES, ids=lambda d: np.dtype(d).name)
def test_astype(src, dst):
    n = 2 * N
    a = values(src, n, 6)
    if np.dtype(src).kind == "f" and np.dtype(dst).kind in "iub":
        a = np.where(np.isfinite(a) & (np.abs(a) < 100), a, 1).astype(src)  # in range: defined in C
    g = grumpy_array(a)
    run_case(lambda x: x.astype(dst), "astype", (g,), (a,), True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("method", ["sum", "prod", "min", "max", "mean", "any", "all"])
def test_reductions(dtype, method):
    rng = np.random.default_rng(7)
    shape = (60, 50, 41)
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(shape).astype(dtype)
        if method == "prod":
            a = (1 + a / 1000).astype(dtype)
    else:
        a = values(dtype, int(np.prod(shape)), 8).reshape(shape)
        if method in ("sum", "prod", "mean") and np.dtype(dtype).kind in "iu":
            a = (a % 3).astype(dtype)
    g = grumpy_array(a)
    for axis in [None, 0, 1, 2, -1, (0, 1), (1, 2)]:
        for keepdims in (False, True):
            def f(x, axis=axis, keepdims=keepdims):
                return getattr(x, method)(axis=axis, keepdims=keepdims)
            want, err = expected(f, a)
            if err is not None:
                with pytest.raises(err):
                    f(g)
                continue
            got = f(g)
            if axis is None and not keepdims:
                assert type(got) is type(want), (type(got), type(want))
            ulp = 0 if method not in ("mean", "prod") else 2
            if method == "sum" and axis not in (None, -1, 2, (1, 2)) and np.dtype(dtype).kind == "f":
                ulp = 4  # not NumPy's pairwise order along a non-inner axis
            assert_same(np.asarray(got), np.asarray(want), ulp)


def test_full_sum_is_bit_identical_and_fused():
    x = values(np.float64, 1_000_003, 9)
    y = values(np.float64, 1_000_003, 10)
    x[~(np.abs(x) < 1e6)] = 0  # finite, no overflow in x*y
    y[~(np.abs(y) < 1e6)] = 0
    gx, gy = grumpy_array(x), grumpy_array(y)
    launched0, _ = counters()
    got = (gx * gy).sum()
    assert counters()[0] == launched0 + 1  # the product is fused into the reduction
    assert type(got) is np.float64
    assert got == (x * y).sum()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.uint16, np.bool_])
@pytest.mark.parametrize("fn", ["argmin", "argmax"])
def test_arg_reductions(dtype, fn):
    rng = np.random.default_rng(13)
    shape = (3000, 24)
    a = values(dtype, shape[0] * shape[1], 14).reshape(shape)
    if np.dtype(dtype).kind == "f":
        a[7, 5] = np.nan  # NumPy: the first NaN wins
        a[9, :] = 1.5     # ties: the first index
        a[11, 3] = a[11, 9] = np.nan
    g = grumpy_array(a)
    before = grumpy.stats()
    for axis, keepdims in [(None, False), (0, False), (1, False), (-1, True), (None, True)]:
        got = getattr(g, fn)(axis=axis, keepdims=keepdims)
        want = getattr(a, fn)(axis=axis, keepdims=keepdims)
        if axis is None and not keepdims:
            assert type(got) is type(want)  # NumPy's scalar type (np.int64)
        else:
            assert isinstance(got, np.ndarray)
        assert_same(np.asarray(got), np.asarray(want))
        assert_same(np.asarray(getattr(np, fn)(g * 1, axis=axis)), np.asarray(getattr(np, fn)(a * 1, axis=axis)))
    after = grumpy.stats()
    assert after["fallbacks"] == before["fallbacks"]
    del rng


@pytest.mark.cpu_backend
def test_float32_tanh_is_correctly_rounded():
    """float32 tanh (exp-based, in double): within 1 ULP of NumPy's and
    equal to the correctly rounded tanh on a dense grid, tiny values of both
    signs, signed zeros, infinities and NaN; one kernel."""
    powers = np.float32(2.0) ** -np.arange(1, 150, dtype=np.float32)
    x = np.concatenate([np.linspace(-12, 12, 400_001, dtype=np.float32), powers, -powers,
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1 / 32, -1 / 32, 0.03124, 0.03126], np.float32)])
    x = plain(x)
    g = grumpy_array(x)
    launched0, fallbacks0 = counters()
    got = np.tanh(g)
    assert grumpy.is_pending(got)
    got = plain(got)
    launched1, fallbacks1 = counters()
    assert launched1 == launched0 + 1 and fallbacks1 == fallbacks0
    assert_same(got, np.tanh(x), max_ulp=1)
    assert np.array_equal(np.signbit(got), np.signbit(plain(np.tanh(x))))
    assert_same(got, plain(np.tanh(x.astype(np.float64))).astype(np.float32), max_ulp=0)


@pytest.mark.cpu_backend
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cos_of_a_tiny_angle_is_exactly_one(dtype):
    """cos(x) rounds to 1.0 for |x| below 2^-26.5 (float64), as NumPy gives
    it; libmvec's vector cos was 1 ULP low for 16 of 50 angles from 1e-9 to
    6e-9 (scipy.stats' circmean accuracy test asserts cos(x) == 1.0 there).
    Angles just above the cut are unchanged, within the contract's ULPs."""
    x = np.concatenate([np.linspace(1e-9, 6e-9, 50), np.linspace(-1.0536712e-8, 1.0536712e-8, 2001),
                        np.array([0.0, -0.0, 5e-324, 1.0536713e-8, 1.06e-8, 1e-7, np.nan, np.inf])]).astype(dtype)
    x = plain(np.tile(x, 100))  # (205,900 elements: captured at the default threshold)
    g = grumpy_array(x)
    launched0, fallbacks0 = counters()
    with np.errstate(invalid="ignore"):
        got = np.cos(g)
        want = np.cos(x)
    assert grumpy.is_pending(got)
    got = plain(got)
    launched1, fallbacks1 = counters()
    assert launched1 == launched0 + 1 and fallbacks1 == fallbacks0
    assert np.all(got.reshape(100, -1)[:, :2051] == 1.0)
    assert_same(got, want, max_ulp=1)


@pytest.mark.parametrize("n", [2, 3, 7, 8, 9, 15, 16])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_short_last_axis_reduction_is_one_map_kernel(op, dtype, n):
    """A reduction over a short last axis (k-means' 8 features) is unrolled
    into one map over the kept dims in the map-reduce kernel's own order:
    NumPy's bits (NaN, -0.0, inf included), one kernel for the expression
    and the reduction, no per-row kernel calls."""
    r = np.random.default_rng(n)
    v = (r.standard_normal((20000, n)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "f":
        v[3, 0] = np.nan
        v[5] = -0.0
        v[7, n - 1] = np.inf
    g = grumpy_array(v)
    for keepdims in (False, True):
        launched0, fallbacks0 = counters()
        with np.errstate(all="ignore"):
            got = getattr(g * 2 - 1, op)(axis=-1, keepdims=keepdims)
            want = getattr(v * 2 - 1, op)(axis=-1, keepdims=keepdims)
        got = plain(got)
        launched1, fallbacks1 = counters()
        assert launched1 - launched0 == 1 and fallbacks1 == fallbacks0
        assert_same(got, want)


REDUCE_LAYOUTS = {
    "bcast0": lambda a: np.broadcast_to(a[0:1], (40, 50, 60)),
    "bcast1": lambda a: np.broadcast_to(a[:, 0:1], (40, 50, 60)),
    "bcast2": lambda a: np.broadcast_to(a[:, :, 0:1], (40, 50, 60)),
    "moveaxis": lambda a: np.moveaxis(a, 0, 2),
    "moveaxis-bcast": lambda a: np.moveaxis(np.broadcast_to(a[:, 0:1], (40, 50, 60)), 1, 2),
    "fortran": lambda a: np.asfortranarray(a),
    "transposed": lambda a: a.transpose(2, 0, 1),
    "negative": lambda a: a[::-1, :, ::-2],
}


@pytest.mark.parametrize("layout", REDUCE_LAYOUTS)
def test_reductions_of_every_layout(layout):
    """sum / prod / min / max over every axis set of broadcast, moved,
    F-ordered, transposed and negative-stride operands, computed and
    pending: min/max bit-identical, sums and products within the
    summation-order bound (README: NumPy picks the order from the memory
    layout)."""
    v3 = np.random.default_rng(3).standard_normal((40, 50, 60))
    f = REDUCE_LAYOUTS[layout]
    v, g = f(v3), f(grumpy_array(v3))
    for pending in (False, True):
        x, ref = (g * 2.0, v * 2.0) if pending else (g, v)
        for op in ("sum", "min", "max", "prod"):
            for axis in (0, 1, 2, (0, 1), (1, 2), (0, 2), None):
                for keepdims in (False, True):
                    with np.errstate(all="ignore"):
                        want = np.asarray(getattr(ref, op)(axis=axis, keepdims=keepdims))
                        got = np.asarray(plain(getattr(x, op)(axis=axis, keepdims=keepdims)))
                    assert got.shape == want.shape and got.dtype == want.dtype
                    if op in ("min", "max"):
                        assert np.array_equal(got, want), (op, axis)
                    else:
                        assert np.allclose(got, want, rtol=1e-12, atol=0), (op, axis)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [3, 4, 3.0, 4.0, 2.0, 1.0, 0.5, 0.0, -1.0, 2.5, -2.0])
def test_a_constant_exponent_gives_numpys_power(dtype, exponent):
    """x ** c for a Python scalar c: the kernel is specialised for c
    (codegen.h GP_EXPONENT_*).  2, 1, 0.5, 0 and -1 are NumPy's loop's
    square, copy, sqrt, one and reciprocal: bit-identical.  3 and 4 are
    products of squares, any other c is pow: within 4 ULP (DESIGN.md 4),
    with NumPy's signs of zeros and NaN positions, on values from
    subnormal to overflow, signed zeros, infinities and NaN.  One kernel."""
    rng = np.random.default_rng(11)
    fi = np.finfo(dtype)
    n = 40_000
    x = np.concatenate([rng.standard_normal(n) * 10, np.exp(rng.uniform(-800, 800, n)) * rng.choice([-1, 1], n),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0]])
    with np.errstate(all="ignore"):
        x = plain(x).astype(dtype)
        x = np.concatenate([x, np.array([fi.max, -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal], dtype)])
        g = grumpy_array(x)
        launched0, fallbacks0 = counters()
        got = (g ** exponent) * 1.0  # fused: a lone map this size may be left to NumPy
        assert grumpy.is_pending(got)
        got = plain(got)
        want = plain(x) ** exponent
    assert counters() == (launched0 + 1, fallbacks0)
    exact = exponent in (2.0, 1.0, 0.5, 0.0, -1.0)
    assert_same(got, want, max_ulp=0 if exact else 4)
    # signs of zeros and infinities; a NaN's sign is outside the contract (as
    # in assert_same): on an H100 machine NumPy 2.5.2 gave -NaN for
    # (-tiny) ** 0.5 and ** 2.5 in float32 and +NaN for the other negative
    # bases, where the GPU's sqrt.rn.f32 gives +NaN for all
    real = ~np.isnan(want)
    assert np.array_equal(np.signbit(got)[real], np.signbit(want)[real])


def arg_values(dtype, pattern, n):
    rng = np.random.default_rng(3)
    if pattern == "ascending":
        v = np.arange(n) % 97 if np.dtype(dtype) == np.bool_ else np.arange(n)
    elif pattern == "descending":
        v = np.arange(n)[::-1]
    elif pattern == "ties":
        v = rng.integers(0, 3, n)  # the extreme at many points: the first one counts
    elif pattern == "constant":
        v = np.full(n, 2)
    else:
        v = rng.integers(-100, 100, n)
    v = v.astype(dtype) if np.dtype(dtype) != np.bool_ else (v % 2).astype(bool)
    if np.dtype(dtype).kind == "f":
        if pattern == "nan_late":
            v[[n - 300, n - 5]] = np.nan  # the first NaN, in a late chunk
        elif pattern == "zeros":
            v[:] = 0.0
            v[1::3] = -0.0  # -0.0 == +0.0: the first zero either way
    return v


ARG_CASES = [(d, p) for d in (np.bool_, np.int8, np.uint16, np.int64, np.float32, np.float64)
             for p in ("random", "ascending", "descending", "ties", "constant", "nan_late", "zeros")
             if np.dtype(d).kind == "f" or p not in ("nan_late", "zeros")]


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype,pattern", ARG_CASES)
def test_a_fused_arg_reduction_is_numpys(fn, dtype, pattern):
    """argmin/argmax of a map: each chunk's extreme is a vectorized fold and
    only a chunk that holds a new best is scanned for its first index
    (codegen_rows.c arg_row); NumPy's index in every case -- ties (the
    first), NaN (the first NaN), -0.0 and +0.0 (equal: the first), rising
    and falling data (a new best in every chunk or only the first) -- over
    the whole array and along rows.  One kernel each."""
    n = 70001
    x = arg_values(dtype, pattern, n)
    g = grumpy_array(x)
    f = getattr(np, fn)
    for axis, shape in ((None, (n,)), (1, (7, 10001 - 1)), (0, (10, 7000))):
        m = n if axis is None else shape[0] * shape[1]
        gv, xv = g[:m].reshape(shape), plain(x)[:m].reshape(shape)
        launched0, fallbacks0 = counters()
        got = plain(f(np.maximum(gv, gv), axis=axis))
        assert counters() == (launched0 + 1, fallbacks0)
        want = f(np.maximum(xv, xv), axis=axis)
        assert np.array_equal(got, want), (axis, got, want)


def test_assigning_a_views_own_elements_keeps_numpys_values_and_errors():
    """a[k] = a[k] (how Python ends `a[k] += x`) writes each element onto
    itself: hooks/array.c computes the pending update and copies nothing.
    Values are NumPy's; a read-only view still raises NumPy's ValueError; a
    value of another dtype or layout over the same memory is a real
    assignment (NumPy's)."""
    x = np.linspace(-3.0, 3.0, 50_000)
    g = grumpy_array(x)
    want = x.copy()
    for k in (slice(1, -1), slice(None, None, 2), slice(None, None, -3)):
        g[k] += 0.5 * g[k]
        want[k] += 0.5 * want[k]
        g[k] = g[k]
    assert np.array_equal(plain(g), want)
    launched0, fallbacks0 = counters()
    g[1:-1] = g[1:-1]
    assert counters() == (launched0, fallbacks0)
    r = grumpy_array(x)
    r.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        r[1:-1] = r[1:-1]
    i = grumpy_array(np.arange(50_000, dtype=np.int64))
    i[...] = i.view(np.float64).view(np.int64)  # the same elements, one dtype
    i[1:] = i[:-1]  # overlapping, shifted: NumPy's copy
    want_i = np.arange(50_000, dtype=np.int64)
    want_i[1:] = want_i[:-1].copy()
    assert np.array_equal(plain(i), want_i)
    f = grumpy_array(np.arange(50_000, dtype=np.float32))
    f[...] = f[...].view(np.int32)  # same memory, another dtype: a cast of the bits' integers
    assert np.array_equal(plain(f), np.arange(50_000, dtype=np.float32).view(np.int32).astype(np.float32))
    # np.broadcast_arrays' writable results warn at a write (NumPy's private
    # WARN_ON_WRITE flag, also on their views): NumPy's write, with its warning
    for key, same in ((0, True), (slice(1, None), True), (0, False)):
        x, _ = np.broadcast_arrays(grumpy_array(np.arange(50_000.0)), np.zeros((2, 1)), subok=True)
        assert isinstance(x, grumpy.ndarray)
        with pytest.warns(DeprecationWarning, match="broadcast_arrays"):
            x[key] = x[key] if same else 5.0


def test_a_view_skipped_by_numpys_base_chain_still_warns_at_its_own_write():
    """NumPy collapses a view's .base past the views it was taken through
    (PyArray_SetBaseObject), so after ``s = a[::2]; s += x`` on a view of
    np.broadcast_arrays' result (``np.meshgrid(copy=False)``) the flag that
    makes writes warn is cleared on s and its data's owner but not on a:
    ``a[0] = 3`` warns again.  A grumpy view's chain passes through a (and
    through NumPy's plain broadcast views): found by the fuzzer's warning
    counts (seed 717) as one warning where NumPy gives two."""

    def run(v):
        a = np.meshgrid(v, np.arange(6.0), copy=False)[0]  # (6, 20000): v's rows
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = a[::2]
            s += np.ones(s.shape)
            a[0] = 3.0
            a[1] = 4.0  # a's own write cleared its flag: no third warning
            t = a[2:]
            t[0] = 5.0
        return [q.category.__name__ for q in w], plain(a).copy()

    with grumpy.disabled():
        want = run(np.linspace(0.0, 1.0, 20_000))
    got = run(grumpy_array(np.linspace(0.0, 1.0, 20_000)))
    assert want[0] == ["DeprecationWarning"] * 2
    assert got[0] == want[0]
    assert np.array_equal(got[1], want[1])
