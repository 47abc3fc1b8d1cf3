# Fuzzer regression case (tools/fuzz.py, program seed 902001243).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: v16: grumpy gave array strides (1024, 16, 8), NumPy array strides (8, 1024, 512)
#   rep 1: v16: grumpy gave array strides (1024, 16, 8), NumPy array strides (8, 1024, 512)
#   rep 2: v16: grumpy gave array strides (1024, 16, 8), NumPy array strides (8, 1024, 512)
# Run: python case_902001243.py (prints the values), or python tools/fuzz.py --replay /work/fzl2/case_902001243.py
THREADS = 3
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 902001243 ----
CHECK_902001243 = {'v1': 0.0, 'v4': 0.0, 'v10': 0.0, 'v16': 2.932544684263784e-28, 'x0': 0.0, 'x1': 0.0}


def inputs_902001243():
    with np.errstate(all="ignore"):
        x0 = (_rng(14432019888).integers(-4, 5, (128, 64), dtype=np.int64)).T
        x1 = _rng(14432019889).uniform(0.9, 1.1, (1, 128))
        return [x0, x1]


def body_902001243(R, x0, x1):
    with _errstate():
        try: v1 = x0 + x1
        except Exception as e: R.err(1, e)
        try: v4 = np.broadcast_to(v1, (3, 64, 128))
        except Exception as e: R.err(4, e)
        try: v10 = np.reshape(v4, (3, 64, 64, 2))
        except Exception as e: R.err(10, e)
        try: v16 = v10.var(axis=-4, ddof=1)
        except Exception as e: R.err(16, e)
        return locals()


PROGRAMS = [
    (902001243, inputs_902001243, body_902001243, CHECK_902001243),
]

if __name__ == "__main__":
    _main(PROGRAMS)
