"""Run grumpy's benchmark suite through the A/B harness; print markdown.

Usage::

    python tools/bench.py [--reps N] [--scale F] [--only NAME,...] [--no-peers]
                          [--bandwidth-mib M] [--json PATH]

    --reps       interleaved runs per variant (default 5)
    --scale      multiply every problem size by F (default 1.0; 0.1 for a
                 quick look, 5 for the programs' own defaults)
    --only       run only these benchmarks (names as in the table)
    --no-peers   skip numexpr and Numba
    --json PATH  also write every A/B result (raw times included) to PATH

Each benchmark in tools/ runs under ``python -m grumpy.ab`` semantics (the
:func:`grumpy.ab.run_ab` function): NumPy and grumpy, and the peers that
exist (numexpr, Numba), each in its own process, interleaved.  The table
gives the median wall time of each process in seconds and the speed-up
``median(numpy) / median(variant)``; "outputs" says whether grumpy's stdout
and saved arrays agreed with NumPy's (each float within 4 ULP, except
where the tolerances below the imports say why not), with the largest
difference seen.

Listing 1 is also set against the machine's copy bandwidth
(tools/bandwidth.py): its per-iteration time is the slope between runs
with ITER_LO and ITER_HI iterations, ``(median(hi) - median(lo)) /
(ITER_HI - ITER_LO)``, which cancels start-up, input generation and JIT
compilation; the streaming time is the bytes a fused kernel must move per
iteration (read x and y, write z: 3 * n * itemsize) divided by the best
measured bandwidth.  A ratio of 1 means bandwidth-bound.

Default sizes keep the whole suite to a few minutes on 2 cores.  Exit
status: 0, or 1 if any benchmark's outputs differed.
"""

import argparse
import dataclasses
import json
import os
import sys

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(TOOLS))  # the repository root, for grumpy.ab

from grumpy import ab  # noqa: E402  (after the path is set)

import bandwidth  # noqa: E402  (tools/ is sys.path[0] when run as a script)

ITER_LO, ITER_HI = 2, 22


# Tolerances beyond grumpy.ab's default (each element within 4 ULP), where
# grumpy's semantics contract (transcendentals within 4 ULP of NumPy's,
# reductions within the rounding of a sum) allows more at the output:
#
# - Black-Scholes prices are differences of terms up to the largest strike
#   (100): a 1-ULP difference in exp or log becomes an absolute error of about
#   an ULP of 100, i.e. thousands of ULP of a price near zero.  Its arrays are
#   also accepted within 16 ULP of 100 in absolute value.
# - softmax divides exp(x - max) (4 ULP) by a row sum of such values (4 ULP
#   plus the summation order's rounding): up to about 8.5 ULP in the output.
# - The MLP's W2 and the RNN's Wh (float32) are initial weights minus the
#   learning rate times gradients that are sums, over the batch (and the time
#   steps), of products of activations with errors of both signs.  The
#   activations go through exp (softmax) and tanh, within 4 ULP of NumPy's,
#   and the sums through GEMMs: grumpy calls the system's OpenBLAS, NumPy its
#   bundled one, whose kernels add in another order.  A weight that the
#   update leaves near zero then differs by about an ULP of the largest
#   weight, i.e. hundreds or thousands of ULP of itself (numexpr, with
#   NumPy's own GEMMs, differs from NumPy by 1 ULP of the largest weight;
#   grumpy by 1-11).  Their arrays are also accepted within 2.4e-7 in
#   absolute value: 16 ULP of a float32 in [0.125, 0.25), where the largest
#   weights are (0.09-0.16).
BLACKSCHOLES_ATOL = {"float64": 16 * 1.4210854715202004e-14, "float32": 16 * 7.62939453125e-06}
SOFTMAX_MAX_ULP = 9
TRAINING_ATOL = 16 * 1.4901161193847656e-08  # 16 float32 ULP of a value in [0.125, 0.25)


@dataclasses.dataclass
class Benchmark:
    name: str
    script: str  # in tools/
    args: list
    peers: list  # labels; tools/<stem>_<label>.py, if it exists
    max_ulp: int = ab.DEFAULT_MAX_ULP
    atol: float = 0.0


def benchmarks(scale):
    """The suite at size ``scale`` (1.0: sizes that keep it to a few minutes)."""

    def size(n):
        return str(max(1, int(n * scale)))

    return [
        Benchmark("listing1-f64", "listing1.py", [size(10_000_000), "float64", str(ITER_HI)], ["numexpr"]),
        Benchmark("listing1-i32", "listing1.py", [size(10_000_000), "int32", str(ITER_HI)], ["numexpr"]),
        Benchmark("blackscholes-f64", "blackscholes.py", [size(2_000_000), "float64", "5"], ["numexpr", "numba"],
                  atol=BLACKSCHOLES_ATOL["float64"]),
        Benchmark("blackscholes-f32", "blackscholes.py", [size(2_000_000), "float32", "5"], ["numexpr", "numba"],
                  atol=BLACKSCHOLES_ATOL["float32"]),
        Benchmark("softmax-f64", "softmax.py", [size(50_000), "100", "float64", "5"], ["numexpr"],
                  max_ulp=SOFTMAX_MAX_ULP),
        Benchmark("mixed", "mixed.py", [size(1_000_000), "3"], ["numexpr"]),
        Benchmark("mlp-f32", "mlp.py", [size(1024), "5"], ["numexpr"], atol=TRAINING_ATOL),
        Benchmark("rnn-f32", "rnn.py", [size(256), "512", "20", "3"], ["numexpr"], atol=TRAINING_ATOL),
        Benchmark("kmeans-f64", "kmeans.py", [size(250_000), "16", "10"], ["numba"]),
    ]


