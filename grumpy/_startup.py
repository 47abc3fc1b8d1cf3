"""Turn grumpy on at interpreter start-up (the ``GRUMPY=1`` entry point).

Purpose
    ``grumpy.pth``, installed in site-packages, runs ``import grumpy._startup``
    while the interpreter starts when the environment has ``GRUMPY=1``; this
    module then arranges for :func:`grumpy.enable` to be called so that the
    program's NumPy work is captured, without a line of the program changed::

        GRUMPY=1 python script.py args...

When
    The settings are checked here (``grumpy._enable_at_numpy_import``) and
    ``grumpy.enabled()`` is True from here on, but what imports NumPy --
    the extension, the patches -- waits for the program's own first import
    of ``numpy``: grumpy's finder on ``sys.meta_path`` (PEP 451,
    ``grumpy._after_import``) enables capture right after NumPy's module
    has run, and removes itself.  A program that never imports NumPy pays
    for grumpy's package alone.  Enabling at the ``.pth`` line itself
    imported NumPy from inside ``site``'s processing, about 40 Python
    frames deep, where CPython 3.11's frame stack crosses a 16 KiB chunk
    boundary: every call there mapped and unmapped a chunk (about 850
    ``mmap`` and ``munmap`` pairs, +25 ms on start-up, measured with
    ``strace -c``).

Errors
    Start-up must never stop the user's program.  If grumpy cannot be enabled
    (its C extension is missing or fails to load, or ``enable`` raises), one
    line goes to stderr and the program runs with plain NumPy.  An error in
    importing NumPy itself is NumPy's, raised as without grumpy.
"""

import sys


def _warn(exc):
    detail = " ".join(str(exc).split())  # keep the warning on one line
    print(
        f"grumpy: not enabled ({type(exc).__name__}: {detail}); running with plain NumPy",
        file=sys.stderr,
    )


def _start():
    try:
        import grumpy  # imported already: this module's package

        if "numpy" in sys.modules:
            grumpy.enable()  # imported before this module ran: nothing left to wait for
        else:
            grumpy._enable_at_numpy_import(_warn)
    except Exception as exc:  # ImportError above all; never stop the program
        _warn(exc)


_start()
