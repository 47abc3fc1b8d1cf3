"""Matrix products through OpenBLAS: results against NumPy (float64 within
1e-12 relative Frobenius, float32 within 1e-5), transposes folded into the
BLAS call (no copy), element-wise work around the product fused."""

import warnings

import numpy as np
import pytest

# every test counts OpenBLAS calls: the CPU back end's way of making products
pytestmark = pytest.mark.cpu_backend

import grumpy
from gpcheck import plain


def rel(got, want):
    got, want = plain(np.asarray(got)), plain(want)
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)


def rnd(shape, dtype, seed):
    return grumpy._ext().as_grumpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype).view(np.ndarray).copy())


TOL = {np.float64: 1e-12, np.float32: 1e-5}
SHAPES = [((300, 200), (200, 150)), ((300, 200), (200,)), ((200,), (200, 150)), ((20000,), (20000,)),
          ((5, 60, 70), (70, 80)), ((5, 60, 70), (1, 70, 80)), ((60, 70), (3, 70, 80)), ((4, 60, 70), (70,))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f8", "f4"])
@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_matmul_matches_numpy(dtype, sa, sb):
    a, b = rnd(sa, dtype, 1), rnd(sb, dtype, 2)
    before = grumpy.stats()
    c = a @ b
    want = plain(a) @ plain(b)
    assert np.asarray(c).dtype == want.dtype and np.shape(c) == want.shape
    if np.ndim(want) == 0:
        assert type(c) is type(want)
    assert rel(c, want) <= TOL[dtype]
    after = grumpy.stats()
    calls = sum(after[k] - before[k] for k in ("gemm_calls", "gemv_calls", "dot_calls"))
    assert calls >= 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f8", "f4"])
def test_transposes_and_strided_operands_fold_into_blas(dtype):
    a, b = rnd((400, 300), dtype, 3), rnd((500, 400), dtype, 4)
    cases = [(lambda: a.T @ b.T, plain(a).T @ plain(b).T), (lambda: b @ a, plain(b) @ plain(a)),
             (lambda: a.T.dot(b[:300].T), plain(a).T.dot(plain(b)[:300].T)),
             (lambda: b[::2] @ a, plain(b)[::2] @ plain(a))]
    for f, want in cases:
        before = grumpy.stats()
        got = f()
        assert rel(got, want) <= TOL[dtype]
        after = grumpy.stats()
        assert after["gemm_calls"] == before["gemm_calls"] + 1
        assert after["blas_operand_copies"] == before["blas_operand_copies"]
        assert after["kernels_launched"] == before["kernels_launched"]


def test_transpose_dot_vector_is_one_gemv_without_copy():
    """The paper's Listing 2 shape: np.transpose(W).dot(...)."""
    W = rnd((2000, 1000), np.float32, 5)
    v = rnd((2000,), np.float32, 6)
    grumpy.flush()
    before = grumpy.stats()
    x = np.transpose(W).dot(v)
    after = grumpy.stats()
    assert after["gemv_calls"] - before["gemv_calls"] == 1
    assert after["kernels_launched"] == before["kernels_launched"]  # no transpose kernel
    assert after["blas_operand_copies"] == before["blas_operand_copies"]
    assert after["fallbacks"] == before["fallbacks"]
    assert rel(x, plain(W).T.dot(plain(v))) <= 1e-5


def test_elementwise_around_the_product_is_fused():
    a = rnd((1024, 512), np.float64, 7)
    W = rnd((512, 256), np.float64, 8)
    bias = rnd((256,), np.float64, 9)
    grumpy.flush()
    before = grumpy.stats()
    h = np.maximum(a, 0) @ W              # one kernel writes the operand, one GEMM
    y = np.tanh(h + bias) * 2.0           # one kernel reads the product
    yy = plain(y)
    after = grumpy.stats()
    assert after["gemm_calls"] - before["gemm_calls"] == 1
    assert after["kernels_launched"] - before["kernels_launched"] == 2
    want = np.tanh(np.maximum(plain(a), 0) @ plain(W) + plain(bias)) * 2.0
    assert rel(yy, want) <= 1e-12


def test_other_dtypes_and_bad_shapes_fall_back_to_numpy():
    ai = np.arange(200_000, dtype=np.int64).reshape(400, 500)
    bi = np.ones((500, 3), dtype=np.int64)
    assert np.array_equal(plain(ai @ bi), plain(ai) @ plain(bi))
    a, b = rnd((300, 200), np.float64, 1), rnd((300, 200), np.float64, 2)
    with pytest.raises(ValueError) as got:
        a @ b
    with pytest.raises(ValueError) as want:
        plain(a) @ plain(b)
    assert str(got.value) == str(want.value)


def _run(code, env):
    import os
    import subprocess
    import sys
    import textwrap

    full = dict(os.environ)
    full.update(env)
    full.pop("GRUMPY", None)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "build", "_blas_t.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(code))
    return subprocess.run([sys.executable, "-m", "grumpy.run", path], capture_output=True, text=True,
                          env=full, cwd=root, timeout=300)


@pytest.mark.parametrize("threads", [1, 2])
def test_no_oversubscription_gemm_plus_elementwise(threads):
    """OpenBLAS's threads and grumpy's kernel threads share the cores: process
    CPU time over wall time stays within the thread count (+0.25)."""
    code = """
        import os, time
        import numpy as np, grumpy
        rng = np.random.default_rng(0)
        a = rng.standard_normal((768, 768))
        w = rng.standard_normal((768, 768)) / 30
        float(a.sum()); float(w.sum())
        t0 = time.perf_counter(); c0 = os.times()
        for i in range(30):
            h = np.tanh(a @ w) * 0.5 + np.sin(a) * 0.1
            a = h + 0.01
            float(a[0, 0])
        t1 = time.perf_counter(); c1 = os.times()
        s = grumpy.stats()
        print((c1.user + c1.system - c0.user - c0.system) / (t1 - t0), s["gemm_calls"], s["kernels_launched"])
    """
    r = _run(code, {"GRUMPY_THREADS": str(threads)})
    assert r.returncode == 0, r.stderr
    ratio, gemms, kernels = r.stdout.split()
    assert int(gemms) >= 30 and int(kernels) >= 30
    assert float(ratio) <= threads + 0.25, ratio


def test_blas_and_kernels_survive_fork():
    code = """
        import os
        import numpy as np
        rng = np.random.default_rng(0)
        a = rng.standard_normal((400, 300)); b = rng.standard_normal((300, 200))
        want = a.view(np.ndarray) @ b.view(np.ndarray)
        first = np.asarray(np.tanh(a @ b))
        pid = os.fork()
        if pid == 0:
            ok = np.allclose(np.asarray(np.tanh(a @ b)), np.tanh(want), rtol=1e-12, atol=1e-12)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), np.allclose(first, np.tanh(want), rtol=1e-12, atol=1e-12))
    """
    r = _run(code, {})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "True"]


