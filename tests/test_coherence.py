"""Memory coherence (DESIGN.md section 3): C code that touches a grumpy
buffer without asking still sees NumPy's values.

- Reads of a pending result from C (ctypes memmove / from_address, the
  buffer protocol, np.frombuffer, tobytes, a plain-ndarray view handed to
  NumPy's own C loops) compute it, through the page guard where nothing
  asked first (guard_faults counts those).
- Writes from C into a materialized buffer that pending nodes still read
  (ctypes memset / memmove, memoryview slice assignment, a plain view, a
  thread that released the GIL) first compute those readers, so they see
  the old values: no write-after-read hazard.
- Kernel threads survive os.fork(); faulthandler enabled before or after
  grumpy leaves the guard working.

Every expected value is computed by plain NumPy on plain ndarrays.  The
module enables grumpy itself (idempotent, so it also works under a
conftest.py that already did).  The tests at the end marked xfail are known
bugs (see each reason); they turn into failures once fixed (strict), so
the marker can be removed.
"""

import ctypes
import faulthandler
import os
import pathlib
import subprocess
import sys
import textwrap
import threading

import grumpy

grumpy.enable()

import numpy as np  # noqa: E402  (patched by grumpy.enable when imported)
import pytest  # noqa: E402
from gpcheck import raw_address  # noqa: E402
import gpcheck  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
N = 1 << 20  # elements: 8 MiB of float64, 4 MiB of int32, far above GRUMPY_MIN_BYTES
TIMEOUT = 120  # seconds per child process
CTYPE = {np.dtype(np.float64): ctypes.c_double, np.dtype(np.int32): ctypes.c_int32}
DTYPES = [np.float64, np.int32]


# ---- helpers ---------------------------------------------------------------


def faults():
    return grumpy.stats()["guard_faults"]


def launched():
    return grumpy.stats()["kernels_launched"]


def source(dtype):
    """x, a materialized grumpy array 0..N-1, and its plain NumPy copy."""
    x = np.arange(N, dtype=dtype)
    assert isinstance(x, grumpy.ndarray)
    assert not grumpy.is_pending(x)
    ref = x.view(np.ndarray).copy()  # plain ndarray: NumPy's own copy
    assert type(ref) is np.ndarray
    return x, ref


def pending_result(dtype):
    """a = x * 3 + 1 (pending, grumpy) and NumPy's value of it (plain)."""
    x, ref = source(dtype)
    a = x * 3 + 1
    assert isinstance(a, grumpy.ndarray)
    assert grumpy.is_pending(a), "x * 3 + 1 on a grumpy array should be recorded lazily"
    want = ref * 3 + 1
    assert want.dtype == a.dtype
    return a, want


def ctypes_buffer(dtype, n=N):
    return (CTYPE[np.dtype(dtype)] * n)()


