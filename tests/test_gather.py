"""x[idx] of an x and one C-ordered integer index array is a pending
gather (GP_OP_GATHER, hooks/capture_writes.c gp_capture_gather): its users
read x at the indices inside their own kernels, so a bootstrap's
``x[idx].mean(axis=1)`` is one map-reduce over idx and the (m, n) copy is
never written.  An n-D x is gathered by rows (k-means' ``X - C[labels]``,
a one-hot ``np.eye(k)[labels]``).  x may be a plain ndarray (NumPy's own subscript slot is
grumpy's while it captures, hooks/plain_ops.c) or a grumpy array.  The
indices are checked when recorded (a negative one counts from the end, in
the kernel); out-of-range ones and every other kind of key are NumPy's.  Values are NumPy's bit for bit (a
gather is a copy)."""

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, plain

R = np.random.default_rng(12)
N = 120_000  # indices: 0.96 MB of float64 results, over the tests' threshold


def g(x):
    return grumpy._ext().as_grumpy(np.array(x, copy=True))


def stat(key):
    return grumpy.stats()[key]


def outcome(fn):
    """("ok", value) or ("error", type, message) of fn()."""
    try:
        return ("ok", plain(np.asarray(fn())))
    except Exception as e:  # noqa: BLE001 -- the exception is what is compared
        return ("error", type(e), str(e))


def same_outcome(got, want):
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        assert_same(got[1], want[1])
    else:
        assert got[1:] == want[1:]


