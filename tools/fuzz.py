#!/usr/bin/env python3
"""Random-program differential fuzzer: grumpy against plain NumPy.

Usage::

    python tools/fuzz.py --seconds N --seed S [--threads 1,2,3,8] [--jobs 1]
                         [--batch 20] [--max-shrink 3] [--shrink-seconds 120]
                         [--save-dir tests/fuzz_regressions] [--keep]
                         [--device cpu|emulated|gpu] [--jit-fail N [--eval-loops]]
                         [--warnings]
    python tools/fuzz.py --self-test [--seconds N]   # must report a planted error
    python tools/fuzz.py --replay tests/fuzz_regressions/case_<seed>.py ...
    python tools/fuzz.py --program SEED [--threads 3]   # one program; shrink if it fails
    python tools/fuzz.py --program SEED --show          # print its source

Method
    1. Generation.  A program is made from one integer seed with Python's
       ``random.Random(seed)`` (program seeds are ``S * 1000000 + i`` for run
       seed S): 2-5 input arrays built by seeded ``np.random.default_rng(k)``
       calls (float64, float32, int64, int32, bool and, less often, int8,
       int16, uint8, uint16, uint32, uint64; 0-d arrays, length-0 and
       length-1 axes, row counts 1 2 3 7 64 65 129, inner lengths 1 2 8 16
       17 127 128 129 1000 4097 131073, 1-D lengths around the 64 KiB
       capture threshold of every dtype, totals from 100 to 300000 elements;
       C, F, transposed, strided and reversed layouts; a few NaN and
       infinities), then 5-25 statements drawn from what grumpy captures:
       element-wise ufuncs (operators and ``np.`` calls: arithmetic, ``//``,
       ``%``, ``**``, maximum/minimum/fmax/fmin, sqrt exp log sin cos tanh
       abs negative positive sign floor ceil trunc rint square reciprocal,
       cbrt exp2 expm1 log2 log10 log1p tan arcsin arccos arctan sinh cosh
       arcsinh arccosh arctanh arctan2 hypot copysign, isnan isinf isfinite
       signbit, comparisons, logical and bitwise ops, ``~``, ``<<`` and
       ``>>`` by counts in and out of range: every ufunc grumpy computes), ``astype``, ``np.where``, ``np.clip``, reductions (sum prod min
       max mean any all, as methods, ``np.`` functions and ``ufunc.reduce``)
       over every kind of ``axis`` (None, int, negative, tuple, ``()``, and
       now and then an invalid one) with ``keepdims`` and ``dtype=``,
       ``argmin``/``argmax``, ``cumsum``/``cumprod``/``ufunc.accumulate``,
       views of pending and computed arrays (slices with steps and negative
       steps, integer indices, ``...``, ``None``, ``.T``, ``transpose``,
       ``reshape``, ``broadcast_to``, ``moveaxis``, ``swapaxes``, ``flip``,
       ``expand_dims``, ``squeeze``, ``ravel``), copies, in-place operators,
       ``out=`` (into the operand or another array), slice assignment
       (overlapping self-assignment too), ``a.fill`` (Python and NumPy
       scalars), ``np.copyto`` (``where=``,
       ``casting=``), ``np.concatenate``/``np.stack``, ``x[idx]`` and
       ``np.take`` gathers (integer index arrays of several dtypes, in range,
       negative, past the end), ``np.searchsorted`` (sorted tables and keys,
       both sides; keys out of order, unsorted tables, a sorter), ``np.roll`` (one axis,
       axis tuples with repeats, shift tuples, ``axis=None``, of computed and
       pending arrays), ``@``/``np.dot``/
       ``np.matmul``/``np.einsum`` (ij,jk->ik ij,ij->i bij,bjk->bik i,i->
       ij,j->i ij,kj->ik, and random specs: shared letters kept or summed,
       free letters, the output in any order)/``np.inner``/``np.vdot``/
       ``np.tensordot``/``np.outer`` (of plain vectors
       below the threshold into a large result too), ``np.var std average cov
       corrcoef histogram percentile nansum nanmean nanmax nanargmin
       nanargmax``, polynomials
       accumulated in place by a loop (``t += _p[::-1][::-1] * c`` 6-14
       times over a growing product chain: kernel splits), and snapshots
       ``R.snap(name, x)`` that record a value in the middle of the program
       (computing it there); and NumPy functions grumpy does not capture
       writing into arrays that pending values read (``ufunc.at``, ``put``,
       ``putmask``, ``place``, ``fill_diagonal``, in-place ``sort`` and
       ``partition``, a seeded ``shuffle``) or reading pending values
       (``ufunc.outer``, ``diff``, ``sort``, ``unique``, ``nonzero``,
       ``count_nonzero``, ``reduceat``).  Every candidate statement is first executed
       here with plain NumPy (the "shadow" run), so shapes, dtypes,
       exceptions and actual magnitudes are known; a statement NumPy rejects
       is kept now and then (grumpy must then raise the same type).

    2. Error bounds.  Alongside the shadow run every variable carries a
       bound ``E`` on how far grumpy's values may legitimately be from
       NumPy's (absolute, over its finite elements).  ``E = 0`` means
       bit-identical, grumpy's contract for integer and boolean work, float
       ``+ - * /``, ``//``, ``%``, ``sqrt``, min/max, comparisons, casts,
       ``where``, ``clip``, views, copies and percentiles.  Float sums,
       means, products, scans, matrix products, var/std/cov/... get the
       rounding difference of two summation orders, ``2 eps`` times the
       largest partial sum (from the actual values) per addition, with
       ``min(n, 50 sqrt(n))`` additions assumed to add up (a float32 sum of
       400000 equal values drifts by n/14 ulp of the total between
       sequential and pairwise order, well inside), plus the propagated input
       error; transcendental functions (and float ``**``) ``8 ulp`` of their
       largest result plus the propagated error.  Operations whose result
       jumps with a float input (comparisons, ``floor``, ``sign``, ``//``,
       ``%``, ``argmax``, ``any``, casts to int or bool, histograms, ``where``
       conditions) only get exact inputs, and operations that would amplify
       an error without bound are not generated: division by an inexact
       value near zero, ``sqrt``/``log`` of an inexact value near zero,
       ``inf * tiny``, a zero of ambiguous sign (from maximum, clip, a sum)
       as a divisor, products that could overflow or underflow part-way.
       So a difference beyond the bound is a bug, while a value off by a
       factor, a missing element or a stale buffer is far outside it.

    3. Execution.  Programs are rendered as Python source and batched (one
       function pair per program, ``--batch`` per file) into a file that
       runs every program three times, each time on freshly built inputs
       (freed buffers are reused: grumpy caches memory mappings), catches
       exceptions per statement (recording their type) and per program, and
       writes, per program, every live variable (inputs included) and every
       snapshot to a pickle stream named on its command line.  Values that
       must be exact are written as a hash of their canonical bytes (NaN
       payloads and the sign of zero normalized), the others in full.  The
       file runs once with ``python -m grumpy.run`` (``GRUMPY_MIN_BYTES=
       65536``, ``GRUMPY_THREADS`` from ``--threads`` round-robin per batch,
       a kernel cache directory private to the fuzzing run; ``--device
       emulated``: the GPU back end on the emulated device, which runs the
       GPU kernels' entries on the host, ``GRUMPY_DEVICE=gpu
       GRUMPY_GPU_EMULATE=1``; ``--device gpu``: on a real device,
       ``GRUMPY_DEVICE=gpu``; ``--jit-fail N``: the compiles of about one
       program in N fail, ``GRUMPY_DEBUG_JIT_FAIL=N``, so NumPy's fallback
       computes some kernels' work and kernels the rest, and with
       ``--eval-loops`` the fallback is NumPy's inner loops without the GIL,
       ``GRUMPY_DEBUG_EVAL_LOOPS=1``, as for a fault) and once with
       plain ``python`` (``GRUMPY`` unset); each side records whether capture
       was on, and a batch where it was not is skipped with a warning.

    4. Comparison contract, per program and repetition: the same statements
       raise the same exception types; the same variables exist; each has
       the same kind (array, NumPy scalar type, Python value, tuple), dtype
       and shape, and an array the same memory layout (the strides of its
       dims longer than 1: what ``ravel``, ``reshape`` and ``.flags`` see,
       so whether a later view aliases); exact values are equal (NaN equal to NaN, +0 equal to -0);
       others have NaN and infinities at the same places and finite
       elements within ``2 E`` (plus a few subnormals).  A grumpy process
       that crashes or hangs is a mismatch of the program it was running
       (the programs after it run again in the next batch).

    5. Shrinking.  A mismatching program is re-run alone (if it only fails
       after other programs in the same process, those are kept and
       reduced too), then statements are deleted (halves, then one at a
       time, each with everything that depends on it) while a mismatch of
       the same kind (crash, exception, kind, dtype, shape, values, ...)
       persists, each candidate's bounds recomputed by a new shadow run;
       then inputs are simplified (no NaN/inf, C layout).  Shapes are not
       shrunk: statements embed concrete indices.  The result is printed and
       saved as the standalone program ``tests/fuzz_regressions/
       case_<seed>.py`` (``python case_<seed>.py`` prints its values,
       ``python case_<seed>.py out.pkl`` writes them, ``THREADS`` names the
       ``GRUMPY_THREADS`` it failed with); ``tests/test_fuzz.py`` replays
       every saved case.  The first ``--max-shrink`` mismatches of different
       kinds are shrunk; the others are listed by program seed.

``--py-threads K`` runs K programs at a time in grumpy's processes, each
in its own Python thread (NumPy's process runs them one after another):
captures, flushes, kernel compiles and the page guard of several threads
interleave in one core.

Output: one line ``fuzz: P programs, O operations, M mismatches (seed S, T s)``
(operations = statements executed under grumpy, three repetitions each);
exit status 1 if there is a mismatch.  ``--self-test`` makes the grumpy side
add 1 to one value of every program (a finite element of a variable whose
bound is below 1/4, an inexact one if there is one; a bool is flipped) and
succeeds only if every such program is reported (cases are saved to a
temporary directory then).

Not generated, because NumPy leaves them platform-defined or the result
depends on a layout grumpy documents as different: float-to-int casts of
NaN, infinities or out-of-range values; writes that could reach an array
made by ``reshape``, ``ravel``, ``ascontiguousarray`` or ``asfortranarray``
(a view or a copy depending on the layout, and grumpy's reductions return
C-ordered arrays); complex and float16 inputs (bool inputs to float ufuncs
still give float16).  Warnings are not compared by default: everything
runs under ``np.errstate(all="ignore")`` with warnings ignored.  With
``--warnings`` the programs' bodies run under NumPy's default error state
(divide, over and invalid warn) and each repetition's warnings (category
and message, counted, in any order) must be NumPy's: grumpy gives a lazy
operation's warnings when it computes the array, not at the statement.
"""

import ast
import argparse
import itertools
import math
import os
import pathlib
import pickle
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from itertools import count, permutations

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
REGRESSIONS = ROOT / "tests" / "fuzz_regressions"
REPS = 3
MAX_ELEMS = 400_000  # largest array a statement may create
MAX_FLOPS = 30_000_000  # largest matrix product
NAME = re.compile(r"\b([xv][0-9]+)\b")
FULL_NAME = re.compile(r"^[xv][0-9]+$")

ROWS = (1, 2, 3, 7, 64, 65, 129)
INNER = (1, 2, 8, 16, 17, 127, 128, 129, 1000, 4097, 131073)
LENGTHS = (0, 1, 100, 1000, 8191, 8192, 8193, 16384, 16385, 20000, 65537, 131073, 300000)
BATCH = (0, 1, 2, 3, 4)
DTYPES = (("float64", 16), ("float32", 8), ("int64", 4), ("int32", 4), ("bool", 4), ("int8", 1), ("int16", 1),
          ("uint8", 1), ("uint16", 1), ("uint32", 1), ("uint64", 1))
LITERALS = ("2", "-1", "3", "0", "0.5", "-2.5", "1e-3", "7.0", "np.float32(1.5)",
            "np.float64(-0.75)", "np.int32(3)", "np.int64(-4)", "True", "-0.0")
# integer divisors of //, % and fmod: the kernels divide by any constant but
# 0 and -1 by multiplying (codegen.h GpInstr.divisor), every extreme included
DIVISORS = ("7", "-7", "10", "1", "100", "127", "-128", "255", "1000", "-3000", "65535", "2147483647",
            "np.int16(-300)", "np.uint8(200)", "np.int64(-9223372036854775808)", "np.uint64(3)",
            "np.int8(-128)", "np.uint32(4294967295)", "np.int32(-2147483647)")
KEEP_ERRORS = ("ValueError", "TypeError", "AxisError", "IndexError", "UFuncTypeError",
               "OverflowError", "UFuncNoLoopError", "ZeroDivisionError")


# ---------------------------------------------------------------------------
# The code every generated file starts with (it runs under grumpy too: only
# plain numpy.ndarray copies are made and hashed here).
RUNTIME = (pathlib.Path(__file__).resolve().parent / "fuzz_runtime.py").read_text()
# What a saved regression case has in its place (tests/fuzz_regressions):
# the runtime imported from this directory; --replay puts the text back.
RUNTIME_STUB = """\
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "tools"))
from fuzz_runtime import *  # noqa: E402,F401,F403  (tools/fuzz_runtime.py: the fuzzer's runtime)
"""


# ---------------------------------------------------------------------------
# Value statistics and error rules

class St:
    """Statistics of one value over its finite elements."""

    __slots__ = ("M", "minabs", "minv", "maxv", "nonfinite", "size")

    def __init__(self, x):
        a = np.asarray(x)
        self.size = a.size
        self.nonfinite = False
        if a.dtype.kind == "f":
            fin = np.isfinite(a)
            self.nonfinite = not bool(fin.all())
            v = a[fin].astype(np.float64) if self.nonfinite else a.astype(np.float64).ravel()
        elif a.dtype.kind in "biu":
            v = a.astype(np.float64).ravel()
        else:
            v = np.zeros(0)
            self.nonfinite = True
        if v.size:
            av = np.abs(v)
            self.M = float(av.max())
            self.minabs = float(av.min())
            self.minv = float(v.min())
            self.maxv = float(v.max())
        else:
            self.M, self.minabs, self.minv, self.maxv = 0.0, math.inf, math.inf, -math.inf


def eps_of(dt):
    dt = np.dtype(dt)
    return float(np.finfo(dt).eps) if dt.kind == "f" else 0.0


def tiny_of(dt):
    dt = np.dtype(dt)
    return float(np.finfo(dt).smallest_subnormal) if dt.kind == "f" else 0.0


def absfin(x, fill=0.0):
    """|x| as float64 with non-finite elements replaced by fill."""
    a = np.asarray(x)
    if a.dtype.kind == "f":
        return np.where(np.isfinite(a), np.abs(a.astype(np.float64)), fill)
    return np.abs(a.astype(np.float64))


def casts_in_range(x, dt):
    """Whether every element of float array x converts to integer type dt
    as C defines it (finite, integral part representable): NumPy's result
    for any other is the machine's (x86's cvttsd2si gives 0x80000000...,
    LLVM's fptoui poison), which the contract does not fix."""
    a = np.asarray(x)
    if a.dtype.kind != "f" or np.dtype(dt).kind not in "iu":
        return True
    if a.size == 0:
        return True
    if not np.isfinite(a).all():
        return False
    info = np.iinfo(dt)
    return float(a.min()) > float(info.min) - 1 and float(a.max()) < float(info.max) + 1


def finish(E, dt):
    """A bound for a float result: positive (so the value counts as inexact)
    and finite."""
    if not E == E or E > 1e300:
        return 1e300
    return max(E, tiny_of(dt) * 4)


EXACT_ONLY = {"floor_divide", "remainder", "fmod", "sign", "floor", "ceil", "greater", "greater_equal",
              "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or",
              "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "invert",
              "left_shift", "right_shift", "trunc", "rint", "isnan", "isinf", "isfinite", "signbit",
              "copysign"}
# math-library functions: within 8 ulp of their largest result (libm / libmvec, not NumPy's loops)
TRANSCENDENTAL = {"exp", "log", "sin", "cos", "tanh", "power", "cbrt", "exp2", "expm1", "log2", "log10",
                  "log1p", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
                  "arctanh", "arctan2", "hypot"}
# ... that overflow to infinity past a threshold: the two libraries may round across it
EXP_LIKE = {"exp2": math.log2, "expm1": math.log, "sinh": math.log, "cosh": math.log}
MINMAX = {"maximum", "minimum", "fmax", "fmin"}


