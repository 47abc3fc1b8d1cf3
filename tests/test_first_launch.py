"""Issue "never slower": with GRUMPY_FIRST_LAUNCH_MS=30 (about one O3
compile) a kernel's first launch is NumPy's when compiling it would cost
more than NumPy's whole work (core/plan.c first_launch_to_numpy).  A
statement run once is never compiled and LLVM is never loaded for it; its
second launch compiles; large work, a kernel already in the disk cache,
the default (0) and capture at every size compile (or load) at the first.
Values are NumPy's every time."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SCRIPT = """
import json, sys
import numpy as np, grumpy
n, times = int(sys.argv[1]), int(sys.argv[2])
a = np.copy(np.linspace(0, 1, n)); b = np.copy(np.linspace(1, 2, n))
pa, pb = np.asarray(a).view(np.ndarray), np.asarray(b).view(np.ndarray)
want = (pa * pb + 1.0) * pa
same = []
for _ in range(times):
    c = (a * b + 1.0) * a
    same.append(bool(np.array_equal(np.asarray(c).view(np.ndarray), want)))
llvm = any("libLLVM" in line for line in open("/proc/self/maps"))
s = grumpy.stats()
print(json.dumps({"same": same, "llvm": llvm, **{k: s[k] for k in
      ("first_launches_numpy", "kernels_compiled", "kernels_launched", "disk_cache_hits", "cache_hits",
       "plan_failures")}}))
"""


def run(tmp_path, n, times, cache="off", **env):
    script = tmp_path / "first.py"
    script.write_text(SCRIPT)
    e = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
    e.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR=str(cache), GRUMPY_BACKEND="cpu", GRUMPY_FIRST_LAUNCH_MS="30")
    e.update(env)
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script), str(n), str(times)], env=e,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


MIB = 131072  # float64 elements in 1 MiB


def test_a_statement_run_once_is_numpys_and_loads_no_compiler(tmp_path):
    s = run(tmp_path, 2 * MIB, 1)
    assert s["same"] == [True]
    assert s["first_launches_numpy"] == 1 and s["plan_failures"] == 0
    assert s["kernels_compiled"] == 0 and s["kernels_launched"] == 0
    assert not s["llvm"]


def test_the_second_launch_compiles_and_runs_the_kernel(tmp_path):
    s = run(tmp_path, 2 * MIB, 3)
    assert s["same"] == [True] * 3
    assert s["first_launches_numpy"] == 1
    assert s["kernels_compiled"] == 1 and s["kernels_launched"] == 2
    assert s["llvm"]


def test_large_work_compiles_at_its_first_launch(tmp_path):
    # 32 MiB operands: two operations over ~96 MiB each, beyond 30 ms of NumPy at 4 bytes/ns
    s = run(tmp_path, 32 * MIB, 1)
    assert s["same"] == [True]
    assert s["first_launches_numpy"] == 0
    assert s["kernels_compiled"] == 1 and s["kernels_launched"] == 1


def test_a_kernel_in_the_disk_cache_runs_at_its_first_launch(tmp_path):
    cache = tmp_path / "cache"
    first = run(tmp_path, 2 * MIB, 2, cache=cache)
    assert first["kernels_compiled"] == 1 and first["first_launches_numpy"] == 1
    again = run(tmp_path, 2 * MIB, 1, cache=cache)
    assert again["same"] == [True]
    assert again["first_launches_numpy"] == 0 and again["kernels_compiled"] == 0
    assert again["disk_cache_hits"] == 1 and again["kernels_launched"] == 1
    assert again["cache_hits"] == 0  # one launch, loaded from disk: not also a memory hit


@pytest.mark.parametrize("env", [{"GRUMPY_FIRST_LAUNCH_MS": "0"}, {"GRUMPY_MIN_BYTES": "0"}],
                         ids=["default", "every-size"])
def test_the_rule_is_off_by_default_and_when_capturing_every_size(env, tmp_path):
    s = run(tmp_path, 2 * MIB, 1, **env)
    assert s["same"] == [True]
    assert s["first_launches_numpy"] == 0
    assert s["kernels_compiled"] == 1 and s["kernels_launched"] == 1
