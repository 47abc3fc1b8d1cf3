"""Issue "no wrong answer on programs nobody here wrote": the reproducers
that gave silently wrong numbers, each run in fresh processes at several
thread counts against plain NumPy in a separate process, and the siblings
of their root causes.

Root causes (both failed before their fixes):
- A reduction keeping a trailing length-1 axis ((n, 1).sum(axis=0)) was
  planned as an outer-axis reduction whose kept axis had vanished when the
  length-1 dims were collapsed: threads split the *reduced* axis and folded
  into the same output element (a race; plan.c innermost_axis).
- A kernel opened its output buffer (PROT_NONE -> read/write) before
  writing it, so another thread reading the buffer at that moment (np.cov's
  centred X read by OpenBLAS's second thread inside dsyrk) saw old or half
  written values; kernels now write a private stage moved into place in one
  mremap (guard.c gp_buffer_stage / gp_buffer_commit).
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREADS = [1, 2, 3, 8]


def _env(grumpy_on, threads=None, **extra):
    env = gpcheck.subprocess_env()
    env["PYTHONPATH"] = ROOT
    env["GRUMPY_CACHE_DIR"] = "off"
    if grumpy_on and threads:
        env["GRUMPY_THREADS"] = str(threads)
    env.update(extra)
    return env


def _run(src, grumpy_on, threads=None, **extra):
    """stdout of program src (plain NumPy, or under python -m grumpy.run)."""
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_nwa_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(src))
    cmd = [sys.executable, "-m", "grumpy.run", path] if grumpy_on else [sys.executable, path]
    r = subprocess.run(cmd, env=_env(grumpy_on, threads, **extra), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


REDUCE_LENGTH1 = """
import numpy as np, json
out = []
for shape, axis in [((2, 400000, 1), 1), ((400000, 1), 0), ((1, 400000, 1), 1), ((3, 1, 200000, 1, 1), 2),
                    ((400000, 1), None), ((200000, 1, 2), 0), ((1, 400000), 1), ((400000, 1, 1), (0, 2))]:
    a = np.ones(shape) * 1.0
    for it in range(3):
        out.append(np.asarray(a.sum(axis=axis)).ravel().tolist())
        out.append(np.asarray((a * 2.0).max(axis=axis)).ravel().tolist())
        out.append(np.asarray((a + 1.0).mean(axis=axis)).ravel().tolist())
x = np.copy(np.linspace(0.0, 1.0, 400000).reshape(400000, 1))
for it in range(3):
    out.append(np.asarray((x * 3.0).sum(axis=0)).tolist())
    out.append(np.asarray(np.argmax(x * 3.0, axis=0)).tolist())
    out.append(np.asarray(np.cumsum(x * 1.0, axis=0)[-1]).tolist())
print(json.dumps(out))
"""


@pytest.mark.parametrize("threads", THREADS)
def test_reductions_over_length1_axes_are_numpys(threads):
    want = json.loads(_run(REDUCE_LENGTH1, False))
    for _ in range(3):  # a race: several fresh processes
        got = json.loads(_run(REDUCE_LENGTH1, True, threads))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)


COV = """
import numpy as np, hashlib, grumpy
M, N = 700, 900
d0 = np.fromfunction(lambda i, j: (i * j) / M, (N, M), dtype=np.float64)
out = []
for it in range(6):
    c = np.asarray(np.cov(np.transpose(np.copy(d0))))
    out.append(float(c[3, 5]))
    out.append(float(c.sum()))
    out.append(hashlib.md5(c.tobytes()).hexdigest())
print(out)
"""


@pytest.mark.parametrize("threads", THREADS)
def test_cov_on_fresh_copies_is_numpys_every_time(threads):
    """np.cov's in-place centring is a pending write that OpenBLAS's threads
    read inside dsyrk; every call gives NumPy's bits.  The centring mean of
    the F-ordered copy is summed as NumPy's iterator orders it (row after
    row, not pairwise along the logical last axis: GpNode.in_order), so
    the bits are NumPy's, not only within the rounding bound."""
    want = eval(_run(COV, False, OPENBLAS_NUM_THREADS="2"))
    for _ in range(2):
        got = eval(_run(COV, True, threads, OPENBLAS_NUM_THREADS="2"))
        assert got == want


