/* hooks/hooks.h -- the CPython / NumPy side of grumpy (the only code that
 * includes Python.h).  All functions here run with the GIL held unless a
 * comment says otherwise; they follow CPython's conventions: NULL or -1
 * with an exception set on error, "new reference" / "borrowed" stated. */
#ifndef GP_HOOKS_H
#define GP_HOOKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h> /* PyFrame_GetBack before CPython 3.11 */
/* NumPy 2's C API and array struct (NEP 49's mem_handler), whatever the
 * headers' default target (NumPy 2.2's is 1.x) */
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#ifndef GP_IMPORT_ARRAY_HERE
#define NO_IMPORT_ARRAY
#endif
#define PY_ARRAY_UNIQUE_SYMBOL grumpy_ARRAY_API
#define PY_UFUNC_UNIQUE_SYMBOL grumpy_UFUNC_API
#ifndef GP_IMPORT_ARRAY_HERE
#define NO_IMPORT_UFUNC
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>
#pragma GCC diagnostic pop

#include "plan.h"

/* Py_IsFinalizing is public from CPython 3.13, which no longer exports
 * the older private _Py_IsFinalizing. */
#if PY_VERSION_HEX >= 0x030D0000
#define gp_py_is_finalizing() Py_IsFinalizing()
#else
#define gp_py_is_finalizing() _Py_IsFinalizing()
#endif

#if PY_VERSION_HEX < 0x030B0000
/* CPython 3.10: the frame accessors of 3.11, from the public struct
 * (f_lasti counts code units there; 3.11's PyFrame_GetLasti gives bytes). */
static inline int PyFrame_GetLasti(PyFrameObject *f) { return f->f_lasti < 0 ? -1 : f->f_lasti * 2; }
static inline PyObject *PyFrame_GetGlobals(PyFrameObject *f)
{
    Py_INCREF(f->f_globals);
    return f->f_globals;
}
#endif

extern PyTypeObject GpArray_Type;

/* Module-wide state (one interpreter). */
typedef struct {
    PyObject *ufunc_of_op[GP_NOPS];        /* owned: the NumPy object each op captures, or NULL */
    PyObject *fallbacks;                   /* owned dict: name -> count of calls handed to NumPy */
    PyObject *np_where;                    /* owned: numpy.where */
    PyObject *np_clip;                     /* owned: numpy.clip */
    PyObject *np_dot, *np_vdot, *np_inner; /* owned: matrix products as array functions */
    PyObject *np_outer, *np_tensordot, *np_einsum, *np_copyto, *np_concatenate, *np_roll, *np_take, *np_searchsorted;
    PyObject *np_novalue;                                           /* owned: numpy._NoValue (an argument not given) */
    PyObject *np_nanmin, *np_nanmax, *np_fmin, *np_fmax, *np_isnan; /* owned (array.c nan_extremum) */
    PyObject *writes_first[6]; /* owned: functions that write into their first argument
                                  (np.copyto, put, place, putmask, fill_diagonal, put_along_axis) */
    PyObject *passthrough;     /* owned set: array functions run on grumpy arrays */
    PyObject *fresh;           /* owned set: those of them whose results never share an input's memory */
    PyObject *creation;        /* owned set: array-creating functions (fallbacks not counted) */
    PyObject *reads_once;      /* owned set: reductions whose implementation reads their first
                                  argument once, through its method (np.sum, np.mean, np.max, ...) */
    /* Py_REFCNT of a temporary first argument (np.sum(a * b): the caller's
     * stack holds its only reference) as __array_function__ sees it, the
     * dispatcher's own references counted: measured once at enable
     * (array.c gp_measure_temporary_refs); 0 when not known (no deferral) */
    Py_ssize_t temporary_refs;
    PyObject *str_reduce, *str_call, *str_out, *str_implementation, *str_name;
    PyObject *str_copy;                    /* "copy" */
    PyObject *str_in_cast, *str_in_reduce; /* " encountered in cast", "... reduce" */
    int64_t min_bytes;                     /* GRUMPY_MIN_BYTES: smaller results run in NumPy at once */
    int64_t max_fuse;                      /* GRUMPY_MAX_FUSE: DAG bound, nodes per pending subgraph */
    int strict;                            /* GRUMPY_STRICT: raise instead of falling back */
    int adaptive;                          /* GRUMPY_ADAPTIVE: the call-site rules of sites.c */
    int enabled;
    int64_t captured;            /* operations recorded */
    int64_t eager_small;         /* operations run by NumPy at once for size */
    int64_t eager_direct;        /* of those, decided before the capture was asked (array.c small_and_computed) */
    int64_t eager_site;          /* operations run by NumPy at once: their call site's results were
                            computed alone (hooks/sites.c) */
    int64_t plain_broadcast;     /* operators of plain arrays broadcast into a large
                                result, handed to the capture (plain_ops.c) */
    int64_t sorted_searches;     /* np.searchsorted calls answered by a merge (sorted_search.c) */
    int64_t index_checks_reused; /* gathers whose index array's range check was kept (capture_writes.c) */
    /* nonzero while plain_ops.c offers an operator of plain arrays to the
     * capture: NumPy's result when it declines is no fallback (not
     * counted, not refused by GRUMPY_STRICT) */
    int uncounted;
} GpHooks;

