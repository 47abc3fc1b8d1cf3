"""A/B harness: run a NumPy program with and without grumpy, check, time.

Usage::

    python -m grumpy.ab [-n N] [--peer LABEL:PATH]... [--max-ulp U] [--atol A]
                    [--ulp-of-largest U]
                        [--timeout S] [--json] [--plot OUT.png] [--keep] [-q]
                        [--] script.py [args...]

What it does
    1. Runs ``python script.py args`` (variant ``numpy``) and
       ``python -m grumpy.run script.py args`` (variant ``grumpy``), plus each
       peer ``python PATH args`` (e.g. the same program written for numexpr or
       Numba), each in its own process, interleaved: numpy, grumpy, peers,
       numpy, grumpy, peers, ... ``N`` times (default 5).
    2. Times each process from outside: wall-clock seconds from just before
       ``subprocess.run`` to just after it returns (``time.perf_counter``), so
       start-up, imports, JIT compilation and output all count.  The report
       gives per variant the median, min, max, the interquartile range (IQR,
       ``q3 - q1``, quartiles by NumPy's linear interpolation) and the median
       absolute deviation (MAD, ``median(|t - median(t)|)``, unscaled) -- the
       spread -- the first run (cold caches) and the speed-up
       ``median(numpy) / median(variant)``.  Nothing is rounded in the JSON
       result; the text report prints seconds to 4 decimals and ratios to 2.
    2b. Tests whether each variant's times differ from numpy's beyond noise:
       the Mann-Whitney U test, two-sided, of ``scipy.stats.mannwhitneyu``
       (exact distribution for small samples without ties), at p < 0.05.
       With N runs per variant the smallest p-value the test can give is
       ``2 / C(2N, N)``: 0.1 for N = 3, so fewer than 4 runs are reported as
       "too few runs" whatever the p-value.  Without SciPy the report says so
       once and gives the spread only.
    3. Checks that grumpy changed nothing: in every grumpy run the exit status
       and stdout must equal those of the first numpy run, and so must the
       saved arrays (below).  Later numpy runs are compared with the first
       too: a program whose own output varies from run to run is reported as
       non-deterministic (the comparison then proves nothing).  stderr is
       never compared.  A peer's arrays are compared with NumPy's for
       information only; its stdout is not compared.
    3b. Checks that grumpy's runs agree with each other: every later grumpy
       run's stdout must equal the first grumpy run's byte for byte, and its
       arrays must be the same to the last bit (0 ULP; NaN at the same
       places; ``+0.0 == -0.0``).  A grumpy whose results stay within the
       tolerance of NumPy's but change from run to run is not deterministic,
       and that is reported as a mismatch -- unless the numpy runs
       themselves disagree (then the program is the cause, and this check
       is left out).
    3c. Each mismatch is reported once: identical messages from several runs
       are one line naming the runs and the count
       (``grumpy runs 1, 2, 3 (3 times): stdout differs from numpy's``).
    4. Reads grumpy's counters from the last grumpy run (``GRUMPY_STATS_JSON``):
       kernels_compiled, kernels_launched, cache_hits, fallbacks,
       compile_seconds.
    5. ``--plot OUT.png`` draws the times with matplotlib (Agg back end, no
       display needed): per variant a box plot with each run as a point,
       and the time of each run against its number; the title names the
       program.  Without matplotlib, ``--plot`` is a usage error (exit 2)
       with one line saying so, before anything is run.

The array convention (for scripts that want their results compared)
    The harness sets the environment variable ``GRUMPY_AB_OUTDIR`` to a fresh,
    empty directory for every run.  A script saves its result arrays there
    with ``np.save`` / ``np.savez`` when the variable is set::

        out = os.environ.get("GRUMPY_AB_OUTDIR")
        if out:
            np.save(os.path.join(out, "price.npy"), price)

    Outside the harness the variable is unset and the script saves nothing.
    Comparison of a run's directory with the first numpy run's:

    - the same set of files (subdirectories included);
    - ``.npy`` and every member of ``.npz``: the same shape and dtype, then
      bool, integer, datetime and other non-float arrays bit-identical; float
      (and each part of complex) arrays element by element within ``U`` units
      in the last place (default 4; ``+0.0 == -0.0``), NaN at the same
      positions, infinities equal;
    - any other file: byte-identical.

    Files are loaded with ``allow_pickle=False``: object arrays cannot be
    compared and count as a difference.

    ``--atol A`` also accepts a float element within ``A`` of NumPy's in
    absolute value.  It is off by default; use it only for outputs that are
    differences of much larger terms (an option price near zero computed as
    ``S*N(d1) - X*exp(-rT)*N(d2)``), where a 1-ULP difference in ``exp``
    legitimately becomes thousands of ULP of the small result.  A failing
    comparison also reports the largest difference in ULP of the array's
    largest magnitude, to tell such cancellation from a wrong kernel.
    ``--ulp-of-largest U`` accepts that directly, per array: an element
    within ``U`` ULP of the largest finite magnitude of NumPy's array (for
    sums in another order, whose rounding bound scales with the terms).

Environment of the runs
    All variants get the caller's environment less ``GRUMPY``,
    ``GRUMPY_STATS_JSON`` and the preload shim in ``LD_PRELOAD``, so the
    numpy variant is plain NumPy.  The grumpy variant also gets
    ``GRUMPY_STATS_JSON`` and the directory holding the ``grumpy`` package
    prepended to ``PYTHONPATH``.  All use the interpreter running the harness.

Exit status
    0 when the grumpy runs agree with NumPy and no run failed; 1 when they
    differ, when the first numpy run fails, when any run (numpy, grumpy or
    peer) ends with another exit status than the first numpy run (a timeout
    counts), when the numpy runs disagree among themselves, or when the
    grumpy runs disagree among themselves; 2 for bad usage.  A peer's
    arrays never change the exit status, nor does the noise test.

Errors
    A missing script or peer is a usage error (exit 2), and so is ``--plot``
    without matplotlib.  A run that times out (``--timeout`` seconds) counts
    as a failed run.
"""

