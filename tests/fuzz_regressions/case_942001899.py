# Fuzzer regression case (tools/fuzz.py, program seed 942001899).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: v20: dtype int64 (l) vs NumPy's int64 (q)
#   rep 1: v20: dtype int64 (l) vs NumPy's int64 (q)
#   rep 2: v20: dtype int64 (l) vs NumPy's int64 (q)
# Run: python case_942001899.py (prints the values), or python tools/fuzz.py --replay /tmp/fz942/case_942001899.py
THREADS = 3
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 942001899 ----
CHECK_942001899 = {'v1': 0.0, 'v2': 0.0, 'v14': 0.0, 'v18': 0.0, 'v20': 0.0, 'x0': 0.0}


def inputs_942001899():
    with np.errstate(all="ignore"):
        x0 = np.round(_rng(15072030384).uniform(-4.0, 4.0, (16384,)) * 4) / 4
        return [x0]


def body_942001899(R, x0):
    with _errstate():
        try: v1 = x0[..., None]
        except Exception as e: R.err(1, e)
        try: v2 = np.searchsorted(np.sort(v1.ravel())[::2], np.sort(v1, axis=None), 'right')
        except Exception as e: R.err(2, e)
        try: v14 = np.roll(v2, (7, 64, 2), axis=(0, 0, 0))
        except Exception as e: R.err(14, e)
        try: v18 = x0.astype(np.longlong)
        except Exception as e: R.err(18, e)
        try: v20 = np.concatenate([v14, v14, v18], axis=0)
        except Exception as e: R.err(20, e)
        return locals()


PROGRAMS = [
    (942001899, inputs_942001899, body_942001899, CHECK_942001899),
]

if __name__ == "__main__":
    _main(PROGRAMS)
