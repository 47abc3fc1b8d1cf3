"""Tests of the A/B harness (grumpy/ab.py).

Unit tests of the array comparison (ULP distance, 4-ULP rule, NaN, integers,
files), then end-to-end runs of ``python -m grumpy.ab`` on tiny scripts
written to tmp_path.  A script tells the two variants apart by whether
``grumpy`` is imported (it is under ``python -m grumpy.run`` only, since the
harness clears GRUMPY for the plain run), so it can print or save something
else under grumpy on purpose.  The harness is timed, never its speed-up.
"""

import json
import math
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from grumpy import ab

ROOT = pathlib.Path(__file__).resolve().parents[1]
TIMEOUT = 300  # seconds for one harness invocation


# ------------------------------------------------------------ comparison


def shifted(values, ulps, dtype=np.float64):
    """values moved by `ulps` representable steps towards +inf (exactly)."""
    a = np.array(values, dtype=dtype)
    out = a.copy()
    for _ in range(ulps):
        out = np.nextafter(out, dtype(np.inf))
    return a, out


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_ulp_distance_counts_representable_steps(dtype):
    a, b = shifted([1.0, -1.0, 0.0, 3.5e-3, -2.0], 3, dtype)
    assert ab.ulp_distance(a, b).tolist() == [3] * 5
    assert ab.ulp_distance(b, a).tolist() == [3] * 5


