# Fuzzer regression case (tools/fuzz.py, program seed 54022395).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   grumpy process exited with status -11 in this program
# Run: python case_54022395.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_54022395.py
THREADS = 8

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)


# ---- program 54022380 ----
CHECK_54022380 = {'v4': 0.00614846289581239, 'v7': 1.773774653587419e-12, 'v12': 157.48084862516734, 'v14': 157.48084862516734, 'x2': 0.0, 'x4': 0.0}


def inputs_54022380():
    with np.errstate(all="ignore"):
        x2 = (_rng(864358082).uniform(-4.0, 4.0, (129, 129))).astype(np.float32)
        x4 = _rng(864358084).uniform(-100.0, 100.0, (2, 129, 129))
        return [x2, x4]


def body_54022380(R, x2, x4):
    with np.errstate(all="ignore"):
        try: v4 = x2.cumsum(axis=1)
        except Exception as e: R.err(4, e)
        try: v7 = np.add.accumulate(x4, axis=0)
        except Exception as e: R.err(7, e)
        try: v12 = np.matmul(v7, v4)
        except Exception as e: R.err(12, e)
        try: v14 = np.asfortranarray(v12)
        except Exception as e: R.err(14, e)
        return locals()


# ---- program 54022395 ----
CHECK_54022395 = {'v6': 1.9660335914536227e-12, 'x0': 0.0}


def inputs_54022395():
    with np.errstate(all="ignore"):
        x0 = _rng(864358320).integers(-4, 5, (129, 129), dtype=np.int32)
        return [x0]


def body_54022395(R, x0):
    with np.errstate(all="ignore"):
        try: v6 = np.corrcoef(x0, rowvar=False)
        except Exception as e: R.err(6, e)
        return locals()


PROGRAMS = [
    (54022380, inputs_54022380, body_54022380, CHECK_54022380),
    (54022395, inputs_54022395, body_54022395, CHECK_54022395),
]

if __name__ == "__main__":
    _main(PROGRAMS)
