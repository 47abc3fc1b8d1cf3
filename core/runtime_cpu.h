/* core/runtime_cpu.h -- running kernels on every CPU core.
 *
 * A small pool of worker threads (no busy waiting: they sleep on a
 * condition variable between launches) executes the tasks of one launch;
 * the calling thread works too.  The pool is rebuilt lazily in a child
 * after fork().  Thread count: gp_pool_set_threads (GRUMPY_THREADS) or the
 * CPUs in the process's affinity mask.
 */
#ifndef GP_RUNTIME_CPU_H
#define GP_RUNTIME_CPU_H

#include "codegen.h"

typedef void (*GpTaskFn)(void *ctx, int64_t task);

/* Runs fn(ctx, t) for t in [0, ntasks) on gp_pool_threads() threads, the
 * caller one of them (a count lowered after the workers started leaves the
 * others asleep: a hard limit); returns when done.
 * Not reentrant: call with the core lock held.  The IEEE exception flags
 * the tasks raise are collected (the caller's own flags are preserved). */
void gp_pool_run(GpTaskFn fn, void *ctx, int64_t ntasks);
/* Starts the pool's threads now (gp_pool_run starts them at its first
 * call): the CPU back end's prepare, in ordinary context, so that no
 * thread is created while a fault is resolved (maybe inside the signal
 * handler). */
void gp_pool_start(void);
/* GP_FPE_* raised by the tasks of every gp_pool_run since the last call;
 * clears them. */
unsigned gp_pool_take_fp_flags(void);
GP_API int gp_pool_threads(void);
/* n <= 0 means the affinity mask's CPU count. */
GP_API void gp_pool_set_threads(int n);
/* on: this thread's following launches run serially on it (a launch too
 * small to be worth waking the workers); off again after. */
void gp_pool_set_serial(int on);

/* How a map launch may be split into tasks. */
typedef enum {
    GP_SPLIT_ANY,     /* rows, or pieces of long rows */
    GP_SPLIT_COLUMNS, /* the innermost dim only, each task running every outer
                         index in order (accumulating kernels: no two threads
                         touch one output element, each sees the rows in order) */
    GP_SPLIT_ROWS     /* whole rows only (map-scan kernels carry a value along j) */
} GpSplit;

/* Runs a map kernel over the iteration space of its packed arguments args
 * (codegen.h: args[0] = nd >= 1, args[1..nd] the shape). */
void gp_run_map(GpMapKernel k, const int64_t *args, GpSplit split);

/* Runs a map-reduce kernel: the innermost dim of args is reduced, the
 * outer dims are kept; out[o] (dtype t, C order over the outer dims)
 * receives op's identity combined with the reduction of row o.  pairwise:
 * NumPy's pairwise summation order (DESIGN.md 4); order_free: the
 * combination order does not change the result (min, max, any, all,
 * integer sum and product), so rows may be split across threads.
 * Returns 0, or -1 when memory for the partials could not be had (out is
 * then unwritten). */
int gp_run_reduce(GpReduceKernel k, const int64_t *args, GpOp op, GpDType t, int pairwise, int order_free, char *out);

/* Runs an arg-reduction kernel (ARGMIN / ARGMAX over values of dtype t):
 * out[o] (int64) := index along the innermost dim of row o's first extreme
 * value (first NaN).  Rows, or one long row split in order, run on all
 * threads; ties keep the earlier index. */
void gp_run_argreduce(GpReduceKernel k, const int64_t *args, GpOp op, GpDType t, int64_t *out);

#endif
