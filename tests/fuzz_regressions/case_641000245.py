# Fuzzer regression case (tools/fuzz.py, program seed 641000245).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
# Run: python case_641000245.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_641000245.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 641000245 ----
CHECK_641000245 = {'v1': 0.0, 'v8': 0.0, 'x0': 0.0, 'x1': 0.0}


def inputs_641000245():
    with np.errstate(all="ignore"):
        x0 = _rng(10256003920).uniform(-4.0, 4.0, (3, 3, 127))
        x1 = _rng(10256003921).random((3, 127)) < 0.5
        return [x0, x1]


def body_641000245(R, x0, x1):
    with _errstate():
        try: v1 = (np.array(x0.ravel()[:1143])[:, None] * 2) - np.array(x1.ravel()[-16:])[None, :]
        except Exception as e: R.err(1, e)
        try: v8 = v1[::-1, :]
        except Exception as e: R.err(8, e)
        try: np.sqrt(v8, out=v8)
        except Exception as e: R.err(16, e)
        return locals()


PROGRAMS = [
    (641000245, inputs_641000245, body_641000245, CHECK_641000245),
]

if __name__ == "__main__":
    _main(PROGRAMS)
