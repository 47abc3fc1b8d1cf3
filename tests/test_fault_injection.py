"""Fault injection (issue "faults and security"): GRUMPY_DEBUG_FAIL=N makes
the N-th failable step of a run fail as the system would when out of memory
-- a buffer's mmap, mprotect or mremap, a kernel compile, a disk-cache
read, a kernel thread's start.  Walking N over the whole run of the
Black-Scholes, Jacobi and k-means programs of tools/, every run must print
NumPy's output, or stop with NumPy's MemoryError after printing a prefix of
it: never a crash, a hang or a wrong number."""

import os
import subprocess
import sys

import pytest
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WRAPPER = """
import runpy, sys
prog = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(prog, run_name="__main__")
finally:
    import grumpy
    print("fail_points", grumpy.stats()["fail_points"], file=sys.stderr)
"""

PROGRAMS = {
    "blackscholes": ["tools/blackscholes.py", "100000", "float64", "2"],
    "jacobi": ["tools/jacobi.py", "300", "5"],
    "kmeans": ["tools/kmeans.py", "100000", "8", "3"],
}
RUNS = int(os.environ.get("FAULT_WALK_RUNS", "24"))  # values of N per program, spread over its whole run (a large value walks every N)


def env(**extra):
    e = gpcheck.subprocess_env()
    e.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="65536", **extra)
    return e


def under_grumpy(args, fail_at):
    wrapper = os.path.join(ROOT, "build", "_fault_walk.py")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    try:
        return subprocess.run([sys.executable, "-m", "grumpy.run", wrapper, *args], cwd=ROOT, capture_output=True,
                              text=True, env=env(GRUMPY_DEBUG_FAIL=str(fail_at)), timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"GRUMPY_DEBUG_FAIL={fail_at}: hung")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_injected_failure_gives_numpys_output_or_numpys_memory_error(name):
    args = PROGRAMS[name]
    plain = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=env(), timeout=120)
    assert plain.returncode == 0
    clean = under_grumpy(args, 0)
    assert clean.returncode == 0 and clean.stdout == plain.stdout, clean.stderr[-2000:]
    total = int(clean.stderr.split("fail_points")[-1].split()[0])
    assert total > 20, "too few failable steps: is the run captured?"
    step = max(1, total // RUNS)
    outcomes = {"numpy's output": 0, "MemoryError": 0}
    for n in range(1, total + 1, step):
        r = under_grumpy(args, n)
        where = f"GRUMPY_DEBUG_FAIL={n} of {total}: rc {r.returncode}\n{r.stderr[-3000:]}"
        if r.returncode == 0:
            assert r.stdout == plain.stdout, where
            outcomes["numpy's output"] += 1
        else:
            assert r.returncode == 1 and "MemoryError" in r.stderr.split("Traceback")[-1], where
            assert plain.stdout.startswith(r.stdout), where
            outcomes["MemoryError"] += 1
    print(name, total, "failable steps;", outcomes)