def test_ulp_distance_across_zero_and_signed_zero():
    tiny = np.finfo(np.float64).smallest_subnormal
    a = np.array([0.0, -0.0, -tiny, 0.0])
    b = np.array([-0.0, 0.0, tiny, 2 * tiny])
    assert ab.ulp_distance(a, b).tolist() == [0, 0, 2, 2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_four_ulp_passes_five_and_hundred_fail(dtype):
    values = [1.0, 1e-30, -7.25, 123456.0, 0.1]
    ref, got4 = shifted(values, 4, dtype)
    assert ab.compare_arrays(ref, got4).ok
    assert ab.compare_arrays(ref, got4).max_ulp == 4
    _, got5 = shifted(values, 5, dtype)
    assert not ab.compare_arrays(ref, got5).ok
    _, got100 = shifted(values, 100, dtype)
    check = ab.compare_arrays(ref, got100)
    assert not check.ok
    assert "100 ULP" in check.message


def test_one_bad_element_in_a_large_array_is_found():
    ref = np.linspace(-3.0, 3.0, 3_000_001)  # more than one comparison chunk
    got = ref.copy()
    got[2_500_000] = np.nextafter(np.nextafter(ref[2_500_000], 9.0), 9.0)
    assert ab.compare_arrays(ref, got).ok
    got[2_900_000] *= 1 + 1e-13
    check = ab.compare_arrays(ref, got)
    assert not check.ok
    assert "1 of 3000001" in check.message and "(2900000,)" in check.message


def test_nan_positions_and_infinities():
    ref = np.array([1.0, np.nan, np.inf, -np.inf])
    assert ab.compare_arrays(ref, ref.copy()).ok
    moved = np.array([np.nan, 1.0, np.inf, -np.inf])
    assert "NaN" in ab.compare_arrays(ref, moved).message
    finite = np.array([1.0, np.nan, np.finfo(np.float64).max, -np.inf])
    assert not ab.compare_arrays(ref, finite).ok  # 1 ULP from inf, but not inf


def test_complex_parts_compared_separately():
    ref = np.array([1 + 1j, 2 - 3j], dtype=np.complex128)
    _, imag4 = shifted(ref.imag, 4)
    _, imag9 = shifted(ref.imag, 9)
    assert ab.compare_arrays(ref, ref.real + 1j * imag4).ok
    assert not ab.compare_arrays(ref, ref.real + 1j * imag9).ok


def test_integers_and_bools_must_be_identical():
    ref = np.arange(10, dtype=np.int32)
    assert ab.compare_arrays(ref, ref.copy()).ok
    got = ref.copy()
    got[7] += 1
    check = ab.compare_arrays(ref, got)
    assert not check.ok and "(7,)" in check.message
    assert not ab.compare_arrays(ref > 4, ref > 5).ok


def test_shape_and_dtype_must_match():
    ref = np.zeros((2, 3))
    assert "shape" in ab.compare_arrays(ref, np.zeros((3, 2))).message
    assert "dtype" in ab.compare_arrays(ref, np.zeros((2, 3), np.float32)).message
    assert "dtype" in ab.compare_arrays(np.zeros(3, np.int64), np.zeros(3, np.int32)).message


def test_absolute_tolerance_is_opt_in():
    ref = np.array([30.0, 1e-12])
    got = np.array([30.0, 1e-12 + 1e-14])  # thousands of ULP of 1e-12
    assert not ab.compare_arrays(ref, got).ok
    assert ab.compare_arrays(ref, got, atol=1e-13).ok
    assert not ab.compare_arrays(ref, got, atol=1e-15).ok


def test_tolerance_in_ulp_of_the_largest_magnitude_is_per_array():
    """--ulp-of-largest U: an element within U ULP of its own array's
    largest finite magnitude passes (a sum in another order); the limit
    follows each array's scale, and is off by default."""
    ref = np.array([512.0, 1e-3, np.inf])
    got = ref.copy()
    got[1] += 40 * np.spacing(512.0)  # 40 ULP of 512, far more of 1e-3
    assert not ab.compare_arrays(ref, got).ok
    assert ab.compare_arrays(ref, got, ulp_of_largest=64).ok
    check = ab.compare_arrays(ref, got, ulp_of_largest=16)
    assert not check.ok and "16 ULP of max|numpy|" in check.message
    small = ref / 1024  # the same absolute error on a smaller array fails
    got_small = small.copy()
    got_small[1] += 40 * np.spacing(512.0)
    assert not ab.compare_arrays(small, got_small, ulp_of_largest=64).ok


def test_compare_dirs(tmp_path):
    ref_dir, got_dir = tmp_path / "ref", tmp_path / "got"
    ref_dir.mkdir()
    got_dir.mkdir()
    ref, got = shifted([1.0, 2.0], 2)
    np.save(ref_dir / "a.npy", ref)
    np.save(got_dir / "a.npy", got)
    np.savez(ref_dir / "b.npz", i=np.arange(3), f=ref)
    np.savez(got_dir / "b.npz", i=np.arange(3), f=got)
    (ref_dir / "note.txt").write_text("same")
    (got_dir / "note.txt").write_text("same")
    check = ab.compare_dirs(ref_dir, got_dir)
    assert check.ok, check.problems
    assert check.files == ["a.npy", "b.npz", "note.txt"]
    assert check.max_ulp == 2

    np.savez(got_dir / "b.npz", i=np.arange(1, 4), f=got)
    np.save(got_dir / "extra.npy", ref)
    os.remove(got_dir / "a.npy")
    problems = "\n".join(ab.compare_dirs(ref_dir, got_dir).problems)
    assert "a.npy: saved by numpy, missing from grumpy" in problems
    assert "extra.npy: saved by grumpy, not by numpy" in problems
    assert "b.npz[i]" in problems


def test_object_arrays_are_not_loaded(tmp_path):
    for side in ("ref", "got"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    check = ab.compare_dirs(tmp_path / "ref", tmp_path / "got")
    assert not check.ok and "cannot load" in check.problems[0]


def test_plain_environment_turns_grumpy_off(monkeypatch):
    monkeypatch.setenv("GRUMPY", "1")
    monkeypatch.setenv("GRUMPY_STATS_JSON", "/tmp/x.json")
    monkeypatch.setenv("LD_PRELOAD", "/a/libother.so /r/build/libgrumpy_preload.so")
    variants = ab.make_variants("s.py", ["1"], [("peer", "p.py")])
    assert [v.label for v in variants] == ["numpy", "grumpy", "peer"]
    for v in variants:
        assert "GRUMPY" not in v.env and "GRUMPY_STATS_JSON" not in v.env
        assert v.env["LD_PRELOAD"] == "/a/libother.so"
    assert variants[1].argv[1:] == ["-m", "grumpy.run", "s.py", "1"]
    assert variants[0].argv[1:] == ["s.py", "1"]


# ------------------------------------------------------- spread and noise


def test_summary_gives_the_spread():
    times = [1.0, 2.0, 3.0, 4.0, 10.0]
    s = ab._summary(times, baseline_median=6.0)
    assert (s["median"], s["min"], s["max"], s["first"]) == (3.0, 1.0, 10.0, 1.0)
    assert (s["q1"], s["q3"], s["iqr"]) == (2.0, 4.0, 2.0)  # linear quartiles
    assert s["mad"] == 1.0  # |t - 3| = 2, 1, 0, 1, 7 -> median 1
    assert s["speedup"] == 2.0
    one = ab._summary([0.5], 0.5)
    assert one["iqr"] == 0.0 and one["mad"] == 0.0


def test_smallest_possible_p():
    assert ab.smallest_p(3, 3) == pytest.approx(0.1)
    assert ab.smallest_p(4, 4) == pytest.approx(2 / 70)
    assert ab.smallest_p(1, 1) == 1.0


def test_noise_test_separated_overlapping_and_too_few():
    pytest.importorskip("scipy")
    numpy_times = [1.00, 1.02, 0.99, 1.01, 1.03]
    faster = [0.50, 0.52, 0.49, 0.51, 0.53]
    t = ab.noise_test(numpy_times, faster)
    assert t["verdict"] == "beyond noise" and t["faster"] is True
    assert t["p"] == pytest.approx(2 / 252)  # exact: the samples are fully separated
    assert t["u"] == 0.0 and (t["n"], t["m"]) == (5, 5)
    slower = [2 * x for x in numpy_times]
    assert ab.noise_test(numpy_times, slower)["faster"] is False
    mixed = [1.005, 0.995, 1.015, 1.025, 0.985]  # interleaved with numpy's
    t = ab.noise_test(numpy_times, mixed)
    assert t["verdict"] == "within noise" and t["p"] >= 0.05
    t = ab.noise_test(numpy_times[:3], faster[:3])  # as separated as can be, yet p = 0.1
    assert t["verdict"] == "too few runs" and t["p"] == pytest.approx(0.1)
    assert "-n 4" in t["note"]


def test_noise_test_without_scipy(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)  # import scipy.stats raises ImportError
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    t = ab.noise_test([1.0, 1.1], [0.5, 0.6])
    assert t["verdict"] == "no test" and t["p"] is None
    assert "SciPy is not installed" in t["note"]
    lines = ab.format_noise({"grumpy": t, "peer": dict(t)})
    assert len(lines) == 1 and "SciPy is not installed" in lines[0]  # said once


def test_problems_are_kept_once_with_their_runs():
    problems = ab._Problems()
    for run in range(3):
        problems.add("grumpy", run, "stdout differs from numpy's")
    problems.add("grumpy", 1, "x.npy: 1 of 2 elements differ")
    problems.add(None, None, "numpy run failed")
    assert problems.lines() == [
        "grumpy runs 1, 2, 3 (3 times): stdout differs from numpy's",
        "grumpy run 2: x.npy: 1 of 2 elements differ",
        "numpy run failed",
    ]
    assert not ab._Problems()


def test_plot_without_matplotlib_is_one_clear_error(monkeypatch, tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    real_find_spec = ab.importlib.util.find_spec
    monkeypatch.setattr(
        ab.importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real_find_spec(name, *a)
    )
    with pytest.raises(SystemExit) as exc:
        ab.main(["--plot", str(tmp_path / "o.png"), str(script)])
    assert exc.value.code == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "o.png").exists()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="--plot needs matplotlib"):
        ab.write_plot({"variants": {}, "runs": 1, "script": "s.py", "args": []}, tmp_path / "o.png")


# ------------------------------------------------------------- end to end


def write_script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def harness(tmp_path, *args):
    env = dict(os.environ)
    env.pop("GRUMPY", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run(
        [sys.executable, "-m", "grumpy.ab", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )


SAVES_SHIFTED = """\
    import math, os, sys
    import numpy as np

    ULPS = {ulps} if "grumpy" in sys.modules else 0

    def moved(x, k):
        for _ in range(k):
            x = math.nextafter(x, math.inf)
        return x

    print("rows", sys.argv[1:])
    values = [moved(v, ULPS) for v in (0.5, 1.0, 3.0e-8, 1234.5)]
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "values.npy"), np.array(values))
        np.save(os.path.join(out, "counts.npy"), np.array([1, 2, 3], dtype=np.int64))
"""


def test_equal_outputs_pass(tmp_path):
    write_script(tmp_path, "same.py", SAVES_SHIFTED.format(ulps=0))
    proc = harness(tmp_path, "-n", "2", "-q", "same.py", "7", "--flag")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "result: OK" in proc.stdout
    assert "counts.npy" in proc.stdout and "values.npy" in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if line.startswith("variant"))
    assert header.split() == ["variant", "median", "min", "max", "IQR", "MAD", "first", "speed-up"]
    assert "grumpy vs numpy: Mann-Whitney U" in proc.stdout
    assert "too few runs to tell" in proc.stdout  # 2 runs can never reach p < 0.05
    assert "grumpy's own runs: agree (1 later runs" in proc.stdout


def test_float_arrays_within_4_ulp_pass(tmp_path):
    write_script(tmp_path, "four.py", SAVES_SHIFTED.format(ulps=4))
    proc = harness(tmp_path, "-n", "1", "-q", "four.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "largest float difference in grumpy runs: 4 ULP" in proc.stdout


def test_float_arrays_100_ulp_apart_fail(tmp_path):
    write_script(tmp_path, "hundred.py", SAVES_SHIFTED.format(ulps=100))
    proc = harness(tmp_path, "-n", "1", "-q", "hundred.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "result: MISMATCH" in proc.stdout
    assert "values.npy" in proc.stdout and "100 ULP" in proc.stdout


def test_different_stdout_fails_with_diff(tmp_path):
    write_script(
        tmp_path,
        "talks.py",
        """\
        import sys
        print("common line")
        print("under grumpy" if "grumpy" in sys.modules else "under numpy")
        """,
    )
    proc = harness(tmp_path, "-n", "3", "-q", "talks.py")
    assert proc.returncode == 1
    assert "-under numpy" in proc.stdout and "+under grumpy" in proc.stdout
    # the same mismatch in every run is printed once, with its runs and count
    assert proc.stdout.count("stdout differs") == 1
    assert "grumpy runs 1, 2, 3 (3 times): stdout differs from numpy's" in proc.stdout
    assert proc.stdout.count("+under grumpy") == 1
    # grumpy is wrong, but the same every time
    assert "grumpy's own runs: agree" in proc.stdout


FLIPS_UNDER_GRUMPY = """\
    import math, os, pathlib, sys
    import numpy as np

    # under grumpy, every second run saves a value 1 ULP up: within 4 ULP of
    # NumPy each time, yet not the same from one grumpy run to the next
    k = 0
    if "grumpy" in sys.modules:
        counter = pathlib.Path(__file__).with_name("count.txt")
        k = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(k + 1))
    v = math.nextafter(1.0, math.inf) if k % 2 else 1.0
    print("done")
    out = os.environ.get("GRUMPY_AB_OUTDIR")
    if out:
        np.save(os.path.join(out, "v.npy"), np.array([v, 2.0]))
"""


def test_grumpy_runs_that_disagree_with_each_other_fail(tmp_path):
    write_script(tmp_path, "flips.py", FLIPS_UNDER_GRUMPY)
    proc = harness(tmp_path, "-n", "4", "-q", "flips.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "largest float difference in grumpy runs: 1 ULP" in proc.stdout  # each within NumPy's tolerance
    assert "grumpy's own runs: DISAGREE" in proc.stdout
    # runs 2 and 4 differ from run 1 in the same way: one line
    assert "grumpy runs 2, 4 (2 times): not the same as grumpy run 1 (grumpy's own runs disagree): v.npy" in (
        proc.stdout
    )
    result = json.loads(harness(tmp_path, "-n", "2", "--json", "flips.py").stdout)
    assert result["grumpy_runs_agree"] is False and result["agree"] is False


def test_different_exit_status_fails(tmp_path):
    write_script(tmp_path, "dies.py", "import sys\nsys.exit(3 if 'grumpy' in sys.modules else 0)\n")
    proc = harness(tmp_path, "-n", "1", "-q", "dies.py")
    assert proc.returncode == 1
    assert "exit 3" in proc.stdout


def test_missing_array_fails(tmp_path):
    write_script(
        tmp_path,
        "forgets.py",
        """\
        import os, sys
        import numpy as np
        if "grumpy" not in sys.modules:
            np.save(os.path.join(os.environ["GRUMPY_AB_OUTDIR"], "r.npy"), np.array([1.0]))
        """,
    )
    proc = harness(tmp_path, "-n", "1", "-q", "forgets.py")
    assert proc.returncode == 1
    assert "r.npy: saved by numpy, missing from grumpy" in proc.stdout


def test_json_result_with_peer(tmp_path):
    write_script(tmp_path, "main.py", SAVES_SHIFTED.format(ulps=1))
    write_script(tmp_path, "peer.py", SAVES_SHIFTED.format(ulps=0).replace('"rows"', '"peer says"'))
    plot = tmp_path / "times.png"
    proc = harness(
        tmp_path, "-n", "2", "--json", "--plot", str(plot), "--peer", "mypeer:peer.py", "main.py", "5"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["agree"] is True
    assert result["args"] == ["5"]
    assert list(result["variants"]) == ["numpy", "grumpy", "mypeer"]
    for label, summary in result["variants"].items():
        assert summary["runs"] == 2 and len(summary["times"]) == 2
        assert summary["min"] <= summary["median"] <= summary["max"]
        assert summary["q1"] <= summary["median"] <= summary["q3"]
        assert summary["iqr"] == pytest.approx(summary["q3"] - summary["q1"])
        assert summary["mad"] == pytest.approx(abs(summary["times"][0] - summary["times"][1]) / 2)
        assert summary["speedup"] == pytest.approx(result["variants"]["numpy"]["median"] / summary["median"])
    assert result["arrays"]["max_ulp"] == 1
    assert result["peer_arrays"]["mypeer"].startswith("agree")  # peer stdout not compared
    assert result["grumpy_runs_agree"] is True
    # the noise test: every variant against numpy (scipy may be absent: then "no test")
    assert list(result["noise"]) == ["grumpy", "mypeer"]
    for test in result["noise"].values():
        assert test["verdict"] in ("too few runs", "no test")
        assert test["smallest_p"] == pytest.approx(1 / 3)  # 2 / C(4, 2)
    # the plot: a PNG with both panels' worth of pixels
    assert result["plot"] == str(plot)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = pytest.importorskip("matplotlib.image").imread(plot)
    assert image.shape[0] >= 300 and image.shape[1] >= 800


def test_nondeterministic_program_is_reported(tmp_path):
    write_script(tmp_path, "clock.py", "import time\nprint(time.perf_counter_ns())\n")
    proc = harness(tmp_path, "-n", "3", "-q", "clock.py")
    assert proc.returncode == 1
    assert "not deterministic" in proc.stdout
    assert "numpy runs 2, 3 (2 times): printed something else than numpy run 1" in proc.stdout
    # the program is the cause: grumpy's runs are not held against each other
    assert "grumpy's own runs" not in proc.stdout


def test_grumpy_stats_are_reported(tmp_path):
    write_script(
        tmp_path,
        "work.py",
        """\
        import numpy as np
        x = np.arange(1_000_000, dtype=np.float64)
        print(float((x * 2.0 + 1.0).sum()))
        """,
    )
    proc = harness(tmp_path, "-n", "1", "--json", "work.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stats = json.loads(proc.stdout)["grumpy_stats"]
    assert stats is not None, "grumpy wrote no GRUMPY_STATS_JSON in the grumpy run"
    for key in ab.STATS_KEYS:
        assert key in stats


def test_usage_errors(tmp_path):
    assert harness(tmp_path).returncode == 2
    assert harness(tmp_path, "missing.py").returncode == 2
    assert harness(tmp_path, "--peer", "nolabel", "x.py").returncode == 2