TABLE_DTYPES = [np.float64, np.float32, np.int8, np.int32, np.uint16, np.int64, np.bool_]
INDEX_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("table_dtype", TABLE_DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("table_kind", ["plain", "grumpy"])
def test_a_gather_is_recorded_and_gives_numpys_values(table_kind, table_dtype, index_dtype):
    n = 100 if index_dtype in (np.int8, np.uint8) else 5000
    table = (R.normal(size=n) * 40).astype(table_dtype)
    idx = R.integers(0, n, size=(3, N // 3)).astype(index_dtype)
    x = g(table) if table_kind == "grumpy" else table
    captured = stat("ops_captured")
    got = x[idx]
    assert grumpy.is_pending(got)
    assert stat("ops_captured") == captured + 1
    assert got.flags.c_contiguous and got.dtype == table_dtype and got.shape == idx.shape
    assert_same(plain(got), table[idx])
    if table_dtype is not np.bool_:
        assert_same(plain(x[idx][:, ::-7] * 2), table[idx][:, ::-7] * 2)


@pytest.mark.cpu_backend
def test_a_gather_fuses_into_its_reductions():
    """The bootstrap's statistics: the first reduction of each gathered
    array computes the gather inside its kernel (and writes the array
    there, since the program holds it: one pass instead of NumPy's copy
    and then its reduction); the later ones read it."""
    x0 = R.lognormal(size=50_000)
    y0 = 2.0 * x0 + R.normal(size=50_000)
    idx = R.integers(0, 50_000, size=(40, 50_000))
    launched, fused = stat("kernels_launched"), stat("nodes_fused")
    xs = x0[idx]
    ys = y0[idx]
    m = plain(xs.mean(axis=1))
    v = plain(xs.var(axis=1, ddof=1))
    r = plain(ys.mean(axis=1) / xs.mean(axis=1))
    assert stat("nodes_fused") - fused >= 2  # each gather inside its first reduction
    assert stat("kernels_launched") - launched <= 6  # no kernel of a gather alone
    with grumpy.disabled():
        xs0, ys0 = x0[idx], y0[idx]
        np.testing.assert_allclose(m, xs0.mean(axis=1), rtol=1e-13)
        np.testing.assert_allclose(v, xs0.var(axis=1, ddof=1), rtol=1e-12)
        np.testing.assert_allclose(r, ys0.mean(axis=1) / xs0.mean(axis=1), rtol=1e-13)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a.reshape(40, 50, 64).transpose(1, 2, 0),
        lambda a: (a * 2.0).reshape(40, 50, 64).transpose(1, 2, 0),
        lambda a: a.reshape(2000, 8, 8).transpose(1, 2, 0),
    ],
)
def test_a_gathers_transposed_sum_is_numpys_bits_from_its_copy(view):
    """A gather's plan does not collapse the reduced dims its array holds
    as one run of memory, so the planner reduces a copy.  A C-ordered copy
    of x[idx].reshape(40, 50, 64).transpose(1, 2, 0) has the kept dim
    innermost, and its sum over (0, 1) accumulated in order where NumPy
    sums the run pairwise (the last bits differed); the copy is now laid
    out in NumPy's order, one run, summed pairwise, in kernels."""
    x0 = R.standard_normal((3000, 64))
    idx = R.integers(0, 3000, 2000)
    with grumpy.disabled():
        want = view(np.array(x0)[idx]).sum(axis=(0, 1))
    failures, launched = stat("plan_failures"), stat("kernels_launched")
    got = plain(view(np.copy(x0)[np.copy(idx)]).sum(axis=(0, 1)))
    assert np.array_equal(got, want)
    assert stat("plan_failures") == failures and stat("kernels_launched") > launched


def _pending_index(x, i):
    return x[(i * 7) % 1000]


KEYS = {
    "an index below -len (NumPy's IndexError)": lambda x, i: x[-i - 1],
    "an index out of range (NumPy's IndexError)": lambda x, i: x[i + 1],
    "float indices (NumPy's IndexError)": lambda x, i: x[i.astype(np.float64)],
    "a Fortran-ordered index": lambda x, i: x[np.asfortranarray(i.reshape(600, -1))],
    "a strided index": lambda x, i: x[i[::2]],
    "a boolean mask": lambda x, i: x[np.ones(x.shape, bool)],
    "an empty index": lambda x, i: x[np.zeros((0, 5), np.int64)],
    "a 0-d index": lambda x, i: x[np.array(5)],
    "a 2-D table's rows, below -len": lambda x, i: x.reshape(100, 10)[-(i % 100) - 1],
    "a 2-D table's rows, out of range": lambda x, i: x.reshape(100, 10)[i % 100 + 1],
    "a pending index": _pending_index,
    "a list index": lambda x, i: x[list(i[:10])],
}


@pytest.mark.parametrize("case", sorted(KEYS))
@pytest.mark.parametrize("table_kind", ["plain", "grumpy"])
def test_other_keys_are_numpys(table_kind, case):
    table = R.normal(size=1000)
    idx = R.integers(0, 1000, size=N)
    fn = KEYS[case]
    with grumpy.disabled():
        want = outcome(lambda: fn(table.copy(), idx.copy()))
    x = g(table) if table_kind == "grumpy" else table.copy()
    i = g(idx) if case == "a pending index" else idx.copy()
    same_outcome(outcome(lambda: fn(x, i)), want)


def _write_table_through_grumpy(x0, idx):
    x = g(x0)
    r = x[idx] * 2.0
    x[:] = 5.0
    return r


def _write_plain_table_through_numpy(x0, idx):
    x = plain(g(x0))  # a plain view of grumpy's memory: NumPy's own setitem writes it
    r = x[idx] * 2.0
    x[::3] = 5.0
    return r


def _write_index(x0, idx):
    i = g(idx)
    r = x0[i] + 1.0
    i[:] = 0
    return r


def _add_own_gather(x0, idx):
    x = g(x0)
    x += x[idx]
    return x


def _assign_own_gather(x0, idx):
    x = g(x0)
    x[:] = x[idx[::-1].copy()]
    return x


def _copyto_own_gather(x0, idx):
    x = g(x0)
    np.copyto(x, x[idx] * 2.0)
    return x


WRITES = {
    "table written through grumpy": _write_table_through_grumpy,
    "plain table written by NumPy": _write_plain_table_through_numpy,
    "index written": _write_index,
    "x += x[idx]": _add_own_gather,
    "x[:] = x[idx]": _assign_own_gather,
    "np.copyto(x, x[idx] * 2)": _copyto_own_gather,
}


@pytest.mark.parametrize("case", sorted(WRITES))
def test_a_pending_gather_reads_the_values_of_when_it_was_recorded(case):
    """A write to the table or the index after x[idx] is recorded computes
    the gather first (its leaves are readers of both buffers), and an
    in-place update of x by its own gather reads x's old values, as
    NumPy's copy does."""
    x0 = np.linspace(0.0, 1.0, N)
    idx = R.integers(0, N, size=N)
    fn = WRITES[case]
    with grumpy.disabled():
        want = plain(np.asarray(fn(x0.copy(), idx.copy())))
    assert_same(plain(fn(x0.copy(), idx.copy())), want)


def test_a_small_result_is_numpys():
    x = R.normal(size=1000)
    idx = R.integers(0, 1000, size=100)
    captured = stat("ops_captured")
    got = x[idx]
    assert stat("ops_captured") == captured and type(got) is np.ndarray
    assert_same(got, x[idx])


TAKES = {
    "np.take(x, i)": lambda x, i: np.take(x, i),
    "np.take(x, i, axis=0)": lambda x, i: np.take(x, i, axis=0),
    "np.take(x, i, 0)": lambda x, i: np.take(x, i, 0),
    "np.take(x, i, axis=None)": lambda x, i: np.take(x, i, axis=None),
    "np.take(x, i, mode='clip') (NumPy's)": lambda x, i: np.take(x, i, mode="clip"),
    "np.take(x, i, axis=1) (NumPy's AxisError)": lambda x, i: np.take(x, i, axis=1),
}


@pytest.mark.parametrize("case", sorted(TAKES))
@pytest.mark.parametrize("past_the_end", [False, True], ids=["in-range", "past-the-end"])
def test_np_take_of_a_grumpy_1d_array_is_the_same_gather(past_the_end, case):
    """np.take dispatches on its table (NEP 18: the indices are not a
    relevant argument), so a grumpy table's np.take is the same gather as
    its subscript; past the end, NumPy's take raises its own IndexError."""
    table = R.normal(size=20_000)  # 160 KB: a grumpy array
    idx = R.integers(0, 20_000, size=N) + (20_000 if past_the_end else 0)
    fn = TAKES[case]
    with grumpy.disabled():
        want = outcome(lambda: fn(table.copy(), idx.copy()))
    x = g(table)
    assert type(x) is not np.ndarray
    captured = stat("ops_captured")
    got = outcome(lambda: fn(x, idx))
    same_outcome(got, want)
    gathered = stat("ops_captured") > captured
    assert gathered == ("NumPy's" not in case and not past_the_end)


ROW_TABLES = {
    "2-D": lambda t: t.reshape(40, 15),
    "3-D": lambda t: t.reshape(30, 4, 5),
    "2-D, columns strided": lambda t: t.reshape(40, 15)[:, ::2],
    "2-D, rows reversed": lambda t: t.reshape(40, 15)[::-1],
    "2-D, transposed": lambda t: t.reshape(15, 40).T,
}


@pytest.mark.parametrize("index_shape", [(20_000,), (100, 200)], ids=["1-D index", "2-D index"])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint8], ids=lambda d: d.__name__)
@pytest.mark.parametrize("layout", sorted(ROW_TABLES))
@pytest.mark.parametrize("table_kind", ["plain", "grumpy", "pending"])
def test_rows_of_an_nd_table_are_a_gather_with_numpys_values(table_kind, layout, index_dtype, index_shape):
    """x[idx] of an n-D x: idx.shape + x.shape[1:], each x[idx[i]] a row,
    recorded as one gather (the element offsets idx * row + 0..row-1
    computed in the kernel), of a plain, grumpy or pending table in any
    layout (a table not C-contiguous in grumpy's memory is copied)."""
    t0 = (R.normal(size=600) * 40).astype(np.float64)
    idx = R.integers(0, 30 if layout == "3-D" else (15 if layout.endswith("transposed") else 40),
                     size=index_shape).astype(index_dtype)
    want = ROW_TABLES[layout](t0.copy())[idx]
    base = {"plain": t0.copy(), "grumpy": g(t0), "pending": g(t0) * 1.0}[table_kind]
    x = ROW_TABLES[layout](base)
    captured = stat("ops_captured")
    got = x[idx]
    assert grumpy.is_pending(got)
    assert stat("ops_captured") == captured + 1
    assert got.flags.c_contiguous and got.shape == want.shape
    assert_same(plain(got), want)
    assert_same(plain(x[idx][..., ::-1] * 2), want[..., ::-1] * 2)


