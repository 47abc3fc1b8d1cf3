"""Issue "never slower", do no harm adaptively (hooks/sites.c): a call site
whose results are computed by kernels of their own -- nothing fused, below
4 MiB -- is NumPy's at once after two such launches, as results below
GRUMPY_MIN_BYTES are; a site whose results fuse stays captured; the 16th
operation at an eager site is recorded anyway (a probe), then the 48th,
the 112th, ... (the wait doubles), and one that fuses makes the site
captured again.  Values are NumPy's either way."""

import os
import subprocess
import sys

import numpy as np
import pytest

import grumpy
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
N = 131072  # 1 MiB of float64: above the tests' 64 KiB threshold, below 4 MiB


@pytest.fixture(autouse=True)
def adaptive():
    """The rule on for these tests (conftest turns it off for the rest:
    the sites learn nothing from them, so a warning other tests replayed at
    a line inside NumPy -- ``_methods.py``'s ``umr_sum``, the innermost
    frame of every ``.sum()`` -- does not make these tests' sums NumPy's)."""
    before = grumpy.config()["adaptive"]
    grumpy.config(adaptive=True)
    yield
    grumpy.config(adaptive=before)


def plain(x):
    return np.asarray(x).view(np.ndarray)


def operands():
    return np.copy(np.linspace(0, 1, N)), np.copy(np.linspace(1, 2, N))


def lone_sum(a, b):
    c = a + b  # the site under test: computed alone, read at once
    return float(c[7])


def delta(before):
    s = grumpy.stats()
    return {k: s[k] - before[k] for k in ("kernels_launched", "ops_eager_site", "ops_captured", "extra_outputs")}


@pytest.mark.cpu_backend
def test_a_site_whose_results_run_alone_becomes_numpys():
    a, b = operands()
    want = float(plain(a)[7] + plain(b)[7])
    s0 = grumpy.stats()
    got = [lone_sum(a, b) for _ in range(202)]
    d = delta(s0)
    assert got == [want] * 202
    # two lone launches teach the site; of the 200 calls after, the 16th,
    # 48th and 112th are recorded anyway (probes, waits doubling: the next
    # is the 240th): 2 + 3 kernels, 197 calls NumPy's at once
    assert d["kernels_launched"] == 5, d
    assert d["ops_eager_site"] == 197, d
    sites = grumpy.stats()["adaptive_sites"]
    line = lone_sum.__code__.co_firstlineno + 1
    entry = sites[f"{__file__}:{line} ADD"]
    assert entry["lone"] >= 5 and entry["fused"] == 0 and entry["eager"] >= 197
    assert "nothing fused" in entry["reason"]


def fused_chain(a, b):
    c = a + b  # fused into the next line's kernel: stays captured
    d = c * 2.0 - a
    return float(d[5])


@pytest.mark.cpu_backend
def test_a_site_whose_results_fuse_stays_captured():
    a, b = operands()
    want = float((plain(a)[5] + plain(b)[5]) * 2.0 - plain(a)[5])
    s0 = grumpy.stats()
    got = [fused_chain(a, b) for _ in range(20)]
    d = delta(s0)
    assert got == [want] * 20
    assert d["kernels_launched"] == 20 and d["ops_eager_site"] == 0, d
    assert d["ops_captured"] == 60


def sometimes_fused(a, b, fuse):
    c = a + b  # alone, until a probe finds it fused
    if fuse:
        c = c * 3.0
    return float(c[3])


@pytest.mark.cpu_backend
def test_a_probe_that_fuses_makes_the_site_captured_again():
    a, b = operands()
    for _ in range(18):  # taught alone; the 16th eager call is a probe
        sometimes_fused(a, b, False)
    # calls until the next probe (the 48th), which fuses: the site is
    # captured from then on
    for _ in range(32):
        sometimes_fused(a, b, True)
    mid = grumpy.stats()
    got = [sometimes_fused(a, b, False) for _ in range(5)]
    d = delta(mid)
    assert got == [float(plain(a)[3] + plain(b)[3])] * 5
    line = sometimes_fused.__code__.co_firstlineno + 1
    entry = mid["adaptive_sites"][f"{__file__}:{line} ADD"]
    assert entry["fused"] >= 1, entry
    assert d["ops_eager_site"] == 0 and d["kernels_launched"] == 5, d


def lone_remainder(x):
    r = x % 7  # computed alone, but the kernel multiplies where NumPy divides
    return int(r[11])


