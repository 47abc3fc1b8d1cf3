# Fuzzer regression case (tools/fuzz.py, program seed 718000551).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
# Run: python case_718000551.py (prints the values), or python tools/fuzz.py --replay /tmp/fz718/case_718000551.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 718000551 ----
CHECK_718000551 = {'v1': 0.0, 'v3': 4.444876134221247e-08, 'v4': 4.444876311856931e-08, 'v11': 0.0, 'v12': 4.444876311856931e-08, 'x1': 0.0, 'x3': 0.0}


def inputs_718000551():
    with np.errstate(all="ignore"):
        x1 = _rng(11488008817).integers(-100, 101, (65, 4097), dtype=np.int32)
        x3 = _rng(11488008819).uniform(-100.0, 100.0, (65, 4097))
        return [x1, x3]


def body_718000551(R, x1, x3):
    with _errstate():
        try: v1 = np.roll(x1, 1, axis=1)
        except Exception as e: R.err(1, e)
        try: v3 = x1.var(axis=(-1,))
        except Exception as e: R.err(3, e)
        try: v4 = np.tanh(v3)
        except Exception as e: R.err(4, e)
        try: x1 -= x1
        except Exception as e: R.err(7, e)
        try: x3 //= v1
        except Exception as e: R.err(8, e)
        try: v11 = np.fmax(x1, x3)
        except Exception as e: R.err(11, e)
        try: v12 = (v4 * 1).take((np.abs(x1) % 65).astype(np.int64))
        except Exception as e: R.err(12, e)
        return locals()


PROGRAMS = [
    (718000551, inputs_718000551, body_718000551, CHECK_718000551),
]

if __name__ == "__main__":
    _main(PROGRAMS)
