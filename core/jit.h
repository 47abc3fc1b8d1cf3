/* core/jit.h -- compiling GpPrograms to machine code with LLVM ORC LLJIT,
 * with an in-memory kernel cache keyed by the program's bytes. */
#ifndef GP_JIT_H
#define GP_JIT_H

#include "codegen.h"

/* Hex SHA-256 of the library holding the code generator, computed once
 * (the first call reads the file); NULL when it cannot be read (then no
 * disk cache).  Part of every disk-cache key. */
GP_API const char *gp_jit_library_digest(void);

/* Host CPU name and feature string (owned by jit.c, valid for the process). */
const char *gp_jit_cpu_name(void);
const char *gp_jit_cpu_features(void);

/* Address of the compiled kernel for p (a GpMapKernel or GpReduceKernel),
 * compiling on a cache miss; NULL on failure with gp_last_error() set.
 * Call with the core lock held. */
void *gp_jit_kernel(const GpProgram *p);
/* The same for a host target kind: GP_TARGET_CPU (the above) or
 * GP_TARGET_HOST_GRID (the GPU's entries run on the host: the emulated
 * device of runtime_gpu.c). */
void *gp_jit_kernel_for(const GpProgram *p, GpTargetKind kind);

/* Optimized IR of p as text (caller frees with free()), for tests and
 * GRUMPY_DUMP_IR; NULL on failure. */
GP_API char *gp_jit_ir(const GpProgram *p, int optimize);

#endif
