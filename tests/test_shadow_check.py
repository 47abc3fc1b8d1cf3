"""GRUMPY_CHECK: the shadow check computes every (sampled) kernel's output
with the NumPy evaluator too and keeps NumPy's values on a mismatch.
GRUMPY_DEBUG_CORRUPT=1 makes every map kernel's first output element wrong,
so the check has something to find; GRUMPY_MIN_BYTES=0 captures arrays of
every size.  Each case runs in a fresh process against plain NumPy."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import gpcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PROGRAM = """
import json, sys
import numpy as np
x = np.copy(np.linspace(0.0, 1.0, 300_000))
y = np.sin(x) * 2.0 + x
out = {
    "sum": float(y.sum()),
    "max0": np.asarray(y.reshape(300, 1000).max(axis=0))[:5].tolist(),
    "cumsum": float(np.asarray(np.cumsum(y * 1.0))[-1]),
    "map": np.asarray(x * 3.0 - 1.0)[:5].tolist(),
    "small": np.asarray(np.arange(10.0) * 2.0 + 1.0).tolist(),
    "int": np.asarray((np.arange(200_000) * 3) % 7)[:9].tolist(),
}
if "grumpy" in sys.modules:
    import grumpy
    s = grumpy.stats()
    out["stats"] = {k: s[k] for k in ("checks", "check_mismatches", "check_skipped", "kernels_launched", "ops_captured")}
print(json.dumps(out))
"""


def run(grumpy_on, **env_extra):
    env = gpcheck.subprocess_env()
    env["PYTHONPATH"] = ROOT
    env["GRUMPY_CACHE_DIR"] = "off"
    env.update(env_extra)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gp_shadow_{os.getpid()}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(PROGRAM))
    cmd = [sys.executable, "-m", "grumpy.run", path] if grumpy_on else [sys.executable, path]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout), r.stderr


def same(got, want):
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12), k


def test_check_finds_nothing_in_a_correct_run():
    want, _ = run(False)
    got, err = run(True, GRUMPY_CHECK="1", GRUMPY_MIN_BYTES="0")
    same(got, want)
    st = got["stats"]
    assert st["checks"] >= 5 and st["check_mismatches"] == 0, st
    assert "grumpy check" not in err


def test_check_catches_a_wrong_kernel_and_keeps_numpys_values():
    want, _ = run(False)
    bad, _ = run(True, GRUMPY_DEBUG_CORRUPT="1")
    assert bad["map"][0] != want["map"][0]  # the corruption is visible without the check
    got, err = run(True, GRUMPY_CHECK="1", GRUMPY_DEBUG_CORRUPT="1")
    same(got, want)
    st = got["stats"]
    assert st["check_mismatches"] >= 3, st
    assert "grumpy check: a" in err and "fused DAG:" in err and "NumPy's values are used" in err


def test_check_samples_a_fraction():
    got, _ = run(True, GRUMPY_CHECK="0.5", GRUMPY_MIN_BYTES="0")
    st = got["stats"]
    assert 0 < st["checks"] < st["kernels_launched"] + 2, st


def test_bad_check_value_is_one_clear_error():
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY_CHECK="sometimes")
    r = subprocess.run([sys.executable, "-c", "import numpy, grumpy; grumpy.enable()"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "GRUMPY_CHECK=sometimes" in r.stderr


CASTS = """
import json, warnings
import numpy as np, grumpy
warnings.simplefilter("ignore")
v = np.array([-3e9, np.inf, -np.inf, np.nan, 5e9, 4.3e9, 1e20, -1e20] * 5000)
bad = (v * 1.0).astype(np.uint32)
good = (np.arange(40000.0) * 2.0).astype(np.int32)
np.asarray(bad), np.asarray(good)
s = grumpy.stats()
print(json.dumps({"good": int(good[7]),
                  **{k: s[k] for k in ("checks", "check_mismatches", "check_unspecified")}}))
"""


def run_casts(**env_extra):
    env = gpcheck.subprocess_env()
    env.update(PYTHONPATH=ROOT, GRUMPY="1", GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="0", GRUMPY_CHECK="1", **env_extra)
    r = subprocess.run([sys.executable, "-c", CASTS], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1]), r.stderr


def test_out_of_range_casts_are_counted_apart_and_other_kernels_still_checked():
    """A float-to-integer cast of NaN, inf or an out-of-range value has no
    NumPy value (NumPy's contiguous and strided loops disagree): the check
    counts such kernels in check_unspecified, not as mismatches; a corrupted
    in-range cast kernel is still a mismatch."""
    plain = (
        "import numpy as np; v = np.array([-3e9, np.inf, -np.inf, np.nan, 5e9, 4.3e9, 1e20, -1e20] * 5000);"
        "np.seterr(invalid='ignore'); print(bool((v.astype(np.uint32)[::2] != v[::2].astype(np.uint32)).any()))"
    )
    env = gpcheck.subprocess_env()
    r = subprocess.run([sys.executable, "-c", plain], env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "True", "NumPy's uint32 casts of out-of-range values agree across its loops now"
    got, err = run_casts()
    assert got["checks"] >= 2 and got["check_mismatches"] == 0 and got["check_unspecified"] >= 1, got
    assert "grumpy check" not in err
    corrupt, err = run_casts(GRUMPY_DEBUG_CORRUPT="1")
    assert corrupt["check_mismatches"] >= 1 and corrupt["good"] == 14, corrupt
    assert "grumpy check: a" in err


def test_a_cancellation_of_values_within_the_contract_is_not_a_mismatch(tmp_path):
    """The contract bounds each operation (transcendentals within 4 ULP of
    NumPy's), so a fused sum that cancels can be a few ULP of its operands
    away from NumPy's tiny result: the check allows 8 ULP of each element's
    largest intermediate.  SciPy's truncweibull_min logpdf test, at every
    size, computes log(x) + ... - log(exp(-a^c) - exp(-b^c)) - log(c) to
    -2.2e-16 where NumPy gives 0: reported as a mismatch before."""
    pytest.importorskip("scipy")
    env = gpcheck.subprocess_env()
    out = tmp_path / "stats.json"
    env.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", GRUMPY_MIN_BYTES="0", GRUMPY_CHECK="1",
               GRUMPY_STATS_JSON=str(out))
    test = "scipy.stats.tests.test_distributions::TestTruncWeibull::test_logpdf"
    r = subprocess.run([sys.executable, "-m", "grumpy.run", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                        test], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    st = json.loads(out.read_text())
    assert st["checks"] >= 5 and st["check_mismatches"] == 0, (st["checks"], st["check_mismatches"], r.stdout[-2000:])
