"""The pytest plugin (grumpy/pytest_plugin.py): `pytest --grumpy` runs a test
session with capture on and ends with a "grumpy" section of counters.

Each test runs pytest in a child process on a small test file generated in
tmp_path, with the repository first on PYTHONPATH and the plugin named by
``-p grumpy.pytest_plugin`` (or found through a ``pytest11`` entry point made
from pyproject.toml's declaration).  The child's environment has none of the
GRUMPY_* variables this session's conftest.py set, so the plugin's options
alone decide what grumpy does.  The numbers in the section are checked
against the counters grumpy itself writes at exit (GRUMPY_STATS_JSON).
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

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 120  # seconds per child pytest; NumPy's TestDivision takes ~12 s at GRUMPY_MIN_BYTES=0
SECTION = re.compile(r"^=+ grumpy =+$", re.M)

# Generated test module.  A conftest.py beside it makes an array when pytest
# loads it, so the test sees whether capture was on before conftest files.
CONFTEST = """
import numpy as np

AT_CONFTEST = np.ones(1_000_000)  # 8 MB: grumpy's at every threshold
"""

TESTS = """
import os

import numpy as np

import conftest

EXPECT = os.environ["EXPECT_GRUMPY"] == "1"
N = int(os.environ.get("ARRAY_LEN", "1000000"))  # 8 MB of float64: above the default threshold
THRESHOLD = int(os.environ.get("GRUMPY_MIN_BYTES", 1 << 20))  # set by --grumpy-min-bytes


def is_grumpy(a):
    return type(a).__module__.startswith("grumpy")


def test_conftest_array_kind():
    assert is_grumpy(conftest.AT_CONFTEST) == EXPECT


def test_arithmetic_and_sum():
    a = np.ones(N)
    assert is_grumpy(a) == (EXPECT and a.nbytes >= THRESHOLD)
    assert float((a * 2.0 + 1.0).sum()) == 3.0 * N


def test_sort():
    a = np.arange(N, dtype=np.float64)[::-1]
    assert float(np.sort(a)[0]) == 0.0
