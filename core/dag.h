/* core/dag.h -- the DAG of recorded array operations (paper section 2).
 *
 * A node is one array value: a leaf (memory that exists), a constant, or a
 * pending map / reduce over other nodes.  Shape and dtype are fixed when the
 * node is recorded.  A pending node may own an output buffer (the buffer of
 * the grumpy.ndarray the user holds); one without a buffer is an
 * intermediate that is only ever computed inside a fused kernel.  Once
 * computed a node is "materialized": it releases its inputs and is a leaf.
 *
 * Reference counts: the user's array holds one reference, every pending
 * consumer holds one per input edge.
 *
 * The DAG is data: no function here computes anything or takes a lock.
 * Every function that reads or changes a pending node, a buffer's
 * producer/readers or the pending list must be called with the core lock
 * held (gp_lock, gp.h); the constructors of leaves and constants and
 * gp_node_incref (atomic) need not be.  plan.h's entry points take it.
 */
#ifndef GP_DAG_H
#define GP_DAG_H

#include "gp.h"
#include "guard.h"

typedef struct GpNode {
    int refcnt;
    GpOp op;
    GpDType dtype; /* element type of the result */
    int nd;
    int64_t shape[GP_MAXDIMS]; /* elements per dim */
    int nin;
    struct GpNode *in[3];            /* owned while pending; NULL once materialized */
    int materialized;                /* LEAF and CONST are born materialized */
    GpBuffer *buf;                   /* owned: result memory (pending: may be NULL) */
    char *data;                      /* borrowed from buf: first element when materialized */
    int64_t strides[GP_MAXDIMS];     /* bytes, when materialized */
    GpScalar value;                  /* CONST: the value, in dtype */
    uint64_t reduce_mask;            /* REDUCE: bit d set = input axis d reduced */
    int keepdims;                    /* REDUCE: reduced axes kept with length 1 */
    int nusers;                      /* pending consumer edges */
    int64_t weight;                  /* depth of the pending subgraph, for the DAG bound */
    struct GpNode *prev, *next;      /* list of pending nodes */
    int out_view;                    /* result goes to a view of buf (an in-place op): */
    char *out_data;                  /*   its first element, borrowed from buf */
    int64_t out_strides[GP_MAXDIMS]; /* bytes */
    unsigned errstate;               /* GP_FPE_* categories set to "warn" when recorded */
    int product_dot;                 /* a MATMUL recorded for np.dot (dot, inner, tensordot,
                                      ndarray.dot): NumPy replays it with np.dot, whose
                                      warnings read "... encountered in dot" */
    int evaluated;                   /* its values were computed inside a kernel (fused, perhaps
                                      never stored) and its IEEE flags reported */
    int completing;                  /* stored by a kernel whose flags complete() is reporting
                                      with the core lock released: not yet marked materialized,
                                      so not to be computed again, fused, nor stripped of its
                                      output (other threads wait: plan.c wait_for_completion) */
    uint64_t serial;                 /* the operation's number (node_new, under the core lock);
                                      a view's copy of a pending producer (gp_node_view) keeps
                                      its original's: NumPy's warnings for one operation are
                                      given once however often its values are computed
                                      (hooks/evaluate.c) */
    int output_deferred;             /* > 0: its array is a temporary being reduced ((a*b).sum():
                                      hooks/array.c reduce_method); a reduction that fuses it
                                      does not write it, and it stays pending (computed again
                                      if its memory is read after all).  Under the core lock */
    int cast_for_reduce;             /* a CAST the hooks made for a reduction's dtype= (same
                                      serial): NumPy casts inside the reduction and words its
                                      warnings "... encountered in reduce" */
    int viewed;                      /* a view of it was recorded as its own expression
                                      (gp_node_view), or it was copied into a roll's
                                      (gp_node_rolled): read there, with its warnings */
    struct GpNode *replay_in;        /* a reduction rewritten as a map (plan.c): its input, */
    GpOp replay_op;                  /*   op, axes and keepdims, so that a warning replay is */
    uint64_t replay_mask;            /*   NumPy's reduction ("... encountered in reduce") */
    int replay_keepdims;
    int has_perm;                /* own buffer in the dim order perm (NumPy's order='K') */
    int8_t perm[GP_MAXDIMS];     /*   dims from slowest to fastest varying in memory */
    int has_in_order;            /* REDUCE: its input's dims in the order NumPy's iterator */
    int8_t in_order[GP_MAXDIMS]; /*   visits them, slowest first (gp_node_set_reduce_order) */
    int reduced_run;             /* REDUCE: NumPy reduces its input's reduced dims as one run of
                                    memory in their logical order (gp_node_set_reduce_order) */
    uint64_t mark;               /* plan.c: traversal epoch */
    uint64_t set_mark;           /* plan.c: epoch of the subgraph holding it */
    int site;                    /* the hooks' call-site index of its recording (gp_sites), or 0 */
    int where;                   /* the hooks' site index of the innermost Python frame that recorded it
                                (gp_record_where then): where NumPy would give its warnings, or 0 */
    int line;                    /* explain: the hooks' site index of the user's line that recorded it
                                (gp_record_line then), or 0 */
    int64_t *wrap;               /* LEAF of np.roll (owned, nd entries, or NULL): element i along dim d reads
                      the memory of element (i + wrap[d]) mod shape[d], 0 <= wrap[d] < shape[d] */
} GpNode;

