"""Views of pending arrays are index transforms folded into the consumer's
kernel (issue: views as lazy index transforms): the view's index map is
pushed through the producer's map subgraph into its leaves, so no copy and
no separate kernel is made, and the values are NumPy's bits."""

import subprocess
import sys

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, counters, plain, subprocess_env

R = np.random.default_rng(7)
A = R.standard_normal((300, 400))
B = R.standard_normal(400)


def g(x):
    return grumpy._ext().as_grumpy(np.array(x, copy=True))


VIEW_PROGRAMS = {
    "slice-step": lambda a, b: (a * 2 + b)[::-3, 1:] + 1,
    "negative-steps": lambda a, b: (a * 2 + b)[::-1, ::-2] * 3,
    "transpose": lambda a, b: (a + b).T * 2,
    "stencil": lambda a, b: (lambda u: u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])(a * a),
    "newaxis": lambda a, b: (b * 2)[None, :] + a,
    "reshape-split": lambda a, b: (a + 1).reshape(300, 20, 20)[:, 3:, ::-1] * 2,
    "broadcast_to": lambda a, b: np.broadcast_to(b * 3, (300, 400)) + a,
    "flip": lambda a, b: np.flip(a * 2 - b, axis=1) / 3,
    "swapaxes": lambda a, b: np.swapaxes((a + 1).reshape(30, 10, 400), 0, 2) * 2,
    "moveaxis": lambda a, b: np.moveaxis((a - b).reshape(30, 10, 400), 2, 0) + 1,
    "expand-squeeze": lambda a, b: np.squeeze(np.expand_dims(a * b, 0), 0) * 2,
    "view-of-view": lambda a, b: ((a + b)[::2] * 2)[::-1, 5:-5].T + 1,
    "ellipsis": lambda a, b: (a * 3)[..., ::4] - 1,
}


@pytest.mark.parametrize("name", VIEW_PROGRAMS)
def test_view_of_pending_is_one_kernel(name):
    fn = VIEW_PROGRAMS[name]
    a, b = g(A), g(B)
    launched0, fallbacks0 = counters()
    got = fn(a, b)
    assert grumpy.is_pending(got)
    got = plain(got)
    launched1, fallbacks1 = counters()
    assert launched1 - launched0 == 1, "the producer was computed separately"
    assert fallbacks1 == fallbacks0
    assert_same(got, fn(A, B))


def test_view_keeps_numpy_relationships_and_producer_array():
    a = g(A)
    p = a * 2 + 1  # pending
    v = p[::2, 1:]
    assert v.base is p and np.shares_memory(v, p)
    w = v * 10  # reads the view lazily
    assert grumpy.is_pending(p)
    assert_same(w, (A * 2 + 1)[::2, 1:] * 10)
    assert_same(p, A * 2 + 1)  # the producer's own array is still NumPy's values
    v[0, 0] = 5.0  # a write through the view is visible in the base
    assert plain(p)[0, 1] == 5.0


def test_views_that_cross_dims_compute_the_producer():
    """A ravel of a 2-D result cannot be an index map of its dims: the
    producer is computed and the view read as memory (2 kernels)."""
    a = g(A)
    launched0, _ = counters()
    got = plain((a + 1).ravel()[::7] * 2)
    launched1, _ = counters()
    assert launched1 - launched0 == 2
    assert_same(got, (A + 1).ravel()[::7] * 2)


def test_stencil_on_pending_array_recomputes_instead_of_storing():
    """Each shifted view of u = a * a is computed from a in the same kernel:
    bytes moved are the reads of a (five shifted views) and one write."""
    a = g(A)
    before = grumpy.stats()
    u = a * a
    s = plain(u[1:-1, 1:-1] + u[:-2, 1:-1] + u[2:, 1:-1])
    after = grumpy.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert grumpy.is_pending(u)
    assert_same(s, (A * A)[1:-1, 1:-1] + (A * A)[:-2, 1:-1] + (A * A)[2:, 1:-1])


def srgb_luminance(c):
    """A costly producer: a power per channel, then a weighted sum."""
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * lin[..., 0] + 0.7152 * lin[..., 1] + 0.0722 * lin[..., 2]


def test_views_of_a_costly_producer_read_it_once_computed():
    """Recomputation through views is priced: u = a * a above is cheaper
    to recompute per tap than to store, but a luminance with a power per
    channel read through twelve Sobel taps was recomputed twelve times
    (0.1-0.2x NumPy's speed, tools/programs/sobel_gamma.py).  The channel
    views of `lin` (a power) read it computed once, and the taps recompute
    only the luminance's weighted sum from its memory: two kernels.
    Values within the contract (power within 4 ULP)."""
    c = g(R.random((300, 400, 3)))
    want_lum = srgb_luminance(plain(c))
    want = plain(want_lum)[:-2, 2:] + 2 * plain(want_lum)[1:-1, 2:] + plain(want_lum)[2:, 2:]
    before = grumpy.stats()
    lum = srgb_luminance(c)
    assert grumpy.is_pending(lum)
    got = plain(lum[:-2, 2:] + 2 * lum[1:-1, 2:] + lum[2:, 2:])
    after = grumpy.stats()
    assert after["views_materialized"] - before["views_materialized"] >= 1
    assert after["kernels_launched"] - before["kernels_launched"] == 2
    np.testing.assert_array_max_ulp(got, want, 8)


