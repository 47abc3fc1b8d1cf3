"""Every GRUMPY_* environment variable, checked in one place.

``VARIABLES`` is the table: name, kind, default, meaning, and how the value
is parsed.  ``validate_environment(environ)`` checks each GRUMPY_* variable
present and returns the settings in effect; :func:`grumpy.enable` calls it
before the C extension reads the variables, so a bad value is one
``ValueError`` naming the variable, the value and what is accepted.

The parsers accept what the reader of each variable understands as the
README documents it: the C extension parses integers with ``strtoll`` (base
10, leading white space and a sign allowed, nothing after the digits) and
GRUMPY_CHECK with ``strtod``; the values C would silently turn into
something else (``GRUMPY_THREADS=abc`` read as 0, ``GRUMPY_STRICT=yes``
read as 0) are refused here.

Nothing here is on the path of an array operation: it runs once, at enable.
"""

import os
import re

# C's isspace() in the "C" locale: what strtoll/strtod skip before a number
_C_SPACE = " \t\n\v\f\r"
_C_INT = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+\Z")
# strtod's decimal and hexadecimal forms, and inf/nan (refused by range)
_C_DEC = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_C_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?\Z")
_C_INF_NAN = re.compile(r"[+-]?(?:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)\Z", re.IGNORECASE)

INT64_MAX = (1 << 63) - 1
THREADS_MAX = 1024  # CPU_SETSIZE: the most CPUs sched_getaffinity reports to grumpy


class Variable:
    """One GRUMPY_* variable.

    name: the environment variable; setting: its grumpy.config() keyword
    (None: environment only); kind: "int", "float", "flag", "choice",
    "path", "text"; default: the value in effect when unset or empty (for
    "path", None: off or computed); lo, hi: an int's range; choices: the
    words a "choice" accepts; expected: the accepted values, as the error
    says them; runtime: grumpy.config() may change it after enable();
    reader: "C" (the extension, at enable) or "Python"; meaning: one line.
    """

    __slots__ = ("name", "setting", "kind", "default", "lo", "hi", "choices", "expected", "runtime", "reader",
                 "meaning")

    def __init__(self, name, kind, default, meaning, setting=None, lo=None, hi=None, choices=(), expected=None,
                 runtime=False, reader="C"):
        self.name, self.kind, self.default, self.meaning = name, kind, default, meaning
        self.setting, self.lo, self.hi, self.choices = setting, lo, hi, tuple(choices)
        self.runtime, self.reader = runtime, reader
        if expected is None:
            expected = {
                "int": f"an integer from {lo} to {hi}",
                "float": f"a number from {lo} to {hi}",
                "flag": "0 or 1",
                "choice": " or ".join(choices),
                "path": "a path",
                "text": "any text",
            }[kind]
        self.expected = expected

    def parse(self, value):
        """The Python value of environment string ``value`` (str), the
        default when it is empty.  Raises ValueError("expected ...")."""
        if value == "":
            return self.default
        if self.kind == "int":
            n = _parse_int(value, self.reader)
            if n is None or not self.lo <= n <= self.hi:
                raise ValueError(f"expected {self.expected}")
            return n
        if self.kind == "float":
            f = _parse_float(value, self.reader)
            if f is None or not self.lo <= f <= self.hi:
                raise ValueError(f"expected {self.expected}")
            return f
        if self.kind == "flag":
            if value in self.choices:  # a flag's extra words (GRUMPY_STRICT=warn)
                return value
            if value not in ("0", "1"):
                raise ValueError(f"expected {self.expected}")
            return value == "1"
        if self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"expected {self.expected}")
            return value
        return value  # path, text: any string (the reader reports a path it cannot use)


def _parse_int(value, reader):
    """int of value as strtoll (reader "C") or int() ("Python") reads all of it; None if not."""
    if reader == "C":
        return int(value.lstrip(_C_SPACE)) if _C_INT.match(value) else None
    try:
        return int(value)
    except ValueError:
        return None