extern GpHooks gp_hooks;

/* ---- fallbacks (fallbacks.c): why a call went to NumPy, and where ----- */

/* Reasons, as stats()["fallback_reasons"] counts them. */
#define GP_WHY_DTYPE "an operand's dtype is not computed by grumpy (complex, float16, object, strings, ...)"
#define GP_WHY_SUBCLASS "an operand is another ndarray subclass (MaskedArray, matrix, memmap, ...)"
#define GP_WHY_OPERAND "an operand is neither an array nor a number (a list, None, an object)"
#define GP_WHY_DIMS "more dimensions than grumpy's kernels take"
#define GP_WHY_ERRSTATE "np.errstate/np.seterr has a category in raise, call, print or log mode"
#define GP_WHY_UFUNC "a ufunc or ufunc method grumpy does not fuse"
#define GP_WHY_KEYWORD "a keyword argument grumpy does not capture (dtype=, order=, where= without out=, ...)"
#define GP_WHY_FUNCTION "a NumPy function grumpy does not capture"
#define GP_WHY_OTHER "arguments outside what grumpy captures"
#define GP_STRICT_WARN 2 /* GRUMPY_STRICT=warn */

/* Measures gp_hooks.temporary_refs with a call of np.sum on a temporary
 * made here.  0 or -1 with an exception.  GIL held. */
int gp_measure_temporary_refs(void);

/* Records why the capture of the current call declines (a static
 * string); the first reason given in a call wins.  Per thread. */
void gp_declined(const char *why);
/* The reason given for the current call (GP_WHY_OTHER when none), cleared. */
const char *gp_decline_take(void);
extern _Thread_local const char *gp_decline;
/* "file:line" of the innermost frame outside NumPy and grumpy (new
 * reference, NULL on error). */
PyObject *gp_user_site(void);
/* That frame (new reference), or NULL when every frame is NumPy's or
 * grumpy's, or there is none (no exception). */
PyFrameObject *gp_user_frame(void);
/* Counts a fallback of call `name` for reason why at the user's line. */
void gp_count_fallback_why(const char *name, const char *why);
/* GRUMPY_STRICT: 0 to go on to NumPy; 1 with NotImplementedError set
 * (strict=1); -1 with an exception set (a warning made an error). */
int gp_strict_refuses(const char *name, const char *why);
/* Adds fallback_reasons and fallback_sites to a stats dict; 0 or -1. */
int gp_fallbacks_into(PyObject *stats);
void gp_fallbacks_reset(void);
int gp_fallbacks_init(void);

