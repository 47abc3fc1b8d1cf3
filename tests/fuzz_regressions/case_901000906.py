# Fuzzer regression case (tools/fuzz.py, program seed 901000906).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: v9: grumpy gave array strides (1032, 8), NumPy array strides (8, 1032)
#   rep 1: v9: grumpy gave array strides (1032, 8), NumPy array strides (8, 1032)
#   rep 2: v9: grumpy gave array strides (1032, 8), NumPy array strides (8, 1032)
# Run: python case_901000906.py (prints the values), or python tools/fuzz.py --replay /work/fzl/case_901000906.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 901000906 ----
CHECK_901000906 = {'v2': 0.0, 'v9': 8.382403079949383e-11, 'x0': 0.0, 'x3': 0.0}


def inputs_901000906():
    with np.errstate(all="ignore"):
        x0 = (_rng(14416014496).integers(0, 10, (128, 129), dtype=np.int32)).T
        x3 = (_rng(14416014499).uniform(-4.0, 4.0, (129, 128))).astype(np.float32)
        return [x0, x3]


def body_901000906(R, x0, x3):
    with _errstate():
        try: v2 = x3.astype(np.float64, copy=False)
        except Exception as e: R.err(2, e)
        try: v9 = np.einsum('ij,jk->ik', x0, v2.T)
        except Exception as e: R.err(9, e)
        return locals()


PROGRAMS = [
    (901000906, inputs_901000906, body_901000906, CHECK_901000906),
]

if __name__ == "__main__":
    _main(PROGRAMS)
