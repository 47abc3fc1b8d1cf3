# Fuzzer regression case (tools/fuzz.py, program seed 630001461).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: v9: values differ (exact float64 (4097, 2, 7), digests)
#   rep 1: v9: values differ (exact float64 (4097, 2, 7), digests)
# Run: python case_630001461.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_630001461.py
THREADS = 2

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 630001460 ----
CHECK_630001460 = {'v1': 5.605193857299268e-45, 'v2': 7.263112706823449e-07, 'v5': 7.263112706823449e-07, 'v6': 7.263112706823449e-07, 'v7': 0.0, 'v8': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0}


def inputs_630001460():
    with np.errstate(all="ignore"):
        x0 = (_rng(10080023360).uniform(-1.0, 1.0, (64, 4097))).astype(np.float32)
        x0[_rng(10080023367).random(x0.shape) < 0.01] = np.nan
        x1 = (_rng(10080023361).uniform(-1.0, 1.0, (4097, 1))).T
        x2 = np.asfortranarray(_rng(10080023362).random((64, 4097)) < 0.9)
        return [x0, x1, x2]


def body_630001460(R, x0, x1, x2):
    with np.errstate(all="ignore"):
        try: v1 = np.tanh(x0)
        except Exception as e: R.err(1, e)
        try: v2 = np.max(v1, axis=None)
        except Exception as e: R.err(2, e)
        try: x2[:] = x2[::-1]
        except Exception as e: R.err(3, e)
        try: np.true_divide(v1, v2, out=v1)
        except Exception as e: R.err(4, e)
        try: v5 = np.maximum(v2, v2)
        except Exception as e: R.err(5, e)
        try: v6 = np.asarray(v5, dtype=np.float32)
        except Exception as e: R.err(6, e)
        try: v7 = np.tensordot(x2.T, x2, axes=([0], [1]))
        except Exception as e: R.err(7, e)
        try: v8 = np.array(v7.ravel()[:300]).reshape(100, 3)[None, :, :] * np.array(v7.ravel()[:300]).reshape(100, 3)[:, None, :]
        except Exception as e: R.err(8, e)
        return locals()


# ---- program 630001461 ----
CHECK_630001461 = {'v1': 0.0, 'v2': 0.0, 'v3': 2.384185791015625e-07, 'v4': 1.7763568377196087e-15, 'v5': 1.7763568377196087e-15, 'v6': 0.0, 'v7': 0.0, 'v8': 2.384185791015625e-07, 'v9': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_630001461():
    with np.errstate(all="ignore"):
        x0 = np.asfortranarray(_rng(10080023376).integers(-100, 101, (0, 7, 4097), dtype=np.int64))
        x1 = _rng(10080023377).integers(0, 10, (4097,), dtype=np.int32)
        x2 = _rng(10080023378).uniform(-1.0, 1.0, (7, 4097))
        x3 = (_rng(10080023379).uniform(-4.0, 4.0, (14, 4097)))[::2]
        return [x0, x1, x2, x3]


def body_630001461(R, x0, x1, x2, x3):
    with np.errstate(all="ignore"):
        try: v1 = np.broadcast_to(x3, (2, 7, 4097))
        except Exception as e: R.err(1, e)
        try: v2 = v1 > v1
        except Exception as e: R.err(2, e)
        try: v3 = np.log(v2)
        except Exception as e: R.err(3, e)
        try: v4 = np.cos(v1)
        except Exception as e: R.err(4, e)
        try: v5 = np.transpose(v4, (2, 0, 1))
        except Exception as e: R.err(5, e)
        try: v6 = v2 - np.float32(1.5)
        except Exception as e: R.err(6, e)
        try: v7 = v1.astype(np.bool, copy=False)
        except Exception as e: R.err(7, e)
        try: v8 = v3 / v7
        except Exception as e: R.err(8, e)
        try: v9 = np.subtract(v5, v5)
        except Exception as e: R.err(9, e)
        return locals()


PROGRAMS = [
    (630001460, inputs_630001460, body_630001460, CHECK_630001460),
    (630001461, inputs_630001461, body_630001461, CHECK_630001461),
]

if __name__ == "__main__":
    _main(PROGRAMS)
