"""Differential tests of views, writes and indexing: grumpy against plain NumPy.

Every test runs one *program* (a module-level function ``p_*(gp, *arrays,
**params)`` returning a dict of results) twice:

- here, on computed grumpy arrays (``grumpy._ext().as_grumpy``) with capture
  on, and
- in a reference worker: a separate Python process that never enables
  grumpy, so the expected values are plain NumPy's.  (In this process
  NumPy's creation functions are patched and NumPy's own Python code --
  ``np.pad``, ``np.roll``, ... -- would build grumpy arrays, so an
  in-process "reference" could be computed by grumpy itself.)

Every array of the result dict must be NumPy's bit for bit, with NumPy's
dtype and shape (gpcheck.assert_same); booleans (``np.shares_memory``,
``.base is`` relations) and scalars must be equal, and an exception must be
of NumPy's type.  A result array recorded *before* a write and computed after
it (a pending reader of the old values) is compared at the end, so it must
hold the old values.  The input arrays are part of the results, so writes
through views must be visible in the base.

Programs get a probe ``gp``: in the worker it does nothing; here it records
whether arrays are pending and the kernel / fallback counters around a
statement, so the tests also check *how* documented forms were done
(README "What is accelerated").

Operands (``lay``): contiguous, strided, negative-stride, transposed and
broadcast (read-only) views of a 400x300 float64 base, all 200x150, so
every operand is above GRUMPY_MIN_BYTES=65536 (tests/conftest.py).
"""

import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grumpy
import gpcheck

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
WORKER_FLAG = "--reference-worker"
IN_WORKER = __name__ == "__main__" and WORKER_FLAG in sys.argv

if not IN_WORKER:
    from gpcheck import assert_same

# ---- probes ---------------------------------------------------------------------


class NullProbe:
    """The worker's probe: plain NumPy has nothing to record."""

    def pending(self, name, x):
        pass

    def begin(self):
        pass

    def end(self, name, x=None):
        pass


class Probe:
    """Records grumpy's state while a program runs (grumpy side only)."""

    def __init__(self):
        self.notes = {}
        self._mark = None

    def pending(self, name, x):
        self.notes[name] = grumpy.is_pending(x)

    def begin(self):
        s = grumpy.stats()
        self._mark = (s["kernels_launched"], dict(s["fallbacks"]))

    def end(self, name, x=None):
        s = grumpy.stats()
        k0, fb0 = self._mark
        fb = {k: v - fb0.get(k, 0) for k, v in s["fallbacks"].items() if v != fb0.get(k, 0)}
        self.notes[name] = {
            "launched": s["kernels_launched"] - k0,
            "fallbacks": fb,
            "pending": grumpy.is_pending(x) if isinstance(x, np.ndarray) else None,
            "nbytes": x.nbytes if isinstance(x, np.ndarray) else None,
        }


# ---- the reference worker ----------------------------------------------------------


def _worker_env():
    env = gpcheck.subprocess_env()
    env.pop("PYTHONFAULTHANDLER", None)
    if "LD_PRELOAD" in env:
        kept = [p for p in env["LD_PRELOAD"].replace(":", " ").split() if "libgrumpy_preload" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT)])
    return env


class Reference:
    """A long-lived plain-NumPy process running the same programs."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, str(pathlib.Path(__file__).resolve()), WORKER_FLAG],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_worker_env(), cwd=str(HERE))

    def call(self, name, args, kw):
        data = pickle.dumps((name, args, kw), protocol=4)
        self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
        self.proc.stdin.flush()
        hdr = self.proc.stdout.read(8)
        if len(hdr) < 8:
            raise RuntimeError("reference worker died (see stderr)")
        return pickle.loads(self.proc.stdout.read(int.from_bytes(hdr, "little")))

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _worker_main():
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints go to stderr, not into the protocol
    assert "grumpy" not in sys.modules or not sys.modules["grumpy"].enabled()
    assert type(np.zeros(1 << 17)) is np.ndarray, "the reference must be plain NumPy"
    inp = sys.stdin.buffer
    mod = sys.modules["__main__"]
    while True:
        hdr = inp.read(8)
        if len(hdr) < 8:
            return
        name, args, kw = pickle.loads(inp.read(int.from_bytes(hdr, "little")))
        args = [x.copy() if isinstance(x, np.ndarray) else x for x in args]  # own their data
        try:
            res = ("ok", getattr(mod, name)(NullProbe(), *args, **kw))
        except Exception as e:  # noqa: BLE001 - the type is compared
            res = ("raise", type(e).__name__, str(e))
        data = pickle.dumps(res, protocol=4)
        out.write(len(data).to_bytes(8, "little") + data)
        out.flush()


_REF = []


def reference():
    if not _REF:
        _REF.append(Reference())
    return _REF[0]


@pytest.fixture(scope="module", autouse=True)
def _reference_worker():
    yield
    while _REF:
        _REF.pop().close()


# ---- running a program both ways ------------------------------------------------------


def plain_copy(x):
    """A plain numpy.ndarray owning a copy of x's values."""
    return np.ndarray.copy(np.ndarray.view(np.asarray(x), np.ndarray))


def grumpy_copy(x):
    g = grumpy._ext().as_grumpy(plain_copy(x))
    if g.nbytes >= 65536:  # smaller arrays stay plain NumPy arrays
        assert isinstance(g, grumpy.ndarray) and not grumpy.is_pending(g)
    return g


def compare(got, want, path="result", max_ulp=0, errors=None):
    """Appends a message to errors for every difference (all are reported)."""
    if errors is None:
        errors = []
        compare(got, want, path, max_ulp, errors)
        assert not errors, "\n".join(errors)
        return
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            errors.append(f"{path}: {type(got)} is not an array")
            return
        try:
            assert_same(got, want, max_ulp)
        except AssertionError as e:
            errors.append(f"{path}: {(str(e).splitlines() or ['values differ'])[0]}: {plain_copy(got).ravel()[:5]} vs "
                          f"NumPy {want.ravel()[:5]}")
    elif isinstance(want, dict):
        if not isinstance(got, dict) or sorted(got) != sorted(want):
            errors.append(f"{path}: keys {sorted(got)} vs {sorted(want)}")
            return
        for k in want:
            compare(got[k], want[k], f"{path}[{k!r}]", max_ulp, errors)
    elif isinstance(want, (tuple, list)):
        if type(got) is not type(want) or len(got) != len(want):
            errors.append(f"{path}: {got!r} vs {want!r}")
            return
        for i, (g, w) in enumerate(zip(got, want)):
            compare(g, w, f"{path}[{i}]", max_ulp, errors)
    elif isinstance(want, np.generic):
        if type(got) is not type(want):
            errors.append(f"{path}: {type(got)} vs NumPy's {type(want)}")
            return
        try:
            assert_same(np.asarray(got).view(np.ndarray), np.asarray(want))
        except AssertionError as e:
            errors.append(f"{path}: {got!r} vs NumPy {want!r}: {e}")
    elif isinstance(want, float) and want != want:
        if not (isinstance(got, float) and got != got):
            errors.append(f"{path}: {got!r} vs {want!r}")
    elif type(got) is not type(want) or got != want:
        errors.append(f"{path}: grumpy {got!r} vs NumPy {want!r}")


