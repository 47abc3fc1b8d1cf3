"""Builds grumpy for `pip install .` / `pip wheel .` (metadata: pyproject.toml).

What it adds to the pyproject metadata:

- the extension ``grumpy._grumpy`` from core/*.c and hooks/*.c but the code
  generator, compiled as C11 with -fvisibility=hidden against NumPy's
  headers and LLVM 19's C API (flags from ``llvm-config-19``, or the program
  named by $LLVM_CONFIG), linked with -lcrypto (OpenSSL: cache digests),
  -lm, -lpthread; and the code generator's library ``grumpy._grumpy_jit``
  (build_flags.txt's jit_sources) linked with -lLLVM-19 (rpath to LLVM's
  libdir), which the extension loads at its first compile -- the same
  flags as the Makefile's build; and ``grumpy._preload``, the LD_PRELOAD
  shim of interpose/preload.c that the ``grumpy-exec`` console script
  (grumpy/_exec.py) puts in front of a command;
- ``grumpy.pth`` (the line of interpose/grumpy.pth) at the root of the
  built tree, so that the wheel installs it into site-packages, where it
  enables grumpy at start-up when GRUMPY=1;
- interpose/grumpy.pth in the sdist too;
- setuptools' build files under build/setuptools (the Makefile's build/
  stays its own; `make clean` removes both).

The C files are compiled in parallel (as many jobs as CPUs, or
$GRUMPY_BUILD_JOBS).
"""

import glob
import os
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
PTH = os.path.join("interpose", "grumpy.pth")
BUILD_BASE = os.path.join("build", "setuptools")


def llvm_config(*args):
    """Output of llvm-config (or $LLVM_CONFIG) with args, split into words."""
    prog = os.environ.get("LLVM_CONFIG", "llvm-config-19")
    try:
        out = subprocess.run([prog, *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(
            f"grumpy: cannot run {prog} {' '.join(args)} ({exc}); install Debian's llvm-19-dev "
            "or set LLVM_CONFIG to LLVM 19's llvm-config"
        )
    return shlex.split(out)


def numpy_include():
    try:
        import numpy
    except ImportError:
        sys.exit("grumpy: NumPy must be installed to build grumpy (pip's build isolation installs it)")
    return numpy.get_include()


class BuildPyWithPth(build_py):
    """build_py that also puts grumpy.pth at the root of the built tree
    (which is site-packages once installed)."""

    def run(self):
        super().run()
        src = os.path.join(HERE, PTH)
        dst = os.path.join(self.build_lib, "grumpy.pth")
        self.mkpath(self.build_lib)
        # exactly the one line, whatever the file's trailing newlines
        with open(src, encoding="utf-8") as f:
            line = f.read().strip()
        if not line or "\n" in line:
            raise RuntimeError(f"{PTH} must hold exactly one line")
        with open(dst, "w", encoding="utf-8") as f:
            f.write(line + "\n")

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, "grumpy.pth")]


class SdistWithPth(sdist):
    """sdist that also ships interpose/grumpy.pth (build_py reads it) and
    build_flags.txt (extension() reads it)."""

    def make_distribution(self):
        for name in (PTH, "build_flags.txt"):
            if name not in self.filelist.files:
                self.filelist.append(name)
        super().make_distribution()


class ParallelBuildExt(build_ext):
    """build_ext that compiles the sources of an extension in parallel, and
    always (it takes seconds; a stale object compiled with other flags or
    another NumPy is never reused)."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True

    def build_extension(self, ext):
        jobs = int(os.environ.get("GRUMPY_BUILD_JOBS", "0") or 0) or os.cpu_count() or 1
        compiler = self.compiler
        serial_compile = compiler.compile

        def parallel_compile(sources, *args, **kwargs):
            if jobs <= 1 or len(sources) <= 1:
                return serial_compile(sources, *args, **kwargs)
            with ThreadPoolExecutor(jobs) as pool:
                parts = list(pool.map(lambda s: serial_compile([s], *args, **kwargs), sources))
            return [obj for part in parts for obj in part]

        compiler.compile = parallel_compile
        try:
            super().build_extension(ext)
        finally:
            compiler.compile = serial_compile


def build_flags():
    """build_flags.txt: name -> list of flags (the Makefile reads the same file)."""
    flags = {}
    with open(os.path.join(HERE, "build_flags.txt"), encoding="utf-8") as f:
        for line in f:
            if "=" in line and not line.lstrip().startswith("#"):
                name, value = line.split("=", 1)
                flags[name.strip()] = shlex.split(value)
    return flags


def extensions():
    """The extension grumpy._grumpy (core/ and hooks/ but the code
    generator) and the code generator's library grumpy._grumpy_jit (the
    build_flags.txt jit_sources, with LLVM), which the extension loads at
    its first compile (core/jit_load.c)."""
    flags = build_flags()
    jit_sources = flags["jit_sources"]
    sources = [s for s in sorted(glob.glob("core/*.c")) if s not in jit_sources] + sorted(glob.glob("hooks/*.c"))
    if not sources:
        sys.exit("grumpy: no C sources found (run setup.py from the repository root)")
    headers = sorted(glob.glob("core/*.h") + glob.glob("hooks/*.h") + ["core/ops.def"])
    llvm_libdir = llvm_config("--libdir")[0]
    cflags = [*flags["std"], *flags["warn"], *flags["includes"], *llvm_config("--cflags")]
    ext = Extension(
        "grumpy._grumpy",
        sources=sources,
        depends=headers + ["build_flags.txt"],
        include_dirs=[numpy_include()],
        extra_compile_args=cflags,
        extra_link_args=flags["libs"],
        language="c",
    )
    jit = Extension(
        "grumpy._grumpy_jit",
        sources=jit_sources,
        depends=headers + ["build_flags.txt"],
        extra_compile_args=cflags,
        # -Bsymbolic: its calls to its own functions bind to them, not to the
        # extension's forwarders of the same names
        extra_link_args=[*llvm_config("--ldflags"), *flags["jit_libs"], *flags["libs"], f"-Wl,-rpath,{llvm_libdir}",
                         "-Wl,-Bsymbolic"],
        language="c",
    )
    # the preload shim of the grumpy-exec console script (grumpy/_exec.py):
    # a plain shared library that no interpreter imports
    shim = Extension(
        "grumpy._preload",
        sources=["interpose/preload.c"],
        extra_compile_args=[*flags["std"], *flags["warn"]],
        extra_link_args=["-ldl"],
        language="c",
    )
    return [ext, jit, shim]


def egg_base():
    """setuptools writes grumpy.egg-info here rather than into the repository."""
    path = os.path.join(HERE, BUILD_BASE)
    os.makedirs(path, exist_ok=True)
    return os.path.relpath(path, os.getcwd())


if __name__ == "__main__":
    os.chdir(HERE)
    if shutil.which(os.environ.get("LLVM_CONFIG", "llvm-config-19")) is None:
        llvm_config("--version")  # exits with the explanation
    setup(
        ext_modules=extensions(),
        cmdclass={"build_py": BuildPyWithPth, "build_ext": ParallelBuildExt, "sdist": SdistWithPth},
        options={
            "build": {"build_base": BUILD_BASE},
            "egg_info": {"egg_base": egg_base()},
        },
    )