@pytest.mark.cpu_backend
def test_k_means_residuals_read_the_centroids_inside_their_kernel():
    """k-means' distances to the assigned centroids, X - C[labels]: the row
    gather is computed inside its user's kernel, never a kernel of its own:
    the map, the row-wise map-reduce and a one-hot np.eye(k)[labels] are one
    kernel each; the full sum two (its reduced axes do not collapse over the
    index broadcast along the row, so the map is written and then reduced,
    plan.c: still no (n, d) gathered copy before it)."""
    X = g(R.normal(size=(60_000, 8)))
    C = R.normal(size=(5, 8))
    labels = g(R.integers(0, 5, size=60_000))
    Xp, lp = plain(X), plain(labels)
    cases = [("map", lambda: X - C[labels], lambda: Xp - C[lp], 1),
             ("row-wise", lambda: ((X - C[labels]) ** 2).sum(axis=1), lambda: ((Xp - C[lp]) ** 2).sum(axis=1), 1),
             ("one-hot", lambda: (np.eye(5)[labels] * X[:, :5]).sum(axis=1),
              lambda: (np.eye(5)[lp] * Xp[:, :5]).sum(axis=1), 1),
             ("full", lambda: ((X - C[labels]) ** 2).sum(), lambda: ((Xp - C[lp]) ** 2).sum(), 2)]
    for name, fn, ref, kernels in cases:
        launched, captured = stat("kernels_launched"), stat("ops_captured")
        got = plain(np.asarray(fn()))
        assert stat("kernels_launched") - launched == kernels, name
        assert stat("ops_captured") - captured >= 2, name
        with grumpy.disabled():
            np.testing.assert_allclose(got, ref(), rtol=1e-13, err_msg=name)


