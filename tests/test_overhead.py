"""Issue "never slower": what a captured statement costs besides its
kernel.  Counted, not timed (timings are tools/ benchmarks)."""

import numpy as np
import pytest

import grumpy
import gpcheck


def counters():
    s = grumpy.stats()
    return s["protects"], s["kernels_launched"], s["serial_launches"]


@pytest.mark.cpu_backend
def test_a_temporary_summed_at_once_is_not_protected_and_unprotected():
    """(a*b).sum(): the temporary a*b is written by the map-reduce kernel
    (its array is alive) and its only reader is that kernel's reduction.
    It was committed read-only (its consumer still pending), then made
    writable again when marked and when freed: two mprotects of populated
    pages per statement, ~15% of the time at 1 MiB.  Now the one mprotect
    left is the reservation of the next fresh result's address range."""
    n = 131072  # 1 MiB operands, above the tests' 64 KiB threshold
    a, b = np.copy(np.linspace(0, 1, n)), np.copy(np.linspace(1, 2, n))
    want = float(np.multiply(np.asarray(a).view(np.ndarray), np.asarray(b).view(np.ndarray)).sum())
    for _ in range(5):
        float((a * b).sum())
    p0, l0, _ = counters()
    for _ in range(50):
        s = float((a * b).sum())
    p1, l1, _ = counters()
    assert s == pytest.approx(want, rel=1e-12)
    assert l1 - l0 == 50
    assert p1 - p0 <= 50


@pytest.mark.cpu_backend
def test_small_launches_run_on_the_calling_thread_large_ones_on_the_pool():
    """Waking the pool costs more than a second thread gains below ~8 MiB
    moved (backend_cpu.c SERIAL_BYTES, measured): such launches run serially."""
    small = np.copy(np.linspace(0, 1, 100_000))       # 0.8 MiB
    large = np.copy(np.linspace(0, 1, 2_000_000))     # 16 MiB
    _, l0, s0 = counters()
    x = np.asarray(small * 2.0 + 1.0)
    _, l1, s1 = counters()
    y = np.asarray(large * 2.0 + 1.0)
    _, l2, s2 = counters()
    assert (l1 - l0, s1 - s0) == (1, 1)
    assert (l2 - l1, s2 - s1) == (1, 0)
    assert x[-1] == 3.0 and y[-1] == 3.0


@pytest.mark.cpu_backend
def test_a_strided_column_counts_the_cache_lines_it_reads():
    """A column of a C-ordered (m, 12) float64 array reads a 64-byte line
    per element, not 8 bytes: the launch's traffic (plan.c
    strided_extra_bytes) puts a 2.4 MB column map on the pool, where its
    element bytes alone (2 x 2.4 MB) would keep it on the calling thread
    (gram_schmidt's `v - r * Q[:, i]`, 0.94x NumPy before, 1.17x after)."""
    m = 300_000
    Q = np.copy(np.linspace(0, 1, m * 12).reshape(m, 12))
    v = np.copy(np.linspace(1, 2, m))
    Q.sum()  # Q computed: its columns are strided leaves
    _, l0, s0 = counters()
    col = np.asarray(v - 0.5 * Q[:, 3])
    _, l1, s1 = counters()
    row = np.asarray(v - 0.5 * Q.reshape(-1)[:m])  # the same bytes, contiguous
    _, l2, s2 = counters()
    assert (l1 - l0, s1 - s0) == (1, 0)
    assert (l2 - l1, s2 - s1) == (1, 1)
    Qn, vn = np.asarray(Q).view(np.ndarray), np.asarray(v).view(np.ndarray)
    assert np.array_equal(col, vn - 0.5 * Qn[:, 3])
    assert np.array_equal(row, vn - 0.5 * Qn.reshape(-1)[:m])


