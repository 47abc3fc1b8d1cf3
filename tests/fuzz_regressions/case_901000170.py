# Fuzzer regression case (tools/fuzz.py, program seed 901000170).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: v3: grumpy gave array strides (1032, 8), NumPy array strides (8, 1032)
#   rep 1: v3: grumpy gave array strides (1032, 8), NumPy array strides (8, 1032)
#   rep 2: v3: grumpy gave array strides (1032, 8), NumPy array strides (8, 1032)
# Run: python case_901000170.py (prints the values), or python tools/fuzz.py --replay /work/fzl/case_901000170.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 901000170 ----
CHECK_901000170 = {'v1': 3.6033781790847294e-11, 'v3': 4.8488375668311274e-09, 'x2': 0.0, 'x3': 0.0}


def inputs_901000170():
    with np.errstate(all="ignore"):
        x2 = (_rng(14416002722).uniform(0.0, 4.0, (129, 129))).T
        x3 = (_rng(14416002723).random((129, 129)) < 0.1).T
        return [x2, x3]


def body_901000170(R, x2, x3):
    with _errstate():
        try: v1 = np.cumsum(x2, axis=1)
        except Exception as e: R.err(1, e)
        try: v3 = np.einsum('ij,jk->ik', v1, x3)
        except Exception as e: R.err(3, e)
        return locals()


PROGRAMS = [
    (901000170, inputs_901000170, body_901000170, CHECK_901000170),
]

if __name__ == "__main__":
    _main(PROGRAMS)
