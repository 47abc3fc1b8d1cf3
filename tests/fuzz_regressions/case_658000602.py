# Fuzzer regression case (tools/fuzz.py, program seed 658000602).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in multiply'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in multiply'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'invalid value encountered in multiply'), 1)]
# Run: python case_658000602.py (prints the values), or python tools/fuzz.py --replay /work/fz/w658/case_658000602.py
THREADS = 3
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 658000602 ----
CHECK_658000602 = {'v2': 0.0, 'x0': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_658000602():
    with np.errstate(all="ignore"):
        x0 = _rng(10528009632).integers(-100, 101, (1, 131073), dtype=np.int64)
        x3 = np.asfortranarray((_rng(10528009635).uniform(-4.0, 4.0, (1, 131073))).astype(np.float32))
        x3[_rng(10528009642).random(x3.shape) < 0.01] = np.nan
        x3[_rng(10528009643).random(x3.shape) < 0.005] = -np.inf
        x4 = _rng(10528009636).uniform(-4.0, 4.0, ())
        return [x0, x3, x4]


def body_658000602(R, x0, x3, x4):
    with _errstate():
        try: v2 = x3 * x0
        except Exception as e: R.err(2, e)
        try: np.subtract(x0, x4, out=v2)
        except Exception as e: R.err(4, e)
        return locals()


PROGRAMS = [
    (658000602, inputs_658000602, body_658000602, CHECK_658000602),
]

if __name__ == "__main__":
    _main(PROGRAMS)
