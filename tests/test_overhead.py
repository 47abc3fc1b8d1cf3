"""Issue "never slower": what a captured statement costs besides its
kernel.  Counted, not timed (timings are tools/ benchmarks)."""

import numpy as np
import pytest

import grumpy


def counters():
    s = grumpy.stats()
    return s["protects"], s["kernels_launched"], s["serial_launches"]


@pytest.mark.cpu_backend
def test_a_temporary_summed_at_once_is_not_protected_and_unprotected():
    """(a*b).sum(): the temporary a*b is written by the map-reduce kernel
    (its array is alive) and its only reader is that kernel's reduction.
    It was committed read-only (its consumer still pending), then made
    writable again when marked and when freed: two mprotects of populated
    pages per statement, ~15% of the time at 1 MiB.  Now the one mprotect
    left is the reservation of the next fresh result's address range."""
    n = 131072  # 1 MiB operands, above the tests' 64 KiB threshold
    a, b = np.copy(np.linspace(0, 1, n)), np.copy(np.linspace(1, 2, n))
    want = float(np.multiply(np.asarray(a).view(np.ndarray), np.asarray(b).view(np.ndarray)).sum())
    for _ in range(5):
        float((a * b).sum())
    p0, l0, _ = counters()
    for _ in range(50):
        s = float((a * b).sum())
    p1, l1, _ = counters()
    assert s == pytest.approx(want, rel=1e-12)
    assert l1 - l0 == 50
    assert p1 - p0 <= 50


@pytest.mark.cpu_backend
def test_small_launches_run_on_the_calling_thread_large_ones_on_the_pool():
    """Waking the pool costs more than a second thread gains below ~8 MiB
    moved (backend_cpu.c SERIAL_BYTES, measured): such launches run serially."""
    small = np.copy(np.linspace(0, 1, 100_000))       # 0.8 MiB
    large = np.copy(np.linspace(0, 1, 2_000_000))     # 16 MiB
    _, l0, s0 = counters()
    x = np.asarray(small * 2.0 + 1.0)
    _, l1, s1 = counters()
    y = np.asarray(large * 2.0 + 1.0)
    _, l2, s2 = counters()
    assert (l1 - l0, s1 - s0) == (1, 1)
    assert (l2 - l1, s2 - s1) == (1, 0)
    assert x[-1] == 3.0 and y[-1] == 3.0
