"""grumpy's configuration: every GRUMPY_* variable checked at enable()
(grumpy/_config.py), grumpy.config(), grumpy.__version__.

- each bad value is one ValueError naming the variable, the value and what
  is accepted, from enable(), from ``python -m grumpy.run`` (one line, exit
  2) and from ``GRUMPY=1`` start-up (one line, the program runs with plain
  NumPy);
- a GRUMPY_* name that is not grumpy's names the closest one;
- the parsers accept exactly what the C extension's strtoll/strtod read
  whole (compared with the C library's own functions);
- the table names every variable the sources read, and the README every
  variable in the table;
- grumpy.config() before enable() is what enable() uses (threads in
  stats(), min_bytes in what gets captured, check in checks run); after it
  only threads, stats and stats_json change.

Programs that enable grumpy run in child processes with the GRUMPY_*
variables of this process removed.
"""

import ctypes
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from grumpy import _config

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 120


def env_with(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(ROOT)
    env["GRUMPY_CACHE_DIR"] = "off"
    env.update(extra)
    return env


def python(code, env, *args):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


BAD = [
    ("GRUMPY_THREADS", "abc", "GRUMPY_THREADS=abc: expected an integer from 0 (all CPUs) to 1024"),
    ("GRUMPY_THREADS", "4x", "GRUMPY_THREADS=4x: expected an integer from 0 (all CPUs) to 1024"),
    ("GRUMPY_THREADS", "-1", "GRUMPY_THREADS=-1: expected an integer from 0 (all CPUs) to 1024"),
    ("GRUMPY_THREADS", "1025", "GRUMPY_THREADS=1025: expected an integer from 0 (all CPUs) to 1024"),
    ("GRUMPY_THREADS", "2.0", "GRUMPY_THREADS=2.0: expected"),
    ("GRUMPY_THREADS", "1_0", "GRUMPY_THREADS=1_0: expected"),
    ("GRUMPY_THREADS", "4 ", "GRUMPY_THREADS='4 ': expected"),
    ("GRUMPY_MIN_BYTES", "1MB", "GRUMPY_MIN_BYTES=1MB: expected a size in bytes, an integer from 0 to 2^63-1"),
    ("GRUMPY_MIN_BYTES", "99999999999999999999", "GRUMPY_MIN_BYTES=99999999999999999999: expected"),
    ("GRUMPY_MAX_FUSE", "many", "GRUMPY_MAX_FUSE=many: expected an integer from 0 to 2^63-1"),
    ("GRUMPY_CHECK", "sometimes", "GRUMPY_CHECK=sometimes: expected 0, 1 or a fraction of kernels in (0, 1)"),
    ("GRUMPY_CHECK", "1.5", "GRUMPY_CHECK=1.5: expected 0, 1 or a fraction"),
    ("GRUMPY_CHECK", "nan", "GRUMPY_CHECK=nan: expected"),
    ("GRUMPY_CHECK", "1%", "GRUMPY_CHECK=1%: expected"),
    ("GRUMPY_STRICT", "yes", "GRUMPY_STRICT=yes: expected 0, 1 or warn"),
    ("GRUMPY_STRICT", "2", "GRUMPY_STRICT=2: expected 0, 1 or warn"),
    ("GRUMPY_HUGEPAGES", "off", "GRUMPY_HUGEPAGES=off: expected 0 or 1"),
    ("GRUMPY_STATS", "true", "GRUMPY_STATS=true: expected 0 or 1"),
    ("GRUMPY_DUMP_IR", "on", "GRUMPY_DUMP_IR=on: expected 0 or 1"),
    ("GRUMPY_DEBUG_FAIL", "-3", "GRUMPY_DEBUG_FAIL=-3: expected an integer from 0 (no fault) to 2^63-1"),
    ("GRUMPY_DEBUG_JIT_FAIL", "yes", "GRUMPY_DEBUG_JIT_FAIL=yes: expected an integer from 0 (none) to 2^31-1"),
    ("GRUMPY_BACKEND", "cuda-please", "GRUMPY_BACKEND=cuda-please: expected cpu (LLVM kernels, the default), gpu (CUDA) or numpy"),
    ("GRUMPY_BACKEND", "CPU", "GRUMPY_BACKEND=CPU: expected cpu"),
    ("GRUMPY_CACHE_MAX_MB", "1G", "GRUMPY_CACHE_MAX_MB=1G: expected a size in MiB, 0 to 2^30"),
    ("GRUMPY_CACHE_MAX_MB", "1073741825", "GRUMPY_CACHE_MAX_MB=1073741825: expected a size in MiB"),
]


@pytest.mark.parametrize("name,value,message", BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_a_bad_value_is_one_clear_error_from_enable(name, value, message):
    r = python("import grumpy; grumpy.enable(); print('enabled')", env_with(**{name: value}))
    assert r.returncode != 0 and "enabled" not in r.stdout
    assert last_line(r.stderr) == "ValueError: " + message or last_line(r.stderr).startswith("ValueError: " + message)


def test_the_error_comes_before_anything_changes():
    """enable() raises before it touches the process: capture stays off,
    NumPy is not patched, and enable() can run again once the value is fixed."""
    r = python("""
        import os, grumpy
        try:
            grumpy.enable()
        except ValueError as e:
            print("error:", e)
        import numpy as np
        print(grumpy.enabled(), type(np.ones(4)).__module__)
        os.environ["GRUMPY_THREADS"] = "1"
        grumpy.enable()
        print(grumpy.enabled(), grumpy.stats()["threads"])
    """, env_with(GRUMPY_THREADS="one"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "error: GRUMPY_THREADS=one: expected an integer from 0 (all CPUs) to 1024", "False numpy", "True 1"]


def test_several_bad_variables_in_one_message():
    r = python("import grumpy; grumpy.enable()", env_with(GRUMPY_THREADS="x", GRUMPY_STRICT="yes"))
    line = last_line(r.stderr)
    assert "GRUMPY_STRICT=yes: expected 0, 1 or warn" in line and "GRUMPY_THREADS=x: expected an integer" in line


@pytest.mark.parametrize("typo,known", [("GRUMPY_THREAD", "GRUMPY_THREADS"), ("GRUMPY_MINBYTES", "GRUMPY_MIN_BYTES"),
                                        ("GRUMPY_CHEK", "GRUMPY_CHECK"), ("GRUMPY_CACHE_MAX", "GRUMPY_CACHE_MAX_MB"),
                                        ("GRUMPY_STAT", "GRUMPY_STATS")])
def test_a_misspelled_variable_names_the_closest_one(typo, known):
    r = python("import grumpy; grumpy.enable()", env_with(**{typo: "4"}))
    assert r.returncode != 0
    assert last_line(r.stderr) == f"ValueError: {typo}=4: not a grumpy variable; did you mean {known}?"


def test_an_unknown_variable_far_from_any_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"^GRUMPY_ZZZ=1: not a grumpy variable; known variables: GRUMPY, "
                                         r"GRUMPY_THREADS, .*GRUMPY_BACKEND"):
        _config.validate_environment({"GRUMPY_ZZZ": "1"})
    # other names that only start with GRUMPY are not ours to judge
    assert _config.validate_environment({"GRUMPYX": "whatever"})["threads"] >= 1


def test_grumpy_run_prints_one_line_and_exits_2(tmp_path):
    (tmp_path / "prog.py").write_text("print('program ran')\n")
    r = subprocess.run([sys.executable, "-m", "grumpy.run", "prog.py"], cwd=tmp_path,
                       env=env_with(GRUMPY_THREADS="abc"), capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr == "grumpy.run: GRUMPY_THREADS=abc: expected an integer from 0 (all CPUs) to 1024\n"


def test_startup_says_it_in_one_line_and_runs_plain_numpy():
    r = python("import grumpy._startup, grumpy, numpy; print('ran', grumpy.enabled())",
               env_with(GRUMPY="1", GRUMPY_THREAD="4"))
    assert r.returncode == 0
    assert r.stdout.strip() == "ran False"
    assert r.stderr == ("grumpy: not enabled (ValueError: GRUMPY_THREAD=4: not a grumpy variable; did you mean "
                        "GRUMPY_THREADS?); running with plain NumPy\n")


GOOD_PROGRAM = """
import json, grumpy
grumpy.enable()
import numpy as np
print(json.dumps({"config": grumpy.config(), "threads": grumpy.stats()["threads"]}))
"""


def test_good_values_are_accepted_and_in_effect(tmp_path):
    env = env_with(GRUMPY_THREADS=" +2", GRUMPY_MIN_BYTES="65536", GRUMPY_MAX_FUSE="8", GRUMPY_CHECK="0x.8",
                   GRUMPY_STRICT="0", GRUMPY_BACKEND="numpy", GRUMPY_CACHE_MAX_MB="16", GRUMPY_STATS="0",
                   GRUMPY_STATS_JSON="", GRUMPY_HUGEPAGES="0", GRUMPY_DEBUG_PLAN="0", GRUMPY_DUMP_IR="0",
                   GRUMPY_DEBUG_FAIL="0", GRUMPY_PTX_DIR="", GRUMPY_AB_OUTDIR=str(tmp_path), GRUMPY="0",
                   GRUMPY_HOME=str(ROOT), GRUMPY_FUZZ_SECONDS="3", GRUMPY_BUILD_JOBS="2")
    r = python(GOOD_PROGRAM, env)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["threads"] == 2
    c = got["config"]
    assert (c["threads"], c["min_bytes"], c["max_fuse"], c["check"], c["strict"], c["backend"]) == (
        2, 65536, 8, 0.5, False, "numpy")
    assert (c["cache_dir"], c["cache_max_mb"], c["stats"], c["stats_json"], c["hugepages"], c["dump_ptx"]) == (
        "off", 16, False, None, False, None)


def test_defaults_are_filled_in():
    env = env_with(XDG_CACHE_HOME="/nonexistent/xdg", CUDA_HOME="/opt/cuda")
    del env["GRUMPY_CACHE_DIR"]
    c = _config.validate_environment(env)
    assert c == {
        "threads": _config.affinity_cpus(), "min_bytes": 1 << 20, "max_fuse": 64, "check": 0.0, "strict": False,
        "backend": "cpu", "device": "auto", "gpu_min_bytes": 8 << 20, "gpu_warmup_ms": 200, "first_launch_ms": 0, "gpu_emulate": False, "cache_dir": "/nonexistent/xdg/grumpy", "cache_max_mb": 256, "stats": False,
        "stats_json": None, "adaptive": True, "hugepages": True, "debug_plan": False, "dump_ir": False, "dump_ptx": None,
        "libdevice": "/opt/cuda/nvvm/libdevice/libdevice.10.bc", "debug_jit_fail": 0,
        "debug_eval_loops": False, "debug_corrupt": False, "debug_fail": 0,
    }
    assert _config.affinity_cpus() == len(os.sched_getaffinity(0))
    # empty is unset, as for the C extension; GRUMPY_CACHE_DIR empty, 0 or off: no cache
    assert _config.validate_environment({"GRUMPY_THREADS": "", "GRUMPY_CHECK": ""})["check"] == 0.0
    for off in ("", "0", "off"):
        assert _config.validate_environment({"GRUMPY_CACHE_DIR": off})["cache_dir"] == "off"


# ---- the parsers read what C's strtoll / strtod read whole --------------

LIBC = ctypes.CDLL(None)
LIBC.strtoll.restype = ctypes.c_longlong
LIBC.strtoll.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
LIBC.strtod.restype = ctypes.c_double
LIBC.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]

TRICKY = ["0", "1", "7", "+3", "-3", " 4", "\t4", "\n4", "4 ", "4\n", "", " ", "+", "-", "1e3", "1.", ".5", "0.5",
          "1.0", "0x10", "0x.8", "0x1p-1", "0X1P-1", "0x", "1_000", "٣", "inf", "INF", "infinity", "nan", "nan(1)",
          "-0", "-0.0", "1e", "1e+", "1e-1", ".", "0.", "00", "007", "1,5", "½", "0b1", "9223372036854775807",
          "9223372036854775808", "1024", "1025", "abc", "0.01", "1/2"]


def c_reads_whole(fn, text, *base):
    raw = text.encode()
    end = ctypes.c_char_p()
    value = fn(raw, ctypes.byref(end), *base)
    consumed = len(raw) - len(end.value)
    return value if raw and consumed == len(raw) and end.value == b"" else None


@pytest.mark.parametrize("text", TRICKY, ids=[repr(t) for t in TRICKY])
def test_integers_are_read_as_strtoll_reads_them(text):
    want = c_reads_whole(LIBC.strtoll, text, 10)
    got = _config._parse_int(text, "C")
    if want is not None and abs(want) >= (1 << 63) - 1:  # strtoll saturates: refused by every range here
        return
    assert got == want, (text, got, want)


@pytest.mark.parametrize("text", TRICKY, ids=[repr(t) for t in TRICKY])
def test_fractions_are_read_as_strtod_reads_them(text):
    want = c_reads_whole(LIBC.strtod, text)
    got = _config._parse_float(text, "C")
    if want is not None and want != want:
        assert got != got
    else:
        assert got == want, (text, got, want)
    accepted = want is not None and 0.0 <= want <= 1.0
    try:
        _config.BY_NAME["GRUMPY_CHECK"].parse(text)
        assert accepted or text == "", text
    except ValueError:
        assert not accepted, text


# ---- the table is complete ----------------------------------------------


def source_names():
    """GRUMPY_* variables read by the C sources (getenv, env_int) and named
    in quotes or as keywords by the Python sources, tools and tests."""
    names = set()
    for path in [*ROOT.glob("core/*.[ch]"), *ROOT.glob("hooks/*.[ch]"), *ROOT.glob("interpose/*.c")]:
        names |= set(re.findall(r'(?:getenv|env_int)\("(GRUMPY\w*)"', path.read_text(errors="replace")))
    for path in [*ROOT.glob("grumpy/*.py"), *ROOT.glob("tools/*.py"), *ROOT.glob("tests/*.py"), ROOT / "setup.py"]:
        if path.name in ("test_config.py", "_config.py"):  # the table itself, and its misspellings
            continue
        text = path.read_text(errors="replace")
        names |= set(re.findall(r"""["'](GRUMPY_[A-Z0-9_]*[A-Z0-9])["']""", text))
        names |= set(re.findall(r"\b(GRUMPY_[A-Z0-9_]*[A-Z0-9])=", text))
    return names


def test_every_variable_the_sources_read_is_in_the_table():
    found = source_names()
    assert {"GRUMPY_THREADS", "GRUMPY_CHECK", "GRUMPY_HUGEPAGES", "GRUMPY_LIBDEVICE", "GRUMPY_HOME"} <= found
    missing = found - set(_config.BY_NAME)
    assert not missing, f"add to grumpy/_config.py's VARIABLES (and README): {sorted(missing)}"


def test_the_back_ends_are_the_ones_c_accepts():
    text = (ROOT / "hooks" / "module.c").read_text()
    c_words = set(re.findall(r'strcmp\(be, "(\w+)"\)', text))
    assert c_words and c_words == set(_config.BY_NAME["GRUMPY_BACKEND"].choices)


def test_the_devices_are_the_ones_c_accepts():
    text = (ROOT / "hooks" / "module.c").read_text()
    c_words = set(re.findall(r'strcmp\(device, "(\w+)"\)', text))
    assert c_words and c_words == set(_config.BY_NAME["GRUMPY_DEVICE"].choices)


def test_the_readme_lists_every_variable():
    readme = (ROOT / "README.md").read_text()
    for var in _config.VARIABLES:
        assert f"| `{var.name}` |" in readme, var.name


# ---- grumpy.config() ------------------------------------------------------

BEFORE = """
import json, os, grumpy
grumpy.config(threads=2, min_bytes=65536, check=1, cache_dir="off", strict=False)
env = {k: v for k, v in os.environ.items() if k.startswith("GRUMPY_")}
grumpy.enable()
import numpy as np
a = np.ones(16384)          # 128 KiB: captured only because min_bytes is below 1 MiB
b = a * 2 + 1
pending = grumpy.is_pending(b)
total = float(b.sum())
s = grumpy.stats()
print(json.dumps({"env": env, "pending": pending, "total": total, "threads": s["threads"],
                  "checks": s["checks"], "config": grumpy.config()}))
"""


def test_config_before_enable_is_what_enable_uses():
    env = env_with()
    del env["GRUMPY_CACHE_DIR"]
    r = python(BEFORE, env)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["env"] == {"GRUMPY_THREADS": "2", "GRUMPY_MIN_BYTES": "65536", "GRUMPY_CHECK": "1.0",
                          "GRUMPY_CACHE_DIR": "off", "GRUMPY_STRICT": "0"}
    assert got["pending"] is True and got["total"] == 3.0 * 16384
    assert got["threads"] == 2 and got["checks"] >= 1
    c = got["config"]
    assert (c["threads"], c["min_bytes"], c["check"], c["cache_dir"]) == (2, 65536, 1.0, "off")


def test_the_default_threshold_does_not_capture_that_array():
    """The control for the test above: without min_bytes the same statement is NumPy's."""
    r = python("""
        import grumpy; grumpy.enable()
        import numpy as np
        print(grumpy.is_pending(np.ones(16384) * 2 + 1))
    """, env_with())
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


AFTER = """
import json, os, grumpy
grumpy.enable()
import numpy as np
out = {}
grumpy.config(threads=1)
out["threads_1"] = [grumpy.stats()["threads"], grumpy.config()["threads"], os.environ["GRUMPY_THREADS"]]
grumpy.config(threads=3, stats=True, stats_json=None)
out["threads_3"] = [grumpy.stats()["threads"], grumpy.config()["threads"], grumpy.config()["stats"]]
grumpy.config(threads=0)
out["threads_0"] = grumpy.stats()["threads"]
for call in ("grumpy.config(check=0.5)", "grumpy.config(threads=2, min_bytes=0)", "grumpy.config(backend='numpy')",
             "grumpy.config(threads='4')", "grumpy.config(threads=True)", "grumpy.config(threads=5000)",
             "grumpy.config(thread=4)", "grumpy.config(check=2)", "grumpy.config(cache_dir='')"):
    try:
        eval(call)
        out[call] = "accepted"
    except (TypeError, ValueError) as e:
        out[call] = f"{type(e).__name__}: {e}"
out["threads_unchanged"] = grumpy.stats()["threads"]
out["check"] = grumpy.config()["check"]
grumpy.config(stats=False)
print(json.dumps(out))
"""


def test_config_after_enable_changes_only_what_can_change():
    r = python(AFTER, env_with())
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["threads_1"] == [1, 1, "1"]
    assert out["threads_3"] == [3, 3, True]
    assert out["threads_0"] == _config.affinity_cpus()
    fixed = ("ValueError: grumpy.config({0}=...): {0} must be set before grumpy.enable() (it is read once, when "
             "capture starts); after it only threads, stats, stats_json, adaptive can change")
    assert out["grumpy.config(check=0.5)"] == fixed.format("check")
    assert out["grumpy.config(threads=2, min_bytes=0)"] == fixed.format("min_bytes")
    assert out["grumpy.config(backend='numpy')"] == fixed.format("backend")
    limits = "expected an integer from 0 (all CPUs) to 1024"
    assert out["grumpy.config(threads='4')"] == f"ValueError: grumpy.config(threads='4'): {limits}"
    assert out["grumpy.config(threads=True)"] == f"ValueError: grumpy.config(threads=True): {limits}"
    assert out["grumpy.config(threads=5000)"] == f"ValueError: grumpy.config(threads=5000): {limits}"
    assert out["grumpy.config(thread=4)"] == (
        "TypeError: grumpy.config() got an unknown setting 'thread'; did you mean 'threads'?")
    assert out["grumpy.config(check=2)"] == (
        "ValueError: grumpy.config(check=2): expected 0, 1 or a fraction of kernels in (0, 1)")
    assert out["grumpy.config(cache_dir='')"] == "ValueError: grumpy.config(cache_dir=''): expected a directory, or off"
    # a refused call changes nothing, not even its acceptable part
    assert out["threads_unchanged"] == _config.affinity_cpus() and out["check"] == 0.0


def test_stats_set_after_enable_prints_at_exit(tmp_path):
    path = tmp_path / "stats.json"
    r = python(f"""
        import grumpy; grumpy.enable()
        import numpy
        grumpy.config(stats=True, stats_json={str(path)!r})
    """, env_with())
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("grumpy stats:\n")
    assert "threads" in json.loads(path.read_text())


def test_config_before_enable_none_restores_the_default():
    r = python("""
        import os, grumpy
        grumpy.config(threads=3, dump_ptx="/tmp/ptx")
        grumpy.config(threads=None, dump_ptx=None)
        print("GRUMPY_THREADS" in os.environ, "GRUMPY_PTX_DIR" in os.environ, grumpy.config()["dump_ptx"])
    """, env_with(GRUMPY_THREADS="5"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "None"]


def test_config_round_trips():
    """config(**config()) before enable() sets what is already in effect."""
    r = python("""
        import grumpy
        before = grumpy.config()
        grumpy.config(**before)
        print(before == grumpy.config())
    """, env_with(GRUMPY_CHECK="0.25", GRUMPY_MIN_BYTES="0"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_version_is_pyprojects():
    import grumpy

    text = (ROOT / "pyproject.toml").read_text()
    project = text.split("[project]", 1)[1].split("\n[", 1)[0]
    version = re.search(r'^version\s*=\s*"([^"]+)"', project, re.MULTILINE).group(1)
    assert grumpy.__version__ == version
    assert "__version__" in grumpy.__all__ and "config" in grumpy.__all__


def test_python_m_grumpy_cache_checks_the_variables_too():
    r = subprocess.run([sys.executable, "-m", "grumpy.cache", "info"], cwd=ROOT, env=env_with(GRUMPY_CACHE_MAX_MB="1G"),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "grumpy.cache: GRUMPY_CACHE_MAX_MB=1G: expected a size in MiB, 0 to 2^30\n"
    ok = subprocess.run([sys.executable, "-m", "grumpy.cache", "info"], cwd=ROOT, env=env_with(), capture_output=True,
                        text=True, timeout=TIMEOUT)
    assert ok.returncode == 0 and ok.stdout.startswith("directory: off\n"), ok.stderr


def _numpy_1_stub(tmp_path):
    """A directory that, first on sys.path, is NumPy 1.26.4 to Python and to
    importlib.metadata (a package and its dist-info; nothing else)."""
    stub = tmp_path / "np1"
    (stub / "numpy").mkdir(parents=True)
    (stub / "numpy" / "__init__.py").write_text("__version__ = '1.26.4'\n")
    (stub / "numpy-1.26.4.dist-info").mkdir()
    (stub / "numpy-1.26.4.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 1.26.4\n")
    return stub


NUMPY_1 = "grumpy needs NumPy 2.x (>=2.0,<3); this process has NumPy 1.26.4"


def test_enable_under_numpy_1_is_one_clear_error(tmp_path):
    stub = _numpy_1_stub(tmp_path)
    code = """
        import sys, grumpy
        {before}
        try:
            grumpy.enable()
        except ImportError as exc:
            print("ImportError:", exc)
        print("enabled", bool(grumpy.enabled()))
        """
    for before in ("import numpy", "pass"):  # NumPy imported already, or to be imported
        r = python(code.format(before=before), env_with(PYTHONPATH=f"{stub}{os.pathsep}{ROOT}"))
        assert r.returncode == 0, r.stderr
        first, second = r.stdout.splitlines()
        assert first.startswith("ImportError: " + NUMPY_1) and second == "enabled False"


def test_grumpy_run_under_numpy_1_says_so_and_runs_the_program(tmp_path):
    stub = _numpy_1_stub(tmp_path)
    (tmp_path / "prog.py").write_text("import numpy\nprint('program ran with', numpy.__version__)\n")
    r = subprocess.run([sys.executable, "-m", "grumpy.run", "prog.py"], cwd=tmp_path,
                       env=env_with(PYTHONPATH=f"{stub}{os.pathsep}{ROOT}"), capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 0 and r.stdout == "program ran with 1.26.4\n"
    assert r.stderr.startswith(f"grumpy: not enabled (ImportError: {NUMPY_1}") and r.stderr.count("\n") == 1
