# Fuzzer regression case (tools/fuzz.py, program seed 729003760).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: v4: 1 of 1 values differ, first at flat index [0]: [4856] vs NumPy's [2428]
#   rep 1: v4: 1 of 1 values differ, first at flat index [0]: [4856] vs NumPy's [2428]
# Run: python case_729003760.py (prints the values), or python tools/fuzz.py --replay /work/s24/f729/case_729003760.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 729003760 ----
CHECK_729003760 = {'v3': 0.0, 'v4': 0.0, 'x2': 0.0}


def inputs_729003760():
    with np.errstate(all="ignore"):
        x2 = (_rng(11664060162).uniform(0.0, 4.0, (4097, 2, 1))).T
        return [x2]


def body_729003760(R, x2):
    with _errstate():
        try: v3 = -x2
        except Exception as e: R.err(3, e)
        try: v4 = np.argmax(v3, axis=None, keepdims=True)
        except Exception as e: R.err(4, e)
        return locals()


PROGRAMS = [
    (729003760, inputs_729003760, body_729003760, CHECK_729003760),
]

if __name__ == "__main__":
    _main(PROGRAMS)