RACE_READER = """
import ctypes, threading, time, numpy as np, grumpy
n = 1 << 21
a = np.copy(np.linspace(0.0, 1.0, n))
lin = np.asarray(a).view(np.ndarray).copy()
want = (lin * 3.0 + 1.0) + lin
b = np.empty(n)
addr = np.ndarray.__dict__["ctypes"].__get__(b).data          # taken while b is computed: no escape path later
bad = 0
f0 = grumpy.stats()["guard_faults"]
for it in range(20):
    np.multiply(a, 3.0, out=b)   # lazy in-place writes: b's memory is PROT_NONE
    b += 1.0
    b += a
    got = np.empty(n)
    # another thread reads b's memory without asking (the GIL is released
    # in memmove): it faults and waits, or sees every value
    t = threading.Thread(target=ctypes.memmove, args=(np.ndarray.__dict__["ctypes"].__get__(got).data, addr, n * 8))
    t.start()
    if it % 2:
        time.sleep(0.05)       # the reader faults first: it computes b in the handler
    s = float(np.asarray(b).sum())
    t.join()
    bad += int(not np.array_equal(got, want))
print(bad, grumpy.stats()["guard_faults"] > f0)
"""


@pytest.mark.parametrize("threads", [2, 3])
def test_a_thread_reading_a_pending_buffer_sees_every_value(threads):
    assert _run(RACE_READER, True, threads).split() == ["0", "True"]


# Found by the fuzzer (tools/fuzz.py); each failed before its fix.

def test_matmul_with_a_zero_length_batch_axis_has_numpys_shape():
    """(0, 1, K) @ (K,): a 0-length batch dim does not broadcast to 1."""
    import grumpy

    a = grumpy._ext().as_grumpy(np.zeros((0, 1, 131073)))
    b = grumpy._ext().as_grumpy(np.ones(131073))
    assert np.matmul(a, b).shape == (0, 1)
    a2 = grumpy._ext().as_grumpy(np.zeros((0, 1, 300, 200)))
    b2 = grumpy._ext().as_grumpy(np.ones((5, 200, 300)))
    assert np.matmul(a2, b2).shape == np.matmul(np.zeros((0, 1, 300, 200)), np.ones((5, 200, 300))).shape


VIEW_AFTER_INPLACE = """
import numpy as np
x0 = np.asarray(np.random.default_rng(1).uniform(-100.0, 100.0, (4, 131073))[::2])
np.copyto(x0, np.int64(-4), casting='unsafe')
v5 = np.logical_not(x0)
v8 = np.fmin(v5, v5)
v10 = v8 - np.float32(1.5)
v11 = np.sin(v10)
print(np.asarray(np.dot(v11, v5.T)).tolist())
"""


@pytest.mark.parametrize("threads", [1, 3])
def test_view_of_a_pending_map_over_an_in_place_write(threads):
    """Making the view computes the pending in-place write, which first
    computes its readers (the map being viewed): the map's inputs were used
    after being freed (SIGSEGV)."""
    assert _run(VIEW_AFTER_INPLACE, True, threads) == _run(VIEW_AFTER_INPLACE, False)


def test_full_tensordot_is_a_0d_array_as_numpys():
    """np.tensordot contracting every axis returns a 0-d array (NumPy
    reshapes the product); grumpy gave dot's scalar, and writing into it
    (out=, v[()] = 1) raised TypeError.  Found by the fuzzer."""
    import grumpy

    x = grumpy._ext().as_grumpy(np.random.default_rng(1).uniform(-4, 4, 16384).astype(np.float32))
    for v in (np.tensordot(x, x, axes=([0], [0])), np.tensordot(x * 1.0, np.sign(x), axes=1)):
        assert type(v) is np.ndarray and v.shape == ()
    y = grumpy._ext().as_grumpy(np.random.default_rng(2).uniform(0.9, 1.1, (129, 129)))
    v8 = np.tensordot(np.floor(y), y, axes=2)
    assert v8.shape == ()
    np.add(np.int32(3), np.int32(3), out=v8)
    assert float(v8) == 6.0
    assert type(np.dot(x, x)) is np.float32  # dot, inner, einsum keep NumPy's scalar
    assert type(np.einsum("i,i->", x, x)) is np.float32


