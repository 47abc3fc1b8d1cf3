# Fuzzer regression case (tools/fuzz.py, program seed 659002184).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1)] vs NumPy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 1: warnings: grumpy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1)] vs NumPy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 2: warnings: grumpy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1)] vs NumPy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
# Run: python case_659002184.py (prints the values), or python tools/fuzz.py --replay /work/fz/w659/case_659002184.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 659002184 ----
CHECK_659002184 = {'v15': 0.0, 'v18': 2e-323, 'x1': 0.0}


def inputs_659002184():
    with np.errstate(all="ignore"):
        x1 = _rng(10544034945).uniform(-4.0, 4.0, (1, 131073))
        return [x1]


def body_659002184(R, x1):
    with _errstate():
        try: v15 = np.argmin(x1, axis=0)
        except Exception as e: R.err(15, e)
        try: v18 = np.std(v15, axis=(), ddof=1)
        except Exception as e: R.err(18, e)
        return locals()


PROGRAMS = [
    (659002184, inputs_659002184, body_659002184, CHECK_659002184),
]

if __name__ == "__main__":
    _main(PROGRAMS)
