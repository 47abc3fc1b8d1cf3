"""Issue "faults and security" (the parts done): signals grumpy does not own
end the process as without grumpy; any thread count works."""

import os
import subprocess
import sys
import textwrap

import pytest
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(src, grumpy_on, **extra):
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", **extra)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_faults_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(src))
    cmd = [sys.executable, "-m", "grumpy.run", path] if grumpy_on else [sys.executable, path]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("sig", ["SIGSEGV", "SIGBUS"])
def test_a_fault_signal_sent_with_kill_ends_the_process_as_without_grumpy(sig):
    """The handler returned and the signal was lost (the process went on)."""
    src = f"""
        import os, signal, numpy as np
        a = np.ones(1_000_000) * 2.0   # a pending array: the guard is installed
        os.kill(os.getpid(), signal.{sig})
        print("survived")
    """
    plain, under = run(src, False), run(src, True)
    assert plain.returncode < 0
    assert under.returncode == plain.returncode
    assert "survived" not in under.stdout


@pytest.mark.parametrize("threads", [65, 200])
def test_more_threads_than_partial_slots(threads):
    """Reductions split a single row into 4 * threads parts that were
    written into 256-entry arrays (hangs, SIGSEGV, heap corruption)."""
    src = """
        import numpy as np
        x = np.copy(np.linspace(0.0, 1.0, 3_000_000))
        ix = np.copy(np.arange(3_000_000, dtype=np.int64))
        print(float((x * 2.0).sum()), int((ix * 3).sum()), float((x + 1.0).max()), int(np.argmax(x * 1.0)),
              float(np.asarray(np.cumsum(x * 1.0))[-1]), float(np.asarray((x * 1.0).reshape(1000, 3000).sum(axis=0))[7]))
    """
    plain, under = run(src, False), run(src, True, GRUMPY_THREADS=str(threads))
    assert under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(), plain.stdout.split()
    assert got[1] == want[1] and got[2] == want[2] and got[3] == want[3]
    for g, w in zip(got, want):
        assert float(g) == pytest.approx(float(w), rel=1e-12)


def test_fork_while_another_thread_computes_leaves_the_child_usable():
    """A thread reading a pending array without the GIL (ctypes.memmove)
    holds grumpy's lock while the kernel runs; a fork() meanwhile gave a
    child whose first grumpy call waited forever for that lock."""
    src = """
        import ctypes, os, threading, time
        import numpy as np
        a = np.exp(np.sin(np.arange(60_000_000) * 1e-3)) + 1.0   # pending, ~0.5 s on one thread
        buf = ctypes.create_string_buffer(16)
        t = threading.Thread(target=lambda: ctypes.memmove(buf, np.ndarray.__dict__["ctypes"].__get__(a).data + a.nbytes - 16, 16))
        t.start()
        time.sleep(0.15)   # the reader is inside the kernel, without the GIL
        pid = os.fork()
        if pid == 0:
            b = np.ones(1_000_000) * 3.0
            os._exit(0 if float(b.sum()) == 3_000_000.0 else 3)
        deadline = time.time() + 30
        while True:
            r, st = os.waitpid(pid, os.WNOHANG)
            if r:
                print("child", os.waitstatus_to_exitcode(st))
                break
            if time.time() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                print("child hung")
                break
            time.sleep(0.01)
        t.join()
        print(float(np.frombuffer(buf.raw, dtype=np.float64)[-1]))
    """
    plain, under = run(src, False), run(src, True, GRUMPY_THREADS="1")
    assert under.returncode == 0, under.stderr[-2000:]
    assert under.stdout.split("\n")[0] == "child 0" == plain.stdout.split("\n")[0]
    assert float(under.stdout.split()[2]) == pytest.approx(float(plain.stdout.split()[2]), rel=1e-14)


