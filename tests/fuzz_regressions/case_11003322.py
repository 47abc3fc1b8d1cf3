# Fuzzer regression case (tools/fuzz.py, program seed 11003322).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: v20: grumpy gave array, NumPy scalar bool
#   rep 1: v20: grumpy gave array, NumPy scalar bool
#   rep 2: v20: grumpy gave array, NumPy scalar bool
# Run: python case_11003322.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_11003322.py
THREADS = 3

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)


# ---- program 11003322 ----
CHECK_11003322 = {'v7': 0.0, 'v19': 0.0, 'v20': 0.0, 'x0': 0.0}


def inputs_11003322():
    with np.errstate(all="ignore"):
        x0 = _rng(176053152).uniform(-4.0, 4.0, (16385,))
        return [x0]


def body_11003322(R, x0):
    with np.errstate(all="ignore"):
        try: v7 = -x0
        except Exception as e: R.err(7, e)
        try: v19 = v7[..., 8192]
        except Exception as e: R.err(19, e)
        try: v20 = v19 == v19
        except Exception as e: R.err(20, e)
        return locals()


PROGRAMS = [
    (11003322, inputs_11003322, body_11003322, CHECK_11003322),
]

if __name__ == "__main__":
    _main(PROGRAMS)
