"""NumPy's own test suites with and without grumpy: what breaks under capture.

Runs each NumPy test module twice in subprocesses of this interpreter, once
plain and once under capture, each writing a junit XML file::

    python -m pytest -q -p no:cacheprovider --pyargs MODULE --junitxml=...
    python -m grumpy.run -m pytest -q -p no:cacheprovider --pyargs MODULE ...

then compares the per-test outcomes and writes ``OUT/report.md`` and
``OUT/report.json``: passed / failed / errored / skipped / xfailed counts
of both runs, the ratio passed-with-grumpy / passed-without, and every test
that passes without grumpy but not with it, grouped by the first words of its
failure message.  The counts and the ratio go to stdout; the exit status is
1 when the ratio is below ``--min-ratio``.

Usage (from the repository, with the venv active; ``make compat``)::

    python tools/compat.py                                  # the full set
    python tools/compat.py --tests numpy._core.tests.test_shape_base
    python tools/compat.py --out build/compat --min-ratio 0.995 -- -k "not huge"
    NPY_AVAILABLE_MEM=1GB python tools/compat.py   # ~1 min instead of ~3:
        # skips NumPy's two tests that need > 1 GB (a 2**31-tuple concatenate
        # and a huge reduction), which spend most of the time in the kernel

Set GRUMPY_* variables in the environment to test other settings, e.g.
GRUMPY_MIN_BYTES=65536 (grumpy's floor): with the default 1 MiB threshold
almost every array in NumPy's tests is too small for grumpy to capture.

Each module runs in its own pytest process, so a crash or a hang under
grumpy loses that module's results only: a run killed by a signal, or by
``--timeout`` (SIGABRT first, so pytest's faulthandler prints where it
was), is reported with the last lines of its output, kept in
``OUT/<mode>/<module>.log``.  The grumpy run imports grumpy from this
repository (it is put first on PYTHONPATH).  Arguments after ``--`` go to
both pytest runs.
"""

import argparse
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TESTS = [
    "numpy._core.tests.test_umath",
    "numpy._core.tests.test_ufunc",
    "numpy._core.tests.test_numeric",
    "numpy._core.tests.test_indexing",
    "numpy._core.tests.test_shape_base",
]
OUTCOMES = ("passed", "failed", "errored", "skipped", "xfailed")
MODES = {"plain": [], "grumpy": ["-m", "grumpy.run"]}
REASON_CHARS = 300  # a failure's reason, as reported
GROUP_CHARS = 60  # the prefix of a reason that names its group
TAIL_LINES = 40  # output kept for a crashed or hung run
STATS = ("ops_captured", "ops_eager_small", "kernels_launched", "guard_faults")  # shown


def run_module(mode, module, out, timeout, extra):
    """Run one test module under ``mode``; return a dict describing the run.

    The junit XML goes to ``OUT/<mode>/<module>.xml`` and stdout + stderr to
    ``<module>.log`` beside it.  ``status`` is "ok" (pytest ended: tests may
    still have failed), "crashed (SIGNAME)", "timeout" or "no-xml" (pytest
    ended without results, e.g. on a usage error).
    """
    subdir = os.path.join(out, mode)
    os.makedirs(subdir, exist_ok=True)
    xml = os.path.join(subdir, module + ".xml")
    log = os.path.join(subdir, module + ".log")
    stats = os.path.join(subdir, module + ".stats.json")
    for stale in (xml, stats):
        if os.path.exists(stale):
            os.remove(stale)
    # rootdir = the directory holding numpy, so test ids are full dotted names
    rootdir = os.path.dirname(os.path.dirname(importlib.util.find_spec("numpy").origin))
    cmd = [sys.executable, *MODES[mode], "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--rootdir={rootdir}", "-o", f"faulthandler_timeout={min(timeout, 600)}",
           f"--junitxml={xml}", *extra, "--pyargs", module]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, env.get("PYTHONPATH")) if p)
    if mode == "grumpy":  # grumpy writes its counters there at exit
        env["GRUMPY_STATS_JSON"] = stats
    status = "ok"
    start = time.monotonic()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                                cwd=subdir, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = "timeout"
            proc.send_signal(signal.SIGABRT)  # faulthandler dumps the stacks
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    seconds = time.monotonic() - start
    if status == "ok" and proc.returncode < 0:
        status = f"crashed ({signal.Signals(-proc.returncode).name})"
    elif status == "ok" and not os.path.exists(xml):
        status = "no-xml"  # pytest stopped early: bad arguments, say
    with open(log, errors="replace") as f:
        tail = crash_excerpt(f.read()) if status != "ok" else []
    counters = {}
    if mode == "grumpy" and os.path.exists(stats):
        with open(stats) as f:
            s = json.load(f)
        counters = {k: s.get(k) for k in STATS}
        counters["fallbacks"] = sum(s.get("fallbacks", {}).values())
    return {"mode": mode, "module": module, "command": " ".join(cmd),
            "returncode": proc.returncode, "status": status,
            "seconds": round(seconds, 1), "xml": xml, "log": log,
            "tail": tail, "stats": counters}