/* The error state nodes are recorded under (GP_FPE_* mask of "warn"
 * categories); the hooks set it before recording (GIL held). */
GP_API extern unsigned gp_record_errstate;
/* The hooks' site index of the Python frame recording nodes now (set with
 * gp_record_errstate, GIL held; 0: none).  gp_node_map copies it into
 * GpNode.where; a view's node takes the where of the node it views. */
GP_API extern int gp_record_where;
/* The user's line recording nodes on this thread now, as a site index of
 * the hooks (hooks/explain.c sets it around a capture while explain is on;
 * 0 otherwise).  gp_node_map copies it into GpNode.line; a view's node
 * takes the line of the node it views. */
extern _Thread_local int gp_record_line;
/* Gives a pending node without a buffer a core-owned C-contiguous one. */
GpStatus gp_node_ensure_buffer(GpNode *n);

/* Number of elements of a node. */
GP_API int64_t gp_node_size(const GpNode *n);
/* Whether pending node n is a held intermediate: its values, computed
 * inside another node's evaluation, belong in an array of its own (the
 * user's, which it owns) that is not yet written -- not computed, not an
 * in-place write into another's memory, not a temporary being reduced.
 * An evaluator that computed n's values for a root other than n stores
 * them there (hooks/evaluate.c, hooks/eval_loops.c).  Core lock held. */
GP_API int gp_node_is_held(const GpNode *n);

/* New leaf over existing memory: data/strides describe the array, buf (may
 * be NULL) is the buffer holding it and is increfed.  Returns a new
 * reference or NULL (out of memory). */
GP_API GpNode *gp_node_leaf(GpDType t, int nd, const int64_t *shape, const int64_t *strides, char *data, GpBuffer *buf);
/* A leaf reading materialized leaf x's memory rolled as np.roll(x, shift)
 * does along each dim: element i along dim d is x's element
 * (i - shift[d]) mod shape[d] (shift in elements, any sign; nd entries).
 * Wrapped leaves are read only by map kernels (plan.c splits the index
 * space into boxes where each reads its memory without crossing the wrap)
 * and the hooks' evaluators; views of them are not pushed down.  New
 * reference, or NULL (out of memory, or x not a materialized array). */
GP_API GpNode *gp_node_leaf_rolled(GpNode *x, const int64_t *shift);
/* Whether pending node n reads a wrapped leaf directly. */
GP_API int gp_node_reads_wrapped(const GpNode *n);

/* The boxes of an nd-dim index space in which every wrapped operand reads
 * its memory in one piece (np.roll, paper section 2's index maps made
 * piecewise affine): along dim d the space is cut at shape[d] - wrap[d]
 * of every operand wrapped there.  Boxes are visited in C order. */
#define GP_BOX_MAXCUTS GP_MAXOPERANDS /* distinct cuts along one dim: one per operand of a kernel */
typedef struct {
    int nd;
    int ncut[GP_MAXDIMS];                        /* inner cuts along d */
    int64_t cut[GP_MAXDIMS][GP_BOX_MAXCUTS + 2]; /* 0 < cuts ... < shape[d], sorted, with both ends */
    int idx[GP_MAXDIMS];                         /* segment of the next box along each dim */
    int done;
} GpBoxes;
GP_API void gp_boxes_init(GpBoxes *b, int nd, const int64_t *shape);
/* Adds the cuts of an operand with element wraps wrap[0..nd) (0 <= wrap[d]
 * < shape[d]).  0, or -1 when a dim would have more than GP_BOX_MAXCUTS. */
GP_API int gp_boxes_add_wrap(GpBoxes *b, const int64_t *wrap);
/* The next box: its first index and length along each dim.  0 when every
 * box has been visited (an empty space has none). */
GP_API int gp_boxes_next(GpBoxes *b, int64_t *start, int64_t *len);

/* New constant node (0-d, broadcasts).  New reference or NULL. */
GP_API GpNode *gp_node_const(GpDType t, GpScalar v);
/* New pending map node of op over in[0..nin) (borrowed), result dtype t and
 * the broadcast shape given.  New reference or NULL. */
