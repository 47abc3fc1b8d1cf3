/* core/codegen_llvm.h -- the LLVM-typed entry of codegen.c, for jit.c only
 * (hooks/ and other users of codegen.h need no LLVM headers). */
#ifndef GP_CODEGEN_LLVM_H
#define GP_CODEGEN_LLVM_H

#include "codegen.h"

#include <llvm-c/Core.h>

/* The machine a module is generated for: its kind, LLVM's names of the
 * CPU and its features ("target-cpu" / "target-features" function
 * attributes).  The JIT passes the host's, the GPU back end the device's
 * ("sm_80", "+ptx80"); codegen asks nobody. */

typedef struct {
    GpTargetKind kind;
    const char *cpu;      /* e.g. "znver3", "sm_80"; "generic" when unknown */
    const char *features; /* e.g. "+avx2,+fma,..."; "" when unknown */
} GpTarget;

/* Builds the IR module of p in ctx for target t; the kernel function is
 * called `name`.  Returns a new module owned by the caller. */
LLVMModuleRef gp_codegen(const GpProgram *p, const GpTarget *t, LLVMContextRef ctx, const char *name);

/* After optimisation, for the host CPU: every scalar call of a math
 * function that the vectorized loops call through a libmvec variant
 * (codegen_cpu.c) is made a call of that same variant on a splat of its
 * argument, lane 0 taken, so that an element's value does not depend on
 * whether it fell in a vector body or a scalar remainder (position, size,
 * thread partition), and a vector call of the other width (LLVM's own
 * libmvec table offers both) is made one of that width.  features: the
 * host's ("+avx2" picks the 4-wide AVX2 variants, else the SSE 2-wide
 * ones).  Returns the number of calls rewritten. */
int gp_codegen_cpu_uniform_math(LLVMModuleRef mod, const char *features);

#endif
