"""The GPU target of the code generator (core/codegen_nvptx.c, core/jit_nvptx.c)
on machines without a GPU: every program the planner makes for real programs
(the paper's benchmarks, reductions over every axis, arg-reductions, scans,
accumulating column sums, integer division, casts, views) is also compiled to
PTX (GRUMPY_PTX_DIR) and must assemble with the CUDA toolkit's ptxas.

Nothing here runs on a GPU: these machines have none (the device runs are in
tests/test_gpu_backend.py, skipped without a driver)."""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PTXAS = os.environ.get("PTXAS", "/usr/local/cuda/bin/ptxas")

PROGRAM = r"""
import numpy as np
rng = np.random.default_rng(0)
x = np.copy(rng.standard_normal((300, 257)))
y = np.copy(rng.standard_normal((300, 257)).astype(np.float32))
i = np.copy(rng.integers(-50, 50, (300, 257)))
out = []
out.append(float((x * x + 2 * x * np.sin(x) + np.exp(-x * x)).sum()))
out.append(np.asarray(np.tanh(y) * np.log1p(np.abs(y))).sum(axis=0)[:3].tolist())
out.append(np.asarray((x * 3).sum(axis=0))[:3].tolist())
out.append(np.asarray((x - 1).max(axis=1))[:3].tolist())
out.append(int(np.argmax(x * 2 + 1)))
out.append(np.asarray(np.argmin(y * y, axis=1))[:3].tolist())
out.append(np.asarray(np.cumsum(x * 0.5, axis=1))[0, -3:].tolist())
out.append(np.asarray(np.cumprod(y * 0.01 + 1, axis=0))[-1, :3].tolist())
out.append(np.asarray((i // 7 + i % 5).astype(np.float64) / 3.0)[0, :3].tolist())
out.append(np.asarray(np.where(x > 0, np.sqrt(np.abs(x)), np.clip(x, -0.5, 0.5)))[1, :3].tolist())
out.append(np.asarray((x.T[::2, ::-3] * 2 + 1)).sum())
out.append(np.asarray((y.astype(np.int32) + 3).astype(np.float32) ** 2).mean())
out.append(np.asarray(np.hypot(x, x[0]) + np.arctan2(x, 2.0)).std())
import json
print(json.dumps(out, default=float))
"""


def ptx_of(program, tmp_path):
    """The directory of PTX files `python -m grumpy.run` of program (its
    text) writes at every size (GRUMPY_PTX_DIR, no disk cache); the run
    must succeed."""
    script = tmp_path / "prog.py"
    script.write_text(program)
    ptx_dir = tmp_path / "ptx"
    ptx_dir.mkdir()
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="0", GRUMPY_PTX_DIR=str(ptx_dir))
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return ptx_dir


def test_every_planned_program_compiles_to_ptx(tmp_path):
    ptx_dir = ptx_of(PROGRAM, tmp_path)
    errors = sorted(ptx_dir.glob("*.err"))
    assert not errors, "\n".join(f"{e.name}: {e.read_text()[:500]}" for e in errors)
    files = sorted(ptx_dir.glob("*.ptx"))
    assert len(files) >= 12, [f.name for f in files]
    kinds = {"reduce": 0, "map": 0}
    for f in files:
        text = f.read_text()
        if f.name == "gp_pairs.ptx":
            # the back end's own kernels (backend_gpu.c, with a pairwise sum):
            # a float64 and a float32 entry of 7 parameters
            entries = re.findall(r"\.entry (gp_pairs_f\d\d)\(([^)]*)\)", text)
            assert [(e, a.count(".param")) for e, a in entries] == [("gp_pairs_f64", 7), ("gp_pairs_f32", 7)]
            continue
        assert ".entry gp_" in text
        # the entry's parameters: 4 for map kernels, 6 for map-reduce, the
        # IEEE flags word last (codegen_nvptx.c)
        params = re.search(r"\.entry gp_\w+\(([^)]*)\)", text).group(1).count(".param")
        assert params in (4, 6), params
        kinds["reduce" if params == 6 else "map"] += 1
    assert kinds["reduce"] and kinds["map"], kinds
    assert (ptx_dir / "gp_pairs.ptx").exists()  # PROGRAM sums floats
    if not os.access(PTXAS, os.X_OK):
        pytest.skip(f"{len(files)} PTX programs made; ptxas not found at {PTXAS} (CUDA toolkit not installed)")
    assemble(files)


