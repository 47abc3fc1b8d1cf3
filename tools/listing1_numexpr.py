"""Peer of tools/listing1.py written with numexpr (one ``ne.evaluate``).

Usage::

    python tools/listing1_numexpr.py [n] [dtype] [iterations]

Same arguments, inputs, work and output as tools/listing1.py; only the
expression is evaluated by numexpr (blocked, multi-threaded, one pass).
"""

import sys

import numexpr as ne

from listing1 import make_inputs, parse, report, sample_index


def main(argv):
    n, dtype, iterations = parse(argv)
    x, y = make_inputs(n, dtype)
    samples = []
    z = None
    for i in range(iterations):
        z = ne.evaluate("x*x + 2*x*y + y*y")
        samples.append(z[sample_index(i, n)])
    report(z, samples, dtype, iterations)


if __name__ == "__main__":
    main(sys.argv)