def test_complex_arrays_stay_numpys_class():
    """Creation functions make grumpy arrays only of dtypes grumpy computes:
    pocketfft (scipy.fft) refused a grumpy complex out= array ("unexpected
    data type for output array"), failing 332 scipy.signal tests."""
    z = np.zeros(30000, dtype=complex)
    assert type(z) is np.ndarray
    assert type(np.ones(30000, dtype=object)) is np.ndarray


def test_scipy_fft_takes_complex_arrays_made_under_grumpy():
    scipy_fft = pytest.importorskip("scipy.fft")  # SciPy: make compat-scipy installs it
    x = np.exp(1j * np.linspace(0, 1, 20000))
    np.testing.assert_allclose(scipy_fft.fft(x, 30000), scipy_fft.fft(np.asarray(x).view(np.ndarray), 30000))


def test_lazy_write_into_a_self_overlapping_view_is_numpys():
    """A write into a view whose elements share memory (zero stride, or
    as_strided rows that overlap) was recorded lazily and the written values
    were taken as the view's value; memory keeps only the last value written
    to each address (NumPy's test_mem_overlap fuzz found it at every size)."""
    from numpy.lib.stride_tricks import as_strided

    import grumpy

    base = np.arange(200_000.0)
    x = grumpy._ext().as_grumpy(base.copy())
    src = np.arange(700_000.0).reshape(7, 100_000)
    o = as_strided(x, shape=(7, 100_000), strides=(0, 8))
    o[...] = grumpy._ext().as_grumpy(src.copy())
    ref = base.copy()
    as_strided(ref, shape=(7, 100_000), strides=(0, 8))[...] = src
    np.testing.assert_array_equal(np.asarray(o.copy()), as_strided(ref, shape=(7, 100_000), strides=(0, 8)))
    o2 = as_strided(x, shape=(3, 100_000), strides=(8 * 50_000, 8))  # rows overlap
    np.add(o2, 1.0, out=o2)
    r2 = as_strided(ref, shape=(3, 100_000), strides=(8 * 50_000, 8))
    np.add(r2, 1.0, out=r2)
    np.testing.assert_array_equal(np.asarray(x), ref)


def test_zero_d_view_of_a_grumpy_array_is_plain():
    """x[..., 0] of a grumpy array was a 0-d grumpy array; np.std(v,
    axis=()) then got a scalar where NumPy's _var writes out= into an array
    (TypeError).  Found by the fuzzer (tests/fuzz_regressions/case_2024001338.py)."""
    import grumpy

    x = grumpy._ext().as_grumpy(np.random.default_rng(1).uniform(0.0, 4.0, 131073))
    v = x[..., 0]
    assert type(v) is np.ndarray and v.shape == ()
    assert float(np.std(v, axis=())) == 0.0
    assert float(np.asarray(x * 2.0)[..., 3]) == float(np.asarray(x)[3] * 2.0)


def test_an_operation_with_another_ndarray_subclass_is_numpys():
    """np.trapezoid(masked_y, x) under capture gave 19.5 instead of NumPy's
    13.0: a product of a grumpy array and a MaskedArray was recorded on the
    masked array's data, its mask lost (NumPy's own linalg/lib tests at
    every size).  Now an operation with another subclass is NumPy's."""
    src = """
        import numpy as np
        x = np.arange(5)
        y = x * x
        ym = np.ma.array(y, mask=(x == 2))
        a = np.copy(np.linspace(0, 1, 300_000))
        m = np.ma.array(np.copy(a), mask=(np.arange(300_000) % 3 == 0))
        r = [a * m, m * a, np.add(a, m), np.concatenate([a * 2, m])]
        print(float(np.trapezoid(ym, x)), [(type(v).__name__, float(v.sum())) for v in r])
    """
    plain = _run(src, False, 2)
    for t in (1, 2):
        assert _run(src, True, t, GRUMPY_MIN_BYTES="0") == plain
        assert _run(src, True, t) == plain