@pytest.mark.parametrize("spec,sa,sb", [("ij,jk->ik", (300, 200), (200, 100)), ("ji,jk->ik", (200, 300), (200, 100)),
                                        ("ij,kj->ik", (300, 200), (100, 200)), ("ij,j->i", (300, 200), (200,)),
                                        ("i,ij->j", (300,), (300, 200)), ("i,i->", (50000,), (50000,))])
def test_einsum_products_are_blas(spec, sa, sb):
    a, b = rnd(sa, np.float64, 21), rnd(sb, np.float64, 22)
    before = grumpy.stats()
    got = np.einsum(spec, a, b)
    want = np.einsum(spec, plain(a), plain(b))
    assert rel(got, want) <= 1e-12
    after = grumpy.stats()
    assert sum(after[k] - before[k] for k in ("gemm_calls", "gemv_calls", "dot_calls")) == 1
    assert after["fallbacks"] == before["fallbacks"]


def test_tensordot_axes1_and_outer():
    a, b = rnd((300, 200), np.float64, 23), rnd((200, 150), np.float64, 24)
    before = grumpy.stats()
    t = np.tensordot(a, b, axes=1)
    assert rel(t, np.tensordot(plain(a), plain(b), axes=1)) <= 1e-12
    u, v = rnd((100000,), np.float64, 25), rnd((400,), np.float64, 26)
    o = np.outer(u, v)
    assert grumpy.is_pending(o)
    assert np.array_equal(plain(o), np.multiply.outer(plain(u), plain(v)))  # np.outer captures
    after = grumpy.stats()
    assert after["fallbacks"] == before["fallbacks"]
    assert after["gemm_calls"] - before["gemm_calls"] == 1
    # the default axes=2 contracts both axes of a view: one dot
    assert rel(np.tensordot(a[:150], b.T), np.tensordot(plain(a)[:150], plain(b).T)) <= 1e-12


