"""grumpy: unmodified NumPy programs, captured lazily, fused and JIT-compiled.

Entry points (see README.md):

    python -m grumpy.run script.py args...     # run a program with capture on
    GRUMPY=1 python script.py                  # the same through grumpy.pth
    grumpy-exec cmd ...                        # every Python process of a tree
    python -m grumpy.ab script.py              # A/B harness against plain NumPy
    pytest --grumpy [--grumpy-check] tests/    # a test session with capture on
    %load_ext grumpy, %%grumpy                 # IPython / Jupyter

From Python, ``grumpy.enable()`` turns capture on for the process; it must
run before the program creates its arrays.  ``grumpy.stats()`` returns the
counters.  Everything here runs once per process; the per-operation work is
in the C extension ``grumpy._grumpy``.

``grumpy.config(**settings)`` sets what the GRUMPY_* variables set (README,
"Environment variables"); every GRUMPY_* variable is checked when capture
starts (``grumpy._config``).
"""

import atexit
import os
import sys

from . import _config

__version__ = "0.1.0"  # pyproject.toml's version (tests/test_config.py checks they agree)

__all__ = [
    "disabled",
    "enable", "enabled", "config", "stats", "reset_stats", "format_stats", "ndarray", "flush",
    "is_pending", "__version__",
]

# settings: grumpy.config()'s values as enable() found them (None before)
_state = {"enabled": False, "patched": False, "settings": None}

# NumPy functions whose array results become grumpy arrays.
_CREATION = [
    "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "zeros", "ones", "empty", "full",
    "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace",
    "geomspace", "eye", "identity", "load", "loadtxt", "fromfile", "copy", "frombuffer",
    # large results NumPy builds from small plain arrays (grids, tilings),
    # which no grumpy dispatch would otherwise see: wave2d's
    # np.meshgrid(x, x) of a 8 KB x gives two 8 MB arrays its stencil reads
    "meshgrid", "indices", "tile", "repeat", "kron", "fromfunction",
]
_RANDOM = [
    "rand", "randn", "random", "random_sample", "ranf", "sample", "uniform", "normal",
    "standard_normal", "randint", "random_integers", "choice", "exponential", "poisson",
    "binomial", "beta", "gamma", "lognormal", "laplace", "logistic", "permutation",
    "standard_exponential", "standard_gamma", "chisquare", "geometric", "rayleigh", "triangular",
    "weibull", "multivariate_normal",
]
# the methods of NumPy's random classes whose results are draws (arrays, or
# a scalar without size=); not spawn, bytes, shuffle (in place), the state
_DRAWS = [
    "random", "random_sample", "rand", "randn", "randint", "random_integers", "integers", "uniform",
    "standard_normal", "normal", "standard_exponential", "exponential", "standard_gamma", "gamma", "beta",
    "f", "noncentral_f", "chisquare", "noncentral_chisquare", "standard_cauchy", "standard_t", "vonmises",
    "pareto", "weibull", "power", "laplace", "gumbel", "logistic", "lognormal", "rayleigh", "wald",
    "triangular", "binomial", "negative_binomial", "poisson", "zipf", "geometric", "hypergeometric",
    "logseries", "multivariate_normal", "multinomial", "multivariate_hypergeometric", "dirichlet", "choice",
    "permutation", "permuted",
]


def _ext():
    if "numpy" not in sys.modules and "grumpy._grumpy" not in sys.modules:
        # NumPy first: the extension's init imports it, and under GRUMPY=1
        # that import completes enable() (_enable_at_numpy_import), which
        # must not start the extension a second time from inside its init
        import numpy  # noqa: F401
    from . import _grumpy

    return _grumpy


def _numpy_version():
    """The version string of the NumPy this process uses (imported or to be
    imported), or None when none is installed.  Does not import NumPy."""
    np = sys.modules.get("numpy")
    if np is not None:
        return getattr(np, "__version__", None)
    # the dist-info directory beside the package that `import numpy` would
    # load (importlib.metadata would cost ~25 ms of start-up)
    try:
        from importlib.util import find_spec

        spec = find_spec("numpy")
        where = os.path.dirname(os.path.dirname(spec.origin)) if spec and spec.origin else None
        for name in os.listdir(where) if where else ():
            if name.startswith("numpy-") and name.endswith((".dist-info", ".egg-info")):
                return name[len("numpy-"):].rsplit(".", 1)[0]
    except (ImportError, ValueError, OSError):
        pass
    return None  # no metadata found: let the import decide


def _check_numpy():
    """Raises ImportError, one line, unless NumPy is 2.x (grumpy's C
    extension is built against NumPy 2's C API and ndarray layout)."""
    version = _numpy_version()
    if version is None:
        return
    major = version.split(".", 1)[0]
    if not major.isdigit() or int(major) != 2:
        raise ImportError(f"grumpy needs NumPy 2.x (>=2.0,<3); this process has NumPy {version}: "
                          "pip install 'numpy>=2.0,<3', or run without grumpy")


