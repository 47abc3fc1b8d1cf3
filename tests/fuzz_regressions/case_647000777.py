# Fuzzer regression case (tools/fuzz.py, program seed 647000777).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
# Run: python case_647000777.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_647000777.py
THREADS = 3
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 647000777 ----
CHECK_647000777 = {'v2': 0.0, 'v13': 0.0, 'v14': 0.0, 'x0': 0.0, 'x2': 0.0}


def inputs_647000777():
    with np.errstate(all="ignore"):
        x0 = _rng(10352012432).integers(-4, 5, (16385,), dtype=np.int64)
        x2 = _rng(10352012434).integers(-4, 5, (128, 129), dtype=np.int32)
        return [x0, x2]


def body_647000777(R, x0, x2):
    with _errstate():
        try: v2 = (np.array(x2.ravel()[:300])[:, None] * 2) // np.array(x0.ravel()[-700:])[None, :]
        except Exception as e: R.err(2, e)
        try: v13 = np.where(x0, np.float32(1.5), np.float32(1.5))
        except Exception as e: R.err(13, e)
        try: v14 = x0[::-1]
        except Exception as e: R.err(14, e)
        try: np.copyto(x0, v14)
        except Exception as e: R.err(15, e)
        return locals()


PROGRAMS = [
    (647000777, inputs_647000777, body_647000777, CHECK_647000777),
]

if __name__ == "__main__":
    _main(PROGRAMS)