import argparse
import dataclasses
import difflib
import importlib.util
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

DEFAULT_RUNS = 5
DEFAULT_MAX_ULP = 4
NOISE_ALPHA = 0.05  # significance level of the noise test (two-sided)
STATS_KEYS = ("kernels_compiled", "kernels_launched", "cache_hits", "fallbacks", "compile_seconds")

_CHUNK = 1 << 20  # elements compared at a time, to bound the harness's memory
_UINT_OF_SIZE = {2: np.uint16, 4: np.uint32, 8: np.uint64}

# ---------------------------------------------------------------- comparison


def ulp_distance(a, b):
    """Distance between IEEE floats ``a`` and ``b`` in units in the last place.

    ``a`` and ``b``: 1-d arrays of one real float dtype (float16, float32 or
    float64) and one length.  Returns an unsigned integer array: the number of
    representable values between them (0 when equal, ``+0.0`` and ``-0.0``
    included).  NaN gives meaningless values: mask it first.
    """
    utype = _UINT_OF_SIZE[a.dtype.itemsize]
    sign = utype(1) << utype(8 * a.dtype.itemsize - 1)
    ia = np.ascontiguousarray(a).view(utype)
    ib = np.ascontiguousarray(b).view(utype)
    mag_a = ia & ~sign
    mag_b = ib & ~sign
    same_sign = (ia & sign) == (ib & sign)
    # Same sign: |mag_a - mag_b| (unsigned, so take the larger minus the
    # smaller); opposite signs: the path goes through zero, mag_a + mag_b,
    # which cannot overflow since each magnitude is below 2**(bits-1).
    return np.where(
        same_sign,
        np.where(mag_a >= mag_b, mag_a - mag_b, mag_b - mag_a),
        mag_a + mag_b,
    )


def _float_parts(arr):
    """Real float views of ``arr``: itself, or (real, imag) for complex."""
    if arr.dtype.kind == "c":
        return [arr.real, arr.imag]
    return [arr]


@dataclasses.dataclass
class ArrayCheck:
    """Outcome of comparing one array with NumPy's.

    ok: the arrays agree under the rules of the module docstring.
    message: one line saying how they differ ('' when ok).
    max_ulp: the largest ULP distance seen between non-NaN floats (0 for
        non-float arrays; a float for long double, where it is measured
        approximately; None when not measured, after a NaN mismatch).
    """

    ok: bool
    message: str = ""
    max_ulp: float = 0


