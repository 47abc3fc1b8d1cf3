# Fuzzer regression case (tools/fuzz.py, program seed 641000031).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
# Run: python case_641000031.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_641000031.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 641000031 ----
CHECK_641000031 = {'v1': 0.0, 'v3': 0.0, 'v6': 0.0, 'v8': 0.0, 'v11': 0.0, 'x0': 0.0}


def inputs_641000031():
    with np.errstate(all="ignore"):
        x0 = _rng(10256000496).uniform(-1.0, 1.0, (2, 131073))
        return [x0]


def body_641000031(R, x0):
    with _errstate():
        try: v1 = x0[:-2:-1]
        except Exception as e: R.err(1, e)
        try: v3 = np.abs(v1)
        except Exception as e: R.err(3, e)
        try: v6 = -v3
        except Exception as e: R.err(6, e)
        try: v8 = np.sqrt(x0)
        except Exception as e: R.err(8, e)
        try: v11 = np.concatenate([v8, v6], axis=-2)
        except Exception as e: R.err(11, e)
        return locals()


PROGRAMS = [
    (641000031, inputs_641000031, body_641000031, CHECK_641000031),
]

if __name__ == "__main__":
    _main(PROGRAMS)
