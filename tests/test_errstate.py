"""np.errstate / np.seterrcall under capture (DESIGN.md 4): every error kind
in every mode, float32 and float64, one operation and a fused expression,
gives NumPy's warnings, exceptions and callbacks, warning for warning.

How: operations recorded under "ignore" / "warn" are fused; a kernel that
raises an IEEE flag a node watches is replayed with NumPy under each node's
recorded state (fpe_replays).  Under "raise" / "call" the operation is
NumPy's, at once (a counted fallback), so the error comes from its own
statement."""

import warnings

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, plain

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