def run(prog, *arrays, max_ulp=0, expect=None, **kw):
    """Runs prog on plain NumPy (worker) and on grumpy arrays (here), checks
    the results are the same (bit for bit unless max_ulp), returns (grumpy
    results, probe notes).  expect: the name of the exception NumPy raises
    (grumpy must raise the same type), None when NumPy must not raise."""
    want = reference().call(prog.__name__, [plain_copy(a) for a in arrays], kw)
    probe = Probe()
    try:
        got = ("ok", prog(probe, *[grumpy_copy(a) for a in arrays], **kw))
    except Exception as e:  # noqa: BLE001 - the type is compared
        got = ("raise", type(e).__name__, str(e))
    if want[0] == "raise" or got[0] == "raise":
        def brief(r):
            return f"raised {r[1]}: {r[2][:300]}" if r[0] == "raise" else "returned results"
        assert want[0] == "ok" or want[1] == expect, f"NumPy {brief(want)} (expected {expect})"
        assert got[:2] == want[:2], f"grumpy {brief(got)}; NumPy {brief(want)}"
        return None, probe.notes
    assert expect is None, f"NumPy did not raise {expect}"
    compare(got[1], want[1], max_ulp=max_ulp)
    return got[1], probe.notes


def assert_captured(note, what):
    """A documented captured form: no fallback, and (when the result is
    above the threshold) the result is pending."""
    assert note["fallbacks"] == {}, f"{what}: fell back to NumPy: {note['fallbacks']}"
    if note["nbytes"] is not None and note["nbytes"] >= 65536:
        assert note["pending"], f"{what}: not captured lazily"


# ---- inputs -------------------------------------------------------------------------


def rng(seed):
    return np.random.Generator(np.random.PCG64(seed))


def floats(shape=(400, 300), seed=0, dtype=np.float64):
    r = rng(seed)
    x = plain_copy(r.standard_normal(shape) * 10).astype(dtype)
    return plain_copy(x)


def ints(shape=(400, 300), seed=0, dtype=np.int64, lo=-50, hi=50):
    return plain_copy(rng(seed).integers(lo, hi, shape).astype(dtype))


def positive(shape=(400, 300), seed=0):
    return plain_copy(rng(seed).uniform(0.5, 2.0, shape))


LAYOUTS = ["contiguous", "strided", "negative", "transposed", "broadcast"]
WRITABLE_LAYOUTS = LAYOUTS[:4]


def lay(x, kind):
    """A 200x150 operand of the given layout, a view of the (400, 300) x."""
    if kind == "contiguous":
        return x.reshape(-1)[: 200 * 150].reshape(200, 150)
    if kind == "strided":
        return x[::2, 1::2]
    if kind == "negative":
        return x[::-2, -1::-2]
    if kind == "transposed":
        return x.T[50:250, 100:250]
    if kind == "broadcast":
        return np.broadcast_to(x[7, 10:160], (200, 150))
    raise ValueError(kind)


# =====================================================================================
# 1. Views of computed and pending arrays, used in further arithmetic
# =====================================================================================

VIEW_FORMS = {
    "slice_steps": lambda x: x[1:-1:2, 3::2],
    "slice_negative": lambda x: x[::-1, -2::-3],
    "ellipsis": lambda x: x[..., 3:-3],
    "newaxis": lambda x: x[:, np.newaxis, ::-1],
    "int_and_slice": lambda x: x[5, ::-1][np.newaxis],
    "reshape": lambda x: x.reshape(100, 300),
    "reshape_3d": lambda x: x.reshape(20, 10, 150),
    "ravel": lambda x: x.ravel(),
    "T": lambda x: x.T,
    "transpose": lambda x: np.transpose(x),
    "swapaxes": lambda x: x.swapaxes(0, 1),
    "moveaxis": lambda x: np.moveaxis(x.reshape(20, 10, 150), 0, -1),
    "broadcast_to": lambda x: np.broadcast_to(x, (2, 200, 150)),
    "squeeze": lambda x: x[np.newaxis, :, np.newaxis, :].squeeze(),
    "expand_dims": lambda x: np.expand_dims(x, (0, 2)),
    "flip": lambda x: np.flip(x),
    "flip_axis": lambda x: np.flip(x, 1),
}
METHOD_FORMS = ["slice_steps", "slice_negative", "ellipsis", "newaxis", "int_and_slice", "reshape",
                "reshape_3d", "ravel", "T", "swapaxes", "squeeze"]


def p_view(gp, a, form, source, layout):
    x = lay(a, layout)
    owner = a
    if source == "pending":
        x = x * 2 + 1
        gp.pending("x", x)
        owner = x
    v = VIEW_FORMS[form](x)
    gp.pending("x_after_view", x)
    gp.begin()
    r = (v * 3 + 1) - v * v
    gp.end("r", r)
    out = {"v_before": v.copy(), "r": r, "max": v.max(), "min_last": v.min(axis=-1),
           "shares_x": np.shares_memory(v, x), "shares_owner": np.shares_memory(v, owner),
           "writeable": v.flags.writeable}
    try:
        v += 1
        gp.pending("x_after_write", x)
    except ValueError as e:
        out["write_error"] = type(e).__name__
    out.update(v=v, x=x, a=a)
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("form", list(VIEW_FORMS))
def test_view_then_arithmetic_and_write(form, source, layout):
    _, notes = run(p_view, floats(seed=1), form=form, source=source, layout=layout)
    if source == "pending":
        assert notes["x"], "x * 2 + 1 should be recorded lazily"
    # elementwise arithmetic on any view of a computed array is captured
    assert_captured(notes["r"], f"arithmetic on {form} view")


def p_view_base(gp, a, form, source):
    x = a if source == "computed" else a * 2 + 1
    v = VIEW_FORMS[form](x)
    root = v
    while isinstance(root.base, np.ndarray):
        root = root.base
    return {"base_is_x": v.base is x, "root_is_x": root is x, "base_is_none": v.base is None,
            "owndata": v.flags.owndata, "shares": np.shares_memory(v, x)}


@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("form", METHOD_FORMS)
def test_view_base_of_methods_and_slicing(form, source):
    """ndarray methods and basic slicing: NumPy's .base relations."""
    run(p_view_base, floats(shape=(200, 150), seed=2), form=form, source=source)


@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("form", sorted(set(VIEW_FORMS) - set(METHOD_FORMS)))
def test_view_base_of_functions(form, source):
    """np.transpose / moveaxis / broadcast_to / expand_dims / flip return
    views whose .base is the operand (NumPy's own implementation makes the
    view of its argument)."""
    run(p_view_base, floats(shape=(200, 150), seed=2), form=form, source=source)


