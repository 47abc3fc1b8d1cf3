# Fuzzer regression case (tools/fuzz.py, program seed 717001628).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 2)] vs NumPy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 1)]
#   rep 1: warnings: grumpy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 2)] vs NumPy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 1)]
#   rep 2: warnings: grumpy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 2)] vs NumPy [(('DeprecationWarning', 'Numpy has detected that you (may be) writing to an array with\noverlapping memory from np.broadcast_arrays. If this is intentional\nset the WRITEABLE flag True or make a copy immediately before writing.'), 1)]
# Run: python case_717001628.py (prints the values), or python tools/fuzz.py --replay /tmp/fz717/case_717001628.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 717001628 ----
CHECK_717001628 = {'v2': 0.0, 'v5': 0.0, 'v6': 0.0, 'v11': 0.0, 'x1': 0.0}


def inputs_717001628():
    with np.errstate(all="ignore"):
        x1 = _rng(11472026049).uniform(-4.0, 4.0, (129,))
        return [x1]


def body_717001628(R, x1):
    with _errstate():
        try: v2 = np.abs(x1)
        except Exception as e: R.err(2, e)
        try: v5 = np.roll((x1 * 1), -1)
        except Exception as e: R.err(5, e)
        try: v6 = np.meshgrid(v5.ravel(), v5, copy=False)[1]
        except Exception as e: R.err(6, e)
        try: np.copyto(v6, v2)
        except Exception as e: R.err(7, e)
        try: v11 = np.moveaxis(v6, -1, 0)
        except Exception as e: R.err(11, e)
        try: np.copyto(v11, x1)
        except Exception as e: R.err(13, e)
        return locals()


PROGRAMS = [
    (717001628, inputs_717001628, body_717001628, CHECK_717001628),
]

if __name__ == "__main__":
    _main(PROGRAMS)
