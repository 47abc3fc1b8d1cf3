"""Issue "never slower", do no harm adaptively (hooks/sites.c): a call site
whose results are computed by kernels of their own -- nothing fused, below
4 MiB -- is NumPy's at once after two such launches, as results below
GRUMPY_MIN_BYTES are; a site whose results fuse stays captured; every 16th
operation at an eager site is recorded anyway, and one that fuses makes the
site captured again.  Values are NumPy's either way."""

import os
import subprocess
import sys

import numpy as np
import pytest

import grumpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
N = 131072  # 1 MiB of float64: above the tests' 64 KiB threshold, below 4 MiB


@pytest.fixture(autouse=True)
def adaptive():
    """The rule on for these tests (conftest turns it off for the rest)."""
    before = grumpy.config()["adaptive"]
    grumpy.config(adaptive=True)
    yield
    grumpy.config(adaptive=before)


def plain(x):
    return np.asarray(x).view(np.ndarray)


def operands():
    return np.copy(np.linspace(0, 1, N)), np.copy(np.linspace(1, 2, N))


def lone_sum(a, b):
    c = a + b  # the site under test: computed alone, read at once
    return float(c[7])


def delta(before):
    s = grumpy.stats()
    return {k: s[k] - before[k] for k in ("kernels_launched", "ops_eager_site", "ops_captured")}


@pytest.mark.cpu_backend
def test_a_site_whose_results_run_alone_becomes_numpys():
    a, b = operands()
    want = float(plain(a)[7] + plain(b)[7])
    s0 = grumpy.stats()
    got = [lone_sum(a, b) for _ in range(34)]
    d = delta(s0)
    assert got == [want] * 34
    # two lone launches teach the site; of the 32 calls after, every 16th is
    # recorded anyway (a probe): 2 + 2 kernels, 30 calls NumPy's at once
    assert d["kernels_launched"] == 4, d
    assert d["ops_eager_site"] == 30, d
    sites = grumpy.stats()["adaptive_sites"]
    line = lone_sum.__code__.co_firstlineno + 1
    entry = sites[f"{__file__}:{line} ADD"]
    assert entry["lone"] >= 4 and entry["fused"] == 0 and entry["eager"] >= 30
    assert "nothing fused" in entry["reason"]


def fused_chain(a, b):
    c = a + b  # fused into the next line's kernel: stays captured
    d = c * 2.0 - a
    return float(d[5])


@pytest.mark.cpu_backend
def test_a_site_whose_results_fuse_stays_captured():
    a, b = operands()
    want = float((plain(a)[5] + plain(b)[5]) * 2.0 - plain(a)[5])
    s0 = grumpy.stats()
    got = [fused_chain(a, b) for _ in range(20)]
    d = delta(s0)
    assert got == [want] * 20
    assert d["kernels_launched"] == 20 and d["ops_eager_site"] == 0, d
    assert d["ops_captured"] == 60


def sometimes_fused(a, b, fuse):
    c = a + b  # alone, until a probe finds it fused
    if fuse:
        c = c * 3.0
    return float(c[3])


@pytest.mark.cpu_backend
def test_a_probe_that_fuses_makes_the_site_captured_again():
    a, b = operands()
    for _ in range(18):  # taught alone; the 16th eager call is a probe
        sometimes_fused(a, b, False)
    # calls until the next probe, which fuses: the site is captured from then on
    for _ in range(16):
        sometimes_fused(a, b, True)
    mid = grumpy.stats()
    got = [sometimes_fused(a, b, False) for _ in range(5)]
    d = delta(mid)
    assert got == [float(plain(a)[3] + plain(b)[3])] * 5
    line = sometimes_fused.__code__.co_firstlineno + 1
    entry = mid["adaptive_sites"][f"{__file__}:{line} ADD"]
    assert entry["fused"] >= 1, entry
    assert d["ops_eager_site"] == 0 and d["kernels_launched"] == 5, d


PROGRAM = """
import numpy as np, grumpy
a = np.copy(np.linspace(0, 1, 131072)); b = np.copy(np.linspace(1, 2, 131072))
for _ in range(10):
    c = a + b
    c[0]
s = grumpy.stats()
print(s["ops_eager_site"], s["kernels_launched"])
"""


@pytest.mark.parametrize("env,want", [({}, "8 2"), ({"GRUMPY_ADAPTIVE": "0"}, "0 10"),
                                      ({"GRUMPY_MIN_BYTES": "0"}, "0 10")])
def test_the_rule_is_on_by_default_and_off_when_asked_or_capturing_every_size(env, want, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(PROGRAM)
    e = {k: v for k, v in os.environ.items() if not k.startswith("GRUMPY")}
    e.update(PYTHONPATH=ROOT, GRUMPY_CACHE_DIR="off", **env)
    r = subprocess.run([sys.executable, "-m", "grumpy.run", str(script)], env=e, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[-2] == want