def _patch_numpy(np):
    """Makes NumPy's creation and random functions return grumpy arrays
    (values from NumPy itself: same seed, same stream)."""
    if _state["patched"]:
        return
    _state["patched"] = True
    g = _ext()
    for name in _CREATION:
        fn = getattr(np, name, None)
        if fn is not None:
            setattr(np, name, g.wrap(fn))
    np.outer = _outer_of_plain_arrays(np, np.outer, g.ndarray, _state["settings"]["min_bytes"])
    # NumPy's legacy module-level random functions (the global RandomState's
    # bound methods) and the draws of every Generator and RandomState
    # return grumpy arrays (wrap_methods: the classes' own dicts).  The
    # classes themselves stay NumPy's: a subclass in their place breaks
    # isinstance / type() checks that libraries make (scikit-learn's
    # check_random_state, `type(rng) is np.random.Generator`) and pickles
    # that name grumpy.
    # numpy.random is imported on first use (NumPy 2 loads it lazily):
    # patched then, so that a program that never draws does not pay for it
    _when_imported("numpy.random", _patch_random)
    _when_imported(_POCKETFFT, _patch_pocketfft)
    _when_imported(_SPARSE_COO, _patch_sparse_coo)
    for name in _JOBLIB_SAVERS:
        _when_imported(name, _patch_joblib_savers)
    _when_imported(_JOBLIB_REDUCERS, _patch_joblib_reducers)


def _when_imported(name, patch):
    """``patch(module)`` now if module ``name`` is loaded, else right after
    it is (_after_import)."""
    if name in sys.modules:
        patch(sys.modules[name])
    else:
        _after_import(name, patch)


_POCKETFFT = "scipy.fft._pocketfft.pypocketfft"


def _patch_pocketfft(mod):
    """SciPy's pocketfft binding (pybind11) takes no ndarray subclass as an
    output: scipy.fft.dct of an integer array passes the float64 copy it
    made (a grumpy array under capture) as out= and got RuntimeError
    "unexpected data type for output array" (scipy.fft's real-transform
    tests under capture: 822 failures).  Its functions are given plain
    views of grumpy arrays (whose memory the page guard keeps right, as for
    NumPy's own C code).  scipy.fft's modules bind them when they are
    imported, so the module is patched as soon as it is loaded."""
    import numpy as np

    gp = _ext().ndarray

    def plain(a):
        return a.view(np.ndarray) if isinstance(a, gp) else a

    def wrap(real):
        def call(*args, **kwargs):
            return real(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})

        call.__name__, call.__qualname__, call.__doc__ = real.__name__, real.__qualname__, real.__doc__
        call.__wrapped__ = real
        return call

    wrapped = {}
    for name in dir(mod):
        fn = getattr(mod, name)
        if not name.startswith("_") and callable(fn) and not isinstance(fn, type):
            wrapped[id(fn)] = wrap(fn)
            setattr(mod, name, wrapped[id(fn)])
    _rebind_partials(wrapped, "scipy.fft.")


_SPARSE_COO = "scipy.sparse._coo"


def _patch_sparse_coo(mod):
    """SciPy's n-D COO product (``_coo_base._matmul_dispatch``, for a sparse
    array of 3 or more dims) takes its dense path only when
    ``other.__class__ is np.ndarray``; any subclass falls through every
    branch and the product returns None (``coo @ y``, ``coo @ list(y)``:
    scipy.sparse's test_nd_matmul tests under capture at every size, 13
    failures; at the default threshold any ``y`` of 1 MiB or more).  A
    grumpy operand of an n-D product is given to it as a plain view of
    itself, and the call runs with capture off (``coo @ list(y)``: its ``np.asanyarray`` of the
    list would be a grumpy array again); SciPy computes sparse products
    itself either way."""
    import numpy as np

    base = getattr(mod, "_coo_base", None)
    real = getattr(base, "_matmul_dispatch", None)
    if real is None or getattr(real, "__wrapped__", None) is not None:
        return
    gp = _ext().ndarray

    def ndim_of(other):
        # (an object's own `ndim` may be anything: scipy.sparse's tests pass
        # one whose ndim is a method; SciPy's checks decide what it is)
        nd = getattr(other, "ndim", None)
        if isinstance(nd, int):
            return nd
        try:
            return np.asarray(other).ndim
        except Exception:
            return 0

    def _matmul_dispatch(self, other):
        if self.ndim < 3 and ndim_of(other) < 3:
            return real(self, other)  # SciPy's 1-D/2-D path, which keeps other's class
        with disabled():
            return real(self, other.view(np.ndarray) if type(other) is gp else other)

    _matmul_dispatch.__name__, _matmul_dispatch.__qualname__ = real.__name__, real.__qualname__
    _matmul_dispatch.__doc__, _matmul_dispatch.__wrapped__ = real.__doc__, real
    base._matmul_dispatch = _matmul_dispatch


# joblib's picklers whose save() tests ``type(obj)``: module -> class
_JOBLIB_SAVERS = {"joblib.numpy_pickle": "NumpyPickler", "joblib.hashing": "NumpyHasher"}
_JOBLIB_REDUCERS = "joblib._memmapping_reducer"