/* ---- arguments (args.c): keywords and axes, as NumPy reads them -------
 * None of these raises: -1 means "decline" (no exception set), and NumPy,
 * given the call, raises its own error or computes it. */

/* The keywords a capture reads: X(id, name). */
#define GP_KEYWORDS(X)      \
    X(AXIS, "axis")         \
    X(AXES, "axes")         \
    X(DTYPE, "dtype")       \
    X(OUT, "out")           \
    X(KEEPDIMS, "keepdims") \
    X(WHERE, "where")       \
    X(CASTING, "casting")   \
    X(SUBOK, "subok")       \
    X(SHIFT, "shift")
typedef enum {
#define X(id, name) GP_KW_##id,
    GP_KEYWORDS(X)
#undef X
        GP_NKW
} GpKeyword;
#define GP_KW(id) (1u << GP_KW_##id)

/* Interns the keyword names (module init); 0, or -1 with an exception. */
int gp_args_init(void);
/* Picks the keyword arguments of kwds (a dict, or NULL for none) into
 * slot[GP_KW_...] (borrowed from kwds).  A keyword that is not one of the
 * set `accepted` (GP_KW(AXIS) | ...), or whose slot the caller already
 * filled from a positional argument, records GP_WHY_KEYWORD and returns
 * -1; else 0.  The caller sets slot[] to NULL, or to the positionals. */
int gp_args_keywords(PyObject *kwds, unsigned accepted, PyObject *slot[GP_NKW]);
/* One axis of an ndim-dim array: o an int or an object with __index__, not
 * a bool (NumPy's PyArray_PyIntAsInt), in [-ndim, ndim).  0 with *axis in
 * [0, ndim), or -1 (NumPy raises TypeError or AxisError). */
int gp_args_axis(PyObject *o, int ndim, int *axis);
/* A reduction's axis=: None (every dim), one axis (gp_args_axis) or a tuple
 * of distinct axes, as bits of *mask (bit d: dim d reduced; an empty tuple
 * gives 0).  0, or -1 (a repeated axis, anything gp_args_axis declines,
 * ndim > 63).  A missing axis= is the caller's default. */
int gp_args_axes(PyObject *axis, int ndim, uint64_t *mask);
/* ufunc.reduce's keepdims= (NumPy reads a C int: a bool or an int): 0 with
 * *keepdims 0 or 1 (NULL: not given, 0), or -1 for anything else. */
int gp_args_keepdims(PyObject *o, int *keepdims);
/* A dtype= argument: 0 with *dtype -1 for NULL / None, 0 with the GpDType
 * NumPy's dtype converter makes of it, or -1 (grumpy does not compute in
 * that dtype, or NumPy raises). */
int gp_args_dtype(PyObject *o, int *dtype);
/* Whether out= is absent, None or (None,) (as __array_ufunc__ passes it). */
int gp_args_out_is_none(PyObject *out);

/* grumpy.disabled() blocks entered by this thread and not left (0: none):
 * inside one, nothing is captured, results are plain ndarrays and no call
 * is counted as a fallback. */
extern _Thread_local int gp_paused;

/* Whether operations of this thread are captured now. */
static inline int gp_capturing(void) { return gp_hooks.enabled && !gp_paused; }

/* ---- call sites (sites.c): "do no harm", adaptively ------------------- */

/* The call site of the running operation op: the innermost Python frame's
 * code object and instruction (PyFrame_GetLasti) and op, as an index into
 * gp_sites (1 .. GP_MAX_SITES-1), or 0 when there is no frame or the table
 * is full.  About 50 ns once the frame object exists. */
int gp_site_current(GpOp op);
/* The same for frame f (borrowed) and op: grumpy.explain registers the
 * user's frame of each operation with op GP_NOPS ("any operation"), so its
 * sites never share an index with the adaptive rule's. */
int gp_site_of_frame(PyFrameObject *f, GpOp op);
/* (co_filename, line) of a site; ("<unknown>", 0) for 0 or an index not
 * in the table.  New reference, NULL on error. */