def test_a_cheap_producer_read_twice_is_still_recomputed_per_view():
    """Only transcendentals stop a view's push: u = a * a + a / 3 is
    recomputed at each of its taps in the one kernel."""
    a = g(A)
    before = grumpy.stats()
    u = a * a + a / 3
    s = plain(u[1:, :] - u[:-1, :])
    after = grumpy.stats()
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert after["views_materialized"] == before["views_materialized"]
    assert grumpy.is_pending(u)
    want = A * A + A / 3
    assert_same(s, want[1:, :] - want[:-1, :])


def test_small_operations_on_rows_of_a_pending_array_compute_it_once():
    """A loop reading rows of a pending array (a Kalman filter's obs[t] of
    obs = truth + noise) launched a kernel per statement that recomputed
    the row, 12 us each where NumPy takes 1 us: 0.93x NumPy on the whole
    program.  An operation whose result (or a reduction's input) is under
    the threshold now computes the producer of a small view whole -- as
    NumPy did when the program made it -- and NumPy does the operation."""
    rows = 600
    truth, noise = g(R.standard_normal((rows, 64))), g(R.standard_normal((rows, 64)))
    x = np.zeros(64)
    before = grumpy.stats()
    obs = truth + noise * 0.5
    assert grumpy.is_pending(obs)
    acc, total = x, 0.0
    for t in range(rows):
        acc = acc + 0.1 * (obs[t] - acc)
        total += float(np.sum(obs[t] ** 2))
    after = grumpy.stats()
    assert not grumpy.is_pending(obs)
    assert after["kernels_launched"] - before["kernels_launched"] == 1, "obs is computed once, whole"
    want_obs = plain(truth) + plain(noise) * 0.5
    want_acc, want_total = np.zeros(64), 0.0
    for t in range(rows):
        want_acc = want_acc + 0.1 * (want_obs[t] - want_acc)
        want_total += float(np.sum(want_obs[t] ** 2))
    assert_same(plain(acc), want_acc)
    assert total == want_total


def test_a_large_view_of_a_pending_array_is_still_pushed_into_its_producer():
    a = g(A)
    before = grumpy.stats()
    u = a * 2 + 1
    got = plain(u[:150] * 3)  # 150 x 400 float64: 480 KB, over the tests' 64 KiB threshold
    after = grumpy.stats()
    assert grumpy.is_pending(u)
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert_same(got, (A * 2 + 1)[:150] * 3)


def fault_walk(tmp_path, src, **env_extra):
    """Runs program src under `python -m grumpy.run` (as a user would:
    every layout, an installed wheel's too) once for every failable step
    of the planner (GRUMPY_DEBUG_FAIL=0, 1, ..., the clean run's
    fail_points), the 64 KiB threshold; the stdout fields before the last
    (fail_points) of every run that completed, as ints.  A step that fails
    an allocation of NumPy's own raises NumPy's MemoryError, as it may."""
    path = tmp_path / "walk.py"
    path.write_text(src)
    env = subprocess_env(GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="65536", **env_extra)
    steps, n, results = None, 0, []
    while steps is None or n <= steps:
        env["GRUMPY_DEBUG_FAIL"] = str(n)
        r = subprocess.run([sys.executable, "-m", "grumpy.run", str(path)], capture_output=True, text=True,
                           env=env, timeout=120)
        if r.returncode != 0:
            assert n > 0 and "MemoryError" in r.stderr, r.stderr
        else:
            *fields, points = map(int, r.stdout.split())
            steps = points if n == 0 else steps
            results.append((n, fields))
        n += 1
    assert steps > 0, "nothing was captured"
    assert len(results) >= 3
    return results


TRANSCENDENTAL_VIEWS = """
import numpy as np
import grumpy
x = np.random.default_rng(3).uniform(-4.0, 4.0, (14, 4097))[::2]
c = np.cos(np.broadcast_to(x, (2, 7, 4097)))
v = np.transpose(c, (2, 0, 1))
d = np.asarray(np.subtract(v, v)).view(np.ndarray)
e = np.asarray(v * 1.0).view(np.ndarray)
want = np.asarray(c).view(np.ndarray).transpose(2, 0, 1)
print(np.count_nonzero(d), np.count_nonzero(e != want), grumpy.stats()["fail_points"])
"""


def test_a_transcendental_seen_through_views_has_one_value_per_element(tmp_path):
    """Fuzz case 630001461: with v = cos(x).T, v - v was not 0 -- the first
    view of the pending cos was pushed into its own kernel (libmvec's cos)
    while the second read the producer's memory, computed by NumPy (a
    first launch left to NumPy, a failed compile).  Two implementations of
    cos round differently; NumPy's program computes each element once.
    GRUMPY_DEBUG_FAIL walks every failable step (the old code gave 37756
    nonzero differences at steps 4 and 5)."""
    for n, (diff, mismatch) in fault_walk(tmp_path, TRANSCENDENTAL_VIEWS):
        assert (diff, mismatch) == (0, 0), f"GRUMPY_DEBUG_FAIL={n}"


