# Fuzzer regression case (tools/fuzz.py, program seed 668000149).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: statement 8: grumpy did not raise, NumPy raised OverflowError
#   rep 0: v3: 266305 of 266305 values differ, first at flat index [0, 1, 2]: [2116113823, 2116113823, 2116113823] vs NumPy's [0, 0, 0]
#   rep 1: statement 8: grumpy did not raise, NumPy raised OverflowError
#   rep 1: v3: 266305 of 266305 values differ, first at flat index [0, 1, 2]: [2116113823, 2116113823, 2116113823] vs NumPy's [0, 0, 0]
#   rep 2: statement 8: grumpy did not raise, NumPy raised OverflowError
#   rep 2: v3: 266305 of 266305 values differ, first at flat index [0, 1, 2]: [2116113823, 2116113823, 2116113823] vs NumPy's [0, 0, 0]
# Run: python case_668000149.py (prints the values), or python tools/fuzz.py --replay /work/fz/f668/case_668000149.py
THREADS = 8

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 668000149 ----
CHECK_668000149 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'x0': 0.0, 'x2': 0.0}


def inputs_668000149():
    with np.errstate(all="ignore"):
        x0 = _rng(10688002384).integers(-2147483648, 2147483648, (65, 4097), dtype=np.int32)
        x2 = _rng(10688002386).uniform(-1.0, 1.0, (65, 4097))
        return [x0, x2]


def body_668000149(R, x0, x2):
    with _errstate():
        try: v1 = x2.astype(np.int32, copy=False)
        except Exception as e: R.err(1, e)
        try: v2 = x0.copy().sum(axis=(1, 0))
        except Exception as e: R.err(2, e)
        try: v3 = np.abs(v1)
        except Exception as e: R.err(3, e)
        try: v3[:, ::-1] = v2
        except Exception as e: R.err(8, e)
        return locals()


PROGRAMS = [
    (668000149, inputs_668000149, body_668000149, CHECK_668000149),
]

if __name__ == "__main__":
    _main(PROGRAMS)
