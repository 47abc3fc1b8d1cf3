# Fuzzer regression case (tools/fuzz.py, program seed 656000843).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in floor_divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in floor_divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in floor_divide'), 1)]
# Run: python case_656000843.py (prints the values), or python tools/fuzz.py --replay /work/fz/w656/case_656000843.py
THREADS = 3
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 656000843 ----
CHECK_656000843 = {'x2': 0.0}


def inputs_656000843():
    with np.errstate(all="ignore"):
        x2 = np.round(_rng(10496013490).uniform(-4.0, 4.0, (131073, 2)) * 4) / 4
        return [x2]


def body_656000843(R, x2):
    with _errstate():
        try: x2 //= x2
        except Exception as e: R.err(2, e)
        return locals()


PROGRAMS = [
    (656000843, inputs_656000843, body_656000843, CHECK_656000843),
]

if __name__ == "__main__":
    _main(PROGRAMS)
