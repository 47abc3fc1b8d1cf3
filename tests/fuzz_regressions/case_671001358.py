# Fuzzer regression case (tools/fuzz.py, program seed 671001358).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in log'), 1), (('RuntimeWarning', 'invalid value encountered in log'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in log'), 1), (('RuntimeWarning', 'invalid value encountered in log'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in log'), 1), (('RuntimeWarning', 'invalid value encountered in log'), 1)]
# Run: python case_671001358.py (prints the values), or python tools/fuzz.py --replay /work/fz/w671/case_671001358.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 671001358 ----
CHECK_671001358 = {'v6': 0.0, 'v7': 0.0, 'v9': 2.4625534697973183e-15, 'v15': 0.0, 'x0': 0.0}


def inputs_671001358():
    with np.errstate(all="ignore"):
        x0 = _rng(10736021728).integers(-4, 5, (64, 129), dtype=np.int64)
        return [x0]


def body_671001358(R, x0):
    with _errstate():
        try: v6 = np.roll(x0, 64)
        except Exception as e: R.err(6, e)
        try: v7 = np.where(v6 > 0, x0, x0)
        except Exception as e: R.err(7, e)
        try: v9 = np.log(v7)
        except Exception as e: R.err(9, e)
        try: v15 = np.tensordot(v7.T, v7.T, axes=2)
        except Exception as e: R.err(15, e)
        return locals()


PROGRAMS = [
    (671001358, inputs_671001358, body_671001358, CHECK_671001358),
]

if __name__ == "__main__":
    _main(PROGRAMS)