GP_API GpNode *gp_node_map(GpOp op, GpDType t, int nin, GpNode *const *in, int nd, const int64_t *shape);
/* New pending reduction of `in` over the axes in mask.  Result dtype t must
 * equal in->dtype (cast first), except for ARGMIN / ARGMAX (t is INT64 and
 * mask one axis, or all axes for the flat index).  New reference or NULL. */
GP_API GpNode *gp_node_reduce(GpOp op, GpDType t, GpNode *in, uint64_t mask, int keepdims);
/* NumPy's best-axis-ordering rule (its nditer's): an insertion sort of nd
 * iteration dims, fastest first, by the absolute strides st[k][d] (bytes)
 * of nop operands, where an operand that disagrees keeps C order and one
 * without a stride (0) on both dims does not vote.  perm: slowest dim
 * first.  Returns 0 when that is C order. */
GP_API int gp_best_axis_order(int nd, int nop, const int64_t (*st)[GP_MAXDIMS], int *perm);
/* The insertion sort of NumPy's two stride-sorting rules: nd dims of nop
 * operands by |st[k][d]| (bytes), an operand voting on a pair of dims when
 * vote[k][] is non-zero on both, one that disagrees with an earlier vote
 * keeping the order so far.  fastest_first: the nditer's (from C order
 * reversed, fastest first: gp_best_axis_order with vote = st); else
 * PyArray_CreateMultiSortedStridePerm's (from C order, slowest first, a
 * dim voting where it is longer than 1: np.concatenate's layout).  perm:
 * slowest dim first either way.  Returns 0 when that is C order. */
GP_API int gp_vote_axis_order(int nd, int nop, const int64_t (*st)[GP_MAXDIMS], const int64_t (*vote)[GP_MAXDIMS],
                              int fastest_first, int *perm);

/* The order NumPy's iterator visits one array's dims in (nd dims of shape,
 * strides in bytes) when it is the only operand with strides (a
 * reduction's input: its result is not allocated yet):
 * gp_best_axis_order, a broadcast (stride 0) dim not voting; order[] gets
 * them slowest first, the dims of length 1 first (the iterator drops
 * them).  Returns how many dims have length 1. */
GP_API int gp_iteration_order(int nd, const int64_t *shape, const int64_t *strides, int *order);

/* Records on the reduction r the order in which NumPy's reduction visits
 * the dims of its input, whose array has byte strides in_strides (one per
 * input dim): NumPy's iterator sorts the dims by the input's |stride|
 * (gp_iteration_order: the result, not yet allocated, has no vote), so a
 * float sum over a transposed array (X.T.sum(axis=1) of a C-ordered X,
 * np.cov(X, rowvar=False)'s mean) accumulates rows in order where a
 * contiguous one is summed pairwise.  Dims of length 1 do not count; a
 * broadcast dim (stride 0) does not vote.  Sets has_in_order when the order is not the logical one,
 * and reduced_run when the reduced dims (longer than 1) are the innermost
 * in that order, in their logical order, each stride the next one's
 * times its length: NumPy's iterator joins them into one run, summed
 * pairwise as one (so does a kernel over a C-ordered copy).  Also lays
 * out r's result as NumPy allocates it, in its iterator's order (perm;
 * not an arg-reduction's, which NumPy makes C-ordered).  Core lock held. */
GP_API void gp_node_set_reduce_order(GpNode *r, const int64_t *in_strides);
/* Splits the pending reduction r so that its input's dim `inner` is
 * reduced first: r then reads a new reduction of its old input over
 * `inner` alone (returned, borrowed: r holds it), with keepdims, so that
 * r's axes, shape and order stay as they were (`inner` now of length 1).
 * The new node is the same operation (op, dtype, error state, line,
 * where=, serial: its warnings are r's, given once).  NULL when out of
 * memory (r unchanged).  Core lock held. */
GpNode *gp_node_reduce_inner_first(GpNode *r, int inner);

/* New pending inclusive scan (CUMSUM / CUMPROD) of `in` along axis; the
 * result has in's shape and dtype t == in->dtype (cast first).  The axis is
 * kept as reduce_mask = 1 << axis.  New reference or NULL. */
GP_API GpNode *gp_node_scan(GpOp op, GpDType t, GpNode *in, int axis);

