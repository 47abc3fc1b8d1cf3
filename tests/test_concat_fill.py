"""np.concatenate / stack / hstack / vstack of pending arrays write each part
straight into the result (one kernel per part, no temporary), and
ndarray.fill is a lazy write: NumPy's values and errors."""

import numpy as np
import pytest

import grumpy
from gpcheck import assert_same, counters, plain

R = np.random.default_rng(11)
A, B, C = R.standard_normal((300, 400)), R.standard_normal((200, 400)), R.standard_normal((300, 100))


def g(x):
    return grumpy._ext().as_grumpy(np.array(x, copy=True))


PROGRAMS = {
    "axis0": (lambda a, b, c: np.concatenate([a * 2, b + 1, a[::-1]]), 3),
    "axis1": (lambda a, b, c: np.concatenate((a - 1, c * c), axis=1), 2),
    "axis-1-then-map": (lambda a, b, c: np.concatenate((a - 1, c * c), axis=-1) + 1, 3),
    "vstack": (lambda a, b, c: np.vstack([a * 2, b]), 2),
    "hstack": (lambda a, b, c: np.hstack([a * 2, c / 3]), 2),
    "stack": (lambda a, b, c: np.stack([a * 2, a + 1], axis=1), 2),
    "strided-parts": (lambda a, b, c: np.concatenate([(a * 2)[:, ::4], c[:, ::-1] + 1], axis=1), 2),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_concatenate_parts_are_written_in_place(name):
    fn, kernels = PROGRAMS[name]
    a, b, c = g(A), g(B), g(C)
    launched0, fallbacks0 = counters()
    got = plain(fn(a, b, c))
    launched1, fallbacks1 = counters()
    assert launched1 - launched0 == kernels
    assert fallbacks1 == fallbacks0
    assert_same(got, fn(A, B, C))


def test_concatenate_errors_and_plain_inputs_are_numpys():
    a, c = g(A), g(C)
    with pytest.raises(ValueError):
        np.concatenate([a * 2, c])
    with pytest.raises(ValueError):
        np.concatenate([a * 2, a], casting="bogus")
    launched0, fallbacks0 = counters()
    assert_same(np.concatenate([a, a]), np.concatenate([A, A]))  # nothing pending: NumPy's copy
    assert counters() == (launched0, fallbacks0)


@pytest.mark.parametrize("dtype,value", [(np.float64, 2.5), (np.float32, -1.25), (np.int32, 7), (np.int16, 2.5),
                                         (np.float64, True), (np.int8, 300)])
def test_fill_is_a_lazy_write(dtype, value):
    want = np.zeros(100_000, dtype)
    x = g(np.zeros(100_000, dtype))
    old = x + 1  # a pending reader of the old values
    try:
        want.fill(value)
    except OverflowError:
        with pytest.raises(OverflowError):
            x.fill(value)
        return
    x.fill(value)
    assert grumpy.is_pending(x) or dtype == np.int16  # a float into an int array is NumPy's fill
    assert_same(x, want)
    assert_same(old, np.zeros(100_000, dtype) + 1)
