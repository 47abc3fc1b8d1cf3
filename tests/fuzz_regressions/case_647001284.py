# Fuzzer regression case (tools/fuzz.py, program seed 647001284).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
# Run: python case_647001284.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_647001284.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 647001284 ----
CHECK_647001284 = {'x0': 0.0}


def inputs_647001284():
    with np.errstate(all="ignore"):
        x0 = _rng(10352020544).uniform(-1.0, 1.0, (8193,))
        return [x0]


def body_647001284(R, x0):
    with _errstate():
        try: np.sqrt(x0, out=x0)
        except Exception as e: R.err(3, e)
        return locals()


PROGRAMS = [
    (647001284, inputs_647001284, body_647001284, CHECK_647001284),
]

if __name__ == "__main__":
    _main(PROGRAMS)