def _index(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _compare_float(ref, got, max_ulp, atol, labels, ulp_of_largest=0):
    """Compare real float arrays of one dtype and shape; see ``compare_arrays``."""
    shape = ref.shape
    r = ref.reshape(-1)
    g = got.reshape(-1)
    if ulp_of_largest > 0:
        with np.errstate(all="ignore"):
            finite = np.abs(r[np.isfinite(r)])
        if finite.size:
            atol = max(atol, float(ulp_of_largest * np.spacing(finite.max())))
    exact_ulp = ref.dtype.itemsize in _UINT_OF_SIZE
    worst = 0  # largest ULP distance of any element
    worst_bad = -1  # largest ULP distance of a failing element, and where
    worst_bad_at = None
    n_bad = 0
    for start in range(0, r.size, _CHUNK):
        rc = r[start : start + _CHUNK]
        gc = g[start : start + _CHUNK]
        nan_r = np.isnan(rc)
        nan_g = np.isnan(gc)
        if not np.array_equal(nan_r, nan_g):
            at = start + int(np.flatnonzero(nan_r != nan_g)[0])
            return ArrayCheck(
                False,
                f"NaN at different positions (first at index {_index(at, shape)}: "
                f"{labels[0]}={r[at].item()!r}, {labels[1]}={g[at].item()!r})",
                None,
            )
        not_nan = ~nan_r
        with np.errstate(all="ignore"):
            if exact_ulp:
                dist = ulp_distance(rc, gc)
            else:  # long double: measure in spacings of the larger magnitude
                dist = np.abs(rc - gc) / np.spacing(np.maximum(np.abs(rc), np.abs(gc)))
            within_atol = np.abs(rc - gc) <= atol if atol > 0 else np.zeros(rc.shape, bool)
        dist = np.where(not_nan, dist, 0)
        # Infinities must match exactly (inf is 1 ULP from the largest float).
        inf_mismatch = (np.isinf(rc) | np.isinf(gc)) & (rc != gc) & not_nan
        bad = ((dist > max_ulp) & ~within_atol) | inf_mismatch
        if dist.size:
            worst = max(worst, dist.max())
        k = int(np.count_nonzero(bad))
        if k:
            n_bad += k
            bad_dist = np.where(bad, dist, 0)
            i = int(np.argmax(bad_dist))
            if worst_bad_at is None or bad_dist[i] > worst_bad:
                worst_bad, worst_bad_at = bad_dist[i], start + i
    worst_value = int(worst) if exact_ulp else float(worst)
    if n_bad == 0:
        return ArrayCheck(True, "", worst_value)
    at = worst_bad_at
    # A norm-wise view helps to tell cancellation (large ULP distance on a
    # value much smaller than the array's largest) from a wrong kernel.
    normwise = ""
    with np.errstate(all="ignore"):
        abs_err = np.abs(r - g)
        abs_err = abs_err[np.isfinite(abs_err)]
        magnitudes = np.abs(r[np.isfinite(r)])
    if abs_err.size and magnitudes.size and magnitudes.max() > 0:
        scale = magnitudes.max()
        normwise = (
            f"; largest finite |difference| = {float(abs_err.max()):.3g} = "
            f"{float(abs_err.max() / np.spacing(scale)):.3g} ULP of max|{labels[0]}| = {float(scale):.6g}"
        )
    where = f"at index {_index(at, shape)}: {labels[0]}={r[at].item()!r}, {labels[1]}={g[at].item()!r}"
    if np.isinf(r[at]) or np.isinf(g[at]):
        what = f"an infinity differs, {where}"
    else:
        what = f"worst {int(worst_bad) if exact_ulp else float(worst_bad)} ULP {where}"
    limit = f"{max_ulp} ULP" + (f" and by more than atol={atol:g}" if atol > 0 else "")
    if ulp_of_largest > 0:
        limit += f" ({ulp_of_largest} ULP of max|{labels[0]}|)"
    return ArrayCheck(
        False,
        f"{n_bad} of {r.size} elements differ by more than {limit} ({what}){normwise}",
        worst_value,
    )


def compare_arrays(ref, got, max_ulp=DEFAULT_MAX_ULP, labels=("numpy", "grumpy"), atol=0.0, ulp_of_largest=0):
    """Compare array ``got`` with the reference ``ref`` (both ndarrays).

    Rules: same shape and dtype; floats (and the parts of complex numbers)
    within ``max_ulp`` ULP element by element (or, if ``atol`` > 0, within
    ``atol`` in absolute value; or, if ``ulp_of_largest`` > 0, within that
    many ULP of the largest finite magnitude of ``ref``'s part: the
    rounding bound of a sum scales with its terms, not with its result),
    NaN at the same positions, infinities equal; everything else
    bit-identical.  ``labels`` name the two sides in
    the message.  Returns an :class:`ArrayCheck`.
    """
    if ref.shape != got.shape:
        return ArrayCheck(False, f"shape {got.shape} != {labels[0]}'s {ref.shape}")
    if ref.dtype != got.dtype:
        return ArrayCheck(False, f"dtype {got.dtype} != {labels[0]}'s {ref.dtype}")
    kind = ref.dtype.kind
    if kind in "fc":
        worst = 0
        for part_ref, part_got in zip(_float_parts(ref), _float_parts(got)):
            check = _compare_float(part_ref, part_got, max_ulp, atol, labels, ulp_of_largest)
            if not check.ok:
                return check
            worst = max(worst, check.max_ulp)
        return ArrayCheck(True, "", worst)
    if kind in "biumM":
        r = ref.reshape(-1)
        g = got.reshape(-1)
        if kind in "mM":
            r, g = r.view(np.int64), g.view(np.int64)
        for start in range(0, r.size, _CHUNK):
            differ = r[start : start + _CHUNK] != g[start : start + _CHUNK]
            if differ.any():
                at = start + int(np.flatnonzero(differ)[0])
                n_bad = int(np.count_nonzero(r != g))
                return ArrayCheck(
                    False,
                    f"{n_bad} of {r.size} elements differ (first at index {_index(at, ref.shape)}: "
                    f"{labels[0]}={r[at].item()!r}, {labels[1]}={g[at].item()!r})",
                )
        return ArrayCheck(True)
    # strings, structured and void dtypes: compare the bytes
    if np.ascontiguousarray(ref).tobytes() != np.ascontiguousarray(got).tobytes():
        return ArrayCheck(False, "contents differ (compared byte by byte)")
    return ArrayCheck(True)


def _list_files(root):
    found = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def _load(path):
    """Return {member: ndarray} for a .npy or .npz file (ValueError if not loadable)."""
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    return {"": np.load(path, allow_pickle=False)}


@dataclasses.dataclass
class DirCheck:
    """Outcome of comparing a run's GRUMPY_AB_OUTDIR with the reference one.

    ok: everything agrees.  problems: one line per difference.  files: the
    relative paths compared.  max_ulp: the largest float ULP distance
    measured (NaN mismatches excluded).
    """

    ok: bool
    problems: list
    files: list
    max_ulp: float = 0


def compare_dirs(ref_dir, got_dir, max_ulp=DEFAULT_MAX_ULP, labels=("numpy", "grumpy"), atol=0.0, ulp_of_largest=0):
    """Compare every file of ``got_dir`` with ``ref_dir`` (see module docstring).

    Returns a :class:`DirCheck`.
    """
    ref_files = _list_files(ref_dir)
    got_files = _list_files(got_dir)
    problems = []
    for name in sorted(ref_files - got_files):
        problems.append(f"{name}: saved by {labels[0]}, missing from {labels[1]}")
    for name in sorted(got_files - ref_files):
        problems.append(f"{name}: saved by {labels[1]}, not by {labels[0]}")
    worst = 0
    for name in sorted(ref_files & got_files):
        ref_path = os.path.join(ref_dir, name)
        got_path = os.path.join(got_dir, name)
        if not name.endswith((".npy", ".npz")):
            with open(ref_path, "rb") as f_ref, open(got_path, "rb") as f_got:
                if f_ref.read() != f_got.read():
                    problems.append(f"{name}: contents differ (not .npy/.npz, compared byte by byte)")
            continue
        try:
            ref_arrays = _load(ref_path)
            got_arrays = _load(got_path)
        except (ValueError, OSError, EOFError) as exc:
            problems.append(f"{name}: cannot load ({type(exc).__name__}: {exc})")
            continue
        if set(ref_arrays) != set(got_arrays):
            problems.append(
                f"{name}: members {sorted(got_arrays)} != {labels[0]}'s {sorted(ref_arrays)}"
            )
            continue
        for member in sorted(ref_arrays):
            check = compare_arrays(ref_arrays[member], got_arrays[member], max_ulp, labels, atol, ulp_of_largest)
            where = f"{name}[{member}]" if member else name
            if not check.ok:
                problems.append(f"{where}: {check.message}")
            if check.max_ulp is not None:
                worst = max(worst, check.max_ulp)
    return DirCheck(not problems, problems, sorted(ref_files | got_files), worst)


def diff_text(ref, got, labels=("numpy", "grumpy"), max_lines=40):
    """Unified diff of two outputs (bytes), at most ``max_lines`` lines."""
    a = ref.decode("utf-8", "replace").splitlines(keepends=True)
    b = got.decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, f"stdout ({labels[0]})", f"stdout ({labels[1]})"))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more diff lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# ------------------------------------------------------------------- running


