# Fuzzer regression case (tools/fuzz.py, program seed 624000371).
# grumpy differed from NumPy with GRUMPY_THREADS=3, GRUMPY_MIN_BYTES=65536:
#   rep 0: v1: 20 of 64000 values differ (bound 0.0361; largest difference nan), first at flat index [30012, 30130, 30246]: [nan, nan, nan] vs NumPy's [inf, inf, inf]
#   rep 1: v1: 20 of 64000 values differ (bound 0.0361; largest difference nan), first at flat index [30012, 30130, 30246]: [nan, nan, nan] vs NumPy's [inf, inf, inf]
#   rep 2: v1: 20 of 64000 values differ (bound 0.0361; largest difference nan), first at flat index [30012, 30130, 30246]: [nan, nan, nan] vs NumPy's [inf, inf, inf]
# Run: python case_624000371.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_624000371.py
THREADS = 3

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 624000371 ----
CHECK_624000371 = {'v1': 0.01807014023550557, 'x0': 0.0, 'x3': 0.0}


def inputs_624000371():
    with np.errstate(all="ignore"):
        x0 = ((_rng(9984005936).uniform(-1.0, 1.0, (128, 1000))).astype(np.float32))[::2]
        x0[_rng(9984005943).random(x0.shape) < 0.01] = np.nan
        x0[_rng(9984005944).random(x0.shape) < 0.005] = -np.inf
        x3 = np.round(_rng(9984005939).uniform(-4.0, 4.0, (64, 1)) * 4) / 4
        return [x0, x3]


def body_624000371(R, x0, x3):
    with np.errstate(all="ignore"):
        try: v1 = np.power(x0, x3)
        except Exception as e: R.err(1, e)
        return locals()


PROGRAMS = [
    (624000371, inputs_624000371, body_624000371, CHECK_624000371),
]

if __name__ == "__main__":
    _main(PROGRAMS)