PyObject *gp_site_where(int site);
/* Gives warning `message` (str, borrowed) of `category` at a site's line
 * as warnings.warn would from that frame: its module's __name__ and
 * __warningregistry__, so the filters ("default": once per line) act as
 * for NumPy's own warning there.  A site not in the table warns at the
 * running frame.  0, or -1 with an exception (a filter made it an error).
 * GIL held. */
int gp_site_warn(int site, PyObject *category, PyObject *message);
/* Whether an operation at site should be NumPy's at once: its results were
 * computed by kernels of their own (no fusion) at least twice and never
 * fused.  One call in 16 answers no anyway, so that a site whose results
 * come to be fused again is seen.  Counts the calls it answers yes. */
int gp_site_wants_eager(int site);
/* Whether an operation recorded at a line's frame site (GP_NOPS, the
 * GpNode.where of its warnings) should be NumPy's at once: a replay of a
 * kernel found NumPy warning there (gp_site_warn counts it), so NumPy
 * gives the warning itself and no kernel is computed twice.  Probes as
 * gp_site_wants_eager; counts the calls it answers yes.  GIL held. */
int gp_site_warns(int site);
/* Around an FP-flag replay of nodes (evaluate.c gp_fpe_replay): begin's
 * value goes to end, which counts a replay that gave no warning at all
 * against the `where` lines of all its nodes, as gp_site_warn counts a
 * warning against its line (then gp_site_warns answers yes there).  GIL
 * held. */
int64_t gp_site_replay_begin(void);
void gp_site_replay_end(int64_t begin, GpNode *const *nodes, int n);
/* {"file:line OP": {"lone": n, "fused": n, "eager": n, "reason": str}} for
 * every site with eager calls (new reference, NULL on error). */
PyObject *gp_sites_report(void);
/* Zeroes the sites' eager counts (reset_stats); what the sites taught is
 * kept. */
void gp_sites_reset(void);

/* ---- explain (explain.c): python -m grumpy.explain --------------------- */

/* A capture entry point (the protocol methods and the array methods that
 * record) between gp_explain_enter and gp_explain_leave: while explain is
 * on, the scope finds the user's line (the innermost frame outside NumPy
 * and grumpy), sets gp_record_line to it for the nodes recorded inside
 * (dag.h), and at its end charges to that line the operations recorded
 * (gp_hooks.captured) and those NumPy computed at once because small
 * (eager_small) or because of the adaptive rule (eager_site), less what
 * scopes nested in it charged to theirs.  Off: one test of
 * gp_config.explain.  GIL held. */
typedef struct {
    int on;
    int prev_line; /* gp_record_line of the enclosing scope */
    int64_t captured, eager_small, eager_site;
} GpExplainScope;
void gp_explain_enter_slow(GpExplainScope *s);
void gp_explain_leave_slow(const GpExplainScope *s, PyObject *what, const char *name);
static inline void gp_explain_enter(GpExplainScope *s)
{
    s->on = gp_config.explain;
    if (s->on)
        gp_explain_enter_slow(s);
}
/* The call is named (in the report of operations NumPy computed at once)
 * by what, the ufunc or function (its __name__; borrowed), or when what
 * is NULL by name (a static string). */
static inline void gp_explain_leave(const GpExplainScope *s, PyObject *what, const char *name)
{
    if (s->on)
        gp_explain_leave_slow(s, what, name);
}
/* A call handed to NumPy (fallbacks.c) at site "file:line" (a str,
 * borrowed), for reason why: counted per line, call and reason. */
void gp_explain_fallback(PyObject *site, const char *name, const char *why);
/* The NumPy evaluator computes n because planning or compiling failed
 * (evaluate.c): counted at n's line with gp_last_error()'s reason. */
void gp_explain_plan_failure(const GpNode *n);
/* The module functions _explain, _explain_report (module.c's table). */
PyObject *gp_explain_set(PyObject *self, PyObject *on);
PyObject *gp_explain_report(PyObject *self, PyObject *unused);