@pytest.mark.parametrize("spec,shapes", [
    ("ij,ij->i", [(400_000, 8), (400_000, 8)]),       # scikit-learn's row_norms
    ("ij,ji->i", [(100_000, 5), (5, 100_000)]),
    ("bij,bij->b", [(50, 40, 1000), (50, 40, 1000)]),
    ("bij,bij->jb", [(50, 40, 1000), (50, 40, 1000)]),
    ("bij,bji->ib", [(40, 30, 100), (40, 100, 30)]),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_einsum_with_nothing_free_is_one_fused_map_reduce(spec, shapes, dtype):
    """einsum("ij,ij->i") was one GEMM per row (400,000 calls of 8 elements:
    7x slower than after, 5x slower than NumPy); with batch letters and
    nothing free it is a multiply and a sum, one fused kernel."""
    rng = np.random.default_rng(7)
    ops = [np.copy(rng.standard_normal(s).astype(dtype)) for s in shapes]
    want = np.einsum(spec, *[np.asarray(o).view(np.ndarray) for o in ops])
    s0 = grumpy.stats()
    got = np.einsum(spec, *ops)
    got = np.asarray(got).view(np.ndarray)
    s1 = grumpy.stats()
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert np.max(np.abs(got - want)) <= tol * np.max(np.abs(want))
    assert s1["gemm_calls"] + s1["gemv_calls"] == s0["gemm_calls"] + s0["gemv_calls"]
    assert 1 <= s1["kernels_launched"] - s0["kernels_launched"] <= 2


@pytest.mark.cpu_backend
@pytest.mark.parametrize("case", ["stack", "strided-rows", "transposed-stack"])
def test_a_shared_matrix_times_a_stack_is_one_gemm(case):
    """x @ W with x a stack (..., M, K) and W one (K, N) matrix: NumPy and
    grumpy made one GEMM per batch index (13,750 one-row GEMMs, 3.4x slower
    than NumPy); when the stack's rows are evenly spaced it is one GEMM with
    the batch folded into M.  Rows that are not (a transposed stack) keep
    one GEMM per batch index."""
    rng = np.random.default_rng(3)
    if case == "stack":
        x = np.reshape(np.copy(rng.standard_normal((110, 125, 256))), (110, 125, 1, 256))
        nb = 1
    elif case == "strided-rows":
        x = np.copy(rng.standard_normal((7, 600, 64)))[:, ::2, :]
        nb = 1
    else:
        x = np.transpose(np.copy(rng.standard_normal((7, 600, 64))), (1, 0, 2))
        nb = 600
    w = np.copy(rng.standard_normal((x.shape[-1], 48)))
    want = np.asarray(x).view(np.ndarray) @ np.asarray(w).view(np.ndarray)
    g0 = grumpy.stats()["gemm_calls"]
    got = np.asarray(x @ w).view(np.ndarray)
    assert grumpy.stats()["gemm_calls"] - g0 == nb
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))


@pytest.mark.cpu_backend
@pytest.mark.parametrize("case", ["c-stacks", "batch-f-order", "broadcast-batch"])
def test_a_batched_product_has_numpys_layout(case):
    """np.matmul is a gufunc: NumPy orders its result's batch dims by the
    operands' batch strides.  grumpy's products are C-ordered, so a batch
    NumPy orders otherwise is NumPy's (the fuzzer, seed 925: strides (16, 8)
    where NumPy's are (8, 16)); C-ordered stacks stay captured."""
    rng = np.random.default_rng(9)
    if case == "c-stacks":
        a, b = np.copy(rng.standard_normal((6, 5, 40, 30))), np.copy(rng.standard_normal((6, 5, 30, 20)))
    elif case == "batch-f-order":  # batch dims of both operands transposed
        a = np.transpose(np.copy(rng.standard_normal((5, 6, 40, 30))), (1, 0, 2, 3))
        b = np.transpose(np.copy(rng.standard_normal((5, 6, 30, 20))), (1, 0, 2, 3))
    else:  # a stack broadcast against a transposed batch
        a = np.broadcast_to(np.copy(rng.standard_normal((6, 40, 30)))[None], (5, 6, 40, 30))
        b = np.swapaxes(np.transpose(np.copy(rng.standard_normal((6, 5, 20, 30))), (1, 0, 2, 3)), -1, -2)
    pa, pb = np.asarray(a).view(np.ndarray), np.asarray(b).view(np.ndarray)
    want = pa @ pb
    s0 = grumpy.stats()
    got = a @ b
    g = np.asarray(got).view(np.ndarray)  # computed
    s1 = grumpy.stats()
    assert g.strides == want.strides, (g.strides, want.strides)
    assert np.max(np.abs(g - want)) <= 1e-12 * np.max(np.abs(want))
    gemms = s1["gemm_calls"] - s0["gemm_calls"]
    assert (gemms > 0) == (want.flags.c_contiguous and case == "c-stacks"), gemms


