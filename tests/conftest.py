"""Test session set-up: capture is on for every test in this process.

GRUMPY_MIN_BYTES is lowered to grumpy's floor (64 KiB) so that test arrays
stay small, and the adaptive call-site rule (GRUMPY_ADAPTIVE) is off: a test
file runs one line for many ufuncs, dtypes and layouts and asserts each is
captured (tests/test_adaptive.py turns the rule on); every kernel is
compiled at its first launch on the calling thread (GRUMPY_FIRST_LAUNCH_MS=0:
a test counts the kernels a statement launches; tests/test_first_launch.py
and the fuzzer run NumPy while kernels compile in the background);
everything else is grumpy's default."""

import os

os.environ.setdefault("GRUMPY_MIN_BYTES", "65536")
os.environ.setdefault("GRUMPY_ADAPTIVE", "0")
os.environ.setdefault("GRUMPY_FIRST_LAUNCH_MS", "0")
os.environ.setdefault("GRUMPY_CACHE_DIR", "off")  # every test compiles; test_fusion checks the disk cache

import grumpy  # noqa: E402

grumpy.enable()

import numpy as np  # noqa: E402,F401  (patched by grumpy on import)

import pytest  # noqa: E402

# the back end enable() chose: GRUMPY_BACKEND, or GRUMPY_DEVICE (auto picks
# the GPU where a driver and a device answer)
BACKEND = grumpy.stats().get("backend") or "cpu"
NUMPY_BACKEND = BACKEND == "numpy"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cpu_backend: asserts how the CPU back end did the work (LLVM kernels and their rounding, OpenBLAS "
        "calls, its spurious IEEE flags, its disk cache, Python threads); skipped under GRUMPY_BACKEND=numpy, "
        "whose kernels are NumPy's own loops")


def pytest_collection_modifyitems(config, items):
    if BACKEND == "cpu":
        return
    skip = pytest.mark.skip(reason=f"asserts the CPU back end's own work; the {BACKEND} back end runs other kernels")
    for item in items:
        if "cpu_backend" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    """Only grumpy's own code may resolve a fault on the faulting thread
    (core/guard.c: the resolver thread, or a thread holding the core lock);
    a fault of code that is not grumpy's always goes to the resolver thread.
    In this process's whole run no fault may have been resolved inline,
    no thread may have taken the core lock while holding it, and nothing
    that expects it held may have been called without it."""
    s = grumpy.stats()
    if s.get("guard_faults_inline", 0) and session.exitstatus == 0:
        print(f"\nconftest: {s['guard_faults_inline']} of {s['guard_faults']} faults were resolved inline "
              "(on the faulting thread, in its signal handler)")
        session.exitstatus = 1
    if s.get("lock_reentries", 0) and session.exitstatus == 0:
        print(f"\nconftest: the core lock was taken {s['lock_reentries']} times by a thread that held it "
              "(core/base.c: it is not recursive)")
        session.exitstatus = 1
    if s.get("lock_unheld", 0) and session.exitstatus == 0:
        print(f"\nconftest: {s['lock_unheld']} calls that expect the core lock were made without it (GP_EXPECT_LOCKED)")
        session.exitstatus = 1
