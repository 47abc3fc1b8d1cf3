"""Nothing NumPy code can observe changes under grumpy except speed: NumPy's
public namespace keeps its classes (identity, isinstance, type() is), its
functions keep their signatures, docs and names, and grumpy arrays pickle as
plain numpy.ndarray objects that load where grumpy is not installed.

Each check runs in fresh processes: the walk of NumPy's namespace before
and after enable() cannot be done in this (already enabled) process."""

import json
import operator
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import grumpy
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _python(src, env_extra=None):
    env = gpcheck.subprocess_env()
    env["PYTHONPATH"] = ROOT
    env["GRUMPY_CACHE_DIR"] = "off"
    env.update(env_extra or {})
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_transp_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(src))
    r = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


WALK = """
import inspect, json, sys
import numpy as np

MODULES = ["", "random", "linalg", "fft", "lib", "ma", "polynomial", "testing", "char", "rec", "dtypes",
           "exceptions"]


def describe(obj):
    d = {"type": type(obj).__module__ + "." + type(obj).__qualname__ if not hasattr(obj, "__wrapped__")
         else "<callable>"}
    if isinstance(obj, type):
        d["id"] = id(obj)
        d["mro"] = [c.__module__ + "." + c.__qualname__ for c in obj.__mro__]
    elif callable(obj):
        d["name"] = getattr(obj, "__name__", None)
        d["doc"] = getattr(obj, "__doc__", None)
        try:
            d["sig"] = str(inspect.signature(obj))
        except (TypeError, ValueError):
            d["sig"] = None
    return d


def walk():
    out = {}
    for m in MODULES:
        mod = np if not m else getattr(np, m)
        for name in sorted(dir(mod)):
            if name.startswith("_"):
                continue
            try:
                obj = getattr(mod, name)
            except Exception:
                continue
            if inspect.ismodule(obj):
                continue
            out[m + "." + name] = describe(obj)
    rs, gen = np.random.RandomState(0), np.random.default_rng(0)
    out["instances"] = {
        "global_rs_isinstance": isinstance(np.random.mtrand._rand, np.random.RandomState),
        "rs_type_is": type(rs) is np.random.RandomState,
        "gen_type_is": type(gen) is np.random.Generator,
        "gen_isinstance": isinstance(gen, np.random.Generator),
        "bitgen_type_is": type(gen.bit_generator) is np.random.PCG64,
        "issubclass": issubclass(np.random.RandomState, np.random.mtrand.RandomState),
        "ndarray_is_base": np.ndarray is np._core.multiarray.ndarray,
    }
    return out


before = walk()
if sys.argv[-1] == "enable":
    import grumpy
    grumpy.enable()
after = walk()
# objects made before enable() keep their classes too
print(json.dumps({"before": before, "after": after}))
"""