def test_a_view_of_a_heavily_shared_cheap_producer_is_still_pushed():
    """x = x * x + x seven times reaches each node of the DAG by 3^7
    paths; the scan for a transcendental under a view counted paths and
    took more than 256 for one, so the producer was computed and the view
    read it (two kernels).  It counts distinct nodes: one kernel."""
    a = g(A[:, :200] * 0.1)
    x = a
    for _ in range(7):
        x = x * x + x
    before = grumpy.stats()
    got = plain(x.T + 1.0)
    after = grumpy.stats()
    want = A[:, :200] * 0.1
    for _ in range(7):
        want = want * want + want
    assert_same(got, want.T + 1.0)
    assert after["kernels_launched"] - before["kernels_launched"] == 1
    assert after["views_materialized"] == before["views_materialized"]


SHORT_ROWS_OF_A_HELD_COSINE = """
import numpy as np
import grumpy
x = np.copy(np.random.default_rng(5).uniform(-4.0, 4.0, (6000, 8)))
c = np.cos(x)
s = (2.0 * c).sum(-1)
s = np.asarray(s).view(np.ndarray)
want = (2.0 * np.asarray(c).view(np.ndarray)).sum(-1)
print(np.count_nonzero(s != want), grumpy.stats()["fail_points"])
"""


@pytest.mark.parametrize("evaluator", ["numpy", "loops"])
def test_a_held_transcendental_under_a_short_row_sum_has_one_value_per_element(tmp_path, evaluator):
    """c = np.cos(x) held, s = (2 * c).sum(-1) over rows of 8: the sum's
    short rows were unrolled into views that cloned cos while c itself is
    computed by its own kernel (or by NumPy, or a GPU).  The clone is now
    refused when the transcendental is computed on its own, and the sum is
    one reduction kernel; when that kernel's compile fails, NumPy computes
    s -- and, until the evaluator stored the intermediates the program
    holds (as a kernel writes extra outputs), computed c's cos for s only,
    c's own kernel then libmvec's: 3724 of 6000 row sums differed from
    (2 * c).sum(-1) of c's values at fault injection step 10 (with this
    commit's plan.c, checked).  The same with GRUMPY_DEBUG_EVAL_LOOPS=1,
    where a failed plan is computed by NumPy's inner loops without the GIL
    (hooks/eval_loops.c, the path of a fault on the resolver thread): it
    stored no intermediate either (3724 differences at step 10, checked)."""
    extra = {"GRUMPY_DEBUG_EVAL_LOOPS": "1"} if evaluator == "loops" else {}
    walked = fault_walk(tmp_path, SHORT_ROWS_OF_A_HELD_COSINE, **extra)
    for n, (diff,) in walked:
        assert diff == 0, f"GRUMPY_DEBUG_FAIL={n}"

HELD_CHAIN = """
import numpy as np
import grumpy
x = np.copy(np.random.default_rng(5).uniform(-1.0, 1.0, 20000))
a = [x * 1.0001]
for k in range(69):
    a.append(np.cos(a[-1]) * 0.5 + 0.25)
s = float(a[-1].sum())
before = grumpy.stats()["plan_failures"]
got = [np.asarray(v).view(np.ndarray).copy() for v in a]
after = grumpy.stats()
want = [np.asarray(x).view(np.ndarray) * 1.0001]
for k in range(69):
    want.append(np.cos(want[-1]) * 0.5 + 0.25)
print(sum(int(np.count_nonzero(g != w)) for g, w in zip(got, want)), before, after["plan_failures"],
      after["kernels_launched"])
"""


@pytest.mark.parametrize("evaluator", ["numpy", "loops"])
def test_every_held_intermediate_of_a_failed_plan_is_stored(tmp_path, evaluator):
    """Every compile fails (GRUMPY_DEBUG_JIT_FAIL=1): the sum of a chain of
    70 held arrays (cos, scale, shift) is computed by NumPy's fallback, a
    few failed plans of the chain's kernels, and every array the program
    holds on the way is stored then (the NumPy evaluator kept at most 64 a
    call; the loop evaluator none, so reading the 70 arrays afterwards
    failed 69 more plans and computed each again: 75 plan failures in all
    instead of 4, checked).  Reading them needs no plan, and the values are
    NumPy's."""
    path = tmp_path / "chain.py"
    path.write_text(HELD_CHAIN)
    env = subprocess_env(GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="65536", GRUMPY_DEBUG_JIT_FAIL="1")
    if evaluator == "loops":
        env["GRUMPY_DEBUG_EVAL_LOOPS"] = "1"
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(path)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    diff, before, after, kernels = map(int, r.stdout.split())
    assert diff == 0 and kernels == 0
    assert 0 < before == after
