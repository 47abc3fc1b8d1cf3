"""Regression tests for defects found in review: each failed before its fix."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, plain
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def g(x):
    return grumpy._ext().as_grumpy(np.array(x, copy=True))


def test_einsum_batch_with_free_axes_on_one_side_has_numpys_shape():
    r = np.random.default_rng(0)
    A, v = r.random((4, 30, 40, 50)), r.random((4, 50))
    got = np.einsum("bijk,bk->bij", g(A), g(v))
    want = np.einsum("bijk,bk->bij", A, v)
    assert got.shape == want.shape
    assert np.allclose(plain(got), want, rtol=1e-12, atol=0)
    B = np.ascontiguousarray(np.moveaxis(A, 3, 1))
    got2 = np.einsum("bk,bkij->bij", g(v), g(B))
    assert got2.shape == (4, 30, 40)
    assert np.allclose(plain(got2), np.einsum("bk,bkij->bij", v, B), rtol=1e-12, atol=0)


def test_more_than_32_dims_are_numpys():
    a = g(np.ones((1,) * 40 + (300,)))
    b = g(np.ones((300, 2)))
    assert plain(np.tensordot(a, b, axes=1)).shape == (1,) * 40 + (2,)
    assert plain(np.concatenate([a * 1.0, a], axis=0)).shape == (2,) + (1,) * 39 + (300,)


def test_huge_axis_raises_numpys_error():
    x = g(np.ones(100_000))
    with pytest.raises(OverflowError):
        np.add.accumulate(x * 1.0, axis=2**70)
    with pytest.raises(OverflowError):
        np.concatenate([x * 1.0, x], axis=2**64)


def test_fallback_returns_the_plain_out_array_itself():
    a = g(np.arange(100_000, dtype=np.float16))  # float16: NumPy computes it
    t = np.zeros(100_000, dtype=np.float16)
    assert np.add(a, 1, out=t) is t


def test_unrolled_short_reduction_warns_as_numpys_reduction():
    def run(x):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with np.errstate(over="ignore"):
                s_ignored = (x * 1.0).sum(axis=1)  # recorded under "ignore"
            s = (x * 1.0).sum(axis=1)  # recorded under the default state
            plain(s_ignored)
            plain(s)
        return [str(m.message) for m in w], s
    v = np.full((20_000, 8), 1e308)
    want, s0 = run(v)
    got, s1 = run(g(v))
    assert got == want == ["overflow encountered in reduce"]
    assert_same(s1, s0)


@pytest.mark.cpu_backend
def test_warning_replay_does_not_deadlock_with_another_capturing_thread(tmp_path):
    code = textwrap.dedent("""
        import threading, warnings
        import numpy as np
        warnings.simplefilter("ignore")
        stop = False
        def other():
            y = np.ones(1 << 17) * 1.0
            while not stop:
                z = y + 1.0
        t = threading.Thread(target=other)
        t.start()
        for k in range(10):
            r = np.log(np.linspace(0, 1, 1 << 22) * 1.0) * 2.0  # log(0): a replay
            r.tobytes()
        stop = True
        t.join()
        import grumpy
        print("ok", grumpy.stats()["fpe_replays"] > 0)
    """)
    env = dict(os.environ, GRUMPY_MIN_BYTES="65536", PYTHONPATH=ROOT)
    script = tmp_path / "replay_threads.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "True"]


BROADCAST_WRITE_THEN_REDUCE = """
import json, numpy as np
x = np.copy(np.random.default_rng(1).uniform(-4.0, 4.0, (65, 4097)).astype(np.float32))
m = x.max(axis=None, keepdims=True)  # (1, 1), pending
y = x * 1.0
np.copyto(y, m)  # y: m broadcast, pending
out = [y.copy().sum(axis=1, keepdims=True, dtype=np.int64), y.copy().sum(axis=1), np.cumsum(y.copy(), axis=1)]
print(json.dumps([np.asarray(o).view(np.ndarray).tolist() for o in out]))
"""


@pytest.mark.parametrize("env", [{"GRUMPY_DEBUG_JIT_FAIL": "1"}, {"GRUMPY_FIRST_LAUNCH_MS": "30"}],
                         ids=["every-compile-fails", "first-launches-numpys"])
def test_numpys_evaluator_broadcasts_a_value_written_by_copyto(env, tmp_path):
    """Found by the fuzzer (seed 616, programs 616001105 and 616002343):
    when NumPy's evaluator computed a map node whose value was an input
    broadcast only by the node (np.copyto(y, m) of a (1, 1) maximum), it
    kept the (1, 1) value, so a reduction of it summed one element
    (3 where NumPy gives 12291).  The value now gets the node's shape."""
    script = tmp_path / "bw.py"
    script.write_text(BROADCAST_WRITE_THEN_REDUCE)
    base = gpcheck.subprocess_env()
    base.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="65536")
    want = subprocess.run([sys.executable, str(script)], env=base, capture_output=True, text=True, timeout=300)
    got = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=dict(base, **env),
                         capture_output=True, text=True, timeout=300)
    assert want.returncode == 0 and got.returncode == 0, got.stderr[-2000:]
    assert got.stdout == want.stdout


