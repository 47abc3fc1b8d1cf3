"""np.errstate / np.seterrcall under capture (DESIGN.md 4): every error kind
in every mode, float32 and float64, one operation and a fused expression,
gives NumPy's warnings, exceptions and callbacks, warning for warning.

How: operations recorded under "ignore" / "warn" are fused; a kernel that
raises an IEEE flag a node watches is replayed with NumPy under each node's
recorded state (fpe_replays).  Under "raise" / "call" the operation is
NumPy's, at once (a counted fallback), so the error comes from its own
statement."""

import functools
import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, plain
import gpcheck

N = 100_000


def inputs(dtype, as_grumpy):
    a = np.linspace(-2, 2, N).astype(dtype)
    a[5] = 0
    a[7] = np.nan
    b = np.linspace(-1, 1, N).astype(dtype)
    b[5] = 0
    b[9] = 0
    if as_grumpy:
        return grumpy._ext().as_grumpy(a), grumpy._ext().as_grumpy(b)
    return a, b


CASES = {
    "divide": lambda a, b: a / b,
    "log-zero": lambda a, b: np.log(b * 0),
    "overflow": lambda a, b: np.exp(a * 1000),
    "invalid": lambda a, b: np.sqrt(b),
    "underflow": lambda a, b: np.exp(-a * a * 1000),
    "int-divide": lambda a, b: (a * 10).astype(np.int64) // (b * 2).astype(np.int64),
    "int-overflow": lambda a, b: np.full(N, np.iinfo(np.int32).min, np.int32) // (b * 0 - 1).astype(np.int32),
}


def run(fn, mode, dtype, fused, as_grumpy):
    """(warnings as (category, message), callback arguments, exception text)."""
    a, b = inputs(dtype, as_grumpy)
    calls, raised = [], None
    state = {"all": mode}
    if mode == "call":
        state["call"] = lambda err, flag: calls.append(err)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            with np.errstate(**state):
                r = fn(a, b)
                if fused:
                    r = r * 1
                plain(r).copy()
        except FloatingPointError as e:
            raised = str(e)
    return [(x.category.__name__, str(x.message)) for x in w], calls, raised