GATHERS = r"""
import json, numpy as np
rng = np.random.default_rng(1)
x = np.copy(rng.standard_normal((300, 257)))
i = np.copy(rng.integers(-300, 300, 20000))
out = [float((x.ravel()[i.astype(np.int32)] * 2).sum()),    # 1-D, negative int32 indices
       np.asarray(x[i % 300] + 1.0)[:2, :3].tolist(),       # an n-D table's rows
       np.asarray(np.exp(x[:, 3][i]))[:3].tolist()]         # a strided column's private copy
print(json.dumps(out))
"""


def test_gathers_compile_to_ptx_that_assembles(tmp_path):
    """x[idx] kernels (GP_OP_GATHER: a table's base pointer, the index
    widened, counted from the end when negative and clamped to the
    table's length) for the NVPTX target: every program a gather-only
    script makes assembles with ptxas."""
    ptx_dir = ptx_of(GATHERS, tmp_path)
    assert not sorted(ptx_dir.glob("*.err"))
    files = [f for f in sorted(ptx_dir.glob("*.ptx")) if f.name != "gp_pairs.ptx"]
    assert len(files) >= 3, [f.name for f in files]
    if not os.access(PTXAS, os.X_OK):
        pytest.skip(f"{len(files)} PTX programs made; ptxas not found at {PTXAS} (CUDA toolkit not installed)")
    assemble(files)


def assemble(files):
    """Every PTX file assembles with ptxas for an A100 (sm_80) and an H100 (sm_90)."""
    for f in files:
        for arch in ("sm_80", "sm_90"):
            a = subprocess.run([PTXAS, f"-arch={arch}", str(f), "-o", os.devnull], capture_output=True, text=True)
            assert a.returncode == 0, f"{f.name} for {arch}: {a.stderr[:2000]}"


def test_ptx_comes_from_the_disk_cache_in_a_second_process(tmp_path):
    """Issue "GPU back end", deliver 2: PTX is cached on disk as the CPU's
    objects are.  A second process with the same cache directory writes
    the same PTX files, byte for byte, compiles nothing (every kernel's
    object and PTX read from the cache: ptx_disk_hits counts them) and never
    maps LLVM: a machine without LLVM can run cached GPU kernels."""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM + """
import grumpy
s = grumpy.stats()
print(s["kernels_compiled"], s["ptx_disk_hits"], any("libLLVM" in l for l in open("/proc/self/maps")))
""")
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR=str(tmp_path / "cache"), GRUMPY_MIN_BYTES="0")
    runs = []
    for k in (1, 2):
        ptx_dir = tmp_path / f"ptx{k}"
        ptx_dir.mkdir()
        r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=dict(env, GRUMPY_PTX_DIR=str(ptx_dir)),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        lines = r.stdout.splitlines()
        files = {f.name: f.read_bytes() for f in ptx_dir.glob("*.ptx") if f.name != "gp_pairs.ptx"}
        runs.append((lines[0], lines[1].split(), files))
    (out1, (compiled1, hits1, llvm1), ptx1), (out2, (compiled2, hits2, llvm2), ptx2) = runs
    assert out1 == out2
    assert len(ptx1) >= 12 and ptx2 == ptx1
    assert int(compiled1) >= 12 and hits1 == "0" and llvm1 == "True"
    assert compiled2 == "0" and int(hits2) == len(ptx1) and llvm2 == "False"


