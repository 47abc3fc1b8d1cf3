# Fuzzer regression case (tools/fuzz.py, program seed 641000085).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 1: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
#   rep 2: warnings: grumpy [] vs NumPy [(('RuntimeWarning', 'divide by zero encountered in divide'), 1), (('RuntimeWarning', 'invalid value encountered in divide'), 1)]
# Run: python case_641000085.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_641000085.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 641000085 ----
CHECK_641000085 = {'v1': 0.0, 'v2': 0.0, 'v4': 0.0, 'v6': 2.0410989707462004e-13, 'v9': 2.0410989707462004e-13, 'v13': 2.0410989707462004e-13, 'v16': 2.0510909779678269e-13, 'v18': 2.0510909779678269e-13, 'x0': 0.0}


def inputs_641000085():
    with np.errstate(all="ignore"):
        x0 = _rng(10256001360).integers(-4, 5, (16385,), dtype=np.int32)
        return [x0]


def body_641000085(R, x0):
    with _errstate():
        try: v1 = np.stack([x0, x0], axis=1)
        except Exception as e: R.err(1, e)
        try: v2 = np.array(v1.ravel()[:400]).reshape(100, 4)[None, :, :] / np.array(v1.ravel()[:400]).reshape(100, 4)[:, None, :]
        except Exception as e: R.err(2, e)
        try: v4 = np.roll(v1, -100001, axis=-1)
        except Exception as e: R.err(4, e)
        try: v6 = v4.copy().mean(axis=(0, 1))
        except Exception as e: R.err(6, e)
        try: v9 = v6.clip(-2.5, None)
        except Exception as e: R.err(9, e)
        try: v13 = v9.clip(0.5, None)
        except Exception as e: R.err(13, e)
        try: v16 = v2 - v13
        except Exception as e: R.err(16, e)
        try: v18 = np.stack([v16, v2, v2], axis=3)
        except Exception as e: R.err(18, e)
        return locals()


PROGRAMS = [
    (641000085, inputs_641000085, body_641000085, CHECK_641000085),
]

if __name__ == "__main__":
    _main(PROGRAMS)
