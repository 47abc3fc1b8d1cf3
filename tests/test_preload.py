"""Tests of the LD_PRELOAD shim (interpose/preload.c) and interpose/grumpy-exec.

The Makefile builds the shim at build/libgrumpy_preload.so; these tests are
skipped, saying so, only when that file is missing.  Each test starts a
command under grumpy-exec whose Python process spawns a Python child; the
child reports what it sees.  PYTHONPATH and GRUMPY are removed from the
environment first, so whatever the child gets comes from the shim.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHIM = ROOT / "build" / "libgrumpy_preload.so"
GRUMPY_EXEC = ROOT / "interpose" / "grumpy-exec"
TIMEOUT = 120

pytestmark = pytest.mark.skipif(
    not SHIM.exists(), reason=f"{SHIM} is not built (the Makefile builds it: make build)"
)

# The grandchild: reports its environment and whether grumpy is on.
REPORT = (
    "import json, os, sys\n"
    "info = {'GRUMPY': os.environ.get('GRUMPY'), 'PYTHONPATH': os.environ.get('PYTHONPATH'),\n"
    "        'LD_PRELOAD': os.environ.get('LD_PRELOAD')}\n"
    "import grumpy\n"
    "info['enabled'] = bool(grumpy.enabled())\n"
    "info['grumpy_dir'] = os.path.dirname(os.path.realpath(grumpy.__file__))\n"
    "print(json.dumps(info))\n"
)

# The child: spawns the grandchild with an unchanged environment.
SPAWN = (
    "import subprocess, sys\n"
    "done = subprocess.run([sys.executable, '-c', sys.argv[1]], capture_output=True, text=True)\n"
    "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr); sys.exit(done.returncode)\n"
)


def clean_env(**extra):
    env = dict(os.environ)
    for name in ("GRUMPY", "PYTHONPATH", "GRUMPY_HOME", "GRUMPY_STATS_JSON"):
        env.pop(name, None)
    if "LD_PRELOAD" in env:  # keep e.g. libasan, drop any grumpy shim
        kept = [p for p in env["LD_PRELOAD"].replace(":", " ").split() if "libgrumpy_preload" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    env.update(extra)
    return env


def run(argv, env=None, cwd=None):
    return subprocess.run(
        argv, env=env or clean_env(), cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT
    )


def report_of(proc):
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_subprocess_child_runs_with_grumpy(tmp_path):
    proc = run([str(GRUMPY_EXEC), sys.executable, "-c", SPAWN, REPORT], cwd=tmp_path)
    info = report_of(proc)
    assert info["GRUMPY"] == "1"
    assert info["enabled"] is True, proc.stderr
    assert str(SHIM) in info["LD_PRELOAD"]
    assert info["PYTHONPATH"].split(os.pathsep) == [str(ROOT)]  # once, not once per process
    assert info["grumpy_dir"] == str(ROOT / "grumpy")


def test_through_a_shell_and_existing_pythonpath(tmp_path):
    env = clean_env(PYTHONPATH="/nonexistent/a")
    inner = f"{sys.executable} -c \"$1\" \"$2\""
    proc = run([str(GRUMPY_EXEC), "sh", "-c", inner, "sh", SPAWN, REPORT], env=env, cwd=tmp_path)
    info = report_of(proc)
    assert info["enabled"] is True, proc.stderr
    assert info["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/nonexistent/a"]


def test_explicit_grumpy_0_is_respected(tmp_path):
    proc = run([str(GRUMPY_EXEC), sys.executable, "-c", SPAWN, REPORT], env=clean_env(GRUMPY="0"), cwd=tmp_path)
    info = report_of(proc)
    assert info["GRUMPY"] == "0"
    assert info["enabled"] is False


def test_grumpy_home_overrides_the_root(tmp_path):
    code = "import os; print(os.environ.get('PYTHONPATH'))"
    env = clean_env(LD_PRELOAD=str(SHIM), GRUMPY_HOME=str(tmp_path))
    proc = run([sys.executable, "-S", "-c", code], env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path)


def test_exit_status_and_arguments_pass_through(tmp_path):
    proc = run([str(GRUMPY_EXEC), "sh", "-c", 'printf "%s|" "$@"; exit 7', "sh", "a b", "", "c"], cwd=tmp_path)
    assert proc.returncode == 7
    assert proc.stdout == "a b||c|"


def test_grumpy_exec_without_command():
    proc = run([str(GRUMPY_EXEC)])
    assert proc.returncode == 2
    assert "usage" in proc.stderr


def test_the_console_script_module_runs_a_tree_with_grumpy(tmp_path):
    """grumpy/_exec.py is what pip installs as the grumpy-exec console
    script (pyproject.toml [project.scripts]); from a repository built with
    make it preloads build/libgrumpy_preload.so, as interpose/grumpy-exec."""
    env = clean_env(PYTHONPATH=str(ROOT))
    proc = run([sys.executable, "-m", "grumpy._exec", sys.executable, "-c", SPAWN, REPORT], env=env, cwd=tmp_path)
    info = report_of(proc)
    assert info["GRUMPY"] == "1" and info["enabled"] is True, proc.stderr
    assert info["LD_PRELOAD"].split(":")[0] == str(SHIM)
    assert info["PYTHONPATH"].split(os.pathsep) == [str(ROOT)]
    proc = run([sys.executable, "-m", "grumpy._exec", "sh", "-c", "exit 7"], env=env, cwd=tmp_path)
    assert proc.returncode == 7
    proc = run([sys.executable, "-m", "grumpy._exec"], env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "usage" in proc.stderr
    proc = run([sys.executable, "-m", "grumpy._exec", "no-such-command-here"], env=env, cwd=tmp_path)
    assert proc.returncode == 127 and "no-such-command-here" in proc.stderr


def test_an_installed_shim_leaves_pythonpath_alone(tmp_path):
    """Installed by pip, the shim is site-packages/grumpy/_preload*.so; the
    root two levels up is site-packages itself (it holds grumpy.pth): its
    interpreter enables grumpy through grumpy.pth, and other interpreters
    must not get its packages on PYTHONPATH."""
    import shutil

    site = tmp_path / "site-packages"
    (site / "grumpy").mkdir(parents=True)
    (site / "grumpy.pth").write_text("")
    shim = site / "grumpy" / "_preload.cpython-311-x86_64-linux-gnu.so"
    shutil.copy(SHIM, shim)
    code = "import os; print(os.environ.get('PYTHONPATH'), os.environ.get('GRUMPY'))"
    proc = run([sys.executable, "-S", "-c", code], env=clean_env(LD_PRELOAD=str(shim)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "1"]
    (site / "grumpy.pth").unlink()  # a repository-like tree: its root goes on the path
    proc = run([sys.executable, "-S", "-c", code], env=clean_env(LD_PRELOAD=str(shim)))
    assert proc.stdout.split() == [str(site), "1"]