def child_env(**extra):
    """Environment for a child Python: grumpy's variables removed, ROOT on
    PYTHONPATH, the grumpy preload shim dropped."""
    env = gpcheck.subprocess_env()
    env.pop("PYTHONFAULTHANDLER", None)
    if "LD_PRELOAD" in env:
        kept = [p for p in env["LD_PRELOAD"].replace(":", " ").split() if "libgrumpy_preload" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env


def run_script(tmp_path, text, args=(), py_flags=(), env=None, timeout=TIMEOUT):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(text))
    return subprocess.run(
        [sys.executable, *py_flags, "-m", "grumpy.run", str(script), *args],
        cwd=tmp_path,
        env=env or child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ---- (a) reads of a pending result -----------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_ctypes_memmove(dtype):
    a, want = pending_result(dtype)
    f0, k0 = faults(), launched()
    buf = ctypes_buffer(dtype)
    ctypes.memmove(buf, raw_address(a), a.nbytes)  # C memcpy from PROT_NONE pages
    assert bytes(buf) == want.tobytes()
    assert faults() > f0, "the read should have been resolved by the page guard"
    assert launched() > k0
    assert not grumpy.is_pending(a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_ctypes_from_address(dtype):
    a, want = pending_result(dtype)
    f0 = faults()
    ct = CTYPE[np.dtype(dtype)]
    k = N - 3  # an element on the last page
    v = ct.from_address(raw_address(a) + k * a.itemsize).value
    assert v == want[k]
    assert faults() == f0 + 1
    assert not grumpy.is_pending(a)
    # once computed, further raw reads need no fault
    assert ct.from_address(raw_address(a) + 5 * a.itemsize).value == want[5]
    assert faults() == f0 + 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_ctypes_array_from_address(dtype):
    a, want = pending_result(dtype)
    f0 = faults()
    view = (CTYPE[np.dtype(dtype)] * N).from_address(raw_address(a))  # no read yet
    assert grumpy.is_pending(a)
    assert view[N // 2] == want[N // 2]
    assert faults() == f0 + 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_memoryview(dtype):
    a, want = pending_result(dtype)
    m = memoryview(a)
    assert m.format == memoryview(want).format
    assert m.shape == (N,)
    assert m[5] == want[5]
    assert m[N - 1] == want[N - 1]
    assert m.tobytes() == want.tobytes()
    assert not grumpy.is_pending(a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_frombuffer_of_memoryview(dtype):
    a, want = pending_result(dtype)
    f = np.frombuffer(memoryview(a), dtype=a.dtype)
    assert f.shape == want.shape
    assert f.view(np.ndarray).tobytes() == want.tobytes()
    assert f.view(np.ndarray).sum() == want.sum()


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_tobytes(dtype):
    a, want = pending_result(dtype)
    assert a.tobytes() == want.tobytes()
    assert not grumpy.is_pending(a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_asarray_then_numpy_c_code(dtype):
    a, want = pending_result(dtype)
    p = np.asarray(a).view(np.ndarray)  # a plain ndarray: NumPy's C loops, no dispatch
    assert type(p) is np.ndarray
    s = p.sum()
    assert s == want.sum()
    assert type(s) is type(want.sum())
    assert p.max() == want.max()
    assert np.array_equal(p, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_plain_view(dtype):
    """A plain view made by ndarray's own C method (not grumpy's view(),
    which computes first) reads the pending memory through the guard."""
    a, want = pending_result(dtype)
    f0 = faults()
    v = np.ndarray.view(a, np.ndarray)
    assert type(v) is np.ndarray
    assert grumpy.is_pending(a), "taking a view should not compute"
    assert v[5] == want[5]  # NumPy's getitem reads the PROT_NONE page
    assert faults() == f0 + 1
    assert not grumpy.is_pending(a)
    assert v.sum() == want.sum()
    assert np.array_equal(v, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_plain_view_numpy_reduction(dtype):
    """NumPy's own reduction loop is the first to touch the pending memory."""
    a, want = pending_result(dtype)
    f0 = faults()
    v = np.ndarray.view(a, np.ndarray)
    assert v.sum() == want.sum()
    assert faults() == f0 + 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_grumpy_view_as_plain_computes_first(dtype):
    """a.view(np.ndarray) leaves grumpy's sight, so grumpy computes a first
    (system calls on the view's memory then work: no EFAULT)."""
    a, want = pending_result(dtype)
    f0 = faults()
    v = a.view(np.ndarray)
    assert not grumpy.is_pending(a)
    assert faults() == f0
    assert np.array_equal(v, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_pending_partial_reduction_via_ctypes(dtype):
    x, ref = source(dtype)
    x2 = x.reshape(N // 4, 4)
    r = x2.sum(axis=1)  # 2 MiB (float64) / 2 MiB (int64) result: lazy
    want = ref.reshape(N // 4, 4).sum(axis=1)
    assert r.dtype == want.dtype
    assert grumpy.is_pending(r)
    f0 = faults()
    buf = (CTYPE.get(r.dtype, ctypes.c_int64) * r.size)()
    ctypes.memmove(buf, raw_address(r), r.nbytes)
    assert bytes(buf) == want.tobytes()
    assert faults() > f0


def test_read_from_thread_without_gil():
    """ctypes releases the GIL around memmove: the fault is resolved on a
    thread that does not hold it."""
    a, want = pending_result(np.float64)
    buf = ctypes_buffer(np.float64)
    f0 = faults()
    t = threading.Thread(target=ctypes.memmove, args=(buf, raw_address(a), a.nbytes))
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive()
    assert bytes(buf) == want.tobytes()
    assert faults() > f0


def test_read_from_thread_while_main_thread_records():
    """The faulting thread computes under the core lock without the GIL
    while this thread keeps recording operations (which takes the lock)."""
    x, ref = source(np.float64)
    for k in range(5):
        a = np.sqrt(x) * 3 + float(k)
        assert grumpy.is_pending(a)
        buf = ctypes_buffer(np.float64)
        t = threading.Thread(target=ctypes.memmove, args=(buf, raw_address(a), a.nbytes))
        t.start()
        spins = 0
        while t.is_alive() and spins < 100000:
            y = x * 2.0
            del y
            spins += 1
        t.join(TIMEOUT)
        assert not t.is_alive()
        assert bytes(buf) == (np.sqrt(ref) * 3 + float(k)).tobytes()


# ---- (b) writes into memory that pending nodes read ------------------------


def write_memset(x):
    ctypes.memset(raw_address(x), 0, x.nbytes)
    return np.zeros(N, dtype=x.dtype).view(np.ndarray)


def write_memmove(x):
    new = (np.arange(N, dtype=x.dtype).view(np.ndarray) % 7) - 3
    src = ctypes.create_string_buffer(new.tobytes(), x.nbytes)
    ctypes.memmove(raw_address(x), src, x.nbytes)
    return new


def write_memoryview_slice(x):
    old = x.view(np.ndarray).copy()
    new = np.full(N // 2, 5, dtype=x.dtype).view(np.ndarray)
    m = memoryview(x)
    m[N // 2 :] = memoryview(new)
    old[N // 2 :] = 5
    return old


def write_memoryview_bytes(x):
    m = memoryview(x).cast("B")
    m[:] = bytes(x.nbytes)
    return np.zeros(N, dtype=x.dtype).view(np.ndarray)


def write_plain_view(x):
    x.view(np.ndarray)[:] = 7
    return np.full(N, 7, dtype=x.dtype).view(np.ndarray)


def write_asarray_plain_view(x):
    np.asarray(x).view(np.ndarray)[::2] = -1
    new = np.arange(N, dtype=x.dtype).view(np.ndarray).copy()
    new[::2] = -1
    return new


def write_last_element_ctypes(x):
    CTYPE[x.dtype].from_address(raw_address(x) + (N - 1) * x.itemsize).value = -2
    new = np.arange(N, dtype=x.dtype).view(np.ndarray).copy()
    new[-1] = -2
    return new


def write_from_thread(x):
    t = threading.Thread(target=ctypes.memset, args=(raw_address(x), 0, x.nbytes))
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive()
    return np.zeros(N, dtype=x.dtype).view(np.ndarray)


WRITERS = {
    "memset": write_memset,
    "memmove": write_memmove,
    "memoryview_slice": write_memoryview_slice,
    "memoryview_bytes": write_memoryview_bytes,
    "plain_view": write_plain_view,
    "asarray_plain_view": write_asarray_plain_view,
    "ctypes_last_element": write_last_element_ctypes,
    "thread_memset": write_from_thread,
}
# writers that touch the memory from C with nothing asking grumpy first
RAW_C_WRITERS = {"memset", "memmove", "ctypes_last_element", "thread_memset"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("writer", list(WRITERS))
def test_write_after_read(writer, dtype):
    x, ref = source(dtype)
    b = x * 2
    assert grumpy.is_pending(b)
    want_b = ref * 2  # computed from the OLD x
    f0 = faults()
    new_x = WRITERS[writer](x)
    if writer in RAW_C_WRITERS:
        assert faults() > f0, "the write should have been stopped by the page guard"
    assert not grumpy.is_pending(b), "the pending reader should have been computed before the write"
    assert b.view(np.ndarray).tobytes() == want_b.tobytes()
    assert x.view(np.ndarray).tobytes() == new_x.tobytes()
    # later operations see the new x
    c = x + 1
    assert c.view(np.ndarray).tobytes() == (new_x + 1).tobytes()


def _reader_copy(x):
    return x.copy(), lambda r: r.copy()


def _reader_astype(x):
    t = np.float32 if x.dtype == np.float64 else np.int64
    return x.astype(t), lambda r: r.astype(t)


def _reader_strided(x):
    return x[::2] * 2, lambda r: r[::2] * 2


def _reader_partial_reduction(x):
    return x.reshape(N // 4, 4).sum(axis=1), lambda r: r.reshape(N // 4, 4).sum(axis=1)


def _reader_where(x):
    return np.where(x > 10, x, -x), lambda r: np.where(r > 10, r, -r)


def _reader_chain(x):
    t = x * 2
    c = t + 1  # t dropped: an intermediate still pending that reads x
    del t
    return c, lambda r: r * 2 + 1


def _reader_broadcast(x):
    m = np.ones((4, N), dtype=x.dtype)
    return m + x, lambda r: np.ones((4, N), dtype=r.dtype).view(np.ndarray) + r


READERS = {
    "copy": _reader_copy,
    "astype": _reader_astype,
    "strided": _reader_strided,
    "partial_reduction": _reader_partial_reduction,
    "where": _reader_where,
    "dropped_intermediate": _reader_chain,
    "broadcast": _reader_broadcast,
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reader", list(READERS))
def test_write_after_read_kinds_of_reader(reader, dtype):
    x, ref = source(dtype)
    b, numpy_fn = READERS[reader](x)
    assert grumpy.is_pending(b)
    want = numpy_fn(ref)
    f0 = faults()
    ctypes.memset(raw_address(x), 0, x.nbytes)
    assert faults() > f0
    assert b.dtype == want.dtype and b.shape == want.shape
    assert b.view(np.ndarray).tobytes() == want.tobytes()
    assert not x.view(np.ndarray).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_write_into_pending_array_that_is_read(dtype):
    """x is itself pending and read by pending c: a raw write computes x,
    then c from x's computed values, then lets the write through."""
    y, ref = source(dtype)
    x = y * 2
    c = x + 1
    assert grumpy.is_pending(x) and grumpy.is_pending(c)
    ctypes.memset(raw_address(x), 0, x.nbytes)
    assert c.view(np.ndarray).tobytes() == (ref * 2 + 1).tobytes()
    assert not x.view(np.ndarray).any()


# ---- fork ----------------------------------------------------------------


def test_fork_child_computes_fused_expression():
    x, ref = source(np.float64)
    want = (ref * 2 + 1).sum()
    assert (x * 2 + 1).sum() == want  # parent: kernel threads started
    assert grumpy.stats()["threads"] >= 1
    a = x * 5  # pending across the fork
    assert grumpy.is_pending(a)
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        status = 1
        try:
            ok = (x * 2 + 1).sum() == want
            ok = ok and a.view(np.ndarray)[N - 1] == (N - 1) * 5.0
            z = x * 3 + 2
            buf = ctypes_buffer(np.float64)
            ctypes.memmove(buf, raw_address(z), z.nbytes)
            ok = ok and bytes(buf) == (ref * 3 + 2).tobytes()
            status = 0 if ok else 1
        except BaseException:
            status = 2
        finally:
            os._exit(status)
    _, st = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0
    # the child's work did not touch the parent's DAG
    assert grumpy.is_pending(a)
    assert a.view(np.ndarray).tobytes() == (ref * 5).tobytes()


# ---- faulthandler --------------------------------------------------------


def test_faulthandler_enable_keeps_guard():
    faulthandler.enable(file=sys.__stderr__)  # what pytest did before us, again
    assert faulthandler.is_enabled()
    a, want = pending_result(np.float64)
    f0 = faults()
    assert ctypes.c_double.from_address(raw_address(a) + 8 * 9).value == want[9]
    assert faults() == f0 + 1


GUARDED_READ = textwrap.dedent(
    """
    import ctypes, faulthandler, sys
    import numpy as np
    import grumpy

    def check(tag):
        x = np.arange(1 << 20, dtype=np.float64)
        a = x * 2 + 1
        assert grumpy.is_pending(a), tag
        f0 = grumpy.stats()["guard_faults"]
        v = ctypes.c_double.from_address(np.ndarray.__dict__["ctypes"].__get__(a).data + 8 * 1000).value
        assert v == 2001.0, (tag, v)
        assert grumpy.stats()["guard_faults"] == f0 + 1, tag
        print("OK", tag, flush=True)

    assert grumpy.enabled() and faulthandler.is_enabled()
    check("start")
    """
)


def test_faulthandler_cmdline_then_grumpy_run(tmp_path):
    prog = GUARDED_READ + textwrap.dedent(
        """
        faulthandler.enable()
        check("re-enabled")
        faulthandler.enable(all_threads=False)
        check("re-enabled twice")
        """
    )
    r = run_script(tmp_path, prog, py_flags=("-X", "faulthandler"))
    assert "Fatal Python error" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["OK", "start", "OK", "re-enabled", "OK", "re-enabled", "twice"]


def test_faulthandler_enabled_by_the_program(tmp_path):
    """grumpy first (grumpy.run), then the program enables faulthandler:
    grumpy puts its handler back on top."""
    prog = GUARDED_READ.replace("assert grumpy.enabled() and faulthandler.is_enabled()",
                                "assert not faulthandler.is_enabled()\nfaulthandler.enable()")
    r = run_script(tmp_path, prog)
    assert "Fatal Python error" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["OK", "start"]


def test_faulthandler_env_then_grumpy_run(tmp_path):
    r = run_script(tmp_path, GUARDED_READ, env=child_env(PYTHONFAULTHANDLER="1"))
    assert "Fatal Python error" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["OK", "start"]


GENUINE_CRASH = """
    import ctypes
    import numpy as np
    import grumpy
    a = np.arange(1 << 20, dtype=np.float64) * 2
    assert ctypes.c_double.from_address(np.ndarray.__dict__["ctypes"].__get__(a).data + 8).value == 2.0  # guarded: fine
    print("OK", flush=True)
    ctypes.string_at(16)  # a genuine segfault, not grumpy's: chained, not swallowed
"""


def test_real_crash_without_faulthandler_dies(tmp_path):
    r = run_script(tmp_path, GENUINE_CRASH, timeout=60)
    assert r.stdout.split() == ["OK"]
    assert r.returncode == -11, r.stderr[-3000:]
    assert "Fatal Python error" not in r.stderr


def test_real_crash_with_faulthandler_first_reports_once(tmp_path):
    r = run_script(tmp_path, GENUINE_CRASH, py_flags=("-X", "faulthandler"), timeout=60)
    assert r.stdout.split() == ["OK"]
    assert r.returncode == -11, r.stderr[-3000:]
    assert r.stderr.count("Fatal Python error: Segmentation fault") == 1, r.stderr[-3000:]


# ---- known bugs (xfail: see reasons; remove the marker once fixed) ---------------


def test_real_crash_after_faulthandler_enable_reports_once(tmp_path):
    prog = """
        import ctypes, faulthandler
        import numpy as np
        import grumpy
        faulthandler.enable()
        a = np.arange(1 << 20, dtype=np.float64) * 2
        ctypes.c_double.from_address(np.ndarray.__dict__["ctypes"].__get__(a).data).value  # guarded: fine
        print("OK", flush=True)
        ctypes.string_at(16)  # a genuine segfault, not grumpy's
    """
    r = run_script(tmp_path, prog)
    assert r.stdout.split() == ["OK"]
    assert r.returncode == -11
    assert r.stderr.count("Fatal Python error: Segmentation fault") == 1, r.stderr.count("Fatal Python error")


def test_faulthandler_disable_keeps_guard(tmp_path):
    prog = GUARDED_READ + textwrap.dedent(
        """
        faulthandler.disable()
        check("disabled")
        """
    )
    r = run_script(tmp_path, prog, py_flags=("-X", "faulthandler"))
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    assert r.stdout.split() == ["OK", "start", "OK", "disabled"]


def test_real_crash_after_faulthandler_enable_disable_dies(tmp_path):
    prog = """
        import ctypes, faulthandler
        import numpy as np
        import grumpy
        faulthandler.enable()
        faulthandler.disable()
        a = np.arange(1 << 20, dtype=np.float64) * 2
        assert ctypes.c_double.from_address(np.ndarray.__dict__["ctypes"].__get__(a).data + 8).value == 2.0  # guarded: fine
        print("OK", flush=True)
        ctypes.string_at(16)  # a genuine segfault, not grumpy's
    """
    try:
        r = run_script(tmp_path, prog, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("the child hung on a genuine segfault instead of dying")
    assert r.stdout.split() == ["OK"]
    assert r.returncode == -11


def test_readinto_array_read_by_pending_node(tmp_path):
    x, ref = source(np.float64)
    b = x * 2
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(x.nbytes))
    with open(path, "rb") as f:
        assert f.readinto(x) == x.nbytes
    assert b.view(np.ndarray).tobytes() == (ref * 2).tobytes()
    assert not x.view(np.ndarray).any()


def test_os_write_plain_view_of_pending(tmp_path):
    a, want = pending_result(np.float64)
    path = tmp_path / "out.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        n = 0
        v = memoryview(a.view(np.ndarray)).cast("B")
        while n < a.nbytes:
            n += os.write(fd, v[n:])
    finally:
        os.close(fd)
    assert path.read_bytes() == want.tobytes()


def test_fault_on_thread_without_gil_with_numpy_evaluator(tmp_path):
    prog = """
        import ctypes, threading
        import numpy as np
        import grumpy
        N = 1 << 20
        x = np.arange(N, dtype=np.float64)
        good = 0
        for k in range(5):
            a = np.sin(x) * 3 + float(k)
            out = (ctypes.c_double * N)()
            t = threading.Thread(target=ctypes.memmove, args=(out, np.ndarray.__dict__["ctypes"].__get__(a).data, a.nbytes))
            t.start()
            while t.is_alive():  # keep recording ops (core lock) while the thread faults
                y = x * 2.0
                del y
            t.join()
            good += bool(out[3] == np.sin(3.0) * 3 + k)
        print("OK", good, flush=True)
    """
    try:
        r = run_script(tmp_path, prog, env=child_env(GRUMPY_DEBUG_JIT_FAIL="1"), timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: the child did not finish in 10 s")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["OK", "5"]
