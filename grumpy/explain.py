"""Explain what grumpy did with a program, line by line.

Usage::

    python -m grumpy.explain [options] [--] script.py [args...]
    python -m grumpy.explain [options] -m module [args...]

Options (before the program)::

    --html PATH       also write the report as HTML, with a picture of the
                      fused DAG of each of the top kernels (also written as
                      SVG files next to it: PATH's name + _K1.svg, ...)
    --top N           kernels drawn in the HTML (default 3)
    --lines N         lines shown in the terminal table (default 30; 0: all)
    --bandwidth GB/s  the machine's memory bandwidth to compare kernels
                      with (default: measured at exit, a NumPy copy of
                      128 MiB on every kernel thread, best of 3)
    -o PATH           write the terminal report to PATH instead of stderr

The program runs as under ``python -m grumpy.run`` (same ``sys.argv``,
``sys.path``, exit status and tracebacks; grumpy/run.py's run_program), with
the planner noting every kernel it runs and the hooks the user's line of
every operation (hooks/explain.c, core/explain.c).  At exit, after the
program's own exit handlers, the report goes to stderr (the program's
stdout is the program's alone):

- per line of the program (``file:line`` and its text), sorted by kernel
  time: operations recorded there, the kernels they went into (K1, K2,
  ...), the kernel time, bytes moved and compile time charged to the line
  (a kernel's are shared among its lines in proportion to the operations
  each recorded in it), where the kernels' code came from (compiled, the
  on-disk cache, compiled earlier in the run), and calls handed to NumPy;
- per kernel, sorted by time: its kind, operations, launches, time, GB
  moved and GB/s against the machine's bandwidth, compile time and where
  its code came from, and its lines;
- every call handed to NumPy with its line, the call, the reason and the
  count: fallbacks (unsupported dtypes, arguments, functions, error state,
  ...), operations computed by NumPy at once because their result was
  below GRUMPY_MIN_BYTES or by the adaptive rule, and kernels the planner
  could not run (NumPy's evaluator computed them), or that NumPy computed while
  their kernel compiled in the background (GRUMPY_FIRST_LAUNCH_MS).

Units: seconds, GB = 1e9 bytes, GB/s.  A kernel's bytes are those it read
from its operands plus those it wrote (``grumpy.stats()["bytes_moved"]``).
Times include each launch's staging and bookkeeping, as run_seconds does.

Explain never changes results: it only records.  Arrays still pending at
exit are not computed (a plain run would not compute them either).  Matrix
products (OpenBLAS) are counted as operations of their line but not timed
as kernels.  A program that ends by ``os._exit`` gets no report.
"""

import atexit
import html
import linecache
import os
import sys
import threading
import time

from . import run as _run

USAGE = (
    "usage: python -m grumpy.explain [-h] [--html PATH] [--top N] [--lines N] [--bandwidth GB/s] [-o PATH]\n"
    "                                [--] script.py [args...]\n"
    "       python -m grumpy.explain [options] -m module [args...]\n"
)

_GB = 1e9
_PROG = "grumpy.explain"
_CODE_WIDTH = 60  # characters of a line's source shown in the terminal


# ---- command line -----------------------------------------------------------


def _usage_error(message):
    sys.stderr.write(f"{_PROG}: {message}\n" + USAGE)
    raise SystemExit(2)


def _number(text, option, kind):
    try:
        value = kind(text)
    except ValueError:
        _usage_error(f"{option} wants a number, not {text!r}")
    if value < 0:
        _usage_error(f"{option} must not be negative")
    return value


