"""Measure this machine's memory copy bandwidth with NumPy.

Usage::

    python tools/bandwidth.py [--mib M] [--reps R] [--threads T] [--json]

    --mib      size of the source array in MiB (default 512; keep it well
               above the last-level cache)
    --reps     timed copies per thread count; the median is reported (default 9)
    --threads  largest thread count to try (default: CPUs this process may use)

Method: ``np.copyto(dst, src)`` of a float64 array into an existing array
(pages touched beforehand, one untimed warm-up copy), timed with
``time.perf_counter``.  Bandwidth counts the bytes read plus the bytes
written, 2 * nbytes per copy (the convention used for a kernel's "bytes
moved"; cache write-allocate traffic is not counted).  With T > 1 threads
each copies its own contiguous slice (NumPy releases the GIL while
copying) and the time is that of the slowest, so the figure is what the
machine sustains with all cores streaming.

Output (bytes per second, decimal GB = 1e9 bytes)::

    copy bandwidth, 1 thread:  12.34 GB/s (median of 9)
    copy bandwidth, 2 threads: 15.67 GB/s (median of 9)
    best: 15.67 GB/s

``--json`` prints {"bytes": ..., "reps": ..., "by_threads": {T: bytes/s},
"best_bytes_per_second": ...} instead.  ``measure()`` is importable.
"""

import argparse
import json
import os
import statistics
import threading
import time

import numpy as np


def _copy_seconds(dst, src, threads):
    """Seconds to copy src into dst with `threads` threads, one slice each."""
    if threads == 1:
        start = time.perf_counter()
        np.copyto(dst, src)
        return time.perf_counter() - start
    bounds = np.linspace(0, src.size, threads + 1).astype(np.int64)
    barrier = threading.Barrier(threads + 1)

    def work(lo, hi):
        barrier.wait()
        np.copyto(dst[lo:hi], src[lo:hi])

    workers = [threading.Thread(target=work, args=(int(lo), int(hi))) for lo, hi in zip(bounds[:-1], bounds[1:])]
    for t in workers:
        t.start()
    start = time.perf_counter()
    barrier.wait()
    for t in workers:
        t.join()
    return time.perf_counter() - start


def measure(nbytes=512 << 20, reps=9, max_threads=None):
    """Median copy bandwidth in bytes/s (read + written) per thread count.

    Returns {threads: bytes_per_second} for 1 and for max_threads (default:
    the CPUs in this process's affinity mask), plus each count in between.
    """
    if max_threads is None:
        max_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    n = nbytes // 8
    src = np.arange(n, dtype=np.float64)
    dst = np.empty_like(src)
    dst.fill(0.0)  # touch every page before timing
    np.copyto(dst, src)  # warm-up
    result = {}
    for threads in range(1, max_threads + 1):
        seconds = [_copy_seconds(dst, src, threads) for _ in range(reps)]
        result[threads] = 2 * src.nbytes / statistics.median(seconds)
    return result


def main():
    parser = argparse.ArgumentParser(prog="python tools/bandwidth.py", description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    opts = parser.parse_args()
    by_threads = measure(opts.mib << 20, opts.reps, opts.threads)
    best = max(by_threads.values())
    if opts.json:
        print(json.dumps({"bytes": opts.mib << 20, "reps": opts.reps, "by_threads": by_threads, "best_bytes_per_second": best}))
        return
    for threads, bw in by_threads.items():
        print(f"copy bandwidth, {threads} thread{'s' if threads > 1 else ''}: {bw / 1e9:.2f} GB/s (median of {opts.reps})")
    print(f"best: {best / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