@dataclasses.dataclass
class Variant:
    """One way of running the program: a label, a command, an environment."""

    label: str
    argv: list
    env: dict
    kind: str  # "numpy", "grumpy" or "peer"


@dataclasses.dataclass
class Run:
    """One process run.  seconds: wall time of the process (perf_counter)."""

    variant: str
    index: int
    seconds: float
    returncode: object  # int, or None on timeout
    stdout: bytes
    stderr: bytes
    stats: object = None  # grumpy's stats dict (grumpy variant), if written


def _package_parent():
    """The directory that holds the ``grumpy`` package (to put on PYTHONPATH)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _plain_environment():
    """The caller's environment without anything that would turn grumpy on."""
    env = dict(os.environ)
    for name in ("GRUMPY", "GRUMPY_STATS_JSON", "GRUMPY_AB_OUTDIR"):
        env.pop(name, None)
    if "LD_PRELOAD" in env:
        kept = [p for p in env["LD_PRELOAD"].replace(":", " ").split() if "libgrumpy_preload" not in p]
        if kept:
            env["LD_PRELOAD"] = " ".join(kept)
        else:
            del env["LD_PRELOAD"]
    return env


def make_variants(script, args, peers=(), python=None):
    """The variants to run: numpy, grumpy, then each (label, path) peer."""
    python = python or sys.executable
    plain = _plain_environment()
    grumpy_env = dict(plain)
    grumpy_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (_package_parent(), plain.get("PYTHONPATH", "")) if p
    )
    variants = [
        Variant("numpy", [python, script, *args], plain, "numpy"),
        Variant("grumpy", [python, "-m", "grumpy.run", script, *args], grumpy_env, "grumpy"),
    ]
    for label, path in peers:
        variants.append(Variant(label, [python, path, *args], dict(plain), "peer"))
    return variants


def run_once(variant, index, outdir, stats_path=None, timeout=None):
    """Run ``variant`` once with GRUMPY_AB_OUTDIR=outdir; returns a :class:`Run`."""
    env = dict(variant.env)
    env["GRUMPY_AB_OUTDIR"] = outdir
    if stats_path is not None:
        env["GRUMPY_STATS_JSON"] = stats_path
    start = time.perf_counter()
    try:
        proc = subprocess.run(variant.argv, env=env, capture_output=True, timeout=timeout)
        seconds = time.perf_counter() - start
        returncode, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        seconds = time.perf_counter() - start
        returncode, stdout = None, exc.stdout or b""
        stderr = (exc.stderr or b"") + f"\n[grumpy.ab: killed after {timeout} s]\n".encode()
    stats = None
    if stats_path is not None and os.path.exists(stats_path):
        try:
            with open(stats_path) as f:
                stats = json.load(f)
        except (OSError, ValueError) as exc:
            stats = {"error": f"unreadable GRUMPY_STATS_JSON: {exc}"}
    return Run(variant.label, index, seconds, returncode, stdout, stderr, stats)


def _summary(times, baseline_median):
    """Timing summary of one variant: times (seconds, one per run, in run
    order) and the numpy variant's median (seconds).  Keys: runs, median,
    min, max, q1, q3, iqr (q3 - q1), mad (median absolute deviation,
    unscaled), first, times (all seconds) and speedup (baseline / median,
    None for a zero median)."""
    median = statistics.median(times)
    q1, q3 = (float(q) for q in np.percentile(np.asarray(times, dtype=float), [25, 75]))
    return {
        "runs": len(times),
        "median": median,
        "min": min(times),
        "max": max(times),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "mad": statistics.median([abs(t - median) for t in times]),
        "first": times[0],
        "times": list(times),
        "speedup": baseline_median / median if median > 0 else None,
    }


def smallest_p(n, m):
    """Smallest two-sided p-value the exact Mann-Whitney U test can give for
    samples of ``n`` and ``m`` values without ties (the two samples fully
    separated): ``2 / C(n + m, n)``, at most 1.  n, m: positive ints."""
    return min(1.0, 2.0 / math.comb(n + m, n))


