"""Tests of the GRUMPY_STATS=1 exit summary (grumpy.format_stats).

format_stats is called on made-up dicts (every number it shows is checked
against the dict, with its unit), then one child process runs a tiny
program under ``python -m grumpy.run`` with GRUMPY_STATS=1 and the summary
is read back from its stderr.  GRUMPY_STATS_JSON must still be the raw dict.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import grumpy
import gpcheck

ROOT = pathlib.Path(__file__).resolve().parents[1]

MADE_UP = {
    "backend": "cpu",
    "threads": 8,
    "ops_captured": 1234,
    "ops_eager_small": 56,
    "nodes_recorded": 1200,
    "pending": 0,
    "fallbacks": {f"fn{i:02d}": 100 - i for i in range(12)},  # 12 names: top 10 shown
    "kernels_compiled": 17,
    "cache_hits": 40,
    "disk_cache_hits": 9,
    "jit_failures": 0,
    "kernels_launched": 66,
    "serial_launches": 5,
    "compile_seconds": 1.25,
    "run_seconds": 0.5,
    "bytes_moved": 6_000_000_000,
    "nodes_fused": 321,
    "extra_outputs": 12,
    "kernel_splits": 3,
    "plan_failures": 2,
    "guard_faults": 77,
    "live_buffers": 4,
    "live_buffer_bytes": 3 * (1 << 20),
    "protects": 99,
    "gemm_calls": 6,
    "gemv_calls": 7,
    "dot_calls": 8,
    "blas_operand_copies": 1,
    "checks": 0,
    "check_mismatches": 0,
    "check_skipped": 0,
    "gpu_kernels_launched": 0,
    "bytes_h2d": 0,
    "bytes_d2h": 0,
    "host_to_device": 0,
    "device_to_host": 0,
    "fail_points": 13,
    "fpe_replays": 0,
    "ops_eager_site": 30,
    "fallback_reasons": {"a NumPy function grumpy does not capture": 7, "an operand's dtype ...": 2},
    "fallback_sites": {"prog.py:3": {"a NumPy function grumpy does not capture": 7}, "prog.py:9": {"x": 2}},
    "adaptive_sites": {"prog.py:12 ADD": {"lone": 2, "fused": 0, "eager": 30, "reason": "r"}},
}


def test_nested_counters_are_summarised_not_dumped():
    """The dicts of reasons and sites are counted in the capture topic; the
    "other" line never carries a dict."""
    text = grumpy.format_stats(MADE_UP)
    r = rows(text)
    assert r["computed eagerly (call site)"] == "30"
    assert r["7 calls"] == "a NumPy function grumpy does not capture"
    assert r["lines handing calls to NumPy"] == "2"
    assert r["call sites NumPy's at once"].startswith("1 ")
    assert "{" not in text, text


def rows(text):
    """{label: value text} of the summary's '    label   value' lines."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"^ {4,}(\S.*?)\s{2,}(\S.*)$", line)
        if m:
            found[m.group(1).strip()] = m.group(2)
    return found


def sections(text):
    return [line.strip() for line in text.splitlines() if re.match(r"^  \S", line)]


def test_groups_units_and_numbers_match_the_dict():
    text = grumpy.format_stats(MADE_UP)
    assert text.splitlines()[0] == "grumpy stats:"
    assert sections(text) == ["run", "capture", "kernels", "fusion", "memory/guard", "BLAS", "other (non-zero)"]
    r = rows(text)
    assert (r["back end"], r["kernel threads"]) == ("cpu", "8")
    assert r["operations captured"] == "1234"
    assert r["computed eagerly (small)"] == "56"
    assert r["compiled"] == "17"
    assert r["from in-memory cache"] == "40"
    assert r["from disk cache"] == "9"
    assert r["launched"] == "66"
    assert r["compile time"] == "1.25 s"
    assert r["run time"] == "0.5 s"
    assert r["bytes moved"] == "6.000 GB (6000000000 bytes)"
    # 6e9 bytes in 0.5 s: 12 GB/s
    assert r["effective bandwidth"].startswith("12.00 GB/s")
    assert r["nodes fused"] == "321"
    assert r["extra outputs"] == "12"
    assert r["kernel splits"] == "3"
    assert r["plan failures (NumPy ran)"] == "2"
    assert r["guard faults"] == "77"
    assert r["live buffers"] == "4"
    assert r["live buffer memory"] == f"3.00 MiB ({3 * (1 << 20)} bytes)"
    assert r["mprotect calls"] == "99"
    assert (r["gemm calls"], r["gemv calls"], r["dot calls"], r["operands copied"]) == ("6", "7", "8", "1")
    # the remaining non-zero counter is not lost; zero ones are not listed
    assert "fail_points=13" in text and "fpe_replays" not in text