CONSTANT_MAP = """
import numpy as np
x = np.random.default_rng(1).uniform(-1.0, 1.0, (129, 1000))
v = x * 2.0
np.copyto(v, 0.5)                 # a map of constants only, written into v
w = x * 3.0
w[...] = 7
print(v.sum(axis=-2)[:3].tolist(), np.cumsum(v, axis=1)[0, :3].tolist(), w.max(axis=0)[:2].tolist(),
      int(np.argmax(v, axis=1)[5]), float(v.sum()))
"""


@pytest.mark.parametrize("extra", [{"GRUMPY_DEBUG_JIT_FAIL": "1"}, {"GRUMPY_BACKEND": "numpy"}, {}],
                         ids=["numpy-evaluator", "numpy-backend", "cpu"])
def test_reductions_of_a_map_of_constants_are_numpys(extra):
    """NumPy's evaluator (the path when a kernel cannot be compiled) gave a
    map of constants only (np.copyto(v, 0.5)) the value of a scalar, and a
    reduction or scan of it raised "axis 0 is out of bounds for array of
    dimension 0" where NumPy computes (found by the fuzzer running on the
    NumPy back end; fails on 4ea94ce with GRUMPY_DEBUG_JIT_FAIL=1)."""
    want = _run(CONSTANT_MAP, False)
    got = _run(CONSTANT_MAP, True, GRUMPY_MIN_BYTES="65536", **extra)
    assert got == want


def test_another_subclass_reflected_operator_runs_first_as_for_ndarray():
    """Python runs a right operand's reflected method first when its class
    is a subclass of the left operand's that overrides it: for a plain
    ndarray x, ``x / masked`` is MaskedArray.__rtruediv__ and ``x * matrix``
    is matrix.__rmul__ (a matrix product).  grumpy.ndarray is not their base
    class: its operators give them that turn.  Before, ``x / masked`` left
    1.0 under the mask where NumPy leaves 0.0 (scipy.stats'
    multivariate_hypergeom.var gave [1, 1, 1] for [0, 0, 0]) and ``x * matrix``
    multiplied element-wise."""
    import numpy as np

    n = 20_000
    x = np.zeros((1, n))  # a grumpy array at the tests' threshold
    assert type(x).__module__ == "grumpy"
    px = np.asarray(x).view(np.ndarray)
    d = np.ma.masked_array(np.zeros((1, 1)), mask=[[False]])
    got, want = x / d, px / d
    assert type(got) is type(want)
    assert np.array_equal(np.ma.getdata(got), np.ma.getdata(want))
    assert np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))

    a = np.ones((300, 300)) * 2.0
    pa = np.asarray(a).view(np.ndarray)
    m = np.matrix(np.arange(300 * 300, dtype=float).reshape(300, 300) % 7)
    import operator

    for op in (operator.mul, operator.add, operator.sub, operator.truediv):
        g, w = op(a, m), op(pa, m)
        assert type(g) is type(w) and np.array_equal(np.asarray(g), np.asarray(w)), op
    assert np.array_equal(np.asarray(a * m), np.asarray(pa @ np.asarray(m)))


SAME_INPUT_SAME_OUTPUT = """
import json, numpy as np, grumpy
out = {}
funcs = ["exp", "log", "sin", "cos", "tan", "arcsin", "arctan", "sinh", "cosh", "tanh", "arcsinh", "expm1",
         "log1p", "log2", "log10", "exp2", "cbrt"]
for n in (4097, 100_003):
    for dt in ("float64", "float32"):
        x = np.full(n, 0.7, dtype=dt) + np.zeros(n, dtype=dt)       # n equal values, pending
        for f in funcs:
            v = np.asarray(getattr(np, f)(x) * 1.0)
            out[f"{f} {dt} {n}"] = sorted(set(v.tolist()))
        s = np.asarray(x[::3] ** 1.3)                                 # strided: a loop the vectorizer may leave scalar
        c = np.asarray(np.power(x, 1.3) + 0.0)
        out[f"pow {dt} {n}"] = sorted(set(s.tolist()) | set(c.tolist()))
        out[f"arctan2 {dt} {n}"] = sorted(set(np.asarray(np.arctan2(x, x + 0.25)).tolist()))
print(json.dumps([out, grumpy.stats()["kernels_launched"]]))
"""