def noise_test(baseline, times, alpha=NOISE_ALPHA):
    """Do the run times ``times`` differ from ``baseline`` beyond noise?

    baseline, times: sequences of seconds (one per run, at least one each).
    Uses ``scipy.stats.mannwhitneyu`` (two-sided; SciPy chooses the exact
    distribution for small samples without ties).  Returns a dict:

    - test: "Mann-Whitney U, two-sided"; n, m: the sample sizes;
    - u: the U statistic of ``times`` (float) and p: the p-value (float),
      both None when SciPy is missing;
    - smallest_p: the smallest p the test can give at these sizes
      (:func:`smallest_p`);
    - verdict: "beyond noise" (p < alpha), "within noise" (p >= alpha),
      "too few runs" (smallest_p >= alpha: no outcome could reach alpha), or
      "no test" (SciPy is not installed);
    - faster: True when the median of ``times`` is below the baseline's;
    - note: one line explaining a "too few runs" or "no test" verdict ("").

    Never raises for missing SciPy; raises ValueError for an empty sample.
    """
    n, m = len(baseline), len(times)
    if n < 1 or m < 1:
        raise ValueError("noise_test needs at least one time in each sample")
    floor = smallest_p(n, m)
    result = {
        "test": "Mann-Whitney U, two-sided",
        "n": n,
        "m": m,
        "u": None,
        "p": None,
        "alpha": alpha,
        "smallest_p": floor,
        "faster": statistics.median(times) < statistics.median(baseline),
        "verdict": "no test",
        "note": "",
    }
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        result["note"] = (
            "SciPy is not installed, so no test of noise (python -m pip install scipy); spread only"
        )
        return result
    test = mannwhitneyu(times, baseline, alternative="two-sided")
    result["u"], result["p"] = float(test.statistic), float(test.pvalue)
    if floor >= alpha:
        result["verdict"] = "too few runs"
        result["note"] = (
            f"with {n} and {m} runs the smallest possible p is {floor:.3g} >= {alpha:g}; "
            "use -n 4 or more"
        )
    elif result["p"] < alpha:
        result["verdict"] = "beyond noise"
    else:
        result["verdict"] = "within noise"
    return result


class _Problems:
    """Mismatch messages, each kept once.  ``add(who, run, message)``: who
    is a variant label (or None for a message about the whole comparison),
    run the 0-based run index (or None).  Identical (who, message) pairs
    from several runs become one line naming the runs and the count."""

    def __init__(self):
        self._runs = {}  # (who, message) -> [run indices], in first-seen order

    def add(self, who, run, message):
        self._runs.setdefault((who, message), []).append(run)

    def __bool__(self):
        return bool(self._runs)

    def lines(self):
        """The messages as text lines, in the order first seen."""
        out = []
        for (who, message), runs in self._runs.items():
            numbered = [r + 1 for r in runs if r is not None]
            if who is None:
                prefix = ""
            elif not numbered:
                prefix = f"{who}: "
            elif len(runs) == 1:
                prefix = f"{who} run {numbered[0]}: "
            else:
                prefix = f"{who} runs {', '.join(map(str, numbered))} ({len(runs)} times): "
            out.append(prefix + message)
        return out


def _tail(data, lines=15):
    text = data.decode("utf-8", "replace").rstrip("\n").splitlines()
    return "\n".join(text[-lines:])


