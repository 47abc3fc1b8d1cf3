# Fuzzer regression case (tools/fuzz.py, program seed 9001000036).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: v16: grumpy gave array, NumPy scalar int64
#   rep 1: v16: grumpy gave array, NumPy scalar int64
#   rep 2: v16: grumpy gave array, NumPy scalar int64
# Run: python case_9001000036.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_9001000036.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 9001000036 ----
CHECK_9001000036 = {'v2': 0.0, 'v5': 0.0, 'v16': 0.0, 'x2': 0.0}


def inputs_9001000036():
    with np.errstate(all="ignore"):
        x2 = _rng(144016000578).integers(0, 10, (4097, 2), dtype=np.int32)
        return [x2]


def body_9001000036(R, x2):
    with _errstate():
        try: v2 = np.multiply(x2, np.float32(1.5))
        except Exception as e: R.err(2, e)
        try: v5 = np.add(v2, v2)
        except Exception as e: R.err(5, e)
        try: v16 = np.nanargmin(v5, axis=None)
        except Exception as e: R.err(16, e)
        return locals()


PROGRAMS = [
    (9001000036, inputs_9001000036, body_9001000036, CHECK_9001000036),
]

if __name__ == "__main__":
    _main(PROGRAMS)