def parse(argv):
    """Return (options dict, script, module, args) from explain's command
    line; exits with 2 on bad usage, 0 after -h."""
    opts = {"html": None, "top": 3, "lines": 30, "bandwidth": None, "output": None}
    takes = {"--html": "html", "--top": "top", "--lines": "lines", "--bandwidth": "bandwidth", "-o": "output",
             "--output": "output"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            print(__doc__)
            raise SystemExit(0)
        name, eq, value = arg.partition("=")
        if name not in takes or (eq and name == "-o"):
            break
        if not eq:
            if i + 1 >= len(argv):
                _usage_error(f"{name} needs a value")
            value = argv[i + 1]
            i += 1
        key = takes[name]
        if key in ("top", "lines"):
            value = _number(value, name, int)
        elif key == "bandwidth":
            value = _number(value, name, float)
        opts[key] = value
        i += 1
    script, module, args = _run._parse(argv[i:], prog=_PROG, usage=USAGE, help_text=__doc__)
    return opts, script, module, args


# ---- the report as data -----------------------------------------------------


def _where(site, lines):
    """'file:line' of a site index of the report's line table."""
    if site in lines:
        return f"{lines[site][0]}:{lines[site][1]}"
    return "<no line>"


def _split(where):
    """('file', line) from 'file:line'."""
    path, _, line = where.rpartition(":")
    try:
        return path, int(line)
    except ValueError:
        return where, 0


def _source(where):
    path, line = _split(where)
    return linecache.getline(path, line).strip() if line > 0 else ""


def _code_from(compiles, disk, memory):
    """Where a kernel's code came from, per launch: 'compiled 1, disk 2,
    reused 3' (compiled by LLVM, loaded from the on-disk cache, already
    in this process)."""
    parts = [f"{label} {n}" for label, n in (("compiled", compiles), ("disk", disk), ("reused", memory)) if n]
    return ", ".join(parts) or "-"


def build(report):
    """The tables of the report from ``_grumpy._explain_report()``: a dict
    with 'kernels' (list, by time, each with 'id' K1..), 'lines' (list of
    per-line dicts, by time), 'calls' (list of (where, call, reason,
    count), by count), 'totals' and 'sites' (the report's line table)."""
    sites = report["lines"]
    kernels = sorted(report["kernels"], key=lambda k: (-k["run_ns"], -k["launches"]))
    per_line = {}

    def line_row(where):
        if where not in per_line:
            per_line[where] = {
                "where": where, "recorded": 0, "kernels": [], "run_s": 0.0, "bytes": 0.0, "compile_s": 0.0,
                "compiles": 0, "disk": 0, "memory": 0, "numpy": 0, "kernel_ops": 0,
            }
        return per_line[where]

    for site, (_path, _line, recorded, _small, _adaptive) in sites.items():
        line_row(_where(site, sites))["recorded"] += recorded
    for n, k in enumerate(kernels, 1):
        k["id"] = f"K{n}"
        ops = {}
        for op, _dt, _shape, _inputs, _out, site, _axes, _value, _memory in k["nodes"]:
            if op not in ("LEAF", "CONST"):
                where = _where(site, sites)
                ops[where] = ops.get(where, 0) + 1
        total = sum(ops.values()) or 1
        k["lines"] = sorted(ops, key=lambda w: _split(w))
        for where, count in ops.items():
            row = line_row(where)
            share = count / total
            row["kernels"].append(k["id"])
            row["kernel_ops"] += count
            row["run_s"] += k["run_ns"] * 1e-9 * share
            row["bytes"] += k["bytes"] * share
            row["compile_s"] += k["compile_ns"] * 1e-9 * share
            row["compiles"] += k["compiles"]
            row["disk"] += k["disk_hits"]
            row["memory"] += k["memory_hits"]
    calls = sorted(((w, c, r, n) for (w, c, r), n in (report["calls"] or {}).items()), key=lambda t: (-t[3], t[0]))
    for where, _call, _reason, count in calls:
        line_row(where)["numpy"] += count
    rows = sorted(per_line.values(), key=lambda r: (-r["run_s"], -r["numpy"], -r["recorded"], _split(r["where"])))
    totals = {
        "run_s": sum(k["run_ns"] for k in kernels) * 1e-9,
        "bytes": sum(k["bytes"] for k in kernels),
        "launches": sum(k["launches"] for k in kernels),
        "compile_s": sum(k["compile_ns"] for k in kernels) * 1e-9,
        "compiles": sum(k["compiles"] for k in kernels),
        "disk": sum(k["disk_hits"] for k in kernels),
        "memory": sum(k["memory_hits"] for k in kernels),
        "recorded": sum(v[2] for v in sites.values()),
        "numpy": sum(c[3] for c in calls),
        "dropped": report.get("dropped", 0),
    }
    return {"kernels": kernels, "lines": rows, "calls": calls, "totals": totals, "sites": sites}


def _line_list(wheres):
    """'prog.py:3-5,9 other.py:2' from a list of 'file:line'."""
    by_file = {}
    for w in wheres:
        path, line = _split(w)
        by_file.setdefault(path, []).append(line)
    out = []
    for path, nums in by_file.items():
        nums = sorted(set(nums))
        runs, start = [], nums[0]
        for a, b in zip(nums, nums[1:] + [None]):
            if b != a + 1:
                runs.append(str(start) if start == a else f"{start}-{a}")
                start = b
        out.append(f"{path}:{','.join(runs)}")
    return " ".join(out)


# ---- the machine's bandwidth --------------------------------------------------


def measure_bandwidth(threads, nbytes=128 << 20, reps=3):
    """Bytes per second the machine copies with NumPy: ``np.copyto`` of
    ``nbytes`` float64 split over ``threads`` threads (NumPy lets go of the
    GIL while copying), the best of ``reps`` after one warm-up, counting
    bytes read plus written (as a kernel's bytes moved are counted).  Runs
    with capture off; uses 2 * nbytes of memory for a moment."""
    import numpy as np

    import grumpy

    threads = max(1, threads)
    with grumpy.disabled():
        src = np.ones(nbytes // 8)
        dst = np.empty_like(src)
        bounds = np.linspace(0, src.size, threads + 1).astype(np.int64)

        def copy(lo, hi):
            np.copyto(dst[lo:hi], src[lo:hi])

        best = float("inf")
        for rep in range(reps + 1):
            workers = [threading.Thread(target=copy, args=(int(lo), int(hi))) for lo, hi in zip(bounds, bounds[1:])]
            start = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            if rep:  # the first one touches the pages
                best = min(best, time.perf_counter() - start)
    return 2 * nbytes / best


# ---- the terminal report ----------------------------------------------------


def _table(header, rows):
    """Columns left-aligned to their widest cell, two spaces apart."""
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return [fmt(header)] + [fmt(r) for r in rows]


def _gbs(nbytes, seconds):
    return nbytes / _GB / seconds if seconds > 0 else 0.0


def _plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def _line_rows(data, limit=None, width=_CODE_WIDTH):
    rows = []
    total = data["totals"]["run_s"]
    for r in data["lines"][: limit or None]:
        code = _source(r["where"])
        if width and len(code) > width:
            code = code[: width - 3] + "..."
        rows.append(
            [
                f"{r['run_s']:.4f}", f"{100 * r['run_s'] / total:.0f}%" if total and r["run_s"] else "-",
                r["recorded"], " ".join(r["kernels"]) or "-", f"{r['bytes'] / _GB:.3f}",
                f"{_gbs(r['bytes'], r['run_s']):.1f}" if r["run_s"] else "-", f"{r['compile_s']:.4f}",
                _code_from(r["compiles"], r["disk"], r["memory"]), r["numpy"] or "-", r["where"], code,
            ]
        )
    return rows


_LINE_HEADER = ["time s", "time %", "ops", "kernels", "GB", "GB/s", "compile s", "code", "to NumPy", "line",
                "source"]
_KERNEL_HEADER = ["kernel", "kind", "ops", "launches", "time s", "GB", "GB/s", "% of bw", "compile s", "code",
                  "lines"]
_CALL_HEADER = ["count", "line", "call", "reason"]


def _kernel_rows(data, bandwidth):
    rows = []
    for k in data["kernels"]:
        secs = k["run_ns"] * 1e-9
        rate = _gbs(k["bytes"], secs)
        rows.append(
            [
                k["id"], k["kind"], k["ops"], k["launches"], f"{secs:.4f}", f"{k['bytes'] / _GB:.3f}",
                f"{rate:.1f}", f"{100 * rate * _GB / bandwidth:.0f}%" if bandwidth else "-",
                f"{k['compile_ns'] * 1e-9:.4f}", _code_from(k["compiles"], k["disk_hits"], k["memory_hits"]),
                _line_list(k["lines"]),
            ]
        )
    return rows


def _summary(data, bandwidth, bw_how, title):
    t = data["totals"]
    bw = f"the machine copies {bandwidth / _GB:.1f} GB/s, {bw_how}" if bandwidth else f"machine: {bw_how}"
    lines = [
        f"grumpy explain: {title}",
        f"  {_plural(t['recorded'], 'operation')} recorded, {_plural(t['numpy'], 'call')} handed to NumPy",
        f"  {_plural(len(data['kernels']), 'kernel')} launched {_plural(t['launches'], 'time')}: "
        f"{t['run_s']:.4f} s, {t['bytes'] / _GB:.3f} GB moved, {_gbs(t['bytes'], t['run_s']):.1f} GB/s "
        f"({bw})",
        f"  compile {t['compile_s']:.4f} s (code per launch: {_code_from(t['compiles'], t['disk'], t['memory'])})",
    ]
    if t["dropped"]:
        lines.append(f"  ({t['dropped']} kernel launches not recorded: too many distinct kernels)")
    return lines


def format_text(data, bandwidth, bw_how, title, max_lines=30):
    """The terminal report (a str)."""
    out = _summary(data, bandwidth, bw_how, title)
    out += ["", "per line, by kernel time (a kernel's time, bytes and compile time are shared among its lines "
                "by their operations in it; code: per launch, compiled by LLVM, loaded from the disk cache, or "
                "reused in this process; to NumPy: calls handed to NumPy, listed below):"]
    rows = _line_rows(data, max_lines)
    out += ["  " + r for r in _table(_LINE_HEADER, rows)]
    if max_lines and len(data["lines"]) > max_lines:
        out.append(f"  ... {len(data['lines']) - max_lines} more lines (--lines 0 shows all)")
    out += ["", "kernels, by time:"]
    out += ["  " + r for r in _table(_KERNEL_HEADER, _kernel_rows(data, bandwidth))] if data["kernels"] else [
        "  (none)"]
    out += ["", "calls handed to NumPy, by count:"]
    calls = [[n, w, c, r] for w, c, r, n in data["calls"]]
    out += ["  " + r for r in _table(_CALL_HEADER, calls)] if calls else ["  (none)"]
    return "\n".join(out) + "\n"


# ---- the fused DAG as a picture ----------------------------------------------


def _node_label(node, sites):
    op, dtype, shape, _inputs, output, site, axes, value, _memory = node
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    if op == "LEAF":
        return f"array in memory\n{dtype} {shape_text}"
    if op == "CONST":
        return str(value) if value is not None else f"const {dtype}"
    text = op.lower()
    if axes:
        text += f" axes {tuple(axes)}"
    text += f"\n{dtype} {shape_text}"
    if site in sites:
        text += f"\nline {sites[site][1]}"
    return text


def dag_graph(kernel, sites):
    """The fused DAG of a kernel as a graphviz.Digraph (raises ImportError
    without the graphviz package): arrays read from memory (grey; one node
    per array, however often it is read) and constants at the top, an
    edge from each value to the operation reading it, values the kernel
    writes to memory in blue, values that only live in registers white."""
    import graphviz

    g = graphviz.Digraph(kernel["id"], graph_attr={"rankdir": "TB", "fontname": "Helvetica"},
                         node_attr={"fontname": "Helvetica", "fontsize": "10"})
    g.attr(label=f"{kernel['id']}: {kernel['kind']}, {_plural(kernel['ops'], 'operation')}", labelloc="t")
    name = {}  # instruction -> graph node (two reads of one array: one node)
    arrays = {}
    for i, node in enumerate(kernel["nodes"]):
        op, output, memory = node[0], node[4], node[8]
        if op == "LEAF":
            key = (memory, node[1], node[2])
            if key in arrays:
                name[i] = arrays[key]
                continue
            arrays[key] = name[i] = f"n{i}"
            attrs = {"shape": "box", "style": "filled", "fillcolor": "#e8e8e8"}
        elif op == "CONST":
            name[i] = f"n{i}"
            attrs = {"shape": "plaintext"}
        else:
            name[i] = f"n{i}"
            attrs = {"shape": "box", "style": "rounded"}
            if output:
                attrs = {"shape": "box", "style": "rounded,filled", "fillcolor": "#cfe3ff", "penwidth": "2"}
        g.node(name[i], _node_label(node, sites), **attrs)
        for j in node[3]:
            g.edge(name[j], name[i])
    return g


def render_svgs(kernels, sites, top):
    """SVG text of the top kernels' DAGs: ([(kernel, svg), ...], None), or
    ([], why) when they cannot be drawn (no graphviz package, no dot)."""
    try:
        import graphviz
    except ImportError:
        return [], ("the graphviz Python package is not installed (pip install graphviz, or make venv)")
    out = []
    for k in kernels[:top]:
        try:
            svg = dag_graph(k, sites).pipe(format="svg", encoding="utf-8")
        except graphviz.ExecutableNotFound:
            return [], "Graphviz's dot program was not found on PATH (apt-get install graphviz, or make deps)"
        except (graphviz.CalledProcessError, OSError) as exc:
            return [], f"dot failed: {' '.join(str(exc).split())}"
        out.append((k, svg))
    return out, None


def _inline_svg(svg):
    """svg without its XML prolog, for an HTML page."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def format_html(data, bandwidth, bw_how, title, pictures, why_none, svg_names):
    """The HTML report: the same tables and the pictures (a str)."""
    esc = html.escape

    def table(header, rows):
        head = "".join(f"<th>{esc(str(h))}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    parts = [
        "<!DOCTYPE html>",
        f"<html><head><meta charset='utf-8'><title>grumpy explain: {esc(title)}</title>",
        "<style>body{font-family:sans-serif;margin:1em 2em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:13px}"
        "th{background:#f0f0f0}td:last-child{font-family:monospace}pre{background:#f7f7f7;padding:.5em}</style>",
        "</head><body>",
        f"<h1>grumpy explain</h1><pre>{esc(chr(10).join(_summary(data, bandwidth, bw_how, title)))}</pre>",
        "<h2>Per line, by kernel time</h2>",
        "<p>A kernel's time, bytes and compile time are shared among its lines by their operations in it.</p>",
        table(_LINE_HEADER, _line_rows(data)),
        "<h2>Kernels, by time</h2>",
        table(_KERNEL_HEADER, _kernel_rows(data, bandwidth)),
        "<h2>Calls handed to NumPy, by count</h2>",
        table(_CALL_HEADER, [[n, w, c, r] for w, c, r, n in data["calls"]]),
        "<h2>Fused DAGs of the top kernels</h2>",
        "<p>Grey: arrays the kernel reads from memory; blue: values it writes to memory (arrays the program "
        "holds, values later kernels read); white: values that live only in registers. Each operation shows "
        "its dtype, shape and the line that recorded it.</p>",
    ]
    if why_none:
        parts.append(f"<p class='no-pictures'>No pictures: {esc(why_none)}.</p>")
    elif not pictures:
        parts.append("<p>No kernels ran.</p>")
    for (k, svg), name in zip(pictures, svg_names):
        parts.append(f"<h3>{esc(k['id'])}: {esc(k['kind'])}, {k['ops']} operations, lines "
                     f"{esc(_line_list(k['lines']))} (<a href='{esc(name)}'>{esc(name)}</a>)</h3>")
        parts.append(_inline_svg(svg))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ---- at exit ----------------------------------------------------------------


def _report(opts, title):
    """Build and write the report (registered with atexit)."""
    try:
        from . import _grumpy
    except ImportError:
        print(f"{_PROG}: grumpy is not enabled; nothing to explain", file=sys.stderr)
        return
    data = build(_grumpy._explain_report())
    _grumpy._explain(False)
    bandwidth, how = opts["bandwidth"], "given"
    if bandwidth is not None:
        bandwidth *= _GB
    else:
        try:
            import grumpy

            threads = grumpy.stats().get("threads", 1)
            bandwidth, how = measure_bandwidth(threads), f"measured with NumPy on {_plural(threads, 'thread')}"
        except Exception as exc:  # no memory for the copy, ...: the report goes on without it
            bandwidth, how = None, f"not measured: {exc}"
    text = format_text(data, bandwidth, how, title, opts["lines"])
    sys.stdout.flush()  # the program's output first, where both go to one terminal
    if opts["output"]:
        with open(opts["output"], "w") as f:
            f.write(text)
    else:
        sys.stderr.write(text)
    if opts["html"]:
        _write_html(opts, data, bandwidth, how, title)


def _write_html(opts, data, bandwidth, how, title):
    path = opts["html"]
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    pictures, why = render_svgs(data["kernels"], data["sites"], opts["top"])
    stem = os.path.splitext(path)[0]
    names = []
    for k, svg in pictures:
        name = f"{stem}_{k['id']}.svg"
        with open(name, "w", encoding="utf-8") as f:
            f.write(svg)
        names.append(os.path.basename(name))
    with open(path, "w", encoding="utf-8") as f:
        f.write(format_html(data, bandwidth, how, title, pictures, why, names))
    written = ", ".join([path] + [os.path.join(os.path.dirname(path), n) for n in names])
    print(f"{_PROG}: wrote {written}" + (f" (no pictures: {why})" if why else ""), file=sys.stderr)


def main(argv=None):
    """Run the program named by ``argv`` (default ``sys.argv[1:]``) and
    report at exit.  Returns as grumpy.run's run_program does."""
    opts, script, module, args = parse(sys.argv[1:] if argv is None else list(argv))
    title = " ".join([script if script is not None else f"-m {module}", *args])

    def on_enabled():
        try:
            from . import _grumpy
        except ImportError:
            return  # run_program has said grumpy is not enabled
        _grumpy._explain(True)
        # registered now, so it runs after the program's own exit handlers
        atexit.register(_report, opts, title)

    return _run.run_program(script, module, args, prog=_PROG, on_enabled=on_enabled)


if __name__ == "__main__":
    sys.exit(main())
