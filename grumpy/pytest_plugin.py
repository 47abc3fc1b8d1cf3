"""pytest plugin: run a test session with grumpy's capture on.

Use
    Installed (``pip install .``), the plugin is found through its ``pytest11``
    entry point; from a checkout, name it with ``-p``::

        pytest --grumpy tests/
        pytest -p grumpy.pytest_plugin --grumpy --grumpy-check tests/

Options
    ``--grumpy``
        turn capture on (:func:`grumpy.enable`) before pytest loads any
        conftest.py or test module, so the arrays the tests create are
        grumpy's.  Without it the plugin does nothing (grumpy's C extension
        is not even loaded).
    ``--grumpy-check``
        also run the shadow check: ``GRUMPY_CHECK=1`` is put in the
        environment before capture is enabled, so every kernel's output is
        computed by NumPy too and compared (README, ``GRUMPY_CHECK``).  Implies
        ``--grumpy``.  A mismatch makes the session fail (exit status 1), even
        when every test passed.
    ``--grumpy-min-bytes=N``
        set ``GRUMPY_MIN_BYTES`` to N (bytes, an integer >= 0) before capture
        is enabled; ``0`` captures arrays of every size (slow, thorough).
        Implies ``--grumpy``.

Report
    At the end of the session a "grumpy" section of the terminal summary gives
    this process's counters (:func:`grumpy.stats`): operations captured,
    kernels compiled and launched (with seconds), guard faults, the ten names
    most often handed to NumPy, and with ``--grumpy-check`` the kernels checked
    and the mismatches.  Pending arrays are computed (:func:`grumpy.flush`)
    before the counters are read.

Errors
    ``--grumpy`` when grumpy cannot be enabled (its C extension missing or
    failing to load) is a usage error (pytest exits with 4): a run that asked
    for grumpy must not silently test plain NumPy.  When grumpy was already on
    before pytest parsed its options (``GRUMPY=1``, ``grumpy.enable()`` in a
    plugin loaded earlier) and NumPy was already imported, the environment
    read at enable time is fixed: a ``--grumpy-check`` or
    ``--grumpy-min-bytes`` that can no longer take effect is reported as a
    warning, and the summary says whether the check ran.
"""

import os
import sys

import pytest

def pytest_addoption(parser):
    group = parser.getgroup("grumpy", "grumpy: capture NumPy work, fuse and JIT-compile it")
    group.addoption(
        "--grumpy",
        action="store_true",
        default=False,
        help="turn grumpy's capture on for the whole session (before conftest.py files are loaded)",
    )
    group.addoption(
        "--grumpy-check",
        action="store_true",
        default=False,
        help="also run the shadow check (GRUMPY_CHECK=1); a mismatch fails the session. Implies --grumpy",
    )
    group.addoption(
        "--grumpy-min-bytes",
        type=_min_bytes,
        default=None,
        metavar="N",
        help="set GRUMPY_MIN_BYTES=N (bytes; 0 captures every size). Implies --grumpy",
    )


def _min_bytes(text):
    """argparse type of --grumpy-min-bytes: an integer >= 0 (bytes), as a str."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise pytest.UsageError(f"--grumpy-min-bytes: expected an integer >= 0 (bytes), got {text!r}")
    return str(value)


def _wanted(options):
    return bool(options.grumpy or options.grumpy_check or options.grumpy_min_bytes is not None)


class _Session:
    """What the plugin knows of this session's grumpy (kept on the config)."""

    def __init__(self, check):
        self.check = check  # bool: --grumpy-check given
        self.late = []  # options that could not take effect (str)
        self.stats = None  # dict from grumpy.stats() at the end, or None


_KEY = pytest.StashKey()


