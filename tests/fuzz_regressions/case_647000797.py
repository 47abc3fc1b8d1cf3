# Fuzzer regression case (tools/fuzz.py, program seed 647000797).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'invalid value encountered in cast'), 1)] vs NumPy [(('RuntimeWarning', 'invalid value encountered in reduce'), 1)]
# Run: python case_647000797.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_647000797.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 647000797 ----
CHECK_647000797 = {'v3': 0.0, 'v6': 0.0, 'v8': 0.0, 'x0': 0.0}


def inputs_647000797():
    with np.errstate(all="ignore"):
        x0 = (_rng(10352012752).uniform(-100.0, 100.0, (128, 65))).T
        x0[_rng(10352012759).random(x0.shape) < 0.01] = np.nan
        x0[_rng(10352012760).random(x0.shape) < 0.005] = -np.inf
        return [x0]


def body_647000797(R, x0):
    with _errstate():
        try: v3 = x0 * x0
        except Exception as e: R.err(3, e)
        try: v6 = np.multiply(v3, v3)
        except Exception as e: R.err(6, e)
        try: v8 = v6.copy().sum(axis=0, dtype=np.int64)
        except Exception as e: R.err(8, e)
        return locals()


PROGRAMS = [
    (647000797, inputs_647000797, body_647000797, CHECK_647000797),
]

if __name__ == "__main__":
    _main(PROGRAMS)