def test_a_row_gather_reads_the_table_of_when_it_was_recorded():
    """A write to the n-D table after x[idx] computes the gather first."""
    t0 = R.normal(size=(50, 6))
    idx = R.integers(0, 50, size=30_000)
    x = g(t0)
    r = x[idx] * 2.0
    x[3:9] = -1.0
    assert_same(plain(r), t0[idx] * 2.0)


@pytest.mark.parametrize("index_dtype", [np.int8, np.int16, np.int32, np.int64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("table", ["1-D", "2-D rows"])
def test_negative_indices_count_from_the_end_in_the_gather(table, index_dtype):
    """x[idx] with indices in [-len, len): a gather whose kernel adds the
    length to a negative index, as NumPy wraps it; -len itself is the
    first element."""
    n = 100 if index_dtype is np.int8 else 1000
    t0 = R.normal(size=n * (6 if table == "2-D rows" else 1))
    x = g(t0) if table == "1-D" else g(t0.reshape(n, 6))
    idx = R.integers(-n, n, size=N // 6).astype(index_dtype)
    idx[:3] = (-n, -1, n - 1)
    captured = stat("ops_captured")
    got = x[idx]
    assert grumpy.is_pending(got) and stat("ops_captured") == captured + 1
    assert_same(plain(got), plain(x)[idx])


TAKE_METHODS = {
    "x.take(i)": (lambda x, i: x.take(i), 1),
    "x.take(i, 0)": (lambda x, i: x.take(i, 0), 1),
    "x.take(i, axis=None)": (lambda x, i: x.take(i, axis=None), 1),
    "rows: X.take(i, axis=0)": (lambda x, i: x.reshape(-1, 8).take(i % 2000, axis=0), 1),
    "rows: X.take(i) flattens (NumPy's)": (lambda x, i: x.reshape(-1, 8).take(i), 0),
    "X.take(i, axis=1) (NumPy's)": (lambda x, i: x.reshape(-1, 8).take(i % 8, axis=1), 0),
    "x.take(i, mode='clip') (NumPy's)": (lambda x, i: x.take(i * 3, mode="clip"), 0),
    "x.take(list) (NumPy's)": (lambda x, i: x.take([1, -2, 3]), 0),
    "x.take(i + len) (NumPy's IndexError)": (lambda x, i: x.take(i + 16000), 0),
}


@pytest.mark.parametrize("case", sorted(TAKE_METHODS))
def test_the_take_method_of_a_grumpy_array_is_the_same_gather(case):
    """x.take(indices) of a grumpy x (axis None or 0 for 1-D, 0 for an n-D
    x's rows), no out= or mode=: the gather x[indices]; every other form
    is NumPy's method, with NumPy's values and errors."""
    fn, gathers = TAKE_METHODS[case]
    t0 = R.normal(size=16000)  # 128 KB: a grumpy array at the tests' threshold
    idx = R.integers(-16000, 16000, size=N)
    with grumpy.disabled():
        want = outcome(lambda: fn(t0.copy(), idx.copy()))
    x = g(t0)
    i = plain(idx).copy()
    pending = []

    def call():
        r = fn(x, i)
        pending.append(grumpy.is_pending(r))
        return r

    same_outcome(outcome(call), want)
    assert pending == ([True] if gathers else [False] if want[0] == "ok" else [])


@pytest.mark.parametrize("layout", ["C", "(0, 2, 1)", "F", "(0, 2, 1) of F", "middle reversed", "4-D (0, 3, 1, 2)"])
def test_a_row_gather_has_numpys_memory_layout(layout):
    """NumPy's x[k] keeps the memory order of x.shape[1:] (a transposed or
    Fortran-ordered table's result is not C-ordered): such tables are
    NumPy's, the others a C-ordered gather, strides as NumPy's."""
    base = R.normal(size=(500, 4, 30))
    x = {"C": base, "(0, 2, 1)": base.transpose(0, 2, 1), "F": np.asfortranarray(base),
         "(0, 2, 1) of F": np.asfortranarray(base).transpose(0, 2, 1), "middle reversed": base[:, ::-1],
         "4-D (0, 3, 1, 2)": R.normal(size=(50, 3, 4, 5)).transpose(0, 3, 1, 2)}[layout]
    k = plain(R.integers(0, x.shape[0], size=200))
    with grumpy.disabled():
        want = x[k]
    got = x[k]
    assert got.strides == want.strides and got.flags.c_contiguous == want.flags.c_contiguous
    assert grumpy.is_pending(got) == want.flags.c_contiguous
    assert_same(plain(got), want)


def test_a_row_gather_of_a_small_plain_index_copies_the_index_only():
    """An index in NumPy's memory (below the threshold) broadcast along the
    rows reads k itself, copied (k's bytes, not the result's): C[labels]
    of 5,000 labels and 32 features (a 1.28 MB result) is a gather."""
    C = R.normal(size=(8, 32))
    labels = plain(R.integers(0, 8, size=5000)).copy()
    got = C[labels]
    assert grumpy.is_pending(got)
    assert_same(plain(got), C[labels])


BOUNDARY_INDEX_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("where", ["first", "block", "tail"])
@pytest.mark.parametrize("index_dtype", BOUNDARY_INDEX_DTYPES, ids=lambda d: d.__name__)
def test_the_range_check_is_exact_at_the_ends_for_every_index_dtype(index_dtype, where):
    """The check that decides between a recorded gather and NumPy's
    IndexError (capture_writes.c index_range_bad: vector compares over
    blocks of 64 indices, then a scalar tail): the largest and, for a
    signed dtype, the most negative index in range are recorded; one past
    either end, at the first index, inside the blocks or in the tail
    (N % 64 indices), is NumPy's IndexError.  The table's length is the
    dtype's range where it is small (an int8 index past 127 wraps)."""
    info = np.iinfo(index_dtype)
    n = min(100, int(info.max))  # table length
    size = N - N % 64 + 37  # 37 indices in the tail
    pos = {"first": 0, "block": size // 2, "tail": size - 5}[where]
    table = R.normal(size=n)
    signed = info.min < 0
    ends = [n - 1] + ([-n] if signed else [])
    outside = [n] + ([-n - 1] if signed and -n - 1 >= info.min else [])
    for value, in_range in [(v, True) for v in ends] + [(v, False) for v in outside]:
        idx = (np.arange(size) % n).astype(index_dtype)
        idx[pos] = value
        with grumpy.disabled():
            want = outcome(lambda: table.copy()[idx.copy()])
        captured = stat("ops_captured")
        x = g(table)
        got = outcome(lambda: x[idx])
        same_outcome(got, want)
        assert (want[0] == "ok") == in_range, (value, want)
        assert (stat("ops_captured") > captured) == in_range, value
