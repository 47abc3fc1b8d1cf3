# Fuzzer regression case (tools/fuzz.py, program seed 648001650).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in divide'), 1)]
# Run: python case_648001650.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_648001650.py
THREADS = 3
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 648001650 ----
CHECK_648001650 = {'v2': 0.0, 'v10': 0.0, 'v12': 0.0, 'x0': 0.0, 'x1': 0.0}


def inputs_648001650():
    with np.errstate(all="ignore"):
        x0 = _rng(10368026400).uniform(0.9, 1.1, (65, 129))
        x1 = np.round(_rng(10368026401).uniform(-4.0, 4.0, (65, 1)) * 4) / 4
        return [x0, x1]


def body_648001650(R, x0, x1):
    with _errstate():
        try: v2 = x0 - x0
        except Exception as e: R.err(2, e)
        try: v2 /= x1
        except Exception as e: R.err(8, e)
        try: v10 = v2[::2, :-2:3]
        except Exception as e: R.err(10, e)
        try: v12 = v10.reshape((-1,))
        except Exception as e: R.err(12, e)
        return locals()


PROGRAMS = [
    (648001650, inputs_648001650, body_648001650, CHECK_648001650),
]

if __name__ == "__main__":
    _main(PROGRAMS)
