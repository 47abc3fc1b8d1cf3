# Fuzzer regression case (tools/fuzz.py, program seed 712001494).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536, GRUMPY_DEBUG_JIT_FAIL=2, GRUMPY_DEBUG_EVAL_LOOPS=1:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in floor_divide'), 1)]
# Run: python case_712001494.py (prints the values), or python tools/fuzz.py --replay /tmp/fz712/case_712001494.py
THREADS = 3
FALLBACK_ENV = {'GRUMPY_DEBUG_JIT_FAIL': '2', 'GRUMPY_DEBUG_EVAL_LOOPS': '1'}
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 712001494 ----
CHECK_712001494 = {'v2': 0.0, 'x0': 0.0}


def inputs_712001494():
    with np.errstate(all="ignore"):
        x0 = _rng(11392023904).integers(0, 10, (131073,), dtype=np.int64)
        return [x0]


def body_712001494(R, x0):
    with _errstate():
        try: np.floor_divide(x0, x0, out=x0)
        except Exception as e: R.err(1, e)
        try: v2 = np.any(x0, axis=(-1,), keepdims=True)
        except Exception as e: R.err(2, e)
        return locals()


PROGRAMS = [
    (712001494, inputs_712001494, body_712001494, CHECK_712001494),
]

if __name__ == "__main__":
    _main(PROGRAMS)
