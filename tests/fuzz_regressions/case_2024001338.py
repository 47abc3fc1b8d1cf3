# Fuzzer regression case (tools/fuzz.py, program seed 2024001338).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: statement 11: grumpy raised TypeError, NumPy did not raise
#   rep 0: v11: only in NumPy's results
#   rep 1: statement 11: grumpy raised TypeError, NumPy did not raise
#   rep 1: v11: only in NumPy's results
#   rep 2: statement 11: grumpy raised TypeError, NumPy did not raise
#   rep 2: v11: only in NumPy's results
# Run: python case_2024001338.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_2024001338.py
THREADS = 3

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)


# ---- program 2024001338 ----
CHECK_2024001338 = {'v4': 0.0, 'v11': 9.766630201596525e-16, 'x2': 0.0}


def inputs_2024001338():
    with np.errstate(all="ignore"):
        x2 = _rng(32384021410).uniform(0.0, 4.0, (131073,))
        return [x2]


def body_2024001338(R, x2):
    with np.errstate(all="ignore"):
        try: v4 = x2[..., 0]
        except Exception as e: R.err(4, e)
        try: v11 = np.std(v4, axis=())
        except Exception as e: R.err(11, e)
        return locals()


PROGRAMS = [
    (2024001338, inputs_2024001338, body_2024001338, CHECK_2024001338),
]

if __name__ == "__main__":
    _main(PROGRAMS)
