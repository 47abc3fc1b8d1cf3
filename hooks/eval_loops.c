/* hooks/eval_loops.c -- computes a pending node with NumPy's own inner
 * loops, without Python and without the GIL.
 *
 * Why: the guard's resolver thread (core/guard.c) computes a pending
 * buffer that C code faulted on.  When its kernel cannot be compiled, the
 * node must still be computed there, and the NumPy evaluator
 * (hooks/evaluate.c) cannot run: it takes the GIL, which the faulting
 * thread may hold (issue 9: the handler never takes the GIL, never runs
 * Python).  So the NumPy that computes it is NumPy's C inner loops, called
 * directly: the legacy loop table of each ufunc (PyUFuncObject's ntypes /
 * types / functions / data, public in numpy/ufuncobject.h), copied once at
 * import while the GIL is held (gp_eval_loops_init).  The loops are the
 * functions NumPy itself runs for those dtypes (their SIMD dispatch inside),
 * and the reductions and scans call them as NumPy's reduce and accumulate
 * do: a binary loop with the output as first operand and stride 0 (which
 * NumPy's add loop sums pairwise), or one element behind the output.
 *
 * What is not a ufunc loop is done here, as NumPy does it: casts are C
 * conversions (NumPy's numeric cast loops are; a float-to-integer cast out
 * of range has no NumPy value, DESIGN.md section 4), np.where selects
 * elements, argmin / argmax take the first best element by core's
 * gp_arg_better (the rule the kernels combine their partial results with).
 *
 * Work: every node of the pending subgraph is a temporary (malloc), C-
 * contiguous or a map's in its buffer layout (NumPy's order='K'); the root's values are stored with gp_node_store.  Pending
 * writers of memory it reads are computed first (gp_node_inputs_ready).
 * Matrix products go to the back end's matmul, with operands made
 * C-contiguous here (the planner would compile a copy).  IEEE flags are
 * tested after each node's own loop, as NumPy tests them after each ufunc
 * call; those a node watches cannot become warnings here (no Python), so
 * they are queued for the Python thread (evaluate.c gp_fpe_queue).  The
 * same per-node evaluation finds the warnings of a kernel run for a fault
 * that raised flags (gp_fpe_later).
 *
 * Threads: gp_eval_loops run with the core lock held (gp_node_materialize
 * calls it), GIL or not.  Loops that need the GIL (integer power with a
 * negative exponent raises ValueError) are not called: the exponents are
 * checked first and the node is GP_EUNSUPPORTED.
 */
#include "hooks.h"

#include <fenv.h>
#include <stdlib.h>
#include <string.h>

/* One inner loop of a ufunc over grumpy dtypes: inputs t[0..nin), output t[nin]. */
typedef struct {
    int8_t t[4];
    PyUFuncGenericFunction fn;
    void *data;
} Loop;

#define MAX_LOOPS 64
static Loop loops[GP_NOPS][MAX_LOOPS];
static int nloops[GP_NOPS];

int gp_eval_loops_init(void)
{
    int dt_of_typenum[NPY_NTYPES_LEGACY];
    for (int k = 0; k < NPY_NTYPES_LEGACY; k++) {
        dt_of_typenum[k] = -1;
        if (k == NPY_OBJECT || k == NPY_STRING || k == NPY_UNICODE || k == NPY_VOID)
            continue;
        PyArray_Descr *d = PyArray_DescrFromType(k);
        if (d) {
            dt_of_typenum[k] = gp_dtype_from_descr(d);
            Py_DECREF(d);
        } else {
            PyErr_Clear();
        }
    }
    for (int op = 0; op < GP_NOPS; op++) {
        PyObject *o = gp_hooks.ufunc_of_op[op];
        if (!o || !PyObject_TypeCheck(o, &PyUFunc_Type) || gp_op_is_arg((GpOp)op))
            continue;
        PyUFuncObject *u = (PyUFuncObject *)o;
        if (u->nout != 1 || u->nin > 3 || !u->functions || !u->types)
            continue;
        for (int i = 0; i < u->ntypes && nloops[op] < MAX_LOOPS; i++) {
            const char *types = u->types + (size_t)i * (size_t)u->nargs;
            Loop l = {{-1, -1, -1, -1}, u->functions[i], u->data ? u->data[i] : NULL};
            int ours = l.fn != NULL;
            for (int a = 0; a < u->nargs && ours; a++) {
                int k = (unsigned char)types[a];
                ours = k < NPY_NTYPES_LEGACY && dt_of_typenum[k] >= 0;
                if (ours)
                    l.t[a] = (int8_t)dt_of_typenum[k];
            }
            if (ours)
                loops[op][nloops[op]++] = l;
        }
    }
    return 0;
}