def test_a_result_larger_than_memory_is_numpys_memory_error():
    """A 64 GiB broadcast result on a machine with less: NumPy raises
    MemoryError at the statement; grumpy recorded it (the inaccessible
    mapping was not charged) and died with SIGSEGV at the first read."""
    src = """
        import os
        import numpy as np
        n = 1
        while n * n * 8 < 4 * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"):
            n *= 2
        a, b = np.ones((n, 1)), np.ones((1, n))
        try:
            c = a + b
            print("made", float(c[0, 0]))
        except MemoryError as e:
            print("MemoryError")
        print(float((a + 1.0).sum()))
    """
    plain, under = run(src, False), run(src, True)
    assert plain.stdout.split("\n")[0] == "MemoryError"
    assert under.returncode == 0, under.stderr[-2000:]
    assert under.stdout == plain.stdout


def test_a_stack_overflow_still_gets_faulthandlers_traceback():
    """Without SA_ONSTACK grumpy's handler could not run on the overflowed
    stack and the process died without faulthandler's traceback."""
    src = """
        import faulthandler, sys
        faulthandler.enable()
        import numpy as np
        a = np.sqrt(np.arange(1_000_000) * 2.0)   # pending: the guard is in use
        print(float(a[7]), flush=True)            # computed inside a fault, on faulthandler's stack
        sys.setrecursionlimit(10**8)
        def f(n):
            return list(map(f, [n + 1]))
        f(0)
    """
    plain, under = run(src, False), run(src, True)
    assert plain.returncode == under.returncode == -11
    assert "Fatal Python error: Segmentation fault" in plain.stderr
    assert "Fatal Python error: Segmentation fault" in under.stderr and ' in f' in under.stderr
    assert under.stdout == plain.stdout


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_handler_installed_after_grumpys_does_not_hide_grumpys_faults(when):
    """A SIGSEGV handler that returns (Python's signal.signal, or one set
    from C) installed after grumpy's: every access to a pending array
    faulted again, forever."""
    src = f"""
        import ctypes, signal
        import numpy as np
        libc = ctypes.CDLL(None)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
        HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda sig: None)
        if "{when}" == "before":
            libc.signal(signal.SIGSEGV, ctypes.cast(HANDLER, ctypes.c_void_p))  # from C: no wrapper sees it
        a = np.sqrt(np.arange(1_000_000) * 2.0)
        if "{when}" == "after":
            signal.signal(signal.SIGSEGV, lambda *args: None)
        buf = ctypes.create_string_buffer(16)
        ctypes.memmove(buf, np.ndarray.__dict__["ctypes"].__get__(a).data + 8, 8)
        print(np.frombuffer(buf.raw[:8], dtype=np.float64)[0])
    """
    plain = run(src, False)
    env = gpcheck.subprocess_env()
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_faults_sig_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(src))
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off")
    try:
        under = subprocess.run([sys.executable, "-m", "grumpy.run", path], env=env, capture_output=True, text=True,
                               timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the access faulted forever")
    assert under.returncode == 0, under.stderr[-2000:]
    assert under.stdout == plain.stdout


def test_a_crash_while_another_thread_computes_is_not_held_up():
    """The handler took grumpy's lock before knowing whether a fault was
    grumpy's: a real crash waited for any kernel in flight (and deadlocked
    when the lock's holder waited for the crashing thread, as a product
    waits for an OpenBLAS worker).  Now a fault outside grumpy's buffers goes
    down the chain at once: the process dies before the kernel ends."""
    src = """
        import ctypes, sys, threading, time
        import numpy as np
        a = np.exp(np.sin(np.arange(150_000_000) * 1e-3)) + 1.0   # seconds on one thread
        buf = ctypes.create_string_buffer(16)
        def read():
            ctypes.memmove(buf, np.ndarray.__dict__["ctypes"].__get__(a).data, 16)   # computes a, holding grumpy's lock, without the GIL
            print("kernel done", flush=True)
        threading.Thread(target=read).start()
        time.sleep(0.3)
        print("crashing", flush=True)
        ctypes.memmove(ctypes.create_string_buffer(1), 8, 1)   # a real segmentation fault (GIL released), not grumpy's
    """
    r = run(src, True, GRUMPY_THREADS="1")
    assert r.returncode == -11, r.stderr[-2000:]
    assert r.stdout == "crashing\n"


def test_putting_the_guard_back_on_top_keeps_each_signals_previous_handler():
    """Reinstalled after signal.signal(SIGSEGV, ...), the guard also took
    SIGBUS's handler (faulthandler's) as its own previous handler: a real
    SIGBUS then lost faulthandler's traceback."""
    src = """
        import faulthandler, os, signal
        faulthandler.enable()
        import numpy as np
        a = np.sqrt(np.arange(1_000_000) * 2.0)
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        b = np.sqrt(np.arange(1_000_000) * 3.0)   # an allocation: the guard goes back on top
        print(float(a[3]), float(b[3]), flush=True)
        import ctypes
        ctypes.memmove(1, 2, 1) if False else os.kill(os.getpid(), signal.SIGBUS)
    """
    plain, under = run(src, False), run(src, True)
    assert plain.returncode == under.returncode == -7
    assert "Fatal Python error: Bus error" in plain.stderr
    assert "Fatal Python error: Bus error" in under.stderr
    assert under.stdout == plain.stdout


def test_index_arrays_and_assigned_values_are_computed_before_numpy_reads_them():
    """A pending mask or index array given to a[...] / a[...] = v was read by
    NumPy's C code and computed in the fault handler (2 faults here on
    4ea94ce); the hooks now compute it in the caller's context, where the
    kernel may compile, allocate and give warnings."""
    src = """
        import numpy as np, grumpy
        x = np.copy(np.linspace(-1, 1, 1_000_000))
        m = x * x > 0.25                     # pending bool mask
        i = (np.abs(x) * 10).astype(np.int64) # pending index array
        y = x[m]
        w = x[:-1][i[1:] > 5]
        x[m] = 0.0
        x[i[:10]] = x[:10] * 2.0             # pending value
        print(len(y), len(w), float(x.sum()), grumpy.stats()["guard_faults"])
    """
    plain, under = run(src, False, GRUMPY_MIN_BYTES="65536"), run(src, True, GRUMPY_MIN_BYTES="65536")
    assert plain.returncode == 0 and under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(), plain.stdout.split()
    assert got[3] == "0"
    assert got[:2] == want[:2]
    assert float(got[2]) == pytest.approx(float(want[2]), rel=1e-9, abs=1e-9)


def test_taking_the_data_pointer_computes_first():
    """.ctypes, __array_interface__ and __array_struct__ hand out the data
    pointer: the array is computed there, in the caller's context, so code
    reading through the pointer never meets a pending buffer in the fault
    handler (2 faults here before this change)."""
    src = """
        import ctypes, numpy as np, grumpy
        x = np.copy(np.linspace(0, 1, 1_000_000))
        y = x * 2.0 + 1.0
        p = y.ctypes.data
        a = list((ctypes.c_double * 2).from_address(p + 8 * 999_998))
        z = x * 3.0
        q = z.__array_interface__["data"][0]
        b = ctypes.c_double.from_address(q + 8 * 999_999).value
        w = x - 1.0
        cap = w.__array_struct__
        ww = np.asarray(memoryview(np.frombuffer(w, dtype=np.float64)))[-1]
        print(a, b, float(ww), grumpy.stats()["guard_faults"])
    """
    plain, under = run(src, False, GRUMPY_MIN_BYTES="65536"), run(src, True, GRUMPY_MIN_BYTES="65536")
    assert plain.returncode == 0 and under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(), plain.stdout.split()
    assert got[:-1] == want[:-1]
    assert got[-1] == "0"


FAULT_SRC = """
    import ctypes, json, threading, numpy as np, grumpy
    x = np.copy(np.linspace(0, 1, 1_000_000))
    y = np.exp(x * 2.0) + 1.0          # pending: its pages are inaccessible
    # the data pointer taken the way C code takes it (no hook sees it), read
    # on this thread, which holds the GIL, and on one that does not
    p = np.ndarray.__dict__["ctypes"].__get__(y).data
    a = ctypes.c_double.from_address(p + 8 * 999_999).value
    z = np.sin(x) * 3.0
    q = np.ndarray.__dict__["ctypes"].__get__(z).data
    out = ctypes.create_string_buffer(8)
    t = threading.Thread(target=lambda: ctypes.memmove(out, q + 8 * 123_456, 8))
    t.start(); t.join()
    b = ctypes.c_double.from_buffer(out).value
    s = grumpy.stats() if hasattr(grumpy, "stats") else {}
    print(repr(a), repr(b), json.dumps({k: s.get(k) for k in ("guard_faults", "guard_faults_inline", "kernels_launched")}))
"""


def test_a_fault_is_resolved_on_the_resolver_thread_not_in_the_signal_handler():
    """Issue 9 point 13: the handler planned, compiled (LLVM, file I/O,
    malloc) and ran kernels in signal context on the faulting thread.  Now
    it hands the address to the resolver thread and waits on a semaphore;
    nothing is resolved inline (fails before: no guard_faults_inline)."""
    plain, under = run(FAULT_SRC, False), run(FAULT_SRC, True, GRUMPY_MIN_BYTES="65536")
    assert plain.returncode == 0 and under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(maxsplit=2), plain.stdout.split(maxsplit=2)
    assert got[:2] == want[:2]
    import json

    s = json.loads(got[2])
    assert s["guard_faults"] == 2 and s["kernels_launched"] >= 2
    assert s["guard_faults_inline"] == 0


def test_what_cannot_be_compiled_is_computed_by_numpys_loops_on_the_resolver_not_in_the_handler():
    """Issue 9 point 13: every compile fails (GRUMPY_DEBUG_JIT_FAIL=1).  The
    faulting thread used to compute the buffer itself, inside its signal
    handler, with the NumPy evaluator (the GIL, Python): guard_faults_inline
    was 2.  Now the resolver thread computes it with NumPy's inner loops,
    called without Python (hooks/eval_loops.c): NumPy's values, nothing
    inline, two loop evaluations."""
    plain = run(FAULT_SRC.replace('"kernels_launched"', '"loop_evaluations"'), False)
    under = run(FAULT_SRC.replace('"kernels_launched"', '"loop_evaluations"'), True, GRUMPY_MIN_BYTES="65536",
                GRUMPY_DEBUG_JIT_FAIL="1")
    assert plain.returncode == 0 and under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(maxsplit=2), plain.stdout.split(maxsplit=2)
    assert got[:2] == want[:2]
    import json

    s = json.loads(got[2])
    assert s["guard_faults"] == 2 and s["guard_faults_inline"] == 0
    assert s["loop_evaluations"] == 2


def test_threads_the_resolver_starts_can_fault_on_guarded_memory():
    """Found by `make fuzz SEED=54` (GRUMPY_THREADS=8): the resolver thread
    computed a pending product, so the BLAS library started its thread pool
    from the resolver thread, and the workers inherited its signal mask with
    SIGSEGV blocked; NumPy's own product of a pending array on those workers
    later faulted with SIGSEGV blocked and the kernel killed the process."""
    src = """
        import numpy as np
        rng = np.random.default_rng
        x2 = rng(864358082).uniform(-4.0, 4.0, (129, 129)).astype(np.float32)
        x4 = rng(864358084).uniform(-100.0, 100.0, (2, 129, 129))
        v12 = np.matmul(np.add.accumulate(x4, axis=0), x2.cumsum(axis=1))
        print(float(np.asfortranarray(v12).sum()))   # a fault: the resolver computes the product
        x0 = rng(864358320).integers(-4, 5, (129, 129), dtype=np.int32)
        print(float(np.corrcoef(x0, rowvar=False).sum()))   # NumPy's product reads pending arrays
    """
    plain = run(src, False)
    for _ in range(3):
        under = run(src, True, GRUMPY_THREADS="8", GRUMPY_MIN_BYTES="65536")
        assert under.returncode == 0, under.stderr[-2000:]
        assert under.stdout == plain.stdout


@pytest.mark.parametrize("threads", ["2", "3"])
def test_numpys_own_threaded_product_of_a_pending_product_does_not_wait_forever(threads):
    """Found by `make fuzz SEED=56` (program 56005011): NumPy's ndarray.dot
    of a plain array and a pending grumpy product (no dispatch protocol
    sees it) faults inside the OpenBLAS thread pool NumPy and grumpy share;
    the resolver's product then waited for the pool's workers, which waited
    in the fault handler for the resolver.  Products computed to resolve a
    fault are now summed by grumpy on the resolver thread, never in
    OpenBLAS (gemm_calls stays 0: the fault computed the only product)."""
    src = """
        import json
        import numpy as np, grumpy
        x1 = np.random.default_rng(1).random((65, 128)) < 0.9
        v2 = np.asarray(np.random.default_rng(2).uniform(0.0, 4.0, (65, 128))) * 1.0
        v5 = np.tensordot(x1, v2, axes=([0], [0]))   # a pending product, (128, 128)
        v6 = x1.dot(v5.T)                            # NumPy's own dot reads it
        s = grumpy.stats()
        print(float(v6.sum()), s["guard_faults"] >= 1, s["gemm_calls"] == 0)
    """
    want = run(src.replace("import numpy as np, grumpy", "import numpy as np").replace(
        '        s = grumpy.stats()\n', '').replace('s["guard_faults"] >= 1, s["gemm_calls"] == 0', "True, True"), False)
    got = run(src, True, GRUMPY_THREADS=threads, GRUMPY_MIN_BYTES="65536")
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout == want.stdout


MASKED_WRITES_SRC = """
    import numpy as np
    r = np.random.default_rng(0)
    v0 = r.standard_normal((300, 400))
    d = np.copy(v0)
    g = d[::2, ::3]
    old_reader = g * 2
    mask = v0[::2, ::3] > 0.5
    mask = np.copy(mask)
    np.copyto(g, 7.0, where=mask)
    np.copyto(g, g.dtype.type(3), where=~mask & (g < -1))   # reads the pending first write
    print(float(np.asarray(g).sum()), float(np.asarray(old_reader).sum()), float(np.asarray(d).sum()))
"""


@pytest.mark.parametrize("evaluator", ["numpy", "loops"])
def test_a_failed_compile_that_reads_a_pending_write_gives_numpys_values(evaluator):
    """Found running the suite with every compile failing: a comparison that
    read memory a pending masked write had not written yet was computed by
    the NumPy evaluator, whose read faulted; the fault computed the
    comparison itself (a flush) under the evaluator, which then read its
    released inputs: SIGSEGV (rc 139 before the fix).  The evaluators now
    compute the pending writers of the memory they read first
    (gp_node_inputs_ready).  Both evaluators: NumPy's, and NumPy's inner
    loops without the GIL (GRUMPY_DEBUG_EVAL_LOOPS=1)."""
    extra = {"GRUMPY_DEBUG_EVAL_LOOPS": "1"} if evaluator == "loops" else {}
    plain = run(MASKED_WRITES_SRC, False)
    under = run(MASKED_WRITES_SRC, True, GRUMPY_MIN_BYTES="65536", GRUMPY_DEBUG_JIT_FAIL="1", **extra)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert under.returncode == 0, under.stderr[-2000:]
    if evaluator == "numpy":
        assert under.stdout == plain.stdout
    else:  # sums of strided views: NumPy's iterator order is not kept (DESIGN.md section 4)
        assert [float(v) for v in under.stdout.split()] == pytest.approx([float(v) for v in plain.stdout.split()],
                                                                          rel=1e-13)


LOOPS_SRC = """
    import hashlib, json, numpy as np, grumpy
    x = np.linspace(-3, 3, 120_000).reshape(300, 400)
    i = np.arange(120_000, dtype=np.int32).reshape(300, 400)
    r = [np.exp(x) * 2 + np.sin(x), (x * 3).sum(), (x + 1).sum(axis=0), (x + 1).sum(axis=1, keepdims=True),
         np.cumsum(x * 2, axis=1), np.cumprod(x[:, :5] * 0.5 + 1, axis=0), np.argmax(x * x, axis=1),
         np.argmin(np.cos(x)), np.where(x > 0, x, -x * 2), (i * 3 + 7) // 5 % 11, (x * 100).astype(np.int16),
         (i > 100).any(axis=0), np.maximum(x, 0.5).max(axis=0), np.clip(x * 2, -1, 1), np.power(i % 7, 3),
         (x.T * 2)[::3, 1:], np.sqrt(np.abs(x)).astype(np.float32) + np.float32(1), ((x > 0) & (x < 1)).sum(),
         np.mean(x * 2, axis=0), np.var(x + 1), (x * 2).min(axis=(0, 1)), np.cumsum(i * 2, axis=0)]
    y = x
    for k in range(40):                # one subgraph of 80 nodes (the evaluator's table grows)
        y = y * 1.0001 + 0.5
    r.append(y)
    m = x[:, :200] * 1.0               # products: strided and pending operands, inside a map
    prods = [(m.T * 2) @ (m[:, :150] + 1), np.exp(m @ m.T[:, :100] * 1e-3)]
    for v in r:
        v = np.asarray(v)
        print(v.dtype, v.shape, hashlib.sha1(np.ascontiguousarray(v).tobytes()).hexdigest())
    # a product's rounding depends on the BLAS library's threads and blocking: compared within 1e-12
    print("products", *[repr(float(np.asarray(v).sum())) for v in prods])
    s = grumpy.stats() if hasattr(grumpy, "stats") else {}
    print(json.dumps({k: s.get(k) for k in ("loop_evaluations", "plan_failures", "kernels_launched")}))
"""


def test_numpys_loops_without_the_gil_give_numpys_values_bit_for_bit():
    """hooks/eval_loops.c, what the resolver thread computes with when a
    kernel cannot be compiled, run on the main thread for every computation
    (GRUMPY_DEBUG_JIT_FAIL=1 GRUMPY_DEBUG_EVAL_LOOPS=1): maps, casts, where,
    clip, sums (NumPy's pairwise order), other reductions over every axis,
    argmin / argmax, scans, views: every value is NumPy's, bit for bit; and
    matrix products with strided and pending operands, within 1e-12 (BLAS
    rounding depends on its threads).  No kernel ran, and every failed plan
    was computed by the loop evaluator."""
    import json

    plain = run(LOOPS_SRC, False)
    under = run(LOOPS_SRC, True, GRUMPY_MIN_BYTES="65536", GRUMPY_DEBUG_JIT_FAIL="1", GRUMPY_DEBUG_EVAL_LOOPS="1")
    assert plain.returncode == 0 and under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.splitlines(), plain.stdout.splitlines()
    assert got[:-2] == want[:-2]
    assert [float(v) for v in got[-2].split()[1:]] == pytest.approx([float(v) for v in want[-2].split()[1:]],
                                                                     rel=1e-12)
    s = json.loads(got[-1])
    assert s["loop_evaluations"] >= 20 and s["kernels_launched"] == 0
    # every failed plan was computed by the loop evaluator, none handed on to the NumPy evaluator
    assert s["loop_evaluations"] == s["plan_failures"]


def test_a_child_after_fork_resolves_faults_on_its_own_resolver_thread():
    """The resolver thread does not come over fork(): the child's first
    faults were resolved inline, in the signal handler (guard_faults_inline
    1 before).  The child now starts its own resolver in its fork handler."""
    src = """
        import ctypes, json, os, numpy as np, grumpy
        x = np.copy(np.linspace(0, 1, 1_000_000))
        y = np.exp(x * 2.0) + 1.0          # pending, inaccessible, when the process forks
        p = np.ndarray.__dict__["ctypes"].__get__(y).data
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            v = ctypes.c_double.from_address(p + 8 * 999_999).value
            s = grumpy.stats() if hasattr(grumpy, "stats") else {}
            os.write(w, (repr(v) + " " + json.dumps({k: s.get(k) for k in ("guard_faults", "guard_faults_inline")})).encode())
            os._exit(0)
        os.close(w)
        out = os.read(r, 4096).decode()
        os.waitpid(pid, 0)
        print(out)
    """
    import json

    plain, under = run(src, False), run(src, True, GRUMPY_MIN_BYTES="65536")
    assert plain.returncode == 0 and under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(maxsplit=1), plain.stdout.split(maxsplit=1)
    assert got[0] == want[0]
    s = json.loads(got[1])
    assert s["guard_faults"] == 1 and s["guard_faults_inline"] == 0


def test_without_a_resolver_thread_nothing_is_deferred():
    """The resolver thread's start is a failable step (the first one, at
    enable).  When it fails nothing may be left pending behind a guard that
    no thread could resolve: results are computed at once (no faults), and
    C code reading them sees NumPy's values."""
    import json

    src = FAULT_SRC.replace('"kernels_launched"', '"loop_evaluations"')
    plain = run(src, False)
    under = run(src, True, GRUMPY_MIN_BYTES="65536", GRUMPY_DEBUG_FAIL="1")
    normal = run(src, True, GRUMPY_MIN_BYTES="65536")
    assert plain.returncode == 0 and under.returncode == 0 and normal.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(maxsplit=2), plain.stdout.split(maxsplit=2)
    assert got[:2] == want[:2]
    assert json.loads(got[2])["guard_faults"] == 0
    assert json.loads(normal.stdout.split(maxsplit=2)[2])["guard_faults"] == 2


def test_a_product_the_planner_hands_to_numpy_is_computed_for_a_fault_without_the_gil():
    """From the fuzzer with every compile failing and the loop evaluator
    aborting on any failure (seed 63): a batched product of 1x1 matrices
    over new axes (stride 0) is refused by the BLAS layout check, so off a
    fault the planner hands it to the NumPy evaluator.  Read by C code, the
    resolver thread computes it with the fault-time product (k-order sums,
    no layout check, no OpenBLAS, no GIL): NumPy's values, nothing inline."""
    import json

    src = """
        import ctypes, json, numpy as np, grumpy
        x = np.copy(np.linspace(-3, 3, 120_000)).reshape(300, 400)
        r = x[..., None][..., None] @ x[..., None, None]
        p = np.ndarray.__dict__["ctypes"].__get__(r).data
        out = ctypes.create_string_buffer(8)
        ctypes.memmove(out, p + 8 * 77_777, 8)
        v = ctypes.c_double.from_buffer(out).value
        s = grumpy.stats() if hasattr(grumpy, "stats") else {}
        print(repr(v), repr(float(np.asarray(r).sum())),
              json.dumps({k: s.get(k) for k in ("guard_faults", "guard_faults_inline")}))
    """
    plain = run(src, False)
    under = run(src, True, GRUMPY_MIN_BYTES="65536", GRUMPY_DEBUG_JIT_FAIL="1")
    assert plain.returncode == 0 and under.returncode == 0, under.stderr[-2000:]
    got, want = under.stdout.split(maxsplit=2), plain.stdout.split(maxsplit=2)
    assert got[:2] == want[:2]
    s = json.loads(got[2])
    assert s["guard_faults"] >= 1 and s["guard_faults_inline"] == 0


@pytest.mark.parametrize("env", [{}, {"GRUMPY_DEBUG_JIT_FAIL": "1"},
                                 {"GRUMPY_DEBUG_JIT_FAIL": "1", "GRUMPY_DEBUG_EVAL_LOOPS": "1"}],
                         ids=["kernels", "numpy-evaluator", "numpy-loops"])
def test_an_in_place_chain_split_into_kernels_reads_its_old_values(env):
    """p += pi[:, None] * c[k] twelve times (scipy's KroghInterpolator
    evaluating a polynomial, its test_int_inputs under capture at every
    size): one kernel would need more than 48 operands, so the chain's
    early writes are computed apart (a kernel split), reading p's values
    from before the chain while p's buffer is inaccessible for the chain's
    last, pending write.  The kernel faulted on it, and resolving the fault
    computed that write again: SIGSEGV.  Now such leaves read a copy of the
    buffer's contents (plan.c read_inaccessible_leaves).  With every compile
    failing, NumPy's evaluator and its inner loops computed the parts: their
    readiness walk computed that pending write first, whose input the part
    was, again and again (a stack overflow); now they read the old values
    through a copy as well (gp_leaf_unreadable)."""
    src = """
        import numpy as np
        def krogh(x, c, n):
            pi = 1
            p = np.zeros((len(x), 1))
            p += c[0, np.newaxis, :]
            for k in range(1, n):
                w = x - x[k - 1]
                pi = w * pi
                p += pi[:, np.newaxis] * c[k]
            return p
        x = np.arange(20000) * 3
        c = np.linspace(1.0, 2.0, 14).reshape(14, 1)
        p = krogh(x, c, 13)
        print(p.tobytes().hex()[:64], float(p.sum()))
        try:
            import grumpy
            s = grumpy.stats()
            print("splits", s["kernel_splits"] > 0, "plan_failures", s["plan_failures"], file=__import__("sys").stderr)
        except ImportError:
            pass
    """
    plain, got = run(src, False), run(src, True, GRUMPY_MIN_BYTES="65536", **env)
    assert plain.returncode == 0, plain.stderr
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout == plain.stdout
    assert "splits True plan_failures " + ("0" if not env else "") in got.stderr, got.stderr


def test_an_off_by_one_access_next_to_a_guarded_buffer_goes_on_as_with_malloc():
    """C code that reads the element before an array or writes the one
    past its end (scikit-learn 1.9's MAE criterion reads
    `left_medians[pos - 1]` at pos 0) goes on under NumPy, whose malloc
    puts a header before each block and neighbours after it.  A guarded
    buffer is a mapping of its own, often with nothing mapped next to it:
    the process died of SIGSEGV (`sklearn.tree`'s suite at every size).  A
    page of zeros is mapped where such an access lands
    (`guard_scratch_pages`), and the program goes on."""
    src = """
        import ctypes, numpy as np, grumpy
        def unmapped(addr):
            for line in open("/proc/self/maps"):
                lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
                if lo <= addr < hi:
                    return 0
            return 1
        a = np.ones(1 << 20)                     # 8 MiB: a guarded mapping of its own
        p = a.ctypes.data
        free_before, free_after = unmapped(p - 8), unmapped(p + a.nbytes)
        before = ctypes.c_double.from_address(p - 8).value
        ctypes.c_double.from_address(p + a.nbytes).value = 5.0
        after = ctypes.c_double.from_address(p + a.nbytes).value
        b = a * 2.0 + 1.0
        print(free_before, free_after, before, after, float(b.sum()), grumpy.stats()["guard_scratch_pages"])
    """
    under = run(src, True)
    assert under.returncode == 0, under.stderr[-2000:]
    free_before, free_after, before, after, total, pages = under.stdout.split()
    # meaningful only where a neighbouring page was unmapped (an 8 MiB
    # mapping starts on a huge page, its trimmed surroundings free)
    assert int(free_before) + int(free_after) >= 1
    assert int(pages) == int(free_before) + int(free_after)
    if int(free_before):
        assert float(before) == 0.0
    assert float(after) == 5.0
    assert float(total) == 3.0 * (1 << 20)