def _enable(config, options):
    """Set the environment from the options and turn capture on (once)."""
    if _KEY in config.stash:
        return
    state = _Session(check=bool(options.grumpy_check))
    config.stash[_KEY] = state
    try:
        import grumpy
    except Exception as exc:  # ImportError above all
        raise pytest.UsageError(f"--grumpy: grumpy cannot be imported ({type(exc).__name__}: {exc})") from None
    fixed = grumpy._state["enabled"] and "numpy" in sys.modules  # the C side has read the environment
    wanted_env = {}
    if options.grumpy_check:
        wanted_env["GRUMPY_CHECK"] = "1"
    if options.grumpy_min_bytes is not None:
        wanted_env["GRUMPY_MIN_BYTES"] = options.grumpy_min_bytes
    for name, value in wanted_env.items():
        if fixed and os.environ.get(name) != value:
            state.late.append(f"{name}={value}")
        os.environ[name] = value
    try:
        grumpy.enable()
    except Exception as exc:
        raise pytest.UsageError(f"--grumpy: grumpy cannot be enabled ({type(exc).__name__}: {exc})") from None
    if state.late:
        config.issue_config_time_warning(
            pytest.PytestConfigWarning(
                "grumpy was enabled before the plugin ran, so "
                + ", ".join(state.late)
                + " had no effect (set it in the environment instead)"
            ),
            stacklevel=2,
        )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Enable before the first conftest.py (and so before any test's arrays)."""
    if _wanted(early_config.known_args_namespace):
        _enable(early_config, early_config.known_args_namespace)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Fallback when the early hook did not run: the plugin named in a
    conftest.py's ``pytest_plugins`` (conftest.py files loaded before it
    create plain NumPy arrays)."""
    if _wanted(config.option):
        _enable(config, config.option)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Read the counters; a shadow-check mismatch fails a passing session."""
    state = session.config.stash.get(_KEY, None)
    if state is None:
        return
    import grumpy

    try:
        grumpy.flush()  # pending work belongs to this session
    except Exception:  # a pending array's error is the test's business, not the report's
        pass
    state.stats = grumpy.stats()
    if state.stats.get("check_mismatches", 0) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The "grumpy" section (only with --grumpy)."""
    state = config.stash.get(_KEY, None)
    if state is None or state.stats is None:
        return
    terminalreporter.write_sep("=", "grumpy")
    for line in summary_lines(state.stats, state.check, state.late):
        terminalreporter.write_line(line)


def summary_lines(s, check, late=()):
    """The report's lines (list of str, without the section's title) for the
    counters ``s`` (a dict from :func:`grumpy.stats`); ``check``: whether
    --grumpy-check was given (the check's line is shown then, or whenever
    kernels were checked);
    ``late``: options that came too late to take effect (list of str)."""
    import grumpy

    lines = []
    lines.append(
        f"capture on: {s.get('threads', '?')} threads, backend {s.get('backend', '?')}, "
        f"GRUMPY_MIN_BYTES={os.environ.get('GRUMPY_MIN_BYTES', '1048576 (default)')}"
    )
    lines.append(
        f"operations captured: {s.get('ops_captured', 0)} "
        f"({s.get('ops_eager_small', 0)} small ones run by NumPy at once)"
    )
    lines.append(
        f"kernels compiled: {s.get('kernels_compiled', 0)} ({s.get('compile_seconds', 0.0):.3f} s; "
        f"cache hits {s.get('cache_hits', 0)}, from disk {s.get('disk_cache_hits', 0)})"
    )
    lines.append(
        f"kernels launched: {s.get('kernels_launched', 0)} ({s.get('run_seconds', 0.0):.3f} s)"
    )
    lines.append(f"guard faults: {s.get('guard_faults', 0)}")
    fallbacks = s.get("fallbacks") or {}
    if fallbacks:
        top = grumpy._ranked(fallbacks, grumpy._TOP_FALLBACKS)
        shown = ", ".join(f"{name} {count}" for name, count in top)
        more = len(fallbacks) - len(top)
        lines.append(
            f"fallbacks to NumPy: {sum(fallbacks.values())} calls, {len(fallbacks)} names: {shown}"
            + (f", ... {more} more" if more > 0 else "")
        )
    else:
        lines.append("fallbacks to NumPy: 0")
    if check or s.get("checks", 0):
        mismatches, unspecified = s.get("check_mismatches", 0), s.get("check_unspecified", 0)
        lines.append(
            f"shadow check: {s.get('checks', 0)} kernels checked, {s.get('check_skipped', 0)} skipped, "
            f"{mismatches} mismatches"
            + (f" ({unspecified} more where an out-of-range cast has no NumPy value)" if unspecified else "") + (" -- the session fails" if mismatches else "")
        )
    for option in late:
        lines.append(f"not in effect: {option} (grumpy was enabled before the plugin ran)")
    return lines
