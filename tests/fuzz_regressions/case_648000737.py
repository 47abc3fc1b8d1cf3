# Fuzzer regression case (tools/fuzz.py, program seed 648000737).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in subtract'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in subtract'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in subtract'), 1)]
# Run: python case_648000737.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_648000737.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 648000737 ----
CHECK_648000737 = {'v1': 1.3308114547568333e-26, 'x4': 0.0}


def inputs_648000737():
    with np.errstate(all="ignore"):
        x4 = _rng(10368011796).uniform(-100.0, 100.0, (16385,))
        x4[_rng(10368011803).random(x4.shape) < 0.01] = np.nan
        x4[_rng(10368011804).random(x4.shape) < 0.005] = -np.inf
        return [x4]


def body_648000737(R, x4):
    with _errstate():
        try: v1 = x4.var(axis=())
        except Exception as e: R.err(1, e)
        return locals()


PROGRAMS = [
    (648000737, inputs_648000737, body_648000737, CHECK_648000737),
]

if __name__ == "__main__":
    _main(PROGRAMS)
