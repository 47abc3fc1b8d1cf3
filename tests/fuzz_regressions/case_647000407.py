# Fuzzer regression case (tools/fuzz.py, program seed 647000407).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
# Run: python case_647000407.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_647000407.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 647000407 ----
CHECK_647000407 = {'v6': 0.0, 'x0': 0.0}


def inputs_647000407():
    with np.errstate(all="ignore"):
        x0 = (np.round(_rng(10352006512).uniform(-4.0, 4.0, (7, 4097)) * 4) / 4).astype(np.float32)
        return [x0]


def body_647000407(R, x0):
    with _errstate():
        try: v6 = np.sqrt(x0)
        except Exception as e: R.err(6, e)
        try: v6[-1, 0] = np.float64(-0.75)
        except Exception as e: R.err(9, e)
        return locals()


PROGRAMS = [
    (647000407, inputs_647000407, body_647000407, CHECK_647000407),
]

if __name__ == "__main__":
    _main(PROGRAMS)
