"""Every call handed to NumPy is counted with its reason and the user's line
(hooks/fallbacks.c): stats()["fallback_reasons"] {reason: count} and
stats()["fallback_sites"] {"file:line": {reason: count}}, the line being the
caller's, not NumPy's (np.mean's pieces are charged to the line that called
np.mean)."""

import inspect

import numpy as np
import pytest

import grumpy

N = 100_000  # 800 KB: captured at the tests' 64 KiB threshold


def here():
    """file:line of the caller's line."""
    f = inspect.currentframe().f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def fallback_of(fn):
    """(reasons delta, sites delta) of calling fn()."""
    before = grumpy.stats()
    fn()
    after = grumpy.stats()
    reasons = {k: v - before["fallback_reasons"].get(k, 0) for k, v in after["fallback_reasons"].items()
               if v != before["fallback_reasons"].get(k, 0)}
    sites = {}
    for site, per in after["fallback_sites"].items():
        old = before["fallback_sites"].get(site, {})
        d = {k: v - old.get(k, 0) for k, v in per.items() if v != old.get(k, 0)}
        if d:
            sites[site] = d
    return reasons, sites


a = np.copy(np.linspace(0, 1, N))

CASES = [
    ("a NumPy function grumpy does not capture", lambda: (np.sort(a), here())[1]),
    ("an operand's dtype is not computed by grumpy (complex, float16, object, strings, ...)",
     lambda: ((a + 1j).real, here())[1]),
    ("a ufunc or ufunc method grumpy does not fuse", lambda: (np.add.outer(a[:300], a[:300]), here())[1]),
    ("an operand is another ndarray subclass (MaskedArray, matrix, memmap, ...)",
     lambda: (np.multiply(a, np.ma.array(np.ones(N))), here())[1]),
    ("a keyword argument grumpy does not capture (dtype=, order=, where= without out=, ...)",
     lambda: (np.add(a, a, dtype=np.float32), here())[1]),
    ("np.errstate/np.seterr has a category in raise, call, print or log mode", lambda: _raise_mode()),
]


def _raise_mode():
    with np.errstate(divide="raise"):
        return (a * 2.0, here())[1]


@pytest.mark.parametrize("reason,call", CASES, ids=[c[0].split(" (")[0][:40] for c in CASES])
def test_each_reason_is_counted_at_the_users_line(reason, call):
    line = []
    reasons, sites = fallback_of(lambda: line.append(call()))
    assert reasons.get(reason, 0) >= 1, reasons
    assert sites.get(line[0], {}).get(reason, 0) >= 1, (line[0], sites)


def test_a_numpy_function_is_charged_to_the_line_that_called_it():
    m = np.ma.array(np.ones(N))
    reasons, sites = fallback_of(lambda: np.mean(np.multiply(a, m)))
    # the multiply at this file's line; NumPy's own lines never appear
    assert not any("/numpy/" in s for s in sites), sites
    assert any(s.startswith(__file__) for s in sites), sites


def test_reset_stats_forgets_reasons_and_sites():
    np.sort(a)
    grumpy.reset_stats()
    s = grumpy.stats()
    assert s["fallback_reasons"] == {} and s["fallback_sites"] == {} and s["fallbacks"] == {}
