# Fuzzer regression case (tools/fuzz.py, program seed 56005011).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   grumpy process timed out in this program
# Run: python case_56005011.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_56005011.py
THREADS = 3

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)


# ---- program 56005011 ----
CHECK_56005011 = {'v2': 3.5524580722093762e-15, 'v3': 0.0, 'v4': 1.7762290361046881e-15, 'v5': 4.8440878284907924e-12, 'v6': 1.523711109994961e-09, 'x1': 0.0, 'x4': 0.0}


def inputs_56005011():
    with np.errstate(all="ignore"):
        x1 = _rng(896080177).random((65, 128)) < 0.9
        x4 = _rng(896080180).uniform(0.0, 4.0, (1, 65, 128))
        return [x1, x4]


def body_56005011(R, x1, x4):
    with np.errstate(all="ignore"):
        try: np.maximum(x1, x1, out=x1)
        except Exception as e: R.err(1, e)
        try: v2 = np.average(x4, axis=-3, weights=np.arange(1.0, 2.0))
        except Exception as e: R.err(2, e)
        try: v3 = x4.astype(np.int32, copy=False)
        except Exception as e: R.err(3, e)
        try: v4 = x4.prod(axis=0, dtype=np.float64)
        except Exception as e: R.err(4, e)
        try: v5 = np.tensordot(x1, v2, axes=([0], [0]))
        except Exception as e: R.err(5, e)
        try: v6 = x1.dot(v5.T)
        except Exception as e: R.err(6, e)
        return locals()


PROGRAMS = [
    (56005011, inputs_56005011, body_56005011, CHECK_56005011),
]

if __name__ == "__main__":
    _main(PROGRAMS)