def _parse_float(value, reader):
    """float of value as strtod (reader "C") or float() ("Python") reads all of it; None if not."""
    if reader == "C":
        v = value.lstrip(_C_SPACE)
        if _C_DEC.match(v) or _C_INF_NAN.match(v):
            return float(v.split("(")[0])
        if _C_HEX.match(v):
            sign = -1.0 if v[0] == "-" else 1.0
            body = v.lstrip("+-")
            return sign * float.fromhex(body if "p" in body.lower() else body + "p0")
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _default_cache_dir(environ):
    xdg, home = environ.get("XDG_CACHE_HOME", ""), environ.get("HOME", "")
    if xdg:
        return os.path.join(xdg, "grumpy")
    if home:
        return os.path.join(home, ".cache", "grumpy")
    return None


def _default_libdevice(environ):
    home = environ.get("CUDA_HOME", "")
    if home:
        return f"{home}/nvvm/libdevice/libdevice.10.bc"
    return "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"


def affinity_cpus():
    """CPUs in this process's affinity mask (int, at least 1): GRUMPY_THREADS=0."""
    try:
        return max(1, min(len(os.sched_getaffinity(0)), THREADS_MAX))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


V = Variable
VARIABLES = (
    V("GRUMPY", "flag", False, "1: enable capture at start-up through grumpy.pth", reader="Python"),
    V("GRUMPY_THREADS", "int", 0, "kernel threads, and OpenBLAS's (0: the CPUs in the affinity mask)",
      setting="threads", lo=0, hi=THREADS_MAX, expected=f"an integer from 0 (all CPUs) to {THREADS_MAX}",
      runtime=True),
    V("GRUMPY_MIN_BYTES", "int", 1 << 20, "results smaller than this (bytes) are computed by NumPy at once",
      setting="min_bytes", lo=0, hi=INT64_MAX, expected="a size in bytes, an integer from 0 to 2^63-1"),
    V("GRUMPY_MAX_FUSE", "int", 64, "bound on the depth of a pending DAG: deeper chains are computed",
      setting="max_fuse", lo=0, hi=INT64_MAX, expected="an integer from 0 to 2^63-1"),
    V("GRUMPY_CHECK", "float", 0.0, "the shadow check: share of kernels also computed by NumPy and compared",
      setting="check", lo=0.0, hi=1.0, expected="0, 1 or a fraction of kernels in (0, 1)"),
    V("GRUMPY_STRICT", "flag", False, "1: raise NotImplementedError where grumpy would hand a call to NumPy "
      "(naming the reason and the line); warn: one RuntimeWarning per line and call instead",
      setting="strict", choices=("warn",), expected="0, 1 or warn"),
    V("GRUMPY_BACKEND", "choice", "cpu", "the back end that runs fused kernels", setting="backend",
      choices=("cpu", "numpy", "gpu"), expected="cpu (LLVM kernels, the default), gpu (CUDA) or numpy"),
    V("GRUMPY_DEVICE", "choice", "auto", "where fused kernels run when GRUMPY_BACKEND is not set: auto (an "
      "NVIDIA GPU where a driver and a device answer, per kernel; else the CPU), cpu or gpu", setting="device",
      choices=("auto", "cpu", "gpu"), expected="auto (the default), cpu or gpu"),
    V("GRUMPY_GPU_MIN_BYTES", "int", 8 << 20, "GRUMPY_DEVICE=auto: a kernel none of whose operands the GPU holds "
      "runs there when it moves at least this many bytes (else on the CPU)", setting="gpu_min_bytes", lo=0,
      hi=1 << 62, expected="a size in bytes"),
    V("GRUMPY_GPU_WARMUP_MS", "int", 200, "GRUMPY_DEVICE=auto: the milliseconds a kernel's launches (or large "
      "matrix products) take on the CPU before they move to the GPU (its start-up and JIT are paid back only by "
      "work that repeats); 0: at once", setting="gpu_warmup_ms", lo=0, hi=1 << 40, expected="milliseconds"),
    V("GRUMPY_FIRST_LAUNCH_MS", "int", 0, "a launch whose kernel is neither in memory nor in the disk cache, and "
      "whose work NumPy would do in less than this many milliseconds, is computed by NumPy while the kernel "
      "compiles on a background thread (a kernel compiles in 20-80 ms; the CPU back end only); 0: every kernel "
      "compiles on the calling thread at its first launch",
      setting="first_launch_ms", lo=0, hi=1 << 40, expected="milliseconds"),
    V("GRUMPY_GPU_EMULATE", "flag", False, "1: the GPU back end runs on an emulated device (the host; tests)",
      setting="gpu_emulate"),
    V("GRUMPY_CACHE_DIR", "path", None, "on-disk cache of compiled kernels; off (or 0, or empty) disables it",
      setting="cache_dir", expected="a directory, or off"),
    V("GRUMPY_CACHE_MAX_MB", "int", 256, "bound on the kernel cache's size (MiB)", setting="cache_max_mb",
      lo=0, hi=1 << 30, expected="a size in MiB, 0 to 2^30"),
    V("GRUMPY_STATS", "flag", False, "1: print a summary of grumpy.stats() to stderr at exit",
      setting="stats", runtime=True, reader="Python"),
    V("GRUMPY_STATS_JSON", "path", None, "path: write grumpy.stats() as JSON at exit", setting="stats_json",
      runtime=True, reader="Python", expected="a file path"),
    V("GRUMPY_ADAPTIVE", "flag", True, "0: no call site's operations become NumPy's for running alone",
      setting="adaptive", runtime=True),
    V("GRUMPY_HUGEPAGES", "flag", True, "0: no transparent huge pages for grumpy's mappings",
      setting="hugepages"),
    V("GRUMPY_DEBUG_PLAN", "flag", False, "1: print each fused kernel's plan to stderr", setting="debug_plan"),
    V("GRUMPY_DUMP_IR", "flag", False, "1: print each kernel's optimized LLVM IR to stderr", setting="dump_ir"),
    V("GRUMPY_PTX_DIR", "path", None, "directory: the CPU back end also writes the PTX of each program there",
      setting="dump_ptx", expected="a directory"),
    V("GRUMPY_LIBDEVICE", "path", None, "CUDA's libdevice bitcode for PTX (default $CUDA_HOME/nvvm/libdevice/...)",
      setting="libdevice", expected="a file path"),
    V("GRUMPY_DEBUG_JIT_FAIL", "int", 0,
      "1: every compilation fails (tests the fallback); N >= 2: about one program in N, the same ones every run",
      setting="debug_jit_fail", lo=0, hi=2**31 - 1, expected="an integer from 0 (none) to 2^31-1"),
    V("GRUMPY_DEBUG_EVAL_LOOPS", "flag", False,
      "1: after a failed compile, NumPy's inner loops compute without the GIL, as for a fault (tests)",
      setting="debug_eval_loops"),
    V("GRUMPY_DEBUG_CORRUPT", "flag", False, "1: every map kernel's first output element is made wrong (tests)",
      setting="debug_corrupt"),
    V("GRUMPY_DEBUG_FAIL", "int", 0, "fault injection: N makes the N-th failable step fail (0: none)",
      setting="debug_fail", lo=0, hi=INT64_MAX, expected="an integer from 0 (no fault) to 2^63-1"),
    V("GRUMPY_HOME", "path", None, "where libgrumpy_preload.so finds the grumpy package", expected="a directory"),
    V("GRUMPY_AB_OUTDIR", "path", None, "set by the A/B harness: where a benchmark saves arrays to compare",
      reader="Python", expected="a directory"),
    V("GRUMPY_FUZZ_PERTURB", "flag", False, "set by tools/fuzz.py in its children (tests the fuzzer)",
      reader="Python"),
    V("GRUMPY_FUZZ_WARNINGS", "flag", False,
      "set by tools/fuzz.py --warnings in its children: programs run under NumPy's default error state, "
      "their warnings recorded", reader="Python"),
    V("GRUMPY_FUZZ_PY_THREADS", "int", 1,
      "set by tools/fuzz.py --py-threads K in its grumpy children: K programs run at a time, each in its own "
      "Python thread", lo=1, hi=256, reader="Python", expected="an integer from 1 to 256"),
    V("GRUMPY_FUZZ_SECONDS", "float", 75.0, "time budget of tests/test_fuzz.py's fuzzer run (seconds)",
      lo=0.0, hi=float("inf"), reader="Python", expected="a number of seconds >= 0"),
    V("GRUMPY_BUILD_JOBS", "int", 0, "parallel compiler jobs of setup.py (0: all CPUs)", lo=0, hi=4096,
      reader="Python", expected="an integer from 0 (all CPUs) to 4096"),
)
del V

