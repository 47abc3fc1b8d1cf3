# Fuzzer regression case (tools/fuzz.py, program seed 904004250).
# grumpy differed from NumPy with GRUMPY_THREADS=1, GRUMPY_MIN_BYTES=65536:
#   rep 0: warnings: grumpy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 2)] vs NumPy [(('RuntimeWarning', 'invalid value encountered in sqrt'), 1)]
# Run: python case_904004250.py (prints the values), or python tools/fuzz.py --replay /work/fz904/case_904004250.py
THREADS = 1
WARNINGS = True  # tools/fuzz.py --warnings

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 904004240 ----
CHECK_904004240 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 1.7763568394002505e-15, 'v7': 0.0, 'v8': 0.0, 'v9': 0.0, 'v10': 0.0, 'v11': 0.0, 'v12': 0.0, 'v13': 3.2507330161024584e-10, 'v14': 3.832103853479487e-26, 'v15': 0.0, 'v16': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_904004240():
    with np.errstate(all="ignore"):
        x0 = _rng(14464067840).integers(-4611686018427387904, 4611686018427387904, (20000,), dtype=np.int64)
        x1 = (_rng(14464067841).integers(0, 10, (127, 1, 0), dtype=np.int64)).T
        x2 = _rng(14464067842).integers(-4611686018427387904, 4611686018427387904, (127,), dtype=np.int64)
        x3 = _rng(14464067843).integers(0, 10, (2, 127), dtype=np.int32)
        x4 = _rng(14464067844).random((127,)) < 0.1
        return [x0, x1, x2, x3, x4]


def body_904004240(R, x0, x1, x2, x3, x4):
    with _errstate():
        try: v1 = np.array(x0.ravel()[:64])[:, None] < np.array(x3.ravel()[-254:])[None, :]
        except Exception as e: R.err(1, e)
        try: v2 = np.square(v1)
        except Exception as e: R.err(2, e)
        try: v3 = v1[..., None, ::-1, -1]
        except Exception as e: R.err(3, e)
        try: v4 = np.where(v1, v1, 1e-3)
        except Exception as e: R.err(4, e)
        try: v5 = np.array(v4.ravel()[:600]).reshape(200, 3)[None, :, :] ** np.array(v4.ravel()[:600]).reshape(200, 3)[:, None, :]
        except Exception as e: R.err(5, e)
        try: v2[32:-2] = True
        except Exception as e: R.err(6, e)
        try: v7 = v1.copy().prod(axis=(-1, -2))
        except Exception as e: R.err(7, e)
        try: v8 = np.sum(v3, axis=1)
        except Exception as e: R.err(8, e)
        try: v9 = v2.clip(0, 3)
        except Exception as e: R.err(9, e)
        try: v10 = np.multiply(v2, v9)
        except Exception as e: R.err(10, e)
        try: v11 = np.array(x0.ravel()[:4000])[:, None] * np.array(x0.ravel()[-16:])[None, :]
        except Exception as e: R.err(11, e)
        try: v12 = np.flip(v10)
        except Exception as e: R.err(12, e)
        try: v13 = np.sum(v5, axis=(1, 2))
        except Exception as e: R.err(13, e)
        try: v14 = v12.var(axis=-1)
        except Exception as e: R.err(14, e)
        try: v15 = abs(x2)
        except Exception as e: R.err(15, e)
        try: v16 = v3.ravel().take((np.arange(70000) * 1000003 % 64).astype(np.uint8))
        except Exception as e: R.err(16, e)
        return locals()


# ---- program 904004241 ----
CHECK_904004241 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 0.0, 'v7': 0.0, 'v8': 0.0, 'v9': 0.0, 'v10': 0.0, 'v11': 0.0, 'v12': 0.0, 'v13': 0.0, 'v14': 0.0, 'v16': 0.0, 'v18': 3.693830204695977e-15, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0}