def p_pending_view_chains(gp, a, b):
    p = (a * 2 + 1)[::-2, 1:]
    gp.pending("p_base", p)
    q = (a + b).T.reshape(150, 800)
    r = (a - b).T[::3, ::-1].reshape(-1)
    s = np.moveaxis((a * b).reshape(4, 100, 300), 0, 2)[:, ::-7]
    t = np.flip((a / 3)[10:-10], 0).ravel()[::5]
    u = (b * 0.5)[np.newaxis, ..., np.newaxis].squeeze(0)[..., 0].swapaxes(0, 1)
    gp.begin()
    w = p * 3 - 1
    gp.end("w", w)
    return {"p": p, "q": q, "r": r, "s": s, "t": t, "u": u, "w": w, "q2": q[::-1] + q[:, ::2].repeat(2, axis=1),
            "r2": r.reshape(100, 400).T * 2, "s2": s.sum(axis=-1), "t2": t + t[::-1], "u2": u + u.T.T,
            "a": a, "b": b}


def test_views_of_pending_expressions():
    run(p_pending_view_chains, floats(seed=3), floats(seed=4))


LAYOUT_EXPRS = {
    "transposed": lambda a: a.T * 2,
    "transposed_slice": lambda a: lay(a, "transposed") + 1,
    "negative": lambda a: a[::-1, ::-2] * 2,
    "mixed": lambda a: a[:, ::-1].T + a.T,
    "swapaxes_3d": lambda a: a.reshape(20, 20, 300).swapaxes(0, 2) - 1,
}


def p_result_layout(gp, a, expr):
    """NumPy's elementwise results keep their operands' memory order
    (order='K'), which decides whether reshape/ravel are views and what
    ravel('K') returns."""
    r = LAYOUT_EXPRS[expr](a)
    v = r.reshape(-1)
    out = {"strides": r.strides, "c": r.flags.c_contiguous, "f": r.flags.f_contiguous,
           "ravel_K": r.ravel(order="K").copy(), "ravel_A": r.ravel(order="A").copy(), "reshape_shares": np.shares_memory(v, r)}
    v[:7] = -1.0  # a write into the reshaped array: visible in r only when it is a view
    out.update(r=r, v=v)
    return out


@pytest.mark.parametrize("expr", list(LAYOUT_EXPRS))
def test_result_memory_layout(expr):
    run(p_result_layout, floats(seed=42), expr=expr)


# =====================================================================================
# 2. Writes
# =====================================================================================

def p_slice_assign(gp, a, b, layout, value, source):
    if source == "pending":
        a = a * 1.5 - 2
    t = lay(a, layout)
    old = a * 2  # a pending reader of the old values
    vals = {
        "expr": lambda: (b[1:-1, ::2] * 2 + 1)[: t[1:-1, ::2].shape[0], : t[1:-1, ::2].shape[1]],
        "scalar": lambda: 7.25,
        "int_scalar": lambda: 3,
        "np_scalar": lambda: np.float32(0.1),
        "row": lambda: b[3, : t[1:-1, ::2].shape[1]],
        "column": lambda: b[: t[1:-1, ::2].shape[0], 5:6],
        "int_array": lambda: (b[1:-1, ::2] * 10)[: t[1:-1, ::2].shape[0], : t[1:-1, ::2].shape[1]].astype(np.int32),
        "zero_d": lambda: np.array(-4.5),
    }
    v = vals[value]()
    gp.begin()
    t[1:-1, ::2] = v
    gp.end("write", a)
    t[::-7, -3] = -1.0
    t[..., 0] = b[0, 0]
    out = {"a": a, "t": t, "old": old}
    out["after"] = a + 1
    return out


@pytest.mark.parametrize("value", ["expr", "scalar", "int_scalar", "np_scalar", "row", "column", "int_array",
                                   "zero_d"])
@pytest.mark.parametrize("layout", WRITABLE_LAYOUTS)
@pytest.mark.parametrize("source", ["computed", "pending"])
def test_slice_assignment(source, layout, value):
    _, notes = run(p_slice_assign, floats(seed=5), floats(seed=6), layout=layout, value=value, source=source)
    # slice assignment with basic indexing: a lazy write into the memory
    assert_captured(notes["write"], f"t[1:-1, ::2] = {value}")


INPLACE = {
    "+=": lambda t, v: t.__iadd__(v),
    "-=": lambda t, v: t.__isub__(v),
    "*=": lambda t, v: t.__imul__(v),
    "/=": lambda t, v: t.__itruediv__(v),
    "//=": lambda t, v: t.__ifloordiv__(v),
    "%=": lambda t, v: t.__imod__(v),
    "**=": lambda t, v: t.__ipow__(v),
    "&=": lambda t, v: t.__iand__(v),
    "|=": lambda t, v: t.__ior__(v),
    "^=": lambda t, v: t.__ixor__(v),
    "<<=": lambda t, v: t.__ilshift__(v),
    ">>=": lambda t, v: t.__irshift__(v),
}
FLOAT_OPS = ["+=", "-=", "*=", "/=", "//=", "%=", "**="]
INT_OPS = ["+=", "-=", "*=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>="]


def p_inplace(gp, a, b, op, layout, operand, source):
    if source == "pending":
        a = a + 0 if a.dtype.kind == "f" else a | 0
    t = lay(a, layout)
    old = a * 2
    if operand == "scalar":
        v = 3 if a.dtype.kind in "iu" else 1.75
    elif operand == "array":
        v = lay(b, layout if layout != "broadcast" else "strided")
    elif operand == "row":
        v = b[1, 20:170]
    elif operand == "pending":
        v = lay(b, "negative") * 2 - 1 if a.dtype.kind == "f" else (lay(b, "negative") & 7) + 1
    else:
        raise ValueError(operand)
    gp.begin()
    INPLACE[op](t, v)
    gp.end("write", a)
    return {"a": a, "t": t, "old": old, "after": old + a}


@pytest.mark.parametrize("operand", ["scalar", "array", "row", "pending"])
@pytest.mark.parametrize("layout", WRITABLE_LAYOUTS)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_inplace_float(op, layout, operand):
    b = positive(seed=8) if op in ("/=", "//=", "%=", "**=") else floats(seed=8)
    a = positive(seed=7) if op == "**=" else floats(seed=7)
    # power is libmvec's pow: within 4 ULP of NumPy's (README, Differences)
    _, notes = run(p_inplace, a, b, op=op, layout=layout, operand=operand, source="computed",
                   max_ulp=4 if op == "**=" else 0)
    assert_captured(notes["write"], f"t {op} {operand}")