static const Loop *find_loop(GpOp op, int nin, const GpDType *in, GpDType out)
{
    for (int i = 0; i < nloops[op]; i++) {
        const Loop *l = &loops[op][i];
        int ok = l->t[nin] == (int)out;
        for (int a = 0; a < nin && ok; a++)
            ok = l->t[a] == (int)in[a];
        if (ok)
            return l;
    }
    return NULL;
}

/* ---- values ----------------------------------------------------------- */

/* A node's value over its own shape: data with byte strides, and the
 * temporary that holds it (owned) or NULL for memory of the DAG's. */
typedef struct {
    const GpNode *node;
    char *data;
    int64_t strides[GP_MAXDIMS];
    char *owned;
    unsigned fpe; /* GP_FPE_* flags its own loop raised (its inputs' are theirs) */
} Val;

typedef struct {
    Val **v; /* each its own allocation: callers hold pointers while more are added */
    int n, cap;
} Memo;

static GpStatus value(GpNode *n, Memo *m, const Val **out);

/* A C-contiguous temporary of n's shape and dtype (GP_ENOMEM). */
static GpStatus temporary(const GpNode *n, Val *v)
{
    size_t elsize = gp_dtype_size(n->dtype);
    int64_t count = gp_node_size(n);
    v->node = n;
    v->owned = malloc(count > 0 ? (size_t)count * elsize : 1);
    if (!v->owned) {
        gp_set_error("no memory for a temporary of the loop evaluator");
        return GP_ENOMEM;
    }
    v->data = v->owned;
    gp_contiguous_strides(n->nd, n->shape, elsize, v->strides);
    return GP_OK;
}

/* Strides of value v (of node x) broadcast to nd dims of shape (NumPy's
 * rule: dims aligned on the right, a length-1 dim repeats). */
static void broadcast(const Val *v, const GpNode *x, int nd, const int64_t *shape, int64_t *st)
{
    int off = nd - x->nd;
    for (int d = 0; d < nd; d++)
        st[d] = d < off || (x->shape[d - off] == 1 && shape[d] != 1) ? 0 : v->strides[d - off];
}

/* Calls f over every row (innermost dim) of the nd-dim iteration space,
 * with nargs operands at base[a] of strides st[a][]. */
typedef void (*RowFn)(const void *ctx, char **p, int64_t n, const int64_t *step);
static void for_rows(int nd, const int64_t *shape, int nargs, char *const *base, int64_t st[][GP_MAXDIMS], RowFn f,
                     const void *ctx)
{
    int64_t outer = 1, inner = nd ? shape[nd - 1] : 1, idx[GP_MAXDIMS] = {0}, step[4] = {0, 0, 0, 0};
    for (int d = 0; d < nd; d++)
        if (shape[d] == 0)
            return;
    for (int d = 0; d + 1 < nd; d++)
        outer *= shape[d];
    for (int a = 0; a < nargs; a++)
        step[a] = nd ? st[a][nd - 1] : 0;
    for (int64_t r = 0; r < outer; r++) {
        char *p[4];
        for (int a = 0; a < nargs; a++) {
            p[a] = base[a];
            for (int d = 0; d + 1 < nd; d++)
                p[a] += idx[d] * st[a][d];
        }
        f(ctx, p, inner, step);
        for (int d = nd - 2; d >= 0 && ++idx[d] == shape[d]; d--)
            idx[d] = 0;
    }
}

static void row_loop(const void *ctx, char **p, int64_t n, const int64_t *step)
{
    const Loop *l = ctx;
    npy_intp dim = (npy_intp)n, steps[4] = {(npy_intp)step[0], (npy_intp)step[1], (npy_intp)step[2], (npy_intp)step[3]};
    l->fn(p, &dim, steps, l->data);
}

/* ---- casts: C conversions, as NumPy's numeric cast loops -------------- */

/* the dtypes and their C types */
// clang-format off
#define DTYPES(X)            \
    X(GP_BOOL, npy_bool)     \
    X(GP_INT8, int8_t)       \
    X(GP_INT16, int16_t)     \
    X(GP_INT32, int32_t)     \
    X(GP_INT64, int64_t)     \
    X(GP_UINT8, uint8_t)     \
    X(GP_UINT16, uint16_t)   \
    X(GP_UINT32, uint32_t)   \
    X(GP_UINT64, uint64_t)   \
    X(GP_FLOAT32, float)     \
    X(GP_FLOAT64, double)
// clang-format on

/* An element read by its kind, so that every conversion is one C cast
 * from the source's own type class (an int64 to float32 is rounded once,
 * never through double; a float32 widened to double is exact). */
typedef struct {
    enum { NUM_SIGNED, NUM_UNSIGNED, NUM_FLOAT } kind;
    int64_t i;
    uint64_t u;
    double f;
} Num;

