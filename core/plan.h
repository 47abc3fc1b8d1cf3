/* core/plan.h -- the driver of the core: computing pending nodes (plan.c,
 * Algorithm 1 of the paper), flushing the DAG, the guard's resolver, and
 * the back end in use.  The top of core/'s one dependency direction:
 *
 *   base (gp.h) <- guard, cache <- dag, codegen <- jit, blas, runtime_cpu
 *     <- backend_cpu, explain <- plan
 *
 * (tools/core_deps.py checks it in `make test`).  Everything here takes
 * the core lock itself; call with the GIL held or not, never from the
 * fault handler except through the resolver.
 */
#ifndef GP_PLAN_H
#define GP_PLAN_H

#include "backend.h"
#include "dag.h"

/* plan drives: the entry points below without "_locked" in their name take
 * the core lock (gp.h) for their whole work and must be called without it;
 * the "_locked" ones, and everything dag.h declares, are for callers that
 * hold it (the planner itself, the guard's resolver, the evaluators it
 * calls, and the hooks inside their own gp_lock ... gp_unlock).  The lock
 * is never taken twice by one thread (gp_stats.lock_reentries).  */

/* gp_last_error() of a launch left to NumPy while its kernel compiles in
 * the background (GP_EDEFER): explain tells it from a plan that failed. */
#define GP_DEFER_REASON "the kernel is compiling in the background"

/* The core's only calls up into the hooks (the core never includes
 * Python.h), given once to gp_core_init.  Any may be NULL. */
typedef struct {
    /* Computes pending nodes[0..count) with NumPy, in order, in one
     * evaluation (a value two of them read is computed once, and warns
     * once), when no kernel can (it takes the GIL; called without the core
     * lock); writes each into its result memory (gp_node_store) and marks
     * it.  GP_OK, or the first error (the nodes after it are left). */
    GpStatus (*eval_with_gil)(GpNode *const *nodes, int count);
    /* The same with NumPy's own inner loops, without Python or the GIL
     * (hooks/eval_loops.c), core lock held: what the guard's resolver thread
     * uses when a kernel cannot be compiled (the faulting thread may hold
     * the GIL). */
    GpStatus (*eval_without_gil)(GpNode *n);
    /* After a kernel over nodes[0..n) (still pending, inputs intact) raised
     * the IEEE exceptions in `flags` (GP_FPE_*) that one of them watches:
     * replays the nodes with NumPy under each node's error state, which
     * gives NumPy's warnings exactly (values discarded).  stored[0..nstored)
     * are in-place outputs of the kernel whose inputs it overwrote: not
     * replayed, their values read from the memory the kernel wrote them to
     * (out_data, out_strides) where the nodes read them.  Without the core
     * lock.  0, or -1 when a warning became an exception (it stays set). */
    int (*fpe_replay)(GpNode *const *nodes, int n, GpNode *const *stored, int nstored, unsigned flags);
    /* The same for a kernel that cannot be replayed (an in-place kernel
     * that overwrote the values it read) whose one operation, node n (a
     * ufunc map whose flags are IEEE's own or NumPy's, plan.c
     * flags_are_exact), raised `flags`: NumPy's warnings for those flags,
     * "<category> encountered in <ufunc>", at n's line.  Without the core
     * lock.  0, or -1 as fpe_replay. */
    int (*fpe_direct)(GpNode *n, unsigned flags);
    /* The same for a kernel run for a fault (the guard's resolver thread:
     * no Python, perhaps no GIL to take) over nodes[0..n) (still pending,
     * inputs intact, none written in place): each node computed again
     * with NumPy's own inner loops to learn which of them NumPy would warn
     * of, those warnings queued for a thread holding the GIL
     * (hooks/eval_loops.c).  Core lock held.  0, or -1 when it could not
     * (the warnings are lost: counted in fpe_unreported). */
    int (*fpe_later)(GpNode *const *nodes, int n, unsigned flags);
    /* The warnings fpe_direct would give for node n's `flags`, from a
     * kernel run for a fault (an in-place kernel of that one operation,
     * which overwrote the values a replay would read): queued for a thread
     * holding the GIL, at n's line.  Core lock held, no Python.  (Counted
     * in fpe_unreported when the queue is full or n has no line.) */
    void (*fpe_queue)(const GpNode *n, unsigned flags);
    /* The shadow check (GRUMPY_CHECK, when gp_config.shadow_check): called
     * by gp_node_materialize without the core lock, never in the fault
     * handler.  check_begin returns NumPy's value of pending node n (an
     * opaque owned reference) or NULL when n is not sampled or cannot be
     * checked; check_end compares n's computed values with it (when
     * compare: n was computed by this call), replaces them with NumPy's on
     * a mismatch, and releases it. */
    void *(*check_begin)(GpNode *n);
    void (*check_end)(GpNode *n, void *numpy_value, int compare);
    /* Lets other threads run for a moment: the GIL let go and taken back
     * when this thread holds it.  Without the core lock.  What
     * gp_node_materialize_locked waits with for a node another thread's
     * kernel stored and is completing (GpNode.completing). */
    void (*let_others_run)(void);
} GpHostCallbacks;

/* Once per process, before anything is recorded: registers the locks'
 * fork handlers, the guard's resolver, and the hooks' callbacks (copied;
 * NULL: none, as in the C tests). */
GP_API void gp_core_init(const GpHostCallbacks *host);

/* Computes b's pending producer, if it has one, and brings a result held
 * on a device to the host (read-only).  Safe against a fault in
 * another thread computing it first: the producer is read under the core
 * lock and held while it is computed. */