def test_numpy_namespace_is_unchanged_by_enable():
    """Every public name of numpy and its main submodules: classes are the
    same objects (same id, same MRO), callables keep __name__, __doc__ and
    inspect.signature; NumPy's random classes keep their identity for
    objects made before and after enable()."""
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_walk_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(WALK)
    env = gpcheck.subprocess_env()
    env["PYTHONPATH"] = ROOT
    env["GRUMPY_CACHE_DIR"] = "off"
    r = subprocess.run([sys.executable, path, "enable"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout)
    before, after = res["before"], res["after"]
    assert len(before) > 600
    assert set(before) == set(after)
    diffs = []
    for name, d in before.items():
        a = after[name]
        for key in d:
            if key == "type":
                continue  # a creation wrapper is a different callable type
            if d[key] != a.get(key):
                diffs.append((name, key, str(d[key])[:80], str(a.get(key))[:80]))
    assert not diffs, diffs[:20]
    assert all(after["instances"].values()), after["instances"]


def test_check_random_state_pattern_accepts_numpys_global_state():
    """scikit-learn's check_random_state(None) returns np.random.mtrand._rand
    after checking isinstance(..., np.random.RandomState)."""
    out = _python("""
        import grumpy; grumpy.enable()
        import numpy as np
        seed = np.random.mtrand._rand
        print(isinstance(seed, np.random.RandomState), isinstance(np.random.RandomState(3), np.random.RandomState),
              type(np.random.default_rng(1)) is np.random.Generator,
              type(np.random.Generator(np.random.PCG64(1))) is np.random.Generator)
    """)
    assert out.split() == ["True"] * 4


def test_random_draws_are_grumpy_arrays_from_numpys_own_classes():
    """The draws of every Generator and RandomState (not only the legacy
    module functions) are grumpy arrays when large, so a Monte Carlo
    program's arithmetic on them is captured and fused; the values are
    NumPy's stream, the classes NumPy's own, out= arrays returned as given,
    small draws plain, and the methods keep their names, docs and binding."""
    with grumpy.disabled():
        ref = np.random.default_rng(5).standard_normal(300_000)
        ref_rs = np.random.RandomState(7).randint(0, 9, size=200_000)
    assert type(ref) is np.ndarray
    rng = np.random.default_rng(5)
    assert type(rng) is np.random.Generator
    a = rng.standard_normal(300_000)
    assert type(a) is grumpy.ndarray
    np.testing.assert_array_equal(np.asarray(a), ref)
    r = np.random.RandomState(7).randint(0, 9, size=200_000)
    assert type(r) is grumpy.ndarray
    np.testing.assert_array_equal(np.asarray(r), ref_rs)
    before = grumpy.stats()
    s = float((a * 2.0 + 1.0).sum())
    after = grumpy.stats()
    assert after["ops_captured"] >= before["ops_captured"] + 3  # multiply, add, sum: one map-reduce
    assert after["kernels_launched"] > before["kernels_launched"]
    assert s == pytest.approx(float((ref * 2.0 + 1.0).sum()), rel=1e-12)
    # small draws stay plain, scalars stay scalars
    assert type(rng.normal(size=10)) is np.ndarray
    assert isinstance(rng.normal(), float)
    # out= arrays, plain or grumpy, are returned as given
    y = np.ndarray(200_000)
    assert type(y) is np.ndarray and rng.random(out=y) is y
    z = np.empty(200_000)
    assert type(z) is grumpy.ndarray and rng.standard_normal(out=z) is z
    # Generator.permuted requires `type(out) is np.ndarray` (NumPy's
    # numpy.random tests under capture: "out must be a numpy array")
    with grumpy.disabled():
        want = np.random.default_rng(9).permuted(np.arange(300_000).reshape(300, 1000), axis=1)
    x = np.arange(300_000).reshape(300, 1000) * 1
    p = np.empty_like(x)
    assert type(x) is type(p) is grumpy.ndarray
    assert np.random.default_rng(9).permuted(x, axis=1, out=p) is p
    np.testing.assert_array_equal(np.asarray(p), want)
    with pytest.raises(ValueError, match="same shape"):
        rng.permuted(x, out=np.empty((5, 5), dtype=x.dtype))
    # the methods look and bind as NumPy's
    assert np.random.Generator.integers.__name__ == "integers"
    assert "Return random integers" in rng.integers.__doc__
    assert rng.integers.__self__ is rng
    # a bound draw method compares, hashes and pickles as NumPy's
    assert rng.normal == rng.normal and {rng.normal: 1}[rng.normal] == 1
    f = pickle.loads(pickle.dumps(rng.normal))
    assert f.__self__ is not rng and f.__name__ == "normal"
    assert pickle.loads(pickle.dumps(np.zeros)) is np.zeros
    # the generator pickles as NumPy's and continues the same stream
    g2 = pickle.loads(pickle.dumps(rng))
    assert type(g2) is np.random.Generator
    np.testing.assert_array_equal(np.asarray(g2.random(1000)), np.asarray(rng.random(1000)))


def _loads_without_grumpy(blob_path):
    """Loads a pickle in a process where importing grumpy fails."""
    return _python(f"""
        import sys, pickle
        sys.modules["grumpy"] = None          # as if grumpy were not installed
        import numpy as np
        with open({blob_path!r}, "rb") as f:
            x = pickle.load(f)
        print(type(x).__module__, type(x).__name__, x.dtype, x.shape, float(np.asarray(x, dtype=float).sum()))
    """)


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("pending", [False, True])
def test_grumpy_arrays_pickle_as_plain_ndarrays(tmp_path, protocol, pending):
    x = np.copy(np.linspace(0.0, 1.0, 200_000))
    y = x * 2.0 + 1.0 if pending else np.asarray(x * 2.0 + 1.0)
    assert type(y) is grumpy.ndarray
    blob = pickle.dumps(y, protocol=protocol)
    assert b"grumpy" not in blob
    z = pickle.loads(blob)
    assert type(z) is np.ndarray
    np.testing.assert_array_equal(z, np.linspace(0.0, 1.0, 200_000) * 2.0 + 1.0)
    p = tmp_path / "a.pkl"
    p.write_bytes(blob)
    out = _loads_without_grumpy(str(p)).split()
    assert out[:4] == ["numpy", "ndarray", "float64", "(200000,)"]
    assert float(out[4]) == pytest.approx(float(np.asarray(z).sum()), rel=1e-12)


def test_views_and_containers_pickle_without_grumpy(tmp_path):
    import copy

    x = np.copy(np.arange(300_000, dtype=np.float64).reshape(600, 500))
    objs = {"t": (x * 1.5).T, "s": x[::3, 1::2] + 1.0, "l": [x * 2.0, {"k": x[5]}]}
    blob = pickle.dumps(objs, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"grumpy" not in blob
    back = pickle.loads(blob)
    np.testing.assert_array_equal(back["t"], (np.arange(300_000.0).reshape(600, 500) * 1.5).T)
    np.testing.assert_array_equal(back["s"], np.arange(300_000.0).reshape(600, 500)[::3, 1::2] + 1.0)
    assert type(back["l"][0]) is np.ndarray
    d = copy.deepcopy(objs)
    np.testing.assert_array_equal(np.asarray(d["s"]), back["s"])
    p = tmp_path / "b.pkl"
    p.write_bytes(pickle.dumps(x * 3.0))
    assert _loads_without_grumpy(str(p)).split()[:2] == ["numpy", "ndarray"]


def test_multiprocessing_sends_grumpy_arrays(tmp_path):
    """A spawn-context worker (a fresh interpreter) receives the arrays."""
    out = _python("""
        import grumpy; grumpy.enable()
        import multiprocessing as mp, numpy as np
        def total(a):
            return type(a).__name__, float(a.sum())
        if __name__ == "__main__":
            x = np.copy(np.linspace(0.0, 1.0, 300_000))
            with mp.get_context("spawn").Pool(1) as pool:
                print(pool.map(total, [x * 2.0, x + 1.0]))
    """)
    assert "ndarray" in out


def test_joblib_dump_loads_without_grumpy(tmp_path):
    joblib = pytest.importorskip("joblib")
    x = np.copy(np.linspace(0.0, 1.0, 300_000))
    p = tmp_path / "c.joblib"
    joblib.dump({"y": x * 2.0}, p)
    out = _python(f"""
        import sys
        sys.modules["grumpy"] = None
        import joblib, numpy as np
        d = joblib.load({str(p)!r})
        print(type(d["y"]).__name__, float(d["y"].sum()))
    """).split()
    assert out[0] == "ndarray"
    assert float(out[1]) == pytest.approx(300_000.0, rel=1e-12)


def test_joblib_memory_maps_grumpy_arrays_as_numpys(tmp_path):
    """joblib writes ndarrays in its own format only for ``type(a) in
    (ndarray, matrix, memmap)``, and Parallel memory-maps large arguments
    by reducers keyed by type: a grumpy array was pickled whole, so
    ``joblib.load(mmap_mode="r")`` gave a writeable in-memory copy and a
    worker could write its argument (scikit-learn's test_validation under
    capture).  Now both are NumPy's: read-only memmaps."""
    joblib = pytest.importorskip("joblib")
    x = np.copy(np.linspace(0.0, 1.0, 300_000))
    y = x * 2.0
    assert type(x) is grumpy.ndarray and grumpy.is_pending(y)
    p = tmp_path / "m.joblib"
    joblib.dump({"x": x, "y": y}, p)
    d = joblib.load(p, mmap_mode="r")
    for k, ref in (("x", x), ("y", y)):
        assert type(d[k]) is np.memmap and not d[k].flags.writeable
        np.testing.assert_array_equal(d[k], ref)

    def write(a):
        try:
            a[0] = 5.0
            return "written"
        except ValueError as e:
            return str(e)

    got = joblib.Parallel(n_jobs=2, max_nbytes="1M")(joblib.delayed(write)(a) for a in (x, y))
    assert got == ["assignment destination is read-only"] * 2
    assert x[0] == 0.0


def test_joblib_hash_of_a_grumpy_array_is_numpys():
    """joblib.hash (joblib.Memory's cache key) hashes an array's class with
    its bytes: a grumpy array's hash was not NumPy's (a printed value
    differed; a cache NumPy filled missed)."""
    joblib = pytest.importorskip("joblib")
    x = np.copy(np.linspace(0.0, 1.0, 300_000))
    y = x * 2.0
    assert type(x) is grumpy.ndarray and grumpy.is_pending(y)
    got = joblib.hash([y, x[::2], {"t": y.reshape(600, 500).T}])
    with grumpy.disabled():
        xs = np.linspace(0.0, 1.0, 300_000)
        ys = xs * 2.0
        assert type(ys) is np.ndarray
        want = joblib.hash([ys, xs[::2], {"t": ys.reshape(600, 500).T}])
    assert got == want


def test_a_function_numpy_computes_gets_the_callers_containers_themselves():
    """A NumPy function grumpy leaves to NumPy gets a list or tuple argument
    with no grumpy array inside as the same object: np.savetxt to a list
    subclass with a write method wrote into a plain copy of it, which lost
    the method ("fname must be a string or file handle", NumPy's
    test_io::test_custom_writer under capture)."""

    class CustomWriter(list):
        def write(self, text):
            self.extend(text.split(b"\n"))

    a = np.arange(90_000.0).reshape(300, 300)
    assert type(a) is grumpy.ndarray
    w = CustomWriter()
    np.savetxt(w, a * 2.0)
    with grumpy.disabled():
        ref = CustomWriter()
        np.savetxt(ref, np.arange(90_000.0).reshape(300, 300) * 2.0)
    assert len(w) == 600 and w == ref
    rf = pytest.importorskip("numpy.lib.recfunctions")
    x = np.arange(20_000.0)
    assert type(x) is grumpy.ndarray
    assert rf.stack_arrays((x,)) is x  # NumPy hands back the array it was given, inside a tuple
    assert rf.stack_arrays([x]) is x


def test_result_of_a_call_numpy_computes_owns_its_memory():
    """A ufunc grumpy hands to NumPy (a non-native byte-order operand):
    its result owns its memory, no .base, as NumPy's (numpy's
    test_numeric.TestClip.test_type_cast_06 compares the flags)."""
    a0 = np.random.default_rng(2).standard_normal((1000, 100))
    a = np.copy(a0)
    m_s = (-0.5 * np.ones(a0.shape)).astype(np.dtype(">f8"))
    for got, want in [(a.clip(m_s, 1.0), a0.clip(m_s, 1.0)), (np.maximum(a, m_s), np.maximum(a0, m_s)),
                      (np.add(a, m_s), np.add(a0, m_s))]:
        assert got.flags == want.flags
        assert got.base is None
        np.testing.assert_array_equal(np.asarray(got), want)


def test_a_function_numpy_computes_returns_the_callers_positional_out():
    """A NumPy function grumpy hands to NumPy with a positional out array
    returns that very array, as NumPy does (``np.outer(a, b, out) is out``);
    an array NumPy returns as it was given is the caller's object too."""
    u = np.linspace(0.0, 1.0, 3000)
    out = np.empty((3000, 3000))
    assert isinstance(out, grumpy.ndarray)
    before = grumpy.stats()["fallbacks"].get("outer", 0)
    r = np.outer(u, u, out)
    assert grumpy.stats()["fallbacks"].get("outer", 0) == before + 1  # positional out: NumPy's call
    assert r is out
    np.testing.assert_array_equal(np.asarray(out), np.multiply.outer(np.asarray(u), np.asarray(u)))
    c = np.empty(3000)
    assert np.clip(u, 0.2, 0.8, c) is c
    np.testing.assert_array_equal(np.asarray(c), np.clip(np.asarray(u), 0.2, 0.8))


def test_a_masked_array_of_a_grumpy_array_prints_and_behaves_as_numpys():
    """np.ma.MaskedArray takes its base class from its data (data._baseclass,
    else type(data)) and prints it: a masked array of a large array (a
    grumpy one) was a "masked_ndarray(...)" whose .data was a grumpy array.
    grumpy.ndarray names ndarray as its _baseclass, so it is NumPy's
    masked_array with a plain .data, printed as NumPy prints it.  One built
    from a list likewise: np.array(..., subok=True), which np.ma calls,
    keeps NumPy's class (a grumpy array passed in stays grumpy)."""
    src = """
        import numpy as np
        a = np.arange(300000.0)
        m = np.ma.masked_array(a, mask=a % 7 == 0)
        r = m * 2 + 1
        print(type(a).__module__, type(m.data).__module__, type(r.data).__module__)
        print(repr(m[:3]))
        print(repr(r))
        print(str(np.ma.masked_where(a > 5, a)[:8]), float(r.sum()), m.mean())
        from_list = np.ma.array(list(range(300000)), mask=[i % 5 == 0 for i in range(300000)])
        print(repr(from_list), type(from_list.data).__module__)
        print(type(np.array(a, subok=True)).__module__)
    """
    numpy_out = _python(src)
    grumpy_out = _python(src, {"GRUMPY": "1"})
    assert numpy_out.splitlines()[0] == "numpy numpy numpy"
    assert grumpy_out.splitlines()[0] == "grumpy numpy numpy"  # a is grumpy's; the masked data NumPy's class
    assert grumpy_out.splitlines()[1:-1] == numpy_out.splitlines()[1:-1]
    assert "masked_array(data=[--, 1.0, 2.0]" in grumpy_out
    assert grumpy_out.splitlines()[-1] == "grumpy"  # a grumpy array passes subok=True as itself


def test_scipy_fft_real_transforms_take_grumpy_arrays():
    """scipy.fft.dct of an integer array passes the float64 copy it makes
    (a grumpy array) to pocketfft's pybind11 binding as its output, which
    takes no ndarray subclass there: RuntimeError "unexpected data type
    for output array" under grumpy (822 of scipy.fft's tests at every
    size).  The binding's functions get plain views (grumpy._patch_pocketfft)."""
    sfft = pytest.importorskip("scipy.fft")
    x = np.arange(100_000) % 7
    y = np.linspace(0.0, 1.0, 100_000) * 2.0
    got = [sfft.dct(x), sfft.idst(x, type=3), sfft.dctn(y.reshape(200, 500)), sfft.rfft(y)]
    with grumpy.disabled():
        xp, yp = np.arange(100_000) % 7, np.linspace(0.0, 1.0, 100_000) * 2.0
        want = [sfft.dct(xp), sfft.idst(xp, type=3), sfft.dctn(yp.reshape(200, 500)), sfft.rfft(yp)]
    for g, w in zip(got, want):
        assert np.array_equal(np.asarray(g), np.asarray(w))


FFT_IMPORTED_FIRST = """
import numpy as np, scipy.fft
import grumpy
grumpy.enable()
x = np.arange(300_000) % 7
got = [scipy.fft.dct(x), scipy.fft.idstn(x.reshape(600, 500), type=3), scipy.fft.rfft(x * 0.5)]
with grumpy.disabled():
    xp = np.arange(300_000) % 7
    want = [scipy.fft.dct(xp), scipy.fft.idstn(xp.reshape(600, 500), type=3), scipy.fft.rfft(xp * 0.5)]
print(type(x).__module__, all(np.array_equal(np.asarray(g), w) for g, w in zip(got, want)))
"""


def test_scipy_fft_imported_before_enable_takes_grumpy_arrays():
    """scipy.fft's real transforms bind pocketfft's functions in
    functools.partial objects when imported: with scipy.fft imported
    before grumpy.enable(), those partials are made again around the
    wrapped functions (grumpy._rebind_partials); before, dct of a grumpy
    integer array raised RuntimeError as in the test above."""
    pytest.importorskip("scipy.fft")
    out = _python(FFT_IMPORTED_FIRST, {"GRUMPY_MIN_BYTES": "65536"})
    assert out.split() == ["grumpy", "True"], out


def test_a_sparse_product_with_an_object_whose_ndim_is_a_method_is_scipys():
    """The n-D product patch asked `other.ndim < 3` of any operand; an
    object whose `ndim` is a method (scipy.sparse's
    test_binop_custom_type_with_shape) raised TypeError there, where SciPy
    hands the product to the object's __rmatmul__."""
    sparse = pytest.importorskip("scipy.sparse")

    class WithShape:
        def __init__(self, shape):
            self._shape = shape

        def shape(self):
            return self._shape

        def ndim(self):
            return len(self._shape)

        def __rmatmul__(self, other):
            return "rmatmul"

    a = sparse.coo_array([[1], [2], [3]])
    assert a @ WithShape((1, 3)) == "rmatmul"


def test_asarray_of_a_grumpy_view_of_a_plain_array_is_the_array_itself():
    """np.asarray(x), np.array(x, copy=False) and x.astype(x.dtype,
    copy=False) of a plain ndarray x are x; of a grumpy array grumpy gives
    the array too.  NumPy's plain view of a grumpy view of a *plain* array
    has that plain array as its base (NumPy collapses the base chain), and
    the view was returned wrapped as a new object: scipy.sparse's
    coo.reshape, which passes its data through np.array(data, copy=False),
    failed `y.data is x.data` (13 tests under capture)."""
    with grumpy.disabled():
        p = np.arange(300_000, dtype=np.float64)
    assert type(p) is np.ndarray and p.flags.owndata
    g = p.view(grumpy.ndarray)
    assert type(g) is grumpy.ndarray and g.base is p
    assert np.asarray(g) is g
    assert np.array(g, copy=False) is g
    assert np.array(g, copy=None) is g
    assert g.astype(np.float64, copy=False) is g
    assert np.asarray(g[::2]) is not g  # another view stays another object
    for x in (g, grumpy._ext().as_grumpy(np.arange(300_000, dtype=np.float64))):
        assert np.frombuffer(x) is not x  # a new array in NumPy too (was x itself)
    sparse = pytest.importorskip("scipy.sparse")
    x = sparse.coo_array(np.arange(24.0).reshape(4, 6))
    assert x.reshape((6, 4)).data is x.data
    assert x.reshape((6, 4), copy=False).data is x.data


def test_bases_and_identities_of_views_numpy_made_are_numpys():
    """What NumPy's test_multiarray and test_einsum assert of views (found
    by running them under capture): a view NumPy returns has the .base
    NumPy would give it (its chain collapsed to the first owner, past the
    plain and grumpy views between), and np.array(obj) of an object whose
    __array__ gives an array is that array."""
    a = np.arange(300_000).reshape(600, 500)
    assert type(a) is grumpy.ndarray
    for spec in ("...", "ij", "ji"):
        b = np.einsum(spec, a)  # a view NumPy makes of the plain view grumpy passes it
        assert b.base is a.base and np.shares_memory(a, b)
    d = np.arange(360_000).reshape(600, 600)
    assert np.einsum("ii->i", d).base is d.base
    raw = bytes(600_000)
    f = np.frombuffer(raw, dtype=np.float64)
    assert type(f) is grumpy.ndarray and f.base is raw
    m = memoryview(a)
    r = np.array(m, copy=None)
    assert type(r.base) is memoryview and r.base.obj is a

    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return a

    for copy in (True, None, False):
        assert np.array(ArrayLike(), copy=copy) is a
    assert np.asarray(ArrayLike()) is a

    class Temporary:  # __array__ gives a new array each time: held by the result alone
        def __array__(self, dtype=None, copy=None):
            return np.arange(300_000.0) * 2

    for _ in range(3):
        t = np.asarray(Temporary())
        np.testing.assert_array_equal(t[:5], [0.0, 2.0, 4.0, 6.0, 8.0])
    q = np.array(a, dtype=np.longlong, copy=None)  # int64 'l' seen as 'q': a view of a
    assert q.dtype.char == "q" and q.base is a.base


def test_an_operator_method_called_by_name_is_numpys_slot_alone():
    """x.__add__(y) called by name is NumPy's slot on (x, y); only the
    operator x + y gives a subclass of ndarray that overrides __radd__ its
    turn first (Python's binary_op1), which grumpy's slots emulate
    (reflected_first).  NumPy's test_ufunc_binop_interaction calls the
    methods (found running test_multiarray under capture)."""
    ns = {"__array_priority__": 1}
    for op in ("add", "sub", "mul", "truediv", "matmul", "pow"):
        ns[f"__{op}__"] = lambda s, o: "forward"
        ns[f"__r{op}__"] = lambda s, o: "reverse"
    MyType = type("MyType", (np.ndarray,), ns)
    obj = np.linspace(1.0, 2.0, 300_000).reshape(600, 500).view(MyType)
    arr = np.linspace(1.0, 2.0, 300_000).reshape(600, 500)
    assert type(arr) is grumpy.ndarray
    for op in ("add", "sub", "mul", "truediv", "pow"):
        r = getattr(arr, f"__{op}__")(obj)
        assert type(r) is MyType, op
        assert getattr(operator, op)(arr, obj) == "reverse", op
    assert type(arr.T[:50].__matmul__(obj)) is MyType and arr.T @ obj == "reverse"
    assert type(arr.__pow__(obj, None)) is MyType
    np.testing.assert_array_equal(arr.__sub__(arr), np.zeros((600, 500)))


def test_scipys_nd_sparse_product_with_a_grumpy_operand_is_computed():
    """SciPy's n-D COO product takes its dense path only for
    `other.__class__ is np.ndarray` and returned None for any subclass
    (scipy.sparse's test_nd_matmul tests under capture); grumpy gives it a
    plain view (grumpy/__init__.py _patch_sparse_coo).  Values as NumPy's
    product of the dense arrays, a list operand too, and the 2-D path keeps
    the operand's class as SciPy's own does."""
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(3)
    with grumpy.disabled():
        x = sparse.random_array((3, 40, 3000), density=0.3, rng=rng, dtype=np.int64)
        yv = rng.integers(-9, 9, 3000)
        ym = rng.integers(-9, 9, (3000, 50))
        want_v, want_m = x.toarray() @ yv, x.toarray() @ ym
    gm = grumpy._ext().as_grumpy(ym.copy())
    assert type(gm) is grumpy.ndarray  # 1.2 MB
    got = x @ gm
    assert got is not None
    np.testing.assert_array_equal(np.asarray(got), want_m)
    np.testing.assert_array_equal(np.asarray(x @ grumpy._ext().as_grumpy(np.array(yv))), want_v)
    np.testing.assert_array_equal(np.asarray(x @ list(yv)), want_v)
    x2 = sparse.coo_array(x.toarray()[0])
    r2 = x2 @ gm
    with grumpy.disabled():
        want2 = x.toarray()[0] @ ym
    np.testing.assert_array_equal(np.asarray(r2), want2)