def _patch_joblib_savers(mod):
    """joblib's picklers see a grumpy array as a plain view of itself
    (pending values computed as it is read).  ``NumpyPickler.save`` writes
    an array in joblib's own format (loadable with ``mmap_mode``) only when
    ``type(obj)`` is ndarray, matrix or memmap: a grumpy array was pickled
    whole, so ``joblib.load(f, mmap_mode="r")`` gave a writeable copy in
    memory where NumPy gives a read-only np.memmap (scikit-learn's
    test_validation and test_testing under capture).  ``NumpyHasher.save``
    (joblib.hash, joblib.Memory's cache keys) hashes an array's class with
    its bytes: a grumpy array's hash was not NumPy's."""
    import numpy as np

    cls = getattr(mod, _JOBLIB_SAVERS[mod.__name__], None)
    real = getattr(cls, "save", None)
    if real is None or getattr(real, "__wrapped__", None) is not None:
        return
    gp = _ext().ndarray

    def save(self, obj):
        return real(self, obj.view(np.ndarray) if type(obj) is gp else obj)

    save.__name__, save.__qualname__, save.__doc__, save.__wrapped__ = real.__name__, real.__qualname__, real.__doc__, real
    cls.save = save


def _patch_joblib_reducers(mod):
    """joblib.Parallel sends an array larger than ``max_nbytes`` to its
    workers as a read-only memmap, by reducers keyed by ``type(a)``
    (``get_memmapping_reducers``): a grumpy array gets ndarray's."""
    import numpy as np

    real = getattr(mod, "get_memmapping_reducers", None)
    if real is None or getattr(real, "__wrapped__", None) is not None:
        return
    gp = _ext().ndarray

    def get_memmapping_reducers(*args, **kwargs):
        forward, backward = real(*args, **kwargs)
        for reducers in (forward, backward):
            if np.ndarray in reducers:
                reducers[gp] = reducers[np.ndarray]
        return forward, backward

    get_memmapping_reducers.__name__ = get_memmapping_reducers.__qualname__ = real.__name__
    get_memmapping_reducers.__doc__, get_memmapping_reducers.__wrapped__ = real.__doc__, real
    mod.get_memmapping_reducers = get_memmapping_reducers
    for user in ("joblib.executor", "joblib.pool"):  # bound by name when imported before enable()
        m = sys.modules.get(user)
        if m is not None and getattr(m, "get_memmapping_reducers", None) is real:
            m.get_memmapping_reducers = get_memmapping_reducers


def _rebind_partials(wrapped, prefix):
    """Where modules named ``prefix...`` are loaded already (scipy.fft
    imported before grumpy.enable()), their ``functools.partial`` objects
    that bound an original function (``dct = partial(_r2r, True,
    pfft.dct)``) are made again with its wrapper from ``wrapped`` (id of
    the original -> wrapper), in every such module holding them."""
    import functools

    remade = {}
    for modname, m in list(sys.modules.items()):
        if not modname.startswith(prefix) or m is None:
            continue
        for name, obj in list(vars(m).items()):
            if not isinstance(obj, functools.partial):
                continue
            if id(obj) not in remade:
                args = tuple(wrapped.get(id(a), a) for a in obj.args)
                func = wrapped.get(id(obj.func), obj.func)
                same = func is obj.func and all(x is y for x, y in zip(args, obj.args))
                remade[id(obj)] = (obj, None if same else functools.partial(func, *args, **obj.keywords))
            new = remade[id(obj)][1]
            if new is not None:
                setattr(m, name, new)


def _outer_of_plain_arrays(np, real, grumpy_ndarray, min_bytes):
    """``np.outer`` that captures the product of two plain arrays whose
    result is at least ``min_bytes`` (bytes), as it captures one with a
    grumpy operand: a lazy map ``ravel(a)[:, None] * ravel(b)[None, :]``
    that fuses with its users.  Plain inputs meet no grumpy dispatch, and
    small vectors (below the threshold) stay plain: PolyBench's gemver
    builds ``A + np.outer(u1, v1) + np.outer(u2, v2)`` from vectors of
    24 KB into a 72 MB matrix, which NumPy writes four times and one fused
    kernel once.  Viewing ``a`` as a grumpy array brings the call through
    NumPy's ``__array_function__`` to the capture; the view reads a's
    memory, which the capture copies (it is not grumpy's).  Anything else
    (``out=``, subclasses, complex or object dtypes, small results) is
    NumPy's call unchanged."""
    plain = np.ndarray
    copied = max(1 << 20, min_bytes)  # operands the capture copies (module.c's FOREIGN_COPY_MAX_BYTES); larger: NumPy's

    def outer(a, b, out=None):
        if out is not None:
            return real(a, b, out)
        if (type(a) is plain and type(b) is plain and a.dtype.kind in "biuf" and b.dtype.kind in "biuf"
                and a.dtype.isnative and b.dtype.isnative and max(a.nbytes, b.nbytes) <= copied
                and a.size * b.size * max(a.itemsize, b.itemsize) >= min_bytes):
            a = a.view(grumpy_ndarray)
        return real(a, b)  # as NumPy's own call passes them: out= only when given

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(outer, attr, getattr(real, attr, None))
    outer.__wrapped__ = real
    return outer