/* A view of pending map node n's C-contiguous output -- the array at byte
 * offset `offset` from its first element with shape[0..nd) and byte
 * strides[] -- as a pending node of that shape that computes the viewed
 * elements only: the view's index map is pushed down through n's map
 * subgraph into its leaves' strides (slicing with any step, transposes,
 * new and broadcast axes, reshapes that split a dim).  New reference, or
 * NULL when the view crosses dims of n (a ravel of a non-trivial array,
 * overlapping strides) or the subgraph is too large: then the caller
 * computes n and reads the view as memory.  The DAG computes nothing:
 * when a pending input of another shape (a broadcast operand, computed
 * once rather than per copy) or a non-map node must be computed first,
 * NULL is returned with *need set to it (a new reference); plan.c's
 * gp_pending_view computes it and asks again. */
GpNode *gp_node_view(GpNode *n, int64_t offset, int nd, const int64_t *shape, const int64_t *strides, GpNode **need);

/* np.roll(n, shift) of pending map n (shift: per dim, NumPy's sign) as a
 * copy of n's map subgraph whose computed leaves are read rolled
 * (gp_node_leaf_rolled): a roll commutes with an element-wise map over
 * operands of n's shape, so the copy computes n's elements rolled, each
 * as n would.  New reference, or NULL: when a subgraph node has an
 * operand of another shape that is computed (not rolled here) or the
 * subgraph is too large (the caller computes n and rolls its memory), or
 * with *need set (a new reference) to a pending broadcast operand or
 * non-map node to compute first, as gp_node_view. */
GpNode *gp_node_rolled(GpNode *n, const int64_t *shift, GpNode **need);

/* Turns pending node n into the map op over in[0..nin) (borrowed; n's shape
 * and dtype unchanged), replacing its inputs: a plan rewrite that keeps
 * n's identity (its array, buffer and users).  A reduction keeps its
 * input as replay_in (with its op, axes, keepdims) until computed. */
void gp_node_rewrite_as_map(GpNode *n, GpOp op, int nin, GpNode *const *in);

/* Gives a pending node its output buffer, C-contiguous for its shape
 * (increfs buf; the buffer becomes PROT_NONE until computed). */
GP_API void gp_node_set_output(GpNode *n, GpBuffer *buf);
/* Makes pending map node n compute into existing memory: the view at data
 * with strides (bytes) inside buf, which must hold computed values (on the
 * host or in a device copy) and have no pending readers (the caller
 * flushes them).  buf is increfed and gets n as its producer: the in-place
 * write is lazy.  Whoever computes n writes the copy it keeps: a device
 * launch the device copy, a host kernel the host copy (plan.c brings a
 * device-only buffer to the host first and drops its device copy). */
GP_API void gp_node_set_output_view(GpNode *n, GpBuffer *buf, char *data, const int64_t *strides);
/* Pending map node n takes over the in-place write of buf's pending
 * writer w (gp_node_set_output_view; w has no users but n): n writes the
 * same view, w goes on only as n's intermediate, so `a += x; a += y`
 * fuses into one kernel.  The buffer stays as it is (no protection
 * change).  The caller has checked that nothing but w's subgraph reads
 * buf's old values. */
GP_API void gp_node_take_output_view(GpNode *n, GpBuffer *buf);
/* NumPy frees buf while an in-place write into it is pending: nobody can
 * see the write any more; the writer continues only as an intermediate. */
GP_API void gp_buffer_drop_writer(GpBuffer *b);
/* The array holding n's output went away: n keeps computing only as an
 * intermediate (drops its buffer if still pending). */
GP_API void gp_node_drop_output(GpNode *n);

GP_API void gp_node_incref(GpNode *n);
GP_API void gp_node_decref(GpNode *n);

/* Iteration over pending nodes (plan.c's sibling search): NULL-terminated. */
GpNode *gp_dag_pending_first(void);
GpNode *gp_dag_pending_next(GpNode *n);
/* Pending nodes right now (for tests). */
GP_API int64_t gp_dag_pending_count(void);

/* Byte strides of n's own buffer: C-contiguous, or contiguous in the dim
 * order n->perm when has_perm (a result laid out as NumPy's order='K'
 * iterator would allocate it). */
GP_API void gp_node_buffer_strides(const GpNode *n, int64_t *strides);
/* Lays n's own buffer out in dim order perm[0..n->nd) (slowest first);
 * the identity clears it.  Call before the buffer is bound. */
GP_API void gp_node_set_perm(GpNode *n, const int *perm);

/* Used by plan.c when a node has been computed into n->buf (its layout):
 * marks it materialized and releases its inputs. */
void gp_node_mark_materialized(GpNode *n);
/* C-contiguous byte strides for a shape. */
void gp_contiguous_strides(int nd, const int64_t *shape, size_t elsize, int64_t *strides);
/* Dense byte strides of an array of nd dims of shape, elsize bytes an
 * element, laid out in the dim order perm (slowest first; the identity is
 * C order). */
GP_API void gp_perm_strides(int nd, const int64_t *shape, size_t elsize, const int *perm, int64_t *strides);

#endif
