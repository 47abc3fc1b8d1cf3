# Fuzzer regression case (tools/fuzz.py, program seed 647000962).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1)]
# Run: python case_647000962.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_647000962.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 647000962 ----
CHECK_647000962 = {'x1': 0.0, 'x2': 0.0}


def inputs_647000962():
    with np.errstate(all="ignore"):
        x1 = _rng(10352015393).uniform(-4.0, 4.0, (1, 131073))
        x2 = _rng(10352015394).random((131073,)) < 0.5
        return [x1, x2]


def body_647000962(R, x1, x2):
    with _errstate():
        try: np.true_divide(x1, x2, out=x1)
        except Exception as e: R.err(7, e)
        return locals()


PROGRAMS = [
    (647000962, inputs_647000962, body_647000962, CHECK_647000962),
]

if __name__ == "__main__":
    _main(PROGRAMS)
