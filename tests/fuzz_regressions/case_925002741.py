# Fuzzer regression case (tools/fuzz.py, program seed 925002741).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: v15: grumpy gave array strides (16, 8), NumPy array strides (8, 16)
#   rep 1: v15: grumpy gave array strides (16, 8), NumPy array strides (8, 16)
#   rep 2: v15: grumpy gave array strides (16, 8), NumPy array strides (8, 16)
# Run: python case_925002741.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_925002741.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 925002741 ----
CHECK_925002741 = {'v3': 0.0, 'v10': 0.0, 'v13': 0.0, 'v14': 0.0, 'v15': 2.625211481880654e-08, 'x0': 0.0, 'x1': 0.0}


def inputs_925002741():
    with np.errstate(all="ignore"):
        x0 = (_rng(14800043856).uniform(-4.0, 4.0, (2, 4097))).astype(np.float32)
        x1 = _rng(14800043857).integers(-2147483648, 2147483648, (2, 2, 4097), dtype=np.int32)
        return [x0, x1]


def body_925002741(R, x0, x1):
    with _errstate():
        try: v3 = np.broadcast_to(x1, (2, 2, 2, 4097))
        except Exception as e: R.err(3, e)
        try: v10 = np.asarray(v3, dtype=np.int64)
        except Exception as e: R.err(10, e)
        try: v13 = np.max(v10, axis=-2, keepdims=True)
        except Exception as e: R.err(13, e)
        try: v14 = np.clip(v13, 0, 3)
        except Exception as e: R.err(14, e)
        try: v15 = np.matmul(np.broadcast_to(x0[:, None, :], (2, 1, 4097)), np.swapaxes(v14, -1, -2))
        except Exception as e: R.err(15, e)
        return locals()


PROGRAMS = [
    (925002741, inputs_925002741, body_925002741, CHECK_925002741),
]

if __name__ == "__main__":
    _main(PROGRAMS)
