# Fuzzer regression case (tools/fuzz.py, program seed 901000153).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: v15: grumpy gave array strides (16388, 4), NumPy array strides (4, 260)
#   rep 1: v15: grumpy gave array strides (16388, 4), NumPy array strides (4, 260)
#   rep 2: v15: grumpy gave array strides (16388, 4), NumPy array strides (4, 260)
# Run: python case_901000153.py (prints the values), or python tools/fuzz.py --replay /work/fzl/case_901000153.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 901000153 ----
CHECK_901000153 = {'v1': 0.0, 'v7': 0.0, 'v10': 0.0, 'v13': 0.0, 'v14': 0.0, 'v15': 0.0, 'x1': 0.0}


def inputs_901000153():
    with np.errstate(all="ignore"):
        x1 = np.asfortranarray((np.round(_rng(14416002449).uniform(-4.0, 4.0, (65, 4097)) * 4) / 4).astype(np.float32))
        return [x1]


def body_901000153(R, x1):
    with _errstate():
        try: v1 = x1 * x1
        except Exception as e: R.err(1, e)
        try: v7 = np.add(x1, v1)
        except Exception as e: R.err(7, e)
        try: v10 = v7[:, None]
        except Exception as e: R.err(10, e)
        try: v13 = v10[:, None]
        except Exception as e: R.err(13, e)
        try: v14 = np.subtract(-2.5, v13)
        except Exception as e: R.err(14, e)
        try: v15 = np.roll((v14 * 1), (1000, 1), axis=(1, 3))
        except Exception as e: R.err(15, e)
        return locals()


PROGRAMS = [
    (901000153, inputs_901000153, body_901000153, CHECK_901000153),
]

if __name__ == "__main__":
    _main(PROGRAMS)