def crash_excerpt(output):
    """Return the end of a dead run's output: from faulthandler's last report
    ("Fatal Python error", or a timeout's "Timeout (...)!") on, without the
    frames of pytest, pluggy and runpy, at most TAIL_LINES lines."""
    lines = output.splitlines()
    marks = [i for i, line in enumerate(lines)
             if "Fatal Python error" in line or line.startswith("Timeout (")]
    if marks:
        lines = [line for line in lines[marks[-1]:]
                 if not re.search(r"/_pytest/|/pluggy/|<frozen runpy>|grumpy/run\.py", line)]
    return lines[-TAIL_LINES:] if not marks else lines[:TAIL_LINES]


def parse_junit(path, module):
    """Return {test id: (outcome, reason)} from the junit XML file of one
    test module's run.

    The test id is ``classname::name`` (``numpy._core.tests.test_x.TestY::
    test_z[param]``); outcome is one of OUTCOMES; reason is the failure,
    error or skip message with its whitespace collapsed ("" for a pass).
    """
    results = {}
    if not os.path.exists(path):
        return results
    for case in ET.parse(path).getroot().iter("testcase"):
        cls = case.get("classname", "")
        if not cls.startswith(module):  # a test file outside pytest's rootdir
            cls = ".".join(p for p in (module, cls.strip(".")) if p)
        test_id = f"{cls}::{case.get('name', '')}"
        outcome, reason = "passed", ""
        for tag, name in (("failure", "failed"), ("error", "errored"), ("skipped", "skipped")):
            el = case.find(tag)
            if el is not None:
                outcome = name
                if tag == "skipped" and el.get("type") == "pytest.xfail":
                    outcome = "xfailed"
                text = (el.text or "").strip()
                reason = el.get("message") or (text.splitlines()[-1] if text else "")
                break
        # a test that failed and also errored in teardown counts as failed
        results[test_id] = (outcome, " ".join(reason.split())[:REASON_CHARS])
    return results


def count(results):
    """Return {outcome: number of tests} for a parse_junit() result."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for outcome, _ in results.values():
        counts[outcome] += 1
    return counts


def group_key(reason):
    """Return the prefix of ``reason`` that groups it with similar ones:
    digits and hex addresses blanked, the first GROUP_CHARS characters."""
    key = re.sub(r"0x[0-9a-fA-F]+", "0x#", reason)
    key = re.sub(r"\d+", "#", key)
    return key[:GROUP_CHARS]


def regressions(plain, grumpy, runs):
    """Return the tests that pass without grumpy but not with it, as a list
    of {"id", "outcome", "reason", "group"}; a test missing from the grumpy
    results is blamed on its module's run (crash or timeout)."""
    broken = {r["module"]: r for r in runs if r["mode"] == "grumpy" and r["status"] != "ok"}
    found = []
    for test_id, (outcome, _) in sorted(plain.items()):
        if outcome != "passed":
            continue
        g_outcome, reason = grumpy.get(test_id, ("missing", ""))
        if g_outcome == "passed":
            continue
        if g_outcome == "missing":
            run = next((r for m, r in broken.items() if test_id.startswith(m + ".")
                        or test_id.startswith(m + "::")), None)
            reason = (f"module run {run['status']} (exit {run['returncode']})" if run
                      else "not run under grumpy")
        found.append({"id": test_id, "outcome": g_outcome, "reason": reason,
                      "group": f"{g_outcome}: {group_key(reason)}"})
    return found


def group(found):
    """Group regressions by their "group" key; largest group first."""
    groups = {}
    for r in found:
        groups.setdefault(r["group"], []).append(r)
    return sorted(({"group": k, "count": len(v), "example": v[0]["id"],
                    "reason": v[0]["reason"], "tests": [r["id"] for r in v]}
                   for k, v in groups.items()), key=lambda g: (-g["count"], g["group"]))


