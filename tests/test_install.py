"""`pip install .` works: pyproject.toml + setup.py build a wheel holding the
extension grumpy._grumpy (core/*.c + hooks/*.c) and grumpy.pth at its root,
and the installed copy runs on its own, from another directory, with
GRUMPY=1 turning capture on through that grumpy.pth.

The wheel is built from a copy of the sources (nothing is written into the
repository) by the interpreter running pytest, without build isolation (its
setuptools, wheel and NumPy; no network), then installed with pip --target
into a scratch directory.  The child interpreters run with -I -S: no
PYTHONPATH, no user site, no site-packages processing -- so neither the
repository nor the development grumpy.pth that `make` puts into .venv can
be what they import; NumPy's directory is put on sys.path by hand, and
site.addsitedir processes the installed grumpy.pth exactly as site-packages
would.
"""

import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile

import numpy
import pytest
import gpcheck

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 90  # seconds for the wheel build; the rest takes a few seconds
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
PTH_LINE = (ROOT / "interpose" / "grumpy.pth").read_text().strip()
# the directory NumPy is imported from (site-packages of the test's interpreter)
NUMPY_DIR = str(pathlib.Path(numpy.__file__).resolve().parents[1])


def _has_wheel_builder():
    if importlib.util.find_spec("setuptools") is None:
        return False
    if importlib.util.find_spec("wheel") is not None:
        return True
    import setuptools  # setuptools >= 70.1 builds wheels without the wheel package

    major, minor = (int(p) for p in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)