@pytest.mark.parametrize("operand", ["scalar", "array", "pending"])
@pytest.mark.parametrize("layout", ["strided", "negative"])
@pytest.mark.parametrize("op", INT_OPS)
def test_inplace_int(op, layout, operand):
    a = ints(seed=9, lo=-1000, hi=1000)
    b = ints(seed=10, lo=1, hi=9)  # no division by zero, small shifts
    _, notes = run(p_inplace, a, b, op=op, layout=layout, operand=operand, source="computed")
    assert_captured(notes["write"], f"int t {op} {operand}")


@pytest.mark.parametrize("op", ["+=", "*=", "/="])
@pytest.mark.parametrize("layout", WRITABLE_LAYOUTS)
def test_inplace_on_view_of_pending(op, layout):
    _, notes = run(p_inplace, floats(seed=11), positive(seed=12), op=op, layout=layout, operand="array",
                   source="pending")
    assert_captured(notes["write"], f"view of pending {op} array")


def p_inplace_cast(gp, a, b, case):
    old = a * 1
    if case == "int_view_plus_float":  # NumPy: UFuncTypeError (same_kind)
        t = a[::2]
        t += 0.5
    elif case == "float32_view_plus_float64":
        t = a[::-1, ::2]
        t *= b[::-1, ::2]
    elif case == "int32_plus_int64_array":
        t = a[:, 1:]
        t += b[:, :-1]
    return {"a": a, "old": old}


def test_inplace_casting_rules():
    run(p_inplace_cast, ints(dtype=np.int32, seed=13), floats(seed=14), case="int_view_plus_float",
        expect="UFuncTypeError")
    run(p_inplace_cast, floats(seed=13, dtype=np.float32), floats(seed=14), case="float32_view_plus_float64")
    run(p_inplace_cast, ints(dtype=np.int32, seed=13), ints(seed=14), case="int32_plus_int64_array")


def p_out(gp, a, b, case):
    old = a + b
    if case == "view_out":
        t = lay(a, "negative")
        gp.begin()
        r = np.add(lay(b, "strided"), lay(b, "transposed"), out=t)
        gp.end("write", a)
    elif case == "tuple_out":
        t = a[::2, ::2]
        gp.begin()
        r = np.multiply(b[1::2, ::2], 3.0, out=(t,))
        gp.end("write", a)
        r = r[0]
    elif case == "same_memory":
        t = a[::-1]
        gp.begin()
        r = np.subtract(t, 1.5, out=t)
        gp.end("write", a)
    elif case == "pending_out":
        p = a * 2
        gp.begin()
        r = np.add(b, 1, out=p)
        gp.end("write", p)
        return {"r": r, "p": p, "is_out": r is p, "old": old, "a": a}
    elif case == "unary_out":
        t = a[:, ::-1]
        gp.begin()
        r = np.negative(b[:, 1::2].repeat(2, axis=1), out=t)
        gp.end("write", a)
    elif case == "overlap_out":  # partial overlap: NumPy copies first
        t = a[1:]
        r = np.add(a[:-1], a[1:], out=t)
    elif case == "overlap_out_reversed":
        t = a
        r = np.multiply(a[::-1], 2, out=t)
    elif case == "cast_out":  # float64 result into a float32 out= (same_kind)
        t = np.zeros((200, 150), np.float32)
        r = np.add(lay(a, "strided"), lay(b, "negative"), out=t)
        return {"r": r, "t": t, "old": old, "a": a, "is_out": r is t}
    elif case == "where_out":
        t = lay(a, "transposed")
        r = np.add(lay(b, "strided"), 1, out=t, where=lay(b, "contiguous") > 0)
    else:
        raise ValueError(case)
    return {"r": r, "t": t, "is_out": r is t, "shares": np.shares_memory(r, a), "old": old, "a": a,
            "after": a * 1}


@pytest.mark.parametrize("case", ["view_out", "tuple_out", "same_memory", "pending_out", "unary_out",
                                  "overlap_out", "overlap_out_reversed", "cast_out", "where_out"])
def test_ufunc_out(case):
    _, notes = run(p_out, floats(seed=15), floats(seed=16), case=case)
    if "write" in notes:  # out= on a computed or pending array: documented as captured
        assert_captured(notes["write"], f"out= ({case})")


def p_copyto(gp, a, b, case):
    old = a * 2
    t = lay(a, "strided")
    gp.begin()
    if case == "array":
        np.copyto(t, lay(b, "negative"))
    elif case == "scalar":
        np.copyto(t, 2.5)
    elif case == "row":
        np.copyto(t, b[0, :150])
    elif case == "where":
        np.copyto(t, lay(b, "transposed"), where=lay(b, "contiguous") > 0)
    elif case == "where_scalar":
        np.copyto(t, -1.0, where=lay(b, "negative") < 0)
    elif case == "where_broadcast_mask":
        np.copyto(t, lay(b, "contiguous"), where=b[0, :150] > 0)
    elif case == "where_pending_src":
        np.copyto(t, lay(b, "contiguous") * 3, where=lay(b, "strided") > 1)
    elif case == "int_src":
        np.copyto(t, (lay(b, "contiguous") * 10).astype(np.int32))
    elif case == "unsafe_cast_error":  # float -> int with casting='same_kind': TypeError
        np.copyto(a.astype(np.int64)[::2, ::2], lay(b, "strided"))
    elif case == "unsafe":
        c = a.astype(np.int32)
        np.copyto(c[::-2], b[::2] * 100, casting="unsafe")
        return {"c": c, "old": old}
    elif case == "overlap":
        np.copyto(a[1:], a[:-1])
    elif case == "pending_dst":
        p = a * 3
        np.copyto(p[::2], b[::2])
        gp.end("write", p)
        return {"p": p, "old": old, "a": a}
    else:
        raise ValueError(case)
    gp.end("write", a)
    return {"a": a, "t": t, "old": old, "after": a - old}


COPYTO_CASES = ["array", "scalar", "row", "where", "where_scalar", "where_broadcast_mask", "where_pending_src",
                "int_src", "unsafe_cast_error", "unsafe", "overlap", "pending_dst"]
COPYTO_CAPTURED = ["array", "scalar", "row", "where", "where_scalar", "where_broadcast_mask",
                   "where_pending_src", "int_src", "pending_dst"]


@pytest.mark.parametrize("case", COPYTO_CASES)
def test_copyto(case):
    _, notes = run(p_copyto, floats(seed=17), floats(seed=18), case=case,
                   expect="TypeError" if case == "unsafe_cast_error" else None)
    if case in COPYTO_CAPTURED:
        assert_captured(notes["write"], f"np.copyto ({case})")


def p_fill(gp, a, case):
    old = a * 2
    if case == "computed":
        a.fill(1.5)
    elif case == "view":
        a[::-3, 1::2].fill(-2)
    elif case == "pending":
        p = a + 1
        q = p * 2  # pending reader of the pending p
        p.fill(9)
        return {"p": p, "q": q, "old": old, "a": a}
    elif case == "transposed_view":
        a.T[10:50].fill(np.float32(0.25))
    elif case == "int_fill_float":
        c = (a * 10).astype(np.int64)
        r = c + 1
        c[::2].fill(3.9)
        return {"c": c, "r": r, "old": old}
    return {"a": a, "old": old, "after": a + old}


