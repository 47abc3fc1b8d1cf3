# Fuzzer regression case (tools/fuzz.py, program seed 724004497).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 2)] vs NumPy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 1)]
#   rep 1: warnings: grumpy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 2)] vs NumPy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 1)]
#   rep 2: warnings: grumpy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 2)] vs NumPy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 1)]
# Run: python case_724004497.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_724004497.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 724004497 ----
CHECK_724004497 = {'v1': 0.0, 'v18': 0.0, 'x0': 0.0, 'x3': 0.0}


def inputs_724004497():
    with np.errstate(all="ignore"):
        x0 = _rng(11584071952).uniform(0.9, 1.1, (8191,))
        x3 = _rng(11584071955).uniform(-100.0, 100.0, (128,))
        return [x0, x3]


def body_724004497(R, x0, x3):
    with _errstate():
        try: v1 = np.meshgrid(x3.ravel(), x3, copy=False)[1]
        except Exception as e: R.err(1, e)
        try: v1 /= v1
        except Exception as e: R.err(5, e)
        try: v18 = x0.max(axis=None)
        except Exception as e: R.err(18, e)
        try: v1 *= v18
        except Exception as e: R.err(23, e)
        return locals()


PROGRAMS = [
    (724004497, inputs_724004497, body_724004497, CHECK_724004497),
]

if __name__ == "__main__":
    _main(PROGRAMS)