/* Ends the recording of one operation: counts it, and when the page guard
 * could not protect a buffer (gp_guard_broken: mprotect failed), computes
 * everything pending and turns capture off for the rest of the process,
 * so no pending value can be read unguarded.  GIL held. */
void gp_record_done(void);

/* res (stolen), or self (a new reference) when res is a plain ndarray view
 * of grumpy array self with its very shape, strides, dtype and
 * writeability: where NumPy answers a plain ndarray x with x itself
 * (np.asarray(x), x.astype(x.dtype, copy=False, subok=False)), it answers
 * the subclass with such a view; grumpy answers as for the plain array. */
PyObject *gp_self_if_plain_view(PyObject *self, PyObject *res);
/* The .base NumPy would give view x (borrowed; NULL if none): past the plain
 * and grumpy views between, to the first owner, non-array or other subclass. */
PyObject *gp_collapsed_base(PyArrayObject *x);

/* NumPy's error state now (np.errstate / np.seterr): sets
 * gp_record_errstate to the categories in "warn" mode and returns 0, or
 * returns 1 when some category is "raise", "call", "print" or "log" --
 * then the operation must be NumPy's, now, so that the error or the call
 * comes from the statement that caused it -- or when NumPy warned at this
 * line in a replay (gp_site_warns). */
int gp_errstate_for_capture(void);

/* NumPy's error state set to ignore every category (its context variable,
 * set from C: nothing a signal's exception can interrupt halfway) until
 * gp_fpe_ignored_end(token) sets the caller's back, keeping a pending
 * exception.  A new reference to pass to _end, or NULL (no state to set;
 * no exception).  GIL held. */
PyObject *gp_fpe_ignored_begin(void);
void gp_fpe_ignored_end(PyObject *token);

/* NumPy's order='K' dim order (slowest first) for a new element-wise
 * result of nd dims from operands objs[0..n); 0 when it is C order. */
int gp_k_order(PyObject *const *objs, int n, int nd, int *perm);
/* NumPy's order='K' for a new array like a (PyArray_NewLikeArray: astype,
 * copy, empty_like, so np.roll): C when a is C-contiguous, F when it is
 * F-contiguous, else a's dims sorted by |stride|, largest first, ties in
 * C order (a broadcast dim, stride 0, fastest).  perm: slowest dim first;
 * returns 0 when that is C order. */
int gp_like_order(PyArrayObject *a, int *perm);

/* dtype <-> GpDType; -1 when grumpy does not compute in that dtype. */
int gp_dtype_from_descr(PyArray_Descr *d);
PyArray_Descr *gp_descr_from_dtype(GpDType t); /* new reference */

/* Makes sure arr's memory holds computed values: if it lies in a pending
 * buffer, computes the producer.  0, or -1 with an exception set. */
int gp_ensure_computed(PyArrayObject *arr);
/* Whether arr's memory is a guarded buffer whose contents a device holds
 * (guard.h GP_ON_DEVICE or GP_ON_BOTH: GRUMPY_BACKEND=gpu); no lock needed. */
int gp_array_on_device(PyArrayObject *arr);
/* b's pending producer computed, its contents left where they are (a
 * device copy stays there: an in-place write is recorded on it); 0, or -1
 * with an exception. */
int gp_buffer_compute_writes_or_raise(GpBuffer *b);
/* The DAG node for an ndarray operand: the pending node of which arr is the
 * output, or a leaf over arr's memory (small foreign memory is copied).
 * New reference, or NULL without an exception when it cannot be captured. */
GpNode *gp_node_for_array(PyArrayObject *arr);
/* A new buffer (a reference the caller owns) holding a C-ordered copy of
 * arr's elements, so that later writes to arr cannot change what pending
 * nodes read; NULL when there is no memory (no exception). */
GpBuffer *gp_buffer_copy_of(PyArrayObject *arr);
/* gp_node_for_array for an operand of a library call (a product): a view
 * of a pending result covering at least half of it computes the producer
 * into its own buffer and reads the view's memory (DESIGN.md section 5:
 * views go to BLAS as strides, not copies). */
