"""The fuzzer's runtime (tools/fuzz.py): the code every generated program
runs first -- it builds the inputs, runs the program body REPS times on
fresh inputs, records each value (plain numpy.ndarray copies, hashed or
pickled) and writes them for the comparison with NumPy.

tools/fuzz.py puts this file's text at the top of the programs it runs;
a saved regression case (tests/fuzz_regressions/case_*.py) imports it
instead (RUNTIME_STUB in tools/fuzz.py), and --replay puts the text back.
"""
import concurrent.futures
import contextlib
import hashlib
import os
import pickle
import re
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
# tools/fuzz.py --warnings: bodies run under NumPy's default error state and
# each repetition's warnings are recorded (category and message) to compare
WARNINGS = os.environ.get("GRUMPY_FUZZ_WARNINGS") == "1"
# tools/fuzz.py --py-threads K: grumpy's runs run K programs at a time, each
# in its own Python thread (NumPy's run is the serial reference); the
# warnings registry is the process's, so not with --warnings
PY_THREADS = int(os.environ.get("GRUMPY_FUZZ_PY_THREADS", "1"))
_rng = np.random.default_rng
_NAME = re.compile(r"^[xv][0-9]+$")
REPS = 3


class Recorder:
    """What one repetition leaves: exception types per statement, snapshots."""

    def __init__(self, check, mode):
        self.check = check
        self.mode = mode
        self.errors = {}
        self.snaps = {}

    def err(self, k, e):
        self.errors[k] = type(e).__name__

    def snap(self, name, x):
        self.snaps[name] = _record(x, self.check.get(name, 0.0) == 0.0, self.mode)


def _perturb(c):
    """--self-test: add 1 to one element of c (flip a bool); False if no
    element would change."""
    if c.dtype.kind == "b" and c.size:
        c.flat[0] = not c.flat[0]
        return True
    if c.dtype.kind == "f":
        idx = np.flatnonzero(np.isfinite(c) & (np.abs(c) < 1e6))
    else:
        idx = np.arange(min(c.size, 1))
    if not idx.size:
        return False
    c.flat[idx[0]] += 1
    return True


def _record(x, exact, mode, perturb=None):
    """x as (kind, dtype, shape, value): value a plain copy, or a hash of
    its canonical bytes when it must be exact and mode is "digest".
    perturb: [True] to change one element (then set to [False])."""
    if isinstance(x, (np.ndarray, np.generic)):
        kind = "array" if isinstance(x, np.ndarray) else "scalar " + type(x).__name__
        if kind == "array" and x.size:
            # its memory layout: what ravel(), reshape() and .flags see (a
            # view where NumPy's is a copy aliases: fuzz case 731008991)
            kind += " strides " + str(tuple(st for st, n in zip(x.strides, x.shape) if n > 1))
        c = np.asarray(x).view(np.ndarray).copy()  # computes a pending grumpy array
        if perturb and perturb[0] and _perturb(c):
            perturb[0] = False
        if mode == "digest" and exact:
            if c.dtype.kind == "f":
                c[np.isnan(c)] = np.nan
                c[c == 0] = 0
            h = hashlib.blake2b(c.tobytes(), digest_size=16).hexdigest()
            return (kind, c.dtype.str + c.dtype.char, c.shape, "digest " + h)
        return (kind, c.dtype.str + c.dtype.char, c.shape, c)
    if isinstance(x, (tuple, list)):
        return ("seq " + type(x).__name__, None, len(x), [_record(e, exact, mode) for e in x])
    if isinstance(x, (bool, int, float)):
        return ("py " + type(x).__name__, None, None, x)
    return ("object " + type(x).__name__, None, None, None)


def _errstate():
    """The error state of a program's body: NumPy's default with
    --warnings, else every category ignored."""
    if WARNINGS:
        return np.errstate(divide="warn", over="warn", invalid="warn", under="ignore")
    return np.errstate(all="ignore")


def _order(name):
    return (name[0], int(name[1:]))


def _run_program(make_inputs, body, check, mode, perturb):
    reps = []
    for _ in range(REPS):
        R = Recorder(check, mode)
        args = make_inputs()
        with warnings.catch_warnings(record=True) if PY_THREADS == 1 else contextlib.nullcontext([]) as caught:
            if PY_THREADS == 1:
                warnings.simplefilter("always" if WARNINGS else "ignore")
            env = body(R, *args)
            del args
            names = sorted((n for n in env if _NAME.match(n)), key=_order)
            values, bump = {}, None
            todo = [perturb]  # --self-test: change one value whose bound is below 1/4, an inexact one if any
            for n in sorted(names, key=lambda n: (check.get(n, 0.0) >= 0.25, check.get(n, 0.0) == 0.0)):
                E = check.get(n, 0.0)
                values[n] = _record(env[n], E == 0.0, mode, todo if E < 0.25 and todo[0] else None)
                if bump is None and perturb and not todo[0]:
                    bump = n
            values = {n: values[n] for n in names}
            del env  # (a grumpy result dropped unread gives its warnings now, as NumPy's did at its statement)
        seen = {}
        for w in caught:
            key = (w.category.__name__, str(w.message))
            seen[key] = seen.get(key, 0) + 1
        reps.append({"errors": R.errors, "values": values, "snaps": R.snaps, "perturbed": bump,
                     "warnings": sorted(seen.items()) if WARNINGS else None})
    return reps


def _show(res):
    print(f"program {res['seed']}:")
    if res["fatal"]:
        print(f"  fatal: {res['fatal']}: {res.get('fatal_msg', '')}")
        return
    rep = res["reps"][0]
    for k, name in sorted(rep["errors"].items()):
        print(f"  statement {k} raised {name}")
    items = list(rep["values"].items()) + sorted(rep["snaps"].items(), key=lambda kv: int(kv[0][1:]))
    with np.printoptions(threshold=20, edgeitems=3, precision=17):
        for name, (kind, dtype, shape, value) in items:
            print(f"  {name}: {kind} {dtype or ''} {shape if shape is not None else ''} {value!r}")


def _main(programs):
    out = sys.argv[1] if len(sys.argv) > 1 else None
    mode = sys.argv[2] if len(sys.argv) > 2 else "full"
    perturb = os.environ.get("GRUMPY_FUZZ_PERTURB") == "1"
    g = sys.modules.get("grumpy")
    engine = "grumpy" if g is not None and g.enabled() else "numpy"
    f = open(out, "wb") if out else None

    def run_one(program):
        seed, make_inputs, body, check = program
        res = {"seed": seed, "check": check, "reps": [], "fatal": None, "engine": engine}
        try:
            res["reps"] = _run_program(make_inputs, body, check, mode, perturb)
        except Exception as e:  # noqa: BLE001 - compared by type
            res["fatal"] = type(e).__name__
            res["fatal_msg"] = str(e)[:300]
        return res

    if PY_THREADS > 1 and engine == "grumpy" and not WARNINGS:
        with concurrent.futures.ThreadPoolExecutor(PY_THREADS) as pool:
            results = pool.map(run_one, programs)  # (in program order)
    else:
        results = map(run_one, programs)
    for res in results:
        if f is None:
            _show(res)
        else:
            pickle.dump(res, f, protocol=pickle.HIGHEST_PROTOCOL)
            f.flush()
    if f is not None:
        f.close()

# what a saved case's `from fuzz_runtime import *` takes
__all__ = [_n for _n in dir() if not _n.startswith("__")]
