"""core/ has one dependency direction (issue "one direction through the
core"): tools/core_deps.py passes on the build, and fails when a lower
layer calls a higher one."""

import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOOL = os.path.join(ROOT, "tools", "core_deps.py")
OBJS = os.path.join(ROOT, "build", "core")


def run(objdir):
    return subprocess.run([sys.executable, TOOL, objdir], capture_output=True, text=True)


def test_the_build_has_one_direction():
    r = run(OBJS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all downward" in r.stdout
    # the layers are real: plan drives the back end, which drives the JIT
    assert "plan -> backend_cpu" in r.stdout and "backend_cpu -> jit" in r.stdout


def test_an_upward_call_is_found(tmp_path):
    for o in glob.glob(os.path.join(OBJS, "*.o")):
        shutil.copy(o, tmp_path)
    # the DAG computing a node again (the cycle this issue removed)
    src = tmp_path / "up.c"
    src.write_text("int gp_node_materialize(void *n);\nint gp_dag_up(void *n) { return gp_node_materialize(n); }\n")
    os.remove(tmp_path / "dag.o")
    subprocess.run(["cc", "-c", str(src), "-o", str(tmp_path / "dag.o")], check=True)
    r = run(str(tmp_path))
    assert r.returncode == 1
    assert "dag uses plan (gp_node_materialize)" in r.stdout