GpNode *gp_node_for_library_operand(PyArrayObject *arr);
/* The pending node whose whole C-contiguous result arr is, or NULL.
 * Borrowed. */
GpNode *gp_pending_node_of(PyArrayObject *arr);
/* Whether arr's memory lies in a buffer a pending node will write (arr is
 * a pending result or a view of one).  GIL held. */
int gp_array_is_pending(PyArrayObject *arr);
/* Makes pending node n the producer of arr's memory, in place of arr's
 * current pending node (which stays an intermediate for its readers): an
 * in-place ufunc on a pending array.  0; -1 if arr is not a pending
 * result (no exception); -2 with an exception. */
int gp_rebind_output(PyArrayObject *arr, GpNode *n);
/* A grumpy.ndarray holding the result of pending node n (C-contiguous).
 * Steals nothing; new reference or NULL with an exception. */
PyObject *gp_array_for_node(GpNode *n);
/* Computes buffer b's pending producer if it has one; 0, or -1 with a
 * Python exception set (also a deferred warning turned error). */
int gp_buffer_compute_or_raise(GpBuffer *b);
/* Computes n now; 0, or -1 with an exception set. */
int gp_materialize_or_raise(GpNode *n);
/* arr as a grumpy.ndarray (takes over its memory when it is the sole
 * owner, else a view).  New reference. */
PyObject *gp_as_grumpy(PyObject *obj);
/* Converts every ndarray in a (nested tuple/list) result to grumpy. New reference. */
PyObject *gp_wrap_result(PyObject *res);
/* Counts a fallback under name, for the reason the capture gave. */
void gp_count_fallback(const char *name);

/* The capture entry points (capture.c).  Each returns a new reference, NULL
 * with an exception, or Py_NotImplemented (new reference) meaning "not
 * captured: hand it to NumPy" (counted as a fallback), or Py_Ellipsis
 * meaning "small: NumPy computes it at once" (not counted). */
PyObject *gp_capture_ufunc(PyObject *ufunc, PyObject *method, PyObject *inputs, PyObject *kwds);
PyObject *gp_capture_function(PyObject *func, PyObject *args, PyObject *kwds);
/* t[...] = value as a lazy write into t (a view); 0 captured, 1 not
 * captured (let NumPy assign), -1 error. */
int gp_capture_assign(PyArrayObject *t, PyObject *value);
/* np.argmin(a, axis=None, out=None, *, keepdims=...) and a.argmin(axis=None,
 * out=None, *, keepdims=False), argmax alike (op): an arg-reduction node
 * (int64 result).  args[0..nargs): the positionals after a (borrowed);
 * kwds: the keywords (a dict or NULL). */
PyObject *gp_capture_argreduce(GpOp op, PyObject *a, PyObject *const *args, Py_ssize_t nargs, PyObject *kwds);
/* a @ b (numpy.matmul semantics) as a library node, for float32/float64,
 * for the NumPy function kind (GP_PRODUCT_*) names: its warnings are
 * NumPy's for that function ("overflow encountered in matmul" or "... in
 * dot"; np.einsum and np.vdot give none). */
enum { GP_PRODUCT_MATMUL, GP_PRODUCT_DOT, GP_PRODUCT_QUIET };
PyObject *gp_capture_product(PyObject *a, PyObject *b, int kind);
static inline PyObject *gp_capture_matmul(PyObject *a, PyObject *b)
{
    return gp_capture_product(a, b, GP_PRODUCT_MATMUL);
}

/* Hands a ufunc call / array function to real NumPy with grumpy arrays
 * materialized and presented as plain ndarrays; wraps array results. */
PyObject *gp_fallback_ufunc(PyObject *ufunc, PyObject *method, PyObject *inputs, PyObject *kwds, int count);
PyObject *gp_fallback_function(PyObject *func, PyObject *args, PyObject *kwds, int count);

