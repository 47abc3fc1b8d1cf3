# Fuzzer regression case (tools/fuzz.py, program seed 692001582).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536, device emulated (and cpu):
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
# Run: python case_692001582.py (prints the values), or python tools/fuzz.py --replay /work/fz/s18/case_692001582.py
THREADS = 8
DEVICE = 'cpu'
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 692001582 ----
CHECK_692001582 = {'v8': 0.0, 'x1': 0.0}


def inputs_692001582():
    with np.errstate(all="ignore"):
        x1 = _rng(11072025313).random((65537,)) < 0.5
        return [x1]


def body_692001582(R, x1):
    with _errstate():
        try: v8 = np.true_divide(x1, x1)
        except Exception as e: R.err(8, e)
        try: x1.fill(1)
        except Exception as e: R.err(15, e)
        return locals()


PROGRAMS = [
    (692001582, inputs_692001582, body_692001582, CHECK_692001582),
]

if __name__ == "__main__":
    _main(PROGRAMS)