@pytest.mark.parametrize("threads", [1, 3])
def test_an_element_does_not_depend_on_its_position(threads):
    """Equal inputs give equal outputs wherever they sit: a kernel's vector
    body called glibc's libmvec and its scalar remainder libm, so elements
    8 and 9 of 10 equal inputs differed by an ULP (found by scipy.stats at
    every size: boltzmann.ppf(cdf(k)) flipped a comparison there).  Every
    double math call of a kernel now uses one libmvec variant
    (codegen_cpu.c gp_codegen_cpu_uniform_math)."""
    got, launched = json.loads(_run(SAME_INPUT_SAME_OUTPUT, True, threads, GRUMPY_MIN_BYTES="0"))
    assert launched > 40
    many = {k: v for k, v in got.items() if len(v) != 1}
    assert not many, many
    # and the values are NumPy's, within the contract's transcendental ULPs
    ref, _ = json.loads(_run(SAME_INPUT_SAME_OUTPUT.replace(', grumpy.stats()["kernels_launched"]', ", 0").replace(", grumpy", ""), False))
    for k, v in got.items():
        rtol = 1e-5 if "float32" in k else 1e-13
        assert v[0] == pytest.approx(ref[k][0], rel=rtol), k


LAYOUTS = {
    "x.T": lambda x: x.T,
    "(x * 2).T": lambda x: (x * 2.0).T,
    "x.T * 2": lambda x: x.T * 2.0,
    "x.T[::-1]": lambda x: x.T[::-1],
    "x[:, ::-1].T": lambda x: x[:, ::-1].T,
    "x3": lambda x: x.reshape(4, 5, -1),
    "x3.transpose(2, 0, 1)": lambda x: x.reshape(4, 5, -1).transpose(2, 0, 1),
    "(x3 + 1).transpose(1, 2, 0)": lambda x: (x.reshape(4, 5, -1) + 1.0).transpose(1, 2, 0),
}
LAYOUT_AXES = [0, 1, -1, (0, 1), (1, 2), (0, 2), None]