def _patch_random(rnd):
    g = _ext()
    for name in _RANDOM:
        fn = getattr(rnd, name, None)
        if fn is not None:
            setattr(rnd, name, g.wrap(fn))
    for cls in (getattr(rnd, "Generator", None), getattr(rnd, "RandomState", None)):
        if isinstance(cls, type):
            g.wrap_methods(cls, _DRAWS)


class _AfterImport:
    """sys.meta_path finder that calls ``then(module)`` right after the
    module named ``name`` is executed, before its import statement returns.
    It steps aside once ``then`` has run (a spec found without an import --
    ``importlib.util.find_spec`` -- leaves it in place for the real one)."""

    def __init__(self, name, then):
        self.name, self.then, self.finding = name, then, False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self.finding:
            return None
        import importlib.util

        self.finding = True  # the lookup below goes through sys.meta_path again
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.finding = False
        if spec is None or spec.loader is None:
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            self.then(module)

        spec.loader.exec_module = exec_module
        return spec


def _after_import(name, then):
    """Calls then(module) when module `name` is imported (_AfterImport),
    once; nothing if a hook for it is in place already."""
    if not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(name, then))


def _patch_faulthandler():
    """faulthandler.enable/disable save and restore the SIGSEGV handler they
    find; grumpy's guard steps aside around them and goes back on top, so
    the chain stays guard -> faulthandler -> default."""
    import faulthandler

    g = _ext()

    def around(real):
        def call(*args, **kwargs):
            g.uninstall_guard()
            try:
                return real(*args, **kwargs)
            finally:
                g.reinstall_guard()

        call.__doc__ = real.__doc__
        call.__name__ = real.__name__
        call.__wrapped__ = real
        return call

    faulthandler.enable = around(faulthandler.enable)
    faulthandler.disable = around(faulthandler.disable)
    if faulthandler.is_enabled():
        g.reinstall_guard()

    # A SIGSEGV/SIGBUS handler set from Python does not pass faults on: the
    # guard goes back on top of it (and chains to it for faults not ours).
    import functools
    import signal

    real_signal = signal.signal

    @functools.wraps(real_signal)
    def signal_signal(signalnum, handler):
        previous = real_signal(signalnum, handler)
        if signalnum in (signal.SIGSEGV, signal.SIGBUS):
            g.reinstall_guard()
        return previous

    signal.signal = signal_signal


def _patch_catch_warnings():
    """A pending kernel's IEEE warnings are NumPy's, given when it runs.
    Recorded inside a ``warnings.catch_warnings()`` block (``pytest.warns``,
    a library's ``simplefilter("ignore")``) and run after it, they would
    miss the block's filters; recorded before and run inside, they would be
    filtered by it.  So everything pending is computed when such a block is
    entered and left: the warnings fall on the side of the block where NumPy
    gives them."""
    import warnings

    g = _ext()
    cls = warnings.catch_warnings
    real_enter, real_exit = cls.__enter__, cls.__exit__

    def __enter__(self):
        g.warnings_barrier()
        return real_enter(self)

    def __exit__(self, *exc_info):
        try:
            g.warnings_barrier()  # a warning made an error inside the block is raised here
        except BaseException:
            real_exit(self, *exc_info)
            raise
        return real_exit(self, *exc_info)

    for wrapper, real in ((__enter__, real_enter), (__exit__, real_exit)):
        wrapper.__doc__, wrapper.__qualname__, wrapper.__wrapped__ = real.__doc__, real.__qualname__, real
    cls.__enter__, cls.__exit__ = __enter__, __exit__


def _numpy_openblas(np):
    """(path, prefix, suffix) of the OpenBLAS NumPy itself uses, or None."""
    libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    try:
        names = sorted(n for n in os.listdir(libs) if ".so" in n)
    except OSError:  # no numpy.libs: NumPy not from a wheel
        return None
    for prefix, suffix in (("libscipy_openblas64_", "64_"), ("libscipy_openblas", "")):
        for name in names:
            if name.startswith(prefix):
                return os.path.join(libs, name), "scipy_", suffix
    return None


def _enable_now(np):
    g = _ext()
    g.enable()
    # a child of os.fork() starts its own fault resolver before anything else
    os.register_at_fork(after_in_child=g.after_fork_child)
    blas = _numpy_openblas(np)
    if blas:
        g.use_blas(*blas)
    _state["enabled"] = True
    _patch_numpy(np)
    _patch_faulthandler()
    _patch_catch_warnings()
    from . import _threadpool

    _threadpool.install()  # threadpoolctl governs the pool (now or when it is imported)


