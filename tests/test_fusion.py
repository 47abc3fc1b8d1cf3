"""How the work is done: fusion, kernels, fallbacks, errors, memory.

Each test compares with NumPy and asserts on grumpy's counters."""

import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, plain

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
sys.path.insert(0, os.path.join(ROOT, "tools"))  # unmodified NumPy programs
import blackscholes  # noqa: E402  (tools/blackscholes.py, unmodified NumPy)


def delta(before, after, key):
    return after[key] - before[key]


def big(n=1_000_000, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(1.0, 2.0, n).astype(dtype)


def test_blackscholes_pricing_is_one_kernel():
    S, X, T = (big(seed=s) for s in (1, 2, 3))
    S2, X2, T2 = plain(S).copy(), plain(X).copy(), plain(T).copy()
    grumpy.flush()
    before = grumpy.stats()
    call, put = blackscholes.price(S, X, T, 0.02, 0.3)
    assert grumpy.is_pending(call) and grumpy.is_pending(put)
    mid = grumpy.stats()
    assert delta(before, mid, "kernels_launched") == 0  # recording only
    assert delta(before, mid, "ops_captured") > 40
    c = plain(call)  # computes call -- and put, its sibling, in the same kernel
    after = grumpy.stats()
    assert delta(before, after, "kernels_launched") == 1
    assert not grumpy.is_pending(put)
    assert sum(after["fallbacks"].values()) == sum(before["fallbacks"].values())
    with np.errstate(all="ignore"):
        wc, wp = blackscholes.price(S2, X2, T2, 0.02, 0.3)
    np.testing.assert_allclose(c, wc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(plain(put), wp, rtol=1e-12, atol=1e-12)


def test_listing1_is_one_kernel_and_exact():
    x = np.arange(2_000_000, dtype=np.int32)
    y = np.array([20], np.int32)
    before = grumpy.stats()
    z = x * x + 2 * x * y + y * y
    assert grumpy.is_pending(z)
    zz = plain(z)
    after = grumpy.stats()
    assert delta(before, after, "kernels_launched") == 1
    assert delta(before, after, "nodes_fused") == 5  # y*y is 1 element: NumPy computes it at once
    xp = plain(x)
    assert_same(zz, xp * xp + 2 * xp * np.int32(20) + np.int32(400))


def test_alive_intermediate_is_an_extra_output():
    a = big(seed=4)
    grumpy.flush()  # a itself is a lazy astype
    t = a * 3.0  # kept alive by the name t
    u = t + 1.0
    before = grumpy.stats()
    uu = plain(u)
    after = grumpy.stats()
    assert delta(before, after, "kernels_launched") == 1
    assert delta(before, after, "extra_outputs") == 1
    assert not grumpy.is_pending(t)
    ap = plain(a)
    assert_same(uu, ap * 3.0 + 1.0)
    assert_same(t, ap * 3.0)


def test_reduction_fused_with_its_map_and_scalar_type():
    a = big(seed=5, dtype=np.float32)
    before = grumpy.stats()
    s = (a * a).sum()
    m = (a - 1.5).max()
    after = grumpy.stats()
    assert type(s) is np.float32 and type(m) is np.float32
    assert delta(before, after, "kernels_launched") == 2
    ap = plain(a)
    assert s == (ap * ap).sum()
    assert m == (ap - np.float32(1.5)).max()
    ai = np.arange(1_000_000, dtype=np.int32)
    si = ai.sum()
    assert type(si) is np.int64 and si == plain(ai).sum()


def test_a_narrowing_cast_of_a_pending_array_fuses_whatever_its_size():
    """Issue "never slower": `(r * scale + drift).astype(np.float32)` over
    a 64 KiB float64 r gives a 32 KiB result, below GRUMPY_MIN_BYTES; the
    input is pending, so the cast joins its producer's kernel (one kernel
    writing float32) rather than the float64 result being written out for
    NumPy to read back and cast."""
    r = big(8192, seed=7).reshape(64, 128)
    scale = np.linspace(0.5, 3.0, 128)
    before = grumpy.stats()
    plain(r * scale + 0.25)
    mid = grumpy.stats()
    b = (r * scale + 0.25).astype(np.float32)  # computed at once: too small to guard
    after = grumpy.stats()
    got = plain(b)
    assert b.dtype == np.float32 and b.nbytes < 65536
    assert delta(mid, after, "kernels_launched") == 1
    assert delta(mid, after, "nodes_fused") == delta(before, mid, "nodes_fused") + 1  # the cast
    assert_same(got, (plain(r) * plain(scale) + 0.25).astype(np.float32))
    c = big(8192, seed=8).astype(np.float32)  # not pending: NumPy's cast, as before
    assert not grumpy.is_pending(c)


def test_axis_reduction_stays_lazy():
    a = big(seed=6).reshape(1000, 1000)
    r = a.sum(axis=1)
    assert grumpy.is_pending(r) or r.nbytes < 65536
    m = a.mean(axis=0)
    assert_same(np.asarray(r), plain(a).sum(axis=1))
    assert_same(np.asarray(m), plain(a).mean(axis=0), 2)


def test_shape_mismatch_raises_numpys_error_at_the_statement():
    a = big(1_000_000)
    b = big(999_999)
    with pytest.raises(ValueError) as got:
        a + b
    with pytest.raises(ValueError) as want:
        plain(a) + plain(b)
    assert str(got.value) == str(want.value)


def test_python_int_that_does_not_fit_raises_overflow_error():
    a = np.zeros(1_000_000, dtype=np.uint8)
    with pytest.raises(OverflowError) as got:
        a + 300
    with pytest.raises(OverflowError) as want:
        plain(a) + 300
    assert str(got.value) == str(want.value)
    a8 = np.zeros(1_000_000, dtype=np.int8)
    with pytest.raises(OverflowError):
        a8 * -129


def test_unsupported_dtypes_fall_back():
    # complex arrays are never grumpy arrays: NumPy's work, at NumPy's cost
    c = np.ones(200_000, dtype=np.complex128)
    assert type(c) is np.ndarray
    before = grumpy.stats()
    r = c * 2 + 1j
    after = grumpy.stats()
    assert type(r) is np.ndarray
    assert after["kernels_launched"] == before["kernels_launched"]
    assert_same(r, plain(c) * 2 + 1j)
    # a complex operand meeting a grumpy array: one counted fallback
    x = np.ones(200_000)
    before = grumpy.stats()
    r2 = x * (c * 2)
    after = grumpy.stats()
    assert not grumpy.is_pending(r2)
    assert after["fallbacks"].get("multiply", 0) == before["fallbacks"].get("multiply", 0) + 1
    assert after["kernels_launched"] == before["kernels_launched"]
    assert_same(r2, plain(x) * (plain(c) * 2))
    f16 = np.ones(200_000, dtype=np.float16)
    r16 = np.sqrt(f16 * 4)
    assert r16.dtype == np.float16 and np.all(plain(r16) == 2)


def test_unhandled_function_materializes_and_wraps():
    a = big(seed=7)
    t = a * 2
    before = grumpy.stats()
    s = np.sort(t)
    after = grumpy.stats()
    assert isinstance(s, grumpy.ndarray)
    assert after["fallbacks"].get("sort", 0) == before["fallbacks"].get("sort", 0) + 1
    assert_same(s, np.sort(plain(a) * 2))


def run_script(code, env_extra=None, args=(), keep=False):
    """`python -m grumpy.run` of code in a file of its own under build/ (a
    name per call: pytest-xdist's workers run side by side); with keep the
    file stays, as result.script, for the caller to run again and remove."""
    env = dict(os.environ)
    env.update(env_extra or {})
    env.pop("GRUMPY", None)
    fd, path = tempfile.mkstemp(suffix=".py", prefix="_t", dir=os.path.join(ROOT, "build"))
    with os.fdopen(fd, "w") as f:
        f.write(textwrap.dedent(code))
    try:
        r = subprocess.run([PY, "-m", "grumpy.run", path, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=300)
    finally:
        if not keep:
            os.unlink(path)
    r.script = path
    return r


@pytest.mark.cpu_backend
@pytest.mark.parametrize("exponent,calls_pow", [(2.0, False), (3, False), (4.0, False), (-1.0, False),
                                                (2.5, True), (3.5, True)])
def test_a_constant_exponent_compiles_without_pow_or_a_test_of_it(exponent, calls_pow):
    """The plan passes a constant exponent's class to the code generator:
    x ** 3 is two products, x ** 2.0 one, and x ** 2.5 a pow with no
    compare of the exponent against NumPy's special values at each element
    (before, every element called pow and then selected among them)."""
    code = f"""
        import numpy as np
        x = np.copy(np.linspace(0.5, 2, 1 << 18))
        print(float(((x ** {exponent!r}) * 1.0)[7]))
    """
    r = run_script(code, {"GRUMPY_DUMP_IR": "1", "GRUMPY_CACHE_DIR": "off"})
    assert r.returncode == 0, r.stderr
    x = np.linspace(0.5, 2, 1 << 18)[7]
    assert float(r.stdout) == pytest.approx(x ** exponent, rel=1e-15)
    kernel = r.stderr[r.stderr.index("define "):]
    assert ("pow" in kernel) == calls_pow, kernel
    assert "fcmp oeq" not in kernel


@pytest.mark.cpu_backend
def test_forced_jit_failure_falls_back_with_the_right_answer():
    code = """
        import numpy as np, grumpy
        x = np.linspace(0, 1, 1_000_000)
        y = np.exp(-x * x) * 3 + x
        print(repr(float(y.sum())), repr(float(y[123456])))
        s = grumpy.stats()
        print(s["jit_failures"] > 0, s["kernels_compiled"], s["plan_failures"] > 0)
    """
    r = run_script(code, {"GRUMPY_DEBUG_JIT_FAIL": "1", "GRUMPY_CACHE_DIR": "off"})
    assert r.returncode == 0, r.stderr
    x = np.linspace(0, 1, 1_000_000).view(np.ndarray)
    y = np.exp(-x * x) * 3 + x
    lines = r.stdout.split("\n")
    assert lines[0] == f"{float(y.sum())!r} {float(y[123456])!r}"
    assert lines[1] == "True 0 True"


@pytest.mark.cpu_backend
def test_disk_cache_second_process_compiles_nothing(tmp_path):
    code = """
        import numpy as np, grumpy
        a = np.linspace(0, 1, 1_000_000)
        print(float((np.sqrt(a) * 2 + a).sum()))
        s = grumpy.stats()
        print(s["kernels_compiled"], s["disk_cache_hits"])
    """
    env = {"GRUMPY_CACHE_DIR": str(tmp_path / "cache")}
    first = run_script(code, env)
    second = run_script(code, env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert first.stdout.split("\n")[0] == second.stdout.split("\n")[0]
    assert first.stdout.split("\n")[1].split()[0] != "0"
    compiled, hits = map(int, second.stdout.split("\n")[1].split())
    assert compiled == 0 and hits >= 1
    assert oct(os.stat(tmp_path / "cache").st_mode & 0o777) == "0o700"


def test_hundred_iterations_leak_nothing():
    a = big(seed=8)
    b = big(seed=9)
    grumpy.flush()

    def step(a):
        c = np.sqrt(a * b + 1.0) - a / 3.0
        return c * 0.5 + 0.25, float(c.mean())

    x = a
    for _ in range(5):
        x, _ = step(x)
    del x
    grumpy.flush()
    base = grumpy.stats()
    x = a
    for _ in range(100):
        x, _ = step(x)
    del x
    grumpy.flush()
    end = grumpy.stats()
    assert end["live_nodes"] == base["live_nodes"]
    assert end["live_buffers"] == base["live_buffers"]
    assert end["pending"] == 0


@pytest.mark.skipif(os.environ.get("GRUMPY_CHECK", "0") not in ("", "0"),
                    reason="GRUMPY_CHECK keeps NumPy's value of every kernel beside grumpy's: twice the memory")
@pytest.mark.cpu_backend
def _mapping_of(addr):
    """The /proc/self/smaps entry (start, VmFlags words) holding addr."""
    start = flags = None
    for line in open("/proc/self/smaps"):
        head = line.split()
        if "-" in head[0] and ":" not in head[0]:
            lo, hi = (int(x, 16) for x in head[0].split("-"))
            start = lo if lo <= addr < hi else None
        elif start is not None and line.startswith("VmFlags:"):
            return start, head[1:]
    return None


@pytest.mark.skipif(os.environ.get("GRUMPY_HUGEPAGES") == "0", reason="huge pages turned off")
def test_buffers_from_2_mib_are_huge_page_aligned_and_madvised():
    """Issue "never slower": an mprotect of a populated buffer walks its
    4 KiB page table entries (~25 us per MiB here), so guarded buffers from
    2 MiB start on a huge page boundary and are madvised for transparent
    huge pages (VmFlags "hg"); smaller ones are not, unless they reuse a
    cached mapping cut to size (guard.c pool_take), which keeps its flags
    (harmless: no 2 MiB page fits in it)."""
    big_ = np.copy(np.linspace(0.0, 1.0, 300_000))  # 2.3 MiB
    before = grumpy.stats()
    small = np.copy(np.linspace(0.0, 1.0, 150_000))  # 1.1 MiB
    reused = delta(before, grumpy.stats(), "maps_reused")
    addr = big_.ctypes.data
    assert addr % (2 << 20) == 0
    assert "hg" in _mapping_of(addr)[1]
    assert reused or "hg" not in _mapping_of(small.ctypes.data)[1]
    assert_same(np.asarray(big_ * 2 + 1), plain(big_) * 2 + 1)


def test_peak_memory_of_blackscholes_at_most_numpys():
    code = """
        import resource, runpy, sys
        sys.argv = ["blackscholes.py", "10000000", "float64", "2"]
        runpy.run_path("tools/blackscholes.py", run_name="__main__")
        print("PEAK", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """
    g = run_script(code, keep=True)
    try:
        n = subprocess.run([PY, g.script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    finally:
        os.unlink(g.script)
    assert g.returncode == 0 and n.returncode == 0, g.stderr + n.stderr
    peak = lambda out: int(out.strip().split("PEAK")[-1])  # noqa: E731
    assert g.stdout.split("PEAK")[0] == n.stdout.split("PEAK")[0]
    assert peak(g.stdout) <= peak(n.stdout), (peak(g.stdout), peak(n.stdout))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_thread_count(threads):
    code = """
        import numpy as np, grumpy
        a = np.linspace(-3, 3, 4_000_000)
        print(repr(float(np.tanh(a).sum())), grumpy.stats()["threads"])
    """
    r = run_script(code, {"GRUMPY_THREADS": threads})
    a = np.linspace(-3, 3, 4_000_000).view(np.ndarray)
    value, nthreads = r.stdout.split()
    assert nthreads == threads
    assert abs(float(value) - float(np.tanh(a).sum())) <= 1e-9


def test_strict_mode_raises_instead_of_falling_back():
    code = """
        import numpy as np
        a = np.ones(1_000_000)
        print(float((a * 2).sum()))
        try:
            np.sort(a * 3)
        except NotImplementedError as e:
            print("refused:", e)
    """
    r = run_script(code, {"GRUMPY_STRICT": "1"})
    assert r.returncode == 0, r.stderr
    first, refused = r.stdout.split("\n")[:2]
    assert first == "2000000.0"
    # the call, the reason and the user's line (the script's 6th line)
    assert refused.startswith("refused: grumpy (GRUMPY_STRICT=1): sort is not captured "
                              "(a NumPy function grumpy does not capture) at "), refused
    assert refused.endswith(":6"), refused


def test_strict_mode_leaves_a_declined_operator_of_plain_arrays_to_numpy():
    """An operator of small plain arrays that broadcasts into a large result
    is offered to the capture (hooks/plain_ops.c); when the capture declines
    it (an int power with an array exponent, an errstate that raises),
    NumPy computes it, as it would without grumpy: no grumpy array was
    involved, so GRUMPY_STRICT neither refuses nor counts it."""
    code = """
        import numpy as np, grumpy
        a = np.arange(400)
        p = a[:, None] ** (a[None, :] % 3)
        x = np.linspace(0.0, 1.0, 400).view(np.ndarray)
        with np.errstate(all="raise"):
            d = x[:, None] - x[None, :]
        print(int(p.sum()), float(abs(d).sum()), grumpy.stats()["fallbacks"])
    """
    r = run_script(code, {"GRUMPY_STRICT": "1"})
    assert r.returncode == 0, r.stderr
    a = np.arange(400).view(np.ndarray)
    x = np.linspace(0.0, 1.0, 400).view(np.ndarray)
    with grumpy.disabled():
        want = f"{int((a[:, None] ** (a[None, :] % 3)).sum())} {float(abs(x[:, None] - x[None, :]).sum())} {{}}"
    assert r.stdout.strip() == want


def test_strict_warn_warns_once_per_line_and_numpy_computes():
    code = """
        import warnings
        import numpy as np
        a = np.ones(1_000_000)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(3):
                s = np.sort(a * 3)
        print(float(s[-1]), len(w))
        print(w[0].message)
    """
    r = run_script(code, {"GRUMPY_STRICT": "warn"})
    assert r.returncode == 0, r.stderr
    counts, message = r.stdout.split("\n")[:2]
    assert counts.split() == ["3.0", "1"]
    assert message.startswith("grumpy (GRUMPY_STRICT=warn): sort is not captured "
                              "(a NumPy function grumpy does not capture) at "), message
    assert message.endswith(":8"), message


def test_inplace_ops_on_pending_arrays_stay_lazy():
    a = big(seed=11)
    grumpy.flush()
    b = a * 2
    view = b[::2]  # a NumPy view of the pending buffer sees the in-place result
    b += 1
    b *= a
    assert grumpy.is_pending(b)
    before = grumpy.stats()
    bb = plain(b)
    after = grumpy.stats()
    assert delta(before, after, "kernels_launched") == 1
    assert after["fallbacks"] == before["fallbacks"]
    ap = plain(a)
    want = (ap * 2 + 1) * ap
    assert_same(bb, want)
    assert_same(np.asarray(view), want[::2])


def test_mean_over_an_axis_stays_lazy_and_exact():
    a = big(n=4_000_000, seed=12).reshape(100_000, 40)
    grumpy.flush()
    before = grumpy.stats()
    m = a.mean(axis=1)
    assert grumpy.is_pending(m)
    assert_same(np.asarray(m), plain(a).mean(axis=1))
    after = grumpy.stats()
    assert after["fallbacks"] == before["fallbacks"]


def test_inplace_ops_on_computed_arrays_are_lazy_writes():
    rng = np.random.default_rng(15)
    W = grumpy._ext().as_grumpy(rng.standard_normal((1000, 1000)))
    dW = grumpy._ext().as_grumpy(rng.standard_normal((1000, 1000)))
    Wp, dWp = plain(W).copy(), plain(dW).copy()
    old = W * 1.0  # pending: must see W's values before the writes
    before = grumpy.stats()
    W -= 0.1 * dW
    assert grumpy.is_pending(W)
    inner = W[1:-1, 1:-1]
    inner *= 2.0  # into a view of W's memory
    Wp -= 0.1 * dWp
    Wp[1:-1, 1:-1] *= 2.0
    assert_same(W, Wp)
    assert_same(old, plain(dW) * 0 + plain(old))  # computed before the first write
    after = grumpy.stats()
    assert after["fallbacks"] == before["fallbacks"]
    g = grumpy._ext().as_grumpy(rng.standard_normal((2000, 1000)))
    gp = plain(g).copy()
    g[1::2] += g[::2]  # partially overlapping operands: NumPy's own buffering
    gp[1::2] += gp[::2]
    assert_same(g, gp)


def test_inplace_with_forced_jit_failure():
    code = """
        import numpy as np
        rng = np.random.default_rng(0)
        W = rng.standard_normal((1000, 1000)); dW = rng.standard_normal((1000, 1000))
        Wp = W.view(np.ndarray).copy(); dWp = dW.view(np.ndarray).copy()
        float(W.sum())
        W -= 0.1 * dW
        W *= 2.0
        W[1:-1, 1:-1] += 1.0
        Wp -= 0.1 * dWp; Wp *= 2.0; Wp[1:-1, 1:-1] += 1.0
        print(np.array_equal(np.asarray(W).view(np.ndarray), Wp))
    """
    r = run_script(code, {"GRUMPY_DEBUG_JIT_FAIL": "1", "GRUMPY_CACHE_DIR": "off"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def _jacobi_and_heat(n, steps):
    import jacobi  # tools/jacobi.py, unmodified NumPy
    return jacobi.jacobi(n, steps), jacobi.heat(n, steps)


def test_jacobi_and_heat_steps_are_two_kernels_and_numpys_bits():
    n, steps = 600, 6
    grumpy.flush()
    before = grumpy.stats()
    g, u = _jacobi_and_heat(n, steps)
    gg, uu = plain(g).copy(), plain(u).copy()
    after = grumpy.stats()
    # set-up writes (a few kernels) + at most 2 kernels per step and method
    assert after["kernels_launched"] - before["kernels_launched"] <= 2 * 2 * steps + 6
    assert after["fallbacks"] == before["fallbacks"]

    # NumPy's answer: the same program on plain arrays
    def plain_run():
        grid = np.zeros((n, n)).view(np.ndarray)
        grid[0, :] = 1.0; grid[-1, :] = -1.0; grid[:, 0] = 0.5
        c, no, e, w, s = grid[1:-1, 1:-1], grid[0:-2, 1:-1], grid[1:-1, 2:], grid[1:-1, 0:-2], grid[2:, 1:-1]
        for _ in range(steps):
            c[:] = 0.2 * (c + no + e + w + s)
        x = np.zeros((n, n)).view(np.ndarray)
        x[n // 4: n // 2, n // 4: n // 2] = 1.0
        inner = x[1:-1, 1:-1]
        for _ in range(steps):
            inner += 0.1 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:] - 4.0 * inner)
        return grid, x
    wg, wu = plain_run()
    assert_same(gg, wg)
    assert_same(uu, wu)


def test_setitem_forms():
    rng = np.random.default_rng(16)
    a = grumpy._ext().as_grumpy(rng.standard_normal((1000, 1000)))
    ap = plain(a).copy()
    b = a * 2
    a[::2] = b[::2] + 1          # a pending value into a strided view
    ap[::2] = ap[::2] * 2 + 1
    a[:, 5:] = 3                 # a scalar, broadcast
    ap[:, 5:] = 3
    a[10:20] = np.arange(1000)   # broadcast row, int -> float cast
    ap[10:20] = np.arange(1000)
    ai = grumpy._ext().as_grumpy(np.zeros((1000, 1000), dtype=np.int32))
    ai[...] = a                  # float -> int32 as NumPy's setitem casts
    assert_same(a, ap)
    assert_same(ai, ap.astype(np.int32))
    a[1:] = a[:-1]               # overlapping: NumPy's own assignment
    ap[1:] = ap[:-1]
    assert_same(a, ap)


def test_outer_axis_reduction_is_one_accumulating_kernel():
    rng = np.random.default_rng(17)
    A = grumpy._ext().as_grumpy(rng.standard_normal((4096, 256)).astype(np.float32))
    B = grumpy._ext().as_grumpy(rng.standard_normal((4096, 256)).astype(np.float32))
    grumpy.flush()
    before = grumpy.stats()
    db = (B * (A > 0)).sum(axis=0)   # a bias gradient: map and reduction in one pass
    mx = A.max(axis=0, keepdims=True)
    assert_same(np.asarray(db), (plain(B) * (plain(A) > 0)).sum(axis=0))
    assert_same(np.asarray(mx), plain(A).max(axis=0, keepdims=True))
    after = grumpy.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 2


def test_large_grids_of_small_plain_arrays_are_grumpy_arrays_whose_users_fuse():
    """np.meshgrid, indices, tile, repeat, kron and fromfunction build large
    arrays from small plain ones, which no grumpy dispatch sees: their
    results are grumpy arrays (as np.zeros' are), so a stencil over them is
    captured.  Small results, sparse grids and broadcast views keep NumPy's
    class and flags."""
    x = np.linspace(-1.0, 1.0, 1000).view(np.ndarray)  # 8 KB: below GRUMPY_MIN_BYTES
    X, Y = np.meshgrid(x, x, indexing="ij")
    assert type(X) is grumpy.ndarray and type(Y) is grumpy.ndarray
    before = grumpy.stats()
    u = np.exp(-((X - 0.3) ** 2 + (Y + 0.2) ** 2) / 0.01)
    assert grumpy.is_pending(u)
    got = plain(u)
    assert delta(before, grumpy.stats(), "kernels_launched") == 1
    Xp, Yp = np.meshgrid.__wrapped__(x, x, indexing="ij")  # NumPy's own: plain arrays
    assert type(Xp) is np.ndarray
    assert_same(got, np.exp(-((Xp - 0.3) ** 2 + (Yp + 0.2) ** 2) / 0.01), max_ulp=4)  # exp: DESIGN.md 4
    v = np.arange(300.0).view(np.ndarray)
    for got, want in [
        (np.indices((600, 700)), np.indices.__wrapped__((600, 700))),
        (np.tile(v, (700, 1)), np.tile.__wrapped__(v, (700, 1))),
        (np.repeat(v, 700), np.repeat.__wrapped__(v, 700)),
        (np.kron(v, v), np.kron.__wrapped__(v, v)),
        (np.fromfunction(lambda i, j: i * j, (500, 400)), np.fromfunction.__wrapped__(lambda i, j: i * j, (500, 400))),
    ]:
        assert type(got) is grumpy.ndarray
        assert_same(got, want)
    small = np.meshgrid(x[:10], x[:10])
    assert all(type(a) is np.ndarray for a in small)
    sparse = np.meshgrid(x, x, sparse=True)
    assert all(type(a) is np.ndarray for a in sparse)
    views = np.meshgrid(x, x, copy=False)
    ref = np.meshgrid.__wrapped__(x, x, copy=False)[0]
    assert repr(views[0].flags) == repr(ref.flags) and views[0].strides == ref.strides  # broadcast views, warn on write


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_an_operator_broadcasting_small_plain_arrays_into_a_large_result_is_captured():
    """hooks/plain_ops.c: arrays below GRUMPY_MIN_BYTES are NumPy's plain
    ones and meet no grumpy dispatch, but an operator that broadcasts small
    ones into a large result (an N-body step's pairwise differences, 9.6 KB
    -> 3.8 MB) is recorded, so the reductions over it fuse; a comparison's
    bool result likewise.  Operators without such an expansion, other subclasses, complex operands and
    in-place operators stay NumPy's."""
    pos = np.random.default_rng(3).standard_normal((400, 3))  # 9.6 KB: plain
    mass = np.random.default_rng(4).uniform(0.5, 1.0, 400)
    assert type(pos) is np.ndarray
    before = grumpy.stats()
    d = pos[None, :, :] - pos[:, None, :]
    assert type(d) is grumpy.ndarray and grumpy.is_pending(d)
    acc = (d * (((d**2).sum(axis=2) + 0.0025) ** -1.5 * mass[None, :])[:, :, None]).sum(axis=1)
    got = plain(acc)
    after = grumpy.stats()
    assert delta(before, after, "ops_captured") >= 6
    assert delta(before, after, "ops_plain_broadcast") == 1  # d; the rest had a grumpy operand
    assert delta(before, after, "kernels_launched") <= 3  # d's square-sum and the weighted sum, fused
    with grumpy.disabled():
        dp = pos[None, :, :] - pos[:, None, :]
        terms = dp * (((dp**2).sum(axis=2) + 0.0025) ** -1.5 * mass[None, :])[:, :, None]
        want = terms.sum(axis=1)
        # DESIGN.md 4: a float sum within the rounding bound of its terms (which
        # cancel: acc is near 0 where the pull is balanced), pow within 4 ULP
        bound = 2 * 400 * np.finfo(np.float64).eps * np.abs(terms).sum(axis=1)
    assert type(want) is np.ndarray
    assert np.all(np.abs(got - want) <= bound)
    # the operands were copied: a later write to pos does not reach d
    before = grumpy.stats()
    d2 = pos[:, None, 0] * pos[None, :, 1]
    assert delta(before, grumpy.stats(), "ops_plain_broadcast") == 1
    expect = np.multiply.outer(pos[:, 0], pos[:, 1]).view(np.ndarray).copy()
    pos[:] = 0.0
    assert_same(plain(d2), expect)
    # NumPy's: no expansion, small results, other classes, complex, in place
    before = grumpy.stats()
    with grumpy.disabled():
        big_plain = np.random.default_rng(5).standard_normal(200_000)  # 1.6 MB, plain: a copy would cost
    assert type(big_plain + big_plain) is np.ndarray
    assert type(mass[:, None] + mass[None, :10]) is np.ndarray  # 32 KB: below GRUMPY_MIN_BYTES
    m = np.matrix(np.ones((3, 3)))
    assert type(np.ones(3).view(np.ndarray) * m) is np.matrix
    masked = np.ma.masked_array(np.arange(600.0), mask=np.arange(600) % 3 == 0)
    r = np.arange(600.0).view(np.ndarray)[:, None] / masked
    assert type(r) is np.ma.MaskedArray and r.mask.sum() == 600 * 200
    c = np.ones((600, 1), complex) + np.ones((1, 600))
    assert type(c) is np.ndarray
    with grumpy.disabled():
        inplace = np.random.default_rng(6).standard_normal((600, 600))
    inplace += np.ones((600, 1)) * 2.0
    assert type(inplace) is np.ndarray
    # np.ma's division compares |a| * tolerance >= |b| of its plain data: that
    # (600, 600) bool is recorded, the rest were NumPy's
    assert delta(before, grumpy.stats(), "ops_plain_broadcast") == 1
    # a comparison: one-hot rows of labels, a bool map the sum reads
    labels = np.random.default_rng(7).integers(0, 50, 4000)  # 32 KB: plain
    before = grumpy.stats()
    onehot = labels[:, None] == np.arange(50)[None, :]
    assert type(onehot) is grumpy.ndarray and delta(before, grumpy.stats(), "ops_plain_broadcast") == 1
    with grumpy.disabled():
        want = (labels[:, None] == np.arange(50)[None, :]).sum(axis=0)
    assert_same(plain(onehot.sum(axis=0)), want)
    assert type(labels == labels) is np.ndarray and (labels == None) is not NotImplemented  # noqa: E711


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_variance_sums_numpys_squared_deviations_without_writing_them(dtype):
    """NumPy's var and std (numpy/_core/_methods.py _var) square their
    temporary x = a - mean in place and sum it (np.add.reduce), and never
    read x again; x was stored all the same, as an extra output of the
    summing kernel (a whole array written for nothing: bootstrap.py's
    xs.var(axis=1)).  Inside the method that sum does not write x; results
    are NumPy's bit for bit, float and integer input, every axis, ddof and
    keepdims, and a user's own sum of a temporary still writes it."""
    rng = np.random.default_rng(31)
    a0 = (rng.uniform(-3.0, 3.0, (40, 50_000)) * 100).astype(dtype)
    a = np.copy(a0)
    grumpy.flush()
    for kw in [dict(axis=1), dict(axis=1, ddof=1), dict(axis=0), dict(axis=None), dict(axis=1, keepdims=True)]:
        for name in ("var", "std"):
            before = grumpy.stats()
            got = plain(getattr(a, name)(**kw))
            after = grumpy.stats()
            assert delta(before, after, "kernels_launched") >= 1, (name, kw)
            assert delta(before, after, "extra_outputs") == 0, (name, kw)
            assert_same(got, getattr(a0, name)(**kw))
            assert_same(plain(getattr(np, name)(a, **kw)), getattr(np, name)(a0, **kw))
    x = a - 1
    grumpy.flush()
    y = x * x  # the user's own array, alive: written
    before = grumpy.stats()
    s = plain(np.add.reduce(y, axis=1))
    after = grumpy.stats()
    assert delta(before, after, "extra_outputs") == 1
    assert_same(s, np.add.reduce((a0 - 1) * (a0 - 1), axis=1))
    assert_same(y, (a0 - 1) * (a0 - 1))


@pytest.mark.parametrize("b", [2.4, 1.7, 0.3, 1 / 2.2, -2.4, -0.7, 7.5])
def test_a_float32_power_of_a_fractional_constant_is_pows_within_an_ulp(b):
    """float32 a ** b for a constant b that is finite and not an integer
    (sRGB's ((c + 0.055) / 1.055) ** 2.4) is exp(b log a) in double, rounded
    once (codegen.c fraction_power32), where a double pow was 1.3-1.8x
    slower than NumPy's powf.  Every value is within 1 ULP of the float32
    rounding of the double pow (and 4 of NumPy's, DESIGN.md 4), bases
    spanning float32 (overflow to inf, subnormals), +-0, +-inf, NaN,
    negative bases, and NumPy's warnings are given (divide by zero,
    invalid, overflow) at once."""
    import warnings

    from gpcheck import ulp_distance

    rng = np.random.default_rng(5)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, 3.4e38, 1e-38, -3.0]
    a0 = np.concatenate([rng.uniform(0, 4, 100_000), np.exp(rng.uniform(-100, 88, 100_000)),
                         rng.uniform(-4, 0, 1000), np.array(special * 10)]).astype(np.float32)
    a = np.copy(a0)
    grumpy.flush()
    e = np.float32(b)
    with warnings.catch_warnings(record=True) as want_w, np.errstate(all="warn", under="ignore"):
        warnings.simplefilter("always")
        want = a0 ** e
    before = grumpy.stats()
    with warnings.catch_warnings(record=True) as got_w, np.errstate(all="warn", under="ignore"):
        warnings.simplefilter("always")
        got = plain(a ** e)
    after = grumpy.stats()
    assert delta(before, after, "kernels_launched") >= 1
    assert sorted(str(w.message) for w in got_w) == sorted(str(w.message) for w in want_w)
    rounded = np.power(a0.astype(np.float64), np.float64(e)).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert ulp_distance(got, rounded).max() <= 1
    assert ulp_distance(got, want).max() <= 4


def test_a_float32_fractional_power_kernel_calls_log_and_exp_not_pow(tmp_path):
    """How the kernel above computes: its optimized IR (GRUMPY_DUMP_IR,
    compiled afresh) calls log and exp (libmvec's vector ones) and no pow,
    and zero bases raise no flag (no NumPy replay for warnings);
    float64 keeps pow (exp(b log a) in double is not within 4 ULP of a
    double pow)."""
    src = textwrap.dedent("""
        import numpy as np, grumpy
        a = np.copy(np.linspace(0.0, 4.0, 400_000, dtype=np.float32))
        a[::5] = 0.0
        d = np.copy(np.linspace(0.0, 4.0, 400_000))
        print(float((a ** np.float32(2.4))[-1]), float((d ** 2.4)[-1]))
        print("replays", grumpy.stats()["fpe_replays"])
    """)
    path = tmp_path / "p.py"
    path.write_text(src)
    env = dict(os.environ, GRUMPY_DUMP_IR="1", GRUMPY_CACHE_DIR=str(tmp_path / "cache"), GRUMPY_MIN_BYTES="65536")
    r = subprocess.run([PY, "-m", "grumpy.run", str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    # zero bases raise no flag (log(0)'s divide-by-zero is kept out), so
    # no kernel is computed again by NumPy for warnings
    assert r.stdout.split()[-1] == "0", r.stdout
    import re

    bodies = [k.split("\n}\n")[0] for k in r.stderr.split("define void @gp_k_")[1:]]
    calls = [set(re.findall(r"call [^@]*@([\w.]+)\(", k)) for k in bodies]
    f32 = [c for c in calls if any("log" in w for w in c)]
    assert f32 and all(any("exp" in w for w in c) and not any("pow" in w for w in c) for c in f32), calls
    assert any(any("pow" in w for w in c) for c in calls), calls


def _run_with_ir(tmp_path, src):
    """Runs program src under grumpy (every size, kernels compiled afresh,
    their optimized IR dumped) and under plain NumPy.  Returns grumpy's
    stdout lines, NumPy's, and the bodies of the kernels' IR."""
    path = tmp_path / "p.py"
    path.write_text(src)
    env = dict(os.environ, GRUMPY_DUMP_IR="1", GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="0")
    r = subprocess.run([PY, "-m", "grumpy.run", str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    want = subprocess.run([PY, str(path)], env=dict(os.environ, GRUMPY="0"), capture_output=True, text=True, timeout=300)
    bodies = [k.split("\n}\n")[0] for k in r.stderr.split("define void @gp_k_")[1:]]
    return r.stdout.splitlines(), want.stdout.splitlines(), bodies


def test_boolean_row_reductions_are_numpys_and_their_chunk_is_stored_as_vectors(tmp_path):
    """any/all/argmax/sum of a compare along rows (random_walk's
    `(r2 == 0).any(axis=1)`) give NumPy's results at row lengths around
    the chunk of 128 points, and the chunk temporary of a boolean map is
    bytes: the optimized IR (GRUMPY_DUMP_IR, compiled afresh) stores the
    compares as vectors, with no byte-by-byte `store i1` (before: an array
    of i1, one extract and one store per point, 2.3x slower than NumPy)."""
    src = textwrap.dedent("""
        import numpy as np, grumpy
        for cols in (1, 7, 127, 128, 129, 1500):
            r2 = np.copy(np.random.default_rng(cols).integers(0, 50, size=(20000 // cols + 3, cols)).astype(np.int32))
            out = [(r2 == 0).any(axis=1), (r2 > 1).all(axis=1), np.argmax(r2 >= 45, axis=1),
                   np.argmin(r2 != 3, axis=1), (r2 < 25).sum(axis=1), (r2 == 7).any(axis=0)]
            print(cols, *(o.tobytes().hex() for o in out))
        print("launched", grumpy.stats()["kernels_launched"], "fallbacks", sum(grumpy.stats()["fallbacks"].values()))
    """)
    lines, want, bodies = _run_with_ir(tmp_path, src)
    assert lines[:-1] == want[:-1]
    launched, fallbacks = int(lines[-1].split()[1]), int(lines[-1].split()[3])
    assert launched >= 6 * 6 and fallbacks == 0, lines[-1]
    assert len(bodies) >= 6
    assert not any("store i1 " in k or "x i1]" in k for k in bodies), [k for k in bodies if "store i1 " in k][:1]


def _search_cases():
    """(a, v, side) triples: every dtype the merge takes, both sides,
    duplicates, NaNs (sorted last) and signed zeros, keys outside a's
    range, fewer elements than keys (the merge) and many more (galloping),
    a strided a, 2-D keys, an empty a."""
    rng = np.random.default_rng(7)
    for dt in (np.float64, np.float32, np.int64, np.int32, np.uint64, np.uint32):
        lo = 0 if np.dtype(dt).kind == "u" else -1000
        for n, m in ((5000, 3000), (300, 5000), (100_000, 2048), (1, 4096), (0, 2000)):
            a = np.sort(rng.integers(lo, 1000, n).astype(dt))
            v = np.sort(rng.integers(lo - 50, 1050, m).astype(dt))
            if np.dtype(dt).kind == "f" and n > 2:
                a[:2] = np.nan
                a[2:4] = (-0.0, 0.0)
                v[:3] = np.nan
                v[3] = -0.0
                a, v = np.sort(a), np.sort(v)
                assert np.isnan(a[-1]) and np.isnan(v[-1])
            for side in ("left", "right"):
                yield a, v, side
        a = np.sort(rng.integers(lo, 1000, 40_000).astype(dt))
        yield a[::3], np.sort(rng.integers(lo, 1000, 2400).astype(dt)).reshape(40, 60), "right"


@pytest.mark.parametrize("case", range(66))
def test_searchsorted_of_sorted_keys_is_merged_and_numpys(case):
    """np.searchsorted(a, v) of a sorted a and sorted keys (a particle
    filter's resampling: 6.6 ms a call in NumPy for 200,000 keys) is
    answered by grumpy's merge (stats()["sorted_searches"]) with NumPy's
    indices, bit for bit, at both sides, for every dtype it takes."""
    a, v, side = list(_search_cases())[case]
    want = np.searchsorted(plain(a), plain(v), side=side)
    before = grumpy.stats()["sorted_searches"]
    got = np.searchsorted(a.view(grumpy.ndarray), v.view(grumpy.ndarray), side=side)
    method = a.view(grumpy.ndarray).searchsorted(v, side)  # the method, a plain v
    assert grumpy.stats()["sorted_searches"] == before + 2
    for g in (got, method):
        assert g.dtype == np.intp and g.shape == want.shape
        assert np.array_equal(plain(g), want)


def test_searchsorted_is_numpys_when_the_merge_does_not_apply():
    """Keys out of order, an unsorted a (NumPy's binary search gives its
    own answer), a sorter, few keys, a table of more than 64 elements a
    key, mixed dtypes, a bad side: NumPy's call, with NumPy's result or
    error, and no merge counted."""
    rng = np.random.default_rng(3)
    a = np.sort(rng.uniform(0, 1, 10_000))
    v = np.sort(rng.uniform(0, 1, 5000))
    unsorted_v = v.copy()
    unsorted_v[100], unsorted_v[101] = unsorted_v[101], unsorted_v[100]
    unsorted_a = a.copy()
    unsorted_a[5000:5010] = unsorted_a[5000:5010][::-1]
    order = rng.permutation(10_000)
    calls = [
        (a, unsorted_v, {}),
        (unsorted_a, v, {}),
        (a[order], v, {"sorter": np.argsort(a[order])}),
        (a, v[:100], {}),
        (np.sort(rng.uniform(0, 1, 70_000)), v[:1024], {}),  # more than 64 elements a key: reading a costs more
        (a, v.astype(np.float32), {}),
        (a.astype(np.int64), v, {"side": "right"}),
    ]
    g = grumpy.ndarray
    before = grumpy.stats()["sorted_searches"]
    for x, y, kw in calls:
        want = np.searchsorted(plain(x), plain(y), **kw)
        got = np.searchsorted(x.view(g), y.view(g), **kw)
        assert np.array_equal(plain(got), want)
        assert np.array_equal(plain(x.view(g).searchsorted(y, **kw)), want)
    with pytest.raises(ValueError) as e:
        np.searchsorted(a.view(g), v.view(g), side="middle")
    with pytest.raises(ValueError) as want_e:
        np.searchsorted(plain(a), plain(v), side="middle")
    assert str(e.value) == str(want_e.value)
    with pytest.raises(TypeError):
        np.searchsorted(a.view(g), v.view(g), "left", side="left")  # side twice: NumPy's TypeError
    with pytest.raises(TypeError):
        a.view(g).searchsorted(v, "left", side="left")
    assert grumpy.stats()["sorted_searches"] == before


def test_float_min_max_reductions_fold_chunks_in_vector_registers(tmp_path):
    """x.min()/x.max() of a float map (and argmin/argmax) fold each chunk
    of 128 points with llvm.minimum/maximum from the identity, which the
    vectorizer turns into vector steps (the optimized IR, compiled afresh,
    calls the vector intrinsic); before, the in-order step kept the fold
    scalar and a float32 (a - 1).min() ran 3.5 ms against NumPy's 0.9.
    NaNs (the first one's payload), zeros and infinities anywhere in a
    chunk give NumPy's bits: such a chunk is folded in order."""
    src = textwrap.dedent("""
        import numpy as np, grumpy
        rng = np.random.default_rng(4)
        out = []
        for dt in (np.float32, np.float64):
            for case in range(8):
                x = rng.uniform(-3, 3, 20_000).astype(dt)
                if case == 1: x[[5, 300, 19_999]] = np.nan
                if case == 2: x[[0, 129, 7000]] = 0.0; x = np.abs(x)
                if case == 3: x[[3, 4000]] = -np.inf; x[[10, 11]] = np.inf
                if case == 4: x[rng.integers(0, 20_000, 50)] = 0.0
                if case == 5: x[-1] = np.nan
                if case == 6: x = np.round(x)
                if case == 7: x[:200] = np.nan
                y = np.copy(x)
                for r in ((y - 1).min(), (y - 1).max(), (y * 2).min(axis=0), (y.reshape(40, 500) + 0).max(axis=1),
                          np.argmin(y * 1), np.argmax(y.reshape(40, 500) * 1, axis=1), (y * 1).reshape(40, 500).min(axis=1)):
                    out.append(np.asarray(r).tobytes().hex())
        print(" ".join(out))
        print("launched", grumpy.stats()["kernels_launched"], "fallbacks", sum(grumpy.stats()["fallbacks"].values()))
    """)
    lines, want, bodies = _run_with_ir(tmp_path, src)
    assert lines[0] == want[0]
    assert int(lines[-1].split()[1]) >= 2 * 8 * 7 and int(lines[-1].split()[3]) == 0, lines[-1]
    folded = [k for k in bodies if "@llvm.minimum.v" in k or "@llvm.maximum.v" in k]
    assert len(folded) >= 12, len(folded)  # every min/max and arg kernel of both dtypes (4 before: the arg ones)


def test_an_integer_division_by_a_constant_multiplies_with_one_kernel_for_every_divisor(tmp_path):
    """x // d, x % d and np.fmod(x, d) of integers by a constant d other
    than 0 and -1 divide by multiplying: the plan passes d's multiplier and
    shifts (Granlund-Montgomery, gp_divisor_magic) as two constants, so
    the optimized IR (GRUMPY_DUMP_IR, compiled afresh) has no sdiv/udiv of
    the data, and one kernel serves every divisor (before: a division at
    every element, int16 (x // 3).sum(axis=0) 21.6 ms against NumPy's 1.5;
    a kernel per divisor value compiled 99 kernels for a loop over 99
    divisors).  Every dtype, both signs, the extremes of x and d give
    NumPy's bits; // 0 and // -1 keep the general code and NumPy's
    warnings."""
    src = textwrap.dedent("""
        import warnings
        import numpy as np, grumpy
        rng = np.random.default_rng(6)
        out = []
        for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
            info = np.iinfo(dt)
            x = np.copy(rng.integers(info.min, info.max, (50, 300), endpoint=True, dtype=dt))
            x[0, :6] = [info.min, info.min + 1, info.max, info.max - 1, 0, 1]
            ds = [1, 2, 3, 7, 10, 641 % int(info.max), int(info.max), int(info.max) - 1, int(info.max) // 2 + 1]
            if info.min < 0:
                ds += [-2, -3, -7, int(info.min), int(info.min) + 1]
            for d in ds:
                out += [((x // d) + 0).sum(axis=1), (x % d + 0).max(axis=0), np.fmod(x, d) * 1]
        print(" ".join(o.tobytes().hex() for o in out))
        y = np.copy(rng.integers(-50, 50, (300, 700)).astype(np.int32))
        y[0, 0] = np.iinfo(np.int32).min
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            z = (y // 0 + 1).sum(axis=1) + (y // -1 + 1).sum(axis=1)
        print(int(z.sum()), "|".join(str(m.message) for m in w))
        import sys; print("compiled", grumpy.stats()["kernels_compiled"], file=sys.stderr)
    """)
    lines, want, bodies = _run_with_ir(tmp_path, src)
    assert lines == want
    assert "divide by zero" in want[-1] and "overflow" in want[-1]
    import re
    # a division of the data (the row loop's udiv/urem of i64 `%rem` indices are not the data's)
    runtime = re.compile(r"= (sdiv|udiv|srem|urem) (?!i64 %rem)[^,]*, %")
    divides = [k for k in bodies if runtime.search(k)]
    assert len(divides) <= 2, len(divides)  # the kernels of y // 0 and y // -1
    # 8 dtypes x 14 or 9 divisors x 3 statements, one kernel per dtype and statement (and a few for y)
    assert 3 * 8 <= len(bodies) <= 3 * 8 + 6, len(bodies)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int64])
def test_an_arg_reduction_along_an_outer_axis_fuses_its_map_and_scans_as_numpy(dtype):
    """np.abs(a - 1).argmin(axis=0) and friends over a C-ordered (300, 700)
    array: the map is one kernel, then NumPy's transposed copy and
    contiguous scan (a kernel reading each output's column with a stride
    was 3-4x slower than NumPy: float32 1000x2000, 16.0 ms against 4.3).
    NumPy's values, with NaNs and ties; not counted as a fallback; an arg
    along the innermost axis stays one fused kernel."""
    rng = np.random.default_rng(3)
    base = (rng.random((300, 700)) * 20).astype(dtype)
    if np.dtype(dtype).kind == "f":
        base[5, 3] = np.nan
    a = np.copy(base)
    grumpy.flush()
    s0 = grumpy.stats()
    got = [np.abs(a - 1).argmin(axis=0), np.argmax(a * 2, axis=-2), (a + 1).argmax(axis=0, keepdims=True)]
    s1 = grumpy.stats()
    inner = np.abs(a - 1).argmin(axis=1)
    assert not grumpy.is_pending(inner)  # computed at once: an index array
    s2 = grumpy.stats()
    b = plain(a)
    want = [np.abs(b - 1).argmin(axis=0), np.argmax(b * 2, axis=-2), (b + 1).argmax(axis=0, keepdims=True)]
    for g, w in zip(got, want):
        assert type(g) is np.ndarray or isinstance(g, grumpy.ndarray)
        assert_same(plain(g), w)
    assert_same(plain(inner), np.abs(b - 1).argmin(axis=1))
    assert delta(s0, s1, "kernels_launched") == 3  # each map fused into one kernel
    assert delta(s1, s2, "kernels_launched") == 1  # map and argmin in one kernel
    assert sum(s2["fallbacks"].values()) == sum(s0["fallbacks"].values())
