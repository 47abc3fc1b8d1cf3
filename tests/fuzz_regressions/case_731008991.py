# Fuzzer regression case (tools/fuzz.py, program seed 731008991).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: v9: 258 of 258 values differ (bound 6.42e-12; largest difference 10.591300704861029), first at flat index [0, 1, 2]: [-4.0, -4.0, -4.0] vs NumPy's [5.381484873721618, 5.286464406119213, 5.315440767441622]
#   rep 1: v9: 258 of 258 values differ (bound 6.42e-12; largest difference 10.591300704861029), first at flat index [0, 1, 2]: [-4.0, -4.0, -4.0] vs NumPy's [5.381484873721618, 5.286464406119213, 5.315440767441622]
#   rep 2: v9: 258 of 258 values differ (bound 6.42e-12; largest difference 10.591300704861029), first at flat index [0, 1, 2]: [-4.0, -4.0, -4.0] vs NumPy's [5.381484873721618, 5.286464406119213, 5.315440767441622]
# Run: python case_731008991.py (prints the values), or python tools/fuzz.py --replay /work/fz731/case_731008991.py
THREADS = 2
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 731008991 ----
CHECK_731008991 = {'v9': 3.2110918964369087e-12, 'v12': 0.0, 'x0': 0.0}


def inputs_731008991():
    with np.errstate(all="ignore"):
        x0 = np.asfortranarray(_rng(11696143856).uniform(-4.0, 4.0, (2, 129, 127)))
        return [x0]


def body_731008991(R, x0):
    with _errstate():
        try: v9 = np.var(x0, axis=(2,))
        except Exception as e: R.err(9, e)
        try: v12 = np.meshgrid(v9.ravel(), v9, copy=False)[0]
        except Exception as e: R.err(12, e)
        try: np.copyto(v12, np.int64(-4))
        except Exception as e: R.err(16, e)
        return locals()


PROGRAMS = [
    (731008991, inputs_731008991, body_731008991, CHECK_731008991),
]

if __name__ == "__main__":
    _main(PROGRAMS)