def ufunc_rule(name, ins, out, same=False):
    """Error bound (E, nonneg, sz) of ufunc `name` on operands ins = [(St, E,
    nonneg, sz)] with result out, or None when it must not be generated.
    nonneg: structurally >= 0 in both runs; sz: may hold a zero whose sign
    differs between the runs."""
    o = np.asarray(out)
    dt = o.dtype
    if dt.kind not in "biuf":
        return None
    Es = [i[1] for i in ins]
    exact = not any(Es)
    isf = dt.kind == "f"
    sz = isf and (any(i[3] for i in ins) or name in MINMAX)
    if name in ("true_divide", "floor_divide", "remainder", "fmod") and len(ins) == 2:
        if ins[1][3] and ins[1][0].minabs == 0:
            return None
    if name == "power" and ins[0][3] and ins[0][0].minabs == 0:
        return None
    nns = [i[2] for i in ins]
    nn = (dt.kind == "b" or name in ("absolute", "exp", "sqrt", "square")
          or (name == "multiply" and same)
          or (name in ("add", "multiply", "true_divide", "minimum", "fmin", "maximum", "fmax")
              and all(nns))
          or (name in ("maximum", "fmax") and any(nns)))
    if name in ("signbit", "copysign") and any(i[3] for i in ins):
        return None  # the sign of a zero that may differ between the runs
    if name in EXP_LIKE and dt.kind == "f" and ins[0][0].M > EXP_LIKE[name](float(np.finfo(dt).max)) - 3:
        return None
    if name in ("tan", "sin", "cos") and ins[0][0].M > 1e5:
        return None  # argument reduction of huge angles: libraries differ
    if name in EXACT_ONLY:
        return (0.0, nn, sz) if exact else None
    if name == "subtract" and same:
        return (0.0, True, False)  # x - x: +0 (NaN where x is not finite) in both runs
    if exact:
        if name in TRANSCENDENTAL and isf:
            return (finish(8 * eps_of(dt) * St(o).M, dt), nn, sz)
        return (0.0, nn, sz)
    if not isf:
        return None
    eps = eps_of(dt)
    Mout = St(o).M
    sa, Ea = ins[0][0], ins[0][1]
    sb, Eb = (ins[1][0], ins[1][1]) if len(ins) > 1 else (None, 0.0)
    if name in ("add", "subtract"):
        E = Ea + Eb + eps * Mout
    elif name == "multiply":
        if (Ea and sb.nonfinite) or (Eb and sa.nonfinite):
            return None
        E = Ea * sb.M + Eb * sa.M + Ea * Eb + eps * Mout
    elif name == "true_divide":
        if Eb:
            if not sb.minabs > 4 * Eb:
                return None
            d = sb.minabs - Eb
            E = Ea / d + sa.M * Eb / (sb.minabs * d) + eps * Mout
        else:
            if sb.minabs == 0:
                return None
            E = Ea / sb.minabs + eps * Mout
    elif name in MINMAX:
        E = max(Ea, Eb)
    elif name in ("negative", "absolute", "positive"):
        E = Ea
    elif name == "square":
        if sa.nonfinite:
            return None
        E = 2 * sa.M * Ea + Ea * Ea + eps * Mout
    elif name == "sqrt":
        if ins[0][2]:
            E = math.sqrt(Ea) + eps * Mout
        elif sa.minv > 2 * Ea:
            E = min(math.sqrt(Ea), Ea / (2 * math.sqrt(sa.minv - Ea))) + eps * Mout
        else:
            return None
    elif name == "exp":
        if sa.maxv > math.log(float(np.finfo(dt).max)) - 3:
            return None
        E = Mout * math.expm1(min(Ea, 700.0)) * 1.01 + 8 * eps * Mout
    elif name == "log":
        if not sa.minv > 4 * Ea:
            return None
        E = Ea / (sa.minv - Ea) + 8 * eps * Mout
    elif name in ("sin", "cos", "tanh"):
        E = Ea + 8 * eps
    else:
        return None
    return (finish(E, dt), nn, sz)


def reduced_count(x, out):
    """Elements combined into each element of a reduction's result."""
    xs = np.size(x)
    os_ = np.size(out)
    if os_ == 0:
        return 0
    return xs // os_


def order_factor(n):
    """How many rounding errors of a sum of n terms are assumed to add up:
    all n for short sums, 50 sqrt(n) for long ones (a float32 sum of 400000
    equal values drifts by about n/14 ulp of the total between sequential
    and pairwise order, inside this)."""
    return min(n, 50.0 * math.sqrt(n))


def prefix_bound(x, axis):
    """Largest |partial sum| of a contiguous run of the reduced elements in
    any order of the reduced axes (twice the largest prefix sum), plus a
    margin for NumPy's eight interleaved accumulators: every partial sum of
    a sequential, pairwise or blocked (threaded) order is within this."""
    a = np.asarray(x)
    a = np.where(np.isfinite(a), a.astype(np.float64), 0.0) if a.dtype.kind == "f" else a.astype(np.float64)
    nd = a.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(sorted({ax % nd for ax in ((axis,) if isinstance(axis, int) else axis)})) if nd else ()
    M = float(np.abs(a).max()) if a.size else 0.0
    if not axes or a.size == 0:
        return 2 * M
    if len(axes) > 3:
        return float(np.max(np.abs(a).sum(axis=axes)))
    n = _size([a.shape[ax] for ax in axes])
    P = 0.0
    for perm in permutations(axes):
        lines = np.moveaxis(a, perm, list(range(nd - len(perm), nd))).reshape(-1, n)
        P = max(P, float(np.abs(np.cumsum(lines, axis=1)).max()))
    return 2 * P + 16 * M


def sum_bound(x, Ex, out, axis, n):
    """Bound of a sum of n terms along axis: input errors plus the rounding
    difference of two summation orders, 2 eps (partial sums) per addition."""
    o = np.asarray(out)
    if n == 0 or o.size == 0:
        return 0.0
    eps = eps_of(o.dtype)
    E = n * Ex + 2 * eps * order_factor(n) * prefix_bound(x, axis) + 4 * n * tiny_of(o.dtype)
    if Ex and o.dtype.itemsize < np.asarray(x).dtype.itemsize:
        E += n * eps * St(x).M
    return E


def prod_bound(x, Ex, out, axis, n, scan=False):
    """Bound of a product of n factors (None if a partial product could
    overflow or underflow, or an input error could grow without bound)."""
    o = np.asarray(out)
    if n == 0 or o.size == 0:
        return 0.0
    dt = o.dtype
    s = St(x)
    fi = np.finfo(dt)
    if n * math.log(max(s.M, 1.0)) > math.log(float(fi.max)) - 7:
        return None
    a = absfin(x, fill=1.0)
    nz = a[a > 0]
    if nz.size:
        mn = float(nz.min())
        if mn < 1 and n * math.log(mn) < math.log(float(fi.tiny)) + 7:
            return None
    if Ex and n > 8:
        return None
    if scan:
        P = np.cumprod(a.ravel() if axis is None else a, axis=0 if axis is None else axis)
    else:
        P = np.prod(a, axis=axis)
    P = float(np.max(P)) if np.size(P) else 0.0
    eps = eps_of(dt)
    E = 2 * n * eps * P + 4 * n * tiny_of(dt)
    if Ex:
        E += n * Ex * max(s.M, 1.0) ** (n - 1)
    return E


def _deviation(a, axis):
    """max |x - mean(x)| over the finite elements (float64)."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return 0.0
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = np.abs(a - np.nanmean(np.where(np.isfinite(a), a, np.nan), axis=axis, keepdims=True))
    d = d[np.isfinite(d)]
    return float(d.max()) if d.size else 0.0


def var_bound(x, Ex, out, axis, n, ddof, std):
    """Bound of var/std: mean, deviations (their actual size), squares, sum."""
    o = np.asarray(out)
    if n == 0 or o.size == 0:
        return 0.0
    eps = eps_of(o.dtype)
    Mx = St(x).M
    Em = Ex + 2 * eps * order_factor(n) * Mx
    Ed = Ex + Em + eps * Mx
    Md = _deviation(x, axis) + Ed
    Esq = 2 * Md * Ed + Ed * Ed + eps * Md * Md
    Ess = n * Esq + 2 * eps * order_factor(n) * n * Md * Md
    Ev = Ess / max(n - ddof, 1) + eps * St(o).M
    if std:
        return math.sqrt(Ev) + eps * St(o).M
    return Ev


def cov_bound(x, Ex, out, ddof=1):
    """Bound of np.cov of x (rows are variables)."""
    a = np.asarray(x)
    N = a.shape[-1] if a.ndim else 1
    o = np.asarray(out)
    eps = eps_of(o.dtype)
    Mx = St(a).M
    Em = Ex + 2 * eps * order_factor(N) * Mx
    Ed = Ex + Em + eps * Mx
    Md = _deviation(a, -1 if a.ndim else None) + Ed
    return ((N * (2 * Md * Ed + Ed * Ed) + 2 * eps * order_factor(N) * N * Md * Md) / max(N - ddof, 1)
            + eps * St(o).M)


def product_bound(fn, A, Ea, B, Eb, out):
    """Bound of a contraction fn(A, B) (matmul, dot, einsum, tensordot)."""
    o = np.asarray(out)
    if o.dtype.kind not in "f":
        return 0.0 if not (Ea or Eb) else None
    sa, sb = St(A), St(B)
    if sa.nonfinite or sb.nonfinite:
        return None
    if o.size == 0:
        return 0.0
    with np.errstate(all="ignore"):
        S = fn(absfin(A), absfin(B))
        K = fn(np.ones(np.shape(A)), np.ones(np.shape(B)))
    S = float(np.max(S)) if np.size(S) else 0.0
    K = float(np.max(K)) if np.size(K) else 0.0
    if not S < float(np.finfo(o.dtype).max) / 4:
        # a partial sum may overflow: which infinities meet (inf, or NaN
        # from inf - inf) depends on the order of accumulation, which BLAS
        # and NumPy's einsum loop choose differently (as prod_bound)
        return None
    eps = eps_of(o.dtype)
    return K * (Ea * sb.M + Eb * sa.M + Ea * Eb) + 2 * eps * order_factor(K) * S + 4 * K * tiny_of(o.dtype)


# ---------------------------------------------------------------------------
# Programs

class Stmt:
    """One statement.  kind: "input" (defines out), "def" (defines out),
    "write" (changes target in place), "snap" (records target as out).
    rule: def/input: rule(an, value) -> (E, nonneg, sz) | None, after the
    statement ran; write: rule(an) -> (E, nonneg, sz) | None, before."""

    __slots__ = ("k", "kind", "text", "out", "target", "rule", "alts", "maybe_view", "_code")

    def __init__(self, k, kind, text, out=None, target=None, rule=None, alts=(), maybe_view=None):
        self.k, self.kind, self.text, self.out, self.target = k, kind, text, out, target
        self.rule, self.alts, self.maybe_view, self._code = rule, tuple(alts), maybe_view, None

    def code(self):
        if self._code is None:
            self._code = compile(self.text, f"<stmt {self.k}>", "exec")
        return self._code

    def uses(self):
        return set(NAME.findall(self.text)) - {self.out}

    def with_text(self, text):
        return Stmt(self.k, self.kind, text, self.out, self.target, self.rule, (), self.maybe_view)


class Program:
    def __init__(self, seed, inputs, body, spec=None):
        self.seed, self.inputs, self.body, self.spec = seed, list(inputs), list(body), spec

    def copy(self, inputs=None, body=None):
        return Program(self.seed, self.inputs if inputs is None else inputs,
                       self.body if body is None else body, None)


class _ShadowRecorder:
    def snap(self, name, x):
        pass

    def err(self, k, e):
        pass


class Analyzer:
    """Runs statements with plain NumPy and keeps each variable's error
    bound E, structural non-negativity and signed-zero ambiguity."""

    def __init__(self):
        self.ns = {"np": np, "_rng": np.random.default_rng, "R": _ShadowRecorder()}
        self.info = {}
        self.snaps = {}
        self.maybe_views = {}  # var -> the var it may or may not be a view of

    def opnd(self, op):
        expr, base = op
        v = eval(expr, self.ns)  # noqa: S307 - our own generated text
        if base is None:
            return (St(v), 0.0, bool(np.all(np.asarray(v) >= 0)), False)
        E, nn, sz = self.info[base]
        return (St(v), E, nn, sz)

    def E(self, base):
        return 0.0 if base is None else self.info[base][0]

    def val(self, expr):
        return eval(expr, self.ns)  # noqa: S307

    def run(self, st):
        """Run one statement: "ok", "raised <Type>" or "reject"."""
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if st.kind == "snap":
                if st.target not in self.info or st.target not in self.ns:
                    return "raised NameError"
                self.snaps[st.out] = self.info[st.target][0]
                return "ok"
            pre = None
            if st.kind == "write":
                try:
                    if self._layout_dependent(st.target):
                        return "reject"
                    pre = st.rule(self)
                except Exception:  # noqa: BLE001 - an operand that does not exist
                    return "reject"
                if pre is None:
                    return "reject"
            try:
                exec(st.code(), self.ns)  # noqa: S102
            except Exception as e:  # noqa: BLE001
                return "raised " + type(e).__name__
            if st.kind == "write":
                self._written(st.target, pre)
                return "ok"
            value = self.ns[st.out]
            res = None
            if _acceptable(value):
                try:
                    res = st.rule(self, value)
                except Exception:  # noqa: BLE001
                    res = None
            if res is None or not _exact_if_not_float(value, res[0]):
                del self.ns[st.out]
                return "reject"
            self.info[st.out] = res
            if st.maybe_view:
                self.maybe_views[st.out] = st.maybe_view
            return "ok"

    def _layout_dependent(self, target):
        """Whether writing into target could change a variable made by
        reshape / ravel / ascontiguousarray / asfortranarray, which are views
        or copies depending on the memory layout (grumpy's reductions return
        C-ordered arrays where NumPy's may not be)."""
        t = self.ns[target]
        for a, src in self.maybe_views.items():
            for n in (a, src):
                v = self.ns.get(n)
                if n == target or (isinstance(v, np.ndarray) and isinstance(t, np.ndarray)
                                   and np.may_share_memory(v, t)):
                    return True
        return False

    def _written(self, target, res):
        """After a write of values with bound E into target (all of it when
        full): every variable that may share its memory gets max(E, its E)."""
        E, nn, sz, full = res
        t = self.ns[target]
        for name in list(self.info):
            v = self.ns.get(name)
            if v is None:
                continue
            if name == target or (isinstance(v, np.ndarray) and isinstance(t, np.ndarray)
                                  and np.may_share_memory(v, t)):
                if name == target and (full or not isinstance(t, np.ndarray)):
                    self.info[name] = (E, nn, sz)  # every element replaced, or a scalar rebound
                    continue
                E0, nn0, sz0 = self.info[name]
                self.info[name] = (max(E0, E), nn0 and nn, sz0 or sz)

    def spec(self):
        out = {}
        for name, value in self.ns.items():
            if FULL_NAME.match(name) and name in self.info:
                out[name] = float(self.info[name][0])
        out.update(self.snaps)
        return out


def _acceptable(value):
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value).dtype.kind in "biuf" and np.size(value) <= MAX_ELEMS
    if isinstance(value, tuple):
        return all(_acceptable(v) for v in value)
    return False


def _exact_if_not_float(value, E):
    """Integer and boolean results must be exact."""
    if E == 0:
        return True
    if isinstance(value, tuple):
        return all(_exact_if_not_float(v, E) for v in value)
    return np.asarray(value).dtype.kind == "f"


def analyze(prog):
    """Shadow-run a program; its spec (name -> E), or None when a statement
    is no longer valid (after shrinking)."""
    an = Analyzer()
    for st in prog.inputs + prog.body:
        if an.run(st) == "reject":
            return None
    return an.spec()


def view_rule(base):
    def rule(an, value):
        return an.info[base]
    return rule


def product_rule(fn, A, B):
    """Rule of a contraction fn(A, B) (A and B: (expression, base variable)):
    product_bound's error at the result, never structurally >= 0."""
    def rule(an, value):
        b = product_bound(fn, an.val(A[0]), an.E(A[1]), an.val(B[0]), an.E(B[1]), value)
        if b is None:
            return None
        dt = np.asarray(value).dtype
        return ((finish(b, dt) if dt.kind == "f" else 0.0), False, dt.kind == "f")
    return rule


def max_rule(bases, nonneg=None, exact=()):
    """E of a value assembled from operands without arithmetic."""
    def rule(an, value):
        if any(an.E(b) for b in exact):
            return None
        infos = [an.info[b] if b is not None else (0.0, True, False) for b in bases]
        E = max([i[0] for i in infos] + [0.0])
        nn = all(i[1] for i in infos) if nonneg is None else nonneg
        return (E, nn, any(i[2] for i in infos))
    return rule


# ---------------------------------------------------------------------------
# The generator

