"""The IPython extension (grumpy/ipython.py): `%load_ext grumpy` turns capture
on, `%%grumpy` runs a cell under capture and prints what it did.

Every test runs IPython in a child process (capture is for the whole process,
and this session's own is on already), with the repository first on
PYTHONPATH, no GRUMPY_* variable but those set here, and IPYTHONDIR in
tmp_path (no profile or history of the user's).  The table printed after a
``%%grumpy`` cell is checked against grumpy.stats() read by the child just
before and after that cell.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
import gpcheck

pytest.importorskip("IPython", reason="IPython is not installed (make installs it into .venv)")

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 120  # seconds per child
THREADS = 3  # GRUMPY_THREADS of the children: the line of %load_ext must say it

# The cell run under %%grumpy: 8 MB arrays (above the default threshold), a
# fused map-reduce and a call grumpy hands to NumPy.
CELL = """\
import numpy as np
a = np.ones(1_000_000)
total = float((a * 2.0 + 1.0).sum())
first = float(np.sort(a[::-1])[0])
print("kind", type(a).__module__, total, first)
"""

# Child program: an InteractiveShell runs the cells named on the command
# line (JSON list); stats before and after the last one go to stdout as JSON.
SHELL = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell

cells = json.loads(sys.argv[1])
ip = InteractiveShell.instance(colors="NoColor")
for cell in cells[:-1]:
    ip.run_cell(cell)
import grumpy
# counters start at zero; reading them imports grumpy's extension, and with
# it NumPy, which the cell should find not yet imported when capture is off
before = grumpy.stats() if grumpy.enabled() else None
result = ip.run_cell(cells[-1])
after = grumpy.stats()
print("STATS " + json.dumps({"before": before, "after": after, "enabled": grumpy.enabled(),
                             "error": repr(result.error_in_exec)}))
"""


def _env(tmp_path):
    env = gpcheck.subprocess_env()
    env["PYTHONPATH"] = str(ROOT)
    env["GRUMPY_THREADS"] = str(THREADS)
    env["GRUMPY_CACHE_DIR"] = "off"  # every child compiles; no user cache touched
    env["IPYTHONDIR"] = str(tmp_path / "ipython")
    return env


def _shell(tmp_path, cells):
    proc = subprocess.run(
        [sys.executable, "-c", SHELL, json.dumps(cells)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    stats_line = [line for line in out.splitlines() if line.startswith("STATS ")]
    assert len(stats_line) == 1, out + proc.stderr
    return out, json.loads(stats_line[0][len("STATS "):])


def _table(out):
    """{label: value text} of the table printed after a %%grumpy cell."""
    lines = out.splitlines()
    start = lines.index("grumpy: this cell")
    rows = {}
    for line in lines[start + 1:]:
        m = re.fullmatch(r"  (\S.*?\S)  +(\S.*)", line)
        if not m:
            break
        rows[m.group(1)] = m.group(2)
    return rows


def _check_table(rows, before, after):
    if before is None:  # capture was off before the cell: every counter was zero
        before = {k: {} if isinstance(v, dict) else 0 for k, v in after.items()}

    def delta(key):
        return after[key] - before[key]

    assert set(rows) == {
        "operations captured", "kernels compiled", "kernels launched", "compile seconds", "run seconds",
        "fallbacks",
    }
    assert int(rows["operations captured"]) == delta("ops_captured")
    assert int(rows["kernels compiled"]) == delta("kernels_compiled")
    assert int(rows["kernels launched"]) == delta("kernels_launched")
    assert abs(float(rows["compile seconds"]) - delta("compile_seconds")) <= 0.0006
    assert abs(float(rows["run seconds"]) - delta("run_seconds")) <= 0.0006
    grown = {k: v - before["fallbacks"].get(k, 0) for k, v in after["fallbacks"].items()
             if v > before["fallbacks"].get(k, 0)}
    expected = ", ".join(f"{k} {v}" for k, v in sorted(grown.items(), key=lambda kv: (-kv[1], kv[0]))) or "0"
    assert rows["fallbacks"] == expected
    assert delta("ops_captured") > 0 and delta("kernels_launched") > 0 and delta("kernels_compiled") > 0


def test_load_ext_turns_capture_on(tmp_path):
    code = textwrap.dedent("""\
        %load_ext grumpy
        import grumpy, numpy as np
        print("state", grumpy.enabled(), type(np.ones(1_000_000)).__module__)
        """)
    proc = subprocess.run(
        [sys.executable, "-m", "IPython", "--quick", "--no-banner", "--colors=NoColor", "-c", code],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"grumpy: capture on, {THREADS} threads"
    assert "state True grumpy" in lines


def test_cell_magic_prints_what_the_cell_did(tmp_path):
    out, s = _shell(tmp_path, ["%load_ext grumpy", "%%grumpy\n" + CELL + "total * 2\n"])
    assert f"grumpy: capture on, {THREADS} threads" in out.splitlines()
    assert "kind grumpy 3000000.0 1.0" in out.splitlines()
    assert re.search(r"^Out\[\d+\]: 6000000\.0$", out, re.M), out  # a final expression is the cell's output
    assert s["error"] == "None"
    _check_table(_table(out), s["before"], s["after"])


def test_cell_magic_without_load_ext_enables_first(tmp_path):
    # register_magics: the magic alone (as from a start-up file), capture off
    cells = [
        "import grumpy, grumpy.ipython; grumpy.ipython.register_magics(get_ipython())",
        "print('before', grumpy.enabled())",
        "%%grumpy\n" + CELL,
    ]
    out, s = _shell(tmp_path, cells)
    lines = out.splitlines()
    assert "before False" in lines
    assert lines.index(f"grumpy: capture on, {THREADS} threads") < lines.index("kind grumpy 3000000.0 1.0")
    assert s["enabled"]
    _check_table(_table(out), s["before"], s["after"])


def test_cell_magic_reports_a_failing_cell(tmp_path):
    out, s = _shell(tmp_path, ["%load_ext grumpy", "%%grumpy\n" + CELL + "raise ValueError('cell failed')\n"])
    assert "ValueError" in s["error"]
    assert "kind grumpy 3000000.0 1.0" in out.splitlines()
    _check_table(_table(out), s["before"], s["after"])


def test_load_ext_after_numpy_says_older_arrays_stay_numpy(tmp_path):
    out, s = _shell(tmp_path, ["import numpy as np; old = np.ones(1_000_000)", "%load_ext grumpy"])
    assert (
        f"grumpy: capture on, {THREADS} threads (NumPy was imported before: arrays made before now stay "
        "plain NumPy arrays)" in out.splitlines()
    )
    assert s["enabled"]
