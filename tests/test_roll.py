"""np.roll is captured as a copy read through a wrapped leaf (core/dag.h
gp_node_leaf_rolled): its users fuse with it, and plan.c splits such a
kernel into boxes of the index space in which every operand is an affine
map of its memory.  A chain of in-place updates of one array (``count +=
np.roll(...)`` eight times, Game of Life) is one kernel.  Values are
NumPy's, bit for bit (a roll is a copy)."""

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, counters, plain

R = np.random.default_rng(5)


def g(x):
    return grumpy._ext().as_grumpy(np.array(x, copy=True))


def stat(key):
    return grumpy.stats()[key]


SHAPES = [(70_000,), (300, 257), (20, 31, 40)]
ROLLS = [(1, 0), (-1, 0), (3, -1), ((1, 2), (0, -1)), (7, (0,)), ((2, -3), 0), (10**12, 0), (0, 0), (-5, (0, 0))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_roll_values_are_numpys(dtype, shape):
    base = (R.random(shape) * 10).astype(dtype)
    x = g(base)
    failures = stat("plan_failures")
    for shift, axis in ROLLS:
        if isinstance(axis, tuple) and max(abs(a) for a in axis) >= len(shape):
            continue
        want = np.roll(base, shift, axis)
        f0 = stat("fallbacks").get("roll", 0)
        got = np.roll(x, shift, axis)
        assert stat("fallbacks").get("roll", 0) == f0, "np.roll was handed to NumPy"
        assert type(got) is type(x) and got.flags.c_contiguous
        assert_same(plain(got), want)
        if dtype is not np.bool_:
            assert_same(plain(np.roll(x, shift, axis) + x * 2), want + base * 2)
            assert_same(plain(np.roll(x * 1, shift, axis).sum(axis=0)), np.roll(base * 1, shift, axis).sum(axis=0))
            assert_same(plain(np.cumsum(np.roll(x, shift, axis), axis=-1)), np.cumsum(want, axis=-1))
            assert_same(plain(np.roll(x, shift, axis)[1:-1:2]), want[1:-1:2])
            assert_same(plain(np.roll(np.roll(x, shift, axis) * 3, 1, 0)), np.roll(want * 3, 1, 0))
    assert stat("plan_failures") == failures


@pytest.mark.cpu_backend
def test_stencil_of_rolls_is_one_kernel():
    q0 = R.random((400, 400))
    q = g(q0)
    before = stat("kernels_compiled") + stat("cache_hits")
    launched0, fallbacks0 = counters()
    r = 0.25 * (np.roll(q, 1, axis=0) + np.roll(q, -1, axis=0) + np.roll(q, 1, axis=1) + np.roll(q, -1, axis=1))
    got = plain(r)
    launched1, fallbacks1 = counters()
    assert launched1 - launched0 == 1  # one kernel (nine boxes)
    assert fallbacks1 == fallbacks0
    # the boxes of a 3x3 split: the interior, edges and corners
    assert stat("kernels_compiled") + stat("cache_hits") - before >= 9
    want = 0.25 * (np.roll(q0, 1, axis=0) + np.roll(q0, -1, axis=0) + np.roll(q0, 1, axis=1) + np.roll(q0, -1, axis=1))
    assert_same(got, want)


@pytest.mark.cpu_backend
@pytest.mark.parametrize("how", ["max", "sum", "cumsum"])
def test_a_reduction_over_rolled_maps_computes_the_map_once(how):
    # shallow_water.py's speed, np.max(np.abs(hu / h) + ...), over arrays
    # whose pending values read rolls: a reduction kernel cannot read a
    # roll's leaf, so the map under it is one map kernel (its rolls
    # fused) and the reduction one more: two launches.  (Each roll had
    # been copied by a kernel of its own after the map kernel of the
    # first one had already computed the nodes above them: five.)
    h0, u0 = R.random((400, 400)) + 1.0, R.random((400, 400))
    h, u = g(h0), g(u0)

    def avg(q):
        return 0.25 * (np.roll(q, 1, axis=0) + np.roll(q, -1, axis=0) + np.roll(q, 1, axis=1) + np.roll(q, -1, axis=1))

    def prog(h, u):
        hn, un = avg(h) - 0.1 * np.roll(u, 1, axis=1), avg(u) - 0.2 * np.roll(h, -1, axis=0)
        m = np.abs(un / hn) + np.sqrt(9.81 * hn)
        return {"max": np.max, "sum": np.sum, "cumsum": lambda x: np.cumsum(x, axis=1)}[how](m)

    launched0, fallbacks0 = counters()
    failures0 = stat("plan_failures")
    got = plain(prog(h, u))
    assert stat("kernels_launched") - launched0 == 2
    assert counters()[1] == fallbacks0 and stat("plan_failures") == failures0
    assert_same(got, prog(h0, u0))


def loaded():
    return stat("kernels_compiled") + stat("disk_cache_hits")


@pytest.mark.cpu_backend
def test_every_box_runs_one_variant_of_the_kernel():
    # A box one element wide keeps the space's inner dim, so its operands
    # have the layouts of the interior's: one kernel to compile for the
    # six boxes (there were three: interior, a column, a row).  The
    # statement is this test's own, so no earlier test loaded its kernel.
    q0 = R.random((300, 500))
    q = g(q0)
    before, asked = loaded(), loaded() + stat("cache_hits")
    launched0 = stat("kernels_launched")
    r = np.hypot(np.roll(q, 1, axis=0), np.roll(q, -1, axis=1)) - np.roll(q, 2, axis=1) * 0.5
    got = plain(r)
    assert stat("kernels_launched") - launched0 == 1
    assert loaded() + stat("cache_hits") - asked == 6  # every box asks (2 x 3 boxes)
    assert loaded() - before == 1
    want = np.hypot(np.roll(q0, 1, axis=0), np.roll(q0, -1, axis=1)) - np.roll(q0, 2, axis=1) * 0.5
    assert_same(got, want)


@pytest.mark.cpu_backend
def test_in_place_chain_is_one_kernel():
    cells0 = (R.random((1000, 1000)) < 0.3).astype(np.uint8)
    cells = g(cells0)
    count = np.zeros(cells.shape, np.uint8)
    want = np.zeros(cells.shape, np.uint8)
    launched0, fallbacks0 = counters()
    for dy, dx in [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]:
        count += np.roll(cells, (dy, dx), axis=(0, 1))
        want += np.roll(cells0, (dy, dx), axis=(0, 1))
    got = plain(count)
    launched1, fallbacks1 = counters()
    assert launched1 - launched0 == 1
    assert fallbacks1 == fallbacks0
    assert_same(got, want)


def test_in_place_chain_keeps_numpys_order():
    a0 = R.random(300_000)
    m = a0 > 0.5
    cases = [
        lambda a: (a.__iadd__(1), a.__imul__(2), a.__isub__(a), a.__iadd__(a0)),
        lambda a: (a.__iadd__(1), np.multiply(a, 2, out=a, where=m)),
        lambda a: (a.__iadd__(1), np.add(a0 * 3, 1, out=a)),
        lambda a: (a.__iadd__(1), a.__iadd__(np.roll(a, 3, 0))),
    ]
    for case in cases:
        a, want = g(a0), a0.copy()
        case(a)
        case(want)
        assert_same(plain(a), want)
    # readers and views taken between the writes see the values of their time
    a, want = g(a0), a0.copy()
    a += 1
    r, v = a + 0, a[10:]
    a *= 3
    want += 1
    r_want, v_want = want + 0, want[10:].copy()
    want *= 3
    assert_same(plain(r), r_want)
    assert_same(plain(a), want)
    assert_same(plain(v), want[10:])
    assert not np.array_equal(v_want, want[10:])


def test_roll_after_write_reads_old_values():
    a0 = np.arange(100_000.0)
    a = g(a0)
    r = np.roll(a, 5, 0)
    a[:] = 0
    assert_same(plain(r), np.roll(a0, 5, 0))
    a = g(a0)
    a[...] = np.roll(a, 1, 0)
    assert_same(plain(a), np.roll(a0, 1, 0))


def test_many_distinct_rolls_in_one_kernel():
    b = R.random((300, 200))
    x = g(b)
    failures = stat("plan_failures")
    rs = [np.roll(x, s, 0) for s in range(1, 25)]
    rn = [np.roll(b, s, 0) for s in range(1, 25)]

    def tree(v):
        while len(v) > 1:
            v = [v[i] + v[i + 1] if i + 1 < len(v) else v[i] for i in range(0, len(v), 2)]
        return v[0]

    assert_same(plain(tree(rs)), tree(rn))
    assert stat("plan_failures") == failures


def test_layouts_and_arguments_numpy_keeps():
    f0 = np.asfortranarray(R.random((300, 200)))
    f = grumpy._ext().as_grumpy(np.asfortranarray(f0))
    got = np.roll(f, 1, 0)  # NumPy's empty_like keeps Fortran order: NumPy's roll
    assert got.flags.f_contiguous and not got.flags.c_contiguous
    assert_same(plain(got), np.roll(f0, 1, 0))
    q0 = R.random((300, 400))
    q = g(q0)
    assert_same(plain(np.roll(q, 3)), np.roll(q0, 3))  # axis=None flattens an n-D array: NumPy's
    v0 = R.random(100_000)
    v = g(v0)
    f0 = stat("fallbacks").get("roll", 0)
    assert_same(plain(np.roll(v, -7) * 2), np.roll(v0, -7) * 2)  # a 1-D array's own axis: captured
    assert stat("fallbacks").get("roll", 0) == f0
    s = g(q0)[::2, 1::3]
    assert_same(plain(np.roll(s, (1, 2), (0, 1)) + 1), np.roll(q0[::2, 1::3], (1, 2), (0, 1)) + 1)
    assert_same(plain(np.roll(q, shift=2, axis=1)), np.roll(q0, 2, axis=1))
    assert_same(plain(np.roll(q, 1.5, 0)), np.roll(q0, 1.5, 0))  # int(1.5): NumPy's
    for shift, axis, exc in [(1, 2, np.exceptions.AxisError), ((1, 2, 3), (0, 1), ValueError),
                             (None, 0, TypeError)]:
        with pytest.raises(exc):
            np.roll(q0, shift, axis)
        with pytest.raises(exc):
            np.roll(q, shift, axis)


@pytest.mark.cpu_backend
def test_a_roll_of_a_cheap_pending_map_is_rolled_through_it():
    # Game of Life's cells = board.astype(np.uint8) rolled eight times:
    # the cast is computed again per roll inside the one stencil kernel
    # (plan.c gp_pending_rolled_locked), not first as a kernel of its own,
    # and the pending cast dying unread computes nothing more.
    board0 = R.random((600, 700)) < 0.3
    board = g(board0)
    launched0, fallbacks0 = counters()
    cells = board.astype(np.uint8)
    count = np.zeros(board.shape, np.uint8)
    for dy, dx in [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)]:
        count += np.roll(cells, (dy, dx), axis=(0, 1))
    assert stat("kernels_launched") == launched0  # nothing computed yet
    del cells
    assert stat("kernels_launched") == launched0
    got = plain(count)
    assert counters() == (launched0 + 1, fallbacks0)
    cells0 = board0.astype(np.uint8)
    want = sum(np.roll(cells0, s, axis=(0, 1)) for s in [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)])
    assert_same(got, want.astype(np.uint8))