static Num load(GpDType t, const char *p)
{
    Num v = {NUM_SIGNED, 0, 0, 0.0};
    switch (t) {
#define LOAD(DT, T)                                         \
    case DT: {                                              \
        T x;                                                \
        memcpy(&x, p, sizeof x);                            \
        if (DT == GP_FLOAT32 || DT == GP_FLOAT64)           \
            v.kind = NUM_FLOAT, v.f = (double)x;            \
        else if (DT == GP_BOOL || gp_dtype_is_unsigned(DT)) \
            v.kind = NUM_UNSIGNED, v.u = (uint64_t)x;       \
        else                                                \
            v.i = (int64_t)x;                               \
        break;                                              \
    }
        DTYPES(LOAD)
#undef LOAD
    default: break;
    }
    return v;
}

static void store(GpDType t, char *p, Num v)
{
    switch (t) {
#define STORE(DT, T)                                                          \
    case DT: {                                                                \
        T y = DT == GP_BOOL          ? (T)(v.kind == NUM_FLOAT    ? v.f != 0  \
                                           : v.kind == NUM_SIGNED ? v.i != 0  \
                                                                  : v.u != 0) \
              : v.kind == NUM_FLOAT  ? (T)v.f                                 \
              : v.kind == NUM_SIGNED ? (T)v.i                                 \
                                     : (T)v.u;                                \
        memcpy(p, &y, sizeof y);                                              \
        break;                                                                \
    }
        DTYPES(STORE)
#undef STORE
    default: break;
    }
}

typedef struct {
    GpDType from, to;
} CastCtx;

/* A cast, as NumPy's numeric cast loops: C conversions (a float-to-integer
 * cast out of range has no NumPy value: DESIGN.md section 4).  To the same
 * dtype, a copy of the bytes, as NumPy's: a signalling NaN keeps its bits,
 * which a load and a store through a wider float would quieten. */