def inputs_904004241():
    with np.errstate(all="ignore"):
        x0 = np.asfortranarray(_rng(14464067856).integers(-4, 5, (2, 131073), dtype=np.int32))
        x1 = np.asfortranarray(_rng(14464067857).uniform(-4.0, 4.0, (2, 131073)))
        x1[_rng(14464067864).random(x1.shape) < 0.01] = np.nan
        x2 = _rng(14464067858).integers(0, 10, (131073,), dtype=np.int32)
        return [x0, x1, x2]


def body_904004241(R, x0, x1, x2):
    with _errstate():
        try: v1 = x0 + x0
        except Exception as e: R.err(1, e)
        try: v2 = np.expand_dims(x0, -3)
        except Exception as e: R.err(2, e)
        try: v3 = np.floor_divide(-2.5, v2)
        except Exception as e: R.err(3, e)
        try: v4 = np.where(v3, v2, v3)
        except Exception as e: R.err(4, e)
        try: v5 = x2[(np.arange(100) * 7 % 131073).astype(np.int64)]
        except Exception as e: R.err(5, e)
        try: v4.fill(np.float64(-0.0))
        except Exception as e: R.err(6, e)
        try: v7 = np.multiply(x2, x2)
        except Exception as e: R.err(7, e)
        try: v8 = v7[0:]
        except Exception as e: R.err(8, e)
        try: v9 = np.add.accumulate(v7, axis=0)
        except Exception as e: R.err(9, e)
        try: v10 = np.asarray(v2, dtype=np.int64)
        except Exception as e: R.err(10, e)
        try: v11 = np.meshgrid(v5.ravel(), v5, copy=False)[1]
        except Exception as e: R.err(11, e)
        try: v12 = v10.reshape((1, 2, 43691, 3))
        except Exception as e: R.err(12, e)
        try: v13 = v12.reshape((2, 43691, 3))
        except Exception as e: R.err(13, e)
        try: v14 = np.squeeze(v12)
        except Exception as e: R.err(14, e)
        try: x0[..., 1:65536:3] = 2
        except Exception as e: R.err(15, e)
        try: v16 = np.less(v14, np.float32(1.5))
        except Exception as e: R.err(16, e)
        try: np.copyto(v16, v16)
        except Exception as e: R.err(17, e)
        try: v18 = np.log(v1)
        except Exception as e: R.err(18, e)
        return locals()


# ---- program 904004242 ----
CHECK_904004242 = {'v3': 0.0, 'v4': 2.1446546298875546e-06, 'v5': 0.0, 'x0': 0.0, 'x1': 0.0}


def inputs_904004242():
    with np.errstate(all="ignore"):
        x0 = _rng(14464067872).uniform(-4.0, 4.0, (2, 4097))
        x1 = (np.round(_rng(14464067873).uniform(-4.0, 4.0, (2, 1)) * 4) / 4).astype(np.float32)
        x1[_rng(14464067880).random(x1.shape) < 0.01] = np.nan
        return [x0, x1]


def body_904004242(R, x0, x1):
    with _errstate():
        try: np.minimum(x0, x0, out=x0)
        except Exception as e: R.err(1, e)
        try: np.minimum(x0, x1, out=x0)
        except Exception as e: R.err(2, e)
        try: v3 = x0.astype(np.float32)
        except Exception as e: R.err(3, e)
        try: v4 = np.outer(v3, x1.T)
        except Exception as e: R.err(4, e)
        try: v5 = np.meshgrid(x1.ravel(), x1, indexing='xy')[0]
        except Exception as e: R.err(5, e)
        return locals()


