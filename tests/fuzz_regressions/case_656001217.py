# Fuzzer regression case (tools/fuzz.py, program seed 656001217).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in remainder'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in remainder'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in remainder'), 1)]
# Run: python case_656001217.py (prints the values), or python tools/fuzz.py --replay /work/fz/w656/case_656001217.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 656001217 ----
CHECK_656001217 = {'v1': 0.0, 'x1': 0.0, 'x2': 0.0}


def inputs_656001217():
    with np.errstate(all="ignore"):
        x1 = np.round(_rng(10496019473).uniform(-4.0, 4.0, (131073,)) * 4) / 4
        x2 = _rng(10496019474).uniform(0.0, 4.0, (1, 131073))
        return [x1, x2]


def body_656001217(R, x1, x2):
    with _errstate():
        try: v1 = np.reshape(x1, (1, 131073))
        except Exception as e: R.err(1, e)
        try: x2 %= v1
        except Exception as e: R.err(2, e)
        return locals()


PROGRAMS = [
    (656001217, inputs_656001217, body_656001217, CHECK_656001217),
]

if __name__ == "__main__":
    _main(PROGRAMS)
