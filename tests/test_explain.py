"""Tests of ``python -m grumpy.explain`` (grumpy/explain.py, hooks/explain.c,
core/explain.c): per line of the user's program the operations recorded,
the kernels they went into with time, bytes and compile source, and every
call handed to NumPy with its reason; the HTML report and its DAG pictures;
the program's output and exit status exactly as under plain python.

Every program runs in a child process with its own environment (no
GRUMPY_* of this session), kernels cached in a fresh directory per test.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from grumpy import explain
import gpcheck

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 180  # seconds per child process

FUSED = """\
import numpy as np

n = 1 << 20
a = np.linspace(0.0, 1.0, n)
b = np.linspace(1.0, 2.0, n)
total = 0.0
for i in range(4):
    c = (a * b + 2.0) * a - b  # LINE fused
    total += float(c.sum())  # LINE sum
print(f"total {total:.6f}")
"""

FALLBACKS = """\
import numpy as np

n = 1 << 20
a = np.linspace(0.0, 1.0, n)
s = np.sort(a)  # LINE sort
z = a + 1j  # LINE complex
head = a[:100] * 2.0  # LINE small
d = a * 3.0 - 1.0  # LINE fused
print(float(s[-1]), float(z.imag.sum()), float(head.sum()), float(d.sum()))
"""


def lines_of(source):
    """{tag: line number} of the '# LINE tag' comments of a program."""
    return {m.group(1): i for i, text in enumerate(source.splitlines(), 1) for m in [re.search(r"# LINE (\w+)", text)]
            if m}


def child_env(tmp_path, **extra):
    env = gpcheck.subprocess_env()
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["GRUMPY_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def run(args, tmp_path, **extra):
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=child_env(tmp_path, **extra),
                          capture_output=True, text=True, timeout=TIMEOUT)


def write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def section(stderr, title):
    """The rows (lists of cells split on 2+ spaces) of one table of the report."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def table(stderr, title):
    """One table of the report as dicts keyed by its header."""
    rows = section(stderr, title)
    return [dict(zip(rows[0], r)) for r in rows[1:]] if rows and rows[0][0] != "(none)" else []


def test_fused_loop_is_charged_to_its_lines(tmp_path):
    prog = write(tmp_path, "fused.py", FUSED)
    at = lines_of(FUSED)
    r = run(["-m", "grumpy.explain", "fused.py"], tmp_path, GRUMPY_STATS_JSON=str(tmp_path / "stats.json"))
    assert r.returncode == 0, r.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())
    plain = run([str(prog)], tmp_path)
    assert r.stdout == plain.stdout and r.stdout.startswith("total ")

    per_line = {row["line"]: row for row in table(r.stderr, "per line")}
    fused = per_line[f"fused.py:{at['fused']}"]
    assert fused["ops"] == "16"  # 4 operations, 4 times
    assert fused["source"].startswith("c = (a * b + 2.0) * a - b")
    assert float(fused["time s"]) > 0 and float(fused["GB"]) > 0
    summed = per_line[f"fused.py:{at['sum']}"]
    assert summed["ops"] == "4" and summed["kernels"] == fused["kernels"]

    kernels = {row["kernel"]: row for row in table(r.stderr, "kernels")}
    k = kernels[fused["kernels"].split()[0]]
    assert k["kind"] == "map-reduce" and k["ops"] == "5" and int(k["launches"]) == 4
    assert float(k["time s"]) > 0 and float(k["GB/s"]) > 0 and k["% of bw"].endswith("%")
    assert k["code"] == "compiled 1, reused 3"
    assert k["lines"] == f"fused.py:{at['fused']}-{at['sum']}"
    # the kernels' bytes and launches are grumpy.stats()'s
    assert abs(float(k["GB"]) - stats["bytes_moved"] / 1e9) < 0.0006
    assert stats["kernels_launched"] == 4 and stats["ops_captured"] == 20
    assert "the machine copies" in r.stderr and "calls handed to NumPy, by count:\n  (none)" in r.stderr


def test_second_run_loads_kernels_from_the_disk_cache(tmp_path):
    write(tmp_path, "fused.py", FUSED)
    first = run(["-m", "grumpy.explain", "--bandwidth", "10", "fused.py"], tmp_path)
    second = run(["-m", "grumpy.explain", "--bandwidth", "10", "fused.py"], tmp_path)
    assert first.returncode == second.returncode == 0, second.stderr
    assert table(first.stderr, "kernels")[0]["code"] == "compiled 1, reused 3"
    assert table(second.stderr, "kernels")[0]["code"] == "disk 1, reused 3"
    assert "% of bw" in second.stderr and "given" in second.stderr


