"""``with grumpy.disabled():`` and ``with grumpy.enabled():`` regions: inside
a disabled one NumPy runs every operation at once (nothing recorded, no
fallback counted, results plain ndarrays); arrays recorded before stay lazy
and read right; an enabled region inside captures again; per thread."""

import threading

import numpy as np

import grumpy

N = 200_000  # 1.6 MiB: captured at the tests' 64 KiB threshold


def plain(x):
    return np.asarray(x).view(np.ndarray)


def counts():
    s = grumpy.stats()
    return s["ops_captured"], s["kernels_launched"], sum(s["fallbacks"].values())


def test_nothing_is_captured_or_counted_in_a_disabled_region():
    a = np.copy(np.linspace(0, 1, N))
    pending = a * 3.0 + 1.0  # recorded before the region: stays lazy
    assert grumpy.is_pending(pending)
    c0 = counts()
    with grumpy.disabled():
        assert not grumpy.enabled() and grumpy.disabled()
        b = np.sin(a) * 2.0 + np.sort(a)  # np.sort would be a counted fallback outside
        s = float(b.sum())
        z = np.zeros(N)
        assert type(b) is np.ndarray and type(z) is np.ndarray
        assert not grumpy.is_pending(b)
        got_pending = float(pending[-1])
    c1 = counts()
    assert grumpy.enabled()
    assert c1[0] == c0[0] and c1[2] == c0[2], (c0, c1)
    want = np.sin(plain(a)) * 2.0 + np.sort(plain(a))
    assert s == float(want.sum())
    assert got_pending == 4.0
    # captured again after the region
    d = a * 2.0
    assert grumpy.is_pending(d) and counts()[0] == c1[0] + 1


def test_an_enabled_region_inside_a_disabled_one_captures_and_they_nest():
    a = np.copy(np.linspace(0, 1, N))
    with grumpy.disabled():
        with grumpy.disabled():
            assert grumpy.is_pending(a + 1.0) is False
        with grumpy.enabled():
            x = a + 1.0
            assert grumpy.is_pending(x)
        y = a + 1.0
        assert not grumpy.is_pending(y)
    assert grumpy.is_pending(a + 1.0)
    assert float(x[3]) == float(y[3]) == float(plain(a)[3] + 1.0)


def test_regions_are_per_thread():
    """A block open in another thread leaves this thread's capture on."""
    a = np.copy(np.linspace(0, 1, N))
    inside, leave = threading.Event(), threading.Event()
    seen = {}

    def other():
        with grumpy.disabled():
            seen["other"] = bool(grumpy.disabled())
            inside.set()
            leave.wait(30)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(30)
    seen["here"] = grumpy.is_pending(a * 5.0)
    leave.set()
    t.join()
    assert seen == {"other": True, "here": True}


def test_enabled_still_reads_as_a_boolean():
    assert grumpy.enabled() == True  # noqa: E712 (the old bool API)
    assert repr(grumpy.enabled()) == "True" and bool(grumpy.enabled())
