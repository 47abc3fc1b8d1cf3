"""Run the realistic NumPy programs of tools/programs/ through the A/B
harness; print a markdown table and the geometric mean of the speed-ups.

Usage::

    python tools/programs/run_all.py [--reps N] [--scale F] [--only NAME,...]
                                     [--timeout S] [--json PATH] [--list]

    --reps     interleaved runs per variant (default 5)
    --scale    multiply every program's work by about F (default 1.0: the
               programs' own defaults, 0.5-3 s each in plain NumPy on 2
               cores).  Counts scale by F, the sides of 2-D grids and
               matrices (work ~ side^2) by sqrt(F), the sizes of matrix
               chains (work ~ n^3) by the cube root; iteration counts
               stay as they are.
    --only     run only these programs (names as in the table)
    --timeout  seconds allowed per process (default: none)
    --json     also write every A/B result (raw times included) to PATH
    --list     print the programs and their arguments at this scale, run
               nothing

Each program is plain NumPy code written the way scientists write it
(stencils, linear algebra, statistics, image filters, Monte Carlo,
N-body, ODEs); see each file's docstring.  They are run by
:func:`grumpy.ab.run_ab`, as tools/bench.py runs its suite: NumPy and
grumpy in separate processes, interleaved; wall time per process, so
start-up and JIT compilation count.  "outputs" says whether grumpy's
stdout and saved arrays agreed with NumPy's (floats within 4 ULP, except
where a tolerance below says why not).

The table is followed by the geometric mean of grumpy's speed-ups and
the programs where grumpy was slower than NumPy.  Exit status: 0, or 1 if
any program's outputs differed (or a run failed).
"""

import argparse
import dataclasses
import json
import math
import os
import sys

PROGRAMS = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(PROGRAMS)
sys.path.insert(0, os.path.dirname(TOOLS))  # the repository root, for grumpy.ab
sys.path.insert(0, TOOLS)  # for bench's table cells

from grumpy import ab  # noqa: E402  (after the path is set)

import bench  # noqa: E402

