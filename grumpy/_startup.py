"""Turn grumpy on at interpreter start-up (the ``GRUMPY=1`` entry point).

Purpose
    ``grumpy.pth``, installed in site-packages, runs ``import grumpy._startup``
    while the interpreter starts when the environment has ``GRUMPY=1``; this
    module then calls :func:`grumpy.enable` so that the program's NumPy work is
    captured, without a line of the program changed::

        GRUMPY=1 python script.py args...

Errors
    Start-up must never stop the user's program.  If grumpy cannot be enabled
    (its C extension is missing or fails to load, or ``enable`` raises), one
    line goes to stderr and the program runs with plain NumPy.
"""

import sys


def _enable():
    try:
        import grumpy

        grumpy.enable()
    except Exception as exc:  # ImportError above all; never stop the program
        detail = " ".join(str(exc).split())  # keep the warning on one line
        print(
            f"grumpy: not enabled ({type(exc).__name__}: {detail}); running with plain NumPy",
            file=sys.stderr,
        )


_enable()
