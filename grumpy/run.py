"""Run a Python program with grumpy capture on, as ``coverage run`` does.

Usage::

    python -m grumpy.run [-h] [--] script.py [args...]
    python -m grumpy.run [-h] -m module [args...]

The program runs as ``__main__`` (through :mod:`runpy`) after
:func:`grumpy.enable` has turned capture on, and sees what it would see under
plain ``python``:

- ``sys.argv`` is ``[script.py, args...]`` (for ``-m``: the module's file
  path, then ``args``), exactly as the interpreter would set it;
  ``__file__`` is the script path as given (runpy keeps ``sys.argv[0]`` and
  ``__file__`` equal; python 3.9+ would make ``__file__`` absolute);
- ``sys.path[0]`` is the script's directory (symbolic links resolved), or the
  current directory for ``-m``; left alone under ``python -P``;
- the exit status is the program's: ``sys.exit(n)`` exits with ``n``, an
  uncaught exception prints a normal traceback (without grumpy.run's or
  runpy's frames) and exits with 1, an uncaught ``KeyboardInterrupt`` ends the
  process by SIGINT; a missing script exits with 2 and a missing module with 1,
  with the interpreter's own messages.

Errors
    If grumpy cannot be enabled (its C extension missing or failing to load),
    one line goes to stderr and the program runs with plain NumPy.  Bad usage
    of this command itself exits with 2, and so does a GRUMPY_* variable
    grumpy does not accept (``grumpy.run: GRUMPY_THREADS=abc: expected an
    integer from 0 (all CPUs) to 1024``): the program does not run.

Everything here runs once per process; none of it is on the path of an array
operation.
"""

import os
import pkgutil
import runpy
import sys

USAGE = (
    "usage: python -m grumpy.run [-h] [--] script.py [args...]\n"
    "       python -m grumpy.run [-h] -m module [args...]\n"
)

# Frames from these files sit between the interpreter and the user's program;
# tracebacks shown to the user skip them.
_HIDDEN_FILES = frozenset(
    {
        runpy.run_path.__code__.co_filename,  # "<frozen runpy>" on 3.11+
        runpy.__file__,
        __file__,
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "explain.py"),  # grumpy.explain runs programs here too
    }
)


def _enable_grumpy(prog="grumpy.run"):
    """Turn capture on for this process.  A bad GRUMPY_* setting (ValueError)
    exits with 2 (the message names ``prog``); any other failure leaves the
    program to plain NumPy."""
    try:
        import grumpy

        grumpy.enable()
    except ValueError as exc:  # a GRUMPY_* variable: the user asked for something else
        detail = " ".join(str(exc).split())
        print(f"{prog}: {detail}", file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as exc:  # ImportError above all: run with plain NumPy
        detail = " ".join(str(exc).split())
        print(
            f"grumpy: not enabled ({type(exc).__name__}: {detail}); running with plain NumPy",
            file=sys.stderr,
        )


def _strip_own_frames(tb):
    """Return the part of traceback ``tb`` that starts in the user's code
    (None when the exception never reached it)."""
    while tb is not None and tb.tb_frame.f_code.co_filename in _HIDDEN_FILES:
        tb = tb.tb_next
    return tb


def _prepare_traceback(exc):
    """Arrange for the interpreter to report ``exc`` as plain python would.

    The exception is then re-raised by the caller, so the interpreter still
    decides the exit status (1, or SIGINT for KeyboardInterrupt) and runs
    atexit handlers in its usual order; only the traceback it prints loses
    the frames of this module and runpy, through a one-shot wrapper around
    whatever ``sys.excepthook`` is in force now (the program may have set
    its own).
    """
    if isinstance(exc, ImportError) and _strip_own_frames(exc.__traceback__) is None:
        # runpy could not find or start the program: "No module named x",
        # "can't find '__main__' module in 'dir'"; python says it in one line.
        print(f"{sys.executable}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None

    hook_in_force = sys.excepthook

    def excepthook(exc_type, value, tb):
        if value is exc:
            # The default hook prints value.__traceback__, not tb: set both.
            tb = _strip_own_frames(tb)
            value.__traceback__ = tb
        hook_in_force(exc_type, value, tb)

    sys.excepthook = excepthook


def _parse(argv, prog="grumpy.run", usage=USAGE, help_text=None):
    """Return (script, module, args) from the command line ``argv`` (what
    follows the command's own options); exits on bad usage, naming ``prog``
    and printing ``usage``; ``-h`` prints ``help_text`` (this module's
    docstring by default)."""
    if not argv:
        sys.stderr.write(usage)
        raise SystemExit(2)
    first = argv[0]
    if first in ("-h", "--help"):
        print(__doc__ if help_text is None else help_text)
        raise SystemExit(0)
    if first == "--":
        argv = argv[1:]
        if not argv:
            sys.stderr.write(usage)
            raise SystemExit(2)
        return argv[0], None, argv[1:]
    if first == "-m":
        if len(argv) < 2:
            sys.stderr.write(f"{prog}: -m needs a module name\n" + usage)
            raise SystemExit(2)
        return None, argv[1], argv[2:]
    if first.startswith("-m"):  # -mmodule, as python accepts
        return None, first[2:], argv[1:]
    if first.startswith("-"):
        sys.stderr.write(f"{prog}: unknown option {first}\n" + usage)
        raise SystemExit(2)
    return first, None, argv[1:]


def run_program(script, module, args, prog="grumpy.run", on_enabled=None):
    """Run ``script`` (a path) or ``module`` (a name; script is None) as
    ``__main__`` with capture on, with ``args`` as its arguments, the way
    the module docstring says (``sys.argv``, ``sys.path[0]``, exit status,
    tracebacks as under plain python).  ``on_enabled()``, when given, is
    called once capture is on and before the program starts
    (grumpy.explain turns its recording on there).

    Returns 0 when the program ends normally, 2 when the script does not
    exist (the interpreter's message printed); the program's
    ``SystemExit`` and exceptions propagate.  Used by ``grumpy.run`` and
    ``grumpy.explain``.
    """
    if script is not None and not os.path.exists(script):
        print(
            f"{sys.executable}: can't open file {os.path.abspath(script)!r}: "
            "[Errno 2] No such file or directory",
            file=sys.stderr,
        )
        return 2

    _enable_grumpy(prog)
    if on_enabled is not None:
        on_enabled()

    if script is not None:
        sys.argv = [script, *args]
        # as runpy.run_path decides: a directory or zip file has an importer
        # of its own (zipfile would cost ~5 ms of start-up)
        runs_from_itself = os.path.isdir(script) or pkgutil.get_importer(script) is not None
        if not sys.flags.safe_path and sys.path:
            if runs_from_itself:
                del sys.path[0]  # run_path puts the directory or zip first itself
            else:
                sys.path[0] = os.path.dirname(os.path.realpath(script))
    else:
        # run_module replaces argv[0] with the module's file, as python -m does;
        # sys.path[0] is already the current directory, as for python -m.
        sys.argv = [module, *args]

    try:
        if script is not None:
            runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit:
        raise
    except BaseException as exc:
        _prepare_traceback(exc)
        raise
    return 0


def main(argv=None):
    """Run the program named by ``argv`` (default ``sys.argv[1:]``).

    Returns 0 when the program ends normally; its ``SystemExit`` and
    exceptions propagate (see the module docstring).
    """
    script, module, args = _parse(sys.argv[1:] if argv is None else list(argv))
    return run_program(script, module, args)


if __name__ == "__main__":
    sys.exit(main())
