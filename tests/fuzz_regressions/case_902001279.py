# Fuzzer regression case (tools/fuzz.py, program seed 902001279).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: v4: grumpy gave array strides (1048584, 8), NumPy array strides (8, 16)
#   rep 1: v4: grumpy gave array strides (1048584, 8), NumPy array strides (8, 16)
#   rep 2: v4: grumpy gave array strides (1048584, 8), NumPy array strides (8, 16)
# Run: python case_902001279.py (prints the values), or python tools/fuzz.py --replay /work/fzl2/case_902001279.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 902001279 ----
CHECK_902001279 = {'v3': 0.0, 'v4': 0.0, 'x0': 0.0}


def inputs_902001279():
    with np.errstate(all="ignore"):
        x0 = (_rng(14432020464).uniform(0.0, 4.0, (131073,))).astype(np.float32)
        return [x0]


def body_902001279(R, x0):
    with _errstate():
        try: v3 = np.broadcast_to(x0, (2, 131073))
        except Exception as e: R.err(3, e)
        try: v4 = v3.astype(np.float64)
        except Exception as e: R.err(4, e)
        return locals()


PROGRAMS = [
    (902001279, inputs_902001279, body_902001279, CHECK_902001279),
]

if __name__ == "__main__":
    _main(PROGRAMS)
