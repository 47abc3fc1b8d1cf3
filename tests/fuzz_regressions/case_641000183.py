# Fuzzer regression case (tools/fuzz.py, program seed 641000183).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1)] vs NumPy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 1: warnings: grumpy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1)] vs NumPy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 2: warnings: grumpy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1)] vs NumPy [(('RuntimeWarning', 'Degrees of freedom <= 0 for slice'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
# Run: python case_641000183.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_641000183.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 641000183 ----
CHECK_641000183 = {'v5': 1.330811938260209e-26, 'x0': 0.0}


def inputs_641000183():
    with np.errstate(all="ignore"):
        x0 = _rng(10256002928).uniform(-100.0, 100.0, (64, 128))
        return [x0]


def body_641000183(R, x0):
    with _errstate():
        try: v5 = x0.var(axis=(), ddof=1)
        except Exception as e: R.err(5, e)
        return locals()


PROGRAMS = [
    (641000183, inputs_641000183, body_641000183, CHECK_641000183),
]

if __name__ == "__main__":
    _main(PROGRAMS)