"""


def _env(tmp_path, **extra):
    env = gpcheck.subprocess_env(strip=("GRUMPY", "PYTEST_"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), extra.pop("PYTHONPATH", None)]))
    env["GRUMPY_CACHE_DIR"] = "off"  # every child compiles: kernels_compiled > 0, no user cache touched
    env["GRUMPY_STATS_JSON"] = str(tmp_path / "stats.json")
    env.update(extra)
    return env


def _run(tmp_path, args, plugin=True, **env):
    """Run pytest in a child on the generated tests; returns (returncode, output)."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_generated.py").write_text(textwrap.dedent(TESTS))
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    if plugin:
        cmd += ["-p", "grumpy.pytest_plugin"]
    proc = subprocess.run(
        cmd + list(args),
        cwd=tmp_path,
        env=_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _section(out):
    """Lines of the grumpy section (from its title to pytest's final line)."""
    m = SECTION.search(out)
    assert m, f"no grumpy section in:\n{out}"
    return out[m.end():].strip().splitlines()


def _number(lines, label):
    for line in lines:
        if line.startswith(label + ":"):
            return int(line.split(":", 1)[1].split()[0])
    raise AssertionError(f"no line {label!r} in {lines}")


def _check_against_exit_stats(tmp_path, lines):
    """The section's numbers are the counters grumpy wrote at exit."""
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert _number(lines, "operations captured") == stats["ops_captured"]
    assert _number(lines, "kernels compiled") == stats["kernels_compiled"]
    assert _number(lines, "kernels launched") == stats["kernels_launched"]
    assert _number(lines, "guard faults") == stats["guard_faults"]
    fallbacks = [line for line in lines if line.startswith("fallbacks to NumPy:")]
    assert len(fallbacks) == 1
    if stats["fallbacks"]:
        top = sorted(stats["fallbacks"].items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        assert fallbacks[0] == (
            f"fallbacks to NumPy: {sum(stats['fallbacks'].values())} calls, {len(stats['fallbacks'])} names: "
            + ", ".join(f"{name} {count}" for name, count in top)
            + (f", ... {len(stats['fallbacks']) - 10} more" if len(stats["fallbacks"]) > 10 else "")
        )
    else:
        assert fallbacks[0] == "fallbacks to NumPy: 0"
    return stats


def test_grumpy_option_enables_capture_and_reports(tmp_path):
    rc, out = _run(tmp_path, ["--grumpy", "-q"], EXPECT_GRUMPY="1")
    assert rc == 0, out
    lines = _section(out)
    assert re.fullmatch(r"capture on: \d+ threads, backend cpu, GRUMPY_MIN_BYTES=1048576 \(default\)", lines[0])
    stats = _check_against_exit_stats(tmp_path, lines)
    assert stats["kernels_launched"] > 0 and stats["kernels_compiled"] > 0 and stats["ops_captured"] > 0
    assert not any(line.startswith("shadow check") for line in lines)  # only with --grumpy-check
    assert re.fullmatch(r"3 passed in .*", lines[-1])  # the section comes just before pytest's last line


def test_without_option_plugin_does_nothing(tmp_path):
    rc, out = _run(tmp_path, ["-q"], EXPECT_GRUMPY="0")
    assert rc == 0, out  # the tests assert the arrays are plain NumPy's
    assert not SECTION.search(out)
    assert "grumpy" not in out
    assert not (tmp_path / "stats.json").exists()  # grumpy.enable() never ran (it registers the exit report)


def test_check_option_reports_the_shadow_check(tmp_path):
    rc, out = _run(tmp_path, ["--grumpy-check", "-q"], EXPECT_GRUMPY="1")
    assert rc == 0, out
    lines = _section(out)
    stats = _check_against_exit_stats(tmp_path, lines)
    assert stats["checks"] > 0
    assert (
        f"shadow check: {stats['checks']} kernels checked, {stats['check_skipped']} skipped, 0 mismatches"
        in lines
    )


def test_check_mismatch_fails_a_passing_session(tmp_path):
    # GRUMPY_DEBUG_CORRUPT makes kernels wrong; the check gives NumPy's values,
    # so the tests pass, and the plugin must fail the session.
    rc, out = _run(tmp_path, ["--grumpy-check", "-q"], EXPECT_GRUMPY="1", GRUMPY_DEBUG_CORRUPT="1")
    lines = _section(out)
    stats = _check_against_exit_stats(tmp_path, lines)
    assert stats["check_mismatches"] > 0
    assert re.fullmatch(r"3 passed in .*", lines[-1]), out
    assert rc == 1, out
    assert (
        f"shadow check: {stats['checks']} kernels checked, {stats['check_skipped']} skipped, "
        f"{stats['check_mismatches']} mismatches -- the session fails" in lines
    )


def test_min_bytes_option(tmp_path):
    small = {"EXPECT_GRUMPY": "1", "ARRAY_LEN": "1000"}  # 8 kB: below the default threshold
    rc, out = _run(tmp_path, ["--grumpy", "-q"], **small)
    assert rc == 0, out
    assert _number(_section(out), "kernels launched") == 0
    rc, out = _run(tmp_path, ["--grumpy-min-bytes=0", "-q"], **small)  # implies --grumpy
    assert rc == 0, out
    lines = _section(out)
    assert lines[0].endswith("GRUMPY_MIN_BYTES=0")
    assert _check_against_exit_stats(tmp_path, lines)["kernels_launched"] > 0


def test_bad_min_bytes_is_a_usage_error(tmp_path):
    rc, out = _run(tmp_path, ["--grumpy-min-bytes=-1", "-q"], EXPECT_GRUMPY="1")
    assert rc == pytest.ExitCode.USAGE_ERROR, out
    assert "--grumpy-min-bytes: expected an integer >= 0 (bytes), got '-1'" in out


def _entry_point_site(tmp_path):
    """A directory holding a distribution's metadata with pyproject.toml's
    pytest11 entry point, as `pip install .` would write it."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entry = project["entry-points"]["pytest11"]
    assert entry == {"grumpy.pytest_plugin": "grumpy.pytest_plugin"}
    info = tmp_path / "site" / "grumpy-0.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: grumpy\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{name} = {target}\n" for name, target in entry.items())
    )
    return str(tmp_path / "site")


def test_entry_point_makes_the_option_available(tmp_path):
    site = _entry_point_site(tmp_path)
    rc, out = _run(tmp_path, ["--grumpy", "-q"], plugin=False, EXPECT_GRUMPY="1", PYTHONPATH=site)
    assert rc == 0, out
    assert _check_against_exit_stats(tmp_path, _section(out))["kernels_launched"] > 0
    # named with -p as well: registered once (the entry point's name is the module's)
    rc, out = _run(tmp_path, ["--grumpy", "-q"], plugin=True, EXPECT_GRUMPY="1", PYTHONPATH=site)
    assert rc == 0, out
    assert len(SECTION.findall(out)) == 1


def test_numpy_own_tests_under_the_plugin(tmp_path):
    rc, out = _run(
        tmp_path,
        ["--grumpy-min-bytes=0", "--pyargs", "numpy._core.tests.test_umath", "-q", "-x", "-k", "TestDivision"],
        EXPECT_GRUMPY="1",
    )
    assert rc == 0, out
    lines = _section(out)
    stats = _check_against_exit_stats(tmp_path, lines)
    assert stats["kernels_launched"] > 0
    assert re.fullmatch(r"\d+ passed, \d+ deselected.* in .*", lines[-1]), out