# Tolerances beyond grumpy.ab's default (each float within 4 ULP of
# NumPy's), where grumpy's contract (transcendentals within 4 ULP of
# NumPy's) allows more at the output:
#
# - rolling_stats: the series contains 2 sin(...), within 4 ULP of NumPy's,
#   so x differs in its last bits (much more in ULP where walk + sine +
#   noise nearly cancel); the rolling statistics are differences of two
#   cumulative sums of 4M terms (|cumsum(x)| up to ~4e8, |cumsum(x^2)| up
#   to ~5e10) divided by the window: one ULP of cumsum(x) is 6e-8, i.e.
#   2.4e-10 after the division.  Accepted within 1e-9 absolute (4 such
#   ULP); seen: 1.9e-12 (mean) and 5.4e-11 (std) at the default size.
# - zscore_hist: Z = (log1p(X) - mu) / sd with log1p within 4 ULP of
#   NumPy's; log1p(X) is up to ~16 (one ULP 3.6e-15) and sd at least ~0.3,
#   so a Z near zero can differ by 4 * 3.6e-15 / 0.3 = 4.7e-14 absolute,
#   millions of ULP of itself.  Accepted within 5e-14; seen: 3.1e-15.
# - logreg: p = 1 / (1 + exp(-z)) with exp within 4 ULP of NumPy's, and
#   the weights are 40 steps of sums over 200k examples of (p - y): a
#   weight that ends near zero differs by about an ULP of the largest
#   weight (1.1), hundreds of ULP of itself, and z = X @ w + b (so p) by a
#   few ULP of 1.  Accepted within 16 ULP of 1.0 (3.6e-15); seen: 3.3e-16
#   (p) and 5.6e-17 (w).
# - gbm_options: S = S0 * exp(cumsum(...)) with exp within 4 ULP; S0 = 100
#   has the mantissa 1.5625, so the product can land where an ULP is
#   relatively half the exp's: 4 ULP of exp become up to 8 of S, plus the
#   product's own rounding.  The per-path means of S likewise.  Accepted
#   within 9 ULP; seen: 4.
# - mc_pi: the per-batch mean of 2 exp(-x^2) cos(3x), terms in [-2, 2]
#   each within a few ULP of NumPy's, is 0.09: the terms' differences are
#   ULP of 2, not of the mean.  Accepted within 4 ULP of 2 (1.8e-15, use
#   2e-15); seen: 1 ULP of the mean.
# - particle_filter: the posterior mean sum(w * x) of particles in about
#   [-35, 35] with weights from exp (within 4 ULP) can be near zero:
#   accepted within 16 ULP of 32 (1.1e-13); seen: 2 ULP of the estimate.
# - sobel_gamma: NumPy 2.5's float32 power differs from grumpy's kernel by
#   1 ULP on a fifth of the values (measured on the H100 machine's NumPy
#   2.5.2; NumPy 2.4 agrees); through the Sobel sums' cancellation and the
#   gamma's steep slope near 0 that reached 3 ULP of max|mag| and 22.6 ULP
#   of 1 in enc: accepted within 32 ULP of 1.0f (3.8e-6).
# - wave2d: the initial bump exp(-r^2 / 0.01) is grumpy's kernel (its
#   meshgrid is a grumpy array), within 4 ULP of NumPy's exp: up to 8.9e-16
#   absolute on values in [0, 1].  The leapfrog scheme (C2 = 0.25, stable)
#   carries that difference through 100 steps as it carries the wave:
#   accepted within 64 ULP of 1.0 (1.4e-14); seen: 2.5e-15.
WAVE_ATOL = 64 * 2.220446049250313e-16
# - shallow_water: likewise its initial height 1 + 0.4 exp(...) over a
#   grumpy meshgrid; 60 steps of the (nonlinear) Lax-Friedrichs scheme
#   carry the difference into the momenta hu, hv (|.| <= 0.46): accepted
#   within 64 ULP of 1.0 (1.4e-14); seen: 1.3e-15.
SHALLOW_ATOL = WAVE_ATOL
ROLLING_ATOL = 1e-9
# - nbody: the pairwise differences of pos are a grumpy array (small plain
#   operands broadcast into a 6 MB result, hooks/plain_ops.c), so each
#   acceleration is grumpy's sum of 500 terms that cancel, within the
#   rounding bound of NumPy's (DESIGN.md 4) but not its bits: a velocity
#   near zero differs by an ULP of the large ones.  Accepted within 16 ULP
#   of 1.0 (3.6e-15; max|vel| is 0.93); seen: 1.1e-16.
NBODY_ATOL = 16 * 2.220446049250313e-16
# - mm_chain: PolyBench's index grids are grumpy arrays (i * (j + 1) of
#   small plain aranges, hooks/plain_ops.c), so the products are grumpy's
#   GEMM calls into the system OpenBLAS rather than NumPy's bundled one:
#   float32 sums of 1300-1700 products in another order (DESIGN.md 4).  G
#   is scaled to unit row maxima and fed back through tanh; accepted within
#   16 ULP of 1.0f (1.9e-6); seen: 3.6e-7.
MM_CHAIN_ATOL = 16 * 1.1920928955078125e-07
SOBEL_ATOL = 32 * 1.1920928955078125e-07
ZSCORE_ATOL = 5e-14
LOGREG_ATOL = 16 * 2.220446049250313e-16
GBM_MAX_ULP = 9
MC_ATOL = 2e-15
FILTER_ATOL = 16 * 7.105427357601002e-15
# - gram_schmidt: R[i, j] = Q[:, i] @ v with v pending is one fused kernel
#   (hooks/capture_linalg.c vector_dot): NumPy's pairwise sum of the
#   300,000 rounded products, where NumPy's own v @ w is OpenBLAS's ddot,
#   another order (DESIGN.md 4: a reduction within the rounding bound, not
#   its bits), which modified Gram-Schmidt iterates into Q and R.  Each
#   array accepted within 64 ULP of its own largest magnitude (Q's 0.0099,
#   R's 549); seen (2026-11-29): 42 ULP of max|Q|, 24 of max|R|.
GRAM_SCHMIDT_ULP = 64


@dataclasses.dataclass
class Program:
    name: str
    script: str  # in tools/programs/
    args: list
    max_ulp: int = ab.DEFAULT_MAX_ULP
    atol: float = 0.0
    ulp_of_largest: int = 0


