"""Unpacks a grumpy wheel's compiled parts into a source tree (make test-gpu).

    python tools/unpack_wheel.py WHEEL DEST

Copies the wheel's extension modules (grumpy/*.so) and the libraries
auditwheel bundled (grumpy.libs/*: LLVM, libcrypto, ...) into DEST, so that
the tree's grumpy package runs where nothing can be built: a machine with
a GPU and no compiler, LLVM or network.  The extensions find the libraries
through their RPATH ($ORIGIN/../grumpy.libs).  The wheel must be for this
Python (its cpXY tag); exit status 2 otherwise.
"""

import os
import sys
import sysconfig
import zipfile


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    wheel, dest = argv[1], argv[2]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.startswith("grumpy.libs/") or
                 (n.startswith("grumpy/") and n.endswith(".so"))]
        if not any(n.endswith(suffix) for n in names):
            print(f"unpack_wheel: {wheel} has no extension for this Python ({suffix})", file=sys.stderr)
            return 2
        for n in names:
            z.extract(n, dest)
            if n.startswith("grumpy.libs/") or n.endswith(".so"):
                os.chmod(os.path.join(dest, n), 0o755)
    print(f"unpack_wheel: {len(names)} files from {os.path.basename(wheel)} into {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
