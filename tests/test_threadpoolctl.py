"""threadpoolctl governs grumpy's kernel thread pool (grumpy/_threadpool.py):
threadpool_info() lists it, threadpool_limits() sets it -- for every API or
user_api="grumpy" -- and gives the previous count back when the block ends;
under threadpool_limits(1) a fused loop keeps one core busy."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import grumpy

threadpoolctl = pytest.importorskip(
    "threadpoolctl", reason="threadpoolctl is not installed: nothing to govern grumpy's pool with")
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 180


def pool():
    return grumpy.stats()["threads"]


def info(user_api):
    return [i for i in threadpool_info() if i["user_api"] == user_api]


@pytest.fixture
def three_threads():
    """The pool at 3 threads (a count no limit below sets), given back after."""
    before = pool()
    grumpy._grumpy.set_threads(3)
    try:
        yield 3
    finally:
        grumpy._grumpy.set_threads(before)


from test_config import env_with  # noqa: E402  (the same child environment)


def python(code, env=None):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env or env_with(),
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_info_lists_grumpy():
    (entry,) = info("grumpy")
    assert entry["internal_api"] == "grumpy"
    assert entry["prefix"] == "_grumpy"
    assert entry["num_threads"] == pool() >= 1
    assert entry["version"] == grumpy.__version__
    assert os.path.realpath(entry["filepath"]) == os.path.realpath(grumpy._grumpy.__file__)


def test_limits_every_api(three_threads):
    blas_before = [i["num_threads"] for i in info("blas")]
    with threadpool_limits(1):
        assert pool() == 1
        assert info("grumpy")[0]["num_threads"] == 1
        assert all(i["num_threads"] == 1 for i in info("blas"))
    assert pool() == three_threads
    assert info("grumpy")[0]["num_threads"] == three_threads
    assert grumpy.config()["threads"] == three_threads


def test_limits_grumpy_only(three_threads):
    with threadpool_limits(1, user_api="grumpy") as limiter:
        assert pool() == 1
        assert limiter.get_original_num_threads() == {"grumpy": three_threads}
    assert pool() == three_threads
    with threadpool_limits(limits={"grumpy": 2}):
        assert pool() == 2
    assert pool() == three_threads


def test_other_apis_leave_the_pool(three_threads):
    with threadpool_limits(1, user_api="blas"):
        assert pool() == three_threads


@pytest.mark.cpu_backend
def test_blas_keeps_its_own_count(three_threads):
    """grumpy's set_threads also sets the OpenBLAS it calls; under
    threadpoolctl each API keeps its own count, whatever the order in which
    the libraries are listed."""
    import numpy as np

    before = grumpy.stats()["gemm_calls"]
    m = np.ones((512, 512))
    assert float((m @ m + 1.0)[0, 0]) == 513.0
    assert grumpy.stats()["gemm_calls"] > before  # grumpy has loaded and set its OpenBLAS
    blas = [i["num_threads"] for i in info("blas")]
    assert blas
    with threadpool_limits(1, user_api="grumpy"):
        assert pool() == 1
        assert [i["num_threads"] for i in info("blas")] == blas
    with threadpool_limits(1, user_api="blas"):
        with threadpool_limits(2, user_api="grumpy"):
            assert pool() == 2
            assert all(i["num_threads"] == 1 for i in info("blas"))
        assert all(i["num_threads"] == 1 for i in info("blas"))
        assert pool() == three_threads
    assert [i["num_threads"] for i in info("blas")] == blas
    assert pool() == three_threads


def test_nested_limits_and_decorator(three_threads):
    with threadpool_limits(2, user_api="grumpy"):
        with threadpool_limits(1):
            assert pool() == 1
        assert pool() == 2
    assert pool() == three_threads

    @threadpool_limits.wrap(limits=1, user_api="grumpy")
    def inside():
        return pool()

    assert inside() == 1
    assert pool() == three_threads


def test_limited_pool_still_computes():
    import numpy as np

    a = np.arange(1 << 17, dtype=np.float64)
    before = grumpy.stats()["kernels_launched"]
    with threadpool_limits(1):
        got = float(((a * 0.5 + 2.0) * a - a).sum())
    assert grumpy.stats()["kernels_launched"] > before
    x = np.asarray(a).view(np.ndarray)
    assert got == pytest.approx(float(((x * 0.5 + 2.0) * x - x).sum()), rel=1e-12)


@pytest.mark.parametrize("order", ["threadpoolctl first", "grumpy first"])
def test_registered_either_import_order(order):
    """Registered whether threadpoolctl is imported before enable() or after
    it (the import hook), and enable() itself never imports threadpoolctl."""
    first = "import threadpoolctl" if order == "threadpoolctl first" else ""
    r = python(f"""
        import sys, json
        {first}
        import grumpy, numpy
        grumpy.enable()
        imported_by_enable = "threadpoolctl" in sys.modules and not {bool(first)}
        import threadpoolctl
        apis = [i["user_api"] for i in threadpoolctl.threadpool_info()]
        print(json.dumps([imported_by_enable, apis]))
    """)
    assert r.returncode == 0, r.stderr
    imported_by_enable, apis = json.loads(r.stdout.strip().splitlines()[-1])
    assert not imported_by_enable
    assert apis.count("grumpy") == 1


@pytest.mark.cpu_backend
def test_limit_one_keeps_one_core_busy():
    """A fused loop on 8M-element arrays: CPU time / wall time <= 1.25 under
    threadpool_limits(1) (one thread computing, no other pool spinning).
    The unlimited ratio is printed, not asserted: on a machine whose other
    cores are busy it is near 1 too."""
    r = python("""
        import json, time
        import grumpy
        grumpy.enable()
        import numpy as np
        from threadpoolctl import threadpool_limits

        n = 8_000_000
        a = np.random.rand(n)
        b = np.random.rand(n)

        def loop():
            s = 0.0
            for _ in range(20):
                s += float(((a * b + 2.0) * a - b).sum())
            return s

        def measure():
            k0 = grumpy.stats()["kernels_launched"]
            c0, w0 = time.process_time(), time.perf_counter()
            loop()
            c1, w1 = time.process_time(), time.perf_counter()
            return (c1 - c0) / (w1 - w0), grumpy.stats()["kernels_launched"] - k0, grumpy.stats()["threads"]

        loop()  # compiles the kernel
        unlimited = measure()
        with threadpool_limits(1):
            limited = measure()
        print(json.dumps({"unlimited": unlimited, "limited": limited}))
    """)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    (ratio_free, launched_free, threads_free), (ratio_one, launched_one, threads_one) = got["unlimited"], got["limited"]
    print(f"CPU/wall: unlimited {ratio_free:.3f} ({threads_free} threads), "
          f"threadpool_limits(1) {ratio_one:.3f} ({threads_one} thread)")
    assert launched_one > 0 and launched_free > 0, "the loop was not captured"
    assert threads_one == 1
    assert ratio_one <= 1.25
