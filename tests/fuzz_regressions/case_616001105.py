# Fuzzer regression case (tools/fuzz.py, program seed 616001105).
# grumpy differed from NumPy with GRUMPY_THREADS=8, GRUMPY_MIN_BYTES=65536:
#   rep 0: v13: values differ (exact int64 (65, 1), digests)
#   rep 0: v15: values differ (exact int64 (2665, 1), digests)
# Run: python case_616001105.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_616001105.py
THREADS = 8

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 616001100 ----
CHECK_616001100 = {'v1': 0.0, 'v2': 1.4482646146327536e-15, 'v3': 7.185977915469266e-05, 'v5': 0.01715080013940451, 'v6': 0.0, 'v7': 0.01715080013940451, 'v8': 0.004371973490911181, 'v9': 0.0, 'v10': 0.0, 'v11': 8.96871459157522, 'v12': 0.0, 'v13': 734.0391479917527, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_616001100():
    with np.errstate(all="ignore"):
        x0 = (_rng(9856017600).uniform(0.0, 4.0, (100,)))[::-1]
        x1 = ((_rng(9856017601).uniform(0.9, 1.1, (65, 129))).astype(np.float32)).T
        x2 = _rng(9856017602).uniform(-4.0, 4.0, ())
        x3 = ((_rng(9856017603).uniform(-4.0, 4.0, (129,))).astype(np.float32))[::-1]
        return [x0, x1, x2, x3]


def body_616001100(R, x0, x1, x2, x3):
    with np.errstate(all="ignore"):
        try: v1 = np.add(x1, x1)
        except Exception as e: R.err(1, e)
        try: v2 = np.cos(x2)
        except Exception as e: R.err(2, e)
        try: v3 = v1.copy().mean(axis=-1, keepdims=True)
        except Exception as e: R.err(3, e)
        try: np.maximum(v3, v3, out=v3)
        except Exception as e: R.err(4, e)
        try: v5 = np.add.accumulate(v1, axis=0)
        except Exception as e: R.err(5, e)
        try: v6 = np.asarray(x2, dtype=np.int32)
        except Exception as e: R.err(6, e)
        try: v7 = -v5
        except Exception as e: R.err(7, e)
        try: v8 = np.mean(v1, axis=(0, -1))
        except Exception as e: R.err(8, e)
        try: v9 = np.reshape(x1, (8385,))
        except Exception as e: R.err(9, e)
        try: v10 = np.sqrt(v1)
        except Exception as e: R.err(10, e)
        try: v11 = np.multiply(v5, v5)
        except Exception as e: R.err(11, e)
        try: v12 = v9.min(axis=-1, keepdims=True)
        except Exception as e: R.err(12, e)
        try: v13 = np.add.reduce(v11, axis=1)
        except Exception as e: R.err(13, e)
        return locals()


# ---- program 616001101 ----
CHECK_616001101 = {'v1': 0.0, 'v2': 1.136719176865797e-13, 'v3': 0.0, 'v4': 0.0, 'v5': 1.136719176865797e-13, 'v7': 1.7050787652986954e-13, 'v8': 1.7763568390214673e-15, 'v9': 1.136719176865797e-13, 'v10': 1.136719176865797e-13, 'v12': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_616001101():
    with np.errstate(all="ignore"):
        x0 = _rng(9856017616).integers(-4, 5, (2, 64, 8), dtype=np.int32)
        x1 = _rng(9856017617).uniform(-4.0, 4.0, (8, 64))
        x2 = (_rng(9856017618).uniform(0.9, 1.1, (8, 64))).T
        x2[_rng(9856017625).random(x2.shape) < 0.01] = np.nan
        x2[_rng(9856017626).random(x2.shape) < 0.005] = np.inf
        x3 = _rng(9856017619).uniform(-1.0, 1.0, (64, 8))
        x4 = (_rng(9856017620).uniform(0.0, 4.0, (64, 1))).astype(np.float32)
        return [x0, x1, x2, x3, x4]


def body_616001101(R, x0, x1, x2, x3, x4):
    with np.errstate(all="ignore"):
        try: v1 = np.expand_dims(x1, 1)
        except Exception as e: R.err(1, e)
        try: v2 = np.where(x3, -2.5, x2)
        except Exception as e: R.err(2, e)
        try: v3 = np.sqrt(x2)
        except Exception as e: R.err(3, e)
        try: v4 = np.array(x4.ravel()[:64])[:, None] - np.array(v3.ravel()[-512:])[None, :]
        except Exception as e: R.err(4, e)
        try: v5 = v2.T
        except Exception as e: R.err(5, e)
        try: np.power(x1, 3, out=v5)
        except Exception as e: R.err(6, e)
        try: v7 = np.sum(v5, axis=(), keepdims=True)
        except Exception as e: R.err(7, e)
        try: v8 = np.cos(v4)
        except Exception as e: R.err(8, e)
        try: v9 = np.absolute(v5)
        except Exception as e: R.err(9, e)
        try: v10 = np.concatenate([v9, v5, v9], axis=0)
        except Exception as e: R.err(10, e)
        try: np.copyto(v4, v4, casting='unsafe')
        except Exception as e: R.err(11, e)
        try: v12 = np.where(v4 > -0.5, -0.0, 3)
        except Exception as e: R.err(12, e)
        return locals()


# ---- program 616001102 ----
CHECK_616001102 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 2e-323, 'v6': 0.0, 'v7': 0.0, 'v8': 0.0, 'v9': 0.0, 'v10': 0.0, 'v11': 0.0, 'v12': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_616001102():
    with np.errstate(all="ignore"):
        x0 = np.round(_rng(9856017632).uniform(-4.0, 4.0, (129, 1000)) * 4) / 4
        x1 = (_rng(9856017633).uniform(-1.0, 1.0, (1000,)))[::-1]
        x2 = _rng(9856017634).uniform(-4.0, 4.0, (129, 1))
        x3 = _rng(9856017635).uniform(-4.0, 4.0, (1000,))
        return [x0, x1, x2, x3]


def body_616001102(R, x0, x1, x2, x3):
    with np.errstate(all="ignore"):
        try: v1 = x0.argmin(axis=1)
        except Exception as e: R.err(1, e)
        try: v2 = np.cumsum(v1, axis=-1)
        except Exception as e: R.err(2, e)
        try: v3 = np.percentile(v2, 100, axis=0)
        except Exception as e: R.err(3, e)
        try: v4 = np.power(v3, v3)
        except Exception as e: R.err(4, e)
        try: x0[:, 1002::-2] = x2
        except Exception as e: R.err(5, e)
        try: v6 = np.fmax(x3, x1)
        except Exception as e: R.err(6, e)
        try: v7 = np.tile(x2, (6, 1))
        except Exception as e: R.err(7, e)
        try: v8 = np.asarray(x0, dtype=np.int64)
        except Exception as e: R.err(8, e)
        try: v9 = v8[131::3, ::-1]
        except Exception as e: R.err(9, e)
        try: v10 = v8.prod(axis=(0,))
        except Exception as e: R.err(10, e)
        try: v11 = np.logical_or(v8, 2)
        except Exception as e: R.err(11, e)
        try: v12 = v11.T
        except Exception as e: R.err(12, e)
        return locals()


# ---- program 616001103 ----
CHECK_616001103 = {'s1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 8.677094119499828e-14, 'v5': 3.8579538356157666e-13, 'v7': 3.8925071362640834e-13, 'v8': 3.8925071362640834e-13, 'v9': 1.474417313610938e-10, 'v10': 3.8579538356157666e-13, 'v11': 2.263335247511232e-06, 'v12': 3.9292808829616505e-13, 'v13': 0.0, 'v14': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_616001103():
    with np.errstate(all="ignore"):
        x0 = _rng(9856017648).integers(-100, 101, (0,), dtype=np.int64)
        x1 = _rng(9856017649).uniform(-4.0, 4.0, (129,))
        x2 = _rng(9856017650).random((65,)) < 0.9
        x3 = _rng(9856017651).integers(-2147483648, 2147483648, (0,), dtype=np.int32)
        return [x0, x1, x2, x3]


def body_616001103(R, x0, x1, x2, x3):
    with np.errstate(all="ignore"):
        try: R.snap("s1", x0)
        except Exception as e: R.err(1, e)
        try: v2 = np.histogram(x1, bins=5, range=(-2.0, 2.0))
        except Exception as e: R.err(2, e)
        try: v3 = np.multiply.reduce(x0, axis=(0,))
        except Exception as e: R.err(3, e)
        try: v4 = np.exp(x1)
        except Exception as e: R.err(4, e)
        try: v5 = v4 / x1
        except Exception as e: R.err(5, e)
        try: np.copyto(v5, v5)
        except Exception as e: R.err(6, e)
        try: v7 = np.add(v5, np.int32(3))
        except Exception as e: R.err(7, e)
        try: v8 = v7.reshape((-1,))
        except Exception as e: R.err(8, e)
        try: v9 = np.sum(v7, axis=(-1,))
        except Exception as e: R.err(9, e)
        try: v10 = np.reshape(v5, (1, 129))
        except Exception as e: R.err(10, e)
        try: v11 = np.exp(v8)
        except Exception as e: R.err(11, e)
        try: v12 = np.add(v8, True)
        except Exception as e: R.err(12, e)
        try: v13 = np.add.reduce(x3, axis=None, keepdims=True)
        except Exception as e: R.err(13, e)
        try: v14 = np.asarray(v13, dtype=np.float64)
        except Exception as e: R.err(14, e)
        return locals()


# ---- program 616001104 ----
CHECK_616001104 = {'v2': 3.6783615297940287e-07, 'v4': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 0.0, 'v8': 5.679671724616852e-12, 'v9': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0}


def inputs_616001104():
    with np.errstate(all="ignore"):
        x0 = (_rng(9856017664).random((65, 1000)) < 0.5)[::-1, ::-1]
        x1 = (_rng(9856017665).random((65,)) < 0.5)[::-1]
        x2 = (_rng(9856017666).uniform(-4.0, 4.0, (130, 1000)))[::2]
        return [x0, x1, x2]


def body_616001104(R, x0, x1, x2):
    with np.errstate(all="ignore"):
        try: np.copyto(x0, x0)
        except Exception as e: R.err(1, e)
        try: v2 = np.tensordot(x0, x2, axes=2)
        except Exception as e: R.err(2, e)
        try: np.copyto(x2, x0, where=x0)
        except Exception as e: R.err(3, e)
        try: v4 = x2 < x2
        except Exception as e: R.err(4, e)
        try: v5 = np.broadcast_to(x1, (1, 65))
        except Exception as e: R.err(5, e)
        try: v6 = np.ceil(v5)
        except Exception as e: R.err(6, e)
        try: v7 = v6 @ v6.T
        except Exception as e: R.err(7, e)
        try: v8 = x2.mean(axis=(0, -1))
        except Exception as e: R.err(8, e)
        try: v9 = np.asarray(v4, dtype=np.int32)
        except Exception as e: R.err(9, e)
        try: x2 //= v4
        except Exception as e: R.err(10, e)
        try: np.sin(v7, out=v7)
        except Exception as e: R.err(11, e)
        return locals()


# ---- program 616001105 ----
CHECK_616001105 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 0.0, 'v8': 8.761210091438821, 'v11': 0.0, 'v12': 2.3293747424185963e-08, 'v13': 0.0, 'v14': 0.0, 'v15': 0.0, 'v16': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_616001105():
    with np.errstate(all="ignore"):
        x0 = (np.round(_rng(9856017680).uniform(-4.0, 4.0, (1, 65, 4097)) * 4) / 4).astype(np.float32)
        x1 = (_rng(9856017681).uniform(0.0, 4.0, (2, 1, 4097)))[::2]
        x2 = np.round(_rng(9856017682).uniform(-4.0, 4.0, (65,)) * 4) / 4
        x3 = (_rng(9856017683).uniform(-4.0, 4.0, (65, 4097))).astype(np.float32)
        x4 = _rng(9856017684).integers(-4, 5, (131073,), dtype=np.int32)
        return [x0, x1, x2, x3, x4]


def body_616001105(R, x0, x1, x2, x3, x4):
    with np.errstate(all="ignore"):
        try: v1 = x3.max(axis=None, keepdims=True)
        except Exception as e: R.err(1, e)
        try: v2 = np.roll(x3, (64, -1), axis=0)
        except Exception as e: R.err(2, e)
        try: v3 = v2[:]
        except Exception as e: R.err(3, e)
        try: v4 = np.logical_and(x4, v1)
        except Exception as e: R.err(4, e)
        try: v5 = x3 - v3
        except Exception as e: R.err(5, e)
        try: v6 = np.maximum(v5, x1)
        except Exception as e: R.err(6, e)
        try: v7 = np.flip(x3, axis=(1,))
        except Exception as e: R.err(7, e)
        try: v8 = np.sum(v5, axis=(-1, 0), keepdims=True)
        except Exception as e: R.err(8, e)
        try: np.minimum(v7, -1, out=v7)
        except Exception as e: R.err(9, e)
        try: np.copyto(v3, v1)
        except Exception as e: R.err(10, e)
        try: v11 = np.max(x1, axis=0)
        except Exception as e: R.err(11, e)
        try: v12 = np.add.reduce(v11, axis=(0, -1))
        except Exception as e: R.err(12, e)
        try: v13 = v2.copy().sum(axis=1, keepdims=True, dtype=np.int64)
        except Exception as e: R.err(13, e)
        try: v14 = np.add(x1, -1)
        except Exception as e: R.err(14, e)
        try: v15 = np.tile(v13, (41, 1))
        except Exception as e: R.err(15, e)
        try: v16 = v14.reshape((1, 1, 1, 4097))
        except Exception as e: R.err(16, e)
        return locals()


PROGRAMS = [
    (616001100, inputs_616001100, body_616001100, CHECK_616001100),
    (616001101, inputs_616001101, body_616001101, CHECK_616001101),
    (616001102, inputs_616001102, body_616001102, CHECK_616001102),
    (616001103, inputs_616001103, body_616001103, CHECK_616001103),
    (616001104, inputs_616001104, body_616001104, CHECK_616001104),
    (616001105, inputs_616001105, body_616001105, CHECK_616001105),
]

if __name__ == "__main__":
    _main(PROGRAMS)
