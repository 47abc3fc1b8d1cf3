# Fuzzer regression case (tools/fuzz.py, program seed 648001078).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1)] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in reduce'), 1)]
#   rep 1: warnings: grumpy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1)] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in reduce'), 1)]
#   rep 2: warnings: grumpy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1)] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in reduce'), 1)]
# Run: python case_648001078.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_648001078.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 648001078 ----
CHECK_648001078 = {'v1': 0.0, 'v9': 0.0, 'v13': 3.103340944178863e-11, 'x0': 0.0, 'x1': 0.0, 'x3': 0.0}


def inputs_648001078():
    with np.errstate(all="ignore"):
        x0 = _rng(10368017248).integers(-4, 5, (129, 129), dtype=np.int64)
        x1 = (np.round(_rng(10368017249).uniform(-4.0, 4.0, (129, 129)) * 4) / 4).astype(np.float32)
        x3 = _rng(10368017251).uniform(0.0, 4.0, (129,))
        return [x0, x1, x3]


def body_648001078(R, x0, x1, x3):
    with _errstate():
        try: v1 = 1e-3 / x1
        except Exception as e: R.err(1, e)
        try: v9 = np.where(x0, x3, v1)
        except Exception as e: R.err(9, e)
        try: v13 = np.nansum(v9, axis=(1,), keepdims=True)
        except Exception as e: R.err(13, e)
        return locals()


PROGRAMS = [
    (648001078, inputs_648001078, body_648001078, CHECK_648001078),
]

if __name__ == "__main__":
    _main(PROGRAMS)
