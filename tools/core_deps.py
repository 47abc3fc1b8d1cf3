"""Checks core/'s one dependency direction (issue "one direction through the
core"): which file calls or reads which, from the symbols each object file
defines and uses (``nm``), and the headers each source includes.

    python tools/core_deps.py [build/core]

The layers, lowest first; a file may use only files of lower layers:

    base                      types, errors, stats, clock, op tables, lock
    guard, cache              page-guarded buffers; the on-disk kernel cache
    dag, program              the DAG as data; a fused program (codegen.h) without LLVM
    codegen                   target-independent IR of a program
    codegen_cpu, codegen_nvptx  the targets (entry, math, IEEE flags)
    codegen_rows              row functions per kernel kind; gp_codegen
    jit, jit_nvptx, blas, runtime_cpu  compile for the host / PTX; OpenBLAS;
                              the thread pool
    runtime_gpu               the CUDA driver and cuBLAS, or the emulated device
                              (whose products are OpenBLAS's)
    jit_api, jit_load         the code generator library's table; the extension's
                              forwarders to it, which load that library
    backend                   backend.h, the interface of the back ends
    backend_cpu, explain      the CPU back end; per-kernel records for python -m grumpy.explain
    backend_gpu               the GPU back end (runtime_gpu; GRUMPY_DEVICE=auto places small
                              kernels on the CPU back end)
    plan                      drives: materialize, flush, the guard's resolver

Prints the edges (file -> file: symbols) and exits 1 on an edge that goes
up or sideways, or an include of a higher layer's header.  Callbacks the
upper layers register (the guard's resolver, the hooks' evaluator) are
function pointers a lower layer defines and calls: they are not edges.
"""

import collections
import glob
import os
import re
import subprocess
import sys

LAYERS = [
    ["base"],
    ["guard", "cache"],
    ["dag", "program"],  # program: codegen.h's functions that need no LLVM
    ["objload"],  # the disk cache's key and its objects loaded without LLVM
    ["codegen"],
    ["codegen_cpu", "codegen_nvptx"],
    ["codegen_rows"],
    ["jit", "jit_nvptx", "blas", "runtime_cpu"],
    ["runtime_gpu"],  # the emulated device's products are OpenBLAS's (blas)
    ["jit_api", "jit_load"],  # the code generator library's table; the extension's forwarders to it
    ["backend"],  # backend.h: the interface the back ends implement
    ["backend_cpu", "explain"],  # explain: per-kernel records (grumpy.explain)
    ["backend_gpu"],  # automatic placement runs small kernels on the CPU back end
    ["plan"],
]
LAYER = {f: i for i, files in enumerate(LAYERS) for f in files}
# headers: which file's layer they belong to
HEADER = {"gp.h": "base", "ops.def": "base", "codegen.h": "program", "codegen_llvm.h": "codegen", "codegen_ir.h": "codegen", "backend.h": "backend", "runtime_gpu.h": "runtime_gpu"}


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRC":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def main(argv):
    objdir = argv[1] if len(argv) > 1 else "build/core"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    objs = sorted(glob.glob(os.path.join(objdir, "*.o")))
    if not objs:
        sys.exit(f"core_deps: no object files in {objdir} (run make build-objects)")
    defs, uses = {}, {}
    for o in objs:
        f = os.path.basename(o)[:-2]
        d, u = symbols(o)
        uses[f] = u
        for s in d:
            # jit_load's forwarders carry the code generator's names: a
            # call binds to the code generator (the extension loads it)
            if s not in defs or defs[s] == "jit_load":
                defs[s] = f
    bad = []
    unknown = sorted(f for f in uses if f not in LAYER)
    if unknown:
        bad.append(f"files in no layer (add them to LAYERS): {', '.join(unknown)}")
    edges = collections.defaultdict(set)
    for f, used in uses.items():
        for s in used:
            g = defs.get(s)
            if g and g != f:
                edges[(f, g)].add(s)
    for (f, g), syms in sorted(edges.items()):
        ok = f in LAYER and g in LAYER and LAYER[g] < LAYER[f]
        print(f"{'  ' if ok else '!!'} {f} -> {g}: {', '.join(sorted(syms))}")
        if not ok:
            bad.append(f"{f} uses {g} ({', '.join(sorted(syms))})")
    for src in sorted(glob.glob(os.path.join(root, "core", "*.c")) + glob.glob(os.path.join(root, "core", "*.h"))):
        name = os.path.basename(src)
        f = HEADER.get(name, name[:-2])
        with open(src) as fh:
            for inc in re.findall(r'^#include "([^"]+)"', fh.read(), re.M):
                g = HEADER.get(inc, inc[:-2] if inc.endswith(".h") else inc)
                if g != f and f in LAYER and g in LAYER and LAYER[g] >= LAYER[f]:
                    bad.append(f"core/{name} includes {inc} (layer {LAYER[g]} >= {LAYER[f]})")
    if bad:
        print("\ncore/ dependency direction broken:\n  " + "\n  ".join(bad))
        return 1
    print(f"\ncore/: {len(uses)} files, {len(edges)} edges, all downward")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
