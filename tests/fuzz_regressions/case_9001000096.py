# Fuzzer regression case (tools/fuzz.py, program seed 9001000096).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: v9: shape (1, 1000) vs NumPy's (1000,)
#   rep 1: v9: shape (1, 1000) vs NumPy's (1000,)
#   rep 2: v9: shape (1, 1000) vs NumPy's (1000,)
# Run: python case_9001000096.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_9001000096.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 9001000096 ----
CHECK_9001000096 = {'v1': 0.0, 'v6': 0.0, 'v9': 0.0, 'x3': 0.0}


def inputs_9001000096():
    with np.errstate(all="ignore"):
        x3 = _rng(144016001539).integers(-100, 101, (65, 1000), dtype=np.int32)
        return [x3]


def body_9001000096(R, x3):
    with _errstate():
        try: v1 = x3.cumsum(axis=1)
        except Exception as e: R.err(1, e)
        try: v6 = np.sqrt(v1)
        except Exception as e: R.err(6, e)
        try: v9 = np.nanargmin(v6, axis=0)
        except Exception as e: R.err(9, e)
        return locals()


PROGRAMS = [
    (9001000096, inputs_9001000096, body_9001000096, CHECK_9001000096),
]

if __name__ == "__main__":
    _main(PROGRAMS)