@pytest.mark.parametrize("case", ["computed", "view", "pending", "transposed_view", "int_fill_float"])
def test_fill(case):
    run(p_fill, floats(seed=19), case=case)


def p_put(gp, a, case):
    old = a * 2
    idx = np.array([0, 5, 17, 3000, 119999, 42, 5, -1, -300])
    if case == "basic":
        np.put(a, idx, [1.0, 2.0, 3.0])
    elif case == "pending":
        p = a - 1
        q = p * 3
        np.put(p, idx[:4], -7.5)
        return {"p": p, "q": q, "old": old, "a": a}
    elif case == "out_of_bounds":
        np.put(a, [1, 120000], 5.0)
    elif case == "wrap":
        np.put(a, [1, 120000, -120001, 250001], [5.0, 6.0], mode="wrap")
    elif case == "clip":
        np.put(a, [-5, 120000, 7], 8.0, mode="clip")
    elif case == "method":
        a.put(idx[::-1], a[0, :9] * 2)
    elif case == "pending_values":
        np.put(a, idx, (a[0, :9] + 100))
    return {"a": a, "old": old, "after": a * 1}


@pytest.mark.parametrize("case", ["basic", "pending", "out_of_bounds", "wrap", "clip", "method", "pending_values"])
def test_put(case):
    run(p_put, floats(seed=20), case=case, expect="IndexError" if case == "out_of_bounds" else None)


ALIASING = {
    "a[1:] += a[:-1]": lambda a: a[1:].__iadd__(a[:-1]),
    "a[:-1] += a[1:]": lambda a: a[:-1].__iadd__(a[1:]),
    "a[::-1] = a": lambda a: a.__setitem__(slice(None, None, -1), a),
    "a[1:] = a[:-1]": lambda a: a.__setitem__(slice(1, None), a[:-1]),
    "a[:-1] = a[1:]": lambda a: a.__setitem__(slice(None, -1), a[1:]),
    "a[::2] = a[1::2]": lambda a: a.__setitem__(slice(None, None, 2), a[1::2]),
    "b = a[::-1]; a += b": lambda a: a.__iadd__(a[::-1]),
    "a[:300] -= a[:300].T": lambda a: a[:300].__isub__(a[:300].T) if a.ndim == 2 else None,
    "a[:, 1:] *= a[:, :-1]": lambda a: a[:, 1:].__imul__(a[:, :-1]) if a.ndim == 2 else None,
    "a[1:] = a[:-1] * 2": lambda a: a.__setitem__(slice(1, None), a[:-1] * 2),
    "a += a": lambda a: a.__iadd__(a),
    "a[::2] += a[::2]": lambda a: a[::2].__iadd__(a[::2]),
    "np.add(a, 1, out=a)": lambda a: np.add(a, 1, out=a),
}


def p_aliasing(gp, a, form, source, shape):
    a = a.reshape(shape)
    if source == "pending":
        a = a * 2 + 1
    old = a * 2  # recorded before the write, computed after it
    view_old = a[::3] + 0
    s0 = a.sum()
    ALIASING[form](a)
    return {"a": a, "old": old, "view_old": view_old, "s0": s0, "s1": a.sum(axis=-1), "after": a * 3}


@pytest.mark.parametrize("shape", [(120000,), (400, 300)], ids=["1d", "2d"])
@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("form", list(ALIASING))
def test_aliasing_writes(form, source, shape):
    run(p_aliasing, floats(seed=21), form=form, source=source, shape=shape)


def p_aliasing_sequence(gp, a):
    """Several aliasing writes on the same arrays, each with pending readers
    kept alive across the next write."""
    olds = []
    for i, form in enumerate(ALIASING):
        olds.append(a[:, ::7] * (i + 1))
        ALIASING[form](a)
    return {"a": a, "olds": tuple(olds)}


def test_aliasing_sequence():
    run(p_aliasing_sequence, floats(seed=22))


REUSE_SCRIPT = """
import hashlib, sys
import numpy as np
writer = sys.argv[1]
a = np.arange(120_000, dtype=np.float64)   # grumpy arrays under grumpy.run
old = a * 3                                # pending: reads a
if writer == "fill":
    a.fill(2)                              # NumPy writes a: old is computed first
elif writer == "slice":
    a[:] = 2.0                             # lazy write: old is computed first
elif writer == "iadd_flush":
    a += 1
    old.sum()
b = np.arange(120_000, dtype=np.float64)
del a, old
b[:-1] += b[1:]                            # overlapping in-place add: NumPy copies first
c = np.arange(120_000, dtype=np.float64)
np.add(c[1:], c[:-1], out=c[1:])
print(b[:4], c[:4], hashlib.sha1(np.asarray(b).tobytes() + np.asarray(c).tobytes()).hexdigest())
"""


@pytest.mark.parametrize("writer", ["fill", "slice", "iadd_flush"])
def test_overlapping_write_after_freed_written_buffer(writer, tmp_path):
    """A computed array written while a pending array reads it, both freed,
    then an overlapping in-place operation on another array (NumPy makes
    temporaries, which reuse the freed memory).  Run in fresh processes
    (the outcome depends on which buffers were freed before): grumpy's
    output must be plain NumPy's."""
    script = tmp_path / "reuse.py"
    script.write_text(REUSE_SCRIPT)
    env = _worker_env()
    env["GRUMPY_MIN_BYTES"] = "65536"
    env["GRUMPY_CACHE_DIR"] = "off"
    want = subprocess.run([sys.executable, str(script), writer], env=_worker_env(), capture_output=True,
                          text=True, timeout=120)
    got = subprocess.run([sys.executable, "-m", "grumpy.run", str(script), writer], env=env,
                         capture_output=True, text=True, timeout=120)
    assert want.returncode == 0, want.stderr
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout, f"grumpy: {got.stdout!r}\nNumPy:  {want.stdout!r}"


