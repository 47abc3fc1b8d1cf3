"""IPython / Jupyter extension: grumpy's capture in a notebook.

Use
    ``%load_ext grumpy`` turns capture on (:func:`grumpy.enable`) and prints
    one line saying so, with the number of kernel threads.  Load it before
    the notebook creates its arrays: arrays made earlier stay plain NumPy
    arrays (a note says so when NumPy was already imported).

    ``%%grumpy`` at the top of a cell runs that cell with capture on (enabling
    it first if it is not: :func:`register_magics` registers the magic alone,
    e.g. from an IPython start-up file) and then prints what the cell
    did: the difference of :func:`grumpy.stats` before and after it --
    operations captured, kernels compiled and launched, seconds compiling and
    running kernels, and calls handed to NumPy by name.  Pending arrays are
    computed (:func:`grumpy.flush`) at the end of the cell, so the work the
    cell asked for is counted in it.  The table is printed even when the cell
    raises, and the cell's exception then propagates as without the magic;
    the value of a final expression is the cell's output, as without it
    (top-level ``await`` is not supported in a ``%%grumpy`` cell).

Errors
    ``%load_ext grumpy`` raises ImportError when grumpy's C extension is not
    built (IPython shows it); ``%%grumpy`` then does the same.  Capture cannot
    be turned off again in a running kernel: restart it to compare with plain
    NumPy.
"""

import ast
import sys

import grumpy

_ROWS = [
    # (label, stats key, format)
    ("operations captured", "ops_captured", "{:d}"),
    ("kernels compiled", "kernels_compiled", "{:d}"),
    ("kernels launched", "kernels_launched", "{:d}"),
    ("compile seconds", "compile_seconds", "{:.3f}"),
    ("run seconds", "run_seconds", "{:.3f}"),
]


def _enable():
    """Turn capture on; returns the line to print (str)."""
    numpy_before = "numpy" in sys.modules and not grumpy._state["enabled"]
    grumpy.enable()
    line = f"grumpy: capture on, {grumpy.stats().get('threads', '?')} threads"
    if numpy_before:
        line += " (NumPy was imported before: arrays made before now stay plain NumPy arrays)"
    return line


def stats_delta(before, after):
    """Counters of ``after`` minus ``before`` (dicts from :func:`grumpy.stats`)
    for the table's rows, plus ``fallbacks``: {name: calls} that grew."""
    delta = {key: after.get(key, 0) - before.get(key, 0) for _, key, _ in _ROWS}
    old = before.get("fallbacks") or {}
    delta["fallbacks"] = {
        name: count - old.get(name, 0)
        for name, count in (after.get("fallbacks") or {}).items()
        if count > old.get(name, 0)
    }
    if after.get("checks", 0):
        delta["check_mismatches"] = after.get("check_mismatches", 0) - before.get("check_mismatches", 0)
    return delta


def format_table(delta):
    """The table printed after a ``%%grumpy`` cell (str, lines joined by
    newlines) for a dict from :func:`stats_delta`."""
    lines = ["grumpy: this cell"]
    rows = [(label, fmt.format(delta[key])) for label, key, fmt in _ROWS]
    fallbacks = grumpy._ranked(delta["fallbacks"])
    rows.append(("fallbacks", ", ".join(f"{name} {n}" for name, n in fallbacks) or "0"))
    if "check_mismatches" in delta:
        rows.append(("check mismatches", str(delta["check_mismatches"])))
    width = max(len(label) for label, _ in rows)
    lines += [f"  {label:<{width}}  {value}" for label, value in rows]
    return "\n".join(lines)


def _run(ipython, cell):
    """Run ``cell`` (str) in the user's namespace of ``ipython`` as IPython
    would (its magics and input transformations applied); returns the value
    of a final expression (IPython displays it) or None.  The cell's
    exceptions propagate, so the cell fails as it would without %%grumpy."""
    source = ipython.transform_cell(cell)
    # run_cell has already counted the cell that holds this magic
    filename = ipython.compile.cache(source, max(ipython.execution_count - 1, 0), raw_code=cell)
    tree = ipython.transform_ast(ipython.compile.ast_parse(source, filename=filename))
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    ns = ipython.user_ns
    exec(ipython.compile(tree, filename, "exec"), ns)
    if last is not None:
        return eval(ipython.compile(last, filename, "eval"), ns)
    return None


def register_magics(ipython):
    """Register the ``%%grumpy`` cell magic on ``ipython`` (an
    ``InteractiveShell``) without turning capture on: the first ``%%grumpy``
    cell does that (for an IPython start-up file that should leave capture off
    until a cell asks for it)."""

    def grumpy_cell(line, cell):
        """%%grumpy: run the cell with grumpy's capture on (enabled first if
        it is not), then print what the cell did: operations captured,
        kernels compiled / launched, compile / run seconds, fallbacks."""
        if not grumpy._state["enabled"]:
            print(_enable())
        before = grumpy.stats()
        try:
            return _run(ipython, cell)
        finally:
            try:
                grumpy.flush()
            except Exception:  # the error belongs to whoever reads the array
                pass
            print(format_table(stats_delta(before, grumpy.stats())))

    ipython.register_magic_function(grumpy_cell, magic_kind="cell", magic_name="grumpy")


def load_ipython_extension(ipython):
    """``%load_ext grumpy``: capture on, and the ``%%grumpy`` cell magic.

    ``ipython``: the running ``InteractiveShell``.  Raises ImportError when the
    C extension is missing."""
    print(_enable())
    register_magics(ipython)