def test_fallbacks_are_listed_with_their_line_and_reason(tmp_path):
    prog = write(tmp_path, "falls.py", FALLBACKS)
    at = lines_of(FALLBACKS)
    r = run(["-m", "grumpy.explain", "--bandwidth", "10", "falls.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == run([str(prog)], tmp_path).stdout

    calls = {(row["line"], row["call"]): row for row in table(r.stderr, "calls handed to NumPy")}
    sort = calls[(f"falls.py:{at['sort']}", "sort")]
    assert sort["count"] == "1" and sort["reason"] == "a NumPy function grumpy does not capture"
    cplx = calls[(f"falls.py:{at['complex']}", "add")]
    assert cplx["reason"].startswith("an operand's dtype is not computed by grumpy")
    small = calls[(f"falls.py:{at['small']}", "multiply")]
    assert small["reason"] == "result smaller than GRUMPY_MIN_BYTES: NumPy computed it at once"

    per_line = {row["line"]: row for row in table(r.stderr, "per line")}
    assert per_line[f"falls.py:{at['sort']}"]["to NumPy"] == "1"
    assert per_line[f"falls.py:{at['sort']}"]["kernels"] == "-"
    fused = per_line[f"falls.py:{at['fused']}"]
    assert fused["ops"] == "2" and fused["kernels"].startswith("K")


def test_plan_failures_are_reasons_too(tmp_path):
    write(tmp_path, "fused.py", FUSED)
    at = lines_of(FUSED)
    r = run(["-m", "grumpy.explain", "--bandwidth", "10", "fused.py"], tmp_path, GRUMPY_DEBUG_JIT_FAIL="1")
    assert r.returncode == 0, r.stderr
    calls = {(row["line"], row["call"]): row for row in table(r.stderr, "calls handed to NumPy")}
    row = calls[(f"fused.py:{at['sum']}", "sum")]
    assert row["count"] == "4"
    assert row["reason"] == "the planner could not run it: JIT failure forced by GRUMPY_DEBUG_JIT_FAIL"
    assert table(r.stderr, "kernels") == []


def test_html_has_the_tables_and_a_dag_picture(tmp_path):
    write(tmp_path, "falls.py", FALLBACKS)
    at = lines_of(FALLBACKS)
    r = run(["-m", "grumpy.explain", "--html", "out/report.html", "--bandwidth", "10", "falls.py"], tmp_path)
    assert r.returncode == 0, r.stderr  # out/ is made
    page = (tmp_path / "out" / "report.html").read_text()
    for text in ("Per line, by kernel time", "Kernels, by time", "Calls handed to NumPy",
                 f"falls.py:{at['sort']}", "a NumPy function grumpy does not capture", "map-reduce"):
        assert text in page, text
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    svg = tmp_path / "out" / "report_K1.svg"
    assert svg.exists() and svg.read_text().lstrip().startswith("<?xml")
    assert "<svg" in page and "report_K1.svg" in page
    assert "multiply" in svg.read_text() and f"line {at['fused']}" in svg.read_text()


def test_html_without_dot_says_why(tmp_path):
    write(tmp_path, "fused.py", FUSED)
    bare = tmp_path / "bin"
    bare.mkdir()
    r = run(["-m", "grumpy.explain", "--html", "report.html", "--bandwidth", "10", "fused.py"], tmp_path,
            PATH=str(bare))
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "report.html").read_text()
    assert "Kernels, by time" in page and "No pictures:" in page and "dot" in page
    assert not list(tmp_path.glob("report_K*.svg"))
    assert "no pictures" in r.stderr


def test_module_mode_exit_status_and_traceback(tmp_path):
    write(tmp_path, "mod_ok.py", FUSED)
    r = run(["-m", "grumpy.explain", "--bandwidth", "10", "-m", "mod_ok"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("total "), r.stderr
    assert "mod_ok.py:" in r.stderr and "map-reduce" in r.stderr

    write(tmp_path, "fails.py", """\
        import sys
        import numpy as np
        a = np.ones(1 << 20) * 2.0
        print(float(a.sum()))
        if sys.argv[1:] == ["exit"]:
            sys.exit(3)
        raise ValueError("boom")
        """)
    r = run(["-m", "grumpy.explain", "--bandwidth", "10", "fails.py"], tmp_path)
    plain = run(["fails.py"], tmp_path)
    assert r.returncode == plain.returncode == 1 and r.stdout == plain.stdout
    assert "ValueError: boom" in r.stderr and "grumpy/explain.py" not in r.stderr and "runpy" not in r.stderr
    assert "kernels, by time:" in r.stderr  # the report after the traceback
    r = run(["-m", "grumpy.explain", "--bandwidth", "10", "fails.py", "exit"], tmp_path)
    assert r.returncode == 3


@pytest.mark.parametrize("args,message", [
    (["--top", "x", "p.py"], "--top wants a number"),
    (["--html"], "--html needs a value"),
    (["--bogus", "p.py"], "unknown option --bogus"),
    ([], "usage: python -m grumpy.explain"),
])
def test_bad_usage_exits_with_2(tmp_path, args, message):
    r = run(["-m", "grumpy.explain", *args], tmp_path)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_parse_and_line_lists():
    opts, script, module, args = explain.parse(["--top=5", "-o", "t.txt", "--", "p.py", "--top", "1"])
    assert opts["top"] == 5 and opts["output"] == "t.txt" and (script, module, args) == ("p.py", None, ["--top", "1"])
    opts, script, module, args = explain.parse(["-mpkg.mod", "x"])
    assert (script, module, args) == (None, "pkg.mod", ["x"])
    assert explain._line_list(["a.py:3", "a.py:4", "a.py:5", "a.py:9", "b.py:2"]) == "a.py:3-5,9 b.py:2"