@pytest.mark.cpu_backend
def test_rolls_of_fluxes_are_one_kernel_with_numpys_values():
    # shallow_water.py's fluxes: f = hu * (hu / h) + 0.5 * g * h * h
    # rolled both ways along both axes, and the rolled quotient's shared
    # input u; one kernel, bit for bit NumPy's
    h0, hu0 = R.random((300, 400)) + 0.5, R.random((300, 400)) - 0.5

    def prog(h, hu):
        u = hu / h
        f = hu * u + 0.5 * 9.81 * h * h
        gflux = hu * u
        return (np.roll(f, -1, axis=1) - np.roll(f, 1, axis=1)) + (np.roll(gflux, -1, axis=0) - np.roll(gflux, 1, axis=0))

    h, hu = g(h0), g(hu0)
    launched0, fallbacks0 = counters()
    got = plain(prog(h, hu))
    assert counters() == (launched0 + 1, fallbacks0)
    assert_same(got, prog(h0, hu0))


@pytest.mark.cpu_backend
def test_a_roll_of_a_costly_or_broadcast_pending_map_computes_it_first():
    # a transcendental (its bits must be one value per element wherever it
    # is computed) and a map over a broadcast operand are computed once
    # and their memory rolled: two kernels, NumPy's values
    a0, row0 = R.random((300, 400)), R.random((1, 400))
    for prog in (lambda a, row: np.exp(a), lambda a, row: a * row):
        a, row = g(a0), g(row0)
        launched0 = stat("kernels_launched")
        x = prog(a, row)
        got = plain(np.roll(x, 1, axis=0) + np.roll(x, -2, axis=1))
        assert stat("kernels_launched") - launched0 == 2
        x0 = prog(a0, row0)
        assert_same(got, np.roll(x0, 1, axis=0) + np.roll(x0, -2, axis=1))


