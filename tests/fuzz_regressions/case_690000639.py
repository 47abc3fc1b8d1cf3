# Fuzzer regression case (tools/fuzz.py, program seed 690000639).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in remainder'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in remainder'), 1)]
# Run: python case_690000639.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_690000639.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 690000639 ----
CHECK_690000639 = {'v1': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 2.55e-321, 'v12': 2.55e-321, 'v14': 0.0, 'x3': 0.0}


def inputs_690000639():
    with np.errstate(all="ignore"):
        x3 = np.round(_rng(11040010227).uniform(-4.0, 4.0, (129, 129)) * 4) / 4
        return [x3]


def body_690000639(R, x3):
    with _errstate():
        try: v1 = x3[64]
        except Exception as e: R.err(1, e)
        try: v5 = x3.reshape((16641,), order='F')
        except Exception as e: R.err(5, e)
        try: v6 = np.max(v5, axis=0)
        except Exception as e: R.err(6, e)
        try: v7 = np.prod(v1, axis=None)
        except Exception as e: R.err(7, e)
        try: v12 = np.where(v5 > 1, 2, v6)
        except Exception as e: R.err(12, e)
        try: v14 = v12 % v5
        except Exception as e: R.err(14, e)
        try: v12[::-1] = v7
        except Exception as e: R.err(15, e)
        return locals()


PROGRAMS = [
    (690000639, inputs_690000639, body_690000639, CHECK_690000639),
]

if __name__ == "__main__":
    _main(PROGRAMS)