def test_fallbacks_top_ten_by_count():
    text = grumpy.format_stats(MADE_UP)
    r = rows(text)
    total = sum(MADE_UP["fallbacks"].values())
    assert r["handed to NumPy"] == f"{total} calls to 12 functions"
    listed = re.findall(r"^ {6}(fn\d\d)\s+(\d+) calls?$", text, re.M)
    assert listed == [(f"fn{i:02d}", str(100 - i)) for i in range(10)]  # largest first
    assert r["(others)"] == f"{(100 - 10) + (100 - 11)} calls to 2 functions"  # fn10, fn11


def test_checks_and_gpu_topics_appear_when_relevant():
    base = dict(MADE_UP)
    assert "checks (GRUMPY_CHECK)" not in sections(grumpy.format_stats(base))
    assert "checks (GRUMPY_CHECK)" in sections(grumpy.format_stats(base, check=True))
    base.update(checks=30, check_mismatches=1, check_skipped=2)
    text = grumpy.format_stats(base)  # non-zero counters show the topic by themselves
    assert "checks (GRUMPY_CHECK)" in sections(text)
    r = rows(text)
    assert (r["kernels checked"], r["mismatches"], r["skipped"]) == ("30", "1", "2")
    assert "GPU" not in sections(text)

    base.update(backend="gpu", gpu_kernels_launched=5, bytes_h2d=2_500_000_000, bytes_d2h=1000)
    text = grumpy.format_stats(base)
    assert "GPU" in sections(text)
    r = rows(text)
    assert r["kernels launched"] == "5"
    assert r["host -> device"] == "2.500 GB (2500000000 bytes)"
    assert r["device -> host"] == "0.000 GB (1000 bytes)"


def test_partial_and_odd_dicts():
    assert grumpy.format_stats({}) == "grumpy stats:"
    text = grumpy.format_stats({"kernels_launched": 3, "bytes_moved": 10, "run_seconds": 0.0})
    assert sections(text) == ["kernels"]
    assert rows(text)["effective bandwidth"].startswith("-")
    with pytest.raises(TypeError):
        grumpy.format_stats([("kernels_launched", 1)])


def test_exit_summary_of_a_real_run(tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text(
        "import numpy as np\n"
        "for _ in range(3):\n"
        "    a = np.ones(1_000_000) * 2 + 1\n"  # 8 MB: captured and fused (NumPy's first launch, if not cached)
        "print(float(a.sum()))\n"
    )
    stats_json = tmp_path / "stats.json"
    env = gpcheck.subprocess_env()
    env.update(GRUMPY_STATS="1", GRUMPY_STATS_JSON=str(stats_json))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run(
        [sys.executable, "-m", "grumpy.run", str(script)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3000000.0"
    err = proc.stderr
    assert err.startswith("grumpy stats:\n")
    for title in ("run", "capture", "kernels", "fusion", "memory/guard", "BLAS"):
        assert f"\n  {title}\n" in err
    r = rows(err)
    assert r["back end"] == "cpu"
    launched = int(r["launched"])
    assert launched > 0
    assert int(r["operations captured"]) > 0
    assert r["run time"].endswith(" s") and r["compile time"].endswith(" s")
    assert re.fullmatch(r"[0-9.]+ GB \(\d+ bytes\)", r["bytes moved"])
    assert "GB/s" in r["effective bandwidth"]
    assert "MiB" in r["live buffer memory"]
    # GRUMPY_STATS_JSON is still the raw dict, and the summary shows its numbers
    raw = json.loads(stats_json.read_text())
    assert raw["kernels_launched"] == launched
    assert raw["ops_captured"] == int(r["operations captured"])
    assert r["bytes moved"].endswith(f"({raw['bytes_moved']} bytes)")
    assert isinstance(raw["fallbacks"], dict)
