# Fuzzer regression case (tools/fuzz.py, program seed 641000151).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in cast'), 1)] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in reduce'), 1)]
# Run: python case_641000151.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_641000151.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 641000151 ----
CHECK_641000151 = {'v3': 0.0, 'v8': 0.0, 'v11': 0.0, 'v12': 0.0, 'x3': 0.0}


def inputs_641000151():
    with np.errstate(all="ignore"):
        x3 = _rng(10256002419).random((1, 131073)) < 0.1
        return [x3]


def body_641000151(R, x3):
    with _errstate():
        try: v3 = np.sum(x3, axis=0)
        except Exception as e: R.err(3, e)
        try: v8 = np.true_divide(1e-3, v3)
        except Exception as e: R.err(8, e)
        try: v11 = np.add(v8, True)
        except Exception as e: R.err(11, e)
        try: v12 = np.prod(v11, axis=0, dtype=np.int64)
        except Exception as e: R.err(12, e)
        return locals()


PROGRAMS = [
    (641000151, inputs_641000151, body_641000151, CHECK_641000151),
]

if __name__ == "__main__":
    _main(PROGRAMS)