def test_a_rolled_division_by_zero_warns_once_as_numpy():
    a0, b0 = R.random(200_000), R.random(200_000)
    b0[::1000] = 0.0

    def prog(a, b):
        x = a / b
        return np.roll(x, 1) + np.roll(x, -1)

    with pytest.warns(RuntimeWarning, match="divide by zero") as record:
        got = plain(prog(g(a0), g(b0)))
    with pytest.warns(RuntimeWarning, match="divide by zero") as want_record:
        want = prog(a0, b0)
    assert len(record) == len(want_record) == 1
    assert_same(got, want)


@pytest.mark.cpu_backend
def test_a_roll_of_a_pending_stencil_result_computes_it_first():
    # laplace_roll.py: u = np.where(interior, avg(rolls of u), u) each
    # iteration; rolling the pending u through its own rolls would compute
    # each element of it five times (and cut 25 boxes): u is computed
    # first, one kernel an iteration
    u0 = R.random((300, 400)).astype(np.float32)
    interior0 = np.zeros(u0.shape, bool)
    interior0[1:-1, 1:-1] = True

    def prog(u, interior, iterations=4):
        for _ in range(iterations):
            avg = 0.25 * (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1))
            u = np.where(interior, avg, u)
        return u

    u, interior = g(u0), g(interior0)
    plain(u), plain(interior)
    launched0, fallbacks0 = counters()
    got = plain(prog(u, interior))
    assert counters() == (launched0 + 4, fallbacks0)
    assert_same(got, prog(u0, interior0))


def test_a_pending_map_rolled_under_ignore_then_dropped_still_warns():
    # the roll's copy is recorded under errstate(all="ignore"): were the
    # map marked as warned for by the copy, neither would be computed when
    # both arrays die unread, and NumPy's divide-by-zero warning was lost
    a0, b0 = R.random(200_000), R.random(200_000)
    b0[::1000] = 0.0

    def prog(a, b):
        t = a / b
        with np.errstate(all="ignore"):
            u = np.roll(t, 1)
        del t, u

    with pytest.warns(RuntimeWarning, match="divide by zero") as record:
        prog(g(a0), g(b0))
    with pytest.warns(RuntimeWarning, match="divide by zero") as want_record:
        prog(a0, b0)
    assert len(record) == len(want_record) == 1
