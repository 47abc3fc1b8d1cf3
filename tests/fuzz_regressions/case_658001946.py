# Fuzzer regression case (tools/fuzz.py, program seed 658001946).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'All-NaN axis encountered'), 1)] vs NumPy [(('RuntimeWarning', 'All-NaN slice encountered'), 1)]
# Run: python case_658001946.py (prints the values), or python tools/fuzz.py --replay /work/fz/w658/case_658001946.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 658001946 ----
CHECK_658001946 = {'v5': 2.8424570573705225e-12, 'v12': 2.8424570573705225e-12, 'v14': 2.8424570573705225e-12, 'x2': 0.0}


def inputs_658001946():
    with np.errstate(all="ignore"):
        x2 = (_rng(10528031138).uniform(-1.0, 1.0, (127, 129))).T
        x2[_rng(10528031145).random(x2.shape) < 0.01] = np.nan
        x2[_rng(10528031146).random(x2.shape) < 0.005] = -np.inf
        return [x2]


def body_658001946(R, x2):
    with _errstate():
        try: v5 = np.cumsum(x2, axis=-2)
        except Exception as e: R.err(5, e)
        try: v12 = v5.copy().min(axis=1)
        except Exception as e: R.err(12, e)
        try: v14 = np.nanmax(v12, axis=None)
        except Exception as e: R.err(14, e)
        return locals()


PROGRAMS = [
    (658001946, inputs_658001946, body_658001946, CHECK_658001946),
]

if __name__ == "__main__":
    _main(PROGRAMS)