# the paper's kinds of program in tools/: option pricing, a softmax, a 2-D
# heat equation and Jacobi stencil, and a dtype and operation mix
TOOLS_PROGRAMS = {"blackscholes": ["200000", "float32", "2"], "softmax": [], "jacobi": ["300", "5"],
                  "mixed": ["200000", "1"]}


def test_the_tools_programs_write_ptx_that_assembles(tmp_path):
    """GRUMPY_PTX_DIR while the programs run on the CPU: every kernel the
    GPU back end would launch is written as PTX, none fails, and each file
    assembles for sm_80 and sm_90."""
    ptx_dir = tmp_path / "ptx"
    ptx_dir.mkdir()
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_PTX_DIR=str(ptx_dir))
    for name, args in TOOLS_PROGRAMS.items():
        r = subprocess.run([sys.executable, "-m", "grumpy.run", os.path.join(ROOT, "tools", name + ".py"), *args],
                           env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{name}: {r.stderr[-3000:]}"
    errors = sorted(ptx_dir.glob("*.err"))
    assert not errors, "\n".join(f"{e.name}: {e.read_text()[:500]}" for e in errors)
    files = sorted(ptx_dir.glob("*.ptx"))
    assert len(files) >= 6, [f.name for f in files]
    if not os.access(PTXAS, os.X_OK):
        pytest.skip(f"{len(files)} PTX programs made; ptxas not found at {PTXAS} (CUDA toolkit not installed)")
    assemble(files)


def test_the_gpu_back_end_writes_the_same_ptx_files_as_the_cpu_back_end(tmp_path):
    """GRUMPY_PTX_DIR does not depend on where kernels run: under the GPU back
    end (here its emulated device; on a machine with a GPU, GRUMPY_DEVICE=auto
    places the tools' programs there) the same programs write the same
    files.  It wrote none on an H100 until both back ends' compile wrote
    them."""
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_GPU_EMULATE="1")
    made = {}
    for device in ("cpu", "gpu"):
        ptx_dir = tmp_path / device
        ptx_dir.mkdir()
        r = subprocess.run([sys.executable, "-m", "grumpy.run", os.path.join(ROOT, "tools", "softmax.py")],
                           env=dict(env, GRUMPY_DEVICE=device, GRUMPY_PTX_DIR=str(ptx_dir)), capture_output=True,
                           text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        made[device] = {f.name: f.read_bytes() for f in ptx_dir.iterdir()}
    assert len(made["cpu"]) >= 3 and all(n.endswith(".ptx") for n in made["cpu"])
    assert made["gpu"] == made["cpu"]


def test_plain_numpy_run_is_unchanged_by_the_ptx_dump(tmp_path):
    """The dump is a side channel: the program prints NumPy's output."""
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    ptx_dir = tmp_path / "ptx"
    ptx_dir.mkdir()
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off")
    plain = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    env.update(GRUMPY_MIN_BYTES="0", GRUMPY_PTX_DIR=str(ptx_dir))
    dumped = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=env, capture_output=True,
                            text=True, timeout=600)
    assert plain.returncode == 0 and dumped.returncode == 0, dumped.stderr[-2000:]
    a, b = json.loads(plain.stdout), json.loads(dumped.stdout)
    for u, v in zip(a, b):
        np.testing.assert_allclose(np.asarray(u, dtype=float), np.asarray(v, dtype=float), rtol=1e-5)  # float32 transcendentals: 1 ULP each


def test_ptxas_is_where_the_toolkit_puts_it():
    """CI machines have the CUDA toolkit: a missing ptxas would silently skip
    the PTX checks above, so say so loudly when the toolkit directory exists."""
    if os.path.isdir("/usr/local/cuda"):
        assert os.access(PTXAS, os.X_OK) or shutil.which("ptxas")
    else:
        pytest.skip("no CUDA toolkit on this machine (/usr/local/cuda)")
