# Fuzzer regression case (tools/fuzz.py, program seed 648001299).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
# Run: python case_648001299.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_648001299.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 648001299 ----
CHECK_648001299 = {'v1': 0.0, 'v4': 0.0, 'x0': 0.0}


def inputs_648001299():
    with np.errstate(all="ignore"):
        x0 = np.round(_rng(10368020784).uniform(-4.0, 4.0, (64, 129)) * 4) / 4
        return [x0]


def body_648001299(R, x0):
    with _errstate():
        try: v1 = np.square(x0)
        except Exception as e: R.err(1, e)
        try: v1 /= v1
        except Exception as e: R.err(2, e)
        try: v4 = np.asfortranarray(v1)
        except Exception as e: R.err(4, e)
        return locals()


PROGRAMS = [
    (648001299, inputs_648001299, body_648001299, CHECK_648001299),
]

if __name__ == "__main__":
    _main(PROGRAMS)