def write_reports(out, data):
    """Write ``report.json`` (all of ``data``) and ``report.md`` into ``out``."""
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(data, f, indent=1)
    lines = ["# NumPy test suites with and without grumpy", "",
             "Modules: " + ", ".join(f"`{m}`" for m in data["modules"]), "",
             "| run | " + " | ".join(OUTCOMES) + " | seconds |",
             "|---|" + "---:|" * (len(OUTCOMES) + 1)]
    for mode in MODES:
        secs = sum(r["seconds"] for r in data["runs"] if r["mode"] == mode)
        lines.append(f"| {mode} | " + " | ".join(str(data[mode][o]) for o in OUTCOMES)
                     + f" | {secs:.0f} |")
    lines += ["", f"Ratio passed with grumpy / without: **{data['ratio']:.4f}** "
              f"(minimum {data['min_ratio']})", ""]
    lines += ["How much grumpy did (grumpy.stats() at exit of each run; fallbacks summed):", "",
              "| module | " + " | ".join(STATS) + " | fallbacks |",
              "|---|" + "---:|" * (len(STATS) + 1)]
    for r in data["runs"]:
        if r["mode"] == "grumpy":
            lines.append(f"| {r['module']} | " + " | ".join(
                str(r["stats"].get(k, "-")) for k in (*STATS, "fallbacks")) + " |")
    lines.append("")
    bad_runs = [r for r in data["runs"] if r["status"] != "ok"]
    if bad_runs:
        lines += ["## Runs that crashed, hung or gave no results", ""]
        for r in bad_runs:
            lines += [f"### {r['mode']} {r['module']}: {r['status']} "
                      f"(exit {r['returncode']}, {r['seconds']} s)", "",
                      f"`{r['command']}`", "", "```", *r["tail"], "```", ""]
    lines += [f"## Passing without grumpy, not with it: {len(data['regressions'])} tests, "
              f"{len(data['groups'])} groups", ""]
    for g in data["groups"]:
        lines += [f"### {g['count']} x {g['group']}", "", f"Example: `{g['example']}`", "",
                  f"> {g['reason']}", ""]
        lines += [f"- `{t}`" for t in g["tests"]] + [""]
    if data["fixed"]:
        lines += [f"## Passing with grumpy, not without it: {len(data['fixed'])}", ""]
        lines += [f"- `{t}`" for t in data["fixed"]] + [""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))


def expand_tests(names):
    """Test module names for names: a module as given, a test directory
    (NumPy ships ``numpy._core.tests`` without ``__init__.py``, so pytest
    cannot import it as a package) as each of its ``test_*.py`` modules, so
    that every module runs, and crashes, in its own process."""
    out = []
    for name in names:
        parent, _, last = name.rpartition(".")
        spec = importlib.util.find_spec(parent) if parent else None
        base = os.path.dirname(spec.origin) if spec and spec.origin else None
        path = os.path.join(base, last) if base else None
        if path and os.path.isdir(path) and not os.path.exists(os.path.join(path, "__init__.py")):
            out += [f"{name}.{f[:-3]}" for f in sorted(os.listdir(path))
                    if f.startswith("test_") and f.endswith(".py")]
        else:
            out.append(name)
    return out


def main(argv=None):
    """Parse the command line, run both modes, write the reports; return the
    exit status (1 if the ratio is below --min-ratio)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", nargs="+", default=DEFAULT_TESTS, metavar="MODULE",
                    help="test modules to run (default: the five core suites)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "compat"),
                    help="report directory (default: build/compat)")
    ap.add_argument("--min-ratio", type=float, default=0.995,
                    help="exit 1 below this passed ratio (default 0.995)")
    ap.add_argument("--timeout", type=float, default=1800,
                    help="seconds per module run before it is stopped (default 1800)")
    ap.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments")
    args = ap.parse_args(argv)
    args.tests = expand_tests(args.tests)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)

    runs, results = [], {mode: {} for mode in MODES}
    start = time.monotonic()
    for mode in MODES:
        for module in args.tests:
            run = run_module(mode, module, out, args.timeout, args.pytest_args)
            runs.append(run)
            results[mode].update(parse_junit(run["xml"], module))
            print(f"{mode:6} {module}: {run['status']}, exit {run['returncode']}, "
                  f"{run['seconds']} s", flush=True)

    plain, grumpy = results["plain"], results["grumpy"]
    counts = {mode: count(results[mode]) for mode in MODES}
    ratio = counts["grumpy"]["passed"] / max(counts["plain"]["passed"], 1)
    found = regressions(plain, grumpy, runs)
    data = {"modules": args.tests, "pytest_args": args.pytest_args, **counts,
            "ratio": ratio, "min_ratio": args.min_ratio,
            "seconds": round(time.monotonic() - start, 1), "runs": runs,
            "regressions": found, "groups": group(found),
            "fixed": sorted(t for t, (o, _) in grumpy.items()
                            if o == "passed" and plain.get(t, ("",))[0] != "passed")}
    write_reports(out, data)

    for mode in MODES:
        print(f"{mode:6} " + ", ".join(f"{counts[mode][o]} {o}" for o in OUTCOMES))
    print(f"ratio  {ratio:.4f} (passed with grumpy / without; minimum {args.min_ratio})")
    for r in runs:
        if r["status"] != "ok":
            print(f"{r['mode']} {r['module']}: {r['status']}, see {r['log']}")
    print(f"report {os.path.join(out, 'report.md')}")
    return 0 if ratio >= args.min_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
