"""Tests of the ways to switch grumpy on for a whole program.

- ``python -m grumpy.run script.py args`` and ``python -m grumpy.run -m mod``:
  argv, ``__name__``, ``sys.path[0]``, exit codes, ``sys.exit``, tracebacks
  as under plain python (grumpy/run.py);
- ``GRUMPY=1 python ...`` through grumpy.pth in site-packages
  (interpose/grumpy.pth, grumpy/_startup.py);
- the one-line warning when grumpy cannot be enabled.

Every program runs in a child process with the interpreter running pytest.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 120  # seconds per child process


def child_env(pythonpath_first=None, **extra):
    """The test's environment with grumpy off, ROOT on PYTHONPATH, plus extra."""
    env = dict(os.environ)
    for name in ("GRUMPY", "GRUMPY_STATS_JSON", "GRUMPY_AB_OUTDIR"):
        env.pop(name, None)
    if "LD_PRELOAD" in env:  # keep e.g. libasan, drop the grumpy shim
        kept = [p for p in env["LD_PRELOAD"].replace(":", " ").split() if "libgrumpy_preload" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    path = [str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    if pythonpath_first is not None:
        path.insert(0, str(pythonpath_first))
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(extra)
    return env


def run(argv, cwd, env=None):
    return subprocess.run(
        argv, cwd=cwd, env=env or child_env(), capture_output=True, text=True, timeout=TIMEOUT
    )


def grumpy_run(args, cwd, env=None):
    return run([sys.executable, "-m", "grumpy.run", *args], cwd, env)


def write(path, source):
    path.write_text(textwrap.dedent(source))
    return path


REPORT = """\
    import json, os, sys
    print(json.dumps({
        "argv": sys.argv,
        "name": __name__,
        "path0": sys.path[0],
        "main_is_me": sys.modules["__main__"].__dict__ is globals(),
    }))
"""


def test_argv_name_and_path(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    write(sub / "prog.py", REPORT)
    proc = grumpy_run(["sub/prog.py", "a", "-b", "--c=1", "--"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["argv"] == ["sub/prog.py", "a", "-b", "--c=1", "--"]
    assert seen["name"] == "__main__"
    assert seen["main_is_me"]
    assert seen["path0"] == str(sub.resolve())


def test_same_view_as_plain_python(tmp_path):
    write(tmp_path / "prog.py", REPORT)
    plain = run([sys.executable, "prog.py", "x", "y"], tmp_path)
    under = grumpy_run(["prog.py", "x", "y"], tmp_path)
    assert plain.returncode == under.returncode == 0, under.stderr
    assert json.loads(under.stdout) == json.loads(plain.stdout)


def test_script_through_symlink_gets_target_directory(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    write(real / "prog.py", REPORT)
    (tmp_path / "link.py").symlink_to(real / "prog.py")
    plain = run([sys.executable, "link.py"], tmp_path)
    under = grumpy_run(["link.py"], tmp_path)
    assert json.loads(under.stdout) == json.loads(plain.stdout)
    assert json.loads(under.stdout)["path0"] == str(real.resolve())


def test_grumpy_is_enabled_in_the_program(tmp_path):
    write(tmp_path / "prog.py", "import grumpy\nprint(grumpy.enabled())\n")
    proc = grumpy_run(["prog.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True", proc.stderr


@pytest.mark.parametrize(
    "body, code",
    [
        ("pass", 0),
        ("import sys; sys.exit(3)", 3),
        ("import sys; sys.exit(0)", 0),
        ("raise SystemExit(42)", 42),
    ],
)
def test_exit_status(tmp_path, body, code):
    write(tmp_path / "prog.py", body + "\n")
    proc = grumpy_run(["prog.py"], tmp_path)
    assert proc.returncode == code, proc.stderr


def test_sys_exit_with_message(tmp_path):
    write(tmp_path / "prog.py", "import sys\nsys.exit('giving up')\n")
    proc = grumpy_run(["prog.py"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.rstrip().endswith("giving up")


def traceback_part(stderr):
    return stderr[stderr.index("Traceback (most recent call last):") :]


def test_uncaught_exception_traceback_is_pythons(tmp_path):
    prog = write(
        tmp_path / "prog.py",
        """\
        def inner():
            raise ValueError("boom")

        def outer():
            inner()

        outer()
        """,
    )
    # An absolute path: plain python shows the absolute path in tracebacks.
    plain = run([sys.executable, str(prog)], tmp_path)
    under = grumpy_run([str(prog)], tmp_path)
    assert plain.returncode == under.returncode == 1
    assert "ValueError: boom" in under.stderr
    shown = traceback_part(under.stderr)
    assert "runpy" not in shown
    assert "grumpy" not in shown
    assert shown == traceback_part(plain.stderr)


def test_chained_exception_traceback(tmp_path):
    prog = write(
        tmp_path / "prog.py",
        """\
        try:
            {}["missing"]
        except KeyError as exc:
            raise RuntimeError("wrapped") from exc
        """,
    )
    plain = run([sys.executable, str(prog)], tmp_path)
    under = grumpy_run([str(prog)], tmp_path)
    assert under.returncode == 1
    assert traceback_part(under.stderr) == traceback_part(plain.stderr)


def test_syntax_error(tmp_path):
    prog = write(tmp_path / "prog.py", "def broken(:\n    pass\n")
    plain = run([sys.executable, str(prog)], tmp_path)
    under = grumpy_run([str(prog)], tmp_path)
    assert under.returncode == plain.returncode == 1
    assert "SyntaxError" in under.stderr
    assert "runpy" not in under.stderr


def test_program_excepthook_is_used(tmp_path):
    write(
        tmp_path / "prog.py",
        """\
        import sys
        def hook(t, v, tb):
            print("custom hook:", t.__name__, v, file=sys.stderr)
        sys.excepthook = hook
        raise LookupError("x")
        """,
    )
    proc = grumpy_run(["prog.py"], tmp_path)
    assert proc.returncode == 1
    assert "custom hook: LookupError x" in proc.stderr


def test_keyboard_interrupt_exits_like_python(tmp_path):
    prog = write(tmp_path / "prog.py", "raise KeyboardInterrupt\n")
    plain = run([sys.executable, str(prog)], tmp_path)
    under = grumpy_run([str(prog)], tmp_path)
    assert under.returncode == plain.returncode  # killed by SIGINT: -2
    assert traceback_part(under.stderr) == traceback_part(plain.stderr)


def test_atexit_and_stdout_flushed(tmp_path):
    write(
        tmp_path / "prog.py",
        """\
        import atexit, sys
        atexit.register(lambda: print("atexit ran"))
        print("body", end="")
        raise ValueError("late")
        """,
    )
    proc = grumpy_run(["prog.py"], tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == "bodyatexit ran\n"


def test_module_form(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    write(pkg / "__init__.py", "")
    write(pkg / "mod.py", REPORT)
    plain = run([sys.executable, "-m", "pkg.mod", "x", "--y"], tmp_path)
    under = grumpy_run(["-m", "pkg.mod", "x", "--y"], tmp_path)
    assert plain.returncode == under.returncode == 0, under.stderr
    seen = json.loads(under.stdout)
    assert seen["argv"] == [str(pkg / "mod.py"), "x", "--y"]
    assert seen["name"] == "__main__"
    assert seen == json.loads(plain.stdout)


def test_module_form_attached_name_and_exit(tmp_path):
    write(tmp_path / "quits.py", "import sys\nsys.exit(5)\n")
    proc = grumpy_run(["-mquits"], tmp_path)
    assert proc.returncode == 5, proc.stderr


def test_missing_script_and_module(tmp_path):
    proc = grumpy_run(["nope.py"], tmp_path)
    assert proc.returncode == 2
    assert "can't open file" in proc.stderr
    proc = grumpy_run(["-m", "no_such_module_here"], tmp_path)
    assert proc.returncode == 1
    assert "No module named no_such_module_here" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_usage(tmp_path):
    proc = grumpy_run(["-h"], tmp_path)
    assert proc.returncode == 0
    assert "python -m grumpy.run" in proc.stdout
    proc = grumpy_run([], tmp_path)
    assert proc.returncode == 2
    assert "usage" in proc.stderr
    proc = grumpy_run(["-m"], tmp_path)
    assert proc.returncode == 2


# ---------------------------------------------------------------- GRUMPY=1


def installed_pth():
    return pathlib.Path(sysconfig.get_paths()["purelib"]) / "grumpy.pth"


def test_grumpy_pth_is_installed():
    pth = installed_pth()
    assert pth.exists(), f"{pth} missing: 'make venv' installs interpose/grumpy.pth there"
    expected = (ROOT / "interpose" / "grumpy.pth").read_text().strip()
    assert expected in pth.read_text()


def test_grumpy_env_enables_through_pth(tmp_path):
    if not installed_pth().exists():
        pytest.fail(f"{installed_pth()} missing: 'make venv' installs it")
    code = "import grumpy, os; print(os.environ['GRUMPY'], grumpy.enabled())"
    proc = run([sys.executable, "-c", code], tmp_path, child_env(GRUMPY="1"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "True"], proc.stderr


def test_pth_does_nothing_without_grumpy_env(tmp_path):
    code = "import sys; print('grumpy' in sys.modules, 'numpy' in sys.modules)"
    for value in (None, "0", ""):
        env = child_env() if value is None else child_env(GRUMPY=value)
        proc = run([sys.executable, "-c", code], tmp_path, env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["False", "False"]


def test_pth_line_with_site_machinery(tmp_path):
    """interpose/grumpy.pth as site processes it, from a scratch site dir
    (GRUMPY is set only afterwards, so an installed copy stays inactive)."""
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    shutil.copy(ROOT / "interpose" / "grumpy.pth", site_dir / "grumpy.pth")
    code = (
        "import os, site, sys; assert 'grumpy' not in sys.modules; "
        "os.environ['GRUMPY'] = '1'; site.addsitedir(sys.argv[1]); import grumpy; "
        "print('grumpy._startup' in sys.modules, grumpy.enabled())"
    )
    proc = run([sys.executable, "-c", code, str(site_dir)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"], proc.stderr


def fake_grumpy_that_cannot_enable(tmp_path):
    """A grumpy package whose enable() fails as a missing C extension would,
    with the real _startup.py and run.py beside it."""
    pkg = tmp_path / "fake" / "grumpy"
    pkg.mkdir(parents=True)
    write(
        pkg / "__init__.py",
        """\
        def enable():
            raise ImportError("cannot load _grumpy: no such file\\n(second line)")

        def _enable_at_numpy_import(on_error):  # GRUMPY=1 start-up's check fails as enable()
            enable()
        """,
    )
    shutil.copy(ROOT / "grumpy" / "_startup.py", pkg / "_startup.py")
    shutil.copy(ROOT / "grumpy" / "run.py", pkg / "run.py")
    return pkg.parent


def test_startup_warns_in_one_line_and_continues(tmp_path):
    fake = fake_grumpy_that_cannot_enable(tmp_path)
    code = "import grumpy._startup; print('program ran')"
    proc = run([sys.executable, "-c", code], tmp_path, child_env(pythonpath_first=fake))
    assert proc.returncode == 0
    assert proc.stdout.strip() == "program ran"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grumpy: not enabled (ImportError"), proc.stderr


def test_run_warns_and_still_runs_the_program(tmp_path):
    fake = fake_grumpy_that_cannot_enable(tmp_path)
    write(tmp_path / "prog.py", "import sys\nprint('ran', sys.argv[1:])\nsys.exit(4)\n")
    proc = grumpy_run(["prog.py", "z"], tmp_path, child_env(pythonpath_first=fake))
    assert proc.returncode == 4
    assert proc.stdout.strip() == "ran ['z']"
    assert proc.stderr.startswith("grumpy: not enabled (ImportError")


@pytest.mark.parametrize("kind", ["directory", "zip"])
def test_a_directory_or_zip_with_main_runs_as_python_runs_it(tmp_path, kind):
    """runpy runs a directory or zip file's __main__.py with the directory
    or zip first on sys.path; grumpy.run tells them from scripts as runpy
    does (pkgutil.get_importer), without importing zipfile."""
    app = tmp_path / "app"
    app.mkdir()
    write(app / "helper.py", "VALUE = 7\n")
    main = textwrap.dedent(REPORT).replace("import json, os, sys", "import json, os, sys, helper")
    (app / "__main__.py").write_text(main + 'print(helper.VALUE, "zipfile" in sys.modules)\n')
    target = app
    if kind == "zip":
        target = shutil.make_archive(str(tmp_path / "app"), "zip", app)
    plain = run([sys.executable, str(target), "x"], tmp_path)
    grumpy = grumpy_run([str(target), "x"], tmp_path)
    assert plain.returncode == 0 and grumpy.returncode == 0, grumpy.stderr
    assert grumpy.stdout.splitlines()[0] == plain.stdout.splitlines()[0]
    assert grumpy.stdout.splitlines()[1].startswith("7 ")


def test_start_up_imports_only_what_it_needs(tmp_path):
    """Start-up cost (issue "never slower"): a program that draws no random
    numbers does not import numpy.random (NumPy 2 loads it lazily), and
    grumpy imports neither zipfile nor json; numpy.random's functions are
    still grumpy's once the program imports it."""
    write(tmp_path / "prog.py", """\
        import sys
        import numpy as np
        print(sorted(m for m in ("numpy.random", "zipfile", "json") if m in sys.modules))
        import grumpy
        print(type(np.random.rand(300_000)).__module__, type(np.random.default_rng()).__module__)
    """)
    proc = grumpy_run(["prog.py"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "grumpy numpy.random._generator"]


def test_llvm_is_loaded_at_the_first_compile_not_at_start_up(tmp_path):
    """The code generator and LLVM (~47 MiB resident) are a library of their
    own, loaded when the first kernel is compiled: a program whose arrays
    stay below GRUMPY_MIN_BYTES never maps libLLVM."""
    write(tmp_path / "prog.py", """\
        import numpy as np, grumpy
        def llvm():
            return any("libLLVM" in line for line in open("/proc/self/maps"))
        print(float((np.arange(100.0) * 2).sum()), llvm())
        print(float((np.arange(1e6) * 2 + 1).sum()), llvm(), grumpy.stats()["kernels_launched"] >= 1)
    """)
    proc = grumpy_run(["prog.py"], tmp_path, child_env(GRUMPY_CACHE_DIR="off"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["9900.0 False", "1000000000000.0 True True"]


@pytest.mark.cpu_backend  # the NumPy back end never loads the code generator
def test_a_code_generator_library_changed_since_start_up_is_not_loaded(tmp_path):
    """The code generator's library is loaded at the first compile, maybe
    long after start-up: one rebuilt or reinstalled meanwhile would not
    match the extension in memory.  It is refused (the compile fails,
    counted in plan_failures) and NumPy computes; an unchanged one loads."""
    pkg = tmp_path / "site" / "grumpy"
    shutil.copytree(ROOT / "grumpy", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    write(tmp_path / "prog.py", """\
        import glob, os, sys
        import numpy as np, grumpy
        if sys.argv[1] == "touch":   # as a rebuild would
            os.utime(glob.glob(os.path.join(os.path.dirname(grumpy.__file__), "_grumpy_jit*.so"))[0])
        a = np.arange(1e6)
        print(float((a * 2 + 1).sum()), grumpy.stats()["kernels_launched"], grumpy.stats()["plan_failures"] > 0)
    """)
    env = child_env(pythonpath_first=tmp_path / "site", GRUMPY_CACHE_DIR="off")
    touched = grumpy_run(["prog.py", "touch"], tmp_path, env)
    kept = grumpy_run(["prog.py", "keep"], tmp_path, env)
    assert touched.returncode == 0 and kept.returncode == 0, touched.stderr + kept.stderr
    assert touched.stdout.split() == ["1000000000000.0", "0", "True"]
    assert kept.stdout.split() == ["1000000000000.0", "1", "False"]


SEEN_AT_NUMPY_IMPORT = """\
    import builtins, os, sys

    class Watch:
        '''Records OPENBLAS_THREAD_TIMEOUT when NumPy's extension module,
        which loads its OpenBLAS, is imported (OpenBLAS reads it then, once;
        grumpy looks NumPy up by name before, without importing it).'''
        def find_spec(self, name, path=None, target=None):
            if name == "numpy._core._multiarray_umath" and not hasattr(builtins, "_timeout_at_numpy_import"):
                builtins._timeout_at_numpy_import = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
            return None

    sys.meta_path.insert(0, Watch())
"""


@pytest.mark.parametrize("how", ["grumpy.run", "GRUMPY=1", "enable()"])
@pytest.mark.parametrize("user_value", [None, "12"])
def test_openblas_threads_are_told_to_sleep_before_numpy_loads_them(tmp_path, how, user_value):
    """OPENBLAS_THREAD_TIMEOUT=22 (idle OpenBLAS threads sleep after 2^22
    cycles, not 2^28: they spun ~0.1 s after each product on the cores of
    grumpy's kernel threads; 2^8 made a loop's products 10-15% slower) is
    in the environment when NumPy's import
    starts, however grumpy is switched on; a value of the user's is kept.
    grumpy.enable() had set it after importing its extension, which imports
    NumPy: under grumpy.run the threads spun a core's worth of CPU through
    a loop of products and sleeps."""
    write(tmp_path / "sitecustomize.py", SEEN_AT_NUMPY_IMPORT)
    body = "import builtins, numpy\nprint(builtins._timeout_at_numpy_import)\n"
    extra = {} if user_value is None else {"OPENBLAS_THREAD_TIMEOUT": user_value}
    env = child_env(pythonpath_first=tmp_path, **extra)
    env.pop("OPENBLAS_THREAD_TIMEOUT", None) if user_value is None else None
    if how == "grumpy.run":
        proc = grumpy_run([str(write(tmp_path / "p.py", body))], tmp_path, env)
    elif how == "GRUMPY=1":
        env["GRUMPY"] = "1"
        proc = run([sys.executable, "-c", body], tmp_path, env)
    else:
        proc = run([sys.executable, "-c", "import grumpy; grumpy.enable()\n" + body], tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [user_value or "22"], proc.stderr[-2000:]