@pytest.mark.cpu_backend
def test_an_integer_remainder_by_a_constant_stays_captured_alone():
    x = np.copy(np.arange(N, dtype=np.int16) - 5000)
    s0 = grumpy.stats()
    got = [lone_remainder(x) for _ in range(20)]
    d = delta(s0)
    assert got == [int(plain(x)[11] % 7)] * 20
    # NumPy's loop divides at each element (int16 x % 7 over 2M: 12.8 ms
    # against the kernel's 0.6 ms): the site counts as gaining, never eager
    assert d["kernels_launched"] == 20 and d["ops_eager_site"] == 0, d


PROGRAM = """
import numpy as np, grumpy
a = np.copy(np.linspace(0, 1, 131072)); b = np.copy(np.linspace(1, 2, 131072))
for _ in range(10):
    c = a + b
    c[0]
s = grumpy.stats()
print(s["ops_eager_site"], s["kernels_launched"])
"""


@pytest.mark.parametrize("env,want", [({}, "8 2"), ({"GRUMPY_ADAPTIVE": "0"}, "0 10"),
                                      ({"GRUMPY_MIN_BYTES": "0"}, "0 10")])
def test_the_rule_is_on_by_default_and_off_when_asked_or_capturing_every_size(env, want, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(PROGRAM)
    e = gpcheck.subprocess_env()
    # kernels compile on the caller (GRUMPY_FIRST_LAUNCH_MS=0): the rule is judged on kernels launched
    e.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_FIRST_LAUNCH_MS="0", **env)
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=e, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[-2] == want


def product_sum(a, b):
    return float((a * b).sum())  # the product is a temporary: only the method call holds it


def named_product_sum(a, b):
    c = a * b  # the product's array is alive while summed
    return float(c.sum())


def function_product_sum(a, b):
    return float(np.sum(a * b))  # a temporary, held by NumPy's frames too


def function_named_product_sum(a, b):
    c = a * b
    return float(np.sum(c))


def forty_product_sums(fn):
    """fn(a, b) 40 times on fresh operands, each NumPy's multiply-sum; the
    counters' change, and fn's MULTIPLY site entry (or lone 0)."""
    a, b = operands()
    want = float(np.multiply(plain(a), plain(b)).sum())
    s0 = grumpy.stats()
    got = [fn(a, b) for _ in range(40)]
    d = delta(s0)
    assert got == [pytest.approx(want, rel=1e-15)] * 40
    line = fn.__code__.co_firstlineno + 1  # the multiply
    return d, grumpy.stats()["adaptive_sites"].get(f"{__file__}:{line} MULTIPLY", {"lone": 0})


@pytest.mark.cpu_backend
def test_the_product_of_a_temporary_sum_is_fused_and_not_written():
    """(a*b).sum(): the product's array is held by the method call alone,
    so the map-reduce kernel does not write it (GpNode.output_deferred):
    fused, one pass over a and b, and the site stays captured."""
    d, entry = forty_product_sums(product_sum)
    assert d["kernels_launched"] == 40 and d["ops_eager_site"] == 0 and d["extra_outputs"] == 0, d
    assert entry["lone"] == 0


@pytest.mark.cpu_backend
def test_np_sum_of_a_temporary_is_fused_and_not_written():
    """np.sum(a * b): NumPy's np.sum calls the product's method from frames
    of its own, which hold references, so only __array_function__ can see
    that the caller's stack holds the product's only one
    (gp_measure_temporary_refs).  Before, the kernel wrote the product out
    and the site was taught as a lone one: NumPy's multiply and sum
    after two launches (particle_filter's np.sum(w * particles))."""
    d, entry = forty_product_sums(function_product_sum)
    assert d["kernels_launched"] == 40 and d["ops_eager_site"] == 0 and d["extra_outputs"] == 0, d
    assert entry["lone"] == 0


@pytest.mark.cpu_backend
def test_np_sum_of_a_named_array_writes_it_and_it_reads_right():
    """c = a * b; np.sum(c): c is alive, one reference more than a
    temporary: written by the kernel, as the method's form is."""
    a, b = operands()
    c = a * b
    s0 = grumpy.stats()
    s = float(np.sum(c))
    d = delta(s0)
    assert d["kernels_launched"] == 1 and d["extra_outputs"] == 1, d
    want = np.multiply(plain(a), plain(b))
    assert np.array_equal(plain(c), want) and s == pytest.approx(float(want.sum()), rel=1e-15)
    d, entry = forty_product_sums(function_named_product_sum)
    assert entry["lone"] >= 2 and d["extra_outputs"] >= 2, (d, entry)


@pytest.mark.cpu_backend
@pytest.mark.parametrize("fn", ["mean", "max", "min", "prod", "amax", "all"])
def test_other_reductions_of_a_temporary_are_not_written(fn):
    a, b = operands()
    f = getattr(np, fn)
    arg = (lambda: a * b) if fn != "all" else (lambda: a < b)
    with grumpy.disabled():
        want = f(np.multiply(plain(a), plain(b))) if fn != "all" else f(plain(a) < plain(b))
    s0 = grumpy.stats()
    got = f(arg())
    d = delta(s0)
    assert d["kernels_launched"] == 1 and d["extra_outputs"] == 0, d
    assert got == pytest.approx(want, rel=1e-15)


