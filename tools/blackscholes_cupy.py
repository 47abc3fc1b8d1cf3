"""Peer of tools/blackscholes.py written with CuPy: the same ``price``
(NumPy's functions dispatch to CuPy's arrays through ``__array_ufunc__`` and
``__array_function__``: one CuPy kernel per operation, with temporaries),
inputs copied to the GPU once, the means copied back each iteration.

Usage::

    python tools/blackscholes_cupy.py [n] [dtype] [iterations]

Same arguments, inputs, work and output as tools/blackscholes.py.  Needs
CuPy and a GPU (the peer of ``make test-gpu``'s A/B run).
"""

import sys

import cupy as cp
import numpy as np

from blackscholes import price, run_book


def main(argv):
    run_book(argv, price, on_device=cp.asarray, to_host=cp.asnumpy)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main(sys.argv)