/* The NumPy back end (backend_numpy.c; GRUMPY_BACKEND=numpy): programs
 * interpreted with NumPy's ufuncs, for testing the back-end seam. */
extern const GpBackend gp_backend_numpy;

/* The NumPy evaluator of pending nodes (JIT failure path). */
GpStatus gp_eval_with_numpy(GpNode *const *nodes, int count);
/* hooks/eval_loops.c: gp_eval_loops_init copies NumPy's ufunc loop tables
 * (GIL held, once at import; 0 or -1 with an exception); gp_eval_loops is
 * core's GpHostCallbacks.eval_without_gil: n computed with NumPy's inner
 * loops, no Python, no GIL, core lock held. */
int gp_eval_loops_init(void);
GpStatus gp_eval_loops(GpNode *n);
/* GpHostCallbacks.fpe_later (eval_loops.c): the kernel run for a fault
 * over nodes[0..count) raised flags; each node computed again with
 * NumPy's inner loops, its own flags tested after its loop as NumPy tests
 * them after each ufunc call, and the warnings NumPy would give queued
 * (gp_fpe_queue).  Core lock held, no Python, no GIL.  0, or -1 when the
 * loops cannot compute a node (nothing queued for it or after it). */
int gp_fpe_later(GpNode *const *nodes, int count, unsigned flags);

/* evaluate.c: warnings found where there is no Python (a kernel run for a
 * fault, the loop evaluator), given later by a thread holding the GIL.
 * gp_fpe_queue (core lock held, no GIL) queues "<category> encountered in
 * <x's operation>" for the GP_FPE_* categories in bits at x's recorded
 * line, and asks the main thread to give them at its next chance
 * (Py_AddPendingCall); the hooks also give them at every
 * gp_raise_deferred (after each computation they ask for) and at a
 * catch_warnings block's edges (not inside a replay or the shadow
 * check's block); a warning a filter makes an error is raised where it is
 * given.  The queue holds 64 operations; what does not fit, and an
 * operation with no recorded line, is counted in fpe_unreported. */
void gp_fpe_queue(const GpNode *x, unsigned bits);

/* Makes the memory of array o safe for a writer grumpy does not see
 * (NumPy's own loops with out=, its assignment, a writable buffer export,
 * a data pointer handed out), in the caller's context: a pending buffer is
 * computed; a buffer that pending nodes read gets its readers computed
 * first (a whole-DAG flush), and it is opened for writing, so the writes
 * need no page fault (system calls would get EFAULT).  Anything but an
 * array of grumpy's memory: nothing to do.  0, or -1 with an exception.
 * (array.c) */
int gp_prepare_for_write(PyObject *o);

/* allocator.c: the NEP 49 handler installed by enable(), and the flag set
 * around the allocation of a pending array's buffer (GIL held). */
extern PyDataMem_Handler gp_mem_handler;
extern int gp_allocating_pending;
/* Takes NumPy's default handler, which makes the allocations grumpy does
 * not guard (GIL held; at enable, before gp_mem_handler is installed). */
void gp_allocator_init(void);
/* bytes of freed plain blocks the memory handler keeps for reuse (allocator.c) */
size_t gp_allocator_cached_bytes(void);

/* evaluate.c: NumPy's calls for a node's or an instruction's op, shared by
 * the evaluator and the NumPy back end (GIL held; new references or NULL
 * with an exception):
 *   gp_numpy_as_dtype    v as an array of dtype t (itself when it is)
 *   gp_numpy_map         map op (a cast, np.where, the op's ufunc) of in[0..nin)
 *   gp_numpy_reduce      ufunc.reduce(x, axis=axes, keepdims=keepdims)
 *   gp_numpy_accumulate  ufunc.accumulate(x, axis=axis)
 *   gp_numpy_full        v as an array of shape[0..nd) (a scalar, or an array broadcast to it) */
