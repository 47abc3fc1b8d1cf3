# Fuzzer regression case (tools/fuzz.py, program seed 904004250).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 2)] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
# Fixed: the NumPy evaluator's located warning and a kernel's queued one for the
# same operation, given twice: the pending call giving the queued one ran inside
# the first warning, before it was marked given (hooks/evaluate.c).  Needs the
# fuzz runtime's GRUMPY_FIRST_LAUNCH_MS=30 (NumPy computes while the kernel compiles).
# Run: python tools/fuzz.py --replay tests/fuzz_regressions/case_904004250.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)


# ---- program 904004250 ----
CHECK_904004250 = {'v1': 0.0, 'v2': 0.0, 'v4': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 0.0, 'v8': 0.0, 'v9': 4.76837158203125e-07, 'v11': 0.0, 'v12': 1.4787253989094985e-09, 'v13': 0.0, 'v14': 0.0, 'v15': 4.768371586472142e-07, 'v18': 0.0, 'v19': 0.0, 'v20': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_904004250():
    with np.errstate(all="ignore"):
        x0 = ((_rng(14464068000).uniform(-4.0, 4.0, (64, 4097))).astype(np.float32))[::-1, ::-1]
        x1 = _rng(14464068001).random(()) < 0.1
        x2 = _rng(14464068002).integers(0, 10, (65537,), dtype=np.int32)
        x3 = _rng(14464068003).uniform(-4.0, 4.0, (1, 4097))
        return [x0, x1, x2, x3]


def body_904004250(R, x0, x1, x2, x3):
    with _errstate():
        try: v1 = np.take(x0.ravel(), (np.abs(x2) % 262208).astype(np.int32))
        except Exception as e: R.err(1, e)
        try: v1[:1:-1] = -2.5
        except Exception as e: R.err(3, e)
        try: v4 = np.sqrt(v1)
        except Exception as e: R.err(4, e)
        try: v8 = np.roll(v4, 1, axis=-1)
        except Exception as e: R.err(8, e)
        try:
            _p = 1
            for _k in range(14): _p = (v4 - v4.flat[_k % v4.size]) * _p; v4 += _p[::-1][::-1] * (0.5 + _k)
        except Exception as e: R.err(10, e)
        return locals()


PROGRAMS = [
    (904004250, inputs_904004250, body_904004250, CHECK_904004250),
]

if __name__ == "__main__":
    _main(PROGRAMS)