# ---- program 904004243 ----
CHECK_904004243 = {'s8': 0.0, 'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 1.0171823994255814e+21, 'v10': 0.0, 'v13': 0.0, 'v14': 0.0, 'v15': 0.0, 'v16': 0.0, 'v17': 1.219024881038422e-13, 'v18': 0.0, 'v19': 0.0, 'v20': 1.9763e-320, 'v21': 0.0, 'v22': 0.0, 'v23': 1.219024881038422e-13, 'x0': 0.0, 'x1': 0.0}


def inputs_904004243():
    with np.errstate(all="ignore"):
        x0 = (np.round(_rng(14464067888).uniform(-4.0, 4.0, (1000, 129)) * 4) / 4).T
        x0[_rng(14464067895).random(x0.shape) < 0.01] = np.nan
        x1 = (_rng(14464067889).uniform(0.9, 1.1, (129, 1000)))[::-1, ::-1]
        return [x0, x1]


def body_904004243(R, x0, x1):
    with _errstate():
        try: v1 = np.where(x1 > 0, x1, 2)
        except Exception as e: R.err(1, e)
        try: v2 = x0.ravel().take((np.arange(70000) * 1000003 % 129000).astype(np.intp).reshape(2, 35000))
        except Exception as e: R.err(2, e)
        try: v3 = np.subtract(v1, v1)
        except Exception as e: R.err(3, e)
        try: v4 = x1.ravel()[(np.arange(1) * 31 % 129000).astype(np.int32)]
        except Exception as e: R.err(4, e)
        try: v5 = v2.argmax(axis=None)
        except Exception as e: R.err(5, e)
        try: v6 = np.einsum('ij,kj->ik', v1, v1)
        except Exception as e: R.err(6, e)
        try: v7 = x0.prod(axis=0, keepdims=True)
        except Exception as e: R.err(7, e)
        try: R.snap("s8", v3)
        except Exception as e: R.err(8, e)
        try: np.minimum(x1, v5, out=x1)
        except Exception as e: R.err(9, e)
        try: v10 = v3.reshape((129000,))
        except Exception as e: R.err(10, e)
        try: np.multiply(v6, v4, out=v6)
        except Exception as e: R.err(11, e)
        try: np.copyto(v6, np.int32(3), casting='unsafe')
        except Exception as e: R.err(12, e)
        try: v13 = np.max(v3, axis=())
        except Exception as e: R.err(13, e)
        try: v14 = np.clip(v13, None, 2.5)
        except Exception as e: R.err(14, e)
        try: v15 = v6.clip(-1, 1)
        except Exception as e: R.err(15, e)
        try: v16 = np.broadcast_to(v15, (3, 129, 129))
        except Exception as e: R.err(16, e)
        try: v17 = v15.mean(axis=0)
        except Exception as e: R.err(17, e)
        try: v18 = v3.max(axis=0)
        except Exception as e: R.err(18, e)
        try: v19 = np.minimum(v13, v13)
        except Exception as e: R.err(19, e)
        try: v20 = v18.cumprod(axis=-1)
        except Exception as e: R.err(20, e)
        try: v21 = v16.astype(np.int32, copy=False)
        except Exception as e: R.err(21, e)
        try: v22 = np.sign(v16)
        except Exception as e: R.err(22, e)
        try: v23 = np.broadcast_to(v17, (2, 129))
        except Exception as e: R.err(23, e)
        return locals()


# ---- program 904004244 ----
CHECK_904004244 = {'s16': 0.0, 's19': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 3.461788911895768e-08, 'v6': 0.0, 'v8': 3.461788911895768e-08, 'v9': 2.1519020912628634e-07, 'v10': 1.5950077229939147e-05, 'v11': 0.0, 'v12': 0.0, 'v13': 0.0, 'v14': 0.0, 'v15': 1.5950077230827326e-05, 'v17': 0.0, 'v18': 1.5950077230827326e-05, 'x0': 1.776356839394652e-15, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_904004244():
    with np.errstate(all="ignore"):
        x0 = (_rng(14464067904).uniform(-4.0, 4.0, (4097, 65))).T
        x1 = np.round(_rng(14464067905).uniform(-4.0, 4.0, (4097,)) * 4) / 4
        x2 = _rng(14464067906).uniform(-4.0, 4.0, (4097,))
        x3 = np.asfortranarray(_rng(14464067907).uniform(0.0, 4.0, (0, 65, 4097)))
        x3[_rng(14464067914).random(x3.shape) < 0.01] = np.nan
        return [x0, x1, x2, x3]


def body_904004244(R, x0, x1, x2, x3):
    with _errstate():
        try: x0 += x0
        except Exception as e: R.err(1, e)
        try: v2 = x0[::-1][(np.arange(97) * 1 % 65).astype(np.int64)]
        except Exception as e: R.err(2, e)
        try: v3 = x0.max(axis=None, keepdims=True)
        except Exception as e: R.err(3, e)
        try: v4 = np.minimum(x2, True)
        except Exception as e: R.err(4, e)
        try: v5 = x0 @ v4
        except Exception as e: R.err(5, e)
        try: v6 = np.subtract(v4, x0)
        except Exception as e: R.err(6, e)
        try: np.sin(x0, out=x0)
        except Exception as e: R.err(7, e)
        try: v8 = np.concatenate([v5, v4], axis=0)
        except Exception as e: R.err(8, e)
        try: v9 = np.sum(v2, axis=(0, 1))
        except Exception as e: R.err(9, e)
        try: v10 = x0 / x0
        except Exception as e: R.err(10, e)
        try: v11 = np.asarray(x2, dtype=np.int64)
        except Exception as e: R.err(11, e)
        try: v12 = x0 - x0
        except Exception as e: R.err(12, e)
        try: v13 = v2.astype(np.int32, copy=False)
        except Exception as e: R.err(13, e)
        try: v14 = np.sum(v11, axis=0, keepdims=True)
        except Exception as e: R.err(14, e)
        try: v15 = np.add.reduce(v10, axis=())
        except Exception as e: R.err(15, e)
        try: R.snap("s16", v2)
        except Exception as e: R.err(16, e)
        try: v17 = v6[:]
        except Exception as e: R.err(17, e)
        try: v18 = np.roll(v15, (1, 64), axis=(1, 0))
        except Exception as e: R.err(18, e)
        try: R.snap("s19", v17)
        except Exception as e: R.err(19, e)
        try: np.absolute(v11, out=v11)
        except Exception as e: R.err(20, e)
        return locals()


# ---- program 904004245 ----
CHECK_904004245 = {'v1': 0.0, 'v2': 0.0, 'v3': 5.295245108246377e-12, 'v4': 1.7763394427396113e-15, 'v5': 5.295245108246377e-12, 'v6': 0.0, 'v8': 4.76572059742174e-11, 'v9': 0.0, 'v10': 2.9359877613722913e-09, 'v12': 0.0, 'v13': 0.0, 'v14': 2.3993052862131456e-06, 'v15': 0.0, 'v16': 0.0, 'v17': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0}


def inputs_904004245():
    with np.errstate(all="ignore"):
        x0 = _rng(14464067920).integers(-100, 101, (7, 4097), dtype=np.int32)
        x1 = _rng(14464067921).integers(-100, 101, (7, 1), dtype=np.int32)
        x2 = _rng(14464067922).uniform(-1.0, 1.0, (7, 1))
        return [x0, x1, x2]


def body_904004245(R, x0, x1, x2):
    with _errstate():
        try: v1 = np.min(x0, axis=(0, 1))
        except Exception as e: R.err(1, e)
        try: v2 = x0.argmin(axis=None)
        except Exception as e: R.err(2, e)
        try: v3 = np.exp(v2)
        except Exception as e: R.err(3, e)
        try: v4 = np.sin(x0)
        except Exception as e: R.err(4, e)
        try: v5 = np.minimum(v3, x1)
        except Exception as e: R.err(5, e)
        try: v6 = x0[1:0:2]
        except Exception as e: R.err(6, e)
        try: x0 -= x0
        except Exception as e: R.err(7, e)
        try: v8 = v2 * v3
        except Exception as e: R.err(8, e)
        try: v9 = np.reshape(v6, (1, 0, 4097))
        except Exception as e: R.err(9, e)
        try: v10 = np.matmul(v4, v4.T)
        except Exception as e: R.err(10, e)
        try: v11 = x0 & v5
        except Exception as e: R.err(11, e)
        try: v12 = np.logical_not(x0)
        except Exception as e: R.err(12, e)
        try: v13 = np.max(v12, axis=(0, 1), keepdims=True)
        except Exception as e: R.err(13, e)
        try: v14 = np.square(v8)
        except Exception as e: R.err(14, e)
        try: v15 = np.swapaxes(v12, 0, -2)
        except Exception as e: R.err(15, e)
        try: v16 = v15 @ v6.T
        except Exception as e: R.err(16, e)
        try: v17 = np.minimum(1e-3, v13)
        except Exception as e: R.err(17, e)
        return locals()


# ---- program 904004246 ----
CHECK_904004246 = {'s4': 19802828.720244527, 'v1': 19802828.720244527, 'v5': 0.0, 'v6': 0.0, 'v7': 0.0, 'v8': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_904004246():
    with np.errstate(all="ignore"):
        x0 = (np.round(_rng(14464067936).uniform(-4.0, 4.0, (0, 3, 4097)) * 4) / 4).astype(np.float32)
        x1 = np.round(_rng(14464067937).uniform(-4.0, 4.0, (0, 1, 4097)) * 4) / 4
        x2 = _rng(14464067938).uniform(0.0, 4.0, (3, 4097))
        x3 = (_rng(14464067939).uniform(-4.0, 4.0, (4097, 3))).T
        x3[_rng(14464067946).random(x3.shape) < 0.01] = np.nan
        x4 = _rng(14464067940).integers(-2147483648, 2147483648, (1, 4097), dtype=np.int32)
        return [x0, x1, x2, x3, x4]


def body_904004246(R, x0, x1, x2, x3, x4):
    with _errstate():
        try: v1 = np.cov(x4)
        except Exception as e: R.err(1, e)
        try: np.copyto(x2, x3)
        except Exception as e: R.err(2, e)
        try: x3.fill(np.int64(3))
        except Exception as e: R.err(3, e)
        try: R.snap("s4", v1)
        except Exception as e: R.err(4, e)
        try: v5 = np.broadcast_to(x2, (2, 3, 4097))
        except Exception as e: R.err(5, e)
        try: v6 = np.roll((x2 * 1), 64, axis=0)
        except Exception as e: R.err(6, e)
        try: v7 = x3.T
        except Exception as e: R.err(7, e)
        try: v8 = np.logical_or(v6, x3)
        except Exception as e: R.err(8, e)
        return locals()


# ---- program 904004247 ----
CHECK_904004247 = {'v1': 0.0, 'v2': 2e-323, 'v3': 0.0, 'v4': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 4.51428539614584e-12, 'v8': 1.694583340084185e-13, 'v9': 4.5288892388326026e-12, 'v10': 0.0, 'v13': 1.6942907709340478e-10, 'v14': 0.0, 'v15': 0.0, 'v16': 0.0, 'v17': 0.0, 'v18': 0.0, 'v19': 0.005950927734375, 'v20': 0.0, 'v21': 0.0, 'v22': 0.0, 'v23': 0.0, 'v24': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_904004247():
    with np.errstate(all="ignore"):
        x0 = _rng(14464067952).random((65, 1000)) < 0.5
        x1 = (_rng(14464067953).uniform(0.0, 4.0, ())).astype(np.float32)
        x2 = _rng(14464067954).integers(-4, 5, (1, 1, 1000), dtype=np.int32)
        x3 = np.asfortranarray(np.round(_rng(14464067955).uniform(-4.0, 4.0, (65, 1000)) * 4) / 4)
        x4 = np.asfortranarray(_rng(14464067956).uniform(-4.0, 4.0, (1000, 65)))
        return [x0, x1, x2, x3, x4]


def body_904004247(R, x0, x1, x2, x3, x4):
    with _errstate():
        try: v1 = x3.all(axis=None)
        except Exception as e: R.err(1, e)
        try: v2 = np.mean(v1, axis=None, keepdims=True)
        except Exception as e: R.err(2, e)
        try: v3 = np.roll(x4, 1000, axis=-2)
        except Exception as e: R.err(3, e)
        try: v4 = np.floor_divide(x4, v3)
        except Exception as e: R.err(4, e)
        try: v5 = x3 > v1
        except Exception as e: R.err(5, e)
        try: v6 = v5 @ x0.T
        except Exception as e: R.err(6, e)
        try: v7 = np.einsum('ij,kj->ik', v3, v6.T)
        except Exception as e: R.err(7, e)
        try: v8 = v3.mean(axis=0, keepdims=True)
        except Exception as e: R.err(8, e)
        try: v9 = x1 - v7
        except Exception as e: R.err(9, e)
        try: v10 = x3.ravel()
        except Exception as e: R.err(10, e)
        try: v6[:] = v6
        except Exception as e: R.err(11, e)
        try: v6[:] = v6[::-1]
        except Exception as e: R.err(12, e)
        try: v13 = np.cumsum(x4, axis=-2)
        except Exception as e: R.err(13, e)
        try: v14 = np.less(3, v5)
        except Exception as e: R.err(14, e)
        try: v15 = v10[(np.abs(x2) % 65000).astype(np.intp)]
        except Exception as e: R.err(15, e)
        try: v16 = x2.ravel().take((np.abs(x2) % 1000).astype(np.int32))
        except Exception as e: R.err(16, e)
        try: v17 = np.concatenate([x4, x4, v6], axis=0)
        except Exception as e: R.err(17, e)
        try: v18 = np.roll(v16, -3, axis=-3)
        except Exception as e: R.err(18, e)
        try: v19 = np.tanh(v5)
        except Exception as e: R.err(19, e)
        try: v20 = np.reshape(v14, (65, 500, 2))
        except Exception as e: R.err(20, e)
        try: v21 = np.add(x0, x0)
        except Exception as e: R.err(21, e)
        try: v22 = np.sqrt(v4)
        except Exception as e: R.err(22, e)
        try: v23 = np.cumprod(x0, axis=None)
        except Exception as e: R.err(23, e)
        try: v24 = v4[::-1, :]
        except Exception as e: R.err(24, e)
        return locals()


# ---- program 904004248 ----
CHECK_904004248 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 0.0, 'v6': 9.695985410326029e-14, 'v7': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0}


def inputs_904004248():
    with np.errstate(all="ignore"):
        x0 = (_rng(14464067968).uniform(0.0, 4.0, (128, 129))).T
        x1 = _rng(14464067969).random((129, 128)) < 0.9
        x2 = _rng(14464067970).integers(-4, 5, (129, 128), dtype=np.int64)
        return [x0, x1, x2]


def body_904004248(R, x0, x1, x2):
    with _errstate():
        try: v1 = np.broadcast_to(x1, (1, 129, 128))
        except Exception as e: R.err(1, e)
        try: v2 = np.floor_divide(v1, v1)
        except Exception as e: R.err(2, e)
        try: v3 = v2 - v1
        except Exception as e: R.err(3, e)
        try: v4 = np.absolute(x0)
        except Exception as e: R.err(4, e)
        try: v5 = np.true_divide(v3, x0)
        except Exception as e: R.err(5, e)
        try: v6 = np.exp(x0)
        except Exception as e: R.err(6, e)
        try: v7 = np.array(x1.ravel()[:2000]).reshape(1000, 2) @ np.array(v3.ravel()[-200:]).reshape(2, 100)
        except Exception as e: R.err(7, e)
        return locals()


# ---- program 904004249 ----
CHECK_904004249 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 0.0, 'v8': 0.0, 'v9': 0.0, 'v11': 2e-323, 'v12': 0.0, 'v13': 2e-323, 'v14': 0.0, 'v15': 0.0, 'v16': 0.0, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_904004249():
    with np.errstate(all="ignore"):
        x0 = np.asfortranarray(_rng(14464067984).uniform(-1.0, 1.0, (0, 129)))
        x1 = _rng(14464067985).integers(-4611686018427387904, 4611686018427387904, (0,), dtype=np.int64)
        x2 = np.round(_rng(14464067986).uniform(-4.0, 4.0, (129,)) * 4) / 4
        x3 = (_rng(14464067987).uniform(-1.0, 1.0, (129, 0))).T
        return [x0, x1, x2, x3]


def body_904004249(R, x0, x1, x2, x3):
    with _errstate():
        try: v1 = np.concatenate([x0, x3, x0], axis=0)
        except Exception as e: R.err(1, e)
        try: v2 = np.add.reduce(v1, axis=None, dtype=np.int64)
        except Exception as e: R.err(2, e)
        try: v3 = np.roll((v1 * 1), -1, axis=1)
        except Exception as e: R.err(3, e)
        try: v4 = v2 < 0.5
        except Exception as e: R.err(4, e)
        try: v5 = np.square(x3)
        except Exception as e: R.err(5, e)
        try: v6 = np.divide(x0, x0)
        except Exception as e: R.err(6, e)
        try: v7 = np.roll(v3, 0, axis=1)
        except Exception as e: R.err(7, e)
        try: v8 = v6[:-1:3, 128:131:-2]
        except Exception as e: R.err(8, e)
        try: v9 = np.squeeze(v5)
        except Exception as e: R.err(9, e)
        try: x0[2:-1:5] = v7
        except Exception as e: R.err(10, e)
        try: v11 = v8.mean(axis=(), keepdims=True)
        except Exception as e: R.err(11, e)
        try: v12 = np.max(x0, axis=(), keepdims=True)
        except Exception as e: R.err(12, e)
        try: v13 = v11 - 0.5
        except Exception as e: R.err(13, e)
        try: v14 = x0.T
        except Exception as e: R.err(14, e)
        try: v15 = np.greater_equal(v14, np.int64(-4))
        except Exception as e: R.err(15, e)
        try: v16 = v12 - v1
        except Exception as e: R.err(16, e)
        return locals()


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
        try: v2 = np.where(x0 > 0, -1, x0)
        except Exception as e: R.err(2, e)
        try: v1[:1:-1] = -2.5
        except Exception as e: R.err(3, e)
        try: v4 = np.sqrt(v1)
        except Exception as e: R.err(4, e)
        try: v5 = np.argmin(v1, axis=0)
        except Exception as e: R.err(5, e)
        try: v6 = np.nanmax(v2, axis=(-2,))
        except Exception as e: R.err(6, e)
        try: v7 = np.clip(v6, v6, -1)
        except Exception as e: R.err(7, e)
        try: v8 = np.roll(v4, 1, axis=-1)
        except Exception as e: R.err(8, e)
        try: v9 = v5.prod(axis=None, keepdims=True, dtype=np.float32)
        except Exception as e: R.err(9, e)
        try:
            _p = 1
            for _k in range(14): _p = (v4 - v4.flat[_k % v4.size]) * _p; v4 += _p[::-1][::-1] * (0.5 + _k)
        except Exception as e: R.err(10, e)
        try: v11 = v6.transpose((0,))
        except Exception as e: R.err(11, e)
        try: v12 = np.dot(x3, v11)
        except Exception as e: R.err(12, e)
        try: v13 = (v4 * 1)[(np.abs(x2) % 65537).astype(np.intp)]
        except Exception as e: R.err(13, e)
        try: v14 = np.absolute(v11)
        except Exception as e: R.err(14, e)
        try: v15 = v6.astype(np.float64)
        except Exception as e: R.err(15, e)
        try: np.sqrt(v8, out=v8)
        except Exception as e: R.err(16, e)
        try: v15[-2:-2:-2] = v9
        except Exception as e: R.err(17, e)
        try: v18 = np.add(v8, v13)
        except Exception as e: R.err(18, e)
        try: v19 = np.logical_and(v2, v2)
        except Exception as e: R.err(19, e)
        try: v20 = np.where(v19, v6, v19)
        except Exception as e: R.err(20, e)
        return locals()


PROGRAMS = [
    (904004250, inputs_904004250, body_904004250, CHECK_904004250),
]

if __name__ == "__main__":
    _main(PROGRAMS)