SCALARS = [2**40, -1, 300, np.int64(2**40), np.int64(-1), np.uint64(2**63), 1e20, -1e20, float("nan"),
           float("inf"), np.float64("nan"), np.float64(1e300), np.float32(3.7), 3.7, -2.5, True, np.int8(-5),
           np.float64(-0.0), 2**64, -2**63]


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "uint64", "float32", "bool", "int16"])
@pytest.mark.parametrize("how", ["setitem", "fill"])
def test_a_scalar_written_into_an_array_is_converted_as_numpy_converts_it(dtype, how):
    """A scalar assigned lazily was cast to the array's dtype, wrapping an
    int64 out of an int32's range where NumPy raises OverflowError (fuzz
    case 668000149: `v3[:, ::-1] = v2` with v2 = x0.sum()); NaN into an
    integer array is NumPy's ValueError.  Values, exceptions and warnings
    are NumPy's for every scalar kind."""

    def write(t, v):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                if how == "setitem":
                    t[:, ::-1] = v
                else:
                    t.fill(v)
                lazy.append(grumpy.is_pending(t))
                got = ("ok", np.asarray(t).tobytes())
            except Exception as e:
                got = (type(e).__name__, str(e))
        return got + tuple(str(x.message) for x in w)

    lazy = []
    for v in SCALARS:
        shape = (300, 300)  # 90000 elements: captured at every dtype (the tests' threshold is 64 KiB)
        want = write(np.zeros(shape, dtype).view(np.ndarray), v)
        lazy.clear()
        t = g(np.zeros(shape, dtype)) * 1 if dtype != "bool" else g(np.zeros(shape, dtype)) & True
        got = write(t, v)
        assert got == want, (v, got[:1], want[:1])
        # an assignment NumPy does without an error is captured: lazy (fill
        # into numeric arrays, Python and NumPy numbers alike: array.c
        # array_fill)
        assert (how == "fill" and dtype == "bool") or lazy == ([True] if got[0] == "ok" else [])


@pytest.mark.parametrize("code", ["q", "Q"])
def test_long_long_arrays_keep_their_type_and_scalars(code):
    """x.astype('q') under capture had dtype char 'l' (GpDType has one
    int64), so its scalars were np.int64, not np.longlong (NumPy's
    TestMatmul::test_result_types failed under capture).  long long arrays
    are NumPy's now: 'q' in, 'q' out; 'l' arrays are still captured."""
    x = g(np.arange(200_000, dtype=np.int64))
    y = x.astype(code)
    z = y * 2 + 1
    want_t = np.longlong if code == "q" else np.ulonglong
    assert y.dtype.char == code and z.dtype.char == code
    assert type(z.sum()) is want_t and type(z[3]) is want_t
    assert (y @ y).dtype.char == np.dtype(code).char
    assert int(z.sum()) == int((np.arange(200_000, dtype=np.int64) * 2 + 1).sum())
    # NumPy's own rules for the creation functions (np.array's copy keeps
    # 'l'; asarray of a plain ndarray gives a 'q' view): as for a plain x
    # (found by the fuzzer, seed 921: np.asarray(x, dtype=np.longlong))
    p = np.arange(200_000, dtype=np.int64).view(np.ndarray)
    for f in (np.array, np.asarray, np.asanyarray, np.ascontiguousarray):
        assert f(x, dtype=code).dtype.char == f(p, dtype=code).dtype.char, f
        assert f(x + 1, dtype=code).dtype.char == f(p, dtype=code).dtype.char, f
    before = grumpy.stats()["kernels_launched"]
    w = x * 3 + 1
    assert w.dtype.char == "l" and int(w[5]) == 16
    assert grumpy.stats()["kernels_launched"] > before


@pytest.mark.parametrize("write", ["item", "slice", "iadd", "ufunc_out", "copyto", "none"])
def test_a_gathers_kept_index_check_is_dropped_when_the_index_is_written(write):
    """x[idx] then y[idx] check idx's range once (capture_writes.c checked:
    kept while idx's buffer stays read-only, its prot_epoch unchanged); any
    write to idx in between -- an item, a slice, an in-place operator, out=,
    copyto -- makes y[idx] check again, and an index now out of range is
    NumPy's IndexError."""
    n = 50_000
    x = g(np.arange(n, dtype=np.float64))
    y = g(np.arange(n, dtype=np.float64) * 2)
    idx = g(np.random.default_rng(1).integers(0, n, size=(8, n)))
    s0 = grumpy.stats()
    xs = x[idx]
    if write == "item":
        idx[3, 7] = n + 5
    elif write == "slice":
        idx[2, :4] = n
    elif write == "iadd":
        idx += n
    elif write == "ufunc_out":
        np.add(idx, n, out=idx)
    elif write == "copyto":
        np.copyto(idx, np.full((8, n), n + 1))
    if write == "none":
        ys = y[idx]
        assert grumpy.stats()["index_checks_reused"] == s0["index_checks_reused"] + 1
        assert_same(plain(ys), plain(y)[plain(idx)])
    else:
        with pytest.raises(IndexError):
            y[idx]
        assert grumpy.stats()["index_checks_reused"] == s0["index_checks_reused"]
    assert_same(plain(xs), plain(x)[np.random.default_rng(1).integers(0, n, size=(8, n))])