def limiter_step(f, out):
    """tools/stencil_limiter.py's step: a 3-D stencil with np.where limiters
    over views of pending intermediates (issue "never slower", pattern 3)."""
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "stencil_limiter.py")
    spec = importlib.util.spec_from_file_location("stencil_limiter", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.step(f, out)


def test_views_of_views_never_fail_to_plan():
    """Each view of a pending array pushes its producer's subgraph into the
    reader: four views of lap, two of fx and fy made one subgraph of more
    than 48 operands; the plan failed and NumPy's evaluator ran every step
    (5.7x slower than NumPy).  A sibling that does not fit is now left out
    of the kernel, and a subgraph too large for one kernel is split."""
    rng = np.random.default_rng(5)
    f0 = rng.standard_normal((40, 40, 64))
    want = np.zeros_like(f0)
    limiter_step(f0, want)
    f, out = np.copy(f0), np.zeros_like(f0)
    s0 = grumpy.stats()
    limiter_step(f, out)
    got = np.asarray(out).view(np.ndarray)
    s1 = grumpy.stats()
    assert s1["plan_failures"] == s0["plan_failures"]
    assert s1["kernels_launched"] > s0["kernels_launched"]
    assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))


INPLACE_SRC = """
import numpy as np, grumpy
out = []
for n in (131_072, 2_097_152):                  # 1 MiB, 16 MiB of float64
    a = np.copy(np.linspace(0, 1, n)); b = np.copy(np.linspace(1, 2, n))
    e0 = grumpy.stats()["ops_eager_small"]
    a += b
    pending = grumpy.is_pending(a)
    a *= 0.5
    out.append((pending, grumpy.stats()["ops_eager_small"] - e0, float(a[-1]), float(a.sum())))
print(out)
"""


