# Fuzzer regression case (tools/fuzz.py, program seed 9001000598).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: v12: 69997 of 69997 values differ (exact; largest difference 3.3549624559712636e+38), first at flat index [0, 1, 2]: [-2.0109376907348633, -6.532041283699237e+36, -1.699302077293396] vs NumPy's [0.575282871723175, -3.4780592918395996, -1.3411942720413208]
#   rep 1: v12: 69997 of 69997 values differ (exact; largest difference 7.021669149398804), first at flat index [0, 1, 2]: [0.0, 6.749073793727616e-41, 0.0] vs NumPy's [0.575282871723175, -3.4780592918395996, -1.3411942720413208]
#   rep 2: v12: 69997 of 69997 values differ (exact; largest difference 7.021669149398804), first at flat index [0, 1, 2]: [0.0, 6.749073793727616e-41, 0.0] vs NumPy's [0.575282871723175, -3.4780592918395996, -1.3411942720413208]
# Run: python case_9001000598.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_9001000598.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 9001000598 ----
CHECK_9001000598 = {'v5': 0.0, 'v6': 0.0, 'v12': 0.0, 'x0': 0.0}


def inputs_9001000598():
    with np.errstate(all="ignore"):
        x0 = (_rng(144016009568).uniform(-4.0, 4.0, (131073,))).astype(np.float32)
        return [x0]


def body_9001000598(R, x0):
    with _errstate():
        try: v5 = (x0 * 1)[(np.arange(70000) * 7 % 131073).astype(np.int64)]
        except Exception as e: R.err(5, e)
        try: v6 = v5[1:-2]
        except Exception as e: R.err(6, e)
        try: v12 = np.roll(v6, 64, axis=0)
        except Exception as e: R.err(12, e)
        return locals()


PROGRAMS = [
    (9001000598, inputs_9001000598, body_9001000598, CHECK_9001000598),
]

if __name__ == "__main__":
    _main(PROGRAMS)
