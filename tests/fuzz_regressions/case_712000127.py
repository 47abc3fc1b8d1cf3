# Fuzzer regression case (tools/fuzz.py, program seed 712000127).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536, GRUMPY_DEBUG_JIT_FAIL=2, GRUMPY_DEBUG_EVAL_LOOPS=1:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
# Run: python case_712000127.py (prints the values), or python tools/fuzz.py --replay /tmp/fz712/case_712000127.py
THREADS = 3
FALLBACK_ENV = {'GRUMPY_DEBUG_JIT_FAIL': '2', 'GRUMPY_DEBUG_EVAL_LOOPS': '1'}
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 712000127 ----
CHECK_712000127 = {'v3': 0.0, 'x0': 0.0}


def inputs_712000127():
    with np.errstate(all="ignore"):
        x0 = _rng(11392002032).integers(-4, 5, (16384,), dtype=np.int32)
        return [x0]


def body_712000127(R, x0):
    with _errstate():
        try: np.floor_divide(x0, x0, out=x0)
        except Exception as e: R.err(2, e)
        try: v3 = x0.cumsum(axis=-1)
        except Exception as e: R.err(3, e)
        return locals()


PROGRAMS = [
    (712000127, inputs_712000127, body_712000127, CHECK_712000127),
]

if __name__ == "__main__":
    _main(PROGRAMS)