# Idle OpenBLAS threads spin 2^28 TSC cycles (~0.1 s here) after each
# product before they sleep, on the cores grumpy's kernel threads need
# (gram_schmidt's mgs, fused dots and kernels between BLAS calls: 0.25 s
# a factorisation at 2^28, 0.20 s at 2^22-2^24, 0.18 s at 2^8).  Too short
# a spin makes every product of a loop wake its threads again: NumPy's own
# products in tools/rnn.py's step (mid-size GEMMs with element-wise work
# between) took ~10-15% longer at 2^8, none at 2^22.  2^22 cycles: ~1.7 ms
# at 2.4 GHz.  A value the user set is kept.
_OPENBLAS_THREAD_TIMEOUT = "22"


def enable():
    """Turns capture on for this process (idempotent).

    NumPy is patched when it is imported (now, if it already is): creation
    and random functions return ``grumpy.ndarray``; operations on those are
    recorded, fused and compiled.  Reads GRUMPY_* variables (README) and
    :func:`grumpy.config`'s settings, which are the same.  When the
    extension starts, threadpoolctl (if installed) is made to govern the
    kernel thread pool, user_api "grumpy" (``grumpy/_threadpool.py``).

    Raises ValueError, before anything is changed, if a GRUMPY_* variable
    has a value grumpy does not accept or is not one of grumpy's (one line:
    ``GRUMPY_THREADS=abc: expected an integer from 0 (all CPUs) to 1024``).
    Raises ImportError if the C extension is not built, or if NumPy is not
    2.x (one line naming the version found).
    """
    if _state["enabled"]:
        return
    settings = _config.validate_environment(os.environ)
    _check_numpy()
    # Read by OpenBLAS when NumPy loads it, so before _ext(): the
    # extension's import loads NumPy (_OPENBLAS_THREAD_TIMEOUT says why)
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", _OPENBLAS_THREAD_TIMEOUT)
    _ext()  # fail early if the extension is missing
    _state["settings"] = settings  # before NumPy is patched, which reads min_bytes
    if "numpy" in sys.modules:
        _enable_now(sys.modules["numpy"])
    else:
        _after_import("numpy", _enable_now)
        _state["enabled"] = True  # completed when NumPy is imported
    _register_exit_report()


def _enable_at_numpy_import(on_error):
    """:func:`enable` for ``GRUMPY=1`` start-up (grumpy/_startup.py) while
    NumPy is not imported: the settings and NumPy's version are checked now
    (ValueError / ImportError, as enable() raises them) and ``enabled()`` is
    True from now on; what imports NumPy -- the extension, the patches --
    runs right after the program's own import of NumPy (``_after_import``).
    An error there is passed to ``on_error(exc)`` and capture stays off.
    (Enabling from the ``.pth`` line itself imported NumPy about 40 Python
    frames deep, where CPython 3.11's frame stack crossed a chunk boundary
    on every call: ~850 mmap/munmap pairs, +25 ms of start-up.)"""
    if _state["enabled"]:
        return
    settings = _config.validate_environment(os.environ)
    _check_numpy()
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", _OPENBLAS_THREAD_TIMEOUT)  # as enable()
    _state["settings"] = settings

    def complete(np):
        try:
            _ext()
            _enable_now(np)
        except Exception as exc:  # never stop the program's import of NumPy
            _state["enabled"] = False
            on_error(exc)

    _after_import("numpy", complete)
    _state["enabled"] = True
    _register_exit_report()


class _Capture(int):
    """What :func:`enabled` and :func:`disabled` return: a truth value (an
    int, 1 or 0, printed True / False: is capture on -- for disabled(), off
    -- for this thread now?) and a context manager for a region.

    ``with grumpy.disabled():`` -- nothing in the block is captured: NumPy
    runs every operation at once, results are plain ``numpy.ndarray``s, and
    no call is counted as a fallback.  Arrays recorded before the block stay
    lazy and are computed when read.  ``with grumpy.enabled():`` -- capture
    on in the block, also inside a ``disabled()`` block (``enable()`` is
    called first if this process has not; arrays created before it are
    plain NumPy's).  Blocks nest and are per thread (a thread's blocks do
    not change what another captures).  Not for asyncio tasks sharing one
    thread.
    """

    def __new__(cls, on):
        now = _Capture._now()
        self = super().__new__(cls, now if on else not now)
        self._on = on
        self._saved = []
        return self

    @staticmethod
    def _now():
        if not _state["enabled"]:
            return False
        if not _state["patched"]:
            return True  # completed when NumPy is imported; nothing paused yet
        depth = _ext().pause(0)
        _ext().pause(depth)
        return depth == 0

    def __repr__(self):
        return repr(bool(self))

    __str__ = __repr__

    def __enter__(self):
        if self._on:
            enable()
        if _state["patched"]:
            depth = _ext().pause(0)
            self._saved.append(depth)
            _ext().pause(0 if self._on else depth + 1)
        else:
            self._saved.append(None)
        return self

    def __exit__(self, *exc_info):
        depth = self._saved.pop()
        if depth is not None:
            _ext().pause(depth)
        return False


def enabled():
    """True when capture is on for this thread now (enable() ran and no
    ``disabled()`` block is open); also ``with grumpy.enabled():`` for a
    region captured (see ``_Capture``)."""
    return _Capture(True)