def p_write_sequence(gp, a, b, case):
    """Sequences of writes and reads on the same memory: views made before
    a write see it, pending readers made before it do not."""
    if case == "view_before_lazy_write":
        v = a[::2, ::-3]
        r = v * 2
        a[1:-1] = b[1:-1] + 1
        return {"v": v, "r": r, "v_after": v * 2, "a": a}
    if case == "disjoint_writes_then_read":
        a[:200] = b[:200] * 2
        a[200:] = b[200:] - 1
        a[:, ::2] += 1
        return {"a": a, "r": a * 3}
    if case == "write_read_write":
        a[::2] = 1.0
        r1 = a * 2
        a[1::2] = b[1::2]
        r2 = a + 0
        a *= 3
        return {"a": a, "r1": r1, "r2": r2}
    if case == "pending_target":
        p = a * 2
        v = p[::3]
        q = p + 0  # pending reader of p's old values
        p += 1
        p[::2] = b[::2]
        return {"p": p, "v": v, "q": q}
    if case == "pending_target_out":
        p = a * 2
        q = p * 1
        np.add(b, 1, out=p[::-1])
        return {"p": p, "q": q}
    if case == "writes_then_views_freed":
        p = a + 1
        v = p[::-2]
        p[:] = 5.0
        del p
        return {"v": v, "w": v * 2}
    if case == "lazy_write_then_fancy_read":
        a[1:-1, ::2] = b[1:-1, ::2] * 2
        r = a[[0, 1, 2, 399]]
        t = np.take(a, [5, 7, 100000])
        s = np.sort(a[:, 3])
        return {"a": a, "r": r, "t": t, "s": s, "bytes": a[::50, ::60].tobytes()}
    if case == "inplace_chain_overlap":
        a += 1
        a *= 2
        a[::2] -= a[1::2]
        a[:, 1:] += a[:, :-1]
        return {"a": a}
    if case == "value_reads_target":
        a[1:] += (a * 1)[:-1]
        a[::2] = (a + 1)[1::2]
        return {"a": a}
    if case == "empty_views":
        a[5:5] = 1.0
        a[:, 300:] += 1
        a[[], 3] = 7.0
        a[a > 1e9] = 0
        np.copyto(a[:0], 3.0)
        return {"a": a, "e": a[10:10] * 2, "r": a * 1}
    if case == "broadcast_shape_error":
        a[:, 0] += b[:, :2]
        return {"a": a}
    if case == "readonly":
        v = a[::2]
        v.flags.writeable = False
        v += 1
        return {"a": a}
    raise ValueError(case)


WRITE_SEQUENCES = ["view_before_lazy_write", "disjoint_writes_then_read", "write_read_write", "pending_target",
                   "pending_target_out", "writes_then_views_freed", "lazy_write_then_fancy_read",
                   "inplace_chain_overlap", "value_reads_target", "empty_views", "broadcast_shape_error", "readonly"]


@pytest.mark.parametrize("case", WRITE_SEQUENCES)
def test_write_sequences(case):
    expect = {"broadcast_shape_error": "ValueError", "readonly": "ValueError"}.get(case)
    run(p_write_sequence, floats(seed=43), floats(seed=44), case=case, expect=expect)


def p_dtype_writes(gp, a, b, dtype):
    a = a.astype(dtype)
    b = b.astype(dtype)
    old = a.copy()
    one = True if dtype == "bool" else 1
    a[1:-1, ::3] = b[1:-1, ::3]
    a[::-2] = one
    t = a[:, ::2]
    if dtype == "bool":
        t |= b[:, 1::2]
        t &= b[::-1, ::2]
        t ^= True
    else:
        t += b[:, 1::2]
        t -= one
        t *= b[::-1, ::2]
    np.copyto(a[::3], b[::3], where=b[::3] > 0)
    a[b > 0] = one
    return {"a": a, "old": old, "t": t, "sum": a.sum(axis=1), "r": np.where(a > 0, a, b)}


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "float32"])
def test_writes_small_dtypes(dtype):
    run(p_dtype_writes, ints(seed=45, lo=-3, hi=4), ints(seed=46, lo=-3, hi=4), dtype=dtype)


def p_cached_mapping(gp, b, case):
    """b lives in a fresh mapping that NumPy wrote; t, a computed pending
    result of b's size that read b, is freed (its pages are cached for
    reuse); then NumPy writes into b (through grumpy's fault handler or
    its preparation of out= / writable buffers)."""
    t = b * 3
    t.sum()
    del t
    if case == "overlap_iadd":
        b[:-1] += b[1:]
    elif case == "out_where":
        np.add(b, 1, out=b, where=b > 100)
    elif case == "cumsum_out":
        np.cumsum(b[::-1] * 0 + 1, out=b)
    elif case == "memoryview":
        m = memoryview(b)
        m[0] = -1.0
    elif case == "fancy_setitem":
        b[[0, 1]] = -1.0
    elif case == "scalar_setitem":
        b[0] = -1.0
    return {"b": b}


CACHED_MAPPING_CASES = ["overlap_iadd", "out_where", "cumsum_out", "memoryview", "fancy_setitem", "scalar_setitem"]


@pytest.mark.parametrize("case", CACHED_MAPPING_CASES)
def test_write_into_fresh_mapping_after_cached_free(case):
    # a size no other test uses, so the input gets a fresh mapping and the
    # only cached mapping of its size is t's
    n = 131_072 + 1024 * (1 + CACHED_MAPPING_CASES.index(case))
    run(p_cached_mapping, plain_copy(np.arange(n, dtype=np.float64).view(np.ndarray)), case=case)


def p_jacobi(gp, c, steps, source):
    if source == "pending":
        c = c * 0.5 + 1
    hist = []
    for i in range(steps):
        gp.begin()
        c[1:-1, 1:-1] = 0.2 * (c[1:-1, 1:-1] + c[:-2, 1:-1] + c[2:, 1:-1] + c[1:-1, :-2] + c[1:-1, 2:])
        gp.end(f"step{i}", c)
        if i % 2:
            hist.append(c[::37, ::41] * 1)
    return {"c": c, "hist": tuple(hist), "sum": c.sum(axis=1)}


@pytest.mark.parametrize("source", ["computed", "pending"])
def test_jacobi(source):
    _, notes = run(p_jacobi, floats(seed=25), steps=6, source=source)
    # the stencil reads the array it writes (partially overlapping views):
    # NumPy's semantics are a copy of the right-hand side first; the right
    # side is a fresh (pending) array, so the write itself is lazy
    for i in range(6):
        assert_captured(notes[f"step{i}"], f"Jacobi step {i}")


def p_heat_views(gp, u, steps):
    """Jacobi-like update written with in-place operators on views."""
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        inner = u[1:-1, 1:-1]
        inner += 0.1 * lap
        u[0, :] = u[1, :]
        u[-1, :] = u[-2, :]
        u[:, 0] = u[:, 1]
        u[:, -1] = u[:, -2]
    return {"u": u}


def test_heat_in_place_views():
    run(p_heat_views, floats(seed=26), steps=5)


# =====================================================================================
# 3. Indexing
# =====================================================================================