@pytest.mark.parametrize("reduction", ["sum", "mean", "prod"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_reductions_of_transposed_layouts_are_numpys_bits(layout, reduction):
    """NumPy's reduction visits its input's dims in memory order (its
    iterator sorts them by stride), so a float sum over the logical last
    axis of a transposed array accumulates rows in order instead of
    summing pairwise along that axis, and the reverse for its first axis:
    X.T.sum(axis=1) of a C-ordered (20, 200000) X differed from NumPy's in
    the last bits, and np.cov(X, rowvar=False)'s mean with it (scikit-learn's
    MinCovDet gave none of NumPy's "Determinant has increased" warnings at
    every size).  The reduction records that order (GpNode.in_order); the
    kernels follow it.  Bit for bit, over captured reductions (results of
    64 KiB or more, or inputs pending)."""
    rng = np.random.default_rng(11)
    x0 = rng.random((20, 200_000)) + 0.5
    if reduction == "prod":
        x0 = 1.0 + (x0 - 1.0) * 1e-3  # products stay finite
    make = LAYOUTS[layout]
    import grumpy

    for axis in LAYOUT_AXES:
        with grumpy.disabled():
            v = make(np.array(x0))
            if axis is not None and max(np.atleast_1d(axis)) >= v.ndim:
                continue
            want = getattr(v, reduction)(axis=axis)
        got = getattr(make(np.copy(x0)), reduction)(axis=axis)
        assert np.array_equal(np.asarray(got), np.asarray(want)), (layout, axis)


LAYOUTS_ON_FALLBACKS = """
import numpy as np, json
rng = np.random.default_rng(17)
x0 = rng.random((20, 6_000)) + 0.5
x3 = rng.standard_normal((64, 50, 40))
layouts = [lambda x: x.T, lambda x: (x * 2.0).T, lambda x: x.T * 2.0, lambda x: x.T[::-1],
           lambda x: x[:, ::-1].T, lambda x: x.reshape(4, 5, -1).transpose(2, 0, 1),
           lambda x: (x.reshape(4, 5, -1) + 1.0).transpose(1, 2, 0)]
out = []
for make in layouts:
    for axis in [0, 1, -1, (0, 1), (1, 2), (0, 2), None]:
        v = make(np.copy(x0))
        if axis is not None and max(np.atleast_1d(axis)) >= v.ndim:
            continue
        out.append(np.asarray(v.sum(axis=axis)).tobytes().hex())
for perm, axes in [((1, 2, 0), (1, 2)), ((2, 1, 0), (0, 1)), ((2, 0, 1), (0, 2))]:
    for k in range(2):  # the second time from the disk cache
        y = np.copy(x3).transpose(perm)
        out.append(np.asarray((y * 1.0).sum(axis=axes)).tobytes().hex())
        out.append(np.asarray(y.sum(axis=axes)).tobytes().hex())
print(json.dumps(out))
"""


@pytest.mark.parametrize("fallback", ["numpy", "loops"])
def test_reductions_of_transposed_layouts_are_numpys_bits_on_the_fallbacks(fallback, tmp_path):
    """The same order when NumPy computes the DAG after a failed compile
    (evaluate.c) and when NumPy's inner loops do without the GIL, as for a
    fault (eval_loops.c).  The split float sum (plan.c reduce_inner_first:
    x.transpose(1, 2, 0).sum(axis=(1, 2)) is its inner dim summed first,
    then the rest in order) handed NumPy its C-ordered first half, which
    NumPy summed pairwise along the other dim: 4 of the 51 sums below
    differed in the last bits; the loop evaluator iterated in logical order
    over C-ordered temporaries: 42 of 51 differed.  Each value is bit for
    bit NumPy's, at every size."""
    extra = {"GRUMPY_DEBUG_JIT_FAIL": "1", "GRUMPY_MIN_BYTES": "0", "GRUMPY_CACHE_DIR": str(tmp_path)}
    if fallback == "loops":
        extra["GRUMPY_DEBUG_EVAL_LOOPS"] = "1"
    got = json.loads(_run(LAYOUTS_ON_FALLBACKS, True, **extra))
    want = json.loads(_run(LAYOUTS_ON_FALLBACKS, False))
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert len(got) == len(want) and not bad, bad


SNAN_THROUGH_A_LAID_OUT_MAP = """
import numpy as np, warnings
warnings.simplefilter("error")
bits = np.array([0x7fa00001, 0x7f800001], dtype=np.uint32).view(np.float32)
x = np.copy(np.tile(np.float32(1.5), (300, 400)).T)   # F-ordered
x[3, 5], x[7, 9] = bits
y = np.where(x > 0, x, x)          # a map laid out as x (order='K'), stored
z = y.T.copy()
print(hex(int(z.view(np.uint32)[5, 3])), hex(int(z.view(np.uint32)[9, 7])))
"""


def test_a_signalling_nan_keeps_its_bits_through_the_loop_evaluators_layout_copy():
    """The loop evaluator (faults; GRUMPY_DEBUG_EVAL_LOOPS) stores a map
    laid out in NumPy's order='K' through a C-ordered copy, which went
    through a float load and store: a float32 signalling NaN came back
    quiet (0x7fe00001, where NumPy's np.where copies the bytes:
    0x7fa00001), with a spurious "invalid value encountered in cast"
    warning (an error here).  Same-dtype copies are byte copies now."""
    extra = {"GRUMPY_DEBUG_JIT_FAIL": "1", "GRUMPY_DEBUG_EVAL_LOOPS": "1", "GRUMPY_MIN_BYTES": "0"}
    want = _run(SNAN_THROUGH_A_LAID_OUT_MAP, False)
    assert want.split() == ["0x7fa00001", "0x7f800001"]
    assert _run(SNAN_THROUGH_A_LAID_OUT_MAP, True, **extra) == want


def _layout(a):
    """The strides of a's dims longer than 1 (the others do not count)."""
    a = np.asarray(a)
    return [s for s, n in zip(a.strides, a.shape) if n > 1]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_reduction_and_scan_results_have_numpys_memory_layout(layout):
    """NumPy allocates a reduction's or scan's result in its iterator's
    order: the sum over axis 2 of an F-ordered (2, 129, 127) array is
    F-ordered, so its ravel() is a copy.  grumpy's was C-ordered, its
    ravel() a view, and np.meshgrid(v.ravel(), v, copy=False)[0] written
    by np.copyto changed v itself (fuzz case 731008991).  Strides (of dims
    longer than 1) and values are NumPy's for sums, means, variances,
    maxima, with keepdims, and for cumsum; arg-reductions are C-ordered in
    NumPy too."""
    import grumpy

    x0 = np.random.default_rng(19).random((20, 200_000)) + 0.5
    make = LAYOUTS[layout]
    cases = [("sum", {}), ("mean", {}), ("var", {}), ("max", {}), ("sum", {"keepdims": True}),
             ("argmax", {}), ("cumsum", {})]
    for axis in [0, 1, -1]:
        for fn, kw in cases:
            with grumpy.disabled():
                v = make(np.array(x0))
                if axis >= v.ndim:
                    continue
                want = getattr(np, fn)(v, axis=axis, **kw)
            got = getattr(np, fn)(make(np.copy(x0)), axis=axis, **kw)
            assert _layout(got) == _layout(want), (layout, axis, fn, kw)
            assert np.array_equal(np.asarray(got), want), (layout, axis, fn, kw)


LIKE_NUMPY_LAYOUT = {
    "np.roll of a pending F array": lambda f: np.roll(f * 2.0, 3, axis=1),
    "einsum ij,jk->ik of F arrays": lambda f: np.einsum("ij,jk->ik", f * 2.0, f.T * 1.0),
    "einsum ij,jk->ik of F and C": lambda f: np.einsum("ij,jk->ik", f * 2.0, np.ascontiguousarray(f.T)),
    "astype of a broadcast": lambda f: np.broadcast_to(f[0] * 1.0, (3, f.shape[1])).astype(np.float32),
    "astype of an F array": lambda f: f.astype(np.float32),
    "concatenate of pending F arrays": lambda f: np.concatenate([f * 2.0, f * 3.0], axis=0),
    "cumsum of a pending F array": lambda f: np.cumsum(f * 2.0, axis=0),
    "sum of a broadcast": lambda f: np.broadcast_to((f * 2.0)[:, None, :], (f.shape[0], 3, f.shape[1])).sum(axis=0),
}


@pytest.mark.parametrize("case", sorted(LIKE_NUMPY_LAYOUT))
def test_results_made_like_an_operand_have_numpys_memory_layout(case):
    """np.roll fills empty_like(a), astype is NumPy's order='K' of one
    array (F stays F, a broadcast dim is fastest), np.einsum allocates in
    its iterator's order over the operands' strides, np.concatenate in the
    order of its pieces' strides: each result's layout (and values) is
    NumPy's (fuzz seeds 901, 902, which compare layouts since)."""
    import grumpy

    f0 = np.asfortranarray(np.random.default_rng(21).random((300, 400)))
    with grumpy.disabled():
        want = LIKE_NUMPY_LAYOUT[case](np.array(f0, order="F"))
    got = LIKE_NUMPY_LAYOUT[case](np.array(f0, order="F"))
    assert _layout(got) == _layout(want), case
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)


def test_a_write_through_the_ravel_of_an_f_ordered_variance_leaves_it_alone():
    """Fuzz case 731008991 as a program would write it."""
    import grumpy

    x0 = np.asfortranarray(np.random.default_rng(20).uniform(-4.0, 4.0, (2, 129, 127)))
    with grumpy.disabled():
        want = np.var(x0, axis=2)
    v = np.var(np.copy(x0, order="F"), axis=2)
    flat = v.ravel()
    flat[:] = -4.0
    assert not np.shares_memory(np.asarray(flat), np.asarray(v))
    assert np.array_equal(np.asarray(v), want)


@pytest.mark.parametrize("fn", ["argmax", "argmin"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_arg_reductions_of_transposed_layouts_count_in_logical_order(layout, fn):
    """An arg-reduction's index counts the reduced dims in their logical
    order, whatever order NumPy's iterator visits memory in: iterating the
    reduced dims in memory order (as float sums now do) gave
    np.argmax(-x2, axis=None, keepdims=True) of a transposed x2 the index
    4856 for NumPy's 2428 (fuzz case 729003760)."""
    import grumpy

    x0 = np.random.default_rng(13).random((20, 200_000))
    make = LAYOUTS[layout]
    for axis in [None, 0, 1, -1]:
        for keepdims in [False, True]:
            with grumpy.disabled():
                v = make(np.array(x0))
                if axis is not None and axis >= v.ndim:
                    continue
                want = getattr(np, fn)(-v, axis=axis, keepdims=keepdims)
            got = getattr(np, fn)(-make(np.copy(x0)), axis=axis, keepdims=keepdims)
            assert np.array_equal(np.asarray(got), np.asarray(want)), (layout, axis, keepdims)


THREADS_WRITE_ROWS = """
import sys
sys.setswitchinterval(1e-4)  # the GIL passes often: many interleavings
import numpy as np
import grumpy
from numpy.random.tests.test_generator_mt19937 import TestThread
t = TestThread()
t.seeds = range(8)
lost = 0
for i in range(25):
    for check in (t.test_normal, t.test_exp, t.test_multinomial):
        try:
            check()
        except AssertionError:
            lost += 1
print(lost, grumpy.stats()["ops_captured"] > 0)
"""


def test_python_threads_writing_rows_of_one_array_lose_no_write():
    """NumPy's own TestThread (numpy.random's tests, found by `make compat
    COMPAT_TESTS=numpy.random.tests`): 8 Python threads each write a row of
    one array (`out[...] = state.normal(size=10000)` into its row view),
    then the same serially; the two arrays must be equal.  grumpy lost a
    row now and then: a thread computed the buffer's pending writes,
    another thread recorded its own write into another row while the GIL
    passed, and the first thread's write then replaced it as the buffer's
    one pending writer (gp_node_set_output_view), so it was never
    computed -- the row kept np.empty's contents.  The write paths now
    compute such a writer first (capture.h gp_settle_other_writer_locked).
    Before the change 4, 18 and 11 of the 75 checks failed in three runs
    of this program; after it, none in 6 runs."""
    out = _run(THREADS_WRITE_ROWS, True, GRUMPY_MIN_BYTES="0")
    lost, captured = out.split()
    assert captured == "True"
    assert lost == "0"


READ_WHILE_WARNING = """
import threading, time, warnings
import numpy as np
import grumpy
n = 2_000_000
base = np.linspace(1.0, 2.0, n)
base[::1000] = 1e300  # these overflow: NumPy's warning comes through the hook below
x = np.copy(base)
go = threading.Event()
seen = []
def hook(message, category, filename, lineno, file=None, line=None):
    if not go.is_set():
        go.set()
        time.sleep(0.3)  # the GIL passes while the kernel's flags are reported
warnings.showwarning = hook
warnings.simplefilter("always")
def reader():
    go.wait()
    seen.append(float(np.asarray(x)[1]))
t = threading.Thread(target=reader)
t.start()
x *= 1e10
first = float(x[1])
t.join()
want = base[1] * 1e10
print(first == want, seen == [want], first / base[1], type(x).__module__)
"""


def test_a_thread_reading_an_array_while_its_in_place_kernel_warns_does_not_apply_it_twice():
    """`x *= 1e10` overflows in some elements: the thread that computes it
    gives NumPy's warning from the kernel's flags with the core lock
    released (complete(), report_fpe), here through a warnings hook that
    lets the GIL go for 0.3 s.  Another thread reading x then found the
    in-place kernel stored but not marked computed and ran it again: x[1]
    was multiplied by 1e20 in both threads.  Such a node is `completing`
    now, and gp_node_materialize_locked waits for it (plan.c
    wait_for_completion): NumPy's value in both threads."""
    out = _run(READ_WHILE_WARNING, True)
    assert out.split() == ["True", "True", "10000000000.0", "grumpy"]