static void row_cast(const void *ctx, char **p, int64_t n, const int64_t *step)
{
    const CastCtx *c = ctx;
    if (c->from == c->to) {
        size_t elsize = gp_dtype_size(c->to);
        for (int64_t i = 0; i < n; i++)
            memcpy(p[1] + i * step[1], p[0] + i * step[0], elsize);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        store(c->to, p[1] + i * step[1], load(c->from, p[0] + i * step[0]));
}

/* np.where(c, x, y): c is bool */
static void row_where(const void *ctx, char **p, int64_t n, const int64_t *step)
{
    size_t elsize = *(const size_t *)ctx;
    for (int64_t i = 0; i < n; i++)
        memcpy(p[3] + i * step[3], p[0][i * step[0]] ? p[1] + i * step[1] : p[2] + i * step[2], elsize);
}

/* x[idx] (GATHER): p[0] the table's first element (stride 0), p[1] the
 * indices (in range: checked when recorded; one written since by another
 * thread reads element 0), p[2] the table's length (int64, stride 0) */
typedef struct {
    GpDType index;
    size_t elsize;
} GatherCtx;

static void row_gather(const void *ctx, char **p, int64_t n, const int64_t *step)
{
    const GatherCtx *g = ctx;
    for (int64_t i = 0; i < n; i++) {
        Num k = load(g->index, p[1] + i * step[1]);
        uint64_t len;
        memcpy(&len, p[2] + i * step[2], sizeof len);
        /* a negative index counts from the end, as NumPy's x[-1] */
        uint64_t at = k.kind == NUM_SIGNED ? (uint64_t)k.i + (k.i < 0 ? len : 0) : k.u;
        memcpy(p[3] + i * step[3], p[0] + (at < len ? at : 0) * g->elsize, g->elsize);
    }
}

/* ---- the node kinds ----------------------------------------------------- */

/* Whether the signed integer exponents e (of node x) hold a negative one:
 * NumPy's integer power loop raises for it, taking the GIL. */
static int negative_exponent(const Val *e, const GpNode *x)
{
    if (!gp_dtype_is_signed(x->dtype))
        return 0;
    int64_t idx[GP_MAXDIMS] = {0}, count = gp_node_size(x);
    for (int64_t i = 0; i < count; i++) {
        const char *p = e->data;
        for (int d = 0; d < x->nd; d++)
            p += idx[d] * e->strides[d];
        if (load(x->dtype, p).i < 0)
            return 1;
        for (int d = x->nd - 1; d >= 0 && ++idx[d] == x->shape[d]; d--)
            idx[d] = 0;
    }
    return 0;
}

static GpStatus eval_map(GpNode *n, Memo *m, Val *out)
{
    const Val *in[3];
    GpDType dt[3];
    for (int i = 0; i < n->nin; i++) {
        GpStatus st = value(n->in[i], m, &in[i]);
        if (st != GP_OK)
            return st;
        dt[i] = n->in[i]->dtype;
    }
    const Loop *l = NULL;
    if (n->op != GP_OP_CAST && n->op != GP_OP_WHERE && n->op != GP_OP_GATHER) {
        l = find_loop(n->op, n->nin, dt, n->dtype);
        if (!l || (n->op == GP_OP_POWER && negative_exponent(in[1], n->in[1]))) {
            gp_set_error("no NumPy loop for %s without the GIL", gp_op_name[n->op]);
            return GP_EUNSUPPORTED;
        }
    }
    GpStatus st = temporary(n, out);
    if (st != GP_OK)
        return st;
    /* laid out as NumPy's result (order='K': n's perm), which a reduction
     * of it visits in that order (loop_reduce joins its runs) */
    gp_node_buffer_strides(n, out->strides);
    char *base[4];
    int64_t strides[4][GP_MAXDIMS];
    for (int i = 0; i < n->nin; i++) {
        base[i] = in[i]->data;
        broadcast(in[i], n->in[i], n->nd, n->shape, strides[i]);
    }
    base[n->nin] = out->data;
    memcpy(strides[n->nin], out->strides, sizeof out->strides);
    if (n->op == GP_OP_CAST) {
        CastCtx c = {n->in[0]->dtype, n->dtype};
        for_rows(n->nd, n->shape, 2, base, strides, row_cast, &c);
    } else if (n->op == GP_OP_GATHER) {
        GatherCtx g = {dt[1], gp_dtype_size(n->dtype)};
        for_rows(n->nd, n->shape, 4, base, strides, row_gather, &g);
    } else if (n->op == GP_OP_WHERE) {
        size_t elsize = gp_dtype_size(n->dtype);
        if (dt[0] != GP_BOOL || dt[1] != n->dtype || dt[2] != n->dtype) {
            gp_set_error("np.where over mixed dtypes");
            return GP_EUNSUPPORTED;
        }
        for_rows(n->nd, n->shape, 4, base, strides, row_where, &elsize);
    } else {
        for_rows(n->nd, n->shape, n->nin + 1, base, strides, row_loop, l);
    }
    return GP_OK;
}

/* The iteration space of a reduction or scan with `axis` innermost: dims
 * in order, shape, input strides, output strides (0 over reduced dims of a
 * reduction; a scan's output has them all).  reduced[d]: d is reduced
 * (scanned). */
typedef struct {
    int nd;
    int64_t shape[GP_MAXDIMS], ist[GP_MAXDIMS], ost[GP_MAXDIMS];
    int reduced[GP_MAXDIMS];
} Space;

static void space(const GpNode *x, const Val *xv, uint64_t mask, const int64_t *ost_kept, const int8_t *order, int axis,
                  int scan, Space *s)
{
    s->nd = 0;
    for (int d = 0; d <= x->nd; d++) {
        int od = d < x->nd && order ? order[d] : d;
        int dim = d < x->nd ? (od == axis ? -1 : od) : axis;
        if (dim < 0 || (d == x->nd && axis < 0) || (x->shape[dim] == 1 && dim != axis))
            continue; /* a length-1 dim is no dim: NumPy's iterator drops it */
        s->shape[s->nd] = x->shape[dim];
        s->ist[s->nd] = xv->strides[dim];
        s->reduced[s->nd] = (int)(mask >> dim & 1);
        s->ost[s->nd] = s->reduced[s->nd] && !scan ? 0 : ost_kept[dim];
        s->nd++;
    }
    if (s->nd == 0) { /* every dim of length 1: one element */
        s->shape[0] = 1;
        s->ist[0] = s->ost[0] = 0;
        s->reduced[0] = mask != 0;
        s->nd = 1;
    }
    /* adjacent dims of one kind that are one run in memory become one dim:
     * a reduction over a contiguous block is one row, summed pairwise over
     * all of it as NumPy's iterator gives it to the loop */
    for (int d = s->nd - 2; d >= 0; d--) {
        int e = d + 1;
        if (s->reduced[d] != s->reduced[e] || s->ist[d] != s->ist[e] * s->shape[e] ||
            s->ost[d] != s->ost[e] * s->shape[e])
            continue;
        s->shape[d] *= s->shape[e];
        s->ist[d] = s->ist[e];
        s->ost[d] = s->ost[e];
        for (int k = e; k + 1 < s->nd; k++) {
            s->shape[k] = s->shape[k + 1];
            s->ist[k] = s->ist[k + 1];
            s->ost[k] = s->ost[k + 1];
            s->reduced[k] = s->reduced[k + 1];
        }
        s->nd--;
    }
}

/* The first element of output element k's group: kshape is x's shape
 * with reduced dims of length 1. */
static const char *group_start(const GpNode *x, const Val *xv, const int64_t *kshape, int64_t k)
{
    const char *p = xv->data;
    for (int d = x->nd - 1; d >= 0; d--) {
        p += (k % kshape[d]) * xv->strides[d];
        k /= kshape[d];
    }
    return p;
}

/* argmin / argmax: the first best element of each group, its index in C
 * order over the reduced dims (one axis, or all for the flat index). */
static void arg_reduce(const GpNode *n, const GpNode *x, const Val *xv, GpOp op, uint64_t mask, const int64_t *kshape,
                       int64_t group, Val *out)
{
    size_t esize = gp_dtype_size(n->dtype), xsize = gp_dtype_size(x->dtype);
    int64_t count = gp_node_size(n);
    for (int64_t k = 0; k < count; k++) {
        const char *base = group_start(x, xv, kshape, k);
        int64_t best = 0, ridx[GP_MAXDIMS] = {0};
        GpScalar cur = {0};
        for (int64_t j = 0; j < group; j++) {
            const char *p = base;
            for (int d = 0; d < x->nd; d++)
                if (mask >> d & 1)
                    p += ridx[d] * xv->strides[d];
            GpScalar v = {0};
            memcpy(&v, p, xsize);
            if (j == 0 || gp_arg_better(op, x->dtype, v, cur))
                cur = v, best = j;
            for (int d = x->nd - 1; d >= 0; d--) {
                if (!(mask >> d & 1))
                    continue;
                if (++ridx[d] < x->shape[d])
                    break;
                ridx[d] = 0;
            }
        }
        memcpy(out->data + (size_t)k * esize, &best, esize);
    }
}

/* The other reductions with the ufunc's loop l, in NumPy's order as the
 * CPU kernels keep it (plan.c): the dims in the order NumPy's iterator
 * visited the recorded array's (n's in_order, else logical; this value's
 * own layout may differ: a C-ordered temporary, or the first half of a
 * split reduction); when the innermost one longer than 1 is reduced, each
 * group is one call of the loop over the reduced elements with stride 0
 * on out (NumPy's add sums such a call pairwise); otherwise
 * out[j] = op(out[j], x[i, j]) row by row in that order.
 * out starts as the identity (then every element is combined), or for
 * min / max as each group's first element (combining it again changes
 * nothing, NaN included).  ost: out's strides over kshape. */
static void loop_reduce(const GpNode *n, const GpNode *x, const Val *xv, GpOp op, uint64_t mask, const int64_t *kshape,
                        const int64_t *ost, const Loop *l, Val *out)
{
    size_t esize = gp_dtype_size(n->dtype);
    Space s;
    space(x, xv, mask, ost, n->has_in_order ? n->in_order : NULL, -1, 0, &s);
    int64_t rows = 1, inner = s.shape[s.nd - 1], idx[GP_MAXDIMS] = {0};
    for (int d = 0; d + 1 < s.nd; d++)
        rows *= s.shape[d];
    GpScalar id = gp_reduce_identity(op, n->dtype);
    for (int64_t k = 0; k < gp_node_size(n); k++)
        memcpy(out->data + (size_t)k * esize,
               op == GP_OP_MIN || op == GP_OP_MAX ? group_start(x, xv, kshape, k) : (const char *)&id, esize);
    int reducing = s.reduced[s.nd - 1];
    for (int64_t r = 0; r < rows; r++) {
        char *pi = xv->data, *po = out->data;
        for (int d = 0; d + 1 < s.nd; d++) {
            pi += idx[d] * s.ist[d];
            po += idx[d] * s.ost[d];
        }
        npy_intp dim = (npy_intp)inner, os = reducing ? 0 : (npy_intp)s.ost[s.nd - 1];
        npy_intp steps[3] = {os, (npy_intp)s.ist[s.nd - 1], os};
        char *args[3] = {po, pi, po};
        l->fn(args, &dim, steps, l->data);
        for (int d = s.nd - 2; d >= 0 && ++idx[d] == s.shape[d]; d--)
            idx[d] = 0;
    }
}

static GpStatus eval_reduce(GpNode *n, GpNode *x, GpOp op, uint64_t mask, Memo *m, Val *out)
{
    const Val *xv;
    GpStatus st = value(x, m, &xv);
    if (st != GP_OK)
        return st;
    /* the output over x's dims, reduced ones of length 1: n's memory order */
    int64_t kshape[GP_MAXDIMS], ost[GP_MAXDIMS], group = 1;
    for (int d = 0; d < x->nd; d++) {
        kshape[d] = mask >> d & 1 ? 1 : x->shape[d];
        group *= mask >> d & 1 ? x->shape[d] : 1;
    }
    int arg = gp_op_is_arg(op);
    size_t esize = gp_dtype_size(n->dtype);
    gp_contiguous_strides(x->nd, kshape, esize, ost);
    const Loop *l = NULL;
    GpDType same[2] = {x->dtype, x->dtype};
    if (!arg && !(l = find_loop(op, 2, same, n->dtype))) {
        gp_set_error("no NumPy loop for %s without the GIL", gp_op_name[op]);
        return GP_EUNSUPPORTED;
    }
    if ((st = temporary(n, out)) != GP_OK)
        return st;
    if (x->nd == 0) { /* a 0-d input reduces to itself (its index: 0) */
        int64_t zero = 0;
        memcpy(out->data, arg ? (const char *)&zero : xv->data, esize);
    } else if (group == 0 || gp_node_size(x) == 0) {
        GpScalar id = gp_reduce_identity(op, n->dtype);
        for (int64_t i = 0; i < gp_node_size(n); i++)
            memcpy(out->data + (size_t)i * esize, &id, esize);
    } else if (arg) {
        arg_reduce(n, x, xv, op, mask, kshape, group, out);
    } else {
        loop_reduce(n, x, xv, op, mask, kshape, ost, l, out);
    }
    return GP_OK;
}

static GpStatus eval_scan(GpNode *n, Memo *m, Val *out)
{
    GpNode *x = n->in[0];
    const Val *xv;
    GpStatus st = value(x, m, &xv);
    if (st != GP_OK)
        return st;
    GpDType same[2] = {x->dtype, x->dtype};
    const Loop *l = find_loop(n->op, 2, same, n->dtype);
    if (!l) {
        gp_set_error("no NumPy loop for %s without the GIL", gp_op_name[n->op]);
        return GP_EUNSUPPORTED;
    }
    if ((st = temporary(n, out)) != GP_OK)
        return st;
    int axis = __builtin_ctzll(n->reduce_mask);
    Space s;
    space(x, xv, n->reduce_mask, out->strides, NULL, axis, 1, &s);
    int64_t rows = 1, inner = s.shape[s.nd - 1], idx[GP_MAXDIMS] = {0};
    size_t esize = gp_dtype_size(n->dtype);
    for (int d = 0; d < s.nd; d++)
        if (s.shape[d] == 0)
            return GP_OK;
    for (int d = 0; d + 1 < s.nd; d++)
        rows *= s.shape[d];
    for (int64_t r = 0; r < rows; r++) {
        char *pi = xv->data, *po = out->data;
        for (int d = 0; d + 1 < s.nd; d++) {
            pi += idx[d] * s.ist[d];
            po += idx[d] * s.ost[d];
        }
        memcpy(po, pi, esize);
        /* out[i] = out[i-1] op in[i], as NumPy's accumulate calls the loop */
        if (inner > 1) {
            int64_t is = s.ist[s.nd - 1], os = s.ost[s.nd - 1];
            npy_intp dim = (npy_intp)(inner - 1), steps[3] = {(npy_intp)os, (npy_intp)is, (npy_intp)os};
            char *args[3] = {po, pi + is, po + os};
            l->fn(args, &dim, steps, l->data);
        }
        for (int d = s.nd - 2; d >= 0 && ++idx[d] == s.shape[d]; d--)
            idx[d] = 0;
    }
    return GP_OK;
}

/* A matrix product through the back end's matmul (on the resolver thread
 * it sums without OpenBLAS: core/blas.c), its operands made C-contiguous
 * here rather than by a compiled copy. */
static GpStatus eval_product(GpNode *n, Memo *m, Val *out)
{
    const Val *in[2];
    Val copy[2] = {{NULL, NULL, {0}, NULL, 0}, {NULL, NULL, {0}, NULL, 0}};
    GpStatus st = GP_OK;
    for (int i = 0; i < 2 && st == GP_OK; i++)
        st = value(n->in[i], m, &in[i]);
    for (int i = 0; i < 2 && st == GP_OK; i++) {
        const GpNode *x = n->in[i];
        int64_t want[GP_MAXDIMS];
        gp_contiguous_strides(x->nd, x->shape, gp_dtype_size(x->dtype), want);
        int contiguous = 1;
        for (int d = 0; d < x->nd; d++)
            contiguous &= x->shape[d] == 1 || in[i]->strides[d] == want[d];
        if (contiguous)
            continue;
        if ((st = temporary(x, &copy[i])) != GP_OK)
            break;
        char *base[2] = {in[i]->data, copy[i].data};
        int64_t strides[2][GP_MAXDIMS];
        memcpy(strides[0], in[i]->strides, sizeof strides[0]);
        memcpy(strides[1], copy[i].strides, sizeof strides[1]);
        CastCtx same = {x->dtype, x->dtype};
        for_rows(x->nd, x->shape, 2, base, strides, row_cast, &same);
        in[i] = &copy[i];
    }
    if (st == GP_OK && (st = temporary(n, out)) == GP_OK) {
        GpBlasOperand a = {n->in[0]->nd, n->in[0]->shape, in[0]->strides, in[0]->data};
        GpBlasOperand b = {n->in[1]->nd, n->in[1]->shape, in[1]->strides, in[1]->data};
        st = gp_backend()->matmul(n->dtype, a, b, out->data, NULL); /* into a temporary on the host */
    }
    free(copy[0].owned);
    free(copy[1].owned);
    return st;
}

/* The value of node n (memoized): its memory when computed, else a
 * temporary computed from its inputs' values. */
static GpStatus value(GpNode *n, Memo *m, const Val **out)
{
    for (int i = 0; i < m->n; i++)
        if (m->v[i]->node == n) {
            *out = m->v[i];
            return GP_OK;
        }
    Val v = {n, NULL, {0}, NULL, 0};
    GpStatus st = GP_OK;
    int computed = n->op != GP_OP_CONST && !n->materialized;
    if (computed) {
        /* the inputs first, so that the flags raised below are n's own
         * loop's, as NumPy tests them after each ufunc call */
        GpNode *src[3] = {n->replay_in, NULL, NULL};
        int nsrc = n->replay_in ? 1 : n->nin;
        for (int i = 0; !n->replay_in && i < n->nin; i++)
            src[i] = n->in[i];
        for (int i = 0; i < nsrc && st == GP_OK; i++) {
            const Val *ignored;
            st = value(src[i], m, &ignored);
        }
        if (st != GP_OK)
            return st;
        feclearexcept(FE_ALL_EXCEPT);
    }
    if (n->op == GP_OP_CONST) {
        v.data = (char *)&n->value; /* strides 0: broadcasts */
    } else if (n->materialized && (n->wrap || gp_leaf_unreadable(n))) {
        /* np.roll's copy, or of values from before a pending in-place write */
        if ((st = temporary(n, &v)) == GP_OK)
            st = gp_leaf_copy(n, v.data, v.strides); /* (a failure frees v.owned below) */
    } else if (n->materialized) {
        v.data = n->data;
        memcpy(v.strides, n->strides, sizeof v.strides);
    } else if (n->replay_in) {
        /* a reduction the planner rewrote as a map: NumPy's reduction */
        st = eval_reduce(n, n->replay_in, n->replay_op, n->replay_mask, m, &v);
    } else if (gp_op_kind[n->op] == GP_KIND_REDUCE) {
        st = eval_reduce(n, n->in[0], n->op, n->reduce_mask, m, &v);
    } else if (gp_op_kind[n->op] == GP_KIND_SCAN) {
        st = eval_scan(n, m, &v);
    } else if (gp_op_kind[n->op] == GP_KIND_MAP) {
        st = eval_map(n, m, &v);
    } else if (n->op == GP_OP_MATMUL) {
        st = eval_product(n, m, &v);
    } else {
        gp_set_error("the loop evaluator cannot compute %s", gp_op_name[n->op]);
        st = GP_EUNSUPPORTED;
    }
    if (computed)
        v.fpe = gp_fpe_of_fenv(fetestexcept(FE_ALL_EXCEPT));
    if (st == GP_OK && m->n == m->cap) { /* after the inputs, which added theirs */
        int cap = m->cap ? 2 * m->cap : 32;
        Val **vs = realloc(m->v, (size_t)cap * sizeof *vs);
        if (vs) {
            m->v = vs;
            m->cap = cap;
        }
    }
    Val *kept = st == GP_OK && m->n < m->cap ? malloc(sizeof *kept) : NULL;
    if (!kept) {
        free(v.owned);
        if (st == GP_OK)
            gp_set_error("no memory for the loop evaluator");
        return st == GP_OK ? GP_ENOMEM : st;
    }
    *kept = v;
    m->v[m->n++] = kept;
    *out = kept;
    return GP_OK;
}

/* The intermediates computed on the way to root whose arrays the program
 * holds (the node owns its buffer, as a kernel's extra output would) are
 * stored with root, as evaluate.c's store_intermediates stores them: left
 * pending, a later kernel would compute them again, with libmvec's
 * transcendentals, and they could differ from the values root was
 * computed from (np.cos(x) held as c, (2 * c).sum(-1) computed here for a
 * failed compile, then c's own kernel: 3724 of 6000 row sums differed
 * from c's).  held_intermediates takes them (references, before root's
 * store lets its inputs go), store_held stores them after root's (best
 * effort: a store that fails leaves its node pending) and drops the
 * references.  Core lock held. */
typedef struct {
    int n;
    GpNode **node; /* malloc: room for every value of the memo */
    const Val **val;
} Held;

static void held_intermediates(const GpNode *root, const Memo *m, Held *h)
{
    h->n = 0;
    h->node = malloc((size_t)(m->n + 1) * sizeof *h->node);
    h->val = malloc((size_t)(m->n + 1) * sizeof *h->val);
    for (int i = 0; h->node && h->val && i < m->n; i++) {
        GpNode *x = (GpNode *)m->v[i]->node; /* the DAG's node: const only to the value code */
        if (x != root && m->v[i]->owned && gp_node_is_held(x)) {
            gp_node_incref(x);
            h->node[h->n] = x;
            h->val[h->n++] = m->v[i];
        }
    }
}

/* gp_node_store of value v of node x, which takes C-contiguous values: a
 * map's value in its buffer layout (eval_map) through a C-ordered copy. */
static GpStatus store_value(GpNode *x, const Val *v)
{
    int64_t want[GP_MAXDIMS];
    gp_contiguous_strides(x->nd, x->shape, gp_dtype_size(x->dtype), want);
    int contiguous = 1;
    for (int d = 0; d < x->nd; d++)
        contiguous &= x->shape[d] == 1 || v->strides[d] == want[d];
    if (contiguous)
        return gp_node_store(x, v->data);
    Val c;
    GpStatus st = temporary(x, &c);
    if (st != GP_OK)
        return st;
    char *base[2] = {v->data, c.data};
    int64_t strides[2][GP_MAXDIMS];
    memcpy(strides[0], v->strides, sizeof strides[0]);
    memcpy(strides[1], c.strides, sizeof strides[1]);
    CastCtx same = {x->dtype, x->dtype};
    for_rows(x->nd, x->shape, 2, base, strides, row_cast, &same);
    st = gp_node_store(x, c.data);
    free(c.owned);
    return st;
}

static void store_held(Held *h, int store)
{
    for (int i = 0; i < h->n; i++) {
        GpNode *x = h->node[i];
        if (store && !x->materialized) {
            GpStatus st = gp_node_prepare_store(x);
            if (st == GP_OK)
                st = store_value(x, h->val[i]);
            if (st != GP_OK)
                gp_node_abandon_store(x);
        }
        gp_node_decref(x);
    }
    free(h->node);
    free(h->val);
    h->n = 0;
}

/* The warnings NumPy would give for the nodes the memo computed: each
 * node's own flags that its error state watches, queued for the Python
 * thread (gp_fpe_queue; no Python here).  Matrix products are left out:
 * their flags are OpenBLAS's, not a NumPy loop's. */
static void queue_warnings(const Memo *m)
{
    for (int i = 0; i < m->n; i++) {
        const GpNode *x = m->v[i]->node;
        unsigned bits = m->v[i]->fpe & x->errstate & 15u;
        if (bits && gp_op_kind[x->op] != GP_KIND_LIBRARY && !gp_op_is_arg(x->op))
            gp_fpe_queue(x, bits);
    }
}

GpStatus gp_eval_loops(GpNode *n)
{
    gp_node_incref(n);
    GpStatus st = gp_node_inputs_ready(n);
    if (st == GP_OK && !n->materialized)
        st = gp_node_prepare_store(n);
    Memo m = {NULL, 0, 0};
    if (st == GP_OK && !n->materialized) {
        fenv_t env;
        feholdexcept(&env);
        const Val *v;
        if ((st = value(n, &m, &v)) == GP_OK) {
            queue_warnings(&m);
            Held h;
            held_intermediates(n, &m, &h);
            st = store_value(n, v);
            store_held(&h, st == GP_OK);
        }
        fesetenv(&env);
    }
    if (st == GP_OK)
        gp_stats.loop_evaluations++;
    else
        gp_node_abandon_store(n);
    for (int i = 0; i < m.n; i++) {
        free(m.v[i]->owned);
        free(m.v[i]);
    }
    free(m.v);
    gp_node_decref(n);
    return st;
}

int gp_fpe_later(GpNode *const *nodes, int count, unsigned flags)
{
    (void)flags; /* the kernel's, for all of its nodes: each node's own are found here */
    Memo m = {NULL, 0, 0};
    fenv_t env;
    feholdexcept(&env);
    GpStatus st = GP_OK;
    for (int i = 0; i < count && st == GP_OK; i++) {
        const Val *ignored;
        st = value(nodes[i], &m, &ignored);
    }
    if (st == GP_OK)
        queue_warnings(&m);
    fesetenv(&env);
    for (int i = 0; i < m.n; i++) {
        free(m.v[i]->owned);
        free(m.v[i]);
    }
    free(m.v);
    return st == GP_OK ? 0 : -1;
}