@pytest.mark.cpu_backend
def test_the_sum_of_a_view_of_a_live_array_writes_the_array_once():
    """y[...] held by the call alone is still a view of y, which is alive:
    the reduction writes y as it goes, and reading y later computes
    nothing again (one kernel, not two)."""
    a, b = operands()
    y = a * b
    s0 = grumpy.stats()
    s = float(y[...].sum())
    first = float(y[5])
    d = delta(s0)
    assert d["kernels_launched"] == 1 and d["extra_outputs"] == 1, d
    want = np.multiply(plain(a), plain(b))
    assert s == pytest.approx(float(want.sum()), rel=1e-15) and first == float(want[5])


@pytest.mark.cpu_backend
def test_a_map_written_out_only_to_be_reduced_counts_as_alone():
    """c = a*b; c.sum(): the map-reduce kernel must write c too (its array
    is alive), so fusion saves one read of it, and at 1 MiB the kernel and
    its staged output cost 1.45x NumPy's multiply and sum (tools/overhead.py
    "reduce", before temporaries were left unwritten).  The multiply's site
    is taught as a lone one: after two launches NumPy computes the product,
    and then its sum (a computed operand with a scalar result)."""
    d, entry = forty_product_sums(named_product_sum)
    # 2 teaching launches and one probe (the 16th eager call)
    assert d["kernels_launched"] == 3 and d["ops_eager_site"] == 37, d
    assert entry["lone"] == 3 and entry["fused"] == 0


@pytest.mark.parametrize("how", ["sum", "max", "argmin", "mean", "sum0"])
def test_a_computed_array_reduced_to_a_small_result_is_numpys(how):
    """Nothing fuses into the reduction of a computed array, and a small
    result is wanted at once: the kernel (one pairwise leaf per call) was
    1.1-2.1x NumPy's time for x.sum() of 1-64 MiB.  With the rule on, NumPy
    computes it.  With the rule off (the rest of the suite), a pending
    operand is one fused map-reduce kernel and so is a computed one."""
    x = np.copy(np.linspace(-1.0, 1.0, 262144)).reshape(2048, 128)  # 2 MiB
    xp = np.asarray(x).view(np.ndarray)
    f = {"sum": lambda v: v.sum(), "max": lambda v: v.max(), "argmin": lambda v: v.argmin(),
         "mean": lambda v: v.mean(), "sum0": lambda v: v.sum(axis=0)}[how]
    s0 = grumpy.stats()
    got = f(x)
    s1 = grumpy.stats()
    assert np.array_equal(np.asarray(got), f(xp))
    assert s1["kernels_launched"] == s0["kernels_launched"]
    # the rule off (x * 2.0 alive while reduced would teach its line too)
    grumpy.config(adaptive=False)
    fused = f(x * 2.0)
    s2 = grumpy.stats()
    assert np.array_equal(np.asarray(fused), f(xp * 2.0))
    assert s2["kernels_launched"] == s1["kernels_launched"] + 1
    assert np.array_equal(np.asarray(f(x)), f(xp))
    assert grumpy.stats()["kernels_launched"] == s2["kernels_launched"] + 1


@pytest.mark.cpu_backend
def test_write_into_a_small_part_of_a_large_buffer_is_numpys():
    """A lazy write stages its whole buffer (the old contents copied): one
    column of a 12-column matrix would move 12x the bytes it writes, so
    NumPy writes it, its value computed first; a write covering the buffer
    stays lazy.  Values are NumPy's either way."""
    m = np.copy(np.linspace(0, 1, 120_000 * 12).reshape(120_000, 12))
    want = plain(m).copy()
    v = np.copy(np.linspace(2, 3, 120_000))
    for j, write in enumerate([lambda x, c: x.__setitem__((slice(None), c), v * 2),
                               lambda x, c: np.multiply(x[:, c], 3.0, out=x[:, c])]):
        write(m, j)
        write(want, j)
        launched = grumpy.stats()["kernels_launched"]
        assert float(m[0, j]) == want[0, j]  # already written: no kernel now
        assert grumpy.stats()["kernels_launched"] == launched
    np.testing.assert_array_equal(plain(m), want)
    whole = np.copy(np.linspace(0, 1, 4 * N))
    whole[...] = v[0] * whole + 1.0  # the whole buffer: a lazy write
    launched = grumpy.stats()["kernels_launched"]
    float(whole[5])
    assert grumpy.stats()["kernels_launched"] == launched + 1
