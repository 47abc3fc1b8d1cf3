# Fuzzer regression case (tools/fuzz.py, program seed 616002343).
# grumpy differed from NumPy with GRUMPY_THREADS=2, GRUMPY_MIN_BYTES=65536:
#   rep 0: v16: 1 of 1 values differ (bound 5.58e+04; largest difference 9129983.75), first at flat index [0]: [-557.25] vs NumPy's [-9130541.0]
# Run: python case_616002343.py (prints the values), or python tools/fuzz.py --replay tests/fuzz_regressions/case_616002343.py
THREADS = 2

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)



# ---- program 616002340 ----
CHECK_616002340 = {'v1': 0.0, 'v2': 0.0, 'v3': 0.0, 'v4': 0.0, 'v5': 0.2183171334291729, 'v6': 6.455298779415607e-12, 'v7': 0.0, 'v8': 0.5719808738291077, 'v9': 0.0, 'v10': 5079.762140476305, 'v11': 0.0, 'v12': 0.0, 'v13': 0.5719808738291077, 'v15': 4.540862666110518e-08, 'v16': 0.0, 'v17': 4.540862666110518e-08, 'v18': 0.0, 'v19': 0.0, 'v20': 0.0, 'v21': 0.0, 'v22': 4.540862666110518e-08, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_616002340():
    with np.errstate(all="ignore"):
        x0 = (_rng(9856037440).uniform(-4.0, 4.0, (20000,))).astype(np.float32)
        x1 = (_rng(9856037441).uniform(-4.0, 4.0, (3, 1, 128))).astype(np.float32)
        x2 = _rng(9856037442).uniform(-4.0, 4.0, (3, 1, 128))
        x3 = (_rng(9856037443).uniform(-4.0, 4.0, (129, 1))).astype(np.float32)
        x4 = ((_rng(9856037444).uniform(-1.0, 1.0, (129, 128))).astype(np.float32))[::-1, ::-1]
        return [x0, x1, x2, x3, x4]


def body_616002340(R, x0, x1, x2, x3, x4):
    with np.errstate(all="ignore"):
        try: v1 = np.maximum(x0, x0)
        except Exception as e: R.err(1, e)
        try: v2 = np.argmin(v1, axis=None)
        except Exception as e: R.err(2, e)
        try: v3 = np.roll(x4, (2, -100001, 1000), axis=(0, 1, 1))
        except Exception as e: R.err(3, e)
        try: v4 = np.abs(v1)
        except Exception as e: R.err(4, e)
        try: v5 = np.nansum(v3, axis=(0, -1), keepdims=True)
        except Exception as e: R.err(5, e)
        try: v6 = np.add.accumulate(x2, axis=2)
        except Exception as e: R.err(6, e)
        try: v7 = np.broadcast_to(v1, (2, 20000))
        except Exception as e: R.err(7, e)
        try: v8 = np.var(v5, axis=(-2, 1))
        except Exception as e: R.err(8, e)
        try: v9 = np.sqrt(v3)
        except Exception as e: R.err(9, e)
        try: v10 = v2 * v8
        except Exception as e: R.err(10, e)
        try: v11 = np.clip(x0, 0, 1)
        except Exception as e: R.err(11, e)
        try: v12 = np.array(v3.ravel()[:64])[:, None] - np.array(v11.ravel()[-700:])[None, :]
        except Exception as e: R.err(12, e)
        try: v13 = np.minimum(v12, v8)
        except Exception as e: R.err(13, e)
        try: v9[..., :] = np.int64(-4)
        except Exception as e: R.err(14, e)
        try: v15 = v9.var(axis=(1,), ddof=1)
        except Exception as e: R.err(15, e)
        try: v16 = v11.copy(order='F')
        except Exception as e: R.err(16, e)
        try: v17 = v15.squeeze()
        except Exception as e: R.err(17, e)
        try: v18 = np.transpose(x2, (2, 0, 1))
        except Exception as e: R.err(18, e)
        try: v19 = np.negative(x0)
        except Exception as e: R.err(19, e)
        try: v20 = np.moveaxis(v1, 0, 0)
        except Exception as e: R.err(20, e)
        try: v21 = np.roll((v20 * 1), 7, axis=-1)
        except Exception as e: R.err(21, e)
        try: v22 = np.swapaxes(v17, 0, -1)
        except Exception as e: R.err(22, e)
        return locals()


# ---- program 616002341 ----
CHECK_616002341 = {'v1': 4.1166565756382805e-11, 'v4': 0.0, 'v5': 0.08568835583024165, 'v6': 2.4994150632291164e-05, 'v7': 0.0, 'v8': 2.7272853864790382e-09, 'v9': 7.498481265801561e-05, 'v10': 0.0, 'v11': 0.08568835583024165, 'v12': 1.2906517099509074e-07, 'v13': 0.0, 'v14': 0.0, 'v15': 1.2234657731369225e-13, 'v16': 0.0, 'v17': 0.0, 'v18': 1.2234657731369225e-10, 'v19': 6.603254055911966e-06, 'v20': 0.08568835583024165, 'v21': 1.2234657731369225e-10, 'v22': 1.7962421976450677e-19, 'v23': 0.0, 'v24': 6.603254055911966e-06, 'v25': 1.0268632649967913e-05, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_616002341():
    with np.errstate(all="ignore"):
        x0 = ((_rng(9856037456).uniform(-4.0, 4.0, (0,))).astype(np.float32))[::2]
        x1 = (np.round(_rng(9856037457).uniform(-4.0, 4.0, (1000,)) * 4) / 4)[::-1]
        x1[_rng(9856037464).random(x1.shape) < 0.01] = np.nan
        x2 = _rng(9856037458).uniform(0.0, 4.0, (129,))
        x3 = _rng(9856037459).integers(0, 10, (), dtype=np.int32)
        x4 = ((_rng(9856037460).uniform(-1.0, 1.0, (129, 1000))).astype(np.float32))[::-1, ::-1]
        return [x0, x1, x2, x3, x4]


def body_616002341(R, x0, x1, x2, x3, x4):
    with np.errstate(all="ignore"):
        try: v1 = np.einsum('i,i->', x2, x2)
        except Exception as e: R.err(1, e)
        try: x4[-2:64:3, 999:-2:5] -= x0
        except Exception as e: R.err(2, e)
        try: x4[131:128:3, :-2:3] = x3
        except Exception as e: R.err(3, e)
        try: v4 = np.roll(x4, (-3, 1000), axis=0)
        except Exception as e: R.err(4, e)
        try: v5 = x4 @ x4.T
        except Exception as e: R.err(5, e)
        try: v6 = x4.mean(axis=(1, 0))
        except Exception as e: R.err(6, e)
        try: v7 = np.subtract(v4, np.int32(3))
        except Exception as e: R.err(7, e)
        try: v8 = v7.copy().sum(axis=1)
        except Exception as e: R.err(8, e)
        try: v9 = np.percentile(v6, 0, axis=None)
        except Exception as e: R.err(9, e)
        try: v10 = v7.astype(np.float32, copy=False)
        except Exception as e: R.err(10, e)
        try: v11 = np.asfortranarray(v5)
        except Exception as e: R.err(11, e)
        try: v12 = np.exp(v10)
        except Exception as e: R.err(12, e)
        try: v13 = np.transpose(v7, (1, 0))
        except Exception as e: R.err(13, e)
        try: v14 = np.transpose(x4, (1, 0))
        except Exception as e: R.err(14, e)
        try: v15 = x1.mean(axis=None)
        except Exception as e: R.err(15, e)
        try: v16 = np.sqrt(v13)
        except Exception as e: R.err(16, e)
        try: v17 = np.minimum(np.float32(1.5), x2)
        except Exception as e: R.err(17, e)
        try: v18 = np.add.reduce(x1, axis=0)
        except Exception as e: R.err(18, e)
        try: v19 = v12.var(axis=-1)
        except Exception as e: R.err(19, e)
        try: v20 = v11.clip(-1, 1)
        except Exception as e: R.err(20, e)
        try: v21 = np.add(v18, x2)
        except Exception as e: R.err(21, e)
        try: v22 = v21.var(axis=0)
        except Exception as e: R.err(22, e)
        try: v23 = np.where(v10, -0.0, np.int64(-4))
        except Exception as e: R.err(23, e)
        try: v24 = np.tile(v19, 13)
        except Exception as e: R.err(24, e)
        try: v25 = np.log(x4)
        except Exception as e: R.err(25, e)
        return locals()


# ---- program 616002342 ----
CHECK_616002342 = {'v1': 0.0, 'v2': 0.0, 'v3': 5.202482861932367e-05, 'v4': 0.0, 'v5': 0.0, 'v6': 0.0, 'v7': 0.0006150114750198554, 'v8': 0.0, 'v9': 0.0, 'v10': 5.202482861932367e-05, 'v11': 7.486491251972385e-06, 'v12': 0.0006150114750198554, 'v13': 184.77659678395446, 'v14': 0.0006150114750198554, 'v15': 1.6597912470154894e-15, 'v16': 5.202482861932367e-05, 'v17': 0.0, 'v18': 7.486491251972385e-06, 'x0': 0.0, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0, 'x4': 0.0}


def inputs_616002342():
    with np.errstate(all="ignore"):
        x0 = _rng(9856037472).integers(-100, 101, (0, 2, 4097), dtype=np.int64)
        x1 = _rng(9856037473).uniform(0.9, 1.1, (2,))
        x2 = (_rng(9856037474).uniform(-4.0, 4.0, (4097, 2))).astype(np.float32)
        x2[_rng(9856037481).random(x2.shape) < 0.01] = np.nan
        x3 = _rng(9856037475).uniform(-1.0, 1.0, (4097,))
        x4 = _rng(9856037476).integers(0, 10, (2,), dtype=np.int32)
        return [x0, x1, x2, x3, x4]


def body_616002342(R, x0, x1, x2, x3, x4):
    with np.errstate(all="ignore"):
        try: v1 = np.histogram(x1, bins=1, range=(0, 10))
        except Exception as e: R.err(1, e)
        try: v2 = x2 / x2
        except Exception as e: R.err(2, e)
        try: v3 = np.exp(x2)
        except Exception as e: R.err(3, e)
        try: v4 = np.greater_equal(v2, v2)
        except Exception as e: R.err(4, e)
        try: v5 = np.stack([x2, x2], axis=2)
        except Exception as e: R.err(5, e)
        try: v6 = np.meshgrid(x4.ravel(), x1, copy=False)[1]
        except Exception as e: R.err(6, e)
        try: v7 = np.cumsum(v3, axis=1)
        except Exception as e: R.err(7, e)
        try: v8 = np.all(x3, axis=0)
        except Exception as e: R.err(8, e)
        try: v9 = np.meshgrid(v6.ravel(), x4, copy=False)[0]
        except Exception as e: R.err(9, e)
        try: v10 = np.clip(v3, -1, 2.5)
        except Exception as e: R.err(10, e)
        try: v11 = np.cumprod(x2, axis=1)
        except Exception as e: R.err(11, e)
        try: v12 = np.negative(v7)
        except Exception as e: R.err(12, e)
        try: v13 = np.sum(v7, axis=None)
        except Exception as e: R.err(13, e)
        try: v14 = np.ravel(v12)
        except Exception as e: R.err(14, e)
        try: v15 = np.matmul(v4, x1)
        except Exception as e: R.err(15, e)
        try: v16 = v10.reshape((8194,), order='F')
        except Exception as e: R.err(16, e)
        try: v17 = x4 > x4
        except Exception as e: R.err(17, e)
        try: v18 = v11[..., -2:4099:5, None, 1:]
        except Exception as e: R.err(18, e)
        return locals()


# ---- program 616002343 ----
CHECK_616002343 = {'v1': 3.5144516187119137e-09, 'v3': 7.029150706136016e-09, 'v4': 7.029150706136016e-09, 'v5': 7.029150706136016e-09, 'v6': 1.9725554169217713e-06, 'v7': 1.972674946803706e-06, 'v8': 3.5144516187119137e-09, 'v10': 3.5189060555313148e-09, 'v11': 1.972555418698128e-06, 'v13': 0.1333404986239663, 'v14': 0.0323203219678667, 'v16': 27879.744581411927, 'v18': 0.03232032196791733, 'x0': 0.03232032196791733, 'x1': 0.0, 'x2': 0.0, 'x3': 0.0}


def inputs_616002343():
    with np.errstate(all="ignore"):
        x0 = np.round(_rng(9856037488).uniform(-4.0, 4.0, (16385,)) * 4) / 4
        x1 = _rng(9856037489).uniform(-100.0, 100.0, (0, 3, 128))
        x2 = (_rng(9856037490).uniform(-4.0, 4.0, (3, 128)))[::-1, ::-1]
        x3 = np.asfortranarray(_rng(9856037491).uniform(-4.0, 4.0, (3, 1)))
        return [x0, x1, x2, x3]


def body_616002343(R, x0, x1, x2, x3):
    with np.errstate(all="ignore"):
        try: v1 = np.sum(x0, axis=None, keepdims=True)
        except Exception as e: R.err(1, e)
        try: x0[-1:8192:5] = v1
        except Exception as e: R.err(2, e)
        try: v3 = -v1
        except Exception as e: R.err(3, e)
        try: v4 = v3.squeeze()
        except Exception as e: R.err(4, e)
        try: v5 = v4.T
        except Exception as e: R.err(5, e)
        try: v6 = x0 * v4
        except Exception as e: R.err(6, e)
        try: v7 = np.mean(v6, axis=0)
        except Exception as e: R.err(7, e)
        try: v8 = np.maximum.reduce(v3, axis=None, keepdims=True)
        except Exception as e: R.err(8, e)
        try: v4 += v5
        except Exception as e: R.err(9, e)
        try: v10 = v1.cumsum(axis=0)
        except Exception as e: R.err(10, e)
        try: v11 = np.tanh(v6)
        except Exception as e: R.err(11, e)
        try: np.copyto(x0, v8)
        except Exception as e: R.err(12, e)
        try: v13 = np.std(v6, axis=None)
        except Exception as e: R.err(13, e)
        try: v14 = np.add.reduce(v11, axis=(0,))
        except Exception as e: R.err(14, e)
        try: np.negative(v10, out=v10)
        except Exception as e: R.err(15, e)
        try: v16 = x0.sum(axis=0, keepdims=True, dtype=np.float32)
        except Exception as e: R.err(16, e)
        try: x0[0:16384] = v14
        except Exception as e: R.err(17, e)
        try: v18 = x0[:]
        except Exception as e: R.err(18, e)
        return locals()


PROGRAMS = [
    (616002340, inputs_616002340, body_616002340, CHECK_616002340),
    (616002341, inputs_616002341, body_616002341, CHECK_616002341),
    (616002342, inputs_616002342, body_616002342, CHECK_616002342),
    (616002343, inputs_616002343, body_616002343, CHECK_616002343),
]

if __name__ == "__main__":
    _main(PROGRAMS)