def p_gather(gp, a, idx, case, source):
    x = a if source == "computed" else a * 2 - 1
    old = x * 1
    if case == "rows":
        r = x[idx]
    elif case == "cols":
        r = x[:, idx[:150] % 300]
    elif case == "negative":
        r = x[-(idx % 400) - 1]
    elif case == "2d_index":
        r = x.ravel()[idx.reshape(50, -1)]
    elif case == "pair":
        r = x[idx[:, None] % 400, (idx[None, :100] * 7) % 300]
    elif case == "list":
        r = x[[0, 5, -1, 7, 7, 399]]
    elif case == "mixed_slice":
        r = x[::-2, idx[:20] % 300]
    elif case == "strided_source":
        r = lay(x, "negative")[idx % 200, 3:]
    elif case == "out_of_bounds":
        r = x[np.array([0, 400])]
    elif case == "out_of_bounds_negative":
        r = x[:, np.array([-301, 2])]
    elif case == "bool_rows":
        r = x[x[:, 0] > 0]
    elif case == "bool_full":
        r = x[x > 1]
    elif case == "bool_pending_mask":
        r = x[(x * 3 - 1) > 2]
    elif case == "bool_wrong_shape":
        r = x[np.ones(399, bool)]
    elif case == "bool_of_view":
        v = lay(x, "transposed")
        r = v[v < 0]
    else:
        raise ValueError(case)
    return {"r": r, "r2": r * 2 + 1, "shares": np.shares_memory(r, x), "x": x, "old": old}


GATHER_CASES = ["rows", "cols", "negative", "2d_index", "pair", "list", "mixed_slice", "strided_source",
                "out_of_bounds", "out_of_bounds_negative", "bool_rows", "bool_full", "bool_pending_mask",
                "bool_wrong_shape", "bool_of_view"]


@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("case", GATHER_CASES)
def test_gather(case, source):
    idx = ints(shape=(1000,), seed=27, lo=0, hi=400)
    expect = "IndexError" if case in ("out_of_bounds", "out_of_bounds_negative", "bool_wrong_shape") else None
    run(p_gather, floats(seed=28), idx, case=case, source=source, expect=expect)


def p_scatter(gp, a, b, idx, case, source):
    x = a if source == "computed" else a * 2 - 1
    old = x * 3
    if case == "mask_scalar":
        x[x > 0] = 0.5
    elif case == "mask_values":
        m = b > 0
        x[m] = b[m] * 2
    elif case == "mask_pending":
        x[(x * b) < 1] = -1
    elif case == "mask_rows":
        x[b[:, 0] > 0] = b[0]
    elif case == "int_rows":
        x[idx % 400] = b[idx % 400] + 1
    elif case == "int_duplicate_iadd":
        x[idx % 400] += 1  # NumPy: duplicates are written once
    elif case == "int_view_target":
        v = x[::-1, ::2]
        v[idx[:50] % 400, 3] = 42.0
    elif case == "int_out_of_bounds":
        x[np.array([1, 400])] = 1.0
    elif case == "mask_view_target":
        v = lay(x, "strided")
        v[v > 0] = 0
    elif case == "add_at":
        np.add.at(x, (idx % 400, idx % 300), 1.0)
    elif case == "aliasing_gather_scatter":
        x[idx % 400] = x[(idx + 1) % 400]
    elif case == "flat":
        x.flat[idx * 97] = b.ravel()[:1000]
    elif case == "flat_slice":
        x.flat[5:60000:7] = -3.0
    elif case == "putmask":
        np.putmask(x, b > 1, b * 10)
    elif case == "place":
        np.place(x[::-1], b[::-1] < 0, [1.0, 2.0, 3.0])
    elif case == "after_lazy_write":  # a NumPy scatter into memory with a pending lazy write
        x[1:-1, ::2] = b[1:-1, ::2] * 2
        x[idx % 400, 7] = 1.5
    elif case == "lazy_write_after":
        x[x > 0] = 0
        x[::3] = b[::3] + 1
    return {"x": x, "old": old, "after": x * 2}


SCATTER_CASES = ["mask_scalar", "mask_values", "mask_pending", "mask_rows", "int_rows", "int_duplicate_iadd",
                 "int_view_target", "int_out_of_bounds", "mask_view_target", "add_at", "aliasing_gather_scatter",
                 "flat", "flat_slice", "putmask", "place", "after_lazy_write", "lazy_write_after"]


@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("case", SCATTER_CASES)
def test_scatter(case, source):
    idx = ints(shape=(1000,), seed=29, lo=0, hi=1000)
    run(p_scatter, floats(seed=30), floats(seed=31), idx, case=case, source=source,
        expect="IndexError" if case == "int_out_of_bounds" else None)


def p_take(gp, a, idx, case, source):
    x = a if source == "computed" else a * 3 + 2
    if case == "flat":
        r = np.take(x, idx)
    elif case == "axis0":
        r = np.take(x, idx % 400, axis=0)
    elif case == "axis1":
        r = np.take(x, idx[:200] % 300, axis=1)
    elif case == "wrap":
        r = np.take(x, idx * 1000 - 7, mode="wrap")
    elif case == "clip":
        r = np.take(x, idx * 1000 - 7, mode="clip")
    elif case == "raise":
        r = np.take(x, np.array([0, 120000]))
    elif case == "method":
        r = x.take(idx % 300, axis=-1)
    elif case == "along_axis":
        order = np.argsort(x, axis=1)
        r = np.take_along_axis(x, order, axis=1)
    elif case == "along_axis0":
        order = np.argsort(x[:, ::-1], axis=0)
        r = np.take_along_axis(x[:, ::-1], order, axis=0)
    elif case == "along_axis_oob":
        r = np.take_along_axis(x, np.full((400, 1), 300), axis=1)
    elif case == "out":
        o = np.empty((1000,), x.dtype)
        r = np.take(x, idx, out=o)
        return {"r": r, "o": o, "is_out": r is o}
    return {"r": r, "r2": r - 1, "x": x}


@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("case", ["flat", "axis0", "axis1", "wrap", "clip", "raise", "method", "along_axis",
                                  "along_axis0", "along_axis_oob", "out"])
def test_take(case, source):
    idx = ints(shape=(1000,), seed=32, lo=0, hi=120000)
    run(p_take, floats(seed=33), idx, case=case, source=source,
        expect="IndexError" if case in ("raise", "along_axis_oob") else None)


def p_nonzero_select(gp, a, b, case):
    if case == "nonzero":
        return {"nz": np.nonzero(a > 5), "nz_pending_view": np.nonzero((a * b)[::-1, ::3] > 1),
                "method": (a < -12).nonzero()}
    if case == "flatnonzero":
        return {"f": np.flatnonzero(a > 3), "g": np.flatnonzero((a + b)[:, ::-2] < 0), "argwhere": np.argwhere(a > 25)}
    if case == "select":
        r = np.select([a > 5, a < -5, b > 0], [a * 2, b, a + b], default=-1.0)
        r2 = np.select([lay(a, "negative") > 0], [lay(b, "transposed")], default=lay(a, "strided"))
        return {"r": r, "r2": r2, "r3": r * 1}
    if case == "where_one_arg":
        return {"w": np.where(a[::2] > 0)}
    raise ValueError(case)


@pytest.mark.parametrize("case", ["nonzero", "flatnonzero", "select", "where_one_arg"])
def test_nonzero_and_select(case):
    run(p_nonzero_select, floats(seed=34), floats(seed=35), case=case)


