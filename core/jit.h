/* core/jit.h -- compiling GpPrograms to machine code with LLVM ORC LLJIT,
 * with an in-memory kernel cache keyed by the program's bytes. */
#ifndef GP_JIT_H
#define GP_JIT_H

#include "codegen.h"

/* Configuration read by the core; set by the hooks from GRUMPY_* variables
 * before the first compile. */
typedef struct {
    int force_jit_failure; /* GRUMPY_DEBUG_JIT_FAIL=1: every compile fails */
    int dump_ir;           /* GRUMPY_DUMP_IR=1: print optimized IR to stderr */
    int debug_plan;        /* GRUMPY_DEBUG_PLAN=1: print each kernel's plan to stderr */
    int debug_corrupt;     /* GRUMPY_DEBUG_CORRUPT=1: every map kernel's first output element is made
                              wrong (tests of the shadow check and the fuzzer) */
} GpConfig;
GP_API extern GpConfig gp_config;

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

/* Optimized IR of p as text (caller frees with free()), for tests and
 * GRUMPY_DUMP_IR; NULL on failure. */
GP_API char *gp_jit_ir(const GpProgram *p, int optimize);

#endif
