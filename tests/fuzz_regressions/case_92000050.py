# Fuzzer regression case (tools/fuzz.py, program seed 92000050).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   grumpy process timed out in this program
# Run: python case_92000050.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_92000050.py
THREADS = 3

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 92000050 ----
CHECK_92000050 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v9': 0.0, 'v10': 0.0, 'v12': 0.0016751758522500723, 'v15': 2.9522327950807208e-12, 'v16': 0.0, 'x1': 0.0, 'x2': 0.0}


def inputs_92000050():
    with np.errstate(all="ignore"):
        x1 = np.asfortranarray((_rng(1472000801).uniform(-1.0, 1.0, (129, 129))).astype(np.float32))
        x1[_rng(1472000808).random(x1.shape) < 0.01] = np.nan
        x2 = (_rng(1472000802).uniform(-1.0, 1.0, (129, 129)))[::-1, ::-1]
        return [x1, x2]


def body_92000050(R, x1, x2):
    with np.errstate(all="ignore"):
        try: v1 = np.multiply(x2, x2)
        except Exception as e: R.err(1, e)
        try: v2 = np.argmin(v1, axis=0)
        except Exception as e: R.err(2, e)
        try: v3 = np.sqrt(x2)
        except Exception as e: R.err(3, e)
        try: v4 = x1.astype(np.bool, copy=False)
        except Exception as e: R.err(4, e)
        try: v9 = np.moveaxis(v4, -2, 1)
        except Exception as e: R.err(9, e)
        try: v10 = np.argmax(v9, axis=-2)
        except Exception as e: R.err(10, e)
        try: v12 = x2.sum(axis=1, dtype=np.float32)
        except Exception as e: R.err(12, e)
        try: v15 = np.einsum('ij,kj->ik', v9, v1)
        except Exception as e: R.err(15, e)
        try: v16 = v10 + v10
        except Exception as e: R.err(16, e)
        try: x1 -= v1
        except Exception as e: R.err(17, e)
        return locals()


PROGRAMS = [
    (92000050, inputs_92000050, body_92000050, CHECK_92000050),
]

if __name__ == "__main__":
    _main(PROGRAMS)
