# Fuzzer regression case (tools/fuzz.py, program seed 658000564).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in log'), 1), (('RuntimeWarning', 'invalid value encountered in log'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in log'), 1), (('RuntimeWarning', 'invalid value encountered in log'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in log'), 1), (('RuntimeWarning', 'invalid value encountered in log'), 1)]
# Run: python case_658000564.py (prints the values), or python tools/fuzz.py --replay /work/fz/w658/case_658000564.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 658000564 ----
CHECK_658000564 = {'v3': 0.0, 'v4': 0.0, 'v6': 3.4566308021327665e-15, 'v7': 2.976125515658931e-07, 'x0': 0.0}


def inputs_658000564():
    with np.errstate(all="ignore"):
        x0 = (np.round(_rng(10528009024).uniform(-4.0, 4.0, (128, 65, 2)) * 4) / 4).T
        return [x0]


def body_658000564(R, x0):
    with _errstate():
        try: v3 = np.where(x0, x0, np.int64(-4))
        except Exception as e: R.err(3, e)
        try: v4 = np.subtract(3, v3)
        except Exception as e: R.err(4, e)
        try: v6 = np.log(v4)
        except Exception as e: R.err(6, e)
        try: v7 = v4.cumsum(axis=None)
        except Exception as e: R.err(7, e)
        return locals()


PROGRAMS = [
    (658000564, inputs_658000564, body_658000564, CHECK_658000564),
]

if __name__ == "__main__":
    _main(PROGRAMS)