def _shape_text(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _size(shape):
    return int(np.prod(shape, dtype=np.int64)) if len(shape) else 1


def _random_einsum(r, sa, sb):
    """A random two-operand einsum spec for operands of shapes sa and sb
    (letters shared where the lengths agree: batch letters kept in the
    output, contracted ones summed; now and then a letter summed over one
    operand only, which NumPy computes; the output in a random order), or
    None when the result or the work would be too large."""
    letters = list("abcdefghijklmnopqrstuvwxyz")
    r.shuffle(letters)
    la = letters[:len(sa)]
    lb, used, fresh = [], set(), iter(letters[len(sa):])
    for d in sb:
        same = [la[i] for i in range(len(sa)) if sa[i] == d and la[i] not in used]
        if same and r.random() < 0.7:
            lb.append(r.choice(same))
            used.add(lb[-1])
        else:
            lb.append(next(fresh))
    dims = dict(zip(la, sa))
    dims.update(zip(lb, sb))
    outs = [c for c in la + [c for c in lb if c not in la]
            if (c in la and c in lb and r.random() < 0.35) or ((c in la) != (c in lb) and r.random() < 0.93)]
    r.shuffle(outs)
    if _size(tuple(dims[c] for c in outs)) > MAX_ELEMS or _size(tuple(dims.values())) > MAX_FLOPS:
        return None
    return f"{''.join(la)},{''.join(lb)}->{''.join(outs)}"


def matmul_shape(sa, sb):
    if not sa or not sb:
        return None
    a = sa if len(sa) > 1 else (1,) + sa
    b = sb if len(sb) > 1 else sb + (1,)
    if a[-1] != b[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        return None
    out = list(batch) + [a[-2], b[-1]]
    if len(sb) == 1:
        out.pop(-1)
    if len(sa) == 1:
        out.pop(-2 if len(sb) > 1 else -1)
    return tuple(out), a[-1]


class Generator:
    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.an = Analyzer()
        self.inputs = []
        self.body = []
        self.k = 0
        self.recent = []

    # -- variables ----------------------------------------------------------
    def names(self, pred=None):
        out = []
        for n, v in self.an.ns.items():
            if FULL_NAME.match(n) and n in self.an.info and isinstance(v, (np.ndarray, np.generic)):
                if pred is None or pred(v):
                    out.append(n)
        return out

    def pick(self, pred=None):
        names = self.names(pred)
        if not names:
            return None
        x = self.r.random()
        recent = [n for n in self.recent[-6:] if n in names]
        if recent and x < 0.35:
            return self.r.choice(recent)
        big = [n for n in names if np.size(self.an.ns[n]) >= 4096]
        if big and x < 0.8:  # mostly arrays that grumpy captures
            return self.r.choice(big)
        return self.r.choice(names)

    def exact(self, n):
        return self.an.info[n][0] == 0

    def v(self, n):
        return self.an.ns[n]

    def literal(self):
        return self.r.choice(LITERALS)

    def partner(self, shape, fit=False, p_literal=0.25):
        """An operand broadcastable with shape (to exactly shape if fit):
        (expr, base)."""
        r = self.r
        if r.random() < p_literal:
            return (self.literal(), None)
        cands, same = [], []
        for n in self.names():
            s2 = np.shape(self.v(n))
            try:
                bs = np.broadcast_shapes(tuple(shape), s2)
            except ValueError:
                continue
            if (fit and bs != tuple(shape)) or _size(bs) > MAX_ELEMS:
                continue
            cands.append(n)
            if s2 == tuple(shape):
                same.append(n)
        if not cands:
            return (self.literal(), None)
        n = r.choice(same) if same and r.random() < 0.5 else r.choice(cands)
        return (n, n)

    def new(self):
        self.k += 1
        return self.k, f"v{self.k}"

    def axis(self, nd, none=True, tuples=True, bad=0.03):
        r = self.r
        x = r.random()
        if nd == 0:
            return r.choice([None, None, None, 0, ()]) if tuples else r.choice([None, None, 0])
        if x < bad:
            return r.choice([nd, -nd - 1] + ([(0, 0)] if tuples else []))
        if none and x < 0.2:
            return None
        if x < 0.6 or not tuples:
            ax = r.randrange(nd)
            return ax - nd if r.random() < 0.3 else ax
        if x < 0.95:
            axes = r.sample(range(nd), r.randint(1, nd))
            if r.random() < 0.5:
                axes.sort()
            return tuple(a - nd if r.random() < 0.3 else a for a in axes)
        return ()

    def slice_text(self, n):
        r = self.r
        x = r.random()
        if x < 0.2:
            return ":"
        if x < 0.35:
            return "::-1"
        ends = ["", "", 0, 1, n // 2, n - 1, -1, -2, n + 2]
        step = r.choice([1, 1, 2, 3, -1, -2, 5])
        start, stop = r.choice(ends), r.choice(ends)
        if step == 1:
            return f"{start}:{stop}"
        return f"{start}:{stop}:{step}"

    def index_text(self, shape, ints=True, newaxis=True):
        r = self.r
        nd = len(shape)
        if nd == 0:
            return r.choice(["...", "None", "()"] if newaxis else ["...", "()"])
        parts = []
        ell = r.random() < 0.15
        k = r.randint(1, nd)
        dims = range(nd - k, nd) if ell else range(k)
        for d in dims:
            n = shape[d]
            if newaxis and r.random() < 0.08:
                parts.append("None")
            if ints and n > 0 and r.random() < 0.15:
                parts.append(str(r.choice([0, n - 1, -1, n // 2] + ([n] if r.random() < 0.1 else []))))
            else:
                parts.append(self.slice_text(n))
        if ell:
            parts.insert(0, "...")
        return ", ".join(parts)

    # -- inputs ---------------------------------------------------------------
    def gen_inputs(self):
        r = self.r
        cls = r.choices(["small", "large"], weights=[3, 7])[0]
        lo, hi = (100, 20000) if cls == "small" else (8192, 300000)
        pairs = [(a, b) for a in ROWS for b in INNER if lo <= a * b <= hi]
        rows, cols = r.choice(pairs)
        if r.random() < 0.06:
            rows = 0
        batches = [b for b in BATCH if b * max(rows, 1) * cols <= 300000] or [1]
        b = r.choice(batches)
        L = r.choice(LENGTHS)
        templates = {"mat": (rows, cols), "vec": (cols,), "col": (rows, 1), "row": (1, cols),
                     "matT": (cols, rows), "cube": (b, rows, cols), "cube1": (b, 1, cols),
                     "rvec": (rows,), "long": (L,), "scalar": ()}
        first = r.choice(["mat", "mat", "mat", "long", "cube"])
        kinds = [first] + r.choices(list(templates), weights=[5, 3, 2, 2, 1, 1, 1, 1, 1, 1],
                                    k=r.randint(1, 4))
        for i, kind in enumerate(kinds):
            self.input(i, templates[kind])

    def input(self, i, shape):
        r = self.r
        name = f"x{i}"
        dtype = r.choices([d for d, _ in DTYPES], weights=[w for _, w in DTYPES])[0]
        nd = len(shape)
        s = (self.seed * 16 + i) % (2 ** 63)
        layout = "C"
        if nd >= 2:
            layout = r.choices(["C", "F", "T", "strided", "reversed"], weights=[5, 2, 2, 1, 1])[0]
        elif nd == 1:
            layout = r.choices(["C", "strided", "reversed"], weights=[6, 1, 1])[0]
        gshape = shape
        post = ""
        if layout == "T":
            gshape = tuple(reversed(shape))
            post = ".T"
        elif layout == "strided":
            gshape = (2 * shape[0],) + tuple(shape[1:])
            post = "[::2]"
        elif layout == "reversed":
            post = "[::-1]" if nd == 1 else "[::-1, ::-1]"
        nonneg = False
        g = "@SHAPE@"  # the generated shape; the simplest alternative uses the final one
        if dtype in ("float64", "float32"):
            flavor = r.choices(["u4", "u1", "wide", "grid", "near1", "pos"], weights=[4, 2, 1, 2, 1, 1])[0]
            expr = {"u4": f"_rng({s}).uniform(-4.0, 4.0, {g})",
                    "u1": f"_rng({s}).uniform(-1.0, 1.0, {g})",
                    "wide": f"_rng({s}).uniform(-100.0, 100.0, {g})",
                    "grid": f"np.round(_rng({s}).uniform(-4.0, 4.0, {g}) * 4) / 4",
                    "near1": f"_rng({s}).uniform(0.9, 1.1, {g})",
                    "pos": f"_rng({s}).uniform(0.0, 4.0, {g})"}[flavor]
            nonneg = flavor in ("near1", "pos")
            if dtype == "float32":
                expr = f"({expr}).astype(np.float32)"
        elif dtype != "bool":
            flavor = r.choices(["small", "mid", "pos", "big"], weights=[4, 2, 2, 1])[0]
            info = np.iinfo(dtype)
            # int64 and uint64 stop at 2**62 and 2**63: their sums wrap as NumPy's do, and
            # 2**63 and more of uint64 meet int64 in float64 (NumPy's promotion)
            big = min(int(info.max) + 1, 2 ** 63 if dtype == "uint64" else 2 ** 62)
            lo_, hi_ = {"small": (-4, 5), "mid": (-100, 101), "pos": (0, 10),
                        "big": (-big if info.min else 0, big)}[flavor]
            lo_, hi_ = max(lo_, int(info.min)), min(hi_, big)
            expr = f"_rng({s}).integers({lo_}, {hi_}, {g}, dtype=np.{dtype})"
            nonneg = flavor == "pos" or dtype.startswith("uint")
        else:
            p = r.choice([0.1, 0.5, 0.9])
            expr = f"_rng({s}).random({g}) < {p}"
            nonneg = True
        plain_c = f"{name} = " + expr.replace(g, _shape_text(shape))
        expr = expr.replace(g, _shape_text(gshape))
        if np.dtype(dtype).itemsize > 1 and r.random() < 0.06:
            # non-native byte order ('>f8' here): the values are the same, NumPy's results keep
            # or drop the order by its own rules, and grumpy must leave such arrays to NumPy
            expr = f"({expr}).astype(np.dtype(np.{dtype}).newbyteorder())"
        if layout == "F":
            text = f"{name} = np.asfortranarray({expr})"
        elif post:
            text = f"{name} = ({expr}){post}"
        else:
            text = plain_c
        base_text = text
        if dtype.startswith("float") and nd >= 1 and r.random() < 0.15:
            text += f"\n{name}[_rng({s + 7}).random({name}.shape) < 0.01] = np.nan"
            if r.random() < 0.5:
                sign = r.choice(["", "-"])
                text += f"\n{name}[_rng({s + 8}).random({name}.shape) < 0.005] = {sign}np.inf"
            nonneg = False
        alts = [t for t in (base_text, plain_c) if t != text]
        st = Stmt(i, "input", text, out=name, rule=lambda an, v, nn=nonneg: (0.0, nn, False), alts=alts)
        status = self.an.run(st)
        assert status == "ok", (text, status)
        self.inputs.append(st)

    # -- statements -----------------------------------------------------------
    def gen_binary(self):
        r = self.r
        a = self.pick()
        if a is None:
            return None
        ops = [("add", "+"), ("subtract", "-"), ("multiply", "*"), ("true_divide", "/"),
               ("floor_divide", "//"), ("remainder", "%"), ("power", "**"), ("maximum", None),
               ("minimum", None), ("fmax", None), ("fmin", None), ("greater", ">"),
               ("greater_equal", ">="), ("less", "<"), ("less_equal", "<="), ("equal", "=="),
               ("not_equal", "!="), ("logical_and", None), ("logical_or", None),
               ("logical_xor", None), ("bitwise_and", "&"), ("bitwise_or", "|"), ("fmod", None),
               ("bitwise_xor", "^"), ("left_shift", "<<"), ("right_shift", ">>"), ("arctan2", None),
               ("hypot", None), ("copysign", None)]
        weights = [6, 5, 6, 4, 2, 2, 2, 2, 2, 1, 1, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.7, 0.7, 0.7]
        name, sym = r.choices(ops, weights=weights)[0]
        shape = np.shape(self.v(a))
        if name == "power" and r.random() < 0.7:
            # each class of constant exponent the kernels specialise for (codegen.h)
            b = (r.choice(["2", "3", "0.5", "-1", "np.float32(2)", "2.0", "4", "3.0", "1.0", "0", "1.5",
                           "np.float32(2.4)", "-0.7"]), None)
        elif name in ("floor_divide", "remainder", "fmod") and r.random() < 0.35:
            b = (r.choice(DIVISORS), None)
        elif name in ("left_shift", "right_shift") and r.random() < 0.5:
            # counts in range, at and past the width of every integer type, negative
            b = (r.choice(["1", "3", "7", "8", "15", "16", "31", "32", "63", "64", "-1", "np.int8(5)",
                           "np.uint8(9)", "np.int64(70)"]), None)
        elif r.random() < 0.08:
            b = (a, a)
        elif r.random() < 0.02:
            n = self.pick()
            b = (n, n)
        else:
            b = self.partner(shape)
        x, y = (a, a), b
        if b[1] is None and r.random() < 0.3:
            x, y = b, (a, a)
        try:
            out_shape = np.broadcast_shapes(np.shape(self.an.val(x[0])), np.shape(self.an.val(y[0])))
            if _size(out_shape) > MAX_ELEMS:
                return None
        except ValueError:
            pass
        k, out = self.new()
        if sym and r.random() < 0.6:
            text = f"{out} = {x[0]} {sym} {y[0]}"
        else:
            fn = {"true_divide": r.choice(["true_divide", "divide"])}.get(name, name)
            text = f"{out} = np.{fn}({x[0]}, {y[0]})"
        same = x[0] == y[0]

        def rule(an, value):
            return ufunc_rule(name, [an.opnd(x), an.opnd(y)], value, same)
        return Stmt(k, "def", text, out=out, rule=rule)

    def gen_unary(self):
        r = self.r
        a = self.pick()
        if a is None:
            return None
        ops = [("sqrt", ["np.sqrt({})"]), ("exp", ["np.exp({})"]), ("log", ["np.log({})"]),
               ("sin", ["np.sin({})"]), ("cos", ["np.cos({})"]), ("tanh", ["np.tanh({})"]),
               ("absolute", ["np.abs({})", "abs({})", "np.absolute({})"]),
               ("negative", ["-{}", "np.negative({})"]), ("sign", ["np.sign({})"]),
               ("floor", ["np.floor({})"]), ("ceil", ["np.ceil({})"]),
               ("logical_not", ["np.logical_not({})"]), ("square", ["np.square({})"]),
               ("invert", ["~{}", "np.invert({})", "np.bitwise_not({})"]), ("positive", ["+{}", "np.positive({})"]),
               ("reciprocal", ["np.reciprocal({})"]), ("trunc", ["np.trunc({})", "np.fix({})"]),
               ("rint", ["np.rint({})"]), ("isnan", ["np.isnan({})"]), ("isinf", ["np.isinf({})"]),
               ("isfinite", ["np.isfinite({})"]), ("signbit", ["np.signbit({})"])]
        weights = [3, 3, 2, 2, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
        more = ["cbrt", "exp2", "expm1", "log2", "log10", "log1p", "tan", "arcsin", "arccos", "arctan",
                "sinh", "cosh", "arcsinh", "arccosh", "arctanh"]
        ops += [(m, [f"np.{m}({{}})"]) for m in more]
        weights += [0.7] * len(more)
        name, forms = r.choices(ops, weights=weights)[0]
        k, out = self.new()
        text = f"{out} = " + r.choice(forms).format(a)

        def rule(an, value):
            return ufunc_rule(name, [an.opnd((a, a))], value)
        return Stmt(k, "def", text, out=out, rule=rule)

    def gen_astype(self):
        r = self.r
        a = self.pick()
        if a is None:
            return None
        # longlong: int64's bits, NumPy's other type ('q'; grumpy leaves it to NumPy)
        dt = r.choice(["float64", "float32", "int32", "int64", "bool", "int16", "uint8", "longlong", "int8", "uint16",
                       "uint32", "uint64"])
        k, out = self.new()
        target = f"np.{dt}"
        if dt not in ("bool", "uint8") and r.random() < 0.1:
            target = f"np.dtype(np.{dt}).newbyteorder()"  # into non-native byte order
        text = r.choice([f"{out} = {a}.astype({target})", f"{out} = {a}.astype({target}, copy=False)",
                         f"{out} = np.asarray({a}, dtype={target})"])

        def rule(an, value):
            src = an.val(a)
            s = St(src)
            E, nn, sz = an.info[a]
            sk = np.asarray(src).dtype.kind
            tk = np.dtype(dt).kind
            if sk == "f" and tk in "iub":
                if E:
                    return None
                if tk in "iu" and (s.nonfinite or s.M >= float(np.iinfo(dt).max) / 2):
                    return None
                if dt in ("uint16", "uint32", "uint64") and not casts_in_range(src, dt):
                    return None  # a negative value: C leaves it undefined, NumPy's SIMD casts saturate
                return (0.0, nn, False)
            if tk == "f":
                if E:
                    E = finish(E + eps_of(dt) * s.M, dt)
                return (E, nn, sz)
            return (E, nn, False)
        return Stmt(k, "def", text, out=out, rule=rule)

    def gen_where(self):
        r = self.r
        c = self.pick(lambda v: True)
        if c is None or not self.exact(c):
            return None
        shape = np.shape(self.v(c))
        cexpr = c
        if r.random() < 0.4 and np.asarray(self.v(c)).dtype.kind != "b":
            cexpr = f"{c} > {r.choice(['0', '1', '-0.5'])}"
        x = self.partner(shape, p_literal=0.3)
        y = self.partner(shape, p_literal=0.4)
        try:
            bs = np.broadcast_shapes(shape, np.shape(self.an.val(x[0])), np.shape(self.an.val(y[0])))
            if _size(bs) > MAX_ELEMS:
                return None
        except ValueError:
            pass
        k, out = self.new()
        text = f"{out} = np.where({cexpr}, {x[0]}, {y[0]})"
        return Stmt(k, "def", text, out=out, rule=max_rule([x[1], y[1]], exact=[c]))

    def gen_clip(self):
        r = self.r
        a = self.pick()
        if a is None:
            return None
        shape = np.shape(self.v(a))
        lo = r.choice([("-1", None), ("0", None), ("-2.5", None), ("None", None), ("0.5", None)])
        hi = r.choice([("1", None), ("2.5", None), ("3", None), ("None", None), ("-1", None)])
        if r.random() < 0.25:
            lo = self.partner(shape, fit=True, p_literal=0.0)
        k, out = self.new()
        text = r.choice([f"{out} = np.clip({a}, {lo[0]}, {hi[0]})", f"{out} = {a}.clip({lo[0]}, {hi[0]})"])
        nonneg = True if lo[0] in ("0", "0.5") else None

        def rule(an, value):
            res = max_rule([a, lo[1], hi[1]], nonneg=nonneg)(an, value)
            if res is None:
                return None
            return (res[0], res[1], np.asarray(value).dtype.kind == "f")
        return Stmt(k, "def", text, out=out, rule=rule)

    def gen_reduce(self):
        r = self.r
        a = self.pick()
        if a is None:
            return None
        nd = np.ndim(self.v(a))
        func = r.choices(["sum", "prod", "min", "max", "mean", "any", "all"], weights=[5, 2, 2, 2, 3, 1, 1])[0]
        ax = self.axis(nd)
        kw = [f"axis={ax!r}"]
        if r.random() < 0.3:
            kw.append("keepdims=True")
        dt = None
        if func in ("sum", "prod", "mean") and r.random() < 0.2:
            # narrow and unsigned accumulators wrap as NumPy's do; bool's add is logical or
            dt = r.choice(["float64", "float32", "int64", "int64", "int8", "uint16", "int32", "uint32", "uint64",
                           "bool"] if func != "mean" else ["float64", "float32"])
            kw.append(f"dtype=np.{dt}")
        ufuncs = {"sum": "add", "prod": "multiply", "min": "minimum", "max": "maximum",
                  "any": "logical_or", "all": "logical_and"}
        k, out = self.new()
        x = r.random()
        if func in ufuncs and x < 0.2 and nd > 0:
            if r.random() < 0.25:  # ufunc.reduce's default axis is 0
                ax = 0
                kw = kw[1:]
            text = f"{out} = np.{ufuncs[func]}.reduce({a}{''.join(', ' + w for w in kw)})"
        elif x < 0.45:
            text = f"{out} = {a}.{func}({', '.join(kw)})"
        elif x < 0.6:
            # the method of a temporary (a lazy copy the call alone holds):
            # the kernel fuses it without writing it (GpNode.output_deferred)
            text = f"{out} = {a}.copy().{func}({', '.join(kw)})"
        else:
            text = f"{out} = np.{func}({a}, {', '.join(kw)})"

        def rule(an, value):
            xv = an.val(a)
            E, nn, sz = an.info[a]
            n = reduced_count(xv, value)
            isf = np.asarray(value).dtype.kind == "f"
            if dt is not None and not casts_in_range(xv, dt):
                return None
            if func in ("any", "all"):
                return (0.0, True, False) if E == 0 else None
            if func in ("min", "max"):
                return (E, nn, sz or isf)
            if not isf:
                return (0.0, nn, False) if E == 0 else None
            if func == "prod":
                b = prod_bound(xv, E, value, ax, n)
                if b is None:
                    return None
                return (finish(b, np.asarray(value).dtype), nn, True)  # a sum of zeros may be +0 or -0
            b = sum_bound(xv, E, value, ax, n)
            if func == "mean" and n:
                b = b / n + eps_of(np.asarray(value).dtype) * St(value).M
            return (finish(b, np.asarray(value).dtype), nn, True)
        return Stmt(k, "def", text, out=out, rule=rule)

    def gen_arg(self):
        r = self.r
        a = self.pick()
        if a is None or not self.exact(a):
            return None
        nd = np.ndim(self.v(a))
        func = r.choice(["argmin", "argmax"])
        ax = self.axis(nd, tuples=False)
        kw = f"axis={ax!r}" + (", keepdims=True" if r.random() < 0.2 else "")
        k, out = self.new()
        text = r.choice([f"{out} = np.{func}({a}, {kw})", f"{out} = {a}.{func}({kw})"])
        return Stmt(k, "def", text, out=out, rule=max_rule([a], nonneg=True, exact=[a]))

    def gen_scan(self):
        r = self.r
        a = self.pick()
        if a is None:
            return None
        nd = np.ndim(self.v(a))
        func = r.choice(["cumsum", "cumsum", "cumprod"])
        ax = self.axis(nd, tuples=False)
        kw = f"axis={ax!r}"
        if r.random() < 0.15:
            kw += ", dtype=np." + r.choice(["float64", "float32", "int64", "int64", "int8", "uint16", "uint32"])
        k, out = self.new()
        x = r.random()
        if x < 0.2 and nd > 0:
            uf = "add" if func == "cumsum" else "multiply"
            y = r.random()
            if y < 0.2 and ax in (0, -nd):  # accumulate's default axis is 0
                kw = kw.split(", ", 1)[1] if ", " in kw else ""
            elif y < 0.35 and isinstance(ax, int):  # a one-axis tuple is allowed
                kw = kw.replace(f"axis={ax!r}", f"axis=({ax},)", 1)
            text = f"{out} = np.{uf}.accumulate({a}{', ' + kw if kw else ''})"
        elif x < 0.6:
            text = f"{out} = np.{func}({a}, {kw})"
        else:
            text = f"{out} = {a}.{func}({kw})"

        def rule(an, value):
            xv = np.asarray(an.val(a))
            E, nn, sz = an.info[a]
            o = np.asarray(value)
            if not casts_in_range(xv, o.dtype):
                return None
            if o.dtype.kind != "f":
                return (0.0, nn, False) if E == 0 else None
            n = xv.size if ax is None else (xv.shape[ax] if xv.ndim else 1)
            if func == "cumsum":
                b = sum_bound(xv, E, o, ax, n) if o.size else 0.0
            else:
                b = prod_bound(xv, E, o, ax, n, scan=True)
                if b is None:
                    return None
            return (finish(b, o.dtype), nn, True)
        return Stmt(k, "def", text, out=out, rule=rule)

    def gen_view(self):
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray))
        if a is None:
            return None
        v = self.v(a)
        shape, nd, size = v.shape, v.ndim, v.size
        k, out = self.new()
        kind = r.choices(["index", "T", "transpose", "reshape", "broadcast_to", "newaxis", "moveaxis",
                          "swapaxes", "flip", "expand_dims", "squeeze", "ravel", "copy"],
                         weights=[8, 2, 2, 3, 2, 2, 1, 1, 2, 1, 1, 1, 1])[0]
        if kind == "index":
            e = f"{a}[{self.index_text(shape)}]"
        elif kind == "T":
            e = f"{a}.T"
        elif kind == "transpose":
            perm = list(range(nd))
            r.shuffle(perm)
            e = r.choice([f"np.transpose({a}, {tuple(perm)!r})", f"{a}.transpose({tuple(perm)!r})"]) if nd else f"np.transpose({a})"
        elif kind == "reshape":
            opts = [(-1,), (size,), (1,) + shape, tuple(reversed(shape))]
            if nd >= 2:
                opts.append((shape[0] * shape[1],) + shape[2:])
            if nd >= 1:
                for f in (2, 3, 4, 8, 16):
                    if shape[-1] % f == 0 and shape[-1] > f:
                        opts.append(shape[:-1] + (shape[-1] // f, f))
                        break
            if r.random() < 0.03:
                opts = [(size + 1,)]
            new = r.choice(opts)
            order = r.choice(["", "", "", ", order='F'"])
            e = r.choice([f"{a}.reshape({_shape_text(new)}{order})", f"np.reshape({a}, {_shape_text(new)}{order})"])
        elif kind == "broadcast_to":
            if 1 in shape and r.random() < 0.6:
                new = tuple(r.choice([2, 3, 7, 65]) if d == 1 else d for d in shape)
            else:
                new = (r.choice([1, 2, 3]),) + shape
            if _size(new) > MAX_ELEMS:
                return None
            e = f"np.broadcast_to({a}, {_shape_text(new)})"
        elif kind == "newaxis":
            e = r.choice([f"{a}[None]", f"{a}[:, None]" if nd else f"{a}[None]", f"{a}[..., None]"])
        elif kind == "moveaxis" and nd:
            e = f"np.moveaxis({a}, {r.randrange(nd) - (nd if r.random() < 0.3 else 0)}, {r.randrange(nd)})"
        elif kind == "swapaxes" and nd:
            e = r.choice([f"np.swapaxes({a}, {r.randrange(nd)}, {r.randrange(nd) - nd})",
                          f"{a}.swapaxes({r.randrange(nd)}, {r.randrange(nd)})"])
        elif kind == "flip":
            e = r.choice([f"np.flip({a})", f"np.flip({a}, axis={self.axis(nd, none=False, bad=0.0)!r})"]) if nd else f"np.flip({a})"
        elif kind == "expand_dims":
            e = f"np.expand_dims({a}, {r.randint(-nd - 1, nd)})"
        elif kind == "squeeze":
            e = r.choice([f"np.squeeze({a})", f"{a}.squeeze()"])
        elif kind == "ravel":
            e = r.choice([f"{a}.ravel()", f"np.ravel({a})", f"{a}.flatten()", f"{a}.ravel(order='F')"])
        else:
            e = r.choice([f"{a}.copy()", f"np.copy({a})", f"np.ascontiguousarray({a})",
                          f"np.asfortranarray({a})", f"{a}.copy(order='F')"])
        if kind in ("moveaxis", "swapaxes") and not nd:
            e = f"{a}[...]"
        text = f"{out} = {e}"
        maybe = a if re.search(r"reshape|ravel|ascontiguousarray|asfortranarray", e) else None
        return Stmt(k, "def", text, out=out, rule=view_rule(a), maybe_view=maybe)

    def _write_rule(self, name, target_expr, operands, result_fn, target, where=None):
        """rule for an in-place ufunc write into target_expr (target or a
        region of it, or its elements where the bool array `where` is True):
        bound of name(*operands) cast to the target's dtype."""
        def rule(an):
            if where is not None and an.E(where):
                return None
            ins = [an.opnd(o) for o in operands]
            vals = [an.val(o[0]) for o in operands]
            t = an.val(target_expr)
            full = np.size(t) == np.size(an.val(target))
            res = np.asarray(result_fn(*vals))
            cast = None
            if isinstance(t, np.ndarray):  # a NumPy scalar is rebound instead
                if not np.can_cast(res.dtype, t.dtype, "same_kind"):
                    return (0.0, False, False, False)  # NumPy raises; nothing changes
                cast = t.dtype
            # the bound of the loop's own result (its dtype's rounding: a float32
            # subtract into a float64 out= rounds in float32, found by seed 622)
            out = ufunc_rule(name, ins, res, len(operands) == 2 and operands[0][0] == operands[1][0])
            if out is None or (out[0] and (res.dtype.kind != "f" or (cast is not None and cast.kind != "f"))):
                return None
            if cast is not None and out[0] and cast.itemsize < res.dtype.itemsize:
                # a narrower float out=: its rounding of values that differ
                out = (finish(out[0] + eps_of(cast) * St(res.astype(cast)).M, cast),) + tuple(out[1:])
            return out + (full and where is None,)
        return rule

    def _ufunc_where(self, shape):
        """`, where=c` for a bool variable c that broadcasts to shape (NumPy
        leaves out='s other elements as they were), or ("", None)."""
        c = self.pick(lambda v: np.asarray(v).dtype.kind == "b")
        if c is None or self.r.random() < 0.5 or not self._broadcasts_to(c, shape):
            return "", None
        return f", where={c}", c

    def _broadcasts_to(self, c, shape):
        """Whether variable c broadcasts to exactly shape (a where= mask)."""
        try:
            return np.broadcast_shapes(np.shape(self.v(c)), shape) == tuple(shape)
        except ValueError:
            return False

    def gen_inplace(self):
        r = self.r
        t = self.pick(lambda v: isinstance(v, np.ndarray) or r.random() < 0.1)
        if t is None:
            return None
        shape = np.shape(self.v(t))
        ops = [("add", "+="), ("subtract", "-="), ("multiply", "*="), ("true_divide", "/="),
               ("floor_divide", "//="), ("remainder", "%="), ("power", "**="),
               ("bitwise_and", "&="), ("bitwise_or", "|="), ("maximum", None), ("minimum", None)]
        name, sym = r.choices(ops, weights=[5, 4, 4, 3, 1, 1, 1, 1, 1, 2, 2])[0]
        k = self.new()[0]
        is_arr = isinstance(self.v(t), np.ndarray)
        if r.random() < 0.12 and is_arr:
            un = r.choice(["negative", "absolute", "sqrt", "floor", "exp", "sin"])
            extra, where = self._ufunc_where(shape)
            text = f"np.{un}({t}, out={t}{extra})"
            fn = getattr(np, un)
            return Stmt(k, "write", text, target=t,
                        rule=self._write_rule(un, t, [(t, t)], fn, t, where))
        if name == "power":
            s = (r.choice(["2", "0.5", "3", "4.0", "1.5"]), None)
        else:
            s = self.partner(shape, fit=True)
        where = None
        if r.random() < 0.15 and is_arr:
            # out= into a different array of the result's shape (where= now and then)
            a = self.partner(shape, fit=True, p_literal=0.0)
            extra, where = self._ufunc_where(shape)
            text = f"np.{name}({a[0]}, {s[0]}, out={t}{extra})"
            operands = [a, s]
        elif sym and (r.random() < 0.7 or not is_arr):
            text = f"{t} {sym} {s[0]}"
            operands = [(t, t), s]
        else:
            extra, where = self._ufunc_where(shape) if is_arr else ("", None)
            text = f"np.{name}({t}, {s[0]}, out={t}{extra})"
            operands = [(t, t), s]
        return Stmt(k, "write", text, target=t,
                    rule=self._write_rule(name, t, operands, getattr(np, name), t, where))

    def _assign_rule(self, target_expr, src, target, where=None):
        """rule for copying src into target_expr (target or a region of it)."""
        def rule(an):
            if where is not None and an.E(where):
                return None
            t = np.asarray(an.val(target_expr))
            full = where is None and t.size == np.size(an.val(target))
            st_, E, nn, sz = an.opnd(src)
            sk = np.asarray(an.val(src[0])).dtype.kind
            tk = t.dtype.kind
            if sk == "f" and tk in "iub":
                if E:
                    return None
                if tk in "iu" and (st_.nonfinite or st_.M >= float(np.iinfo(t.dtype).max) / 2):
                    return None
            if E and tk == "f":
                E = finish(E + eps_of(t.dtype) * st_.M, t.dtype)
            if tk != "f":
                sz = False
            return (E, nn, sz, full)
        return rule

    def gen_setitem(self):
        r = self.r
        t = self.pick(lambda v: isinstance(v, np.ndarray))
        if t is None:
            return None
        tv = self.v(t)
        shape = tv.shape
        k = self.new()[0]
        x = r.random()
        if x < 0.08:
            # t.fill(scalar): Python numbers and NumPy scalars, converted as
            # NumPy's assignment converts them
            lits = ["0", "1", "-2.5", "7", "True", "np.float32(1.5)", "np.float64(-0.0)", "np.int64(3)",
                    "np.int8(-4)", "np.uint8(200)", "np.True_", "np.float16(0.25)"]
            if tv.dtype.kind == "f":
                lits += ["np.nan", "np.float64(np.inf)"]
            lit = r.choice(lits)
            return Stmt(k, "write", f"{t}.fill({lit})", target=t, rule=self._assign_rule(f"{t}[...]", (lit, None), t))
        if x < 0.15 and tv.ndim and shape[0] >= 2:
            n = shape[0]
            m = r.randint(1, n - 1)
            i, j = r.randint(0, n - m), r.randint(0, n - m)
            idx, src_expr = f"{i}:{i + m}", f"{t}[{j}:{j + m}]"
            if r.random() < 0.3:
                idx, src_expr = ":", f"{t}[::-1]"
            text = f"{t}[{idx}] = {src_expr}"
            return Stmt(k, "write", text, target=t, rule=self._assign_rule(f"{t}[{idx}]", (src_expr, t), t))
        idx = self.index_text(shape, newaxis=False)
        try:
            region = np.shape(tv[eval(f"np.index_exp[{idx}]", {"np": np})])
        except Exception:  # noqa: BLE001 - NumPy will raise the same
            region = shape
        if x < 0.3:
            lit = r.choice(["0", "1", "-2.5", "7", "np.nan", "True", "-0.0"] if tv.dtype.kind == "f"
                           else ["0", "1", "-3", "7", "True"])
            src = (lit, None)
        elif x < 0.45:
            same = [n for n in self.names(lambda v: np.shape(v) == shape) if n != t]
            if same:
                n = r.choice(same)
                src = (f"{n}[{idx}]", n)
            else:
                src = self.partner(region, fit=True)
        else:
            src = self.partner(region, fit=True)
        if r.random() < 0.15:
            op, sym = r.choice([("add", "+="), ("multiply", "*="), ("subtract", "-=")])
            text = f"{t}[{idx}] {sym} {src[0]}"
            region_expr = f"{t}[{idx}]"
            return Stmt(k, "write", text, target=t,
                        rule=self._write_rule(op, region_expr, [(region_expr, t), src], getattr(np, op), t))
        text = f"{t}[{idx}] = {src[0]}"
        return Stmt(k, "write", text, target=t, rule=self._assign_rule(f"{t}[{idx}]", src, t))

    def gen_copyto(self):
        r = self.r
        t = self.pick(lambda v: isinstance(v, np.ndarray))
        if t is None:
            return None
        shape = self.v(t).shape
        src = self.partner(shape, fit=True, p_literal=0.15)
        k = self.new()[0]
        extra, where = "", None
        x = r.random()
        if x < 0.35:
            c = self.pick(lambda v: np.asarray(v).dtype.kind == "b")
            if c is not None and self._broadcasts_to(c, shape):
                extra, where = f", where={c}", c
        elif x < 0.5:
            extra = ", casting='unsafe'"
        text = f"np.copyto({t}, {src[0]}{extra})"
        return Stmt(k, "write", text, target=t, rule=self._assign_rule(t, src, t, where=where))

    def gen_concat(self):
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and v.ndim >= 1)
        if a is None:
            return None
        av = self.v(a)
        nd = av.ndim
        stack = r.random() < 0.3
        ax = r.randrange(nd + (1 if stack else 0))
        if stack:
            cands = [n for n in self.names(lambda v: np.shape(v) == av.shape)]
        else:
            cands = [n for n in self.names(lambda v: np.ndim(v) == nd)
                     if all(d1 == d2 or i == ax for i, (d1, d2) in enumerate(zip(np.shape(self.v(n)), av.shape)))]
        exprs = [(n, n) for n in cands] + [(f"{a}[::-1]", a)]
        if r.random() < 0.03:
            exprs = [(n, n) for n in self.names(lambda v: isinstance(v, np.ndarray))]
        parts = [(a, a)] + [r.choice(exprs) for _ in range(r.choice([1, 1, 2]))]
        r.shuffle(parts)
        total = sum(np.size(self.an.val(p[0])) for p in parts)
        if total > MAX_ELEMS:
            return None
        k, out = self.new()
        lst = ", ".join(p[0] for p in parts)
        if stack:
            text = f"{out} = np.stack([{lst}], axis={ax - (nd + 1 if r.random() < 0.3 else 0)})"
        elif r.random() < 0.1:
            text = f"{out} = np.concatenate(({lst}), axis=None)"
        elif r.random() < 0.3 and ((nd >= 2 and ax in (0, 1)) or (nd == 1 and ax == 0)):
            text = f"{out} = np.{'vstack' if nd >= 2 and ax == 0 else 'hstack'}([{lst}])"
        else:
            text = f"{out} = np.concatenate([{lst}], axis={ax - (nd if r.random() < 0.3 else 0)})"
        return Stmt(k, "def", text, out=out, rule=max_rule([p[1] for p in parts]))

    def gen_grid(self):
        """A large array NumPy builds from small ones (meshgrid, tile,
        repeat, kron, indices): plain inputs below the threshold, a grumpy
        result whose users are captured (grumpy/__init__.py _CREATION)."""
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and 1 <= v.ndim <= 2 and 0 < v.size <= 4096)
        if a is None:
            return None
        av = self.v(a)
        b = r.choice(self.names(lambda v: isinstance(v, np.ndarray) and v.ndim == 1 and 0 < v.size <= 4096) or [a])
        form = r.choice(["meshgrid", "meshgrid", "tile", "repeat", "kron", "indices"])
        if form == "meshgrid":
            n = av.size * np.size(self.v(b))
            i = r.randrange(2)
            ix = r.choice(["", ", indexing='ij'", ", indexing='xy'", ", copy=False", ", sparse=True"])
            text = f"np.meshgrid({a}.ravel(), {b}{ix})[{i}]"
            bases = [a, b]
        elif form == "tile":
            reps = r.choice([(r.randint(1, 64), 1), r.randint(2, 64), (r.randint(1, 16), r.randint(1, 4))])
            n = av.size * int(np.prod(reps))
            text = f"np.tile({a}, {reps})"
            bases = [a]
        elif form == "repeat":
            reps = r.randint(1, 200)
            ax = r.choice([None] + list(range(av.ndim)))
            n = av.size * reps
            text = f"np.repeat({a}, {reps}" + ("" if ax is None else f", axis={ax}") + ")"
            bases = [a]
        elif form == "kron":
            # products of the operands' elements: a product's bound, not a copy's
            if av.size * np.size(self.v(b)) > MAX_ELEMS:
                return None
            k, out = self.new()
            A, B = a, b

            def rule(an, value):
                b_ = product_bound(np.kron, an.val(A), an.E(A), an.val(B), an.E(B), value)
                if b_ is None:
                    return None
                dt = np.asarray(value).dtype
                return ((finish(b_, dt) if dt.kind == "f" else 0.0), False, dt.kind == "f")
            return Stmt(k, "def", f"{out} = np.kron({a}, {b})", out=out, rule=rule)
        else:
            shape = (r.randint(1, 300), r.randint(1, 300))
            n = 2 * shape[0] * shape[1]
            text = f"np.indices({shape})[{r.randrange(2)}] * 1.0"
            bases = []
        if n > MAX_ELEMS:
            return None
        k, out = self.new()
        return Stmt(k, "def", f"{out} = {text}", out=out, rule=max_rule(bases))

    def gen_plain_broadcast(self):
        """An operator of small plain arrays (below the threshold: NumPy's
        own class) that broadcasts them into a large result, which grumpy
        records (hooks/plain_ops.c): an outer form ``a[:, None] op b[None,
        :]`` or pairwise rows ``X[None, :, :] op X[:, None, :]``."""
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and v.size >= 16)
        if a is None:
            return None
        b = r.choice(self.names(lambda v: isinstance(v, np.ndarray) and v.size >= 16) or [a])
        ops = [("add", "+"), ("subtract", "-"), ("multiply", "*"), ("true_divide", "/"),
               ("floor_divide", "//"), ("remainder", "%"), ("power", "**"), ("bitwise_and", "&"),
               ("bitwise_or", "|"), ("less", "<"), ("equal", "=="), ("greater_equal", ">=")]
        name, sym = r.choices(ops, weights=[5, 6, 5, 3, 1, 1, 2, 1, 1, 2, 1, 1])[0]
        small = lambda n, size: max(1, min(size, n))  # noqa: E731
        sa, sb = np.size(self.v(a)), np.size(self.v(b))
        if r.random() < 0.25:
            return self.plain_product(a, b, sa, sb)
        if r.random() < 0.7:
            p = small(r.choice([64, 300, 1000, 4000]), sa)
            q = small(r.choice([16, 256, 700, 3000]), sb)
            x = (f"np.array({a}.ravel()[:{p}])[:, None]", a)
            y = (f"np.array({b}.ravel()[-{q}:])[None, :]", b)
            n = p * q
        else:
            cols = r.choice([1, 2, 3, 4])
            p = small(r.choice([100, 200, 400]), sa // cols)
            x = (f"np.array({a}.ravel()[:{p * cols}]).reshape({p}, {cols})[None, :, :]", a)
            y = (f"np.array({a}.ravel()[:{p * cols}]).reshape({p}, {cols})[:, None, :]", a)
            n = p * p * cols
        if n > MAX_ELEMS:
            return None
        if r.random() < 0.25:  # a scalar on one side as well
            x = (f"({x[0]} * 2)", x[1])
        k, out = self.new()
        same = x[0] == y[0]

        def rule(an, value):
            return ufunc_rule(name, [an.opnd(x), an.opnd(y)], value, same)
        return Stmt(k, "def", f"{out} = {x[0]} {sym} {y[0]}", out=out, rule=rule)

    def plain_product(self, a, b, sa, sb):
        """A product of two thin plain matrices into a large one
        (``(p x k) @ (k x q)``, k of 1-8: a training step's dlogits @ W2.T),
        which the GPU back end records as a GEMM (hooks/plain_ops.c
        product_expands) and the CPU's leaves to NumPy."""
        r = self.r
        kk = r.choice([1, 2, 3, 5, 8])
        p = max(1, min(r.choice([200, 500, 1000, 3000]), sa // kk))
        q = max(1, min(r.choice([100, 300, 800, 2000]), sb // kk))
        if p * q > MAX_ELEMS or p * q * kk > MAX_FLOPS or p * kk > sa or q * kk > sb:
            return None
        A = (f"np.array({a}.ravel()[:{p * kk}]).reshape({p}, {kk})", a)
        B = (f"np.array({b}.ravel()[-{q * kk}:]).reshape({kk}, {q})", b)
        if r.random() < 0.3:
            B = (f"np.array({b}.ravel()[-{q * kk}:]).reshape({q}, {kk}).T", b)
        k, out = self.new()
        text = f"{out} = {A[0]} @ {B[0]}"
        return Stmt(k, "def", text, out=out, rule=product_rule(lambda x, y: x @ y, A, B))

    def gen_roll(self):
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and v.ndim >= 1)
        if a is None:
            return None
        nd = self.v(a).ndim
        shift = lambda: r.choice([1, -1, 2, -3, 7, 64, 1000, -100001, 0])  # noqa: E731
        kind = r.random()
        if kind < 0.45:
            sh, ax = shift(), r.randrange(-nd, nd)
        elif kind < 0.7:
            axes = [r.randrange(nd) for _ in range(r.choice([1, 2, 2, 3]))]  # repeated axes add up
            sh, ax = tuple(shift() for _ in axes), tuple(axes)
        elif kind < 0.8:
            sh, ax = tuple(shift() for _ in range(r.choice([1, 2]))), r.randrange(nd)
        elif kind < 0.9:
            sh, ax = shift(), None
        else:
            sh, ax = shift(), r.choice([nd, (0, nd)])  # NumPy's AxisError
        base = a if r.random() < 0.6 else f"({a} * 1)"  # the roll of a pending array
        k, out = self.new()
        text = f"{out} = np.roll({base}, {sh!r})" if ax is None else f"{out} = np.roll({base}, {sh!r}, axis={ax!r})"
        return Stmt(k, "def", text, out=out, rule=max_rule([a]))

    def gen_poly(self):
        """A polynomial accumulated in place, as scipy's KroghInterpolator
        evaluates one: 6-14 writes ``t += _p[::-1][::-1] * (0.5 + _k)`` into
        one float target, each reading views of a pending product chain
        ``_p = (x - x.flat[_k]) * _p`` -- more operands than one kernel
        takes, so the in-place chain is split into kernels (a fault inside
        the split kernel crashed grumpy before 8e894b1).  Rendered as a
        loop; exact (E 0) when t and x are: + - * only."""
        r = self.r
        # (a read-only target raises in both runs; reading .flags.writeable of
        # np.broadcast_arrays' views gives NumPy's FutureWarning)
        t = self.pick(lambda v: isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.ndim >= 1)
        if t is None:
            return None
        x, xb = self.partner(np.shape(self.v(t)), fit=True, p_literal=0.0)
        if xb is None or np.ndim(self.v(x)) < 1 or np.size(self.v(x)) == 0:
            return None
        n = r.randint(6, 14)
        text = (f"_p = 1\nfor _k in range({n}): _p = ({x} - {x}.flat[_k % {x}.size]) * _p; "
                f"{t} += _p[::-1][::-1] * (0.5 + _k)")

        def rule(an):
            if an.E(t) or an.E(xb) or np.asarray(an.val(x)).dtype.kind not in "iuf":
                return None
            return (0.0, False, an.info[t][2] or an.info[xb][2], True)

        return Stmt(self.new()[0], "write", text, target=t, rule=rule)

    def gen_search(self):
        """np.searchsorted of sorted keys (grumpy's merge, hooks/sorted_search.c):
        a sorted variable's ravel (a view: strided with ``[::2]``) and the
        sorted ravel of a variable of one dtype (the same one, a pending
        product, or another), side left or right; sometimes keys out of order,
        an unsorted table (NumPy's own binary search answers both), keys of
        another dtype, or a sorter.  Exact only when both operands are."""
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and v.dtype.kind in "iuf" and v.size >= 1)
        if a is None or not self.exact(a):
            return None
        dt = self.v(a).dtype
        b = self.pick(lambda v: isinstance(v, np.ndarray) and v.dtype == dt and v.size >= 1)
        if b is None or not self.exact(b):
            b = a
        table = f"np.sort({a}.ravel())" + r.choice(["", "", "[::2]", "[::-1][::-1]"])
        keys = r.choice([f"np.sort({b}.ravel())", f"np.sort(({b} * 1).ravel())", f"np.sort({b}, axis=None)"])
        kind = r.random()
        if kind < 0.1:
            keys = f"{b}.ravel()"  # in the program's order: NumPy's binary search
        elif kind < 0.15:
            table = f"{a}.ravel()"  # maybe unsorted: NumPy's own answer
        elif kind < 0.2:
            keys = f"{keys}.astype(np.float32)"
        side = r.choice(["", "", ", side='left'", ", side='right'", "'right'"])
        if side == "'right'":
            side = ", 'right'"
        if r.random() < 0.05:
            side = f", sorter=np.argsort({table}, kind='stable')"
        k, out = self.new()
        text = (f"{out} = np.searchsorted({table}, {keys}{side})" if r.random() < 0.7
                else f"{out} = ({table}).searchsorted({keys}{side})")
        return Stmt(k, "def", text, out=out, rule=max_rule([a], nonneg=True, exact=[a, b]))

    def gen_gather(self):
        """x[idx], np.take(x, idx) or x.take(idx): a 1-D table (a variable, its ravel,
        or a pending copy) at an integer index array -- a gather (GP_OP_GATHER) when every
        index is in range and the result is large enough; negative indices
        (NumPy wraps them), indices out of range (NumPy's IndexError),
        narrow index dtypes that wrap, 2-D and pending indices too; or an
        n-D table's rows, x[idx] or x.take(idx, axis=0) of shape
        idx.shape + x.shape[1:] (the variable, a reversed view, or a
        pending copy)."""
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and v.ndim >= 1 and v.size >= 1)
        if a is None:
            return None
        av = self.v(a)
        rows = av.ndim > 1 and r.random() < 0.5
        if av.ndim == 1:
            table, length = (a if r.random() < 0.7 else f"({a} * 1)"), av.shape[0]
        elif rows:
            table, length = r.choice([a, a, f"{a}[::-1]", f"({a} * 1)"]), av.shape[0]
        else:
            table, length = f"{a}.ravel()", av.size
        row = av.size // av.shape[0] if rows else 1
        m = max(min(r.choice([1, 100, 1000, 8193, 70000, 200000]), MAX_ELEMS // row), 1)
        step = r.choice([1, 7, 31, 1000003])
        kind = r.random()
        mod = length + 3 if kind < 0.05 else length  # past the end: NumPy's IndexError
        idx = f"(np.arange({m}) * {step} % {mod})"
        if kind > 0.9:
            idx = f"(-{idx})"  # negative: NumPy wraps
        # (of a size whose gather stays within MAX_ELEMS: an index of the
        # program's times a table's rows asked the shadow run for 16 GB)
        ints = self.names(lambda v: isinstance(v, np.ndarray) and v.dtype.kind in "iu" and 1 <= v.size <= MAX_ELEMS // row)
        if ints and r.random() < 0.25:
            idx = f"(np.abs({r.choice(ints)}) % {mod})"  # an index from the program
        dt = r.choice(["np.int64", "np.int64", "np.intp", "np.int32", "np.int16", "np.uint32", "np.uint8"])
        idx = f"{idx}.astype({dt})"
        if r.random() < 0.3 and m % 2 == 0:
            idx = f"{idx}.reshape(2, {m // 2})"
        k, out = self.new()
        form = r.random()
        if rows:  # (np.take and x.take without an axis flatten an n-D table)
            text = f"{out} = {table}.take({idx}, axis=0)" if form < 0.2 else f"{out} = {table}[{idx}]"
        elif form < 0.15:
            text = f"{out} = np.take({table}, {idx})"
        elif form < 0.3:
            text = f"{out} = {table}.take({idx})"
        else:
            text = f"{out} = {table}[{idx}]"
        return Stmt(k, "def", text, out=out, rule=max_rule([a]))

    def gen_product(self):
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and v.ndim >= 1)
        if a is None:
            return None
        av = self.v(a)
        form = r.choices(["matmul", "dot", "einsum", "tensordot", "outer", "inner", "vdot"],
                         weights=[4, 2, 3, 2, 2, 1, 1])[0]
        cands = []
        for n in self.names(lambda v: isinstance(v, np.ndarray) and v.ndim >= 1):
            nv = self.v(n)
            cands.append((n, n, nv.shape))
            if nv.ndim == 2:
                cands.append((f"{n}.T", n, nv.shape[::-1]))
            if nv.ndim >= 3:
                cands.append((f"np.swapaxes({n}, -1, -2)", n, nv.shape[:-2] + nv.shape[:-3:-1]))
        r.shuffle(cands)
        k, out = self.new()
        A = (a, a)
        if av.ndim == 2 and r.random() < 0.25:
            A = (f"{a}.T", a)  # with b = a: a matrix times its own transpose (NumPy's syrk)
            av = av.T
        elif av.ndim == 2 and form == "matmul" and r.random() < 0.2:
            # a stack whose rows repeat (a stride-0 dim) times one matrix: its
            # batch must not fold into one GEMM (it once did, at the wrong stride)
            rep = r.choice([1, 2, 3])
            A = (f"np.broadcast_to({a}[:, None, :], {_shape_text((av.shape[0], rep, av.shape[1]))})", a)
            av = np.broadcast_to(av[:, None, :], (av.shape[0], rep, av.shape[1]))
        if form in ("matmul", "dot"):
            for bexpr, bbase, bshape in cands:
                res = matmul_shape(av.shape, bshape)
                if res is None or (form == "dot" and (av.ndim > 2 or len(bshape) > 2)):
                    continue
                oshape, K = res
                if _size(oshape) > MAX_ELEMS or _size(oshape) * K > MAX_FLOPS:
                    continue
                break
            else:
                return None
            B = (bexpr, bbase)
            if form == "matmul":
                tmpl = r.choice(["{A} @ {B}", "np.matmul({A}, {B})"])
            else:
                tmpl = r.choice(["np.dot({A}, {B})", "{A}.dot({B})"])
        elif form in ("inner", "vdot"):
            # inner: the last axes contracted; vdot: both raveled, of one size
            for bexpr, bbase, bshape in cands:
                if form == "vdot" and _size(bshape) == av.size:
                    break
                if form == "inner" and bshape[-1] == av.shape[-1]:
                    o = av.shape[:-1] + bshape[:-1]
                    if _size(o) <= MAX_ELEMS and _size(o) * av.shape[-1] <= MAX_FLOPS:
                        break
            else:
                return None
            B = (bexpr, bbase)
            tmpl = f"np.{form}({{A}}, {{B}})"
        elif form == "outer":
            # np.outer of any two arrays (raveled): of two small vectors, plain
            # arrays below the threshold, into a large result (gemver's update)
            for bexpr, bbase, bshape in cands:
                if 0 < _size(av.shape) * _size(bshape) <= MAX_ELEMS:
                    break
            else:
                return None
            B = (bexpr, bbase)
            tmpl = "np.outer({A}, {B})"
        elif form == "einsum" and r.random() < 0.5:
            for bexpr, bbase, bshape in cands:
                spec = _random_einsum(r, av.shape, bshape)
                if spec is not None:
                    break
            else:
                return None
            B = (bexpr, bbase)
            tmpl = f"np.einsum('{spec}', {{A}}, {{B}})"
        elif form == "einsum":
            forms = {"ij,jk->ik": 2, "ij,ij->i": 2, "bij,bjk->bik": 3, "i,i->": 1, "ij,j->i": 2, "ij,kj->ik": 2}
            spec = r.choice([f for f, d in forms.items() if d == av.ndim] or ["i,i->"])
            if forms[spec] != av.ndim:
                return None
            ins, outs = spec.split("->")
            sa, sb = ins.split(",")
            for bexpr, bbase, bshape in cands:
                if len(bshape) != len(sb):
                    continue
                dims = dict(zip(sa, av.shape))
                if any(dims.get(c, d) != d for c, d in zip(sb, bshape)):
                    continue
                dims.update(zip(sb, bshape))
                oshape = tuple(dims[c] for c in outs)
                flops = _size(tuple(dims.values()))
                if _size(oshape) > MAX_ELEMS or flops > MAX_FLOPS:
                    continue
                break
            else:
                return None
            B = (bexpr, bbase)
            tmpl = f"np.einsum('{spec}', {{A}}, {{B}})"
        else:
            choices = []
            for bexpr, bbase, bshape in cands:
                if av.shape[-1] == bshape[0]:
                    choices.append((bexpr, bbase, bshape, "1", av.shape[:-1] + bshape[1:], av.shape[-1]))
                for i in range(av.ndim):
                    for j in range(len(bshape)):
                        if av.shape[i] == bshape[j]:
                            o = av.shape[:i] + av.shape[i + 1:] + bshape[:j] + bshape[j + 1:]
                            choices.append((bexpr, bbase, bshape, f"([{i}], [{j}])", o, av.shape[i]))
                if av.ndim >= 2 and len(bshape) >= 2 and av.shape[-2:] == bshape[:2]:
                    choices.append((bexpr, bbase, bshape, "2", av.shape[:-2] + bshape[2:], _size(av.shape[-2:])))
                # two axis pairs, in any order, some negative (the permute-and-reshape path)
                for i1, i2 in itertools.permutations(range(av.ndim), 2):
                    for j1, j2 in itertools.permutations(range(len(bshape)), 2):
                        if av.shape[i1] == bshape[j1] and av.shape[i2] == bshape[j2] and r.random() < 0.3:
                            o = tuple(d for i, d in enumerate(av.shape) if i not in (i1, i2)) + \
                                tuple(d for j, d in enumerate(bshape) if j not in (j1, j2))
                            ia = [i1, i2 - av.ndim if r.random() < 0.3 else i2]
                            jb = [j1 - len(bshape) if r.random() < 0.3 else j1, j2]
                            choices.append((bexpr, bbase, bshape, f"({ia}, {jb})", o, av.shape[i1] * av.shape[i2]))
            choices = [c for c in choices if _size(c[4]) <= MAX_ELEMS and _size(c[4]) * c[5] <= MAX_FLOPS]
            if not choices:
                return None
            bexpr, bbase, bshape, axes, _, _ = r.choice(choices)
            B = (bexpr, bbase)
            tmpl = f"np.tensordot({{A}}, {{B}}, axes={axes})"
        text = f"{out} = " + tmpl.format(A=A[0], B=B[0])

        def fn(x, y):
            return eval(tmpl.format(A="_A", B="_B"), {"np": np, "_A": x, "_B": y})  # noqa: S307
        return Stmt(k, "def", text, out=out, rule=product_rule(fn, A, B))

    def gen_stats(self):
        r = self.r
        a = self.pick(lambda v: np.size(v) > 0 or r.random() < 0.2)
        if a is None:
            return None
        av = np.asarray(self.v(a))
        nd = av.ndim
        func = r.choices(["var", "std", "average", "cov", "corrcoef", "histogram", "percentile",
                          "nansum", "nanmean", "nanmax", "nanargmin", "nanargmax", "nanmin", "ptp", "round"],
                         weights=[2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1])[0]
        k, out = self.new()
        ax = self.axis(nd, tuples=func not in ("average", "percentile", "nanargmin", "nanargmax"))
        if func in ("var", "std"):
            ddof = r.choice([0, 0, 1])
            kw = f"axis={ax!r}" + (f", ddof={ddof}" if ddof else "")
            text = r.choice([f"{out} = np.{func}({a}, {kw})", f"{out} = {a}.{func}({kw})"])

            def rule(an, value):
                xv = an.val(a)
                E, nn, sz = an.info[a]
                n = reduced_count(xv, value)
                b = var_bound(xv, E, value, ax, n, ddof, func == "std")
                return (finish(b, np.asarray(value).dtype), True, sz)
        elif func == "average":
            weights = None
            if isinstance(ax, int) and nd and -nd <= ax < nd and r.random() < 0.5:
                weights = av.shape[ax]
                text = f"{out} = np.average({a}, axis={ax}, weights=np.arange(1.0, {weights + 1}.0))"
            else:
                text = f"{out} = np.average({a}, axis={ax!r})"

            def rule(an, value):
                xv = an.val(a)
                E, nn, sz = an.info[a]
                n = reduced_count(xv, value)
                if n == 0:
                    return (0.0, nn, sz)
                o = np.asarray(value)
                eps = eps_of(o.dtype)
                if weights is None:
                    b = sum_bound(xv, E, value, ax, n) / n + eps * St(o).M
                else:
                    Mx = St(xv).M
                    num = n * (E * n + eps * Mx * n) + 2 * eps * order_factor(n) * n * Mx * n
                    b = num / (n * (n + 1) / 2) + eps * St(o).M
                return (finish(b, o.dtype), nn, True)
        elif func in ("cov", "corrcoef"):
            if nd not in (1, 2):
                return None
            rowvar = nd == 1 or r.random() < 0.7
            nvars = av.shape[0] if (nd == 2 and rowvar) else (av.shape[1] if nd == 2 else 1)
            nobs = av.shape[-1] if rowvar else av.shape[0]
            if nvars * nvars > MAX_ELEMS or nvars * nvars * nobs > MAX_FLOPS:
                return None
            kw = "" if rowvar else ", rowvar=False"
            text = f"{out} = np.{func}({a}{kw})"

            def rule(an, value):
                xv = np.asarray(an.val(a))
                E, nn, sz = an.info[a]
                if St(xv).nonfinite and E:
                    return None
                x2 = xv if rowvar else xv.T
                b = cov_bound(x2, E, value)
                o = np.asarray(value)
                if func == "corrcoef":
                    if E or o.dtype.kind == "f":
                        with np.errstate(all="ignore"):
                            d = np.var(np.asarray(x2, dtype=np.float64), axis=-1)
                        d = d[np.isfinite(d)]
                        if d.size and not float(d.min()) > 100 * b:
                            return None
                        b = 3 * b / (float(d.min()) if d.size else 1.0) + 8 * eps_of(o.dtype)
                return (finish(b, o.dtype), False, True)
        elif func == "histogram":
            bins = r.choice([1, 5, 10, 64])
            rng_ = r.choice(["", "", ", range=(-2.0, 2.0)", ", range=(0, 10)"])
            text = f"{out} = np.histogram({a}, bins={bins}{rng_})"
            rule = max_rule([a], nonneg=False, exact=[a])
        elif func == "percentile":
            q = r.choice(["50", "[10, 50, 90]", "0", "100", "37.5"])
            kw = f", axis={ax!r}" + (", keepdims=True" if r.random() < 0.2 else "")
            text = f"{out} = np.percentile({a}, {q}{kw})"

            def rule(an, value):
                E, nn, sz = an.info[a]
                o = np.asarray(value)
                if E == 0:
                    return (0.0, nn, sz)
                return (finish(3 * E + 8 * eps_of(o.dtype) * St(o).M, o.dtype), nn, sz)
        elif func == "round":
            # NumPy's own multiply, rint and divide by 10**decimals (exact ops: an exact input only,
            # as one ULP of input error may move a value across a rounding boundary)
            text = f"{out} = np.round({a}, {r.choice([0, 1, 2, 3, -1])})"

            def rule(an, value):
                E, nn, sz = an.info[a]
                return (0.0, nn, sz) if E == 0 else None
        else:
            kw = f", axis={ax!r}" + (", keepdims=True" if r.random() < 0.2 else "")
            text = f"{out} = np.{func}({a}{kw})"

            def rule(an, value):
                xv = np.asarray(an.val(a))
                E, nn, sz = an.info[a]
                o = np.asarray(value)
                if func == "ptp":  # a difference of two exact picks (integers wrap: may be negative)
                    return (0.0, False, False) if E == 0 else None
                if func in ("nanmax", "nanmin"):
                    return (E, nn, sz or o.dtype.kind == "f")
                if func in ("nanargmin", "nanargmax"):  # np.argmax(keepdims=np._NoValue) underneath
                    return (0.0, True, False) if E == 0 else None
                if o.dtype.kind != "f":
                    return (0.0, nn, sz) if E == 0 else None
                n = reduced_count(xv, value)
                b = sum_bound(xv, E, value, ax, n)
                if func == "nanmean":
                    cnt = (~np.isnan(xv)).sum(axis=ax) if xv.dtype.kind == "f" else np.full(1, n)
                    cnt = np.asarray(cnt)
                    cnt = cnt[cnt > 0]
                    if cnt.size:
                        b = b / float(cnt.min()) + eps_of(o.dtype) * St(o).M
                return (finish(b, o.dtype), nn, True)
        return Stmt(k, "def", text, out=out, rule=rule)

    def gen_foreign(self):
        """NumPy functions grumpy does not capture, on grumpy's arrays:
        writes by NumPy's own C code (ufunc.at, put, putmask, place,
        fill_diagonal, in-place sort and partition, a seeded shuffle) into
        arrays that pending values may read, and reads of pending values
        (ufunc.outer, diff, sort, unique, nonzero, count_nonzero, reduceat)."""
        r = self.r
        if r.random() < 0.4:
            return self._foreign_read()
        t = self.pick(lambda v: isinstance(v, np.ndarray) and v.ndim >= 1 and v.size > 0)
        if t is None:
            return None
        tv = self.v(t)
        k = self.new()[0]
        s = (self.seed * 31 + k) % (2 ** 32)
        n0, m = tv.shape[0], r.choice([1, 3, 17, 200])
        vals = r.choice(["1", "-2", "True", "0.5", f"np.arange({m}) % 5", f"_rng({s + 1}).integers(-3, 4, {m})"])
        form = r.choice(["at", "at", "put", "putmask", "place", "fill_diagonal", "sort", "shuffle", "partition"])
        exact_t = form in ("at", "partition")  # the result depends on t's values
        if form == "at":
            uf = r.choice(["add", "subtract", "multiply", "maximum", "minimum", "negative"])
            idx = f"_rng({s}).integers({-n0}, {n0}, {m})"
            text = f"np.{uf}.at({t}, {idx})" if uf == "negative" else f"np.{uf}.at({t}, {idx}, {vals})"
        elif form == "put":
            text = f"np.put({t}, _rng({s}).integers(0, {tv.size}, {m}), {vals}, mode='{r.choice(['raise', 'wrap', 'clip'])}')"
        elif form == "putmask":
            text = f"np.putmask({t}, _rng({s}).random({_shape_text(tv.shape)}) < 0.3, {vals})"
        elif form == "place":
            text = f"np.place({t}, _rng({s}).random({_shape_text(tv.shape)}) < 0.3, np.asarray({vals}).ravel())"
        elif form == "fill_diagonal":
            text = f"np.fill_diagonal({t}, {vals}, wrap={r.choice([False, True])})"
        elif form == "sort":
            text = f"{t}.sort(axis={r.choice([-1, 0])})"
        elif form == "shuffle":
            text = f"_rng({s}).shuffle({t})"
        else:
            text = f"{t}.partition({r.randrange(tv.shape[-1])})"

        def rule(an):
            E, nn, sz = an.info[t]
            if exact_t and E:
                return None
            if form in ("sort", "shuffle", "partition"):
                return (E, nn, sz, True)  # the same values, permuted alike (sorting keeps a bound)
            return (0.0, False, False, False)  # exact values written in places
        return Stmt(k, "write", text, target=t, rule=rule)

    def _foreign_read(self):
        r = self.r
        a = self.pick(lambda v: isinstance(v, np.ndarray) and v.ndim >= 1)
        if a is None:
            return None
        av = self.v(a)
        k, out = self.new()
        form = r.choice(["outer", "diff", "sort", "unique", "nonzero", "count_nonzero", "reduceat"])
        keep = False  # the result keeps a's bound (else exact inputs only)
        if form == "outer":
            b = self.pick(lambda v: isinstance(v, np.ndarray) and 0 < np.size(v) * max(av.size, 1) <= MAX_ELEMS)
            if b is None:
                return None
            text = f"{out} = np.{r.choice(['add', 'subtract', 'multiply', 'maximum'])}.outer({a}, {b})"
            bases = [a, b]
        else:
            bases = [a]
            ax = r.choice([-1, 0])
            if form == "diff":
                text = f"{out} = np.diff({a}, n={r.choice([1, 2])}, axis={ax})"
            elif form == "sort":
                text = f"{out} = np.sort({a}, axis={r.choice([-1, 0, None])})"
                keep = True
            elif form == "unique":
                text = f"{out} = np.unique({a}{r.choice(['', ', return_counts=True'])})"
            elif form == "nonzero":
                text = f"{out} = np.nonzero({a})"
            elif form == "count_nonzero":
                text = f"{out} = np.count_nonzero({a}, axis={r.choice([None, 0, -1])})"
            else:
                n0 = av.shape[0]
                idx = sorted(r.randrange(max(n0, 1)) for _ in range(r.randint(1, 4)))
                text = f"{out} = np.{r.choice(['add', 'maximum', 'minimum'])}.reduceat({a}, {idx}, axis=0)"
        return Stmt(k, "def", text, out=out, rule=max_rule(bases, exact=[] if keep else bases))

    def gen_snap(self):
        a = self.pick()
        if a is None:
            return None
        k = self.new()[0]
        return Stmt(k, "snap", f'R.snap("s{k}", {a})', out=f"s{k}", target=a)

    KINDS = (("binary", 20), ("unary", 9), ("astype", 4), ("where", 4), ("clip", 3), ("reduce", 12),
             ("arg", 3), ("scan", 4), ("view", 13), ("inplace", 8), ("setitem", 6), ("copyto", 3),
             ("concat", 3), ("roll", 4), ("gather", 3), ("search", 2), ("product", 5), ("stats", 6), ("snap", 3), ("grid", 2),
             ("plain_broadcast", 3), ("poly", 1), ("foreign", 3))

    def generate(self):
        r = self.r
        self.gen_inputs()
        self.k = 0
        want = r.randint(5, 25)
        kinds = [k for k, _ in self.KINDS]
        weights = [w for _, w in self.KINDS]
        tries = 0
        while len(self.body) < want and tries < want * 25:
            tries += 1
            kind = r.choices(kinds, weights=weights)[0]
            k0 = self.k
            try:
                st = getattr(self, "gen_" + kind)()
            except Exception:  # noqa: BLE001 - a generator bug must not stop fuzzing
                st = None
            if st is None:
                self.k = k0
                continue
            status = self.an.run(st)
            if status == "ok":
                self.body.append(st)
                if st.out and st.kind == "def":
                    self.recent.append(st.out)
                elif st.target:
                    self.recent.append(st.target)
            elif status.startswith("raised") and status.split()[1] in KEEP_ERRORS and r.random() < 0.15:
                self.body.append(st)
            else:
                self.k = k0
        return Program(self.seed, self.inputs, self.body, self.an.spec())


def generate(seed):
    return Generator(seed).generate()


# ---------------------------------------------------------------------------
# Rendering

def render_program(p):
    s = p.seed
    names = [st.out for st in p.inputs]
    spec = ", ".join(f"{n!r}: {p.spec[n]!r}" for n in sorted(p.spec, key=lambda n: (n[0], int(n[1:]))))
    lines = [f"# ---- program {s} ----", f"CHECK_{s} = {{{spec}}}", "", "",
             f"def inputs_{s}():", '    with np.errstate(all="ignore"):']
    for st in p.inputs:
        lines += ["        " + line for line in st.text.splitlines()]
    lines += [f"        return [{', '.join(names)}]", "", "",
              f"def body_{s}(R{''.join(', ' + n for n in names)}):", '    with _errstate():']
    for st in p.body:
        if "\n" in st.text:  # a loop (gen_poly)
            lines.append("        try:")
            lines += ["            " + line for line in st.text.splitlines()]
        else:
            lines.append(f"        try: {st.text}")
        lines.append(f"        except Exception as e: R.err({st.k}, e)")
    lines += ["        return locals()", "", ""]
    return "\n".join(lines)


def render(programs, header="", runtime=RUNTIME):
    parts = [header, runtime, "", ""] if header else [runtime, "", ""]
    for p in programs:
        parts.append(render_program(p))
    parts.append("PROGRAMS = [")
    for p in programs:
        parts.append(f"    ({p.seed}, inputs_{p.seed}, body_{p.seed}, CHECK_{p.seed}),")
    parts += ["]", "", 'if __name__ == "__main__":', "    _main(PROGRAMS)", ""]
    return "\n".join(parts)


# ---------------------------------------------------------------------------
# Running and comparing

# --device: the back end grumpy's runs use.  "emulated" is the GPU back end
# (core/backend_gpu.c: its placement, residency and copies, its kernel
# entries) on the emulated device of core/runtime_gpu.h, which runs those
# entries on the host: what a machine without a GPU can check of it.
# "gpu": every kernel on a real device (a machine with an NVIDIA GPU and its driver).
DEVICES = {"cpu": {}, "emulated": {"GRUMPY_DEVICE": "gpu", "GRUMPY_GPU_EMULATE": "1"}, "gpu": {"GRUMPY_DEVICE": "gpu"}}
DEVICE = "cpu"
# --jit-fail / --eval-loops: the fallbacks' variables, in grumpy's runs
FALLBACK_ENV = {}
# --warnings: both runs record each repetition's warnings (fuzz_runtime.WARNINGS)
WARNINGS = False
# --py-threads K: grumpy's runs run K programs at a time in Python threads
# (fuzz_runtime.PY_THREADS): the core's locks, caches and pending buffers
# under concurrent capture; NumPy's run stays serial
PY_THREADS = 1


def child_env(grumpy_on, threads=None, cache_dir=None, perturb=False):
    env = dict(os.environ)
    for name in ("GRUMPY", "GRUMPY_STATS_JSON", "GRUMPY_AB_OUTDIR", "GRUMPY_FUZZ_PERTURB",
                 "GRUMPY_STRICT", "GRUMPY_DEBUG_JIT_FAIL", "GRUMPY_DEVICE", "GRUMPY_GPU_EMULATE", "GRUMPY_BACKEND"):
        env.pop(name, None)
    env.pop("GRUMPY_DEBUG_EVAL_LOOPS", None)
    if "LD_PRELOAD" in env:
        kept = [p for p in env["LD_PRELOAD"].replace(":", " ").split() if "libgrumpy_preload" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.pop("GRUMPY_FUZZ_WARNINGS", None)
    env.pop("GRUMPY_FUZZ_PY_THREADS", None)
    if grumpy_on and PY_THREADS > 1:
        env["GRUMPY_FUZZ_PY_THREADS"] = str(PY_THREADS)
    if WARNINGS:
        env["GRUMPY_FUZZ_WARNINGS"] = "1"
    if grumpy_on:
        env.setdefault("GRUMPY_MIN_BYTES", "65536")
        # each program runs 3 times (fuzz_runtime.REPS): small kernels' first launches NumPy's, then compiled
        env.setdefault("GRUMPY_FIRST_LAUNCH_MS", "30")
        env.update(DEVICES[DEVICE])
        env.update(FALLBACK_ENV)
        if threads is not None:
            env["GRUMPY_THREADS"] = str(threads)
        if cache_dir is not None and "GRUMPY_CACHE_DIR" not in os.environ:
            env["GRUMPY_CACHE_DIR"] = cache_dir
        if perturb:
            env["GRUMPY_FUZZ_PERTURB"] = "1"
    return env


def load_results(path):
    out = {}
    try:
        with open(path, "rb") as f:
            while True:
                try:
                    res = pickle.load(f)
                except EOFError:
                    break
                except Exception:  # noqa: BLE001 - a record cut short by a crash
                    break
                out[res["seed"]] = res
    except FileNotFoundError:
        pass
    return out


class Run:
    """One execution of a generated file in a child process."""

    def __init__(self, results, rc, stderr, seconds, timed_out):
        self.results, self.rc, self.stderr, self.seconds, self.timed_out = results, rc, stderr, seconds, timed_out


def run_file(path, grumpy_on, threads=None, mode="digest", cache_dir=None, perturb=False, timeout=300):
    out = str(path) + (".grumpy" if grumpy_on else ".numpy") + ".pkl"
    if os.path.exists(out):
        os.unlink(out)
    cmd = [sys.executable] + (["-m", "grumpy.run"] if grumpy_on else []) + [str(path), out, mode]
    env = child_env(grumpy_on, threads, cache_dir, perturb)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=os.path.dirname(str(path)))
        rc, err, timed_out = proc.returncode, proc.stderr, False
    except subprocess.TimeoutExpired as e:
        rc, err, timed_out = None, (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or ""), True
    secs = time.monotonic() - t0
    results = load_results(out)
    try:
        os.unlink(out)
    except FileNotFoundError:
        pass
    return Run(results, rc, err, secs, timed_out)


def _dtype_name(d):
    """A record's dtype (fuzz_runtime: its str and char, '<i8q'): 'int64 (q)'."""
    return f"{np.dtype(d[:-1])} ({d[-1]})" if d else d


def compare_value(name, g, w, E):
    """Differences between grumpy's record g and NumPy's w (see the module
    docstring for the contract): a list of strings."""
    gk, gd, gs, gv = g
    wk, wd, ws, wv = w
    if gk != wk:
        return [f"{name}: grumpy gave {gk}, NumPy {wk}"]
    if gd != wd:
        return [f"{name}: dtype {_dtype_name(gd)} vs NumPy's {_dtype_name(wd)}"]
    if gk.startswith("seq"):
        if gs != ws:
            return [f"{name}: {gs} items vs NumPy's {ws}"]
        out = []
        for i, (a, b) in enumerate(zip(gv, wv)):
            out += compare_value(f"{name}[{i}]", a, b, E)
        return out
    if gk.startswith("py"):
        same = gv == wv or (isinstance(gv, float) and isinstance(wv, float) and gv != gv and wv != wv)
        return [] if same else [f"{name}: {gv!r} vs NumPy's {wv!r}"]
    if gk.startswith("object"):
        return []
    if tuple(gs) != tuple(ws):
        return [f"{name}: shape {tuple(gs)} vs NumPy's {tuple(ws)}"]
    if isinstance(gv, str) or isinstance(wv, str):
        if isinstance(gv, str) and isinstance(wv, str):
            return [] if gv == wv else [f"{name}: values differ (exact {_dtype_name(gd)} {tuple(gs)}, digests)"]
        return [f"{name}: digest against full value"]
    gv = np.asarray(gv)
    wv = np.asarray(wv)
    if gv.dtype.kind != "f":
        if np.array_equal(gv, wv):
            return []
        bad = np.flatnonzero(gv.ravel() != wv.ravel())
        return [f"{name}: {bad.size} of {gv.size} values differ, first at flat index {bad[:3].tolist()}: "
                f"{gv.ravel()[bad[:3]].tolist()} vs NumPy's {wv.ravel()[bad[:3]].tolist()}"]
    gn, wn = np.isnan(gv), np.isnan(wv)
    if E == 0:
        ok = (gv == wv) | (gn & wn)
    else:
        tol = 2 * E + 4 * tiny_of(gv.dtype)
        gf, wf = np.isfinite(gv), np.isfinite(wv)
        with np.errstate(all="ignore"):
            close = np.abs(gv.astype(np.float64) - wv.astype(np.float64)) <= tol
        ok = (gn & wn) | (~gf & ~wf & ~gn & ~wn & (gv == wv)) | (gf & wf & close)
    if ok.all():
        return []
    bad = np.flatnonzero(~ok.ravel())
    i = bad[:3]
    with np.errstate(all="ignore"):
        d = np.abs(gv.ravel()[bad].astype(np.float64) - wv.ravel()[bad].astype(np.float64))
    return [f"{name}: {bad.size} of {gv.size} values differ ({'exact' if E == 0 else f'bound {2 * E:.3g}'}; "
            f"largest difference {np.nanmax(d) if d.size and not np.all(np.isnan(d)) else 'nan'}), "
            f"first at flat index {i.tolist()}: {gv.ravel()[i].tolist()} vs NumPy's {wv.ravel()[i].tolist()}"]


def compare_program(g, w):
    """Differences between grumpy's result g and NumPy's w for one program."""
    if g is None:
        return ["grumpy produced no result"]
    if w["fatal"] or g["fatal"]:
        if g["fatal"] != w["fatal"]:
            return [f"program-level exception: grumpy {g['fatal']} ({g.get('fatal_msg', '')}) "
                    f"vs NumPy {w['fatal']} ({w.get('fatal_msg', '')})"]
        return []
    spec = w["check"]
    problems = []
    for rep, (gr, wr) in enumerate(zip(g["reps"], w["reps"])):
        here = []
        for k in sorted(set(gr["errors"]) | set(wr["errors"])):
            ge, we = gr["errors"].get(k), wr["errors"].get(k)
            if ge != we:
                here.append(f"statement {k}: grumpy {'raised ' + ge if ge else 'did not raise'}, "
                            f"NumPy {'raised ' + we if we else 'did not raise'}")
        for what in ("values", "snaps"):
            gvals, wvals = gr[what], wr[what]
            for n in sorted(set(gvals) | set(wvals)):
                if n not in gvals or n not in wvals:
                    here.append(f"{n}: only in {'grumpy' if n in gvals else 'NumPy'}'s results")
                    continue
                here += compare_value(n, gvals[n], wvals[n], spec.get(n, 0.0))
        if wr.get("warnings") is not None and gr.get("warnings") != wr["warnings"]:
            here.append(f"warnings: grumpy {gr.get('warnings')} vs NumPy {wr['warnings']}")
        problems += [f"rep {rep}: {p}" for p in here]
    if len(g["reps"]) != len(w["reps"]):
        problems.append(f"{len(g['reps'])} repetitions vs NumPy's {len(w['reps'])}")
    return problems


class Failure:
    def __init__(self, programs, index, threads, problems):
        self.programs, self.index, self.threads, self.problems = programs, index, threads, problems

    @property
    def program(self):
        return self.programs[self.index]


class Fuzzer:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = pathlib.Path(workdir)
        self.cache_dir = str(self.workdir / "kernel-cache")
        self.counter = count(1)

    def path(self, stem):
        return self.workdir / f"{stem}_{next(self.counter)}.py"

    def execute(self, programs, threads, mode="digest", header=""):
        """Run programs in one file under NumPy and grumpy: (numpy Run,
        grumpy Run, path)."""
        path = self.path("batch")
        path.write_text(render(programs, header))
        timeout = max(60, 6 * len(programs))  # a hang is reported as a mismatch
        ref = run_file(path, False, mode=mode, timeout=timeout)
        got = run_file(path, True, threads, mode, self.cache_dir, self.args.self_test, timeout)
        return ref, got, path

    def check(self, programs, threads, mode="digest"):
        """Mismatches of a list of programs run in one process: list of
        (index, problems), the numpy Run and the grumpy Run."""
        ref, got, path = self.execute(programs, threads, mode)
        failures = []
        crashed = got.rc != 0 or got.timed_out
        if ref.rc != 0 or ref.timed_out:
            print(f"fuzz: internal error: the NumPy run of {path} failed (rc {ref.rc}):\n"
                  f"{ref.stderr[-3000:]}", file=sys.stderr)
            return None, ref, got
        if any(r["engine"] != "numpy" for r in ref.results.values()) or \
                any(r["engine"] != "grumpy" for r in got.results.values()):
            print("fuzz: batch skipped: capture was not on in the grumpy run (or on in the NumPy run):\n"
                  f"{got.stderr[-2000:]}", file=sys.stderr)
            return None, ref, got
        for i, p in enumerate(programs):
            w = ref.results.get(p.seed)
            g = got.results.get(p.seed)
            if w is None:
                continue
            if g is None:
                if crashed:
                    how = "timed out" if got.timed_out else f"exited with status {got.rc}"
                    tail = "\n".join(got.stderr.strip().splitlines()[-6:])
                    failures.append((i, [f"grumpy process {how} in this program\n{tail}"]))
                    break
                continue
            problems = compare_program(g, w)
            if problems:
                failures.append((i, problems))
        if crashed and programs and not any(p[0].startswith("grumpy process") for _, p in failures):
            how = "timed out" if got.timed_out else f"exited with status {got.rc}"
            tail = "\n".join(got.stderr.strip().splitlines()[-6:])
            failures.append((len(programs) - 1, [f"grumpy process {how} after its last program\n{tail}"]))
        if not self.args.keep:
            path.unlink(missing_ok=True)
        return failures, ref, got

    def fails(self, programs, threads, category):
        """Whether the programs still show a mismatch of this category."""
        res, _, _ = self.check(programs, threads)
        return bool(res) and any(problem_category(p) == category for _, probs in res for p in probs)

    # -- shrinking ------------------------------------------------------------
    def shrink(self, failure, deadline):
        programs = list(failure.programs[:failure.index + 1])
        threads = failure.threads
        target = programs[-1]
        category = problem_category(failure.problems[0])

        def attempt(progs):
            if time.monotonic() > deadline:
                return False
            for p in progs:
                if p.spec is None:
                    p.spec = analyze(p)
                    if p.spec is None:
                        return False
            return self.fails(progs, threads, category)

        if len(programs) > 1 and attempt([target]):
            programs = [target]
        elif len(programs) > 1:
            others = programs[:-1]
            chunk = max(1, len(others) // 2)
            while chunk >= 1 and others:
                i = 0
                while i < len(others):
                    trial = others[:i] + others[i + chunk:]
                    if attempt(trial + [target]):
                        others = trial
                    else:
                        i += chunk
                chunk //= 2
            programs = others + [target]
        for pi in range(len(programs) - 1, -1, -1):
            programs[pi] = self.shrink_program(programs, pi, attempt)
        return programs

    def shrink_program(self, programs, pi, attempt):
        prog = programs[pi]

        def with_prog(p):
            return programs[:pi] + [p] + programs[pi + 1:]

        body = list(prog.body)
        chunk = max(1, len(body) // 2)
        while chunk >= 1:
            i = 0
            changed = False
            while i < len(body):
                trial = remove_statements(body, set(range(i, min(i + chunk, len(body)))))
                cand = drop_unused_inputs(prog.copy(body=trial))
                if len(trial) < len(body) and attempt(with_prog(cand)):
                    body = trial
                    changed = True
                else:
                    i += chunk
            if chunk == 1 and not changed:
                break
            chunk = max(1, chunk // 2) if chunk > 1 else 1
        prog = drop_unused_inputs(prog.copy(body=body))
        inputs = list(prog.inputs)
        for i, st in enumerate(inputs):
            for alt in st.alts:
                trial = inputs[:i] + [st.with_text(alt)] + inputs[i + 1:]
                if attempt(with_prog(prog.copy(inputs=trial))):
                    inputs = trial
                    break
        prog = prog.copy(inputs=inputs)
        prog.spec = analyze(prog)
        return prog

    def save(self, failure, programs, problems, directory):
        directory.mkdir(parents=True, exist_ok=True)
        seed = programs[-1].seed
        path = directory / f"case_{seed}.py"
        desc = "\n".join("#   " + line for p in problems[:8] for line in p.splitlines())
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path.resolve()
        header = (f"# Fuzzer regression case (tools/fuzz.py, program seed {seed}).\n"
                  f"# grumpy differed from NumPy with GRUMPY_THREADS={failure.threads}, GRUMPY_MIN_BYTES=65536"
                  f"{', device ' + DEVICE if DEVICE != 'cpu' else ''}"
                  f"{''.join(f', {k}={v}' for k, v in FALLBACK_ENV.items())}:\n"
                  f"{desc}\n"
                  f"# Run: python {path.name} (prints the values), or python tools/fuzz.py --replay {shown}\n"
                  f"THREADS = {failure.threads}\n"
                  + (f"DEVICE = {DEVICE!r}\n" if DEVICE != "cpu" else "")
                  + (f"FALLBACK_ENV = {FALLBACK_ENV!r}\n" if FALLBACK_ENV else "")
                  + ("WARNINGS = True  # tools/fuzz.py --warnings\n" if WARNINGS else "")
                  + (f"PY_THREADS = {PY_THREADS}  # tools/fuzz.py --py-threads\n" if PY_THREADS > 1 else ""))
        path.write_text(render(programs, header, RUNTIME_STUB))
        return path


def problem_category(problem):
    """What kind of difference a problem line reports (shrinking keeps it)."""
    text = re.sub(r"^rep \d+: ", "", problem)
    for key, cat in (("warnings:", "warnings"), ("grumpy process", "crash"), ("grumpy produced no result", "crash"),
                     ("program-level", "fatal"), ("statement ", "raise"), ("grumpy gave", "kind"),
                     (": dtype", "dtype"), (": shape", "shape"), ("items vs", "shape"),
                     ("only in", "missing"), ("values differ", "values"), ("vs NumPy's", "values")):
        if key in text:
            return cat
    return "other"


def signature(problem):
    """A problem line without names and numbers: mismatches with the same
    signature are probably the same bug (only the first is shrunk)."""
    text = re.sub(r"^rep \d+: ", "", problem.splitlines()[0])
    text = re.sub(r"\b[xvs]\d+\b", "v", text)
    return re.sub(r"[-+]?\d[\d.e+-]*", "#", text.split(" first at ")[0])


def remove_statements(body, idxs):
    """body without the statements at idxs and those that read what they
    defined."""
    gone = {body[i].out for i in idxs if body[i].out}
    keep = []
    for i, st in enumerate(body):
        if i in idxs:
            continue
        if st.uses() & gone:
            if st.out:
                gone.add(st.out)
            continue
        keep.append(st)
    return keep


def drop_unused_inputs(prog):
    used = set()
    for st in prog.body:
        used |= st.uses()
    inputs = [st for st in prog.inputs if st.out in used] or prog.inputs[:1]
    return prog.copy(inputs=inputs)


# ---------------------------------------------------------------------------
# Command line

def report(fz, failure, save_dir, shrink):
    """Print a mismatch; shrink it and save the case when asked."""
    seed = failure.program.seed
    print(f"fuzz: MISMATCH in program {seed} (GRUMPY_THREADS={failure.threads}, device {DEVICE}, "
          f"{''.join(f'{k}={v}, ' for k, v in FALLBACK_ENV.items())}"
          f"{failure.index} programs before it in the process):")
    for p in failure.problems[:6]:
        print("    " + p.replace("\n", "\n    "))
    if len(failure.problems) > 6:
        print(f"    ... {len(failure.problems) - 6} more")
    if shrink:
        t0 = time.monotonic()
        small = fz.shrink(failure, t0 + fz.args.shrink_seconds)
        res, _, _ = fz.check(small, failure.threads, mode="full")
        if res:
            final = res[-1][1]
        else:  # the mismatch went away while shrinking (flaky): keep the original
            small = failure.programs[:failure.index + 1]
            final = failure.problems
        path = fz.save(failure, small, final, save_dir)
        nstmt = sum(len(p.body) for p in small)
        print(f"fuzz: shrunk in {time.monotonic() - t0:.0f} s to {len(small)} program(s), "
              f"{nstmt} statement(s); saved {path}")
        for p in final[:6]:
            print("    " + p.replace("\n", "\n    "))
        print("-" * 72)
        for p in small:
            print(render_program(p).rstrip())
        print("-" * 72)
    sys.stdout.flush()


def fuzz(args):
    t0 = time.monotonic()
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    workdir = tempfile.mkdtemp(prefix="grumpy-fuzz-")
    fz = Fuzzer(args, workdir)
    save_dir = pathlib.Path(workdir) / "cases" if args.self_test else pathlib.Path(args.save_dir)
    n_programs = n_ops = 0
    mismatches = []
    next_index = 0
    queue = []
    batch_no = 0
    per_program = 1.0  # seconds per program (both runs), estimated as we go
    perturbed, missed = [], []  # --self-test: programs with a changed value, and those not reported
    shrunk = {}  # program seed -> signature of its mismatch
    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    try:
        while time.monotonic() - t0 < args.seconds:
            left = args.seconds - (time.monotonic() - t0)
            n = max(1, min(args.batch, int(left / per_program)))
            batches = []
            for _ in range(max(1, args.jobs)):
                while len(queue) < n:
                    queue.append(generate(args.seed * 1_000_000 + next_index))
                    next_index += 1
                batches.append((queue[:n], threads[batch_no % len(threads)]))
                queue = queue[n:]
                batch_no += 1
            futures = [pool.submit(fz.check, progs, th) for progs, th in batches]
            for (programs, th), fut in zip(batches, futures):
                failures, ref, got = fut.result()
                if failures is None:
                    continue
                if args.self_test:
                    reported = {programs[i].seed for i, _ in failures}
                    for p in programs:
                        g = got.results.get(p.seed)
                        if g and g["reps"] and g["reps"][0]["perturbed"]:
                            perturbed.append(p.seed)
                            if p.seed not in reported:
                                missed.append(p.seed)
                done = len(programs)
                for i, problems in failures:
                    if problems[0].startswith("grumpy process"):
                        done = i + 1  # the programs after a crash run again
                        queue = programs[done:] + queue
                n_programs += done
                n_ops += sum(len(p.body) for p in programs[:done]) * REPS
                per_program = 0.7 * per_program + 0.3 * max(0.05, (ref.seconds + got.seconds) / len(programs))
                for i, problems in failures:
                    failure = Failure(programs, i, th, problems)
                    mismatches.append(failure)
                    if args.self_test and len(mismatches) > 1:
                        continue
                    # shrink the first few mismatches, one per kind of difference
                    sig = signature(problems[0])
                    shrink = len(shrunk) < (1 if args.self_test else args.max_shrink) and sig not in shrunk.values()
                    if shrink:
                        shrunk[programs[i].seed] = sig
                    report(fz, failure, save_dir, shrink)
    finally:
        pool.shutdown()
        if args.keep:
            print(f"fuzz: files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - t0
    rest = [str(m.program.seed) for m in mismatches if m.program.seed not in shrunk]
    if rest and not args.self_test:
        print(f"fuzz: not shrunk (python tools/fuzz.py --program SEED shrinks one): {' '.join(rest)}")
    print(f"fuzz: {n_programs} programs, {n_ops} operations, {len(mismatches)} mismatches "
          f"(seed {args.seed}, {elapsed:.1f} s{', device ' + DEVICE if DEVICE != 'cpu' else ''}"
          f"{', warnings compared' if WARNINGS else ''}"
          f"{f', {PY_THREADS} Python threads' if PY_THREADS > 1 else ''}"
          f"{''.join(f', {k}={v}' for k, v in FALLBACK_ENV.items())})")
    if args.self_test:
        ok = bool(perturbed) and not missed
        print(f"fuzz: self-test {'passed' if ok else 'FAILED'}: {len(perturbed)} programs had one grumpy "
              f"value changed by 1, {len(perturbed) - len(missed)} of them reported"
              + (f"; missed: {' '.join(map(str, missed))}" if missed else ""))
        return 0 if ok else 1
    return 1 if mismatches else 0


def one_program(args):
    """--program SEED: generate one program, check it, shrink and save it
    if it mismatches."""
    prog = generate(args.program)
    if args.show:
        print(render([prog]))
        return 0
    workdir = tempfile.mkdtemp(prefix="grumpy-fuzz-one-")
    try:
        fz = Fuzzer(args, workdir)
        status = 0
        for th in [int(t) for t in args.threads.split(",") if t.strip()]:
            res, _, _ = fz.check([prog], th)
            if res is None:
                return 2
            if res:
                save_dir = pathlib.Path(workdir) / "cases" if args.self_test else pathlib.Path(args.save_dir)
                report(fz, Failure([prog], 0, th, res[0][1]), save_dir, args.max_shrink > 0)
                status = 1
                break
            print(f"program {args.program}: same as NumPy (GRUMPY_THREADS={th})")
        return status
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def fallback_env(args):
    """The fallbacks' variables of --jit-fail and --eval-loops."""
    env = {}
    if args.jit_fail:
        env["GRUMPY_DEBUG_JIT_FAIL"] = str(args.jit_fail)
        if args.eval_loops:
            env["GRUMPY_DEBUG_EVAL_LOOPS"] = "1"
    return env


def replay(args):
    global DEVICE, FALLBACK_ENV, WARNINGS, PY_THREADS
    status = 0
    workdir = tempfile.mkdtemp(prefix="grumpy-fuzz-replay-")
    try:
        for case in args.replay:
            src = pathlib.Path(case).read_text().replace(RUNTIME_STUB, RUNTIME)  # run on its own in workdir
            m = re.search(r"^THREADS = (\d+)", src, re.M)
            threads = int(m.group(1)) if m else None
            d = re.search(r"^DEVICE = '(\w+)'", src, re.M)
            DEVICE = d.group(1) if d else args.device
            f = re.search(r"^FALLBACK_ENV = (\{.*\})$", src, re.M)
            FALLBACK_ENV = ast.literal_eval(f.group(1)) if f else fallback_env(args)
            WARNINGS = bool(re.search(r"^WARNINGS = True", src, re.M)) or args.warnings
            t = re.search(r"^PY_THREADS = (\d+)", src, re.M)
            PY_THREADS = int(t.group(1)) if t else args.py_threads
            path = pathlib.Path(workdir) / pathlib.Path(case).name
            path.write_text(src)
            ref = run_file(path, False, mode="full")
            got = run_file(path, True, threads, "full", str(pathlib.Path(workdir) / "cache"))
            problems = []
            if ref.rc != 0:
                problems.append(f"the NumPy run failed (rc {ref.rc}): {ref.stderr[-2000:]}")
            elif got.rc != 0 or got.timed_out:
                problems.append(f"the grumpy run failed (rc {got.rc}, timed out {got.timed_out}): {got.stderr[-2000:]}")
            if any(r.get("engine") not in (None, "grumpy") for r in got.results.values()):
                problems.append(f"capture was not on in the grumpy run: {got.stderr[-2000:]}")
            for seed, w in ref.results.items():
                problems += [f"program {seed}: {p}" for p in compare_program(got.results.get(seed), w)]
            if problems:
                status = 1
                print(f"{case}: MISMATCH")
                for p in problems[:10]:
                    print("    " + p.replace("\n", "\n    "))
            else:
                print(f"{case}: same as NumPy")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return status


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="time budget (default 60)")
    ap.add_argument("--seed", type=int, default=1, help="run seed (default 1)")
    ap.add_argument("--threads", default="1,2,3,8", help="GRUMPY_THREADS values, one per batch round-robin")
    ap.add_argument("--jobs", type=int, default=1, help="batches run at the same time (default 1)")
    ap.add_argument("--batch", type=int, default=20, help="programs per process (default 20)")
    ap.add_argument("--max-shrink", type=int, default=3, help="mismatches to shrink per run (default 3)")
    ap.add_argument("--shrink-seconds", type=float, default=120.0, help="time limit per shrink (default 120)")
    ap.add_argument("--save-dir", default=str(REGRESSIONS), help="where shrunk cases go (default tests/fuzz_regressions)")
    ap.add_argument("--self-test", action="store_true", help="perturb one grumpy value per program; succeed if all are reported")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--replay", nargs="+", metavar="CASE", help="replay saved cases")
    ap.add_argument("--program", type=int, metavar="SEED",
                    help="generate one program and check it with each --threads value; shrink and save it if it mismatches")
    ap.add_argument("--show", action="store_true", help="with --program: print its source only")
    ap.add_argument("--device", choices=sorted(DEVICES), default="cpu",
                    help="grumpy's back end: cpu (default), emulated: the GPU back end on the emulated device, "
                         "gpu: the GPU back end on a real device")
    ap.add_argument("--jit-fail", type=int, default=0, metavar="N",
                    help="grumpy's compiles of about one program in N fail (GRUMPY_DEBUG_JIT_FAIL=N): NumPy's fallback mixed with kernels")
    ap.add_argument("--eval-loops", action="store_true",
                    help="with --jit-fail: the fallback is NumPy's inner loops without the GIL (GRUMPY_DEBUG_EVAL_LOOPS=1)")
    ap.add_argument("--warnings", action="store_true",
                    help="run the programs under NumPy's default error state and compare their warnings too")
    ap.add_argument("--py-threads", type=int, default=1, metavar="K",
                    help="grumpy's runs run K programs at a time, each in its own Python thread (not with --warnings)")
    args = ap.parse_args(argv)
    if args.py_threads > 1 and args.warnings:
        ap.error("--py-threads: the warnings registry is the process's; not with --warnings")
    global DEVICE, FALLBACK_ENV, WARNINGS, PY_THREADS
    DEVICE = args.device
    FALLBACK_ENV = fallback_env(args)
    WARNINGS = args.warnings
    PY_THREADS = args.py_threads
    if args.replay:
        return replay(args)
    if args.program is not None:
        return one_program(args)
    return fuzz(args)


if __name__ == "__main__":
    sys.exit(main())