/* b's pending producer computed (core lock held); its contents stay where
 * they are -- a device copy is not brought to the host (an in-place
 * write, a leaf read by the GPU's kernels). */
GP_API GpStatus gp_buffer_compute_locked(GpBuffer *b);
GP_API GpStatus gp_buffer_materialize(GpBuffer *b);
GP_API GpStatus gp_buffer_materialize_locked(GpBuffer *b);
/* Makes b writable by code grumpy does not see (NumPy's assignment, out=,
 * a writable buffer export): computes its producer, brings a device
 * result to the host, computes the pending readers of its old values,
 * drops the device copy, opens the pages.  GP_OK or an error. */
GP_API GpStatus gp_buffer_prepare_write(GpBuffer *b);
/* Computes n (and whatever it needs) into its buffer, allocating one if it
 * has none.  GP_OK or an error (then n is still pending and the caller falls
 * back to NumPy by other means). */
GP_API GpStatus gp_node_materialize(GpNode *n);
GP_API GpStatus gp_node_materialize_locked(GpNode *n);

/* Computes every pending node that has an output buffer. */
GP_API GpStatus gp_dag_flush(void);

/* gp_node_view (dag.h), computing the nodes it needs first.  New
 * reference, or NULL when the view cannot be a pending node, or should
 * not be: a further view of a producer too costly to compute once per
 * view (plan.c VIEW_RECOMPUTE_MAX).  On NULL the caller computes n and
 * reads the view as memory. */
GP_API GpNode *gp_pending_view(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides);
GP_API GpNode *gp_pending_view_locked(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides);

/* np.roll(n, shift) of pending map n as a pending node (gp_node_rolled,
 * dag.h), computing the nodes it needs first.  New reference, or NULL
 * when n is computed, or its subgraph is too costly to compute once per
 * roll or holds a transcendental (plan.c gp_pending_rolled_locked): then
 * the caller computes n and rolls its memory.  Under the core lock. */
GP_API GpNode *gp_pending_rolled_locked(GpNode *n, const int64_t *shift);

/* gp_node_decref (dag.h) for a caller without the core lock; n may be NULL. */
GP_API void gp_node_release(GpNode *n);
/* Whether computing pending node n -- or a pending node it reads -- may
 * give a warning NumPy gives under the error state each was recorded
 * with: a float operation that may raise, an integer division, remainder
 * or power (by zero: "divide by zero encountered in floor_divide"), a
 * cast from float.  1 when the subgraph is too large to look through.
 * For a value about to be dropped unread, which NumPy computed (and
 * warned of).  Under the core lock. */
GP_API int gp_node_may_warn(const GpNode *n);
/* gp_node_map (dag.h) for a caller without the core lock. */
GP_API GpNode *gp_record_map(GpOp op, GpDType t, int nin, GpNode *const *in, int nd, const int64_t *shape);

/* The evaluators' way in and out (GpHostCallbacks.eval_with_gil,
 * eval_without_gil).
 * gp_node_prepare_store gives pending n a buffer and, for an in-place write
 * that reads the old values of its own buffer, opens it (another thread may
 * then see the old values until the store).  gp_node_store writes values
 * (n's dtype, C-contiguous over n's shape) into n's result memory, staged
 * (guard.c: other threads see all of them or fault and wait), and marks n
 * computed; GP_OK also when another thread computed n meanwhile.  These
 * four are called with the core lock held; no Python. */
GP_API GpStatus gp_node_prepare_store(GpNode *n);
/* Before an evaluator reads n's pending subgraph: computes the pending
 * writers of memory its leaves read (they read the new values), other
 * than n itself (an in-place write reads its own old values:
 * gp_node_prepare_store).  n may be computed on the way.  GP_OK, or an
 * error when one of them failed. */
GP_API GpStatus gp_node_inputs_ready(GpNode *n);
GP_API GpStatus gp_node_store(GpNode *n, const char *values);
/* After gp_node_prepare_store, when no value was stored: n's buffer is
 * protected again as its state says (a reader must not see old values). */
GP_API void gp_node_abandon_store(GpNode *n);
/* Whether the pending subgraph of x reads memory of buffer b, or with b
 * NULL memory that a pending node will still write; conservatively 1 once
 * *budget visits are spent. */
GP_API int gp_node_reads_buffer(const GpNode *x, const GpBuffer *b, int *budget);
/* Copies the C-contiguous elements of src (elsize bytes each) into the
 * strided n-d array at dst (strides in bytes). */
GP_API void gp_copy_strided(char *dst, const int64_t *strides, int nd, const int64_t *shape, const char *src,
                            size_t elsize);
/* Copies the elements of materialized leaf x -- rolled when it is a
 * wrapped leaf (gp_node_leaf_rolled), read from a private copy of its
 * buffer when gp_leaf_unreadable -- into the array of x's shape at dst
 * with byte strides dst_strides.  For the hooks' evaluators; takes the
 * core lock if this thread does not hold it.  GP_OK, or GP_ENOMEM
 * (nothing copied). */
GP_API GpStatus gp_leaf_copy(const GpNode *x, char *dst, const int64_t *dst_strides);
/* Whether materialized leaf x's memory is a buffer a pending in-place
 * write made inaccessible (x holds the values from before the write: an
 * in-place chain computed in parts), which an evaluator must read
 * through gp_leaf_copy: reading it in place would fault, and resolving
 * the fault computes that write, of which x's reader is a part.  Takes the
 * core lock if this thread does not hold it. */
GP_API int gp_leaf_unreadable(const GpNode *x);
#endif