def run_ab(
    script,
    args=(),
    runs=DEFAULT_RUNS,
    peers=(),
    max_ulp=DEFAULT_MAX_ULP,
    timeout=None,
    keep=False,
    progress=None,
    python=None,
    atol=0.0,
    ulp_of_largest=0,
):
    """Run the A/B comparison; returns the result as a JSON-ready dict.

    script, args: the program and its arguments.  runs: repetitions of each
    variant (interleaved).  peers: (label, path) pairs.  max_ulp, atol,
    ulp_of_largest: float tolerances (see :func:`compare_arrays`).  timeout: seconds per process
    (None: no limit).  keep: leave the output directories in place (their
    root is in the result).  progress: callable taking one line of text, or
    None.  python: the interpreter (default: the running one).

    Keys of the result: script, args, runs, max_ulp, atol, ulp_of_largest, variants (label ->
    timing summary in seconds: median, min, max, q1, q3, iqr, mad, first,
    times, speedup; plus kind, command, failed_runs), noise (label of each
    variant but numpy -> :func:`noise_test`'s dict against numpy's times),
    agree (bool), problems (list of lines, each mismatch once),
    stdout_diff (text or None), arrays (files compared, max_ulp),
    grumpy_runs_agree (True / False: whether the later grumpy runs printed
    and saved exactly what the first did; None with one run, or when the
    numpy runs disagree among themselves), grumpy_runs_compared (int),
    grumpy_stats (last grumpy run's dict or None), grumpy_stats_first (first
    run's), grumpy_stderr_tail (last lines of the last grumpy run's stderr),
    peer_arrays (label -> note), outdir_root (if keep).

    Raises ValueError if runs < 1.
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    variants = make_variants(script, list(args), peers, python)
    root = tempfile.mkdtemp(prefix="grumpy-ab-")
    times = {v.label: [] for v in variants}
    failures = {v.label: [] for v in variants}
    problems = _Problems()
    self_problems = _Problems()  # grumpy runs against grumpy run 1
    numpy_deterministic = True
    stdout_diff = None
    reference = None  # first numpy Run
    ref_dir = None
    grumpy_first = None  # first grumpy Run, and its output directory
    grumpy_first_dir = None
    grumpy_compared = 0  # later grumpy runs compared with the first
    array_worst = 0
    array_files = []
    grumpy_stats = []
    grumpy_stderr = b""
    peer_arrays = {}
    say = progress or (lambda line: None)
    try:
        for i in range(runs):
            for variant in variants:
                outdir = os.path.join(root, f"{variant.label}-{i}")
                os.mkdir(outdir)
                stats_path = os.path.join(root, f"stats-{i}.json") if variant.kind == "grumpy" else None
                run = run_once(variant, i, outdir, stats_path, timeout)
                say(f"{variant.label:>10} run {i + 1}/{runs}: {run.seconds:.4f} s (exit {run.returncode})")
                times[variant.label].append(run.seconds)
                keep_dir = keep
                if variant.kind == "grumpy":
                    grumpy_stats.append(run.stats)
                    grumpy_stderr = run.stderr

                if reference is None:  # the first numpy run is the reference
                    reference, ref_dir = run, outdir
                    if run.returncode != 0:
                        problems.add(
                            None, None,
                            f"numpy run failed (exit {run.returncode}); stderr tail:\n{_tail(run.stderr)}",
                        )
                    continue

                if run.returncode != reference.returncode:
                    failures[variant.label].append(i)
                    problems.add(
                        variant.label, i,
                        f"exit {run.returncode} != numpy's {reference.returncode}; "
                        f"stderr tail:\n{_tail(run.stderr)}",
                    )
                if variant.kind == "peer":
                    if i == 0 and run.returncode == 0:
                        check = compare_dirs(ref_dir, outdir, max_ulp, ("numpy", variant.label), atol, ulp_of_largest)
                        peer_arrays[variant.label] = (
                            f"agree within {max_ulp} ULP (largest difference {check.max_ulp} ULP)"
                            if check.ok
                            else "; ".join(check.problems)
                        )
                else:
                    label = "numpy (later run)" if variant.kind == "numpy" else "grumpy"
                    if run.stdout != reference.stdout:
                        if variant.kind == "numpy":
                            numpy_deterministic = False
                            problems.add(
                                "numpy", i,
                                "printed something else than numpy run 1: "
                                "the program is not deterministic, the comparison proves nothing",
                            )
                        else:
                            if stdout_diff is None:
                                stdout_diff = diff_text(reference.stdout, run.stdout, ("numpy", label))
                            problems.add("grumpy", i, "stdout differs from numpy's")
                    check = compare_dirs(ref_dir, outdir, max_ulp, ("numpy", label), atol, ulp_of_largest)
                    array_files = check.files
                    if not check.ok:
                        if variant.kind == "numpy":
                            numpy_deterministic = False
                        for p in check.problems:
                            problems.add(variant.label, i, p)
                    if variant.kind == "grumpy":
                        array_worst = max(array_worst, check.max_ulp)
                        if grumpy_first is None:
                            grumpy_first, grumpy_first_dir = run, outdir
                            keep_dir = True  # compared with every later grumpy run
                        elif run.returncode == grumpy_first.returncode:
                            grumpy_compared += 1
                            if run.stdout != grumpy_first.stdout:
                                self_problems.add(
                                    "grumpy", i,
                                    "printed something else than grumpy run 1: "
                                    "grumpy's own runs disagree (not deterministic)",
                                )
                            own = compare_dirs(grumpy_first_dir, outdir, 0, ("grumpy run 1", "grumpy"), 0.0)
                            for p in own.problems:
                                self_problems.add(
                                    "grumpy", i,
                                    f"not the same as grumpy run 1 (grumpy's own runs disagree): {p}",
                                )
                if not keep_dir:
                    shutil.rmtree(outdir, ignore_errors=True)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)

    # grumpy against itself proves something only if NumPy is deterministic
    if numpy_deterministic:
        for line in self_problems.lines():
            problems.add(None, None, line)
        grumpy_runs_agree = (not self_problems) if grumpy_compared else None
    else:
        grumpy_runs_agree = None

    baseline = statistics.median(times["numpy"])
    summaries = {}
    noise = {}
    for variant in variants:
        summary = _summary(times[variant.label], baseline)
        summary["kind"] = variant.kind
        summary["command"] = variant.argv
        summary["failed_runs"] = failures[variant.label]
        summaries[variant.label] = summary
        if variant.kind != "numpy":
            noise[variant.label] = noise_test(times["numpy"], times[variant.label])
    problem_lines = problems.lines()
    agree = not problem_lines
    return {
        "script": script,
        "args": list(args),
        "runs": runs,
        "max_ulp": max_ulp,
        "atol": atol,
        "ulp_of_largest": ulp_of_largest,
        "variants": summaries,
        "noise": noise,
        "agree": agree,
        "problems": problem_lines,
        "stdout_diff": stdout_diff,
        "arrays": {"files": array_files, "max_ulp": array_worst},
        "grumpy_runs_agree": grumpy_runs_agree,
        "grumpy_runs_compared": grumpy_compared,
        "grumpy_stats": grumpy_stats[-1] if grumpy_stats else None,
        "grumpy_stats_first": grumpy_stats[0] if grumpy_stats else None,
        "grumpy_stderr_tail": _tail(grumpy_stderr, 5),
        "peer_arrays": peer_arrays,
        "outdir_root": root if keep else None,
    }


# ------------------------------------------------------------------ reporting


def format_stats(stats, stderr_tail=""):
    """One line with grumpy's main counters, or a warning if there are none
    (then with the last lines of the grumpy run's stderr, if any)."""
    if stats is None:
        text = (
            "grumpy stats: none written (GRUMPY_STATS_JSON) - grumpy may not have been "
            "enabled in the grumpy runs"
        )
        if stderr_tail:
            text += "; their stderr ends with:\n" + "\n".join("    " + line for line in stderr_tail.splitlines())
        return text
    if "error" in stats and len(stats) == 1:
        return f"grumpy stats: {stats['error']}"
    parts = []
    for key in STATS_KEYS:
        value = stats.get(key, "?")
        if key == "compile_seconds" and isinstance(value, (int, float)):
            value = f"{value:.4f}"
        elif key == "fallbacks" and isinstance(value, dict):
            value = "{" + ", ".join(f"{k}: {v}" for k, v in sorted(value.items())) + "}"
        parts.append(f"{key}={value}")
    return "grumpy stats (last run): " + " ".join(parts)


def format_noise(noise):
    """Lines saying, per variant, whether its times differ from numpy's
    beyond noise (``noise``: label -> :func:`noise_test` dict).  A missing
    SciPy is said once."""
    lines = []
    said_no_scipy = False
    for label, t in noise.items():
        if t["verdict"] == "no test":
            if not said_no_scipy:
                lines.append(f"noise test: {t['note']}")
                said_no_scipy = True
            continue
        direction = "faster" if t["faster"] else "slower"
        head = (
            f"{label} vs numpy: Mann-Whitney U = {t['u']:g}, two-sided p = {t['p']:.4g} "
            f"({t['m']} vs {t['n']} runs): "
        )
        if t["verdict"] == "beyond noise":
            lines.append(head + f"beyond noise (p < {t['alpha']:g}), {label} {direction}")
        elif t["verdict"] == "within noise":
            lines.append(head + f"within noise (p >= {t['alpha']:g})")
        else:
            lines.append(head + f"too few runs to tell ({t['note']})")
    return lines


def write_plot(result, path):
    """Draw a :func:`run_ab` result's run times into the PNG file ``path``.

    Left: per variant a box plot of its times (seconds) with every run as a
    point (the first run, cold caches, hollow).  Right: each variant's time
    against the run number.  The title names the program and its
    arguments.  Uses matplotlib's Agg back end (no display).  Raises
    ImportError (with a one-line message) if matplotlib is not installed,
    OSError if the file cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "--plot needs matplotlib, which is not installed (python -m pip install matplotlib)"
        ) from exc
    labels = list(result["variants"])
    samples = [result["variants"][label]["times"] for label in labels]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.3]})
    try:
        left.boxplot(samples, showfliers=False, widths=0.5, medianprops={"color": "black"})
        left.set_xticks(range(1, len(labels) + 1), labels)
        rng = np.random.default_rng(0)  # fixed jitter: the same picture for the same times
        for k, (label, times) in enumerate(zip(labels, samples), start=1):
            x = k + rng.uniform(-0.12, 0.12, size=len(times))
            color = f"C{k - 1}"
            left.scatter(x[1:], times[1:], s=22, color=color, zorder=3)
            left.scatter(x[:1], times[:1], s=22, facecolors="none", edgecolors=color, zorder=3)
            runs = range(1, len(times) + 1)
            right.plot(runs, times, marker="o", color=color, label=label)
        left.set_ylabel("wall time per process (s)")
        left.set_title("spread per variant (hollow: first run)", fontsize=10)
        left.set_ylim(bottom=0)
        right.set_xlabel("run")
        right.set_ylabel("wall time (s)")
        right.set_title("time of each run", fontsize=10)
        right.set_xticks(range(1, result["runs"] + 1))
        right.set_ylim(bottom=0)
        right.legend(loc="best", fontsize=9)
        noise = result.get("noise", {}).get("grumpy")
        subtitle = f"{result['runs']} interleaved runs per variant"
        if noise and noise.get("p") is not None:
            subtitle += f"; grumpy vs numpy: p = {noise['p']:.3g}, {noise['verdict']}"
        program = " ".join([os.path.basename(result["script"]), *result["args"]])
        fig.suptitle(f"grumpy.ab: {program}\n{subtitle}", fontsize=11)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)


def format_report(result):
    """The human-readable report of a :func:`run_ab` result."""
    lines = [
        f"grumpy.ab: {' '.join([result['script'], *result['args']])}",
        f"{result['runs']} interleaved runs per variant; wall time per process in seconds",
        "",
        f"{'variant':<12}{'median':>10}{'min':>10}{'max':>10}{'IQR':>10}{'MAD':>10}{'first':>10}{'speed-up':>10}",
    ]
    for label, s in result["variants"].items():
        speedup = f"{s['speedup']:.2f}x" if s["speedup"] is not None else "-"
        failed = f"  ({len(s['failed_runs'])} failed)" if s["failed_runs"] else ""
        iqr = s.get("iqr", float("nan"))
        mad = s.get("mad", float("nan"))
        lines.append(
            f"{label:<12}{s['median']:>10.4f}{s['min']:>10.4f}{s['max']:>10.4f}{iqr:>10.4f}{mad:>10.4f}"
            f"{s['first']:>10.4f}{speedup:>10}{failed}"
        )
    lines.append("(spread: min-max; IQR = q3 - q1; MAD = median |time - median|)")
    lines.extend(format_noise(result.get("noise") or {}))
    lines.append("")
    files = result["arrays"]["files"]
    if files:
        worst = result["arrays"]["max_ulp"]
        tolerance = f"{result['max_ulp']} ULP" + (f" or atol={result['atol']:g}" if result["atol"] > 0 else "")
        if result.get("ulp_of_largest"):
            tolerance += f" or {result['ulp_of_largest']} ULP of the array's largest magnitude"
        lines.append(
            f"arrays compared: {', '.join(files)} (tolerance {tolerance}; "
            f"largest float difference in grumpy runs: {worst} ULP)"
        )
    else:
        lines.append("arrays compared: none saved (GRUMPY_AB_OUTDIR convention unused)")
    for label, note in result["peer_arrays"].items():
        lines.append(f"peer {label} arrays (information only): {note}")
    lines.append(format_stats(result["grumpy_stats"], result["grumpy_stderr_tail"]))
    first = result["grumpy_stats_first"]
    if first and result["runs"] > 1 and isinstance(first.get("compile_seconds"), (int, float)):
        lines.append(
            f"grumpy stats (first run): kernels_compiled={first.get('kernels_compiled', '?')} "
            f"compile_seconds={first['compile_seconds']:.4f}"
        )
    own = result.get("grumpy_runs_agree")
    if own is True:
        lines.append(
            f"grumpy's own runs: agree ({result['grumpy_runs_compared']} later runs printed and saved "
            "exactly what run 1 did)"
        )
    elif own is False:
        lines.append("grumpy's own runs: DISAGREE with each other (see below)")
    lines.append("")
    if result["agree"]:
        lines.append("result: OK - grumpy's exit status, stdout and arrays agree with NumPy's")
    else:
        lines.append("result: MISMATCH")
        lines.extend(f"  - {p}" for p in result["problems"])
        if result["stdout_diff"]:
            lines.append(result["stdout_diff"].rstrip("\n"))
    return "\n".join(lines)


def _parse_peer(text):
    label, sep, path = text.partition(":")
    if not sep or not label or not path:
        raise argparse.ArgumentTypeError(f"--peer wants LABEL:PATH, got {text!r}")
    if label in ("numpy", "grumpy"):
        raise argparse.ArgumentTypeError(f"--peer label {label!r} is reserved")
    return label, path


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m grumpy.ab",
        usage="python -m grumpy.ab [options] [--] script.py [args...]",
        description="Run a NumPy program with and without grumpy (and peers), "
        "interleaved in separate processes; compare outputs and report the speed-up.",
        epilog="Scripts save arrays to compare into $GRUMPY_AB_OUTDIR; see the module docstring.",
    )
    parser.add_argument("-n", "--runs", type=int, default=DEFAULT_RUNS, help="runs per variant (default 5)")
    parser.add_argument(
        "--peer", action="append", type=_parse_peer, default=[], metavar="LABEL:PATH",
        help="also run 'python PATH args' as variant LABEL (repeatable)",
    )
    parser.add_argument("--max-ulp", type=int, default=DEFAULT_MAX_ULP, help="float tolerance in ULP (default 4)")
    parser.add_argument(
        "--atol", type=float, default=0.0,
        help="also accept float elements within this absolute difference (default 0: off)",
    )
    parser.add_argument(
        "--ulp-of-largest", type=int, default=0, metavar="U",
        help="also accept float elements within U ULP of the array's largest magnitude (default 0: off)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds allowed per process run")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    parser.add_argument(
        "--plot", metavar="OUT.png", default=None,
        help="draw the time of every run per variant into this PNG file (needs matplotlib)",
    )
    parser.add_argument("--keep", action="store_true", help="keep every run's GRUMPY_AB_OUTDIR")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    return parser


_OPTIONS_WITH_VALUE = ("-n", "--runs", "--peer", "--max-ulp", "--atol", "--ulp-of-largest", "--timeout", "--plot")


def _split_command(argv):
    """Split our argv into (harness options, [script, args...]).

    The first word that is not an option (or whatever follows ``--``) is the
    script; it and everything after it are passed on verbatim.
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[:i], argv[i + 1 :]
        if not word.startswith("-") or word == "-":
            return argv[:i], argv[i:]
        i += 2 if word in _OPTIONS_WITH_VALUE else 1
    return argv, []


def main(argv=None):
    """Command-line entry point; returns the exit status."""
    parser = _parser()
    options, command = _split_command(sys.argv[1:] if argv is None else list(argv))
    opts = parser.parse_args(options)
    if not command:
        parser.error("missing the script to run")
    opts.script, args = command[0], command[1:]
    if opts.runs < 1:
        parser.error("-n must be at least 1")
    for path in [opts.script] + [p for _, p in opts.peer]:
        if not os.path.exists(path):
            parser.error(f"no such file: {path}")
    if opts.plot is not None and importlib.util.find_spec("matplotlib") is None:
        parser.error("--plot needs matplotlib, which is not installed (python -m pip install matplotlib)")
    progress = None if opts.quiet or opts.json else (lambda line: print(line, file=sys.stderr, flush=True))
    result = run_ab(
        opts.script, args, opts.runs, opts.peer, opts.max_ulp, opts.timeout, opts.keep, progress,
        atol=opts.atol, ulp_of_largest=opts.ulp_of_largest,
    )
    if opts.plot is not None:
        write_plot(result, opts.plot)
        result["plot"] = opts.plot
    if opts.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_report(result))
        if opts.plot is not None:
            print(f"plot: {opts.plot}")
    return 0 if result["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