def disabled():
    """``with grumpy.disabled():`` -- a region NumPy runs at once, results
    plain ndarrays, nothing captured or counted (see ``_Capture``).  As a
    truth value: True when capture is off for this thread now."""
    return _Capture(False)


def config(**settings):
    """Sets or reads grumpy's settings: the GRUMPY_* variables, by lower-case
    names without the prefix (README, "Environment variables").

    With no arguments: returns a dict {name: value} of the settings in
    effect, defaults filled in -- threads (int, the kernel threads: the
    number of CPUs for the default 0), min_bytes (int, bytes), max_fuse
    (int), check (float in [0, 1]), strict (bool, or "warn"), backend
    ("cpu", "numpy" or "gpu"), device ("auto", "cpu" or "gpu"), gpu_min_bytes (int, bytes), gpu_warmup_ms
    (int, milliseconds), first_launch_ms (int, milliseconds), gpu_emulate (bool), adaptive (bool), cache_dir
    (str: a directory, or "off"), cache_max_mb (int, MiB), stats (bool), stats_json (str path or None), hugepages (bool),
    debug_plan, dump_ir (bool), dump_ptx (str directory or None), libdevice
    (str path), debug_eval_loops, debug_corrupt (bool), debug_jit_fail, debug_fail
    (int).

    With keywords: sets them and returns None.  Before :func:`enable` each
    is checked and written to ``os.environ`` (so processes started later
    inherit it), for enable() to read; None removes the variable (its
    default).  After enable() only ``threads`` and ``adaptive`` (applied at
    once), ``stats`` and ``stats_json`` (read at exit) can change.  Either all are set or
    none.

    Raises TypeError for a name that is not a setting (naming the closest
    one); ValueError for a value of the wrong type or range, or for a
    setting that cannot change after enable() ("... must be set before
    grumpy.enable()").
    """
    for name in settings:
        if name not in _config.BY_SETTING:
            import difflib

            close = difflib.get_close_matches(name, _config.BY_SETTING, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "; settings: " + ", ".join(_config.BY_SETTING)
            raise TypeError(f"grumpy.config() got an unknown setting {name!r}{hint}")
    if not settings:
        return _current_settings()
    texts = {name: _config.to_environment(name, value) for name, value in settings.items()}
    if _state["enabled"]:
        fixed = [name for name in settings if not _config.BY_SETTING[name].runtime]
        if fixed:
            changeable = ", ".join(n for n, v in _config.BY_SETTING.items() if v.runtime)
            raise ValueError(
                f"grumpy.config({fixed[0]}=...): {fixed[0]} must be set before grumpy.enable() "
                f"(it is read once, when capture starts); after it only {changeable} can change")
    for name, text in texts.items():
        var = _config.BY_SETTING[name]
        if text is None:
            os.environ.pop(var.name, None)
        else:
            os.environ[var.name] = text
    if _state["patched"] and "threads" in settings:
        # the extension has started; until then (enable() before NumPy's
        # import) it reads GRUMPY_THREADS when it starts
        _ext().set_threads(settings["threads"] or 0)
    if _state["patched"] and "adaptive" in settings:
        _ext().set_adaptive(_config.BY_SETTING["adaptive"].parse(os.environ.get("GRUMPY_ADAPTIVE", "")))
    return None


def _current_settings():
    """grumpy.config()'s dict: the settings enable() found, with what can
    change at run time as it is now; before enable(), the environment's."""
    if _state["settings"] is None:
        return _config.validate_environment(os.environ)
    current = dict(_state["settings"])
    for name, var in _config.BY_SETTING.items():
        if var.runtime:
            current[name] = var.parse(os.environ.get(var.name, ""))
    if not current["threads"]:
        current["threads"] = _config.affinity_cpus()
    if _state["patched"]:  # the extension has started: its own thread count
        current["threads"] = _ext().stats()["threads"]
    return current


def stats():
    """Counters of this process as a dict.

    kernels_compiled, kernels_launched, cache_hits, jit_failures: JIT work;
    fallbacks: {NumPy function or ufunc name: calls handed to NumPy};
    compile_seconds, run_seconds: seconds spent compiling / in kernels;
    ops_captured: operations recorded; ops_eager_small: operations run by
    NumPy at once because their result was small (ops_eager_direct of them
    small operations on computed operands, handed to NumPy before the
    capture looked at them); nodes_fused,
    extra_outputs: fusion work; guard_faults: page faults resolved; bytes_moved:
    bytes read and written by kernels; threads; pending arrays.
    """
    try:
        return _ext().stats()
    except ImportError:
        return {}


def reset_stats():
    """Zeroes the counters."""
    _ext().reset_stats()


def flush():
    """Computes every pending array now."""
    _ext().flush()


def is_pending(a):
    """True if array a's values have not been computed yet."""
    return _ext().is_pending(a)


def __getattr__(name):
    if name == "ndarray":
        return _ext().ndarray
    raise AttributeError(name)


_GB = 1e9  # bytes in a GB (decimal, as bandwidths are quoted)
_MIB = 1 << 20  # bytes in a MiB
_TOP_FALLBACKS = 10


def _number(value):
    """An int as its digits, a float to 4 significant digits, anything else by str()."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _ranked(counts, n=None):
    """(name, count) pairs of a {name: count} dict, most first, ties by
    name; the first n (all when n is None).  Used by the exit summary, the
    pytest plugin and the %%grumpy table."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked if n is None else ranked[:n]


def _plural(n, word):
    """'1 call', '2 calls'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def format_stats(s, check=None):
    """The counters of :func:`stats` as a readable summary, grouped by topic.

    s: a dict as :func:`stats` returns it (made-up dicts work: a counter
    missing from ``s`` is left out, a topic with none of its counters is
    left out).  check: show the shadow-check topic (True / False); None
    shows it when any of its counters is non-zero.  The GPU topic is shown
    when ``s["backend"] == "gpu"``.

    The first line is ``grumpy stats:``.  Topics and units: run (back end,
    kernel threads); capture (operations captured and computed eagerly by
    NumPy because small, counts; calls handed to NumPy, the ten names most
    often, by count, ties by name); seconds are printed to 4 significant
    digits; kernels (compiled, from the in-memory and the disk
    cache, launched: counts; compile and run time in seconds; bytes moved
    in GB = 1e9 bytes, and the effective bandwidth bytes_moved / run_seconds
    in GB/s, "-" when no kernel time was measured); fusion (nodes fused,
    extra outputs, kernel splits, plan failures: counts); memory/guard
    (guard faults, live buffers and their MiB = 2**20 bytes, mprotect
    calls); BLAS (gemm, gemv, dot calls; operands copied); checks (kernels
    checked, mismatches, skipped); GPU (kernels launched; bytes copied host
    to device and back, in GB); and last, under "other", every remaining
    counter that is non-zero, as ``name=value``.  Every number shown as a
    count is the dict's value unchanged.

    Returns the text (lines joined by newlines, no trailing newline).
    Raises TypeError if ``s`` is not a mapping.
    """
    from collections.abc import Mapping

    if not isinstance(s, Mapping):
        raise TypeError(f"format_stats() wants the dict of grumpy.stats(), got {type(s).__name__}")
    shown = set()
    sections = []  # (title, [(label, value text)])

    def take(key):
        shown.add(key)
        return s.get(key)

    def row(rows, label, key, unit=""):
        value = take(key)
        if value is not None:
            rows.append((label, _number(value) + (f" {unit}" if unit else "")))

    # capture
    rows = []
    row(rows, "operations captured", "ops_captured")
    row(rows, "computed eagerly (small)", "ops_eager_small")
    row(rows, "  decided before the capture", "ops_eager_direct")
    row(rows, "nodes recorded", "nodes_recorded")
    row(rows, "pending arrays", "pending")
    fallbacks = take("fallbacks")
    if isinstance(fallbacks, Mapping):
        calls = sum(fallbacks.values())
        rows.append(("handed to NumPy", f"{_plural(calls, 'call')} to {_plural(len(fallbacks), 'function')}"))
        ranked = _ranked(fallbacks)
        for name, count in ranked[:_TOP_FALLBACKS]:
            rows.append((f"  {name}", _plural(count, "call")))
        if len(ranked) > _TOP_FALLBACKS:
            rest = ranked[_TOP_FALLBACKS:]
            rest_calls = _plural(sum(c for _, c in rest), "call")
            rows.append(("  (others)", f"{rest_calls} to {_plural(len(rest), 'function')}"))
    reasons = take("fallback_reasons")
    if isinstance(reasons, Mapping) and reasons:
        rows.append(("why", ""))
        for reason, count in _ranked(reasons, _TOP_FALLBACKS):
            rows.append((f"  {_plural(count, 'call')}", reason))
    fsites = take("fallback_sites")
    if isinstance(fsites, Mapping) and fsites:
        rows.append(("lines handing calls to NumPy", str(len(fsites))))
    row(rows, "computed eagerly (call site)", "ops_eager_site")
    row(rows, "plain operands broadcast, recorded", "ops_plain_broadcast")
    asites = take("adaptive_sites")
    if isinstance(asites, Mapping) and asites:
        rows.append(("call sites NumPy's at once", f"{len(asites)} (stats()['adaptive_sites'])"))
    sections.append(("capture", rows))

    # kernels
    rows = []
    row(rows, "compiled", "kernels_compiled")
    row(rows, "  of which on the background thread", "compiles_in_background")
    row(rows, "launches NumPy ran while their kernel compiled", "first_launches_numpy")
    row(rows, "from in-memory cache", "cache_hits")
    row(rows, "from disk cache", "disk_cache_hits")
    row(rows, "  loaded without LLVM", "disk_objects_loaded")
    row(rows, "PTX from disk cache", "ptx_disk_hits")
    row(rows, "JIT failures", "jit_failures")
    row(rows, "launched", "kernels_launched")
    row(rows, "  on the calling thread", "serial_launches")
    row(rows, "compile time", "compile_seconds", "s")
    row(rows, "run time", "run_seconds", "s")
    moved, run_s = take("bytes_moved"), s.get("run_seconds")
    if moved is not None:
        rows.append(("bytes moved", f"{moved / _GB:.3f} GB ({moved} bytes)"))
        if isinstance(run_s, (int, float)) and run_s > 0:
            rows.append(("effective bandwidth", f"{moved / run_s / _GB:.2f} GB/s (bytes moved / run time)"))
        else:
            rows.append(("effective bandwidth", "- (no kernel run time)"))
    sections.append(("kernels", rows))

    # fusion
    rows = []
    row(rows, "nodes fused", "nodes_fused")
    row(rows, "extra outputs", "extra_outputs")
    row(rows, "kernel splits", "kernel_splits")
    row(rows, "views of costly producers computed once", "views_materialized")
    row(rows, "plan failures (NumPy ran)", "plan_failures")
    sections.append(("fusion", rows))

    # memory / guard
    rows = []
    row(rows, "guard faults", "guard_faults")
    buffers, buffer_bytes = take("live_buffers"), take("live_buffer_bytes")
    if buffers is not None:
        rows.append(("live buffers", str(buffers)))
    if buffer_bytes is not None:
        rows.append(("live buffer memory", f"{buffer_bytes / _MIB:.2f} MiB ({buffer_bytes} bytes)"))
    row(rows, "mprotect calls", "protects")
    row(rows, "fresh mappings", "maps")
    row(rows, "freed mappings reused", "maps_reused")
    sections.append(("memory/guard", rows))

    # BLAS
    rows = []
    row(rows, "gemm calls", "gemm_calls")
    row(rows, "gemv calls", "gemv_calls")
    row(rows, "dot calls", "dot_calls")
    row(rows, "operands copied", "blas_operand_copies")
    sections.append(("BLAS", rows))

    # library calls grumpy makes instead of NumPy's
    rows = []
    row(rows, "searchsorted of sorted keys, merged", "sorted_searches")
    sections.append(("library calls", rows))

    # checks
    check_keys = ("checks", "check_mismatches", "check_skipped", "check_unspecified")
    if check is None:
        check = any(s.get(k) for k in check_keys)
    rows = []
    if check:
        row(rows, "kernels checked", "checks")
        row(rows, "mismatches", "check_mismatches")
        row(rows, "skipped", "check_skipped")
        row(rows, "out-of-range casts (no NumPy value)", "check_unspecified")
    shown.update(check_keys)
    sections.append(("checks (GRUMPY_CHECK)", rows))

    # GPU
    gpu_keys = ("gpu_kernels_launched", "gpu_kernels_queued", "gpu_gemm_calls", "bytes_h2d", "bytes_d2h", "host_to_device", "device_to_host",
                "gpu_kernel_seconds", "gpu_copy_seconds")
    rows = []
    if s.get("backend") == "gpu":
        row(rows, "kernels launched", "gpu_kernels_launched")
        row(rows, "of those, queued without a wait", "gpu_kernels_queued")
        row(rows, "matrix products (cuBLAS)", "gpu_gemm_calls")
        for key, label in (("bytes_h2d", "host -> device"), ("bytes_d2h", "device -> host")):
            value = take(key)
            if value is not None:
                rows.append((label, f"{value / _GB:.3f} GB ({value} bytes)"))
        row(rows, "buffers copied to device", "host_to_device")
        row(rows, "copies brought back", "device_to_host")
        for key, label in (("gpu_kernel_seconds", "kernel time"), ("gpu_copy_seconds", "copy time")):
            value = take(key)
            if value is not None:
                rows.append((label, f"{value:.4g} s"))
    shown.update(gpu_keys)
    sections.append(("GPU", rows))

    # the run: first, before the topics
    rows = []
    row(rows, "back end", "backend")
    row(rows, "kernel threads", "threads")
    sections.insert(0, ("run", rows))

    lines = ["grumpy stats:"]  # the first line as it always was (tools look for it)
    width = max((len(label) for _, rows in sections for label, _ in rows), default=0) + 2
    for title, rows in sections:
        if not rows:
            continue
        lines.append(f"  {title}")
        for label, text in rows:
            lines.append(f"    {label:<{width}}{text}")
    others = [f"{k}={s[k]}" for k in sorted(s) if k not in shown and s[k]]
    if others:
        lines.append("  other (non-zero)")
        lines.append("    " + ", ".join(others))
    return "\n".join(lines)


_exit_registered = []


def _register_exit_report():
    if _exit_registered:
        return
    _exit_registered.append(True)

    def report():
        s = stats()
        path = os.environ.get("GRUMPY_STATS_JSON")
        if path:
            import json

            with open(path, "w") as f:
                json.dump(s, f, indent=1, sort_keys=True)
        if os.environ.get("GRUMPY_STATS") == "1":
            settings = _state["settings"] or {}
            check = settings.get("check", 0) > 0
            print(format_stats(s, check=check or None), file=sys.stderr)

    atexit.register(report)


def load_ipython_extension(ipython):
    """``%load_ext grumpy`` in IPython or Jupyter: capture on, and the
    ``%%grumpy`` cell magic (see grumpy/ipython.py)."""
    from .ipython import load_ipython_extension as load

    load(ipython)