def test_small_in_place_writes_of_computed_operands_are_numpys():
    """`a += b; a *= 0.5` on computed 1 MiB arrays was 4.5x slower than
    NumPy (a lazy in-place write protects the populated pages and moves
    them around its kernel); below 8x GRUMPY_MIN_BYTES it is NumPy's loop at
    once, above it stays lazy and fused (0.62x NumPy's time at 16 MiB)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=root, GRUMPY_CACHE_DIR="off")
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_inplace_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(INPLACE_SRC)
    under = subprocess.run([sys.executable, "-m", "grumpy.run", path], env=env, capture_output=True, text=True,
                           timeout=300)
    plain = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=300)
    assert under.returncode == 0, under.stderr[-2000:]
    got, want = eval(under.stdout), eval(plain.stdout)
    (p1, e1, l1, s1), (p16, e16, l16, s16) = got
    assert not p1 and e1 == 2          # both statements NumPy's, at once
    assert p16 and e16 == 0            # lazy, fused
    assert [l1, l16] == [want[0][2], want[1][2]]
    assert s1 == pytest.approx(want[0][3], rel=1e-12) and s16 == pytest.approx(want[1][3], rel=1e-12)


def test_freed_buffers_of_shrinking_sizes_are_reused_as_mallocs_heap_would():
    """A loop that compacts shrinking arrays with a boolean mask (complex:
    nothing captured, every result NumPy's) asks for a new size at every
    allocation.  glibc reuses freed heap memory for them; grumpy's guarded
    allocator mapped fresh pages for each (an exact-size cache), and their
    page faults made the loop 2-3x slower than NumPy.  Now a larger freed
    mapping is reused (split, its tail kept for the next request, or kept
    whole with at most 1/8 slack)."""
    rng = np.random.default_rng(1)
    n = 40_000  # 640 KiB of complex128, above the tests' 64 KiB threshold
    c0 = rng.standard_normal(n) * 0.5 + 1j * rng.standard_normal(n) * 0.5
    want_z, want_c = np.zeros(n, complex), c0.view(np.ndarray).copy()
    with grumpy.disabled():
        for _ in range(20):
            want_z = want_z * want_z + want_c
            keep = np.abs(want_z) < 2.0
            want_z, want_c = want_z[keep], want_c[keep]
    s0 = grumpy.stats()
    z, c = np.zeros_like(c0), c0
    for _ in range(20):
        z = z * z + c
        mask = np.abs(z) < 2.0
        z, c = z[mask], c[mask]
    s1 = grumpy.stats()
    maps, reused = s1["maps"] - s0["maps"], s1["maps_reused"] - s0["maps_reused"]
    assert np.array_equal(np.asarray(z), want_z) and np.array_equal(np.asarray(c), want_c)
    assert len(want_z) < n * 0.7  # the sizes shrank
    assert reused >= 60 and maps <= 20, (maps, reused)




def test_a_loop_of_shrinking_arrays_maps_little_fresh_once_warm():
    """mandelbrot's loop (tools/programs/mandelbrot.py) run again in one
    process: the cache of freed mappings served a request only from a
    mapping up to twice its size and unmapped the excess, so the next
    pass's largest arrays found nothing to fit and mapped 4 fresh buffers
    per pass (each faulting in huge pages).  A larger mapping is split now,
    its tail kept: at most 1 fresh mapping per pass from the third on.
    (Joining freed neighbours, as malloc coalesces, made it 0, but a
    joined range may span several kernel mappings that no move may take,
    and restricting moves cost shallow_water half its speed.)"""
    rng = np.random.default_rng(1)
    n = 200_000  # 3.2 MB of complex128
    c0 = rng.standard_normal(n) * 0.5 + 1j * rng.standard_normal(n) * 0.5

    def passes():
        z, c = np.zeros_like(c0), c0
        for _ in range(30):
            z = z * z + c
            mask = z.real * z.real + z.imag * z.imag < 4.0
            z, c = z[mask], c[mask]
        return z

    with grumpy.disabled():
        want = passes()
    passes(), passes()
    s0 = grumpy.stats()
    got = [passes() for _ in range(2)]
    s1 = grumpy.stats()
    assert all(np.array_equal(np.asarray(g), want) for g in got)
    assert len(want) < 0.7 * n  # the sizes shrank
    assert s1["maps_reused"] - s0["maps_reused"] >= 300
    assert s1["maps"] - s0["maps"] <= 2, s1["maps"] - s0["maps"]

@pytest.mark.cpu_backend
@pytest.mark.parametrize("how", ["max", "min", "argmax", "max0"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_min_and_max_reductions_raise_no_spurious_flags(how, dtype):
    """The identity of a float min/max (+-inf) was computed at run time as
    +-1.0 / 0.0 inside the launch, which raised divide-by-zero: every
    min/max kernel's flags were then replayed with NumPy to find the
    warning that was not there (shallow-water steps at 0.22x NumPy's
    speed, tools/programs/shallow_water.py)."""
    h = np.copy(np.linspace(1.0, 2.0, 400 * 400)).astype(dtype).reshape(400, 400)
    f = {"max": lambda v: v.max(), "min": lambda v: v.min(), "argmax": lambda v: v.argmax(),
         "max0": lambda v: v.max(axis=0)}[how]
    s0 = grumpy.stats()
    got = f(h * dtype(2.0))
    s1 = grumpy.stats()
    assert np.array_equal(np.asarray(got), f(np.asarray(h).view(np.ndarray) * dtype(2.0)))
    assert s1["kernels_launched"] == s0["kernels_launched"] + 1
    assert s1["fpe_replays"] == s0["fpe_replays"]


@pytest.mark.cpu_backend
def test_reservations_of_fused_away_results_are_reused_without_system_calls():
    """c = (a * 2.0 + b) * 3.0 records three pending results; the two
    inner ones are fused away, never written.  Each was a fresh mapping
    made inaccessible (mmap + mprotect), opened again when its array died
    (mprotect) and unmapped: 3 mappings and 5 mprotects per statement.  A
    freed reservation is now kept inaccessible and reused: no mapping and
    no mprotect for it in steady state (c's own reservation stays fresh:
    its range took c's pages): 120 mappings and 200 mprotects before, 40 and 40 now."""
    n = 1 << 18  # 2 MiB operands
    a, b = np.copy(np.linspace(0, 1, n)), np.copy(np.linspace(1, 2, n))
    want = float((np.asarray(a).view(np.ndarray)[-1] * 2.0 + 1 * np.asarray(b).view(np.ndarray)[-1]) * 3.0)
    for _ in range(5):
        c = (a * 2.0 + b) * 3.0
        c[0]
    s0 = grumpy.stats()
    for _ in range(40):
        c = (a * 2.0 + b) * 3.0
        last = float(c[-1])
    s1 = grumpy.stats()
    assert last == want
    assert s1["kernels_launched"] - s0["kernels_launched"] == 40
    # c's own reservation is fresh each time (its range got c's pages)
    assert s1["maps"] - s0["maps"] <= 44, s1["maps"] - s0["maps"]
    assert s1["protects"] - s0["protects"] <= 44, s1["protects"] - s0["protects"]


def test_zeros_reuse_freed_memory_cleared_as_callocs_heap_would():
    """np.zeros of a size in use reuses a freed mapping and clears it, as
    glibc's calloc clears a reused chunk; a fresh mapping each time
    faulted in every page (Game of Life's np.zeros per generation: 128k
    page faults against NumPy's 13k, tools/programs/life.py)."""
    n = 1 << 18  # 2 MiB of float64
    for _ in range(3):
        junk = np.full(n, 7.0)  # freed mappings full of nonzero bytes
        del junk
    s0 = grumpy.stats()
    for _ in range(20):
        z = np.zeros(n)
        assert not np.asarray(z).view(np.ndarray).any()
        z[::1000] = 3.0  # dirty it before it is freed
    s1 = grumpy.stats()
    assert s1["maps_reused"] - s0["maps_reused"] >= 18, s1["maps_reused"] - s0["maps_reused"]
    assert s1["maps"] - s0["maps"] <= 3, s1["maps"] - s0["maps"]


def test_numpys_temporary_elision_survives_the_plain_operator_slots():
    """NumPy writes a + b into a temporary operand's buffer (a * 2.0 + a
    allocates one array, not two) only when the C stack between the
    interpreter and its slot holds no other library's frame.  grumpy's
    operator slots for plain arrays (hooks/plain_ops.c) pass on to NumPy's
    as a tail call, so a plain statement of 480 KB arrays peaks at one
    result, as under NumPy; with a frame of grumpy's between, it peaked
    at two."""
    import tracemalloc

    a = np.ones(60_000).view(np.ndarray)  # plain: NumPy computes
    tracemalloc.start()
    try:
        peaks = []
        for _ in range(3):
            tracemalloc.reset_peak()
            r = a * 2.0 + a
            peaks.append(tracemalloc.get_traced_memory()[1])
            del r
    finally:
        tracemalloc.stop()
    assert min(peaks) < 1.5 * a.nbytes, peaks


def _rows():
    """A computed grumpy matrix and the same values as a plain one."""
    base = np.linspace(-1.0, 1.0, 200 * 2000).reshape(200, 2000)
    A = np.copy(base)
    grumpy._ext().materialize(A)
    P = np.asarray(A).view(np.ndarray).copy()
    assert type(A) is grumpy.ndarray and type(P) is np.ndarray
    return A, P


SMALL_NOW = {
    "sub": lambda v, w: v - w,
    "rsub": lambda v, w: 1.5 - v,
    "mul-scalar": lambda v, w: v * 2.0,
    "pow": lambda v, w: v ** 2,
    "rpow": lambda v, w: 2.0 ** v,
    "truediv": lambda v, w: v / (w + 3.0),
    "floordiv": lambda v, w: v // 0.3,
    "compare": lambda v, w: v > 0.5,
    "eq": lambda v, w: v == w,
    "sqrt": lambda v, w: np.sqrt(np.abs(v)),
    "maximum": lambda v, w: np.maximum(v, w),
    "ufunc-add": lambda v, w: np.add(v, w),
    "modf": lambda v, w: np.modf(v),
    "sum": lambda v, w: v.sum(),
    "mean": lambda v, w: v.mean(),
    "std-ddof": lambda v, w: v.std(ddof=1),
    "var": lambda v, w: v.var(),
    "max": lambda v, w: v.max(),
    "np-mean": lambda v, w: np.mean(v),
    "np-std": lambda v, w: np.std(v),
    "np-sum-axis": lambda v, w: np.sum(v, axis=0),
    "np-cumsum": lambda v, w: np.cumsum(v),
    "nanmean": lambda v, w: np.nanmean(v),
    "average-weights": lambda v, w: np.average(v, weights=w + 2.0),
}


@pytest.mark.parametrize("case", sorted(SMALL_NOW))
def test_small_operations_on_rows_of_a_computed_array_are_numpys_before_the_capture(case):
    """Issue "never slower" (zero tax below the threshold): an operator,
    ufunc call or reduction over small rows of a computed grumpy array is
    handed to NumPy from grumpy's operator slots and protocol methods
    (ops_eager_direct), without NumPy's override dispatch reaching the
    capture; its result is NumPy's own, bit for bit, and of NumPy's
    class."""
    A, P = _rows()
    f = SMALL_NOW[case]
    want = f(P[3], P[4])
    d0, c0 = grumpy.stats()["ops_eager_direct"], grumpy.stats()["ops_captured"]
    got = f(A[3], A[4])
    s = grumpy.stats()
    assert s["ops_eager_direct"] > d0
    assert s["ops_captured"] == c0
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert type(g) is type(w)
        np.testing.assert_array_equal(g, w)
        assert getattr(g, "dtype", None) == getattr(w, "dtype", None)


def test_operations_the_capture_must_see_are_not_decided_before_it():
    """A pending operand, a large broadcast result and an out= array keep
    the capture's path: the first is computed with its warnings, the second
    recorded, the third returned as given."""
    A, P = _rows()
    v, w = A[3], A[4]
    d0 = grumpy.stats()["ops_eager_direct"]
    Q = A * 2.0  # pending
    assert grumpy._ext().is_pending(Q)
    np.testing.assert_array_equal(Q[3] - w, P[3] * 2.0 - P[4])
    c0 = grumpy.stats()["ops_captured"]
    big = v[:, None] - w[None, :]  # 32 MB
    assert grumpy.stats()["ops_captured"] > c0
    np.testing.assert_array_equal(np.asarray(big), P[3][:, None] - P[4][None, :])
    o = np.copy(np.zeros(2000))
    assert np.add(v, w, out=o) is o and np.add(v, w, o) is o
    np.testing.assert_array_equal(o, P[3] + P[4])
    assert grumpy.stats()["ops_eager_direct"] == d0
    # a reduction's out= is NumPy's to write (the fallback prepares it)
    z = np.copy(np.zeros(()))
    assert v.sum(out=z) is z and z == P[3].sum()


def test_small_operations_before_the_capture_raise_and_warn_as_numpys():
    A, P = _rows()
    v = A[3]
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        r = v / 0.0
    np.testing.assert_array_equal(r, P[3] / 0.0)
    I = np.copy(np.arange(200 * 2000, dtype=np.int32).reshape(200, 2000))
    grumpy._ext().materialize(I)
    with pytest.raises(OverflowError):
        I[3] + 2 ** 40
    with pytest.raises(ValueError):
        v + A[5][:7]


def test_a_plain_view_of_pending_memory_is_not_taken_for_computed():
    """A plain ndarray viewing a grumpy array's memory (x.view(np.ndarray))
    next to a grumpy operand: the memory is pending (a lazy A /= 0.0), so
    the operator takes the capture's path, which computes it with its
    warnings (read inside a page fault, NumPy's loop would lose them)."""
    A, P0 = _rows()
    B = np.copy(np.linspace(1.0, 2.0, 200 * 2000).reshape(200, 2000))
    P = A.view(np.ndarray)
    # one block from the write on (entering one computes what is pending)
    with pytest.warns(RuntimeWarning) as rec:
        A /= 0.0
        assert grumpy._ext().is_pending(A)
        r = P[0] + B[3]
    assert [str(w.message) for w in rec] == ["divide by zero encountered in divide"]
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(r, P0[0] / 0.0 + np.asarray(B)[3])


@pytest.mark.cpu_backend
def test_an_in_place_kernel_staged_apart_reads_the_old_pages_without_a_copy():
    """`a += b; a *= 0.5` under NumPy's default error state: the fused
    kernel's overflow would need a's old values to tell which ufunc
    warned, so a's old contents are kept until the commit (plan.c
    stages_apart).  They were copied into the stage through
    /proc/self/mem (about 1 GB/s): the statement cost 1.7-3.5x NumPy's
    time from 8 MiB.  Now a's pages are moved out and kept, the kernel
    reads them and writes fresh pages: no copy when it writes all of a,
    a memcpy when it writes part (a slice); NumPy's values, bit for bit,
    and an overflow still NumPy's warning, computed by NumPy."""
    n = 131072  # 1 MiB, above the tests' 64 KiB threshold
    a, b = np.copy(np.linspace(0.0, 1.0, n)), np.copy(np.linspace(1.0, 2.0, n))
    want = np.linspace(0.0, 1.0, n)
    bb = np.linspace(1.0, 2.0, n)
    s0 = grumpy.stats()
    for _ in range(6):
        a += b
        a *= 0.5
        float(a[-1])
        want = (want + bb) * 0.5
    s1 = grumpy.stats()
    assert np.array_equal(np.asarray(a), want)
    assert s1["kernels_launched"] - s0["kernels_launched"] == 6
    assert s1["stage_copy_bytes"] == s0["stage_copy_bytes"]
    # a slice written in place: the rest of c must stay, so the stage starts as a copy
    c = np.copy(np.linspace(0.0, 1.0, n))
    wc = np.linspace(0.0, 1.0, n)
    s0 = grumpy.stats()
    v = c[1:-1]
    v += b[2:]
    v *= 0.5
    float(c[-1])
    s1 = grumpy.stats()
    wc[1:-1] = (wc[1:-1] + bb[2:]) * 0.5
    assert np.array_equal(np.asarray(c), wc)
    assert s1["kernels_launched"] - s0["kernels_launched"] == 1
    assert s1["stage_copy_bytes"] - s0["stage_copy_bytes"] == c.nbytes
    # an overflow: the kernel's outputs are given up, a keeps its old values for NumPy
    x = np.copy(np.full(n, 1e300))
    s0 = grumpy.stats()
    with pytest.warns(RuntimeWarning, match="overflow encountered in multiply"):
        x += 1.0
        x *= 1e10
        float(x[-1])
    s1 = grumpy.stats()
    assert s1["fpe_to_numpy"] - s0["fpe_to_numpy"] == 1
    assert np.isinf(np.asarray(x)).all()


def test_small_plain_allocations_are_numpys_own_cached_blocks():
    """Allocations grumpy does not guard are made by NumPy's own handler
    (allocator.c plain_malloc), with NumPy's small-block cache: a freed
    block under 1 KiB is kept for the next request of exactly its size,
    so `p + 1.0` of a small p costs no malloc for its scalar operand.
    With plain malloc (before), a freed 17-byte block went back to glibc
    and a 24-byte request took it (same chunk class); in NumPy's cache a
    24-byte request cannot, and the next 17-byte one gets it back."""
    a = np.empty(17, np.uint8)
    assert type(a) is np.ndarray  # small: never grumpy's
    addr = a.ctypes.data
    del a
    b = np.empty(24, np.uint8)
    c = np.empty(17, np.uint8)
    assert b.ctypes.data != addr
    assert c.ctypes.data == addr


HISTOGRAM_SRC = """
import resource, numpy as np
x = np.copy(np.random.default_rng(0).standard_normal(2_000_000))
np.histogram(x, 100)
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
counts = [np.histogram(x, 100)[0] for _ in range(10)]
f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(f1 - f0, int(counts[-1].sum()), counts[-1][:5].tolist())
"""


def test_numpys_mid_size_temporaries_reuse_the_heap_as_without_grumpy(tmp_path):
    """np.histogram's loop over blocks of 65536 elements makes 512 KiB
    temporaries, below the threshold: glibc's malloc serves them.  Without
    grumpy NumPy's freed large buffers had raised glibc's mmap and trim
    thresholds (its dynamic threshold), so the heap keeps its top; under
    grumpy large buffers never reach free(), the heap was trimmed and grown
    for every block (5692 brk calls against 42, 84 ms a call against 41).
    allocator.c raises the thresholds as glibc would: the page faults of
    the loop are within a small margin of NumPy's (hundreds of thousands
    before)."""
    import subprocess
    import sys
    path = tmp_path / "hist.py"
    path.write_text(HISTOGRAM_SRC)
    env = gpcheck.subprocess_env(GRUMPY_CACHE_DIR="off")
    under = subprocess.run([sys.executable, "-m", "grumpy.run", str(path)], env=env, capture_output=True, text=True,
                           timeout=300)
    plain = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert under.returncode == 0, under.stderr[-2000:]
    (gf, *got), (pf, *want) = under.stdout.split(maxsplit=1), plain.stdout.split(maxsplit=1)
    assert got == want
    assert int(gf) <= 2 * int(pf) + 3000, (gf, pf)


def test_mid_size_plain_buffers_start_on_a_cache_line():
    """Plain buffers from 4 KiB to the capture threshold (64 KiB in the
    tests, 1 MiB by default; NumPy's own handler from 4 MiB) start on a
    64-byte boundary (allocator.c cache_line_aligned): NumPy's
    malloc'ed arrays of one 2^k-byte size sat 16-32 bytes apart modulo
    4096, where NumPy's loops run at half speed (tools/aliasing.py).
    np.zeros' aligned blocks are cleared, also when they reuse a dirty
    freed one; ndarray.resize reallocates one (glibc's realloc of an
    aligned block) with its contents."""
    for nbytes in (4096, 9000, 16 << 10, 40960, 65535):
        made = [np.empty(nbytes, np.uint8), np.ones(nbytes // 8), np.copy(np.arange(nbytes // 8.0))]
        made.append(made[1] * made[2])
        for x in made:
            assert type(x) is np.ndarray  # below the threshold: not grumpy's
            assert x.ctypes.data % 64 == 0, (nbytes, x.ctypes.data % 64)
        junk = np.full(nbytes // 8, 7.0)
        del junk
        z = np.zeros(nbytes // 8)
        assert z.ctypes.data % 64 == 0 and not z.any()
    r = np.arange(3000.0)
    r.resize(6000, refcheck=False)
    assert r[:3000].tolist() == list(range(3000)) and not r[3000:].any()


def test_freed_aligned_blocks_are_reused_only_when_they_fit():
    """A freed aligned block is kept (stats()["plain_bytes_cached"]) and
    given to the next request it holds (its malloc_usable_size), wasting at
    most a quarter; a larger request gets a block of its own, which it can
    fill."""
    import ctypes
    usable_size = ctypes.CDLL(None).malloc_usable_size
    usable_size.argtypes, usable_size.restype = [ctypes.c_void_p], ctypes.c_size_t
    a = np.empty(40000, np.uint8)
    addr, usable = a.ctypes.data, usable_size(a.ctypes.data)
    assert usable >= 40000
    del a
    assert grumpy.stats()["plain_bytes_cached"] >= usable
    big = np.empty(usable + 64, np.uint8)  # more than the kept block holds
    assert big.ctypes.data != addr
    big[:] = 1
    small = np.empty(usable // 2, np.uint8)  # would waste half of it
    assert small.ctypes.data != addr
    again = np.empty(usable - 100, np.uint8)
    assert again.ctypes.data == addr
    assert int(big.sum()) == usable + 64


CACHE_CAP_SRC = """
import numpy as np, grumpy
blocks = [np.empty((3 << 20) + i * 4096, np.uint8) for i in range(20)]
aligned = all(b.ctypes.data % 64 == 0 for b in blocks)
del blocks
mid = [np.empty(5000 + 64 * i, np.uint8) for i in range(20)]
del mid
print(aligned, grumpy.stats()["plain_bytes_cached"])
"""


def test_the_kept_blocks_stay_under_eight_blocks_and_eight_mib(tmp_path):
    """At most 8 freed blocks and 8 MiB are kept: twenty freed 3 MiB blocks
    (plain below GRUMPY_MIN_BYTES=8M) leave two at most, twenty small
    ones eight."""
    import subprocess
    import sys
    path = tmp_path / "cap.py"
    path.write_text(CACHE_CAP_SRC)
    env = gpcheck.subprocess_env(GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES=str(8 << 20))
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(path)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    aligned, cached = r.stdout.split()
    assert aligned == "True"
    assert 8 * 5000 <= int(cached) <= 8 * (5000 + 64 * 20 + 4096), cached


def test_aligned_blocks_allocated_and_freed_on_many_threads_keep_their_values():
    """NumPy allocates and frees some buffers without the GIL (a sort's
    scratch copy of a strided array); the kept blocks are taken under a
    try-lock, not the GIL: threads sorting strided arrays while the main
    thread allocates get NumPy's answers."""
    import threading
    rng = np.random.default_rng(5)
    data = [rng.standard_normal(2 * n) for n in (700, 1500, 3000, 6000)]
    want = [np.sort(d[::2]) for d in data]
    errors = []

    def work(k):
        for i in range(300):
            j = (i + k) % len(data)
            got = np.sort(data[j][::2])
            if not np.array_equal(got, want[j]):
                errors.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for i in range(3000):
        x = np.full(600 + i % 900, float(i))
        assert x[-1] == float(i)
    for t in threads:
        t.join()
    assert not errors
