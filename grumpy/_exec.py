"""``grumpy-exec cmd [args...]``: runs cmd with grumpy enabled in every
Python process it starts (the command itself, its subprocesses,
multiprocessing workers).

The console script that pip installs (pyproject.toml ``[project.scripts]``),
and the same as the repository's ``interpose/grumpy-exec``: it puts the
preload shim (interpose/preload.c) first in ``LD_PRELOAD`` and execs cmd.
The shim sets ``GRUMPY=1`` in every process of the tree, and grumpy.pth in
site-packages enables grumpy at start-up.  The shim is
``grumpy/_preload<EXT_SUFFIX>`` in an installed package (setup.py builds
it), or ``build/libgrumpy_preload.so`` in a repository built with make.

Exit status: cmd's (this process becomes cmd); 127 when the shim or cmd is
not found; 2 without a command.
"""

import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def shim_path():
    """The preload shim's path, or None: the installed one beside this file,
    else the repository's build."""
    for path in sorted(glob.glob(os.path.join(HERE, "_preload*.so"))):
        return path
    built = os.path.join(os.path.dirname(HERE), "build", "libgrumpy_preload.so")
    return built if os.path.isfile(built) else None


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: grumpy-exec cmd [args...]", file=sys.stderr)
        return 2
    shim = shim_path()
    if shim is None:
        print(f"grumpy-exec: no preload shim in {HERE} (pip install grumpy, or run 'make' in the repository)",
              file=sys.stderr)
        return 127
    entries = [e for e in os.environ.get("LD_PRELOAD", "").split(":") if e]
    if shim not in entries:
        os.environ["LD_PRELOAD"] = ":".join([shim, *entries])
    try:
        os.execvp(args[0], args)
    except OSError as e:
        print(f"grumpy-exec: {args[0]}: {e.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
