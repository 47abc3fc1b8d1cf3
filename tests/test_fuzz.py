"""The random-program differential fuzzer (tools/fuzz.py).

- a fixed-seed run with a time budget (``GRUMPY_FUZZ_SECONDS``, default 75
  seconds) must find no mismatch between grumpy and NumPy, and a shorter one
  (a third of it) on the GPU back end's emulated device (``--device
  emulated``: its placement, residency and copies, its kernels' entries run
  on the host), and one with 4 programs at a time in Python threads
  (``--py-threads 4``);
- the fuzzer must report a grumpy value that is off by one (``--self-test``);
- every saved case ``tests/fuzz_regressions/case_*.py`` (a minimized program
  from an earlier mismatch) must now give NumPy's results under grumpy.

Each runs tools/fuzz.py in a child process without capture (the fuzzer starts
its own grumpy and NumPy processes)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FUZZ = ROOT / "tools" / "fuzz.py"
CASES = sorted((ROOT / "tests" / "fuzz_regressions").glob("case_*.py"))
SECONDS = float(os.environ.get("GRUMPY_FUZZ_SECONDS", "75"))
SEED = 7


def fuzz(*args, timeout):
    env = dict(os.environ)
    # conftest turns the kernel cache and the adaptive rule off; the fuzzer
    # runs grumpy as users get it
    for name in ("GRUMPY", "GRUMPY_CACHE_DIR", "GRUMPY_STRICT", "GRUMPY_ADAPTIVE"):
        env.pop(name, None)
    env["GRUMPY_MIN_BYTES"] = "65536"
    return subprocess.run([sys.executable, str(FUZZ), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def assert_budget_finds_no_mismatch(proc, tail=""):
    """The fuzzer's summary line (ending in tail) names programs run and no mismatch."""
    m = re.search(r"^fuzz: (\d+) programs, (\d+) operations, (\d+) mismatches .*" + tail, proc.stdout, re.M)
    assert m, proc.stdout[-5000:] + proc.stderr[-5000:]
    programs, operations, mismatches = map(int, m.groups())
    assert programs > 0 and operations > 0, proc.stdout[-5000:]
    assert mismatches == 0, proc.stdout[-20000:]
    assert proc.returncode == 0, proc.stderr[-5000:]


def test_fixed_seed_budget_finds_no_mismatch(tmp_path):
    # a mismatch is shrunk and printed (copy it to tests/fuzz_regressions/ to keep it)
    assert_budget_finds_no_mismatch(fuzz("--seconds", str(SECONDS), "--seed", str(SEED), "--max-shrink", "1",
                                         "--shrink-seconds", "90", "--save-dir", str(tmp_path),
                                         timeout=3 * SECONDS + 600))


def test_fixed_seed_budget_on_the_emulated_gpu_finds_no_mismatch(tmp_path):
    assert_budget_finds_no_mismatch(fuzz("--seconds", str(SECONDS / 3), "--seed", str(SEED + 1), "--device", "emulated",
                                         "--max-shrink", "1", "--shrink-seconds", "90", "--save-dir", str(tmp_path),
                                         timeout=SECONDS + 600), tail="device emulated")


def test_fixed_seed_budget_in_four_python_threads_finds_no_mismatch(tmp_path):
    """grumpy's processes run 4 programs at a time, each in its own Python
    thread (tools/fuzz.py --py-threads): one core under concurrent capture."""
    assert_budget_finds_no_mismatch(fuzz("--seconds", str(SECONDS / 3), "--seed", str(SEED + 2), "--py-threads", "4",
                                         "--max-shrink", "1", "--shrink-seconds", "90", "--save-dir", str(tmp_path),
                                         timeout=SECONDS + 600), tail="4 Python threads")


def test_fuzzer_reports_a_perturbed_value():
    proc = fuzz("--self-test", "--seconds", "8", "--seed", str(SEED), "--shrink-seconds", "30", timeout=600)
    assert "fuzz: self-test passed" in proc.stdout, proc.stdout[-5000:] + proc.stderr[-5000:]
    assert proc.returncode == 0


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_saved_case_matches_numpy(case):
    proc = fuzz("--replay", str(case), timeout=600)
    assert proc.returncode == 0, proc.stdout[-10000:] + proc.stderr[-5000:]


def test_a_contraction_that_may_overflow_is_not_compared():
    """Found by `make fuzz SEED=54`: a float32 einsum 'bij,bjk->bik' whose
    sums of products reach 1e41 gave inf where NumPy's einsum loop gave NaN
    (inf - inf); NumPy's own matmul and einsum(optimize=True) give inf at
    most of those places too.  Which infinities meet depends on the order
    of accumulation, so the fuzzer does not generate a contraction whose
    bound reaches the dtype's range (as for products)."""
    sys.path.insert(0, str(FUZZ.parent))
    try:
        import fuzz as fz
    finally:
        sys.path.pop(0)
    import numpy as np
    big = np.full((1, 4, 4), 1e19, np.float32)
    small = np.full((1, 4, 4), 1e3, np.float32)
    fn = lambda a, b: np.einsum("bij,bjk->bik", a, b)  # noqa: E731
    assert fz.product_bound(fn, big, 0.0, big, 0.0, fn(small, small)) is None
    bound = fz.product_bound(fn, small, 0.0, small, 0.0, fn(small, small))
    assert bound is not None and 0 < bound < 1e-5 * 4e6  # a few float32 ULP of the sums, 4e6


def test_the_generator_writes_in_place_polynomial_loops():
    """gen_poly (scipy's KroghInterpolator: a polynomial accumulated in place
    over a growing product chain, whose kernel split crashed grumpy) is
    drawn by the generator, and its loop renders into a program Python
    compiles."""
    code = (
        "import sys; sys.path.insert(0, 'tools'); import fuzz\n"
        "loops = [p for p in map(fuzz.generate, range(1, 120)) if any('\\n' in s.text for s in p.body)]\n"
        "compile(fuzz.render_program(loops[0]), 'p', 'exec')\n"
        "print('loops', len(loops), [s.text for s in loops[0].body if '\\n' in s.text][0])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"^loops [1-9]\d* _p = 1\nfor _k in range\(\d+\): _p = ", proc.stdout, re.M), proc.stdout