def _child_env(**extra):
    env = gpcheck.subprocess_env(strip=("GRUMPY", "PYTHON"))
    if "LD_PRELOAD" in env:  # keep e.g. libasan, drop the grumpy shim
        kept = [p for p in env["LD_PRELOAD"].replace(":", " ").split() if "libgrumpy_preload" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    env.update(extra)
    return env


def _copy_sources(dst):
    """What `pip install .` needs from the repository, without build output."""
    for name in ("pyproject.toml", "setup.py", "build_flags.txt", "README.md"):
        shutil.copy2(ROOT / name, dst / name)
    ignore = shutil.ignore_patterns("*.so", "*.o", "__pycache__", "*.pyc")
    for name in ("core", "hooks", "grumpy", "interpose"):
        shutil.copytree(ROOT / name, dst / name, ignore=ignore)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel path, --target directory holding the installed wheel)."""
    if not _has_wheel_builder():
        pytest.fail(
            "setuptools and wheel are needed in the test interpreter's environment to build "
            "grumpy's wheel: the Makefile's venv step should `pip install setuptools wheel`"
        )
    base = tmp_path_factory.mktemp("install")
    src, wheels, target = base / "src", base / "wheels", base / "site"
    src.mkdir()
    _copy_sources(src)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
         "-w", str(wheels), str(src)],
        cwd=base, env=_child_env(), capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    found = sorted(wheels.glob("grumpy-*.whl"))
    assert len(found) == 1, found
    inst = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target),
         str(found[0])],
        cwd=base, env=_child_env(), capture_output=True, text=True, timeout=TIMEOUT,
    )
    assert inst.returncode == 0, inst.stdout[-3000:] + inst.stderr[-3000:]
    assert not (ROOT / "grumpy.egg-info").exists()
    return found[0], target


def _run_installed(target, code, cwd, **env):
    """Runs code in a child -I -S interpreter that sees NumPy and the
    installed grumpy (site.addsitedir(target): its .pth is processed)."""
    prelude = textwrap.dedent(
        f"""
        import site, sys
        sys.path.append({NUMPY_DIR!r})
        site.addsitedir({str(target)!r})
        """
    )
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", prelude + textwrap.dedent(code)],
        cwd=cwd, env=_child_env(**env), capture_output=True, text=True, timeout=60,
    )


def test_wheel_contents(installed):
    whl, _ = installed
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        exts = [n for n in names if n.startswith("grumpy/_grumpy") and n.endswith(".so")]
        assert sorted(exts) == [f"grumpy/_grumpy{EXT_SUFFIX}", f"grumpy/_grumpy_jit{EXT_SUFFIX}"], exts
        assert "grumpy.pth" in names  # at the root: site-packages once installed
        assert z.read("grumpy.pth").decode().strip() == PTH_LINE
        assert len(z.read("grumpy.pth").decode().splitlines()) == 1
        for mod in ("__init__", "_startup", "run", "ab"):
            assert f"grumpy/{mod}.py" in names
        dist_info = {n.split("/")[0] for n in names if ".dist-info/" in n}
        assert len(dist_info) == 1
        record_dir = dist_info.pop()
        record = z.read(f"{record_dir}/RECORD").decode()
        assert "\ngrumpy.pth," in "\n" + record
        # the metadata pip shows: the README, and the Pythons make wheel builds
        meta = z.read(f"{record_dir}/METADATA").decode()
        assert "Requires-Python: >=3.10" in meta and "Description-Content-Type: text/markdown" in meta
        assert "# grumpy" in meta
        # nothing else at the top level: no core/, hooks/, tests/, tools/ ...
        top = {n.split("/")[0] for n in names}
        assert {t for t in top if not t.endswith(".dist-info")} == {"grumpy", "grumpy.pth"}


def test_extension_is_linked_as_specified(installed):
    _, target = installed
    so = target / "grumpy" / f"_grumpy{EXT_SUFFIX}"
    jit = target / "grumpy" / f"_grumpy_jit{EXT_SUFFIX}"
    assert so.is_file() and jit.is_file()
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf not available")
    # LLVM is the code generator library's (-lLLVM-19), loaded at the first
    # compile; the extension itself does not map it
    assert "libLLVM" not in subprocess.run([readelf, "-d", str(so)], capture_output=True, text=True, check=True).stdout
    dyn = subprocess.run([readelf, "-d", str(jit)], capture_output=True, text=True, check=True).stdout
    assert "libLLVM" in dyn and "SYMBOLIC" in dyn  # -lLLVM-19, -Bsymbolic
    llvm_config = shutil.which(os.environ.get("LLVM_CONFIG", "llvm-config-19"))
    if llvm_config:
        libdir = subprocess.run([llvm_config, "--libdir"], capture_output=True, text=True).stdout.strip()
        assert libdir and libdir in dyn  # rpath / runpath to LLVM's libdir
    syms = subprocess.run([readelf, "--dyn-syms", "-W", str(so)], capture_output=True, text=True, check=True)
    exported = {
        line.split()[-1]
        for line in syms.stdout.splitlines()
        if " GLOBAL " in line and " DEFAULT " in line and " UND " not in line and " FUNC " in line
    }
    assert "PyInit__grumpy" in exported
    # -fvisibility=hidden: only the module init and core's GP_API functions
    # are exported, not the hooks' extern functions (hooks/hooks.h)
    assert all(s == "PyInit__grumpy" or s.startswith("gp_") for s in exported), exported
    hidden = {"gp_capture_ufunc", "gp_as_grumpy", "gp_wrap_result", "gp_fallback_ufunc", "gp_node_for_array"}
    assert not exported & hidden, exported & hidden


def test_installed_import_from_elsewhere(installed, tmp_path):
    _, target = installed
    r = _run_installed(
        target,
        """
        import grumpy, grumpy._grumpy, grumpy.run, grumpy.ab
        print(grumpy.__file__)
        print(grumpy._grumpy.__file__)
        print("enabled", grumpy.enabled())
        """,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0] == str(target / "grumpy" / "__init__.py")
    assert lines[1] == str(target / "grumpy" / f"_grumpy{EXT_SUFFIX}")
    assert lines[2] == "enabled False"  # GRUMPY unset: the .pth does nothing
    assert r.stderr == ""


def test_installed_pth_enables_with_grumpy_1(installed, tmp_path):
    _, target = installed
    r = _run_installed(
        target,
        """
        import sys
        assert "grumpy._startup" in sys.modules, "grumpy.pth should have imported grumpy._startup"
        assert "numpy" not in sys.modules, "start-up waits for the program's own import of NumPy"
        import grumpy
        import numpy as np
        assert grumpy.enabled()
        x = np.arange(1 << 20, dtype=np.float64)
        a = x * 2 + 1
        print(type(x).__module__, type(x).__name__, grumpy.is_pending(a))
        s = a.sum()
        want = (np.arange(1 << 20, dtype=np.float64).view(np.ndarray) * 2 + 1).sum()
        print(s == want, grumpy.stats()["kernels_launched"] >= 1, grumpy.__file__)
        """,
        cwd=tmp_path,
        GRUMPY="1",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "not enabled" not in r.stderr, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "grumpy ndarray True"
    assert lines[1] == f"True True {target / 'grumpy' / '__init__.py'}"


def test_installed_pth_does_nothing_without_grumpy_1(installed, tmp_path):
    _, target = installed
    r = _run_installed(
        target,
        """
        import sys
        import numpy as np
        print("grumpy" in sys.modules, type(np.arange(1 << 20)).__name__ == "ndarray"
              and type(np.arange(1 << 20)) is np.ndarray)
        """,
        cwd=tmp_path,
        GRUMPY="0",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["False", "True"]