@pytest.mark.parametrize("fused", [0, 1], ids=["single", "fused"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f4", "f8"])
@pytest.mark.parametrize("mode", ["ignore", "warn", "raise", "call"])
@pytest.mark.parametrize("case", CASES)
def test_errstate_matrix(case, mode, dtype, fused):
    want = run(CASES[case], mode, dtype, fused, as_grumpy=False)
    before = grumpy.stats()
    got = run(CASES[case], mode, dtype, fused, as_grumpy=True)
    after = grumpy.stats()
    assert got == want
    if mode in ("ignore", "warn"):
        assert after["kernels_launched"] > before["kernels_launched"]
    if mode == "warn" and want[0]:
        assert after["fpe_replays"] > before["fpe_replays"]
    if mode == "ignore":
        assert after["fpe_replays"] == before["fpe_replays"]
    if mode in ("raise", "call"):
        # NumPy's own call (counted when it returns; a raised error is NumPy's too)
        assert after["fpe_replays"] == before["fpe_replays"]
        assert sum(after["fallbacks"].values()) > sum(before["fallbacks"].values()) or want[2] is not None


def test_state_at_recording_counts_not_at_computation():
    def script(as_grumpy):
        a, b = inputs(np.float64, as_grumpy)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with np.errstate(divide="ignore", invalid="ignore"):
                r = a / b  # recorded under "ignore"
            plain(r)  # computed under the default state: still no warning (NumPy's)
            s = a / b  # recorded under "warn"
            with np.errstate(all="ignore"):
                plain(s)  # computed under "ignore": NumPy warned when s was made
        return [str(x.message) for x in w], r, s

    want, r0, s0 = script(False)
    got, r, s = script(True)
    assert want == ["divide by zero encountered in divide", "invalid value encountered in divide"]
    assert got == want
    assert_same(r, r0)
    assert_same(s, s0)


@pytest.mark.cpu_backend
def test_spurious_flags_give_no_warning():
    """float32 tanh of large values overflows inside the kernel's exp; NumPy's
    tanh gives no warning, and neither does grumpy (the replay decides)."""
    x = grumpy._ext().as_grumpy(np.full(N, 500.0, np.float32))
    before = grumpy.stats()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = plain(np.tanh(x)).copy()
    assert w == []
    assert (r == 1).all()
    assert grumpy.stats()["fpe_replays"] == before["fpe_replays"] + 1


def test_warning_as_error_is_raised_when_computed():
    a, b = inputs(np.float64, True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = a / b
        with pytest.raises(RuntimeWarning, match="divide by zero"):
            plain(r)
    pa, pb = inputs(np.float64, False)
    with np.errstate(all="ignore"):
        assert_same(r, pa / pb)


def numpy_warnings(fn):
    """The (category, message) of every warning fn() gives, in order."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.category, str(x.message)) for x in w]


def big_inf():
    return grumpy._ext().as_grumpy(np.full(N, np.inf))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_an_out_of_range_cast_warns_as_numpys(dtype):
    """A fused float-to-integer cast gave no "invalid value encountered in
    cast" (the conversion's flag was not raised); values inside the range
    of the conversion NumPy runs (1e19 to uint64) give none."""
    for values in (np.inf, np.nan, 3e9, -3e9, 1e19, 255.0, -1.0):
        a = np.full(N, values)
        want = numpy_warnings(lambda: np.asarray(a * 1.0).astype(dtype))
        g = grumpy._ext().as_grumpy(a)
        before = grumpy.stats()["kernels_launched"]
        got = numpy_warnings(lambda: plain((g * 1.0).astype(dtype)))
        assert grumpy.stats()["kernels_launched"] == before + 1
        assert got == want, (dtype, values)


def test_element_reads_of_a_pending_array_give_its_warnings():
    """a[0], float(a[..]), iteration: NumPy's C code read the pending memory,
    the kernel ran in the fault handler and its warnings were dropped."""
    z = np.zeros(N)
    for read in (lambda y: y[0], lambda y: float(y[3]), lambda y: next(iter(y)), lambda y: y[[1, 2]]):
        want = numpy_warnings(lambda: read(np.log(z)))
        got = numpy_warnings(lambda: read(np.log(grumpy._ext().as_grumpy(z))))
        assert got == want and want


def test_a_result_dropped_unread_still_warns():
    """NumPy computes a result nobody reads and warns; the pending node was
    freed uncomputed (pytest.warns(RuntimeWarning): a.astype(np.int8))."""
    want = numpy_warnings(lambda: np.full(N, np.inf).astype(np.int8))
    g = big_inf()
    got = numpy_warnings(lambda: g.astype(np.int8))
    assert got == want and want
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        np.log(grumpy._ext().as_grumpy(np.zeros(N)))


def test_warnings_fall_inside_the_catch_warnings_block_that_recorded_them():
    """Recorded inside `catch_warnings(); simplefilter("ignore")` and computed
    after it, the warning escaped the block (and one recorded before and
    computed inside was swallowed)."""
    z = grumpy._ext().as_grumpy(np.zeros(N))
    with warnings.catch_warnings(record=True) as outer:
        warnings.simplefilter("always")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inside = np.log(z)
        float(inside.sum())
        before = np.log(z - 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            float(before.sum())
    assert [str(w.message) for w in outer] == ["invalid value encountered in log"]


def test_an_exception_in_flight_survives_freeing_an_unread_result():
    """A pending result freed while an exception propagates is computed for
    its warnings; a warning made an error there replaced the exception."""
    def f():
        y = big_inf().astype(np.int8)  # noqa: F841  (dropped unread when KeyError unwinds)
        raise KeyError("mine")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KeyError, match="mine"):
            f()


def test_a_warning_made_an_error_inside_a_block_is_raised_at_its_end():
    z = grumpy._ext().as_grumpy(np.zeros(N))
    with pytest.raises(RuntimeWarning, match="divide by zero"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r = np.log(z)  # noqa: F841  (pending: computed at the block's end)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        float(np.log(z + 1.0).sum())
    assert w == []  # nothing deferred leaks into later computations


def test_in_place_kernels_that_do_not_read_their_output_warn():
    """out= and copyto kernels counted their flags as unreported; when they
    read nothing of the memory they write, the replay is NumPy's."""
    huge = np.full(N, 1e300)

    def overflow(xp_huge, out):
        np.multiply(xp_huge, xp_huge, out=out)
        return out

    def cast_into(src, dst):
        np.copyto(dst, src, casting="unsafe")
        return dst

    want = numpy_warnings(lambda: overflow(huge, np.empty(N)))
    g_out = grumpy._ext().as_grumpy(np.empty(N))
    got = numpy_warnings(lambda: plain(overflow(grumpy._ext().as_grumpy(huge.copy()), g_out)))
    assert got == want and want
    infs = np.full(N, np.inf)
    want = numpy_warnings(lambda: cast_into(infs, np.zeros(N, np.int32)))
    g_dst = grumpy._ext().as_grumpy(np.zeros(N, np.int32))
    before = grumpy.stats()["fpe_unreported"]
    got = numpy_warnings(lambda: plain(cast_into(grumpy._ext().as_grumpy(infs.copy()) * 1.0, g_dst)))
    assert got == want and want
    assert grumpy.stats()["fpe_unreported"] == before



IN_PLACE_ONE_OP = {
    "sqrt-out": lambda x, y: np.sqrt(x, out=x),
    "divide-out": lambda x, y: np.true_divide(x, y, out=x),
    "itruediv": lambda x, y: x.__itruediv__(y),
    "imul-overflow": lambda x, y: x.__imul__(np.float64(1e308)),
    "reciprocal-out": lambda x, y: np.reciprocal(y, out=y),
    "int-ifloordiv": lambda x, y: x.__ifloordiv__(y),
    "divide-by-int-zero": lambda x, y: np.true_divide(x, 0, out=x),  # the int cast to float: np.var's ddof count
    # a bool operand cast to int in the loop (fuzzer case 659002476), computed in the kernel too
    "int-imod-by-a-mask": lambda x, y: x.__imod__(y > 0),
    "int-imod-by-a-computed-mask": lambda x, y: x.__imod__(grumpy._ext().as_grumpy(plain(y) > 0)),
}


@pytest.mark.parametrize("case", sorted(IN_PLACE_ONE_OP))
def test_an_in_place_kernel_of_one_operation_warns_as_numpy(case):
    """An in-place kernel that reads the memory it writes cannot be
    replayed (fpe_unreported, no warning); one of a single operation whose
    flags are IEEE's (or the integer division's, raised as NumPy's loop
    does) gives NumPy's warnings from its flags (fuzzer cases 647000962,
    647001284)."""
    fn = IN_PLACE_ONE_OP[case]

    def pair(xp):
        x, y = inputs(np.float64, False)
        if case.startswith("int"):
            x, y = (np.nan_to_num(x) * 10).astype(np.int64), (y * 2).astype(np.int64)
        return (grumpy._ext().as_grumpy(x), grumpy._ext().as_grumpy(y)) if xp else (x, y)

    with grumpy.disabled():
        want = numpy_warnings(lambda: fn(*pair(False)))
    before = grumpy.stats()
    gx, gy = pair(True)
    got = numpy_warnings(lambda: plain(fn(gx, gy)))
    after = grumpy.stats()
    assert got == want and want
    assert after["fpe_unreported"] == before["fpe_unreported"]
    assert after["kernels_launched"] > before["kernels_launched"]  # a kernel, not NumPy's own call


def _ifloordiv_of_a_sum(x, y):
    x //= y + 0.5 * y  # the sum replayed, the floor division's own flags need x
    return x


def _imul_of_an_exp(x, y):
    x *= np.exp(y * 800.0)  # exp overflows (replayed); 0 * inf is the multiply's own invalid
    return x


IN_PLACE_INEXACT = {
    "imul-of-an-exp": _imul_of_an_exp,  # exact multiply, but its flags mixed with exp's
    "ifloordiv": lambda x, y: x.__ifloordiv__(y),
    "imod": lambda x, y: x.__imod__(y),
    "ifloordiv-self": lambda x, y: x.__ifloordiv__(x),  # fuzzer case 656000843
    "imod-reshaped": lambda x, y: y.__imod__(np.reshape(x, y.shape)),  # fuzzer case 656001217
    "power-out": lambda x, y: np.power(x, 0.7, out=x),
    "ifloordiv-of-a-sum": _ifloordiv_of_a_sum,
}


@pytest.mark.parametrize("case", sorted(IN_PLACE_INEXACT))
def test_an_in_place_kernel_whose_flags_need_its_inputs_leaves_them_to_numpy(case):
    """An in-place kernel whose own operation's flags are not NumPy's loop's
    (float floor division and remainder, power) overwrote the inputs a
    replay would read: its warnings were lost or wrong.  Such a kernel now
    ran into its stages, sees its flags before committing them, gives the
    stages back and leaves its outputs to NumPy, whose warnings are
    NumPy's (plan.c numpy_for_flags)."""
    fn = IN_PLACE_INEXACT[case]

    def pair(xp):
        x, y = inputs(np.float64, False)
        return (grumpy._ext().as_grumpy(x), grumpy._ext().as_grumpy(y)) if xp else (x, y)

    with grumpy.disabled():
        x, y = pair(False)
        want = numpy_warnings(lambda: fn(x, y))
        want_values = (x.copy(), y.copy())
    before = grumpy.stats()
    gx, gy = pair(True)
    got = numpy_warnings(lambda: plain(fn(gx, gy)))
    after = grumpy.stats()
    assert got == want and want
    assert_same(plain(gx), want_values[0])
    assert_same(plain(gy), want_values[1])
    assert after["fpe_unreported"] == before["fpe_unreported"]
    assert after["fpe_to_numpy"] == before["fpe_to_numpy"] + 1
    # with no flag to report, the kernel's result stands
    gx, gy = pair(True)
    with np.errstate(all="ignore"):
        plain(fn(gx, gy))
    assert grumpy.stats()["fpe_to_numpy"] == after["fpe_to_numpy"]
    assert grumpy.stats()["kernels_launched"] > after["kernels_launched"]


def test_an_in_place_kernel_whose_flags_raise_leaves_numpy_to_raise():
    with grumpy.disabled():
        x, y = inputs(np.float64, False)
        with pytest.raises(FloatingPointError), np.errstate(divide="raise"):
            x //= y
    gx, gy = inputs(np.float64, True)
    with pytest.raises(FloatingPointError), np.errstate(divide="raise"):
        gx //= gy
        plain(gx)
    assert_same(plain(gx), x)



def _reshape_copy(v):
    return v[::2, :-2:3].reshape(-1)


def _set_element(v):
    v[-1, 0] = -0.75
    return v


def _copyto_reversed_source(v):
    x = v.copy()  # a pending copy...
    w = np.sqrt(x)  # ...read by a pending sqrt, then overwritten by NumPy's own copyto
    np.copyto(x, x[::-1])
    return w


FAULT_FREE = {
    "asfortranarray": np.asfortranarray,
    "reshape-copy": _reshape_copy,
    "set-element": _set_element,
    "copyto-overlap": _copyto_reversed_source,
    "cumsum-of-a-transpose": lambda v: v.T.cumsum(),  # fuzzer case 658000564
    "cumprod-of-a-transpose": lambda v: v.T.cumprod(axis=None),
    "np-cumsum-of-a-transpose": lambda v: np.cumsum(v.T),
    # tensordot's reshape of a transposed pending operand copies (warnings fuzz case 671001358)
    "tensordot-of-transposes": lambda v: np.tensordot(v.T, v.T, axes=2),
    "tensordot-of-a-transpose-and-a-sibling": lambda v: (np.log(v + 0.5), np.tensordot(v.T, v, axes=1))[0],
    "outer-of-a-transpose": lambda v: np.outer(v.T[:, :2], v[0, :100]),
}


WRITING_METHODS = {
    "sort": lambda x: x.sort(),
    "partition": lambda x: x.partition(3),
    "put": lambda x: x.put([0, 5], 7.0),
    # not recorded (bool): NumPy's fill.  Here x's first computation takes y with it, so this
    # case passes without the change too; tests/fuzz_regressions/case_692001582.py fails without
    "fill-of-a-pending-bool-array": lambda x: x.fill(1),
}


@pytest.mark.parametrize("case", sorted(WRITING_METHODS))
def test_a_method_writing_an_array_computes_its_pending_readers_first(case):
    """x.sort(), x.partition(k), x.put(...) and a fill grumpy does not
    record are NumPy's methods writing x's memory: a pending y = f(x) read
    the old values in a page fault, whose kernel gave no warnings
    ("invalid value encountered in sqrt / divide" lost).  Now y is computed
    first (hooks/array.c writes_method), with NumPy's warnings, and no
    fault is taken."""
    fn = WRITING_METHODS[case]
    boolean = case.startswith("fill")

    def program(xp):
        x = np.linspace(-3, 3, 4 * N)
        if xp:
            x = grumpy._ext().as_grumpy(x)
        x = (x > 0) if boolean else x  # (pending under grumpy, as the fuzz case's)
        y = np.true_divide(x, x) if boolean else np.sqrt(x)
        fn(x)
        return plain(y), plain(x)

    with grumpy.disabled():
        want = numpy_warnings(lambda: program(False))
        want_y, want_x = program(False)
    before = grumpy.stats()
    got = numpy_warnings(lambda: program(True))
    after = grumpy.stats()
    got_y, got_x = program(True)
    assert got == want and want
    np.testing.assert_array_equal(got_y, want_y)
    np.testing.assert_array_equal(got_x, want_x)
    assert after["guard_faults"] == before["guard_faults"]
    assert after["kernels_launched"] > before["kernels_launched"]


@pytest.mark.parametrize("case", sorted(FAULT_FREE))
def test_numpy_reading_a_pending_array_computes_it_first_with_its_warnings(case):
    """NumPy's own code reading or writing a pending array's memory
    (np.asfortranarray, a reshape that copies, a[i, j] = v, a fallback
    np.copyto over memory a pending sqrt reads, a cumsum over all elements
    of a transposed array, which NumPy's C method ravels) took a page fault,
    and the kernels run inside it gave no warnings (fuzzer cases 647000407,
    647000777, 648001299, 648001650, 658000564): each now computes first, with NumPy's
    warnings, and takes no fault."""
    fn = FAULT_FREE[case]
    x = np.linspace(-3, 3, 4 * N).reshape(400, -1)

    def program(v):
        w = np.sqrt(v - 1.0)  # invalid for every v < 1
        return fn(w) if case != "copyto-overlap" else fn(v - 1.0)

    with grumpy.disabled():
        want = numpy_warnings(lambda: program(x))
    before = grumpy.stats()
    got = numpy_warnings(lambda: plain(program(grumpy._ext().as_grumpy(x.copy()))))
    after = grumpy.stats()
    assert got == want and want
    assert after["guard_faults"] == before["guard_faults"]
    assert after["fpe_unreported"] == before["fpe_unreported"]


def _remainder(p, g):
    return p % g  # invalid where g == 0


def _sqrt_then_scale(p, g):
    return np.sqrt(p + g * 0.0 - 5.0) * (g + 1.0)  # invalid in sqrt only


def _log_cumsum(p, g):
    return np.cumsum(np.log(p * g))  # divide by zero and invalid in log, a pending scan


def _cast_of_a_quotient(p, g):
    return (p / g).astype(np.int32)  # divide by zero, invalid in cast


WRITTEN_BEHIND_GRUMPYS_BACK = {
    "remainder": _remainder,
    "sqrt-then-scale": _sqrt_then_scale,
    "log-cumsum": _log_cumsum,
    "cast-of-a-quotient": _cast_of_a_quotient,
}


def faulting_like_numpy(program):
    """Runs program(as_grumpy) as NumPy, then under grumpy, where a kernel
    must be computed in a page fault: the same warnings, some, none lost
    (fpe_unreported).  (grumpy's result, NumPy's)."""
    with grumpy.disabled():
        want_warnings = numpy_warnings(lambda: program(False))
        want = program(False)
    before = grumpy.stats()
    got_warnings = numpy_warnings(lambda: program(True))
    after = grumpy.stats()
    assert got_warnings == want_warnings and want_warnings
    assert after["guard_faults"] > before["guard_faults"]  # computed in a fault, as the case needs
    assert after["fpe_unreported"] == before["fpe_unreported"]
    return program(True), want


@pytest.mark.cpu_backend
@pytest.mark.parametrize("case", sorted(WRITTEN_BEHIND_GRUMPYS_BACK))
def test_a_kernel_run_for_a_fault_gives_numpys_warnings(case):
    """A plain array that a pending result reads, written by NumPy's own
    assignment (which grumpy does not see: the array is not a grumpy
    array), faults; the pending result was computed in the fault, where
    there is no Python, and its warnings were lost (fpe_unreported; fuzz
    case 690000639).  NumPy's inner loops now find which operations warn,
    and the warnings are given after the fault, NumPy's text at the
    recording line."""
    fn = WRITTEN_BEHIND_GRUMPYS_BACK[case]
    x = np.linspace(-2.0, 2.0, N)
    x[::7] = 0.0

    def program(as_grumpy):
        p = plain(np.linspace(0.0, 9.0, N))  # NumPy's class either way
        g = grumpy._ext().as_grumpy(x.copy()) if as_grumpy else x.copy()
        r = fn(p, g)
        p[::-1] = 7.0  # NumPy's setitem: r must be computed from the old p first
        return np.asarray(r)

    got, want = faulting_like_numpy(program)
    np.testing.assert_array_equal(plain(got), want)


@pytest.mark.cpu_backend
def test_a_fault_kernels_warning_made_an_error_is_raised_right_after_the_fault():
    """Under simplefilter("error") NumPy raises at the statement that
    computes; the kernel run for the fault raises right after the statement
    whose C code faulted (the pending call), not at some later grumpy
    operation or never."""
    x = np.linspace(-2.0, 2.0, N)
    x[::7] = 0.0
    p = plain(np.linspace(0.0, 9.0, N))
    g = grumpy._ext().as_grumpy(x.copy())
    faults = grumpy.stats()["guard_faults"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = p % g  # pending
        with pytest.raises(RuntimeWarning, match="invalid value encountered in remainder"):
            p[::-1] = 7.0  # NumPy's setitem faults: r computed there
            len(())  # (a call: CPython runs pending calls here)
    assert grumpy.stats()["guard_faults"] > faults
    with grumpy.disabled():
        want = np.linspace(0.0, 9.0, N) % x
    np.testing.assert_array_equal(plain(r), want)


def _add_then_divide_in_place(x):
    y = x * 1e300  # pending: its overflow is replayed; the in-place divide reads x
    x /= y + y
    return x


AROUND_IN_PLACE = {
    "var-no-axes": lambda x: x.var(axis=()),
    "nansum-rows": lambda x: np.nansum(x, axis=1, keepdims=True),
    "nanmean-cols": lambda x: np.nanmean(x, axis=0),
    "add-then-divide-in-place": _add_then_divide_in_place,
}


@pytest.mark.parametrize("case", sorted(AROUND_IN_PLACE))
def test_an_in_place_kernel_replays_the_operations_around_its_in_place_writes(case):
    """A kernel that overwrote memory it read (NumPy's var divides its mean
    in place, nansum's copyto(where=) writes a copy it then sums) could not
    be replayed at all: "invalid value encountered in subtract / reduce"
    was missing (fuzzer cases 648000737, 648001078).  Its other operations
    are replayed now, reading the in-place outputs' values from memory."""
    fn = AROUND_IN_PLACE[case]
    x = np.linspace(-3, 3, 4 * N).reshape(400, -1)
    x[3, 5] = np.inf
    x[3, 7] = -np.inf  # inf - inf along rows
    x[9, 5] = -np.inf  # and along columns
    x[7, 1] = np.nan
    with grumpy.disabled():
        want = numpy_warnings(lambda: fn(x.copy()))
    before = grumpy.stats()
    got = numpy_warnings(lambda: plain(fn(grumpy._ext().as_grumpy(x.copy()))))
    after = grumpy.stats()
    assert got == want and want
    # replayed around the in-place writes, or (the in-place write's own flags mixed with the
    # others': np.var's mean divided in place) left to NumPy before its commit
    assert after["fpe_replays"] + after["fpe_to_numpy"] > before["fpe_replays"] + before["fpe_to_numpy"]
    assert after["fpe_unreported"] == before["fpe_unreported"]


REDUCE_DTYPE = {
    "sum-int64": lambda x: (x * 1.0).sum(axis=0, dtype=np.int64),
    "add-reduce-int32": lambda x: np.add.reduce(x * 2.0, axis=1, dtype=np.int32),
    "prod-int64": lambda x: (x * 1.0).prod(axis=0, dtype=np.int64),
    "sum-float32-overflow": lambda x: (x * 1e300).sum(axis=0, dtype=np.float32),
    "mean-float32": lambda x: np.mean(x * 1e300, axis=1, dtype=np.float32),
    "short-rows-int64": lambda x: (x * 1.0).reshape(-1, 8).sum(axis=1, dtype=np.int64),  # unrolled rows
}


@pytest.mark.parametrize("case", sorted(REDUCE_DTYPE))
def test_the_cast_of_a_reductions_dtype_warns_as_the_reduction(case):
    """NumPy casts inside a reduction with dtype= and words the cast's
    warnings as the reduction's ("invalid value encountered in reduce",
    one per category with the reduction's own); grumpy's cast node said
    "... in cast" (fuzzer cases 641000151, 647000797)."""
    fn = REDUCE_DTYPE[case]
    x = np.linspace(-3, 3, 4 * N).reshape(400, -1)
    x[3, 5] = np.inf
    x[7, 1] = np.nan
    with grumpy.disabled():
        want = numpy_warnings(lambda: fn(x))
    before = grumpy.stats()
    got = numpy_warnings(lambda: plain(fn(grumpy._ext().as_grumpy(x.copy()))))
    after = grumpy.stats()
    assert got == want and want
    assert after["ops_captured"] > before["ops_captured"]


WHERE_PROGRAM = '''\
import warnings
import numpy as np
a = np.linspace(-1.0, 1.0, 1 << 18)
b = np.zeros(1 << 18)
for i in range(3):
    c = (a * 2.0) / b
    print(float(c[7]))
d = np.log(a - 2.0)
print(float(d.sum()))
e = np.tile(np.array([0.0, 1.0, -1.0]), 100000) * 1.0 / np.zeros(300000)
print(float(e[1]))
with warnings.catch_warnings():
    warnings.simplefilter("always")
    for i in range(2):
        f = np.sqrt(a - 5.0) * 2.0
        print(float(f[0]))
'''


def run_with_and_without(tmp_path, name, text, **env_extra):
    """(plain run, grumpy run) of program `text` saved as tmp_path/name, by
    absolute path (so __file__ and the warnings' file names agree), without
    the caller's GRUMPY_* settings; both must exit 0."""
    root = pathlib.Path(__file__).resolve().parents[1]
    prog = tmp_path / name
    prog.write_text(text)
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=str(root), GRUMPY_CACHE_DIR="off", **env_extra)
    plain_run = subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, timeout=300)
    grumpy_run = subprocess.run([sys.executable, "-m", "grumpy.run", str(prog)], env=env, capture_output=True,
                                text=True, timeout=300)
    assert plain_run.returncode == grumpy_run.returncode == 0, grumpy_run.stderr
    return plain_run, grumpy_run


def test_a_fused_kernels_warnings_are_given_where_numpy_gives_them(tmp_path):
    """A warning from a fused kernel names the line that recorded the
    operation, not the line that read its value (or NumPy's _methods.py for
    a sum), and comes as often as NumPy's does: once per line under the
    default filter, every time under "always", each category of one
    operation in NumPy's order.  The whole stderr is NumPy's, byte for byte
    (script given by absolute path, so __file__ is the same)."""
    # GRUMPY_ADAPTIVE=0: every pass replays its kernel (with the rule, a
    # line that warned is NumPy's at once from the second pass: tested below)
    plain_run, grumpy_run = run_with_and_without(tmp_path, "where.py", WHERE_PROGRAM, GRUMPY_ADAPTIVE="0",
                                                 GRUMPY_STATS_JSON=str(tmp_path / "stats.json"))
    assert grumpy_run.stdout == plain_run.stdout
    assert plain_run.stderr.count("RuntimeWarning") == 6  # the program's own check: 1 + 1 + 2 + 2
    assert grumpy_run.stderr == plain_run.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["fpe_replays"] >= 5 and stats["kernels_launched"] >= 7 and stats["nodes_fused"] > 0


def test_the_warning_location_does_not_keep_an_exec_namespace_alive(tmp_path):
    """The site table keeps a frame's module name, not its globals: arrays
    in a namespace given to exec() are freed with it (the site of the
    operation recorded there outlives the namespace)."""
    prog = tmp_path / "ns.py"
    prog.write_text(
        "import gc, weakref\n"
        "import numpy as np\n"
        "ns = {'np': np}\n"
        "exec('a = np.linspace(1.0, 2.0, 1 << 18)\\nb = a / 0.0\\nprint(float(b[0]))', ns)\n"
        "ref = weakref.ref(ns['a'])\n"
        "del ns\n"
        "gc.collect()\n"
        "print('freed' if ref() is None else 'kept alive')\n")
    root = pathlib.Path(__file__).resolve().parents[1]
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=str(root), GRUMPY_CACHE_DIR="off", GRUMPY_STATS_JSON=str(tmp_path / "stats.json"))
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(prog)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "inf\nfreed\n"
    assert "<string>:2: RuntimeWarning: divide by zero encountered in divide" in r.stderr
    assert json.loads((tmp_path / "stats.json").read_text())["fpe_replays"] == 1


WARNS_EACH_PASS = """
import warnings
import numpy as np
import grumpy
x = np.copy(np.linspace(0.0, 1.0, 300_000))
warnings.simplefilter("always")
total = 0.0
for i in range(40):
    y = np.sqrt(x - 0.5) * 2.0 + i  # invalid at every pass
    total += float(np.nansum(y))
print(repr(total))
s = grumpy.stats() if grumpy.enabled() else {}
print(s.get("fpe_replays"), s.get("ops_eager_site"), sorted(s.get("adaptive_sites", {})))
"""


def test_a_line_that_warns_at_every_pass_is_numpys_after_the_first(tmp_path):
    """A kernel whose IEEE flags an error state watches is replayed by NumPy
    for its warnings: NumPy's time on top of the kernel's.  A line NumPy
    warned at in a replay is NumPy's at once from then on (hooks/sites.c
    gp_site_warns), probed at the 16th call: 2 replays in 40 passes, not
    40; the same 40 warnings, at the same line, and the same sum."""
    plain_run, grumpy_run = run_with_and_without(tmp_path, "passes.py", WARNS_EACH_PASS)
    prog = tmp_path / "passes.py"
    assert grumpy_run.stderr == plain_run.stderr
    assert plain_run.stderr.count("RuntimeWarning: invalid value encountered in sqrt") == 40
    total, counts = grumpy_run.stdout.splitlines()[0], grumpy_run.stdout.splitlines()[1]
    assert total == plain_run.stdout.splitlines()[0]
    replays, eager, sites = counts.split(" ", 2)
    assert int(replays) == 2 and int(eager) == 38
    assert sites == f"['{prog}:9 warnings']"


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_a_float_cast_at_the_conversions_bounds_is_numpys(src, dtype):
    """A float to an integer is range-checked on the float's bits (codegen.c
    x86_fptosi: no float32 lies strictly between -2^31 - 1 and -2^31; a
    float64 there is out of range for the 32-bit conversion):
    values at and next to +-2^31, -2^31 - 1 and +-2^63, infinities, NaN
    and signed zeros convert to NumPy's integers, bit for bit, with NumPy's
    "invalid" warnings, and the in-range ones raise no flag (no replay).
    One kernel per cast.  A float to uint32 beyond [0, 2^32)
    is left out of the value comparison: undefined in C, and NumPy's own
    result depends on the element's position -- NumPy 2.4's vector loop gives
    the 32-bit conversion's 0x80000000 there, its scalar tail and grumpy
    the 64-bit one's low half (issue 11 note, 2026-11-26)."""
    edges = []
    for e in (2.0 ** 31, 2.0 ** 31 + 1, 2.0 ** 63, 2.0 ** 32, 256.0, 65536.0):
        f = src(e)
        edges += [f, np.nextafter(f, src(0)), np.nextafter(f, src(np.inf)), -f,
                  -np.nextafter(f, src(0)), -np.nextafter(f, src(np.inf))]
    edges += [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 255.5, -0.5, -1.0, 127.9]
    base = np.array(edges, src)
    a = plain(np.tile(base, N // base.size + 1)[:N])
    defined = (a >= 0) & (a < 2.0 ** 32) if dtype == np.uint32 else np.ones(N, bool)
    # every edge together, then the edges NumPy converts without a warning
    # (-2^31 for float32, the float64 just above -2^31 - 1, ...)
    quiet = [e for e in base if not numpy_warnings(lambda: np.full(64, e, src).astype(dtype))]
    for values in (a, np.resize(np.array(quiet, src), N)):
        want_w = numpy_warnings(lambda: np.asarray(values * src(1.0)).astype(dtype))
        want = (values * src(1.0)).astype(dtype)
        g = grumpy._ext().as_grumpy(values.copy())
        before, replays = grumpy.stats()["kernels_launched"], grumpy.stats()["fpe_replays"]
        got_w = numpy_warnings(lambda: plain((g * src(1.0)).astype(dtype)))
        got = plain((g * src(1.0)).astype(dtype))
        assert grumpy.stats()["kernels_launched"] == before + 2
        assert got_w == want_w
        # no flag of the kernel's own (a replay would find none); but gcc's
        # uint64 sequence also converts d - 2^63, out of range for d below
        # -2^10 or so, and LLVM drops the select that guards that conversion
        # (an out-of-range fptosi is poison, which the outer select discards):
        # a negative float to uint64 raises a flag NumPy's loop does not
        if values is not a and dtype != np.uint64:
            assert grumpy.stats()["fpe_replays"] == replays
        same = got == want
        assert same[defined if values is a else slice(None)].all()


SPURIOUS_EACH_PASS = """
import warnings
import numpy as np
import grumpy
x = np.copy(np.linspace(400.0, 600.0, 300_000, dtype=np.float32))
warnings.simplefilter("always")
total = 0.0
for i in range(40):
    y = np.tanh(x) * np.float32(2.0)  # the kernel's exp overflows; NumPy's tanh does not warn
    total += float(y[i])
print(repr(total))
s = grumpy.stats() if grumpy.enabled() else {}
print(s.get("fpe_replays"), s.get("ops_eager_site"), sorted(s.get("adaptive_sites", {})))
"""


@pytest.mark.cpu_backend
def test_a_line_whose_kernel_raises_flags_numpy_does_not_is_numpys_after_the_first(tmp_path):
    """A replay in which NumPy warned nowhere (float32 tanh overflows inside
    the kernel's exp, NumPy's tanh gives no warning) makes the replayed
    operations' lines NumPy's at once (hooks/sites.c gp_site_replay_end):
    2 replays in 40 passes (the first and the probe at the 16th call), no
    warning, NumPy's values."""
    plain_run, grumpy_run = run_with_and_without(tmp_path, "spurious.py", SPURIOUS_EACH_PASS)
    prog = tmp_path / "spurious.py"
    assert grumpy_run.stderr == plain_run.stderr == ""
    assert grumpy_run.stdout.splitlines()[0] == plain_run.stdout.splitlines()[0]
    replays, eager, sites = grumpy_run.stdout.splitlines()[1].split(" ", 2)
    assert int(replays) == 2 and int(eager) >= 38
    assert f"{prog}:9 warnings" in sites


COPIED_TWICE = """
import warnings
import numpy as np
warnings.simplefilter("always")
x0 = np.random.default_rng(1).integers(-4, 5, (400,), dtype=np.int32)
a = np.array(x0).reshape(100, 4)
v2 = a[None, :, :] / a[:, None, :]     # 0/0 and k/0: two warnings in NumPy, once
v16 = v2 - 0.5
v18 = np.stack([v16, v2], axis=3)      # v2's values computed into two slices
print(float(np.asarray(v18).view(np.ndarray)[1, 2, 3, 0]), float(np.asarray(v2).view(np.ndarray).sum()))
"""


def test_an_operation_computed_by_two_kernels_warns_once(tmp_path):
    """From `tools/fuzz.py --warnings` (seed 641): `np.stack([v2 - 0.5, v2])`
    of a pending division copies each slice by its own kernel, each with its
    own copy of the division (a view of a pending producer), and both
    kernels' replays gave the division's two warnings: five warnings where
    NumPy gives three (checked before this change).  An operation's warnings are
    given once however often its values are computed (GpNode.serial)."""
    plain_run, grumpy_run = run_with_and_without(tmp_path, "twice.py", COPIED_TWICE, GRUMPY_MIN_BYTES="65536",
                                                 GRUMPY_STATS_JSON=str(tmp_path / "stats.json"))
    assert grumpy_run.stdout == plain_run.stdout
    assert plain_run.stderr.count("RuntimeWarning") == 3  # the division's two, the sum's inf - inf
    assert grumpy_run.stderr == plain_run.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["fpe_replays"] >= 2 and stats["kernels_launched"] >= 2


STACKED_THREE = """
import warnings
import numpy as np
import grumpy
warnings.simplefilter("always")
x0 = np.random.default_rng(1).integers(-4, 5, (400,), dtype=np.int32)
a = np.array(x0).reshape(100, 4)
v2 = a[None, :, :] / a[:, None, :]
v18 = np.stack([v2, v2, v2], axis=3)   # the third piece is NumPy's copy
print(float(np.asarray(v18).view(np.ndarray)[1, 2, 3, 0]))
print(grumpy.stats()["guard_faults"] if grumpy.enabled() else 0)
"""


def test_a_concatenation_copying_a_pending_piece_warns_as_numpy(tmp_path):
    """From `tools/fuzz.py --warnings` (seed 641): np.concatenate writes
    each piece lazily into its slice of the result, but hands a piece it
    does not capture to NumPy's copy, which read the pending division's
    memory and faulted; the division's kernel then ran for the fault, which
    gives no warnings (NumPy gives two).  The piece is computed and the
    result's slice opened for the write first, in the caller's context."""
    plain_run, grumpy_run = run_with_and_without(tmp_path, "stack3.py", STACKED_THREE, GRUMPY_MIN_BYTES="65536")
    assert plain_run.stderr.count("RuntimeWarning") == 2
    assert (grumpy_run.stdout, grumpy_run.stderr) == (plain_run.stdout, plain_run.stderr)


RAVELED = """
import hashlib
import warnings
import numpy as np
import grumpy
warnings.simplefilter("always")
x = np.copy(np.linspace(-800.0, 800.0, 300_000)).reshape(600, 500)
r = np.exp(x.T).ravel()            # a copy: exp overflows at 710
f = (x * 3.0).T.flatten()
c = (x * 2.0).ravel()              # C-contiguous: a view
for v in (f, c):
    print(hashlib.sha1(np.asarray(v).view(np.ndarray).tobytes()).hexdigest(), v.shape, v.flags.c_contiguous)
print(int(np.isinf(np.asarray(r).view(np.ndarray)).sum()))
print(grumpy.stats()["guard_faults"] if grumpy.enabled() else 0)
"""


def test_a_ravel_that_copies_a_pending_array_warns_as_numpy(tmp_path):
    """From `tools/fuzz.py --warnings` (seed 641): `np.exp(x.T).ravel()`
    was NumPy's C copy of the pending exponential, which faulted, and the
    kernel run for the fault gave no "overflow encountered in exp".  A
    copying ravel() or flatten() computes the array first; the values are
    NumPy's, nothing faults, and the warning is NumPy's."""
    plain_run, grumpy_run = run_with_and_without(tmp_path, "ravel.py", RAVELED, GRUMPY_MIN_BYTES="65536")
    assert plain_run.stderr.count("RuntimeWarning") == 1
    assert (grumpy_run.stdout, grumpy_run.stderr) == (plain_run.stdout, plain_run.stderr)


@pytest.mark.parametrize("fn", [np.nanmin, np.nanmax])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nanmin_of_an_all_nan_slice_warns_as_for_an_ndarray(fn, axis):
    """NumPy's nanmin / nanmax warn "All-NaN slice encountered" for an
    ndarray; their subclass path, which a grumpy array took, says "All-NaN
    axis encountered" (fuzzer case 658001946).  Values and warnings are the
    ndarray's now."""
    x = np.linspace(-3, 3, 4 * N).reshape(400, -1)
    x[:, 3] = np.nan
    x[7, :] = np.nan
    if axis is None:
        x[:] = np.nan
    with grumpy.disabled():
        want_value = fn(x, axis=axis)
        want = numpy_warnings(lambda: fn(x, axis=axis))
    g = grumpy._ext().as_grumpy(x.copy()) * 1.0  # pending: computed first
    got = numpy_warnings(lambda: plain(fn(g, axis=axis)))
    assert got == want == [(RuntimeWarning, "All-NaN slice encountered")]
    assert_same(plain(fn(grumpy._ext().as_grumpy(x.copy()), axis=axis)), want_value)


OVERWRITTEN_UNREAD = {
    "power-then-multiply-out": lambda x, y: (lambda v: np.multiply(y, y, out=v))(x ** x),
    "sqrt-then-subtract-out": lambda x, y: (lambda v: np.subtract(x, y, out=v))(np.sqrt(x)),  # case 656001269
    "product-then-subtract-out": lambda x, y: (lambda v: np.subtract(y, x, out=v))(x * np.inf),  # case 658000602
    # integer divisions by zero, and one read by an operation that never warns (case 928004199)
    "int-floordiv-then-multiply-out": lambda x, y: (lambda v: np.multiply(x, 1, out=v))(x // y),
    "int-remainder-then-add-out": lambda x, y: (lambda v: np.add(x, y, out=v))(x % y),
    "abs-of-int-floordiv-then-add-out": lambda x, y: (lambda v: np.add(x, 1, out=v))(np.abs(x // y)),
}


@pytest.mark.parametrize("case", sorted(OVERWRITTEN_UNREAD))
def test_a_value_overwritten_before_it_is_read_gives_its_warnings(case):
    """`y = x ** x; np.multiply(x, x, out=y)`: the pending power was
    dropped when the multiply took over y, never computed, and NumPy's
    warning for it never given.  It is computed first now (capture.c
    overwritten_unread); values are NumPy's either way."""
    fn = OVERWRITTEN_UNREAD[case]
    make = int_inputs if case.startswith(("int", "abs-of-int")) else functools.partial(inputs, np.float64)
    with grumpy.disabled():
        x, y = make(False)
        want = numpy_warnings(lambda: fn(x, y))
        want_value = fn(x, y)
    gx, gy = make(True)
    before = grumpy.stats()
    got = numpy_warnings(lambda: plain(fn(gx, gy)))
    assert got == want and want
    assert grumpy.stats()["guard_faults"] == before["guard_faults"]
    assert grumpy.stats()["ops_captured"] > before["ops_captured"]
    assert_same(plain(fn(*make(True))), want_value)


def int_inputs(as_grumpy):
    """int64 operands of N elements, -4..4, with zeros in both."""
    a = np.arange(N, dtype=np.int64) % 9 - 4
    b = np.arange(N, dtype=np.int64) % 7 - 3
    if as_grumpy:
        return grumpy._ext().as_grumpy(a), grumpy._ext().as_grumpy(b)
    return a, b


@pytest.mark.cpu_backend
@pytest.mark.parametrize("op", ["multiply", "divide", "multiply-inf"])
def test_an_in_place_kernel_run_for_a_fault_gives_numpys_warnings(op):
    """`x *= 1e308` pending (an in-place kernel of one operation: its IEEE
    flags are NumPy's loop's), computed inside a page fault when NumPy's own
    C code reads x's memory through a plain view grumpy does not see.  No
    Python there, and the overwritten inputs cannot be replayed: its
    warnings were lost (fpe_unreported).  The flags name them; they are
    queued and given after the fault, NumPy's text."""
    x = np.linspace(-2.0, 2.0, N)
    x[::7] = 0.0

    def program(as_grumpy):
        g = grumpy._ext().as_grumpy(x.copy()) if as_grumpy else x.copy()
        view = plain(g)  # NumPy's class, the same memory: its reads are not grumpy's
        if op == "multiply":
            g *= 1e308  # overflow where |x| > 1.8
        elif op == "divide":
            g /= 0.0  # divide by zero, and invalid at the zeros
        else:
            g *= np.inf  # invalid at the zeros
        total = np.add.reduce(view)  # NumPy's loop reads the pending memory: a fault
        len(())  # (a call: CPython runs pending calls here)
        return total, plain(g).copy()

    got, want = faulting_like_numpy(program)
    np.testing.assert_array_equal(got[1], want[1])
    assert (got[0] == want[0]) or (np.isnan(got[0]) and np.isnan(want[0]))


SEVERAL_IN_PLACE = {
    "floor-divide-by-a-product": lambda g, k: g.__ifloordiv__(k * 1),
    "scaled-product": lambda g, k: g.__imul__((k * 1e300 + 1.0) * 1e10),
    "quotient-of-a-sum": lambda g, k: g.__itruediv__(k + 0.0),
}


@pytest.mark.cpu_backend
@pytest.mark.parametrize("case", sorted(SEVERAL_IN_PLACE))
def test_an_in_place_kernel_of_several_operations_run_for_a_fault_gives_numpys_warnings(case):
    """An in-place kernel of several operations (`x3 //= x1 * 1`, fuzzer
    case 718000551) computed inside a page fault: its flags cannot say
    which operation raised, and its inputs are overwritten, so its warnings
    were lost (fpe_unreported).  NumPy's inner loops compute it instead,
    node by node (loop_evaluations), and its warnings are given after the
    fault, NumPy's text and values."""
    fn = SEVERAL_IN_PLACE[case]
    x = np.linspace(-2.0, 2.0, N)
    k0 = np.round(np.linspace(-3.0, 3.0, N))  # zeros among the divisors

    def program(as_grumpy):
        g = grumpy._ext().as_grumpy(x.copy()) if as_grumpy else x.copy()
        k = grumpy._ext().as_grumpy(k0.copy()) if as_grumpy else k0.copy()
        view = plain(g)  # NumPy's class, the same memory: its reads are not grumpy's
        fn(g, k)
        total = np.add.reduce(view)  # NumPy's loop reads the pending memory: a fault
        len(())  # (a call: CPython runs pending calls here)
        return total, plain(g).copy()

    loops0 = grumpy.stats()["loop_evaluations"]
    got, want = faulting_like_numpy(program)
    assert grumpy.stats()["loop_evaluations"] > loops0
    np.testing.assert_array_equal(got[1], want[1])
    assert (got[0] == want[0]) or (np.isnan(got[0]) and np.isnan(want[0]))


@pytest.mark.cpu_backend
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
@pytest.mark.parametrize("math", ["exp32", "power32", "exp64"])
def test_a_cast_after_a_vector_math_call_raises_no_flag_of_its_own(math, dtype):
    """A float to integer cast of a libmvec result, reduced in the same
    kernel (sobel_gamma's `(enc * 255 + 0.5).astype(np.uint8).mean()`),
    raised "invalid" on every run: the loop's scalar remainder calls the
    vector function on a splat, cvtsd2ss leaves the call's other lanes'
    bits in the register, and LLVM computed the cast's range test as a
    packed compare over all four lanes -- a NaN pattern among them raised
    the flag, NumPy replayed the kernel and found no warning, and the line
    became NumPy's.  The range test is on the float's bits now (codegen.c
    x86_fptosi): no replay, NumPy's values within a unit (the
    transcendental's ULPs, truncated)."""
    src = np.float64 if math == "exp64" else np.float32
    x = plain(np.random.default_rng(0).random(400_000).astype(src) + src(0.01))

    def f(v):
        y = v ** np.float32(0.45) if math == "power32" else np.exp(v)
        return (y * src(100)).astype(dtype)

    want = f(x)
    g = grumpy._ext().as_grumpy(x.copy())
    before, replays = grumpy.stats()["kernels_launched"], grumpy.stats()["fpe_replays"]
    r = f(g)
    mean = float(r.mean())
    assert grumpy.stats()["kernels_launched"] == before + 1  # the map, the cast and the sum: one kernel
    assert grumpy.stats()["fpe_replays"] == replays
    got = plain(r)
    assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1
    assert mean == pytest.approx(float(want.mean()), rel=1e-6)


NAN_COMPARES = """
import sys, warnings
import numpy as np, grumpy
dt = np.dtype(sys.argv[1])
x = np.random.default_rng(0).random(262144).astype(dt)
if sys.argv[2] == "nan":
    x[::97] = np.nan
w = np.random.default_rng(1).random(262144).astype(dt)
g, gw = np.copy(x), np.copy(w)
cases = [lambda v, w: (v < 0.5).sum(), lambda v, w: (v - 1).min(), lambda v, w: (v * w).max(),
         lambda v, w: (v / 3).argmin(), lambda v, w: np.fmax(v + 1, 0.2).max(),
         lambda v, w: (np.clip(v, 0.1, 0.9) * w).sum(), lambda v, w: np.where(v > 0.5, v, 0).sum(),
         lambda v, w: (np.maximum(v, 0) * w).sum(), lambda v, w: np.sign(v - 0.5) * w]
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    for rep in range(3):
        for f in cases:
            got = np.asarray(f(g, gw)).view(np.ndarray)
            with grumpy.disabled():
                want = np.asarray(f(x, w))
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), (rep, f)
    with np.errstate(invalid="warn"):
        r = np.asarray(np.where(g > 0.5, np.sqrt(g - 0.7), 0).sum())
s = grumpy.stats()
print(s["fpe_replays"], s["quiet_compares"], s["ops_eager_site"], [str(m.message) for m in caught])
"""


@pytest.mark.cpu_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compares_of_nans_replay_once_then_compile_quietly(tmp_path, dtype):
    """x86's vector compares and min/max signal "invalid" on a quiet NaN,
    where NumPy's loops are quiet.  The first such kernel is replayed by
    NumPy (no warning), and from then on kernels that compare floats are
    compiled with quiet compares (GpProgram.quiet, stats()["quiet_compares"]):
    27 statements over data with NaNs -- compares, extrema, clip, where,
    min/max/arg reductions beside sums and products -- give NumPy's values
    with 1 replay in all, and stay captured (before: a replay, then each
    line NumPy's).  Data without NaNs never switches (the quiet compare
    costs 20-40% of a compare-bound kernel), and a sqrt of negatives still
    warns."""
    path = tmp_path / "nans.py"
    path.write_text(NAN_COMPARES)
    env = dict(os.environ, GRUMPY_MIN_BYTES="65536", GRUMPY_ADAPTIVE="1")
    out = {}
    for data in ("nan", "clean"):
        r = subprocess.run([sys.executable, "-m", "grumpy.run", str(path), dtype, data], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        replays, quiet, eager, msgs = r.stdout.split(" ", 3)
        out[data] = (int(replays), quiet, int(eager), msgs.strip())
    assert out["nan"][:2] == (1 + 1, "True"), out  # one for the NaNs, one for the sqrt's warning
    assert out["clean"][:2] == (1, "False"), out  # the sqrt's
    assert out["nan"][2] == out["clean"][2], out  # no line made NumPy's by the NaNs' replay
    for data in out:
        assert out[data][3] == "['invalid value encountered in sqrt']", out