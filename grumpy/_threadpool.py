"""grumpy's kernel thread pool as a threadpoolctl library.

With this, ``threadpoolctl.threadpool_limits`` governs grumpy's pool like
OpenBLAS's or OpenMP's::

    from threadpoolctl import threadpool_limits
    with threadpool_limits(1):                       # every pool, grumpy's too
        ...
    with threadpool_limits(2, user_api="grumpy"):    # grumpy's pool only
        ...

and ``threadpool_info()`` lists grumpy (user_api and internal_api "grumpy",
num_threads, the extension's path, grumpy's version).

How it is registered: threadpoolctl (3.x) has no plugin discovery; a
third-party controller is a ``threadpoolctl.LibController`` subclass
handed to ``threadpoolctl.register()``.  threadpoolctl is not imported by
grumpy (about 15 ms of start-up for every program, most of which never
uses it).  Instead :func:`install`, called once when grumpy's extension
starts (``grumpy.enable()`` with NumPy imported, or NumPy's import after
it), registers the controller at once if threadpoolctl is already
imported, and otherwise puts a ``sys.meta_path`` finder in place that
registers it right after a later ``import threadpoolctl`` has run.
Without threadpoolctl installed nothing happens (the finder steps aside
and the import fails as it would have).

threadpoolctl finds libraries by the file names of the shared objects
mapped in the process: the extension's file is
``_grumpy.cpython-*.so``, hence the prefix ``_grumpy``; the symbol
``PyInit__grumpy`` confirms it is grumpy's (the code generator's library,
``_grumpy_jit.cpython-*.so``, has the prefix too but not the symbol).

Each API keeps its own count.  ``grumpy._grumpy.set_threads`` (like
GRUMPY_THREADS and ``grumpy.config(threads=)``) also sets the OpenBLAS
grumpy calls; the controller puts every OpenBLAS threadpoolctl sees back
to the count it had, so user_api "grumpy" limits the pool alone and
OpenBLAS stays under user_api "blas".  Without that, a block's exit would
leave OpenBLAS at grumpy's count or at its own depending on the order in
which threadpoolctl lists the libraries (which varies from run to run).
Limits set through threadpoolctl are not written to GRUMPY_THREADS
(processes started inside the block do not inherit them), as with
threadpoolctl's other libraries.

A limit of 1 is exact (kernels run on the calling thread).  A limit n > 1
below the highest count used so far in the process is not, as the pool
stands (core/runtime_cpu.c): every worker already started takes tasks
(a kernel is split into tasks by the count n), so more than n threads
may run it.
"""

import sys

USER_API = "grumpy"  # threadpool_limits(n, user_api=USER_API)
_PREFIX = "_grumpy"  # the extension's file name starts with it
_registered = {"done": False}


def _controller_class(threadpoolctl):
    """The LibController subclass for grumpy's pool.

    threadpoolctl: the imported threadpoolctl module (3.x).  Returns a
    class; raises AttributeError if threadpoolctl has no LibController.
    """

    class GrumpyController(threadpoolctl.LibController):
        """grumpy's kernel thread pool (threadpoolctl.LibController).

        get_num_threads() -> int: the pool's threads now.
        set_num_threads(num_threads: int) -> None: sets them (<= 0: all CPUs
        of the affinity mask), leaving OpenBLAS's count as it was; raises
        TypeError if num_threads is not an int, OverflowError if it does
        not fit a C long.  get_version() -> str: grumpy's version.
        """

        user_api = USER_API
        internal_api = USER_API
        filename_prefixes = (_PREFIX,)
        check_symbols = ("PyInit__grumpy",)

        def get_num_threads(self):
            from . import _grumpy

            return _grumpy.stats()["threads"]

        def set_num_threads(self, num_threads):
            from . import _grumpy

            # the OpenBLAS libraries the same listing found (self.parent:
            # the ThreadpoolController that made this controller)
            blas = [lib for lib in getattr(getattr(self, "parent", None), "lib_controllers", ())
                    if lib.internal_api == "openblas"]
            counts = [lib.get_num_threads() for lib in blas]
            _grumpy.set_threads(num_threads)  # sets the OpenBLAS grumpy calls too
            for lib, count in zip(blas, counts):
                if count is not None and lib.get_num_threads() != count:
                    lib.set_num_threads(count)

        def get_version(self):
            from . import __version__

            return __version__

    return GrumpyController


def _register(threadpoolctl):
    """Registers grumpy's controller with the imported threadpoolctl (once).

    Returns True if it is registered now or was before; False, changing
    nothing, for a threadpoolctl without ``register``/``LibController``
    (before 3.0).  Never raises for an old threadpoolctl.
    """
    if _registered["done"]:
        return True
    if not hasattr(threadpoolctl, "register") or not hasattr(threadpoolctl, "LibController"):
        return False
    threadpoolctl.register(_controller_class(threadpoolctl))
    _registered["done"] = True
    return True


class _ThreadpoolctlImportHook:
    """sys.meta_path finder: registers grumpy's controller right after
    threadpoolctl's module has run (then removes itself)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "threadpoolctl":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec("threadpoolctl")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            try:
                _register(module)
            except Exception as exc:  # grumpy's controller must not break the import
                import warnings

                warnings.warn(f"grumpy: threadpoolctl does not govern grumpy's pool: {exc!r}",
                              RuntimeWarning, stacklevel=2)

        spec.loader.exec_module = exec_module
        return spec


def install():
    """Makes threadpoolctl see grumpy's pool: registers the controller now
    if threadpoolctl is imported, else when it is (module docstring).

    Idempotent; returns None.  An error while threadpoolctl registers
    propagates from here; from the import hook it becomes a RuntimeWarning
    (``import threadpoolctl`` still succeeds).
    """
    if _registered["done"]:
        return
    module = sys.modules.get("threadpoolctl")
    if module is not None:
        _register(module)
    elif not any(isinstance(f, _ThreadpoolctlImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _ThreadpoolctlImportHook())
