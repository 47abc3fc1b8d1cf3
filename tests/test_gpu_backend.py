"""The GPU back end (core/backend_gpu.c, GRUMPY_BACKEND=gpu) on machines
without a GPU.

Its own logic -- operands copied to device memory by the extent their
strides reach, packed arguments with device addresses, map-reduce partials
per pairwise leaf combined on the host in NumPy's order, arg-reduction
partials, accumulating launches, the IEEE flags word -- runs on the emulated
device (GRUMPY_GPU_EMULATE=1: the same kernel entries compiled for the host,
device memory that is host memory).  Every program must print what the CPU
back end prints, from the same number of kernels, each one a device launch
with its bytes counted both ways.

Without GRUMPY_GPU_EMULATE and without a CUDA driver, GRUMPY_BACKEND=gpu is
one clear error; where a driver is present the real device runs the same
programs (skipped here, with the reason, when libcuda.so.1 cannot load)."""

import ctypes
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import test_backend_numpy as backend_numpy
from test_backend_numpy import PROGRAMS
from test_gpu_codegen import GATHERS, PROGRAM

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def env_for(backend, emulate):
    return backend_numpy.env_for(backend, **({"GRUMPY_GPU_EMULATE": "1"} if emulate else {}))


def run(argv, backend, tmp, emulate=True):
    return backend_numpy.run(argv[0], argv[1:], backend, tmp, **({"GRUMPY_GPU_EMULATE": "1"} if emulate else {}))


def run_emulated_at_every_size(script):
    """`python -m grumpy.run script` on the emulated GPU back end with
    GRUMPY_MIN_BYTES=0; it must exit 0."""
    env = env_for("gpu", True)
    env["GRUMPY_MIN_BYTES"] = "0"
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def driver_present():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_print_the_same_on_the_emulated_gpu(name, tmp_path):
    argv = [os.path.join("tools", name + ".py")] + PROGRAMS[name]
    cpu_out, cpu = run(argv, "cpu", str(tmp_path))
    gpu_out, gpu = run(argv, "gpu", str(tmp_path))
    assert gpu["backend"] == "gpu"
    assert gpu_out == cpu_out
    # the same kernels, and reductions of results the device holds (NumPy's on the CPU back end)
    assert gpu["kernels_launched"] >= cpu["kernels_launched"] > 0
    # every fused kernel but the products (OpenBLAS on the host) ran on the device
    assert gpu["gpu_kernels_launched"] > 0
    assert gpu["bytes_h2d"] > 0 and gpu["bytes_d2h"] > 0
    assert cpu["gpu_kernels_launched"] == 0 and cpu["bytes_h2d"] == 0


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_every_kernel_kind_on_the_gpu(emulate, tmp_path):
    """Reductions over every axis, arg-reductions, scans, accumulating column
    sums, integer division, casts, transposed and reversed views: the
    program of test_gpu_codegen, at every size (GRUMPY_MIN_BYTES=0), on the
    emulated device and, where a driver is present, on the real one."""
    outs = on_cpu_and_gpu(PROGRAM, emulate, tmp_path)
    assert outs["gpu"] == outs["cpu"]


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_gathers_run_on_the_gpu(emulate, tmp_path):
    """x[idx] on the device: a 1-D table at negative int32 indices, an n-D
    table's rows, a strided column's private copy (malloc'd memory, copied
    in at each launch: the whole table, not the one element its 0-d leaf
    reaches).  NumPy's values, bit for bit; kernels ran on the device."""
    program = GATHERS.replace("print(json.dumps(out))",
                              "import grumpy\nprint(json.dumps([out, grumpy.stats()['gpu_kernels_launched']]))")
    outs = on_cpu_and_gpu(program, emulate, tmp_path)
    assert outs["gpu"][0] == outs["cpu"][0]
    assert outs["gpu"][1] >= 3 and outs["cpu"][1] == 0


def test_gpu_without_a_driver_is_one_clear_error():
    if driver_present():
        pytest.skip("a CUDA driver is present: GRUMPY_BACKEND=gpu opens it")
    r = subprocess.run([sys.executable, "-c", "import grumpy; grumpy.enable()"], env=env_for("gpu", False),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    # one error, the last line: the exception and its reason
    assert r.stderr.splitlines()[-1].startswith(
        "RuntimeError: GRUMPY_BACKEND=gpu: no CUDA driver: libcuda.so.1"), r.stderr[-2000:]


def device_env(device, **extra):
    """A child's environment with GRUMPY_DEVICE=device and no GRUMPY_BACKEND."""
    env = env_for("cpu", False)
    del env["GRUMPY_BACKEND"]
    env.update({"GRUMPY_DEVICE": device} if device else {}, **extra)
    return env


def last_json(script, env, timeout=600):
    """The last line `python -m grumpy.run script` prints under env, as JSON."""
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def on_cpu_and_gpu(program, emulate, tmp_path):
    """last_json of program (its text, written under tmp_path) on the CPU
    and the GPU back end (emulated or real device), at every size
    (GRUMPY_MIN_BYTES=0); the real device's run is skipped, with the
    reason, where no driver loads."""
    if not emulate and not driver_present():
        pytest.skip("no CUDA driver on this machine (libcuda.so.1 does not load): the device run needs a GPU")
    script = tmp_path / "program.py"
    script.write_text(program)
    return {b: last_json(script, dict(env_for(b, emulate), GRUMPY_MIN_BYTES="0")) for b in ("cpu", "gpu")}


def on_cpu_and_auto(script, **extra):
    """last_json of script under GRUMPY_DEVICE=cpu and auto (emulated
    device), with extra GRUMPY_* settings."""
    return {d: last_json(script, device_env(d, GRUMPY_GPU_EMULATE="1", **extra), 300) for d in ("cpu", "auto")}


def test_device_gpu_without_a_driver_is_one_clear_error():
    if driver_present():
        pytest.skip("a CUDA driver is present: GRUMPY_DEVICE=gpu opens it")
    r = subprocess.run([sys.executable, "-c", "import grumpy; grumpy.enable()"], env=device_env("gpu"),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert r.stderr.splitlines()[-1].startswith("RuntimeError: GRUMPY_DEVICE=gpu: no CUDA driver: libcuda.so.1"), \
        r.stderr[-2000:]


@pytest.mark.parametrize("device", [None, "auto"])
def test_device_auto_without_a_driver_runs_on_the_cpu_without_loading_one(device):
    """The default (auto) where no driver loads: the CPU back end, and
    libcuda.so.1 never mapped into the process (no driver call)."""
    if driver_present():
        pytest.skip("a CUDA driver is present: GRUMPY_DEVICE=auto places kernels on the GPU")
    code = ("import numpy as np, grumpy; grumpy.enable(); x = np.arange(1e6); print(float((x * 2 + 1).sum()))\n"
            "s = grumpy.stats(); print(s['backend'], s['kernels_launched'], s['gpu_kernels_launched'])\n"
            "print(any('libcuda' in line for line in open('/proc/self/maps')))")
    r = subprocess.run([sys.executable, "-c", code], env=device_env(device), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    value, counts, mapped = r.stdout.split("\n")[:3]
    assert float(value) == float((np.arange(1e6) * 2 + 1).sum())
    backend, launched, on_gpu = counts.split()
    assert backend == "cpu" and int(launched) > 0 and int(on_gpu) == 0
    assert mapped == "False"


def test_automatic_placement_on_the_emulated_gpu(tmp_path):
    """GRUMPY_DEVICE=auto (emulated device, no warm-up): a kernel over host
    arrays that moves less than GRUMPY_GPU_MIN_BYTES runs on the CPU; a
    large one runs on the device, and so does a small one reading what the
    device holds, and a reduction of few threads (one row of 1000 points)
    of what only the device holds (copying 8 MB back would cost more);
    the values are the CPU back end's."""
    script = tmp_path / "place.py"
    script.write_text(
        "import json, numpy as np, grumpy\n"
        "small = np.arange(20_000, dtype=np.float64)\n"
        "big = np.linspace(0.0, 1.0, 1_000_000)\n"
        "out = []\n"
        "s0 = grumpy.stats()['gpu_kernels_launched']\n"
        "out.append(float((small * 3.0 + 1.0).sum()))\n"
        "s1 = grumpy.stats()['gpu_kernels_launched']\n"
        "y = np.exp(big) * 2.0\n"
        "out.append(float(y.sum()))\n"
        "s2 = grumpy.stats()['gpu_kernels_launched']\n"
        "z = y[:20_000] * 0.5 + 1.0\n"
        "out.append(float(z[7]) + float(z[-1]))\n"
        "s3 = grumpy.stats()['gpu_kernels_launched']\n"
        "out.append(float(y[:1000].sum()))\n"
        "s4 = grumpy.stats()['gpu_kernels_launched']\n"
        "print(json.dumps({'values': out, 'gpu': [s1 - s0, s2 - s1, s3 - s2, s4 - s3]}))\n")
    outs = on_cpu_and_auto(script, GRUMPY_MIN_BYTES="0", GRUMPY_GPU_MIN_BYTES=str(4 << 20), GRUMPY_GPU_WARMUP_MS="0")
    assert outs["auto"]["values"] == outs["cpu"]["values"]
    assert outs["cpu"]["gpu"] == [0, 0, 0, 0]
    small, big, on_device, few_threads = outs["auto"]["gpu"]
    assert small == 0 and big >= 1 and on_device >= 1 and few_threads == 1


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_print_the_same_on_a_real_gpu(name, tmp_path):
    if not driver_present():
        pytest.skip("no CUDA driver on this machine (libcuda.so.1 does not load): the device run needs a GPU")
    argv = [os.path.join("tools", name + ".py")] + PROGRAMS[name]
    cpu_out, cpu = run(argv, "cpu", str(tmp_path))
    gpu_out, gpu = run(argv, "gpu", str(tmp_path), emulate=False)
    assert gpu_out == cpu_out
    assert gpu["kernels_launched"] >= cpu["kernels_launched"] > 0
    assert gpu["gpu_kernels_launched"] > 0


def test_a_misaligned_operand_is_refused_and_numpy_computes_it(tmp_path):
    """A float64 view 4 bytes into a byte buffer (NumPy allows unaligned
    arrays): a GPU would fault on the misaligned loads and lose its context
    for the process; the launch is refused and NumPy's evaluator gives the
    value."""
    script = tmp_path / "packed.py"
    script.write_text(
        "import numpy as np, grumpy\n"
        "n = 200_000\n"
        "x = np.zeros(8 * n + 4, dtype=np.uint8)[4:].view(np.float64)\n"
        "x[:] = np.arange(n) * 0.5\n"
        "print(x.flags.aligned, float((x * 2.0 + 1.0).sum()))\n"
        "s = grumpy.stats(); print(s['plan_failures'], s['gpu_kernels_launched'])\n")
    r = run_emulated_at_every_size(script)
    value, counts = r.stdout.strip().splitlines()[-2:]
    x = np.arange(200_000) * 0.5
    assert value.split() == ["False", repr(float((x * 2.0 + 1.0).sum()))]
    failures, launched = map(int, counts.split())
    assert failures >= 1 and launched == 0


@pytest.mark.parametrize("seed", [92000050, 93000028])
def test_a_product_of_a_result_the_device_holds(seed):
    """Two of the fuzzer's programs on the emulated device: np.einsum /
    np.tensordot (products on the host's OpenBLAS, planned or computed at
    once) of a value the device holds.  OpenBLAS's threads read its host
    pages; gp_blas_matmul copies it to the host first (their fault would
    wait for the core lock, which the caller holds while it waits for
    them: both programs hung).  NumPy's values."""
    env = env_for("gpu", True)
    env.pop("GRUMPY_CACHE_DIR")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fuzz.py"), "--program", str(seed), "--threads",
                        "2", "--max-shrink", "0"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


PRODUCTS = """
import json, numpy as np, grumpy
rng = np.random.default_rng(0)
A = rng.standard_normal((600, 500)); B = rng.standard_normal((500, 700))
x = rng.standard_normal(500); S = rng.standard_normal((4, 50, 500))
C = (A * 2.0) @ B                 # a pending operand
D = float((np.tanh(C) + 1.0).sum())  # a kernel reads the product where it is
d2h = grumpy.stats()["bytes_d2h"]
E = A.T @ (A * 1.5)               # a transposed operand folded into the call
v = (A * 1.0) @ x                 # matrix @ vector
w = x @ (B + 0.0)                 # vector @ matrix
T = (S * 1.0) @ B                 # a stack times one matrix: the batch folded into M
P = A * 1.0
F = P @ P.T                       # a matrix times its own transpose: syrk on the host
d = float((x * 1.0) @ x)          # a dot: the host
values = [D, float(E.sum()), float(v.sum()), float(w.sum()), float(T.sum()), float(F.sum()), d,
          float(np.abs(F - F.T).max())]
s = grumpy.stats()
print(json.dumps({"values": values, "stats": [s["gpu_gemm_calls"], d2h, C.nbytes]}))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_products_run_on_the_device_and_stay_there(emulate, tmp_path):
    """Every product that is one GEMM runs on the device (cuBLAS; OpenBLAS
    on the emulated device's memory) with its operands where they are, and
    its result stays there: the kernel reading it copies nothing back.
    A matrix times its own transpose stays NumPy's exactly symmetric syrk
    on the host, a dot stays on the host; values as the CPU back end's."""
    outs = on_cpu_and_gpu(PRODUCTS, emulate, tmp_path)
    np.testing.assert_allclose(outs["gpu"]["values"][:7], outs["cpu"]["values"][:7], rtol=1e-11)
    assert outs["gpu"]["values"][7] == outs["cpu"]["values"][7] == 0.0  # F exactly symmetric
    gemms, d2h, product_bytes = outs["gpu"]["stats"]
    assert gemms == 5 and outs["cpu"]["stats"][0] == 0
    assert d2h < product_bytes  # the sum's partials came back, not the product


ACCUMULATE = """
import json, numpy as np, grumpy
rng = np.random.default_rng(1)
h0 = rng.standard_normal((1024, 1024)); q0 = rng.standard_normal((1024, 1024))
h = h0 * 1.0; q = q0 * 1.0
dh = q * (h > 0)       # written by the kernel that accumulates its column sums ...
db = dh.sum(axis=0)
v = float(db.sum())
w = float((dh * 2.0).sum())  # ... and read where it is
s = grumpy.stats()
print(json.dumps({"values": [v, w], "h2d": s["bytes_h2d"], "d2h": s["bytes_d2h"], "inputs": h0.nbytes + q0.nbytes}))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_an_accumulating_kernels_other_outputs_stay_on_the_device(emulate, tmp_path):
    """A kernel that accumulates column sums (an MLP's bias gradient,
    dh.sum(axis=0)) also writes dh: only the folded output goes through the
    host (its identity fill is the host stage's); dh stays on the device and
    its inputs are uploaded once.  Before, every output of such a kernel
    came back and was uploaded again (50 MB in, 25 MB out here; in an MLP
    step 3 of every 4 bytes copied)."""
    outs = on_cpu_and_gpu(ACCUMULATE, emulate, tmp_path)
    gpu = outs["gpu"]
    assert gpu["values"] == outs["cpu"]["values"]
    assert gpu["inputs"] <= gpu["h2d"] < gpu["inputs"] + (1 << 20)
    assert gpu["d2h"] < 1 << 20


IN_PLACE_STEPS = """
import json, numpy as np, grumpy
u = np.zeros(1 << 20); u[1 << 18: 1 << 19] = 1.0
u.sum()  # the grid on the device before the loop, and copied once
s0 = grumpy.stats()
for _ in range(20):
    u[1:-1] += 0.25 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
s1 = grumpy.stats()
moved = {k: s1[k] - s0[k] for k in ("bytes_h2d", "bytes_d2h", "host_to_device", "device_to_host")}
print(json.dumps(dict(moved, values=[float(u.sum()), float((u * u).sum())], backend=s1["backend"])))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_a_grid_updated_in_place_through_slices_stays_on_the_device(emulate, tmp_path):
    """`u[1:-1] += f(u[2:], u[1:-1], u[:-2])` is Python's
    u[1:-1] = u[1:-1].__iadd__(...): the assignment of a view's own elements
    onto themselves (hooks/array.c same_elements) computes the update and
    leaves the grid on the device.  Before, NumPy's self-copy brought the
    whole grid to the host and the next step uploaded it again: 8 MiB each
    way per step (found on the emulated device with tools/step_overhead.py).
    The values are the CPU back end's, bit for bit (basic arithmetic)."""
    outs = on_cpu_and_gpu(IN_PLACE_STEPS, emulate, tmp_path)
    gpu = outs["gpu"]
    assert gpu["backend"] == "gpu" and outs["cpu"]["backend"] == "cpu"
    assert gpu["values"] == outs["cpu"]["values"]
    assert gpu["host_to_device"] == 0 and gpu["device_to_host"] == 0, gpu
    assert gpu["bytes_h2d"] < 1 << 20 and gpu["bytes_d2h"] < 1 << 20, gpu


QUEUED_LAUNCHES = """
import json, warnings, numpy as np, grumpy
u = np.zeros(1 << 20); u[1 << 18: 1 << 19] = 1.0
v = np.zeros(1 << 20)
u.sum(), v.sum()
def counts():
    s = grumpy.stats()
    return [s[k] for k in ("gpu_kernels_launched", "gpu_kernels_queued", "fpe_to_numpy", "fpe_unreported")]
def delta(a, b):
    return [y - x for x, y in zip(a, b)]
def warned(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return [value, [str(c.message) for c in caught]]
out, c0 = {}, counts()
for _ in range(10):
    v[1:-1] = np.maximum(u[2:], u[:-2])  # in place, nothing NumPy warns of: queued
v[0] = 0.0
out["maximum"] = [float(v.sum())] + delta(c0, c1 := counts())
for _ in range(10):
    u[1:-1] += 0.25 * (u[2:] - 2.0 * u[1:-1] + u[:-2])  # the add may overflow: waited
u[0] = 0.0
out["steps"] = [float(u.sum())] + delta(c1, c2 := counts())
out["fresh"] = warned(lambda: float((u * 3.0 - 1.0)[7])) + delta(c2, c3 := counts())
with np.errstate(all="ignore"):
    z = u / 0.0
out["ignored"] = [float(z[5])] + delta(c3, c4 := counts())
def divide_in_place():
    u[1:-1] /= u[1:-1] * 0.0  # 1/0 and 0/0: its warnings need the values it overwrites
    u[0] = 1.0
    return float(u[1 << 18])
out["in_place"] = warned(divide_in_place) + delta(c4, counts())
out["nan_minus"] = warned(lambda: float((u[2:] - u[:-2])[(1 << 18) + 10]))
print(json.dumps({"out": out, "backend": grumpy.stats()["backend"]}))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_launches_whose_flags_nobody_reads_do_not_wait(emulate, tmp_path):
    """A launch none of whose operations NumPy may warn of under their
    error state (plan.c flags_use: GP_FLAGS_IGNORED) returns with its
    kernel queued (backend_gpu.c run_kernel); one that may warn waits for
    its flags.  An in-place kernel whose flags are raised leaves its
    buffers as they were (GP_FLAGS_UNDONE: it wrote fresh device copies)
    and NumPy computes it, with its warnings (fpe_to_numpy): before, an
    in-place kernel on the device gave none (24 real-device failures of
    `make test-gpu`'s test_errstate.py).  NaN from inf - inf warns as in
    NumPy (codegen.c note_nonfinite).  Values and warnings are the CPU
    back end's."""
    outs = on_cpu_and_gpu(QUEUED_LAUNCHES, emulate, tmp_path)
    cpu, gpu = outs["cpu"]["out"], outs["gpu"]["out"]
    assert outs["gpu"]["backend"] == "gpu"

    def same(a, b):
        return a == b or (a != a and b != b)
    for key in ("maximum", "steps", "fresh", "ignored", "in_place", "nan_minus"):
        assert same(gpu[key][0], cpu[key][0]), key
    launched, queued, to_numpy, unreported = gpu["maximum"][1:]
    assert queued >= 10 and launched >= queued, gpu["maximum"]
    launched, queued, to_numpy, unreported = gpu["steps"][1:]
    assert launched >= 10 and queued == 0 and to_numpy == 0, gpu["steps"]
    assert gpu["fresh"][1] == cpu["fresh"][1] == []
    launched, queued, to_numpy, unreported = gpu["fresh"][2:]
    assert launched >= 1 and queued == 0, gpu["fresh"]
    launched, queued, to_numpy, unreported = gpu["ignored"][1:]
    assert launched >= 1 and queued == launched, gpu["ignored"]
    assert gpu["in_place"][1] == cpu["in_place"][1] and cpu["in_place"][1], gpu["in_place"]
    launched, queued, to_numpy, unreported = gpu["in_place"][2:]
    assert to_numpy >= 1 and unreported == 0, gpu["in_place"]
    assert gpu["nan_minus"] == cpu["nan_minus"] and cpu["nan_minus"][1], cpu["nan_minus"]


PAIRWISE_SIZES = [1, 7, 8, 9, 127, 128, 129, 255, 256, 257, 1000, 4097, 65537, 1_000_003]

PAIRWISE_SUMS = """
import json, numpy as np, grumpy
out = []
for n in %r:
    for dt in (np.float64, np.float32):
        x = np.linspace(-1.0, 3.0, n, dtype=dt) ** 2
        out.append([float((x * dt(1.5) + dt(0.25)).sum()), float(np.mean(x * dt(0.5) - dt(0.125)))])
m = np.linspace(0.0, 1.0, 7 * 3001).reshape(7, 3001)
out.append(np.asarray((m * 3.0 - 1.0).sum(axis=1)).tolist())
s = grumpy.stats()
print(json.dumps({"values": out, "gpu": s["gpu_kernels_launched"], "backend": s["backend"]}))
""" % (PAIRWISE_SIZES,)


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_sums_of_every_leaf_count_are_numpys_bit_for_bit(emulate, tmp_path):
    """A map-reduce sum's per-leaf partials are combined on the host by a
    schedule of the pairwise tree's additions (backend_gpu.c
    pairwise_schedule; it replaced a recursion that took 62% of a 10M
    Black-Scholes pricing on the H100).  Sizes of one leaf, one leaf plus
    one point, odd counts and a million points, float64 and float32, sums
    and means, and 7 rows at once: NumPy's values exactly (its pairwise
    order), each from a kernel the device ran."""
    if not emulate and not driver_present():
        pytest.skip("no CUDA driver on this machine (libcuda.so.1 does not load): the device run needs a GPU")
    script = tmp_path / "sums.py"
    script.write_text(PAIRWISE_SUMS)
    got = last_json(script, dict(env_for("gpu", emulate), GRUMPY_MIN_BYTES="0"))
    want = []
    for n in PAIRWISE_SIZES:
        for dt in (np.float64, np.float32):
            x = np.linspace(-1.0, 3.0, n, dtype=dt) ** 2
            want.append([float((x * dt(1.5) + dt(0.25)).sum()), float(np.mean(x * dt(0.5) - dt(0.125)))])
    m = np.linspace(0.0, 1.0, 7 * 3001).reshape(7, 3001)
    want.append((m * 3.0 - 1.0).sum(axis=1).tolist())
    assert got["backend"] == "gpu"
    assert got["values"] == want
    assert got["gpu"] >= 2 * 2 * len(PAIRWISE_SIZES)


LONG_SUMS = """
import json, numpy as np, grumpy
out = []
for n in (32767, 32768, 32769, 1_000_003, 10_000_000):
    for dt in (np.float64, np.float32):
        x = np.linspace(-1.0, 3.0, n, dtype=dt) ** 2
        s0 = grumpy.stats()
        v = float((x * dt(1.5) + dt(0.25)).sum())
        s1 = grumpy.stats()
        out.append([n, np.dtype(dt).name, v, s1["bytes_d2h"] - s0["bytes_d2h"],
                    s1["gpu_kernels_launched"] - s0["gpu_kernels_launched"]])
m = np.linspace(0.0, 1.0, 7 * 300001).reshape(7, 300001)
rows = (m * 3.0 - 1.0).sum(axis=1).tolist()
print(json.dumps({"sums": out, "rows": rows}))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_a_long_sums_tree_is_added_on_the_device_in_numpys_order(emulate, tmp_path):
    """A float sum of 256 leaves or more adds the lower levels of NumPy's
    pairwise tree on the device (backend_gpu.c gp_pairs_ptx: a thread per
    subtree of at most 4096 points, its additions in the tree's order) and
    brings back one value per subtree, not one per leaf: 10M points of
    float64 brought back 1 MiB of partials, now 4096 sums (32 KiB).  The
    sums are NumPy's bit for bit (the additions are the same, in an order
    each addition's operands allow), each sum two kernels (the map-reduce
    and the tree's lower levels); 7 rows at once too."""
    if not emulate and not driver_present():
        pytest.skip("no CUDA driver on this machine (libcuda.so.1 does not load): the device run needs a GPU")
    script = tmp_path / "long_sums.py"
    script.write_text(LONG_SUMS)
    got = last_json(script, dict(env_for("gpu", emulate), GRUMPY_MIN_BYTES="0"))
    assert len(got["sums"]) == 10
    for n, name, v, d2h, kernels in got["sums"]:
        dt = np.dtype(name).type
        x = np.linspace(-1.0, 3.0, n, dtype=dt) ** 2
        assert v == float((x * dt(1.5) + dt(0.25)).sum()), (n, name)
        per_leaf = 8 * (n // 128)  # what came back before: a partial per leaf, at least n // 128 leaves
        assert kernels == 2 and d2h <= per_leaf // 16, (n, name, d2h, kernels)
    m = np.linspace(0.0, 1.0, 7 * 300001).reshape(7, 300001)
    assert got["rows"] == (m * 3.0 - 1.0).sum(axis=1).tolist()


OVERFLOWING_SUMS = """
import numpy as np
for n, v in ((20000, 1e306), (1_000_000, 1e303)):
    z = np.full(n, v) * 1.0
    print(float((z * 1.0).sum()))
    print(float((z * -1.0).sum()))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_a_sum_overflowing_only_where_partials_are_added_warns_as_numpy(emulate, tmp_path):
    """20000 points of 1e306: every leaf's sum is finite, the additions of
    the partials (on the host, or on the device for a long row) overflow,
    and NumPy warns "overflow encountered in reduce".  No flag was raised
    there, so the GPU back end printed no warning (checked); a non-finite
    combined sum now raises the flags and the planner's replay gives
    NumPy's warnings: stdout and stderr NumPy's."""
    if not emulate and not driver_present():
        pytest.skip("no CUDA driver on this machine (libcuda.so.1 does not load): the device run needs a GPU")
    script = tmp_path / "overflow.py"
    script.write_text(OVERFLOWING_SUMS)
    env = dict(env_for("gpu", emulate), GRUMPY_MIN_BYTES="0")
    plain = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    got = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert got.returncode == plain.returncode == 0, got.stderr[-3000:]
    assert "overflow encountered in reduce" in plain.stderr
    assert (got.stdout, got.stderr) == (plain.stdout, plain.stderr)


SMALL_PRODUCT = """
import json, numpy as np, grumpy
rng = np.random.default_rng(1)
d = rng.standard_normal((4096, 10)).astype(np.float32)
W = rng.standard_normal((2048, 10)).astype(np.float32)
h = np.maximum(rng.standard_normal((4096, 2048)).astype(np.float32) * 2.0, 0)
values = [float(((d @ W.T) * (h > 0)).sum())]
s0 = grumpy.stats()
for i in range(5):
    d = d * np.float32(0.9)
    values.append(float(((d @ W.T) * (h > 0)).sum()))
s1 = grumpy.stats()
print(json.dumps({"values": values, "h2d": s1["bytes_h2d"] - s0["bytes_h2d"],
                  "gemm": s1["gpu_gemm_calls"] - s0["gpu_gemm_calls"], "backend": s1["backend"]}))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_a_product_of_small_plain_matrices_is_computed_where_it_is_read(emulate, tmp_path):
    """MLP's backward step ``(dlogits @ W2.T) * (h > 0)`` with h on the device:
    the plain 4096 x 10 and 2048 x 10 operands (240 KB) go up, not NumPy's
    32 MB product (hooks/plain_ops.c product_expands; before, 32 MB a
    step).  Values: the CPU back end's within float32 GEMM rounding."""
    outs = on_cpu_and_gpu(SMALL_PRODUCT, emulate, tmp_path)
    gpu = outs["gpu"]
    assert gpu["backend"] == "gpu"
    assert gpu["gemm"] == 5
    assert gpu["h2d"] < 5 * 300_000, gpu
    np.testing.assert_allclose(gpu["values"], outs["cpu"]["values"], rtol=1e-5)


WARMUP = """
import json, numpy as np, grumpy
a = np.linspace(0.0, 3.0, 1_000_000); b = np.cos(a) + 2.0; c = np.sqrt(a + 1.0)
values, placed = [], []
for i in range(40):
    g0 = grumpy.stats()["gpu_kernels_launched"]
    values.append(float((np.sin(a * (1.0 + i / 64)) * b + c).sum()))
    placed.append(grumpy.stats()["gpu_kernels_launched"] - g0)
print(json.dumps({"values": values, "placed": placed}))
"""


@pytest.mark.parametrize("warmup_ms", [5, 200000])
def test_a_kernel_moves_to_the_device_once_it_has_warmed_up(warmup_ms, tmp_path):
    """GRUMPY_DEVICE=auto (emulated device): a kernel over host arrays runs
    on the CPU until its launches there have taken GRUMPY_GPU_WARMUP_MS in
    all (the device's start-up and JIT are paid back only by work that
    repeats), then on the device; a program that never takes that long
    never opens it.  On an H100 placing every large kernel on the device at
    once made tools/programs 0.61x NumPy.  Values as the CPU back end's
    within DESIGN.md section 4: sin within 4 ULP and another summation
    order (the device's reduction tree is not the CPU kernel's, whose
    vector width is the host's: on an AVX-512 host one of the 40 sums of
    1M terms differed in its last bit, 2698341.0795596177 against
    2698341.079559618); while the work stays on the CPU, bit for bit."""
    script = tmp_path / "warm.py"
    script.write_text(WARMUP)
    outs = on_cpu_and_auto(script, GRUMPY_GPU_MIN_BYTES=str(1 << 20), GRUMPY_GPU_WARMUP_MS=str(warmup_ms))
    placed = outs["auto"]["placed"]
    for k, (got, want) in enumerate(zip(outs["auto"]["values"], outs["cpu"]["values"])):
        if placed[k]:
            # 1M terms of magnitude <= 6: a bound far below any real error
            # (a lost term moves the sum by ~1e-6 relative) and far above
            # rounding (one ULP of the sum is 2e-16 relative)
            assert math.isclose(got, want, rel_tol=1e-13), (k, got, want)
        else:
            assert got == want, (k, got, want)
    if warmup_ms == 5:
        # the first launch on the device (two kernels: the map-reduce and the
        # lower levels of its pairwise tree); all later ones there too
        first = placed.index(2)
        assert 1 <= first < 20 and placed[first:] == [2] * (40 - first) and sum(placed[:first]) == 0
    else:
        assert placed == [0] * 40


HELD = """
import json, numpy as np, grumpy
rng = np.random.default_rng(1)
h0 = rng.standard_normal((8192, 2048)).astype(np.float32)
h = h0 * np.float32(1.0)
m = float((h * np.float32(2.0)).sum())     # h is written on the device by this kernel
s0 = grumpy.stats()
col = h.sum(axis=0)                        # 2048 column sums of 8192 rows: few threads, h held
v = float(col[5])
s1 = grumpy.stats()
x = rng.random(8192, dtype=np.float32)     # NumPy's values, on the host
c = np.cumsum(x * np.float32(2.0))         # a scan of one row: one thread, nothing held
w = float(c[-1])
s2 = grumpy.stats()
print(json.dumps({"values": [m, v, w], "gpu": [s1["gpu_kernels_launched"] - s0["gpu_kernels_launched"],
                                               s2["gpu_kernels_launched"] - s1["gpu_kernels_launched"]],
                  "copied_back": s1["device_to_host"] - s0["device_to_host"]}))
"""


def test_a_kernel_of_few_threads_runs_where_its_operands_are_cheapest(tmp_path):
    """GRUMPY_DEVICE=auto (emulated device): 2048 column sums of a 64 MB
    array the device holds (an MLP's bias gradient) stay on the device
    (walking 8192 rows per thread costs less than copying 64 MB back); a
    one-thread scan of host values runs on the CPU.  Values as the CPU
    back end's."""
    script = tmp_path / "held.py"
    script.write_text(HELD)
    outs = on_cpu_and_auto(script, GRUMPY_MIN_BYTES="0", GRUMPY_GPU_WARMUP_MS="0")
    assert outs["auto"]["values"] == outs["cpu"]["values"]
    assert outs["auto"]["gpu"] == [1, 0] and outs["auto"]["copied_back"] == 0


def test_a_product_of_a_misaligned_operand_stays_on_the_host(tmp_path):
    """A float64 matrix 4 bytes into a byte buffer (NumPy allows it) times a
    pending matrix: cuBLAS would fault on the misaligned loads, and the
    fault is sticky (the context is lost for the process), so the product is
    OpenBLAS's; the aligned one after it runs on the device."""
    script = tmp_path / "mis.py"
    script.write_text(
        "import numpy as np, grumpy\n"
        "x = np.zeros(8 * 400 * 500 + 4, dtype=np.uint8)[4:].view(np.float64).reshape(400, 500)\n"
        "x[:] = np.arange(400 * 500).reshape(400, 500) % 7 * 0.25\n"
        "W = np.ones((500, 300)) * 0.5\n"
        "g0 = grumpy.stats()['gpu_gemm_calls']\n"
        "r = float((x @ W).sum())\n"
        "g1 = grumpy.stats()['gpu_gemm_calls']\n"
        "r2 = float((x.copy() @ W).sum())\n"
        "print(x.flags.aligned, r, r2, g1 - g0, grumpy.stats()['gpu_gemm_calls'] - g1)\n")
    r = run_emulated_at_every_size(script)
    aligned, v, v2, misaligned_on_device, aligned_on_device = r.stdout.split()
    x = (np.arange(400 * 500).reshape(400, 500) % 7 * 0.25)
    want = float((x @ (np.ones((500, 300)) * 0.5)).sum())
    assert aligned == "False" and float(v) == want and np.isclose(float(v2), want, rtol=1e-12)
    assert misaligned_on_device == "0" and aligned_on_device == "1"


LARGE_COPIES = """
import hashlib, json, numpy as np, grumpy
values = []
for n in (3 * (1 << 20) + 7, 4 * (1 << 20) + 1, 5 * (1 << 20) + 12345):  # float64: 24 MiB .. 40 MiB, odd tails
    x = np.copy(np.arange(n, dtype=np.float64) * 0.5)
    s0 = grumpy.stats()
    y = x * 3.0 + 1.0  # x goes up whole; y stays on the device until read
    h = hashlib.sha256(np.ascontiguousarray(y).view(np.ndarray).tobytes()).hexdigest()
    s1 = grumpy.stats()
    values.append([n, h, s1["bytes_h2d"] - s0["bytes_h2d"], s1["bytes_d2h"] - s0["bytes_d2h"]])
print(json.dumps({"values": values, "backend": grumpy.stats()["backend"]}))
"""


@pytest.mark.parametrize("emulate", [True, False], ids=["emulated", "real"])
def test_large_copies_bring_every_byte_both_ways(emulate, tmp_path):
    """Uploads and downloads of 24-40 MiB, sizes that are no multiple of a
    page or of a power of two, at sizes where a copy path could split a
    copy into chunks: the result's bytes are the CPU back end's, and each
    way moved the array's bytes exactly once."""
    outs = on_cpu_and_gpu(LARGE_COPIES, emulate, tmp_path)
    gpu = outs["gpu"]
    assert gpu["backend"] == "gpu"
    assert len(gpu["values"]) == len(outs["cpu"]["values"]) == 3
    for (n, h, up, down), (_, want, _, _) in zip(gpu["values"], outs["cpu"]["values"]):
        assert h == want
        assert up == 8 * n and down == 8 * n, (up, down, n)