def peer_paths(script, labels):
    stem = script[: -len(".py")]
    found = []
    for label in labels:
        path = os.path.join(TOOLS, f"{stem}_{label}.py")
        if os.path.exists(path):
            found.append((label, path))
    return found


def outputs_cell(result):
    if result["agree"]:
        cell = "same"
        if result["arrays"]["files"]:
            limit = f"limit {result['max_ulp']}" + (f", atol {result['atol']:.2g}" if result["atol"] > 0 else "")
            if result.get("ulp_of_largest"):
                limit += f", {result['ulp_of_largest']} ULP of max"
            cell += f" ({result['arrays']['max_ulp']} ULP; {limit})"
    else:
        cell = "**DIFFER**"
    if result["grumpy_stats"] is None:
        cell += "; grumpy not enabled?"
    return cell


def stats_cell(stats):
    if not stats or "error" in stats:
        return "-"
    fallbacks = stats.get("fallbacks")
    n_fallbacks = sum(fallbacks.values()) if isinstance(fallbacks, dict) else "?"
    return (
        f"{stats.get('kernels_compiled', '?')}/{stats.get('kernels_launched', '?')}/"
        f"{stats.get('cache_hits', '?')}/{n_fallbacks}"
    )


def print_table(rows, peer_labels):
    header = ["benchmark", "args", "numpy s", "grumpy s", "grumpy x"]
    for label in peer_labels:
        header += [f"{label} s", f"{label} x"]
    header += ["outputs", "compiled/launched/hits/fallbacks"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, result in rows:
        v = result["variants"]
        cells = [name, " ".join(result["args"]), f"{v['numpy']['median']:.4f}"]
        cells += [f"{v['grumpy']['median']:.4f}", f"{v['grumpy']['speedup']:.2f}"]
        for label in peer_labels:
            if label in v:
                cells += [f"{v[label]['median']:.4f}", f"{v[label]['speedup']:.2f}"]
            else:
                cells += ["-", "-"]
        cells += [outputs_cell(result), stats_cell(result["grumpy_stats"])]
        print("| " + " | ".join(cells) + " |")


def print_streaming(name, lo, hi, n, itemsize, bw, bw_threads):
    moved = 3 * n * itemsize
    stream_s = moved / bw
    print(
        f"\n{name}: fused kernel moves 3 x {n} x {itemsize} B = {moved / 1e6:.1f} MB per iteration; "
        f"at {bw / 1e9:.2f} GB/s ({bw_threads} thread{'s' if bw_threads > 1 else ''}) "
        f"that is {stream_s * 1e3:.3f} ms\n"
    )
    print("| variant | s per iteration | x streaming time |")
    print("|---|---|---|")
    for label in hi["variants"]:
        per_iter = (hi["variants"][label]["median"] - lo["variants"][label]["median"]) / (ITER_HI - ITER_LO)
        note = " (not above the noise: use a larger --scale or more --reps)" if per_iter <= 0 else ""
        print(f"| {label} | {per_iter:.5f} | {per_iter / stream_s:.2f}{note} |")


def main():
    parser = argparse.ArgumentParser(prog="python tools/bench.py", description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=ab.DEFAULT_RUNS)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--bandwidth-mib", type=int, default=512)
    parser.add_argument("--json", default=None)
    opts = parser.parse_args()

    suite = benchmarks(opts.scale)
    if opts.only:
        wanted = set(opts.only.split(","))
        unknown = wanted - {b.name for b in suite}
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
        suite = [b for b in suite if b.name in wanted]
    if opts.reps < 1:
        parser.error("--reps must be at least 1")

    def progress(line):
        print(line, file=sys.stderr, flush=True)

    rows = []
    extra = {}
    peer_labels = []
    for bench in suite:
        path = os.path.join(TOOLS, bench.script)
        found = [] if opts.no_peers else peer_paths(bench.script, bench.peers)
        peer_labels += [label for label, _ in found if label not in peer_labels]

        def run(args):
            progress(f"== {bench.name}: {bench.script} {' '.join(args)}")
            result = ab.run_ab(
                path, args, opts.reps, found, max_ulp=bench.max_ulp, progress=progress, atol=bench.atol
            )
            result["script"] = f"tools/{bench.script}"
            return result

        rows.append((bench.name, run(bench.args)))
        if bench.script == "listing1.py":
            extra[bench.name] = run(bench.args[:2] + [str(ITER_LO)])

    by_threads = {}
    if extra:
        progress("== copy bandwidth")
        by_threads = bandwidth.measure(opts.bandwidth_mib << 20)

    print(f"\nMedian wall time per process (s) over {opts.reps} interleaved runs; x = speed-up over NumPy.\n")
    print_table(rows, peer_labels)
    if by_threads:
        bw_threads, bw = max(by_threads.items(), key=lambda item: item[1])
        for name, result in rows:
            if name in extra:
                n = int(result["args"][0])
                itemsize = 8 if result["args"][1] == "float64" else 4
                print_streaming(name, extra[name], result, n, itemsize, bw, bw_threads)
    problems = [(name, r) for name, r in rows + list(extra.items()) if not r["agree"]]
    for name, result in problems:
        print(f"\n{name}: outputs differ")
        for line in result["problems"]:
            print(f"  - {line}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(
                {"results": dict(rows), "listing1_slope_lo": extra, "bandwidth_bytes_per_second": by_threads},
                f,
                indent=2,
            )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