BY_NAME = {v.name: v for v in VARIABLES}
BY_SETTING = {v.setting: v for v in VARIABLES if v.setting}


def _show(value):
    """value as an error message shows it: as is, or quoted when blanks or
    unprintable characters would hide what it is."""
    if value and value.isprintable() and not any(c.isspace() for c in value):
        return value
    return repr(value)


def _unknown(name, value):
    import difflib

    # compared without the shared prefix, which would make every name close
    tails = {known[len("GRUMPY_"):]: known for known in BY_NAME if known != "GRUMPY"}
    close = difflib.get_close_matches(name[len("GRUMPY_"):], tails, n=1, cutoff=0.6)
    hint = f"did you mean {tails[close[0]]}?" if close else "known variables: " + ", ".join(BY_NAME)
    return f"{name}={_show(value)}: not a grumpy variable; {hint}"


def validate_environment(environ):
    """Checks every GRUMPY_* variable in ``environ`` (a mapping of str to str,
    e.g. ``os.environ``) and returns the settings in effect.

    Returns a dict {setting: value} for every variable grumpy.config() knows
    (threads, min_bytes, check, ...), defaults filled in: ints as int,
    GRUMPY_CHECK as a float in [0, 1], flags as bool, back end as str, paths
    as str or None when unset.  GRUMPY_THREADS=0 (or unset) is reported as
    the number of CPUs it means; GRUMPY_CACHE_DIR as the directory, or "off".

    Raises ValueError with one line naming each bad variable, its value and
    the accepted values (``GRUMPY_THREADS=abc: expected an integer from 0
    (all CPUs) to 1024``); a GRUMPY_* name that is not grumpy's is an error
    naming the closest known one (``GRUMPY_THREAD=4: not a grumpy variable;
    did you mean GRUMPY_THREADS?``).
    """
    problems, values = [], {}
    for name in sorted(k for k in environ if k.startswith("GRUMPY")):
        value = environ[name]
        var = BY_NAME.get(name)
        if var is None:
            if name.startswith("GRUMPY_"):
                problems.append(_unknown(name, value))
            continue  # GRUMPYFOO and the like are not ours
        try:
            values[name] = var.parse(value)
        except ValueError as exc:
            problems.append(f"{name}={_show(value)}: {exc}")
    if problems:
        raise ValueError("; ".join(problems))
    settings = {}
    for var in VARIABLES:
        if var.setting:
            settings[var.setting] = values.get(var.name, var.default)
    if not settings["threads"]:
        settings["threads"] = affinity_cpus()
    cache_dir = environ.get("GRUMPY_CACHE_DIR")
    if cache_dir is None:
        settings["cache_dir"] = _default_cache_dir(environ) or "off"
    elif cache_dir in ("", "0", "off"):
        settings["cache_dir"] = "off"
    if not settings["libdevice"]:
        settings["libdevice"] = _default_libdevice(environ)
    return settings


def to_environment(setting, value):
    """The environment string for grumpy.config(setting=value), or None for
    value None (the variable removed: its default).

    Raises ValueError("grumpy.config(setting=value): expected ...") for a
    value of the wrong type or out of range; the string is then checked by
    the same parser as the environment's.
    """
    var = BY_SETTING[setting]
    if value is None:
        return None

    def bad():
        return ValueError(f"grumpy.config({setting}={value!r}): expected {var.expected}")

    if var.kind == "flag":
        if isinstance(value, str) and value in var.choices:
            text = value
        elif isinstance(value, bool) or (isinstance(value, int) and value in (0, 1)):
            text = "1" if value else "0"
        else:
            raise bad()
    elif var.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
        text = str(value)
    elif var.kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad()
        text = repr(float(value))
    elif var.kind == "choice":
        if not isinstance(value, str):
            raise bad()
        text = value
    else:  # path
        if not isinstance(value, (str, os.PathLike)):
            raise bad()
        text = os.fspath(value)
        if not isinstance(text, str) or text == "" or "\0" in text:
            raise bad()
    try:
        var.parse(text)
    except ValueError:
        raise bad() from None
    return text
