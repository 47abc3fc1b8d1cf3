/* core/jit.h -- compiling GpPrograms to machine code with LLVM ORC LLJIT,
 * with an in-memory kernel cache keyed by the program's bytes.
 *
 * The code generator (codegen*.c, jit*.c) and LLVM live in a library of
 * their own, grumpy/_grumpy_jit<EXT_SUFFIX>, beside the extension; the
 * extension reaches them through jit_load.c, which loads that library at
 * the first call (a program that compiles no kernel never maps LLVM's
 * ~47 MiB).  The C tests link the code generator in directly. */
#ifndef GP_JIT_H
#define GP_JIT_H

#include "codegen.h"

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
/* The kernel of gp_jit_kernel_for when no compile is needed: in memory,
 * or in the disk cache (loaded now, without LLVM where the loader can);
 * else NULL, compiling nothing. */
void *gp_jit_kernel_cached(const GpProgram *p, GpTargetKind kind);

/* Starts p's kernel for a host target kind without waiting for it: 1 when
 * gp_jit_kernel_for would compile nothing (in memory, or in the disk cache
 * and loaded now); 0 when it is being compiled on the background thread
 * (queued now or earlier: a later call returns 1 once it is done); -1
 * when it cannot be (its background compile failed, the thread cannot
 * start, the process is exiting): gp_jit_kernel_for compiles it on the
 * calling thread.  Core lock held. */
int gp_jit_kernel_prefetch(const GpProgram *p, GpTargetKind kind);

/* Takes in the background compiles that finished (their kernels into the
 * table, their counts into gp_stats): grumpy.stats() calls it.  Core lock
 * held. */
void gp_jit_collect(void);
/* 1 while the background thread compiles (a relaxed read: a hint). */
int gp_jit_compiling(void);

/* gp_jit_kernel_for counting into *c (zeroed by the caller) instead of
 * gp_stats.  The code generator's table and LLJIT are serialised by the
 * library's compiler lock (jit_api.c), below the core lock: callable with
 * the core lock held or not. */
void *gp_jit_kernel_counted(const GpProgram *p, GpTargetKind kind, GpJitCounts *c);

/* Optimized IR of p as text (caller frees with free()), for tests and
 * GRUMPY_DUMP_IR; NULL on failure. */
GP_API char *gp_jit_ir(const GpProgram *p, int optimize);

/* The entry points above, as the code generator's library exports them
 * (gp_jit_api); jit_load.c calls through it. */
typedef struct {
    void *(*kernel)(const GpProgram *p);
    void *(*kernel_for)(const GpProgram *p, GpTargetKind kind);
    char *(*ptx_compile)(const GpProgram *p, const char *sm, const char *name);
    const char *(*cpu_name)(void);
    void *(*kernel_counted)(const GpProgram *p, GpTargetKind kind, GpJitCounts *c);
    /* the compiler lock (jit_api.c): every entry above takes it; held
     * across fork() so that no child inherits a compile half done */
    void (*lock)(void);
    void (*unlock)(void);
} GpJitApi;

/* The code generator's table; defined in jit_api.c (the library).  The first
 * call digests the libraries' files (objload.h's gp_kernel_library_digest),
 * as loaded. */
GP_API const GpJitApi *gp_jit_api(void);

/* Loads the code generator's library now if it is not yet (jit_load.c):
 * 0, or -1 with gp_last_error() set (then every compile fails and NumPy
 * computes).  Called at the first kernel the disk cache does not hold
 * (gp_jit_kernel_for, gp_ptx_compile), in whichever context that is, the
 * guard's fault resolver included, so a run whose kernels are all cached
 * never maps LLVM.  Core lock held or not; GIL not needed. */
int gp_jit_load(void);

/* Returns once no gp_jit_load is under way.  An atexit handler; the hooks
 * also call it at the end of Py_Finalize (Py_AtExit), before exit() runs
 * the destructors that the library's constructors registered as they ran:
 * a destructor of LLVM's globals running while later constructors still
 * use them crashed a process that exited within the load's ~20 ms (a load
 * on the fault resolver's thread can outlive the main thread's work). */
void gp_jit_wait_for_load(void);

/* Registers the fork handlers of gp_jit_load (a load under way finishes
 * before fork(), and none starts until the child exists) and an atexit
 * wait, once, outside any lock: gp_core_init calls it before the core
 * lock's and the guard's handlers, so that fork() takes the core lock
 * first (no thread holding it can start a load meanwhile). */
void gp_jit_init_fork(void);

/* Notes the extension's and the code generator library's files (device,
 * inode, size, mtime) at start-up: gp_jit_load refuses a library when
 * either changed since (rebuilt or reinstalled under a running process).
 * Ordinary context, GIL held, once at import before anything can load the
 * library; the C tests never call it. */
void gp_jit_note_files(void);

#endif
