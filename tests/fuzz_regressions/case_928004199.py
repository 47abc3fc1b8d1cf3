# Fuzzer regression case (tools/fuzz.py, program seed 928004199).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
# Run: python case_928004199.py (prints the values), or python tools/fuzz.py --replay /work/fz928/case_928004199.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 928004199 ----
CHECK_928004199 = {'v1': 0.0, 'v4': 0.0, 'x0': 0.0}


def inputs_928004199():
    with np.errstate(all="ignore"):
        x0 = _rng(14848067184).integers(-4, 5, (8192,), dtype=np.int64)
        return [x0]


def body_928004199(R, x0):
    with _errstate():
        try: v1 = np.asfortranarray(x0)
        except Exception as e: R.err(1, e)
        try: v4 = np.floor_divide(v1, v1)
        except Exception as e: R.err(4, e)
        try: np.multiply(v1, True, out=v4)
        except Exception as e: R.err(8, e)
        return locals()


PROGRAMS = [
    (928004199, inputs_928004199, body_928004199, CHECK_928004199),
]

if __name__ == "__main__":
    _main(PROGRAMS)