PyObject *gp_numpy_as_dtype(PyObject *v, GpDType t);
PyObject *gp_numpy_map(GpOp op, GpDType t, PyObject *const *in, int nin);
PyObject *gp_numpy_reduce(GpOp op, PyObject *x, PyObject *axes, int keepdims);
PyObject *gp_numpy_accumulate(GpOp op, PyObject *x, int axis);
PyObject *gp_numpy_full(PyObject *v, int nd, const int64_t *shape);

/* evaluate.c: NumPy's error state, the evaluator, replays, shadow check. */
int gp_errstate_init(void);
int gp_fpe_replay(GpNode *const *nodes, int n, GpNode *const *stored, int nstored, unsigned flags);
/* GpHostCallbacks.fpe_direct (evaluate.c). */
int gp_fpe_direct(GpNode *n, unsigned flags);
/* Raises the exception a replay kept (a warning made an error); 0 if none. */
int gp_raise_deferred(void);
/* 0 when st is GP_OK (then any deferred warning-as-error is raised), else
 * -1 with NumPy's MemoryError (GP_ENOMEM) or a RuntimeError set. */
int gp_raise_status(GpStatus st);
/* GRUMPY_CHECK's value (NULL or "" for off): 0, or -1 with ValueError. */
int gp_check_configure(const char *value);
/* The shadow check's GpHostCallbacks.check_begin / check_end (plan.h). */
void *gp_check_begin(GpNode *n);
void gp_check_end(GpNode *root, void *opaque, int compare);
/* 1 while this thread's shadow check evaluates NumPy's value. */
int gp_check_running(void);

int gp_array_type_init(PyObject *module);

/* Plain (not grumpy) memory an operand may have for the capture to copy
 * it into a leaf of its own (bytes; larger ones only under a larger
 * GRUMPY_MIN_BYTES): later writes to it cannot change what pending nodes
 * read (module.c node_for_array). */
#define GP_FOREIGN_COPY_MAX_BYTES ((npy_intp)1 << 20)

/* NumPy's private flag of the writable arrays np.broadcast_arrays returns
 * and their views (NPY_ARRAY_WARN_ON_WRITE, bit 31 of the flags:
 * numpy/_core/src/multiarray/arrayobject.h): a write warns
 * (DeprecationWarning), so grumpy leaves such writes to NumPy. */
#define GP_NPY_WARN_ON_WRITE (1u << 31)

/* The element-wise binary number slots of ndarray that grumpy.ndarray
 * (array.c, with its divmod and matmul) and plain ndarrays (plain_ops.c)
 * replace, each with its reflected method's name: X(slot, rname).  Power
 * (ternary) is each file's own. */
#define GP_ELEMENTWISE_BINARY_SLOTS(X)                  \
    X(nb_add, "__add__", "__radd__")                    \
    X(nb_subtract, "__sub__", "__rsub__")               \
    X(nb_multiply, "__mul__", "__rmul__")               \
    X(nb_remainder, "__mod__", "__rmod__")              \
    X(nb_lshift, "__lshift__", "__rlshift__")           \
    X(nb_rshift, "__rshift__", "__rrshift__")           \
    X(nb_and, "__and__", "__rand__")                    \
    X(nb_xor, "__xor__", "__rxor__")                    \
    X(nb_or, "__or__", "__ror__")                       \
    X(nb_floor_divide, "__floordiv__", "__rfloordiv__") \
    X(nb_true_divide, "__truediv__", "__rtruediv__")

/* NumPy's own number and mapping slots of ndarray, which grumpy.ndarray's call. */
extern PyNumberMethods gp_numpy_number;
extern PyMappingMethods gp_numpy_mapping;
/* Makes the binary operators of plain ndarrays record a broadcast of small
 * operands into a large result, and their x[idx] a gather (plain_ops.c);
 * NumPy's slots are saved in gp_numpy_number and gp_numpy_mapping first.
 * Once, at module init, after grumpy.ndarray's type is ready. */
void gp_plain_ops_install(void);

#endif
