# Fuzzer regression case (tools/fuzz.py, program seed 656001269).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
# Run: python case_656001269.py (prints the values), or python tools/fuzz.py --replay /work/fz/w656/case_656001269.py
THREADS = 8
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 656001269 ----
CHECK_656001269 = {'v1': 0.0, 'x0': 0.0, 'x1': 0.0}


def inputs_656001269():
    with np.errstate(all="ignore"):
        x0 = _rng(10496020304).uniform(-4.0, 4.0, (64, 129))
        x1 = _rng(10496020305).uniform(0.0, 4.0, (64, 129))
        return [x0, x1]


def body_656001269(R, x0, x1):
    with _errstate():
        try: v1 = np.sqrt(x0)
        except Exception as e: R.err(1, e)
        try: np.multiply(x1, x1, out=v1)
        except Exception as e: R.err(2, e)
        return locals()


PROGRAMS = [
    (656001269, inputs_656001269, body_656001269, CHECK_656001269),
]

if __name__ == "__main__":
    _main(PROGRAMS)
