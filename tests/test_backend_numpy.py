"""The back-end seam (core/backend.h) carries a second implementation:
GRUMPY_BACKEND=numpy interprets the planner's fused programs with NumPy's
ufuncs.  The same programs print the same numbers on both back ends, the
NumPy one launching the same kernels without compiling any."""

import json
import os
import subprocess
import sys

import pytest
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PROGRAMS = {
    "blackscholes": ["200000"],
    "jacobi": [],
    "kmeans": [],
    "softmax": [],
    "mixed": ["300000", "2"],
    # np.roll: kernels split into boxes of the index space
    "programs/shallow_water": ["120", "12"],
}

WRAPPER = """
import atexit, json, runpy, sys, grumpy
atexit.register(lambda: print("STATS " + json.dumps({k: v for k, v in grumpy.stats().items() if k != "fallbacks"}),
                              file=sys.stderr))
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def env_for(backend, **extra):
    """The child's environment: no GRUMPY_* of this session's, back end
    `backend`, and extra GRUMPY_* settings."""
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="65536", GRUMPY_BACKEND=backend, **extra)
    return env


def run(prog, args, backend, tmp, **extra):
    """(stdout lines without timings, stats dict) of program prog on a back end."""
    wrapper = os.path.join(tmp, "wrapper.py")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    r = subprocess.run([sys.executable, "-m", "grumpy.run", wrapper, prog] + args, env=env_for(backend, **extra),
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    stats = json.loads([l for l in r.stderr.splitlines() if l.startswith("STATS ")][-1][6:])
    out = [l for l in r.stdout.splitlines() if "seconds" not in l and " ms" not in l]
    return out, stats


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_print_the_same_on_both_back_ends(name, tmp_path):
    prog = os.path.join(ROOT, "tools", f"{name}.py")
    cpu_out, cpu = run(prog, PROGRAMS[name], "cpu", str(tmp_path))
    np_out, nps = run(prog, PROGRAMS[name], "numpy", str(tmp_path))
    assert cpu["backend"] == "cpu" and nps["backend"] == "numpy"
    assert np_out == cpu_out
    # the same plans, launched through the seam; nothing compiled by LLVM
    assert nps["kernels_launched"] == cpu["kernels_launched"] > 0
    assert nps["kernels_compiled"] == 0 < cpu["kernels_compiled"]
    assert nps["plan_failures"] == cpu["plan_failures"] == 0


def test_an_unknown_back_end_is_one_clear_error():
    r = subprocess.run([sys.executable, "-c", "import grumpy; grumpy.enable()"], env=env_for("cuda-please"),
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "GRUMPY_BACKEND=cuda-please: expected cpu (LLVM kernels, the default), gpu (CUDA) or numpy" in r.stderr
