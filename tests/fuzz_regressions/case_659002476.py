# Fuzzer regression case (tools/fuzz.py, program seed 659002476).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in remainder'), 1)]
# Run: python case_659002476.py (prints the values), or python tools/fuzz.py --replay /work/fz/w659/case_659002476.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 659002476 ----
CHECK_659002476 = {'v1': 0.0, 'x1': 0.0}


def inputs_659002476():
    with np.errstate(all="ignore"):
        x1 = _rng(10544039617).integers(-4, 5, (65537,), dtype=np.int32)
        return [x1]


def body_659002476(R, x1):
    with _errstate():
        try: v1 = np.asarray(x1, dtype=np.bool)
        except Exception as e: R.err(1, e)
        try: np.remainder(x1, v1, out=x1)
        except Exception as e: R.err(2, e)
        return locals()


PROGRAMS = [
    (659002476, inputs_659002476, body_659002476, CHECK_659002476),
]

if __name__ == "__main__":
    _main(PROGRAMS)