def p_join(gp, a, b, case):
    p = a * 2 + 1  # pending
    v = lay(b, "negative")
    if case == "concatenate":
        r = np.concatenate([a, p, b[::-1]])
        r1 = np.concatenate([lay(a, "strided"), v, p[:200, :150]], axis=1)
        r2 = np.concatenate([a, b], axis=None)
    elif case == "stack":
        r = np.stack([a, p])
        r1 = np.stack([lay(a, "transposed"), v, lay(b, "broadcast")], axis=-1)
        r2 = np.stack([p[0], a[1]], axis=1)
    elif case == "hstack":
        r = np.hstack([a, p[:, ::-1]])
        r1 = np.hstack([a[0], p[0], v[0]])
        r2 = np.column_stack([a[:, 0], p[:, 1]])
    elif case == "vstack":
        r = np.vstack([a, p, v.T.reshape(-1, 300)[:10]])
        r1 = np.vstack([a[0], p[1]])
        r2 = np.vstack([a[::-1], b])
    elif case == "shape_error":
        r = np.concatenate([a, b[:, :-1]])
        r1 = r2 = r
    elif case == "out":
        o = np.empty((800, 300))
        r = np.concatenate([p, b], out=o)
        r1 = o
        r2 = np.array(r is o)
    return {"r": r, "r1": r1, "r2": r2, "use": r * 2 - 1, "p": p}


@pytest.mark.parametrize("case", ["concatenate", "stack", "hstack", "vstack", "shape_error", "out"])
def test_join(case):
    run(p_join, floats(seed=36), floats(seed=37), case=case, expect="ValueError" if case == "shape_error" else None)


def p_pad_roll_diff(gp, a, case, source):
    x = a if source == "computed" else a * 2 + 0.5
    if case == "pad_constant":
        r = np.pad(x, 3)
        r1 = np.pad(x[::-1, ::2], ((1, 2), (0, 5)), constant_values=(-1.5, 2.5))
    elif case == "pad_edge":
        r = np.pad(x, ((2, 1), (4, 0)), mode="edge")
        r1 = np.pad(x.T, 2, mode="edge")
    elif case == "pad_reflect":
        r = np.pad(x, 5, mode="reflect")
        r1 = np.pad(x[::3], (2, 3), mode="wrap")
    elif case == "roll":
        r = np.roll(x, 7)
        r1 = np.roll(x, (-3, 11), axis=(0, 1))
    elif case == "roll_axis":
        r = np.roll(x, -5, axis=1)
        r1 = np.roll(lay(x, "negative"), 400, axis=0)
    elif case == "diff":
        r = np.diff(x)
        r1 = np.diff(x, n=2, axis=0)
    elif case == "diff_prepend":
        r = np.diff(x[:, ::-1], axis=1, prepend=0.0)
        r1 = np.diff(x.ravel()[::3], n=3)
    r_use = r * 2 - 1
    return {"r": r, "r1": r1, "r_use": r_use, "r1_use": r1 + r1, "x": x}


@pytest.mark.parametrize("source", ["computed", "pending"])
@pytest.mark.parametrize("case", ["pad_constant", "pad_edge", "pad_reflect", "roll", "roll_axis", "diff",
                                  "diff_prepend"])
def test_pad_roll_diff(case, source):
    run(p_pad_roll_diff, floats(seed=38), case=case, source=source)


def p_outer(gp, m, case):
    x, y = m[:, 3], m[5]  # 400 and 300 elements: views of a large (grumpy) array
    if case == "computed":
        gp.begin()
        r = np.outer(x, y)
        gp.end("outer", r)
    elif case == "pending":
        gp.begin()
        r = np.outer((m * 2)[:, 3], (m - 1)[5])  # views of pending arrays
        gp.end("outer", r)
    elif case == "views":
        gp.begin()
        r = np.outer(x[::-2], y[1::3])
        gp.end("outer", r)
    elif case == "2d_operand":
        r = np.outer(m[:40, ::-1], y[:20])
    elif case == "int":
        r = np.outer((x * 10).astype(np.int64), (y * 10).astype(np.int32))
    return {"r": r, "use": r + 1, "m": m}


@pytest.mark.parametrize("case", ["computed", "pending", "views", "2d_operand", "int"])
def test_outer(case):
    _, notes = run(p_outer, floats(seed=39), case=case)
    if "outer" in notes:  # "np.outer is a fused broadcast multiply"
        assert_captured(notes["outer"], f"np.outer ({case})")


# =====================================================================================
# 4. Random basic indexing (hypothesis)
# =====================================================================================

SHAPE3 = (40, 50, 60)


@st.composite
def basic_index(draw):
    """A basic index tuple for SHAPE3: slices with random (possibly
    negative / out-of-range) start, stop, step, ints, newaxis, Ellipsis."""
    items = []
    used = 0
    has_ellipsis = False
    n = draw(st.integers(0, 5))
    for _ in range(n):
        kind = draw(st.sampled_from(["slice", "slice", "slice", "int", "newaxis", "ellipsis"]))
        if kind in ("slice", "int") and used >= 3:
            kind = "newaxis"
        if kind == "ellipsis" and has_ellipsis:
            kind = "newaxis"
        if kind == "slice":
            bound = st.one_of(st.none(), st.integers(-70, 70))
            step = draw(st.one_of(st.none(), st.integers(-5, 5).filter(lambda s: s != 0)))
            items.append(slice(draw(bound), draw(bound), step))
            used += 1
        elif kind == "int":
            items.append(draw(st.integers(-40, 39)))  # in range on every axis
            used += 1
        elif kind == "newaxis":
            items.append(None)
        else:
            items.append(Ellipsis)
            has_ellipsis = True
    return tuple(items)


def p_random_index(gp, a, key, source):
    if source == "computed":
        x = a
    elif source == "computed_transposed":  # a non-contiguous view of a computed array
        x = a.transpose(2, 0, 1)[::-1]
    else:
        x = a * 2 + 1
    old = x * 3
    v = x[key]
    r = v * 2 - 1 if isinstance(v, np.ndarray) else np.float64(v) * 2 - 1
    out = {"a": a, "x": x, "old": old, "r": r, "is_array": isinstance(v, np.ndarray)}
    if isinstance(v, np.ndarray):
        out["shares"] = np.shares_memory(v, x)
        out["base_is_x"] = v.base is x
        w = v * 0.5 + 1
        if v.size and v.flags.writeable:
            v += 1
            out["v"] = v
        out["w"] = w
    x[key] = -7.5
    out["after"] = x + 1
    return out


@settings(max_examples=int(os.environ.get("VWI_EXAMPLES", "80")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=basic_index(), source=st.sampled_from(["computed", "pending", "computed_transposed"]))
def test_random_basic_index(key, source):
    run(p_random_index, floats(shape=SHAPE3, seed=41), key=key, source=source)


if IN_WORKER:
    _worker_main()