def test_outer_of_plain_vectors_with_a_large_result_fuses():
    """PolyBench gemver's rank-2 update: vectors of 24 KB (below the
    threshold: plain arrays) whose outer products are 72 MB: np.outer
    captures them, and the update is one kernel; small outer products and
    complex ones stay NumPy's."""
    n = 1500
    rng = np.random.default_rng(40)
    u1, v1, u2, v2 = (rng.standard_normal(n).view(np.ndarray).copy() for _ in range(4))
    A0 = rnd((n, n), np.float64, 41)
    assert type(u1) is np.ndarray and not isinstance(u1, grumpy.ndarray)
    grumpy.flush()
    before = grumpy.stats()
    A = A0 + np.outer(u1, v1) + np.outer(u2, v2)
    assert grumpy.is_pending(A)
    got = plain(A)
    after = grumpy.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert after["fallbacks"] == before["fallbacks"]
    want = plain(A0) + np.multiply.outer(u1, v1) + np.multiply.outer(u2, v2)  # NumPy's, not captured
    assert np.array_equal(got, want)
    small = np.outer(u1[:10], v1[:10])
    assert type(small) is np.ndarray and np.array_equal(small, np.multiply.outer(u1[:10], v1[:10]))
    c = np.outer(u1.astype(np.complex128), v1)
    assert not grumpy.is_pending(c) and np.array_equal(c, np.multiply.outer(u1.astype(np.complex128), v1))
    out = np.empty((n, n))
    assert np.outer(u1, v1, out) is out and np.array_equal(out, np.multiply.outer(u1, v1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_product_of_small_plain_matrices_stays_numpys_on_the_cpu(dtype):
    """A training step's ``(dlogits @ W2.T) * (h > 0)`` with dlogits (4096 x
    10) and W2 (2048 x 10) below the threshold (plain arrays): on the CPU
    back end NumPy makes the product (the same BLAS call, without a
    capture's cost: recorded, such products took 1.3-2.2x NumPy's time,
    hooks/plain_ops.c product_expands), and the mask after it is still
    recorded; on a GPU it is a GEMM node (test_gpu_backend)."""
    rng = np.random.default_rng(44)
    d = rng.standard_normal((4096, 10)).astype(dtype).view(np.ndarray)
    W = rng.standard_normal((2048, 10)).astype(dtype).view(np.ndarray)
    h = rnd((4096, 2048), dtype, 45)
    assert type(d) is np.ndarray and type(W) is np.ndarray
    grumpy.flush()
    before = grumpy.stats()
    p = d @ W.T
    assert not grumpy.is_pending(p) and np.array_equal(p, np.matmul(d, W.T))
    r = p * (h > 0)
    assert grumpy.is_pending(r)
    got = plain(r)
    after = grumpy.stats()
    assert after["gemm_calls"] == before["gemm_calls"]
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert after["fallbacks"] == before["fallbacks"]
    assert np.array_equal(got, np.matmul(d, W.T) * (plain(h) > 0))


def test_a_product_of_a_pending_arrays_transpose_computes_it_once():
    """gemver's ``A = A + ...; x = A.T @ y; w = A @ x``: the transpose view
    covers all of A, so A is computed into its own buffer and read by BLAS
    with transposed strides -- not computed once as a transposed temporary
    and again for the array A."""
    n = 1200
    A0, y = rnd((n, n), np.float64, 42), rnd((n,), np.float64, 43)
    grumpy.flush()
    before = grumpy.stats()
    A = A0 * 2.0 + 1.0
    x = A.T @ y
    w = A @ x
    got_w, got_x, got_a = plain(w), plain(x), plain(A)
    after = grumpy.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert after["blas_operand_copies"] == before["blas_operand_copies"]
    assert after["gemv_calls"] - before["gemv_calls"] == 2
    a = plain(A0) * 2.0 + 1.0
    assert np.array_equal(got_a, a)
    assert rel(got_x, a.T @ plain(y)) <= 1e-12 and rel(got_w, a @ (a.T @ plain(y))) <= 1e-12


CONTRACTIONS = [
    ("tensordot", (60, 50, 40), (50, 40, 30), 2), ("tensordot", (60, 50, 40), (40, 30), 1),
    ("tensordot", (40, 50, 60), (60, 50, 30), ([1, 2], [1, 0])), ("tensordot", (30, 40, 50), (30, 40, 50), 3),
    ("tensordot", (300,), (300, 200), ([0], [0])), ("tensordot", (40, 50, 60), (60, 50, 30), ([-1, 1], [0, -2])),
    ("einsum", "bij,bjk->bik", (8, 60, 70), (8, 70, 50)), ("einsum", "bij,bkj->bik", (8, 60, 70), (8, 50, 70)),
    ("einsum", "bji,bjk->bki", (8, 70, 60), (8, 70, 50)), ("einsum", "ij,jk->ki", (300, 200), (200, 100)),
    ("einsum", "bij,bj->bi", (8, 300, 200), (8, 200)), ("einsum", "ijk,jkl->il", (30, 40, 50), (40, 50, 20)),
    ("einsum", "abc,cbd->ad", (20, 30, 40), (40, 30, 10)), ("einsum", "bhqd,bhkd->bhqk", (2, 4, 64, 32), (2, 4, 64, 32)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("func,arg,sa,sb", [(c[0], c[-1], c[1], c[2]) if c[0] == "tensordot" else (c[0], c[1], c[2], c[3])
                                            for c in CONTRACTIONS])
def test_contractions_are_one_product(func, arg, sa, sb, dtype):
    """Multi-axis tensordot and batched / multi-index einsum contractions are
    one (batched) BLAS product of transposed, reshaped views: NumPy's values
    within the GEMM tolerance, no fallback, no operand copy."""
    a, b = rnd(sa, dtype, 31), rnd(sb, dtype, 32)
    before = grumpy.stats()
    if func == "tensordot":
        got, want = np.tensordot(a, b, arg), np.tensordot(plain(a), plain(b), arg)
    else:
        got, want = np.einsum(arg, a, b), np.einsum(arg, plain(a), plain(b))
    assert got.shape == want.shape and got.dtype == want.dtype
    assert rel(got, want) <= (1e-12 if dtype == np.float64 else 1e-5)
    after = grumpy.stats()
    assert sum(after[k] - before[k] for k in ("gemm_calls", "gemv_calls", "dot_calls")) >= 1
    assert after["fallbacks"] == before["fallbacks"]
    assert after["blas_operand_copies"] == before["blas_operand_copies"]


def test_contractions_numpy_errors():
    """Shapes NumPy rejects raise NumPy's own errors."""
    a, b = rnd((30, 40), np.float64, 33), rnd((50, 60), np.float64, 34)
    with pytest.raises(ValueError):
        np.tensordot(a, b, 1)
    with pytest.raises(ValueError):
        np.einsum("ij,jk->ik", a, b)


def test_small_product_of_large_operands_is_computed_at_once():
    """A product smaller than GRUMPY_MIN_BYTES whose operands are large (the
    RNN's h @ Wh) is one BLAS call made at once, not a pending node: the
    elementwise work that reads it stays with NumPy instead of paying a
    kernel launch per statement."""
    h, W = rnd((64, 128), np.float32, 41), rnd((128, 128), np.float32, 42)  # 32 KiB result, 96 KiB operands
    b = rnd((128,), np.float32, 43)
    before = grumpy.stats()
    y = h @ W
    assert not grumpy.is_pending(y)  # small results stay plain ndarrays
    z = np.tanh(y + b)
    assert not grumpy.is_pending(z)
    after = grumpy.stats()
    assert after["gemm_calls"] - before["gemm_calls"] == 1
    assert after["kernels_launched"] == before["kernels_launched"]
    assert after["fallbacks"] == before["fallbacks"]
    assert rel(y, plain(h) @ plain(W)) <= 1e-5
    assert np.array_equal(plain(z), np.tanh(plain(y) + plain(b)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", ["ata", "aat"])
def test_a_matrix_times_its_transpose_is_numpys_symmetric_syrk(dtype, form):
    """NumPy's matmul computes X.T @ X (one buffer, swapped strides) with
    syrk and mirrors the upper triangle: its result is exactly symmetric.
    grumpy's gemm gave a general product, not symmetric and up to 24 ULP
    off near zero in float32 (tools/programs/covariance.py)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((20000, 48)) * 10 + 3).astype(dtype)
    if form == "aat":
        x = np.ascontiguousarray(x.reshape(480, 2000))
    gx = np.copy(x)  # grumpy's memory: both operands are views of one buffer
    assert isinstance(gx, grumpy.ndarray)
    if form == "ata":
        gx = gx - 0.5  # pending: X.T and X would be two expressions
        x = x - dtype(0.5)
    got = plain(gx.T @ gx if form == "ata" else gx @ gx.T)
    # NumPy's product after grumpy's: one BLAS thread count for both (the
    # count is process-wide, and OpenBLAS's rounding depends on it)
    want = x.T @ x if form == "ata" else x @ x.T
    assert np.array_equal(got, got.T)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("rows", [(2, 3), (3, 1), (1, 4)])
def test_a_stack_of_broadcast_rows_times_a_matrix_is_numpys(rows):
    """A stack whose rows are a broadcast (stride 0) is not evenly spaced:
    np.broadcast_to(x[:, None, :], (2, 3, K)) @ W of a pending x once
    folded its 6 rows into one GEMM at x's row stride and returned zeros
    for half of them."""
    K = 80000  # x pending whatever GRUMPY_MIN_BYTES is
    x0, W0 = rnd((rows[0], K), np.float64, 3), rnd((K, 16), np.float64, 4)
    x = x0 + 1.0
    assert grumpy.is_pending(x)
    a = np.broadcast_to(x[:, None, :], (rows[0], rows[1], K))
    got = a @ W0
    want = np.broadcast_to((plain(x0) + 1.0)[:, None, :], (rows[0], rows[1], K)) @ plain(W0)
    assert np.shape(got) == want.shape
    assert rel(got, want) <= TOL[np.float64]


FORMS = {"@": lambda x, y: x @ y, "np.dot": np.dot, "np.vdot": np.vdot, "np.inner": np.inner,
         "x.dot": lambda x, y: x.dot(y), "np.matmul": np.matmul}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f8", "f4"])
@pytest.mark.parametrize("form", list(FORMS))
def test_a_vector_dot_of_a_pending_vector_is_one_fused_map_reduce(dtype, form):
    """Modified Gram-Schmidt's step, r = q1 @ v with v = v0 - r0 * q0
    pending: the product and its sum are one map-reduce kernel reading v's
    own inputs (strided columns), no BLAS dot after a kernel writing v.
    The value is NumPy's np.sum(q1 * v) (pairwise), within the contraction
    bound of NumPy's BLAS dot; the result a NumPy scalar of the dtype."""
    Q = rnd((200_000, 4), dtype, 3)
    q0, q1 = Q[:, 0], Q[:, 1]
    v = q1 * dtype(1.5) - dtype(0.25) * q0      # pending, reads two strided columns
    before = grumpy.stats()
    r = FORMS[form](q1, v)
    after = grumpy.stats()
    pq, pv = plain(Q)[:, 1], plain(Q)[:, 1] * dtype(1.5) - dtype(0.25) * plain(Q)[:, 0]
    want = FORMS[form](pq, pv)
    assert type(r) is type(want) and type(r) is dtype
    assert r == np.sum(pq * pv)                 # the pairwise sum of NumPy's rounded products
    bound = 4 * np.finfo(dtype).eps * np.log2(pq.size) * float(np.sum(np.abs(pq * pv), dtype=np.float64))
    assert abs(float(r) - float(want)) <= bound
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert after["dot_calls"] - before["dot_calls"] == 0
    assert float(np.asarray(v)[7]) == float(pv[7])   # v, held, is the kernel's extra output


def test_a_vector_dot_of_computed_vectors_is_blas():
    """Both vectors computed: NumPy's own OpenBLAS dot, bit for bit."""
    a, b = rnd(300_000, np.float64, 4), rnd(300_000, np.float64, 5)
    before = grumpy.stats()
    r = a @ b
    after = grumpy.stats()
    assert r == plain(a) @ plain(b)
    assert after["dot_calls"] - before["dot_calls"] == 1 and after["kernels_launched"] == before["kernels_launched"]


PRODUCT_WARNINGS = {
    "M @ M": lambda M, v: M * 1 @ M,
    "np.matmul(M, M)": lambda M, v: np.matmul(M * 1, M),
    "computed M @ M": lambda M, v: M @ M,
    "M.dot(M)": lambda M, v: (M * 1).dot(M),
    "np.dot(M, M)": lambda M, v: np.dot(M * 1, M),
    "np.dot(M, v)": lambda M, v: np.dot(M * 1, v[:200]),
    "np.inner(M, M)": lambda M, v: np.inner(M * 1, M),
    "np.tensordot(M, M, 1)": lambda M, v: np.tensordot(M * 1, M, 1),
    "einsum ij,jk->ik": lambda M, v: np.einsum("ij,jk->ik", M * 1, M),
    "einsum ij,ij->i": lambda M, v: np.einsum("ij,ij->i", M * 1, M),
    "v @ v": lambda M, v: (v * 1) @ v,
    "np.dot(v, v)": lambda M, v: np.dot(v * 1, v),
    "np.vdot(v, v)": lambda M, v: np.vdot(v * 1, v),
    "v.dot(v) inf * 0": lambda M, v: (v * np.inf).dot(v * 0),
    "NaN operand": lambda M, v: (M * np.nan) @ M,
    "a small pending row @ v": lambda M, v: (M * 1)[0] @ v[:200],
    "np.dot(a small pending row, v)": lambda M, v: np.dot((M * 1)[0], v[:200]),
    "tiny M @ M": lambda M, v: (M * 1e-300 * 1e-100) @ (M * 1e-300 * 1e-100),  # 1e-200 squared underflows
    "tiny v @ v": lambda M, v: (v * 1e-300 * 1e-100) @ (v * 1e-300 * 1e-100),
}


def _product_outcome(fn, M, v, state):
    with np.errstate(**state):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = plain(np.asarray(fn(M, v)))
            except FloatingPointError as e:
                return ("raised", str(e)), []
    return ("value", np.isfinite(r).all(), np.isnan(r).any()), [str(m.message) for m in w]


@pytest.mark.parametrize("state", [{}, {"all": "raise"}, {"all": "ignore"}, {"under": "warn"}],
                         ids=["default", "raise", "ignore", "underflow-warn"])
@pytest.mark.parametrize("case", list(PRODUCT_WARNINGS))
def test_products_give_numpys_warnings(case, state):
    """A product that overflows (or meets inf * 0) warns, raises or stays
    silent as NumPy's function does: "... encountered in matmul" for @ and
    np.matmul, "... in dot" for dot, inner and tensordot, nothing for
    np.vdot and np.einsum; a NaN operand raises no flag; underflow
    watched: NumPy's products.  BLAS through
    grumpy checks no IEEE flags: a result with an infinity or a NaN is
    computed again by NumPy for its warnings (plan.c product_fpe,
    capture_linalg.c matmul_now), a vector dot recorded with its flags
    ignored is NumPy's when not finite (vector_dot)."""
    fn = PRODUCT_WARNINGS[case]
    M0, v0 = np.full((200, 200), 1e200), np.full(200_000, 1e200)
    with grumpy.disabled():
        want = _product_outcome(fn, M0.copy(), v0.copy(), state)
    got = _product_outcome(fn, grumpy._ext().as_grumpy(M0.copy()), grumpy._ext().as_grumpy(v0.copy()), state)
    assert got == want