def programs(scale):
    """The programs with their arguments at size ``scale`` (1.0: defaults)."""

    def count(n):  # work ~ n
        return str(max(1, int(round(n * scale))))

    def side(n):  # work ~ n^2
        return str(max(8, int(round(n * math.sqrt(scale)))))

    def cube(n):  # work ~ n^3
        return str(max(8, int(round(n * scale ** (1.0 / 3.0)))))

    return [
        # finite differences, stencils, CFD
        Program("wave2d", "wave2d.py", [side(1000), "100"], atol=WAVE_ATOL),
        Program("shallow_water", "shallow_water.py", [side(400), "60"], atol=SHALLOW_ATOL),
        Program("poisson_sor", "poisson_sor.py", [side(1000), "60"]),
        Program("laplace_roll-f32", "laplace_roll.py", [side(1024), "80"]),
        Program("life", "life.py", [side(2000), "150"]),
        # linear algebra (PolyBench-style)
        Program("gemver", "gemver.py", [side(3000), "5"]),
        Program("atax_bicg", "atax_bicg.py", [side(3000), side(3500), "20"]),
        Program("mm_chain-f32", "mm_chain.py", [cube(1200), "3"], atol=MM_CHAIN_ATOL),
        Program("power_iteration", "power_iteration.py", [side(3000), "300"]),
        Program("gram_schmidt", "gram_schmidt.py", [count(300_000), "12", "2"], ulp_of_largest=GRAM_SCHMIDT_ULP),
        Program("covariance-f64", "covariance.py", [count(200_000), "48", "float64", "3"]),
        Program("covariance-f32", "covariance.py", [count(200_000), "48", "float32", "3"]),
        # statistics
        Program("rolling_stats", "rolling_stats.py", [count(4_000_000), "250", count(300)], atol=ROLLING_ATOL),
        Program("zscore_hist", "zscore_hist.py", [count(400_000), "16", "2"], atol=ZSCORE_ATOL),
        Program("bootstrap", "bootstrap.py", [count(50_000), "1000", "50"]),
        Program("logreg", "logreg.py", [count(200_000), "32", "40"], atol=LOGREG_ATOL),
        # image filters
        Program("blur_unsharp-f32", "blur_unsharp.py", [side(2400), side(2400), "3"]),
        Program("sobel_gamma-u8", "sobel_gamma.py", [side(1500), side(2000), "3"], atol=SOBEL_ATOL),
        # Monte Carlo
        Program("mc_pi", "mc_pi.py", [count(1_000_000), "12"], atol=MC_ATOL),
        Program("gbm_options", "gbm_options.py", [count(20_000), "252", "3"], max_ulp=GBM_MAX_ULP),
        Program("random_walk-int", "random_walk.py", [count(10_000), "1500"]),
        Program("mandelbrot-c128", "mandelbrot.py", [side(1600), side(1200), "100"]),
        # particles and ODEs
        Program("nbody", "nbody.py", [side(500), "40"], atol=NBODY_ATOL),
        Program("particle_filter", "particle_filter.py", [count(200_000), "50"], atol=FILTER_ATOL),
        Program("rk4_oscillators", "rk4_oscillators.py", [count(200_000), "150"]),
    ]


def print_table(rows):
    header = ["program", "args", "numpy s", "grumpy s", "grumpy x", "outputs", "compiled/launched/hits/fallbacks"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, result in rows:
        v = result["variants"]
        cells = [name, " ".join(result["args"]), f"{v['numpy']['median']:.4f}"]
        speedup = v["grumpy"]["speedup"]
        cells += [f"{v['grumpy']['median']:.4f}", "-" if speedup is None else f"{speedup:.2f}"]
        cells += [bench.outputs_cell(result), bench.stats_cell(result["grumpy_stats"])]
        print("| " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(prog="python tools/programs/run_all.py", description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=ab.DEFAULT_RUNS)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--list", action="store_true")
    opts = parser.parse_args()
    if opts.reps < 1:
        parser.error("--reps must be at least 1")
    if opts.scale <= 0:
        parser.error("--scale must be positive")

    suite = programs(opts.scale)
    if opts.only:
        wanted = set(opts.only.split(","))
        unknown = wanted - {p.name for p in suite}
        if unknown:
            parser.error(f"unknown program(s): {', '.join(sorted(unknown))}")
        suite = [p for p in suite if p.name in wanted]
    if opts.list:
        for p in suite:
            print(f"{p.name}: tools/programs/{p.script} {' '.join(p.args)}")
        return 0

    def progress(line):
        print(line, file=sys.stderr, flush=True)

    rows = []
    for prog in suite:
        path = os.path.join(PROGRAMS, prog.script)
        progress(f"== {prog.name}: {prog.script} {' '.join(prog.args)}")
        result = ab.run_ab(
            path, prog.args, opts.reps, (), max_ulp=prog.max_ulp, timeout=opts.timeout, progress=progress,
            atol=prog.atol, ulp_of_largest=prog.ulp_of_largest,
        )
        result["script"] = f"tools/programs/{prog.script}"
        rows.append((prog.name, result))

    print(f"\nMedian wall time per process (s) over {opts.reps} interleaved run(s); x = speed-up over NumPy.\n")
    print_table(rows)
    speedups = [r["variants"]["grumpy"]["speedup"] for _, r in rows]
    speedups = [s for s in speedups if s is not None and s > 0]
    if speedups:
        geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        print(f"\nGeometric mean of grumpy's speed-ups over {len(speedups)} programs: {geomean:.2f}x")
    slower = [(name, s) for name, s in ((n, r["variants"]["grumpy"]["speedup"]) for n, r in rows) if s and s < 1.0]
    if slower:
        print("\nSlower than NumPy (speed-up below 1.0): " + ", ".join(f"{n} ({s:.2f}x)" for n, s in slower))
        if opts.reps < 4:
            print("(fewer than 4 runs each: differences of a few percent are within noise)")
    problems = [(name, r) for name, r in rows if not r["agree"]]
    for name, result in problems:
        print(f"\n{name}: outputs differ")
        for line in result["problems"]:
            print(f"  - {line}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"scale": opts.scale, "reps": opts.reps, "results": dict(rows)}, f, indent=2)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
