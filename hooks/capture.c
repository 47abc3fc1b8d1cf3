/* hooks/capture.c -- turning NumPy calls on grumpy arrays into DAG nodes.
 *
 * A ufunc call is captured when (1) the ufunc is a row of core/ops.def,
 * (2) every operand is an ndarray or a Python / NumPy scalar of a dtype
 * grumpy computes in, (3) no keyword but out= (where=, casting=, subok= with
 * it) is given (hooks/args.c reads keywords and axes as NumPy does), (4) the
 * operands broadcast, and (5) the result is large (GRUMPY_MIN_BYTES) or an
 * operand is already pending.  Steps:
 *   1. Classify operands; a dtype code per operand (Python int / float are
 *      "weak", NEP 50).
 *   2. Ask NumPy for the loop dtypes: ufunc.resolve_dtypes, cached per
 *      (op, operand codes).  NumPy's refusal means "not captured", and the
 *      fallback then raises NumPy's own error at the same statement.
 *   3. Scalars become constant nodes, converted to the loop dtype by NumPy
 *      (a Python int that does not fit is NumPy's call: a comparison with
 *      it has an answer, arithmetic raises NumPy's OverflowError).
 *   4. Arrays become their pending node or a leaf; a CAST node converts an
 *      operand whose dtype differs from the loop's.
 *   5. The map node gets a fresh grumpy.ndarray as its output.
 * Reductions (ufunc.reduce of add, multiply, minimum, maximum, logical_or,
 * logical_and) are captured the same way; a full reduction is computed at
 * once and returned as NumPy's scalar type.  gp_capture_function sends
 * NumPy functions to their capture: where / clip / outer here, matrix
 * products and contractions to capture_linalg.c, copyto and concatenate to
 * capture_writes.c.
 */
#include "capture.h"

/* In-place writes of computed operands into computed memory smaller than
 * this (bytes) are NumPy's (capture_map): 8x GRUMPY_MIN_BYTES from the
 * default up; below the default (capture at every size, for testing) the
 * same as every other capture. */
static int64_t inplace_min_bytes(void)
{
    return gp_hooks.min_bytes < ((int64_t)1 << 20) ? gp_hooks.min_bytes : 8 * gp_hooks.min_bytes;
}

/* "Do no harm" (GRUMPY_ADAPTIVE): a lazy write into a view of less than
 * half of its buffer's bytes is NumPy's, its value computed first.  The
 * kernel of an in-place write stages the whole buffer, its old contents
 * copied (plan.c copy_contents): one column of a 12-column matrix
 * (tools/programs/gram_schmidt.py), a red-black sweep's quarter of a grid
 * (poisson_sor.py) moved 4-12x the bytes the write itself does. */
int gp_write_stages_too_much(PyArrayObject *view, const GpBuffer *b)
{
    return gp_config.lone_max_bytes > 0 && (int64_t)PyArray_NBYTES(view) * 2 < (int64_t)b->nbytes;
}

/* ---- loop dtype cache -------------------------------------------------- */

typedef struct {
    uint32_t key;   /* 0 = empty */
    int8_t loop[4]; /* loop dtypes: inputs..., output; loop[0] = -1: not capturable */
} CacheEntry;

#define CACHE_SIZE 8192
static CacheEntry cache[CACHE_SIZE];

static uint32_t cache_key(int kind, int op, int nin, const int *codes)
{
    uint32_t k = (uint32_t)(kind * GP_NOPS + op) + 1;
    for (int i = 0; i < 3; i++)
        k = k * 16 + (uint32_t)(i < nin ? codes[i] + 1 : 0);
    return k;
}

static CacheEntry *cache_slot(uint32_t key)
{
    uint32_t h = key * 2654435761u;
    for (uint32_t i = 0; i < CACHE_SIZE; i++) {
        CacheEntry *e = &cache[(h + i) % CACHE_SIZE];
        if (e->key == key || e->key == 0)
            return e;
    }
    return NULL;
}

static PyObject *code_object(int code)
{
    if (code == CODE_PYINT) {
        Py_INCREF(&PyLong_Type);
        return (PyObject *)&PyLong_Type;
    }
    if (code == CODE_PYFLOAT) {
        Py_INCREF(&PyFloat_Type);
        return (PyObject *)&PyFloat_Type;
    }
    return (PyObject *)gp_descr_from_dtype((GpDType)code);
}

/* Fills loop[] for op over the codes (asks NumPy on a miss).  Returns 0 if
 * capturable, -1 if not (no exception). */
int gp_resolve_loop(GpOp op, int nin, const int *codes, int reduction, int8_t *loop)
{
    uint32_t key = cache_key(reduction, op, nin, codes);
    CacheEntry *e = cache_slot(key);
    if (e && e->key == key) {
        memcpy(loop, e->loop, 4);
        return loop[0] < 0 ? -1 : 0;
    }
    int8_t res[4] = {-1, -1, -1, -1};
    PyObject *ufunc = gp_hooks.ufunc_of_op[op];
    PyObject *tup = PyTuple_New(nin + 1), *r = NULL;
    if (!tup)
        goto done;
    for (int i = 0; i < nin; i++) {
        PyObject *o = (reduction && i == 0) ? (Py_INCREF(Py_None), Py_None) : code_object(codes[reduction ? 0 : i]);
        PyTuple_SET_ITEM(tup, i, o);
    }
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(tup, nin, Py_None);
    if (op == GP_OP_WHERE) {
        /* np.where(c, x, y): x and y promote as np.result_type (weak scalars) */
        PyObject *np = PyImport_ImportModule("numpy");
        PyObject *rt = np ? PyObject_GetAttrString(np, "result_type") : NULL;
        PyObject *x = codes[1] == CODE_PYINT     ? PyLong_FromLong(0)
                      : codes[1] == CODE_PYFLOAT ? PyFloat_FromDouble(0)
                                                 : code_object(codes[1]);
        PyObject *y = codes[2] == CODE_PYINT     ? PyLong_FromLong(0)
                      : codes[2] == CODE_PYFLOAT ? PyFloat_FromDouble(0)
                                                 : code_object(codes[2]);
        PyObject *d = rt && x && y ? PyObject_CallFunctionObjArgs(rt, x, y, NULL) : NULL;
        Py_XDECREF(np);
        Py_XDECREF(rt);
        Py_XDECREF(x);
        Py_XDECREF(y);
        if (d && PyArray_DescrCheck(d)) {
            int t = gp_dtype_from_descr((PyArray_Descr *)d);
            res[0] = GP_BOOL;
            res[1] = res[2] = res[3] = (int8_t)t;
            if (t < 0)
                res[0] = -1;
        }
        Py_XDECREF(d);
        goto done;
    }
    PyObject *fn = PyObject_GetAttrString(ufunc, "resolve_dtypes");
    if (!fn)
        goto done;
    if (reduction) {
        PyObject *kw = Py_BuildValue("{sO}", "reduction", Py_True);
        PyObject *args = PyTuple_Pack(1, tup);
        /* reductions pass (None, dtype, None) */
        r = kw && args ? PyObject_Call(fn, args, kw) : NULL;
        Py_XDECREF(kw);
        Py_XDECREF(args);
    } else {
        r = PyObject_CallOneArg(fn, tup);
    }
    Py_DECREF(fn);
    if (!r || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) != nin + 1)
        goto done;
    for (int i = 0; i <= nin; i++) {
        PyObject *d = PyTuple_GET_ITEM(r, i);
        int t = PyArray_DescrCheck(d) ? gp_dtype_from_descr((PyArray_Descr *)d) : -1;
        if (t < 0) {
            res[0] = -1;
            goto done;
        }
        res[i < nin ? i : 3] = (int8_t)t;
    }
    /* codegen computes every input of a map in one dtype (but where/clip) */
    if (!reduction) {
        for (int i = 1; i < nin; i++)
            if (res[i] != res[0])
                res[0] = -1;
        if (res[0] >= 0 && !gp_backend()->supports(op, (GpDType)res[0]))
            res[0] = -1;
    }
done:
    PyErr_Clear();
    Py_XDECREF(tup);
    Py_XDECREF(r);
    if (e) {
        e->key = key;
        memcpy(e->loop, res, 4);
    }
    memcpy(loop, res, 4);
    return res[0] < 0 ? -1 : 0;
}

/* ---- operands ---------------------------------------------------------- */

/* An ndarray of another subclass (np.ma.MaskedArray, np.matrix, memmap,
 * a user's): its own __array_wrap__ / __array_finalize__ give NumPy's
 * result its meaning (a masked product keeps its mask), so an operation
 * with one is NumPy's. */
int gp_foreign_subclass(PyObject *o)
{
    return PyArray_Check(o) && Py_TYPE(o) != &PyArray_Type && Py_TYPE(o) != &GpArray_Type;
}

int gp_classify(PyObject *o, Operand *x)
{
    x->obj = o;
    x->library = 0;
    x->is_array = 0;
    x->pending = 0;
    if (gp_foreign_subclass(o)) {
        gp_declined(GP_WHY_SUBCLASS);
        return -1;
    }
    if (PyArray_Check(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        x->code = gp_dtype_from_descr(PyArray_DESCR(a));
        x->is_array = 1;
        if (x->code < 0 || PyArray_NDIM(a) > GP_MAXDIMS) {
            gp_declined(x->code < 0 ? GP_WHY_DTYPE : GP_WHY_DIMS);
            return -1;
        }
        x->pending = gp_array_is_pending(a);
        return 0;
    }
    if (PyBool_Check(o)) {
        x->code = GP_BOOL;
        return 0;
    }
    if (PyLong_CheckExact(o)) {
        x->code = CODE_PYINT;
        return 0;
    }
    if (PyFloat_CheckExact(o)) {
        x->code = CODE_PYFLOAT;
        return 0;
    }
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        x->code = d ? gp_dtype_from_descr(d) : -1;
        Py_XDECREF(d);
        PyErr_Clear();
        if (x->code < 0)
            gp_declined(GP_WHY_DTYPE);
        return x->code < 0 ? -1 : 0;
    }
    gp_declined(PyComplex_Check(o) ? GP_WHY_DTYPE : GP_WHY_OPERAND);
    return -1;
}

/* A constant node holding scalar o converted to t by NumPy.  New reference,
 * or NULL with an exception (NumPy's, e.g. OverflowError). */
static GpNode *const_node(PyObject *o, GpDType t, int strong)
{
    PyArray_Descr *descr = gp_descr_from_dtype(t);
    PyObject *a = PyArray_FromAny(o, descr, 0, 0, strong ? NPY_ARRAY_FORCECAST : 0, NULL);
    if (!a) {
        /* a Python int that does not fit: NumPy decides (comparisons such
         * as uint8 == -1 have an answer; arithmetic raises OverflowError) */
        if (!strong && PyErr_ExceptionMatches(PyExc_OverflowError))
            PyErr_Clear();
        return NULL;
    }
    GpScalar v;
    v.u = 0;
    memcpy(&v, PyArray_DATA((PyArrayObject *)a), gp_dtype_size(t));
    Py_DECREF(a);
    if (t == GP_BOOL)
        v.u = v.b != 0;
    GpNode *n = gp_node_const(t, v);
    if (!n)
        PyErr_NoMemory();
    return n;
}

/* The node for operand x in loop dtype t.  New reference; NULL with an
 * exception on error, NULL without one when x cannot be captured. */
GpNode *gp_operand_node(const Operand *x, GpDType t)
{
    if (!x->is_array)
        return const_node(x->obj, t, x->code < GP_NDTYPES);
    GpNode *n =
        x->library ? gp_node_for_library_operand((PyArrayObject *)x->obj) : gp_node_for_array((PyArrayObject *)x->obj);
    if (!n || n->dtype == t)
        return n;
    gp_lock();
    GpNode *c = gp_node_map(GP_OP_CAST, t, 1, &n, n->nd, n->shape);
    gp_node_decref(n);
    gp_unlock();
    if (!c)
        PyErr_NoMemory();
    return c;
}

static int broadcast(const Operand *x, int nin, int *nd, int64_t *shape)
{
    *nd = 0;
    for (int i = 0; i < nin; i++)
        if (x[i].is_array && PyArray_NDIM((PyArrayObject *)x[i].obj) > *nd)
            *nd = PyArray_NDIM((PyArrayObject *)x[i].obj);
    for (int d = 0; d < *nd; d++)
        shape[d] = 1;
    for (int i = 0; i < nin; i++) {
        if (!x[i].is_array)
            continue;
        PyArrayObject *a = (PyArrayObject *)x[i].obj;
        int off = *nd - PyArray_NDIM(a);
        for (int d = 0; d < PyArray_NDIM(a); d++) {
            int64_t s = PyArray_DIM(a, d);
            if (shape[off + d] == 1)
                shape[off + d] = s;
            else if (s != 1 && s != shape[off + d])
                return -1;
        }
    }
    return 0;
}

/* Whether NumPy reshapes a to shape[0..ns) as a view, for a shape whose
 * entries are products of consecutive dims of a (dims merged in order, as
 * ravel and the contractions' (batch..., M, K) do): each merged group's
 * dims longer than 1 must be contiguous with each other (stride[k] ==
 * stride[k+1] * dim[k+1]).  0 when NumPy may copy. */
static int reshape_is_view(PyArrayObject *a, const npy_intp *shape, int ns)
{
    int nd = PyArray_NDIM(a), i = 0;
    for (int j = 0; j < ns; j++) {
        if (shape[j] == 1)
            continue;
        npy_intp got = 1;
        int last = -1;
        while (i < nd && got < shape[j]) {
            npy_intp n = PyArray_DIM(a, i);
            if (n != 1) {
                if (last >= 0 && PyArray_STRIDE(a, last) != PyArray_STRIDE(a, i) * n)
                    return 0;
                last = i;
                got *= n;
            }
            i++;
        }
        if (got != shape[j])
            return 0;
    }
    for (; i < nd; i++)
        if (PyArray_DIM(a, i) != 1)
            return 0;
    return 1;
}

PyObject *gp_newshape_computed(PyArrayObject *a, PyArray_Dims *shape)
{
    if (!reshape_is_view(a, shape->ptr, shape->len) && gp_array_is_pending(a) && gp_ensure_computed(a) < 0)
        return NULL;
    return PyArray_Newshape(a, shape, NPY_CORDER);
}

int64_t gp_shape_size(int nd, const int64_t *shape)
{
    int64_t s = 1;
    for (int d = 0; d < nd; d++)
        s *= shape[d];
    return s;
}

/* The Python value of new node r (its reference is consumed): a NumPy
 * scalar of its dtype when it is 0-d (computed now, as NumPy returns full
 * reductions and vector dot products), else its lazy array.  New reference
 * or NULL. */
PyObject *gp_node_result(GpNode *r)
{
    PyObject *res = NULL;
    if (r->nd == 0) {
        if (gp_materialize_or_raise(r) == 0) {
            PyArray_Descr *d = gp_descr_from_dtype(r->dtype);
            res = PyArray_Scalar(r->data, d, NULL);
            Py_DECREF(d);
        }
    } else {
        res = gp_array_for_node(r);
    }
    gp_node_release(r);
    return res;
}

/* Records reduction op of array operand x (read as in_t) over the axes in
 * mask into a result of dtype out_t; Py_Ellipsis when x is computed and
 * small (NumPy does it at once).  A NumPy scalar for a full reduction.
 * New reference, Py_NotImplemented, or NULL with an exception. */
/* Whether a reduction over mask of computed a runs on the device that
 * holds a (the GPU back end; NumPy would wait for its copy to the host):
 * when the reduced axes of more than one element are one run, which one
 * kernel reduces (plan.c; NumPy reduces the others after a copy either
 * way). */
static int reduced_on_device(PyArrayObject *a, uint64_t mask)
{
    if (!gp_backend()->resident)
        return 0;
    int seen = 0, ended = 0;
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        if (PyArray_DIM(a, d) == 1)
            continue;
        int r = (int)(mask >> d & 1);
        if (r && ended)
            return 0;
        ended |= seen && !r;
        seen |= r;
    }
    return gp_array_on_device(a);
}

/* Operands that are small views (under GRUMPY_MIN_BYTES) of a larger
 * pending buffer are computed now -- the buffer's whole producer -- when
 * the operation itself is small (its result, or a reduction's or scan's
 * input, under the threshold): NumPy then does the operation at once, as
 * for computed operands.  Left pending, each such view was pushed into
 * the producer: a kernel launch per statement that recomputed the view's
 * elements (about 12 us for 2000 float64 on 2 threads, NumPy's operation
 * 1 us), every pass of a loop over rows (a Kalman filter reading obs[t]
 * of a pending obs: 6000 launches, 0.93x NumPy).  NumPy computed the
 * producer whole when the program made it, so computing it whole here
 * costs no more than NumPy did; a buffer the GPU holds is left pending
 * (each row would copy the whole buffer back).  Updates x[i].pending.
 * 0, or -1 with the producer's exception (FloatingPointError ...). */
static int compute_small_views(Operand *x, int n)
{
    for (int i = 0; i < n; i++) {
        if (!x[i].pending)
            continue;
        PyArrayObject *a = (PyArrayObject *)x[i].obj;
        GpBuffer *b = gp_buffer_lookup(PyArray_DATA(a));
        if (!b || (int64_t)PyArray_NBYTES(a) >= gp_hooks.min_bytes || (int64_t)b->nbytes < gp_hooks.min_bytes ||
            gp_array_on_device(a))
            continue;
        if (gp_buffer_compute_or_raise(b) < 0)
            return -1;
        x[i].pending = b->producer != NULL;
    }
    return 0;
}

static PyObject *record_reduction(Operand *x, GpOp op, GpDType in_t, GpDType out_t, uint64_t mask, int keepdims)
{
    /* "Do no harm" (GRUMPY_ADAPTIVE, sites.c): a computed operand with a
     * small result -- nothing fuses into the reduction and its result is
     * wanted at once, so the kernel could at best match NumPy's own loop,
     * and one pairwise leaf per call is slower (x.sum() of 1-64 MiB:
     * 1.1-2.1x NumPy's time).  NumPy does it. */
    PyArrayObject *xa = (PyArrayObject *)x->obj;
    if (x->pending && (int64_t)PyArray_NBYTES(xa) < gp_hooks.min_bytes && compute_small_views(x, 1) < 0)
        return NULL;
    int64_t kept = 1;
    for (int d = 0; d < PyArray_NDIM(xa); d++)
        if (!(mask >> d & 1))
            kept *= PyArray_DIM(xa, d);
    if (!x->pending &&
        ((int64_t)PyArray_NBYTES(xa) < gp_hooks.min_bytes ||
         (gp_config.lone_max_bytes > 0 && kept * (int64_t)gp_dtype_size(out_t) < gp_hooks.min_bytes)) &&
        !reduced_on_device(xa, mask)) {
        gp_hooks.eager_small++;
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    GpNode *in = gp_operand_node(x, in_t);
    if (!in) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    gp_lock();
    GpNode *r = gp_node_reduce(op, out_t, in, mask, keepdims);
    if (r && x->is_array && PyArray_NDIM(xa) == in->nd) {
        int64_t strides[GP_MAXDIMS];
        for (int d = 0; d < in->nd; d++)
            strides[d] = PyArray_STRIDE(xa, d);
        gp_node_set_reduce_order(r, strides); /* NumPy's order of the array's dims */
    }
    if (r && x->is_array && x->code != (int)in_t && in->op == GP_OP_CAST && !in->materialized && in->refcnt == 2) {
        /* the cast gp_operand_node made for the reduction (held by this
         * call and the reduction only, not a program's own astype): NumPy
         * casts inside the reduction, and its warnings are one
         * operation's, "... encountered in reduce" */
        in->cast_for_reduce = 1;
        in->serial = r->serial;
    }
    gp_node_decref(in);
    gp_unlock();
    if (!r)
        return PyErr_NoMemory();
    gp_record_done();
    return gp_node_result(r);
}

/* Whether two elements of a share memory (a zero stride over a dim longer
 * than 1, or strides that make rows overlap: as_strided views).  A lazy
 * write into such a view would be taken as its own value, where memory
 * keeps only the last element written to each address: NumPy's. */
int gp_has_internal_overlap(PyArrayObject *a)
{
    int nd = PyArray_NDIM(a), order[GP_MAXDIMS], n = 0;
    for (int d = 0; d < nd; d++) {
        if (PyArray_DIM(a, d) == 0)
            return 0;
        if (PyArray_DIM(a, d) > 1)
            order[n++] = d;
    }
    /* dims by |stride|, smallest first: each must step past the extent of
     * the smaller ones */
    for (int i = 1; i < n; i++)
        for (int j = i;
             j > 0 && llabs((long long)PyArray_STRIDE(a, order[j])) < llabs((long long)PyArray_STRIDE(a, order[j - 1]));
             j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    long long extent = (long long)PyArray_ITEMSIZE(a);
    for (int i = 0; i < n; i++) {
        long long st = llabs((long long)PyArray_STRIDE(a, order[i]));
        if (st < extent)
            return 1;
        extent = st * (PyArray_DIM(a, order[i]) - 1) + extent;
    }
    return 0;
}

/* Records op over the operands; Py_NotImplemented / Py_Ellipsis (eager
 * because small) when not captured.  out, if not NULL, is an out= array:
 * captured only when it is a pending result of the loop's dtype and the
 * broadcast shape (its node is replaced: an in-place op stays lazy).
 * where (with out only; NULL = everywhere) is a boolean array: elements
 * where it is False keep out's old values (where(mask, op(...), out)).
 * New reference or NULL. */

/* Stride of array operand x along result dim d of an nd-dim broadcast
 * (0 where x broadcasts). */
static int64_t bstride(PyArrayObject *x, int nd, int d)
{
    int xd = d - (nd - PyArray_NDIM(x));
    return xd < 0 || PyArray_DIM(x, xd) == 1 ? 0 : (int64_t)PyArray_STRIDE(x, xd);
}

int gp_like_order(PyArrayObject *a, int *perm)
{
    int nd = PyArray_NDIM(a);
    if (nd < 2 || PyArray_IS_C_CONTIGUOUS(a))
        return 0;
    if (PyArray_IS_F_CONTIGUOUS(a)) { /* the dims reversed */
        for (int i = 0; i < nd; i++)
            perm[i] = nd - 1 - i;
        return 1;
    }
    /* else a stable sort by |stride|, largest first (NumPy's
     * PyArray_CreateSortedStridePerm): every dim votes */
    int64_t st[1][GP_MAXDIMS], vote[1][GP_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        st[0][d] = PyArray_STRIDE(a, d);
        vote[0][d] = 1;
    }
    return gp_vote_axis_order(nd, 1, (const int64_t(*)[GP_MAXDIMS])st, (const int64_t(*)[GP_MAXDIMS])vote, 0, perm);
}

/* NumPy's order='K' for a new element-wise result of nd dims from the
 * operands objs[0..n) (arrays among them; right-aligned broadcasting): the
 * dim order its ufunc iterator allocates (gp_best_axis_order over the
 * arrays' strides, 0 where broadcast).  perm: slowest dim first.  Returns
 * 0 when that is C order (nothing to do). */
int gp_k_order(PyObject *const *objs, int n, int nd, int *perm)
{
    int any = 0;
    for (int k = 0; k < n; k++)
        any |= PyArray_Check(objs[k]) && PyArray_NDIM((PyArrayObject *)objs[k]) >= 2 &&
               !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)objs[k]);
    if (!any || nd < 2)
        return 0;
    int64_t st[8][GP_MAXDIMS];
    int nop = 0;
    for (int k = 0; k < n && nop < 8; k++) { /* (a ufunc's operands: at most 3) */
        if (!PyArray_Check(objs[k]))
            continue;
        for (int d = 0; d < nd; d++)
            st[nop][d] = bstride((PyArrayObject *)objs[k], nd, d);
        nop++;
    }
    return gp_best_axis_order(nd, nop, (const int64_t(*)[GP_MAXDIMS])st, perm);
}

/* The pending in-place writer of b when it writes exactly out's elements
 * and nothing reads it yet: the next write into out can take its place
 * (gp_node_take_output_view), reading it fused.  Nothing else reads b's
 * old values then: readers recorded before it were computed when it was
 * made (check_out's flush), later ones read it (gp_node_for_array) or
 * computed it (views).  Borrowed, or NULL.  Core lock held. */
static GpNode *writer_of(GpBuffer *b, PyArrayObject *o)
{
    GpNode *w = b->writer;
    if (!w || w->materialized || w->completing || !w->out_view || b->producer != w || w->out_data != PyArray_DATA(o) ||
        w->nd != PyArray_NDIM(o) || w->dtype != (GpDType)gp_dtype_from_descr(PyArray_DESCR(o)))
        return NULL;
    for (int d = 0; d < w->nd; d++)
        if (w->shape[d] != PyArray_DIM(o, d) || (w->shape[d] > 1 && w->out_strides[d] != PyArray_STRIDE(o, d)))
            return NULL;
    return w;
}

GpStatus gp_settle_other_writer_locked(GpBuffer *b, GpNode *n)
{
    /* until b's producer is n or none: computing one releases the core
     * lock at times (NumPy's first launches, FP-flag reports, waiting for
     * another thread's completing kernel), and another thread may record
     * a writer meanwhile */
    for (long tries = 0; tries < 1000000; tries++) {
        GpNode *p = b->producer;
        if (!p || p == n)
            return GP_OK;
        GpStatus st = gp_buffer_compute_locked(b);
        if (st != GP_OK)
            return st;
    }
    gp_set_error("other threads kept recording writes into this buffer");
    return GP_EUNSUPPORTED;
}

static int chainable_writer(GpBuffer *b, PyArrayObject *o)
{
    gp_lock();
    GpNode *w = writer_of(b, o);
    int ok = w && w->nusers == 0;
    gp_unlock();
    return ok;
}

/* Edges from n to w. */
static int edges_to(const GpNode *n, const GpNode *w)
{
    int e = 0;
    for (int i = 0; i < n->nin; i++)
        e += n->in[i] == w;
    return e;
}

/* Whether pending out array o, which an operation is about to overwrite
 * whole, holds the value of an operation nobody has read, one that may
 * warn, or that reads a pending value that may (gp_node_may_warn):
 * `y = x ** x; np.multiply(x, x, out=y)`, `y = x // x` of integers with
 * zeros.  Rebound to the new operation (check_out), the power would never
 * be computed, and NumPy's warning for it never given (fuzzer cases
 * 656001269, 658000602, 928004199); such a value is computed first.  Not
 * when an operand is o (the operation reads it) or anything else reads
 * it. */
static int overwritten_unread(PyArrayObject *o, PyObject *const *objs, const Operand *x, int nin)
{
    for (int i = 0; i < nin; i++)
        if (x[i].is_array && objs[i] == (PyObject *)o)
            return 0;
    GpNode *p = gp_pending_node_of(o);
    gp_lock();
    int dead = p && !p->materialized && p->nusers == 0 && gp_node_may_warn(p);
    gp_unlock();
    return dead;
}

/* What gp_capture_map does with an out= argument (check_out). */
enum { OUT_OK, OUT_NUMPY, OUT_EAGER, OUT_ERROR };

/* Checks out= (and where=) of an element-wise op with result dtype out_t
 * and shape[0..nd): OUT_OK (*inplace: the computed buffer a lazy in-place
 * write goes into, NULL when out is pending), OUT_NUMPY (NumPy does it),
 * OUT_EAGER (NumPy at once: too small to be worth a lazy write), or
 * OUT_ERROR (exception set). */
static int check_out(PyObject *out, PyObject *where, GpDType out_t, int nd, const int64_t *shape, Operand *x,
                     PyObject *const *objs, int nin, int any_pending, GpBuffer **inplace)
{
    PyArrayObject *o = (PyArrayObject *)out;
    *inplace = NULL;
    if (!PyArray_Check(out) || gp_dtype_from_descr(PyArray_DESCR(o)) != (int)out_t || PyArray_NDIM(o) != nd ||
        !PyArray_ISWRITEABLE(o) || PyArray_NBYTES(o) == 0)
        return OUT_NUMPY;
    for (int d = 0; d < nd; d++)
        if (PyArray_DIM(o, d) != shape[d])
            return OUT_NUMPY;
    Operand xm;
    if (where && (gp_classify(where, &xm) < 0 || xm.code != GP_BOOL || !gp_broadcasts_to((PyArrayObject *)where, o) ||
                  (PyArray_NBYTES((PyArrayObject *)where) != 0 &&
                   gp_buffer_lookup(PyArray_DATA((PyArrayObject *)where)) == gp_buffer_lookup(PyArray_DATA(o)))))
        return OUT_NUMPY;
    if (gp_pending_node_of(o)) {
        if (!overwritten_unread(o, objs, x, nin))
            return OUT_OK;
        /* its warnings are NumPy's, who computed it before the write */
        if (gp_ensure_computed(o) < 0)
            return OUT_ERROR;
    }
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA(o));
    if (!b || PyArray_NBYTES(o) < gp_hooks.min_bytes || gp_has_internal_overlap(o))
        return OUT_NUMPY;
    if (gp_write_stages_too_much(o, b))
        return OUT_EAGER;
    if (!any_pending && (int64_t)PyArray_NBYTES(o) < inplace_min_bytes()) {
        /* computed operands into computed memory: NumPy's in-place loop at
         * once (a lazy write protects the populated pages and moves them
         * around its kernel: tools/overhead.py measured `a += b; a *= 0.5`
         * 4.5x slower than NumPy at 1 MiB, 2.0x at 4 MiB, 0.62x at 16 MiB) */
        return OUT_EAGER;
    }
    /* operands in the same memory must be exactly out (NumPy copies
     * partially overlapping ones first: left to NumPy) */
    for (int i = 0; i < nin; i++) {
        if (!x[i].is_array)
            continue;
        PyArrayObject *xi = (PyArrayObject *)objs[i];
        if (PyArray_NBYTES(xi) == 0 || gp_buffer_lookup(PyArray_DATA(xi)) != b)
            continue;
        if (PyArray_DATA(xi) != PyArray_DATA(o) || PyArray_NDIM(xi) != nd ||
            !PyArray_EquivTypes(PyArray_DESCR(xi), PyArray_DESCR(o)))
            return OUT_NUMPY;
        for (int d = 0; d < nd; d++)
            if (PyArray_DIM(xi, d) != shape[d] || (shape[d] > 1 && PyArray_STRIDE(xi, d) != PyArray_STRIDE(o, d)))
                return OUT_NUMPY;
    }
    if (!where && chainable_writer(b, o)) {
        *inplace = b; /* the pending in-place write goes on in this one (bind_result) */
        return OUT_OK;
    }
    /* the old values must be read by whoever is waiting for them */
    if (gp_buffer_compute_writes_or_raise(b) < 0)
        return OUT_ERROR;
    if (b->nreaders > 0 && gp_dag_flush() != GP_OK) {
        PyErr_Format(PyExc_RuntimeError, "grumpy flush failed: %s", gp_last_error());
        return OUT_ERROR;
    }
    *inplace = b;
    return OUT_OK;
}

/* The recorded node n of gp_capture_map as its result: a lazy write into
 * out's computed memory (inplace), out rebound to n (a pending out), or a
 * new array.  New reference, NULL with an exception, or NotImplemented. */
static PyObject *bind_result(GpNode *n, PyObject *out, GpBuffer *inplace, PyObject *const *objs, int nin)
{
    PyObject *res;
    int nd = n->nd;
    if (inplace) {
        PyArrayObject *o = (PyArrayObject *)out;
        int64_t strides[GP_MAXDIMS];
        for (int d = 0; d < nd; d++)
            strides[d] = PyArray_STRIDE(o, d);
        gp_lock();
        GpNode *w = writer_of(inplace, o);
        GpStatus st = GP_OK;
        if (w && edges_to(n, w) > 0 && w->nusers == edges_to(n, w))
            gp_node_take_output_view(n, inplace); /* check_out's chain: n reads w only */
        else if (w && (st = gp_node_materialize_locked(w)) != GP_OK)
            gp_set_error("an in-place write could not be computed");
        if (st == GP_OK && inplace->producer != n && (st = gp_settle_other_writer_locked(inplace, n)) == GP_OK)
            gp_node_set_output_view(n, inplace, PyArray_DATA(o), strides);
        gp_unlock();
        if (st != GP_OK) {
            gp_raise_status(st);
            return NULL;
        }
        res = out;
        Py_INCREF(res);
        if (n->weight > gp_hooks.max_fuse && gp_materialize_or_raise(n) < 0)
            Py_CLEAR(res);
    } else if (out) {
        int rc = gp_rebind_output((PyArrayObject *)out, n);
        res = rc == 0 ? (Py_INCREF(out), out) : NULL;
        if (rc == -1) {
            /* out stopped being pending while operands were recorded:
             * compute n and let NumPy do the write */
            res = Py_NotImplemented;
            Py_INCREF(res);
        }
    } else {
        int perm[GP_MAXDIMS];
        if (gp_k_order(objs, nin, nd, perm)) {
            gp_lock();
            gp_node_set_perm(n, perm);
            gp_unlock();
        }
        res = gp_array_for_node(n);
    }
    return res;
}

/* out := where(mask, n, out) for where=: the old values are out's node
 * (pending) or a leaf over its memory (in place).  Steals n; new
 * reference or NULL (exception set when one occurred). */
static GpNode *masked(GpNode *n, PyObject *where, PyObject *out, GpDType out_t)
{
    Operand xm, xo;
    GpNode *w[3] = {NULL, n, NULL}, *n2 = NULL;
    if (gp_classify(where, &xm) == 0 && gp_classify(out, &xo) == 0 && (w[0] = gp_operand_node(&xm, GP_BOOL)) &&
        (w[2] = gp_operand_node(&xo, out_t)))
        n2 = gp_record_map(GP_OP_WHERE, out_t, 3, w, n->nd, n->shape);
    for (int i = 0; i < 3; i++)
        gp_node_release(w[i]);
    return n2;
}

PyObject *gp_capture_map(GpOp op, PyObject *const *objs, int nin, PyObject *out, PyObject *where)
{
    Operand x[3];
    int codes[3] = {0, 0, 0};
    int any_pending = 0;
    for (int i = 0; i < nin; i++) {
        if (gp_classify(objs[i], &x[i]) < 0)
            Py_RETURN_NOTIMPLEMENTED;
        codes[i] = x[i].code;
        any_pending |= x[i].pending;
    }
    int nd;
    int64_t shape[GP_MAXDIMS];
    if (broadcast(x, nin, &nd, shape) < 0)
        Py_RETURN_NOTIMPLEMENTED; /* NumPy raises its ValueError */
    int8_t loop[4];
    if (gp_resolve_loop(op, nin, codes, 0, loop) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    GpDType out_t = (GpDType)loop[3];
    if (any_pending && gp_shape_size(nd, shape) * (int64_t)gp_dtype_size(out_t) < gp_hooks.min_bytes) {
        if (compute_small_views(x, nin) < 0)
            return NULL;
        any_pending = 0;
        for (int i = 0; i < nin; i++)
            any_pending |= x[i].pending;
    }
    /* a 0-d result without out= is NumPy's scalar (its ufuncs return one):
     * computed at once, as small results are */
    int how = (nd == 0 && !out) ||
                      (!any_pending && gp_shape_size(nd, shape) * (int64_t)gp_dtype_size(out_t) < gp_hooks.min_bytes)
                  ? OUT_EAGER
                  : OUT_OK;
    /* "do no harm" (sites.c): a map over computed operands at a call site
     * whose results were computed alone is NumPy's at once */
    int site = 0;
    if (how == OUT_OK && !out && !any_pending &&
        gp_shape_size(nd, shape) * (int64_t)gp_dtype_size(out_t) < gp_config.lone_max_bytes) {
        site = gp_site_current(op);
        if (gp_site_wants_eager(site)) {
            gp_hooks.eager_site++;
            Py_INCREF(Py_Ellipsis);
            return Py_Ellipsis;
        }
    }
    GpBuffer *inplace = NULL; /* out= is computed memory: a lazy in-place write into it */
    if (how == OUT_OK && out)
        how = check_out(out, where, out_t, nd, shape, x, objs, nin, any_pending, &inplace);
    if (how == OUT_ERROR)
        return NULL;
    if (how == OUT_NUMPY)
        Py_RETURN_NOTIMPLEMENTED;
    if (how == OUT_EAGER) {
        gp_hooks.eager_small++;
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    if (op == GP_OP_POWER && gp_dtype_is_signed((GpDType)loop[0])) {
        /* integer powers: only a non-negative scalar exponent (NumPy raises
         * for negative ones) */
        long long e = x[1].is_array ? -1 : PyLong_AsLongLong(objs[1]);
        if (e < 0) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    GpNode *in[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nin; i++) {
        in[i] = gp_operand_node(&x[i], (GpDType)loop[i]);
        if (!in[i]) {
            for (int j = 0; j < i; j++)
                gp_node_release(in[j]);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    gp_lock();
    GpNode *n = gp_node_map(op, out_t, nin, in, nd, shape);
    for (int i = 0; i < nin; i++)
        gp_node_decref(in[i]);
    gp_unlock();
    if (!n)
        return PyErr_NoMemory();
    if (where && !(n = masked(n, where, out, out_t))) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    n->site = site;
    PyObject *res = bind_result(n, out, inplace, objs, nin);
    gp_node_release(n);
    gp_record_done();
    return res;
}

static GpOp op_of_ufunc(PyObject *ufunc, int reduce)
{
    for (int op = 0; op < GP_NOPS; op++)
        if (gp_hooks.ufunc_of_op[op] == ufunc && (gp_op_kind[op] == GP_KIND_REDUCE) == reduce)
            return (GpOp)op;
    return GP_NOPS;
}

/* out= as given to __array_ufunc__ (a tuple): NULL for none, the array for
 * one array, Py_NotImplemented for anything else.  Borrowed. */
static PyObject *single_out(PyObject *out)
{
    if (gp_args_out_is_none(out))
        return NULL;
    if (PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1 && PyArray_Check(PyTuple_GET_ITEM(out, 0)))
        return PyTuple_GET_ITEM(out, 0);
    if (PyArray_Check(out))
        return out;
    return Py_NotImplemented;
}

static PyObject *capture_call(PyObject *ufunc, PyObject *inputs, PyObject *kwds)
{
    /* accepted: out=, where= with out=, and casting= / subok= as NumPy's
     * own mean() passes them with an out= of the result's dtype */
    PyObject *kw[GP_NKW] = {NULL};
    if (gp_args_keywords(kwds, GP_KW(OUT) | GP_KW(WHERE) | GP_KW(CASTING) | GP_KW(SUBOK), kw) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *out = single_out(kw[GP_KW_OUT]), *where = kw[GP_KW_WHERE], *casting = kw[GP_KW_CASTING];
    if (out == Py_NotImplemented)
        Py_RETURN_NOTIMPLEMENTED;
    if (casting && (!PyUnicode_Check(casting) || (PyUnicode_CompareWithASCIIString(casting, "same_kind") != 0 &&
                                                  PyUnicode_CompareWithASCIIString(casting, "unsafe") != 0)))
        Py_RETURN_NOTIMPLEMENTED;
    if (where == Py_True || where == gp_hooks.np_novalue)
        where = NULL; /* everywhere */
    else if (where && !PyArray_Check(where))
        Py_RETURN_NOTIMPLEMENTED;
    if (where && !out) {
        gp_declined(GP_WHY_KEYWORD);
        Py_RETURN_NOTIMPLEMENTED; /* unset elements of a new array: NumPy's */
    }
    if (where && gp_record_errstate)
        Py_RETURN_NOTIMPLEMENTED; /* NumPy warns for the unmasked elements only: its loop */
    GpOp op = op_of_ufunc(ufunc, 0);
    Py_ssize_t nin = PyTuple_GET_SIZE(inputs);
    if (op == GP_NOPS || nin != gp_op_nin[op]) {
        gp_declined(GP_WHY_UFUNC);
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (op == GP_OP_MATMUL)
        return out || where ? (Py_INCREF(Py_NotImplemented), Py_NotImplemented)
                            : gp_capture_matmul(PyTuple_GET_ITEM(inputs, 0), PyTuple_GET_ITEM(inputs, 1));
    return gp_capture_map(op, &PyTuple_GET_ITEM(inputs, 0), (int)nin, out, where);
}

static PyObject *capture_reduce(PyObject *ufunc, PyObject *inputs, PyObject *kwds)
{
    GpOp op = op_of_ufunc(ufunc, 1);
    if (op == GP_NOPS || PyTuple_GET_SIZE(inputs) != 1 || !PyArray_Check(PyTuple_GET_ITEM(inputs, 0)))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(inputs, 0);
    if (PyArray_NDIM(a) == 0) {
        /* a 0-d input (a view such as x[..., 0]): NumPy's reduction, whose
         * result is an array or a scalar as its arguments say */
        gp_hooks.eager_small++;
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    /* ufunc.reduce(a, axis=0, dtype=None, out=None, keepdims=False,
     * where=True): __array_ufunc__ gets the arguments given, as keywords */
    PyObject *kw[GP_NKW] = {NULL};
    if (gp_args_keywords(kwds, GP_KW(AXIS) | GP_KW(DTYPE) | GP_KW(OUT) | GP_KW(KEEPDIMS) | GP_KW(WHERE), kw) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *where = kw[GP_KW_WHERE];
    int nd = PyArray_NDIM(a), keepdims, dtype;
    uint64_t mask = 1; /* axis= not given: NumPy's default, axis 0 */
    Operand x;
    if (!gp_args_out_is_none(kw[GP_KW_OUT]) || (where && where != Py_True && where != gp_hooks.np_novalue) ||
        gp_classify((PyObject *)a, &x) < 0 || gp_args_keepdims(kw[GP_KW_KEEPDIMS], &keepdims) < 0 ||
        (kw[GP_KW_AXIS] && gp_args_axes(kw[GP_KW_AXIS], nd, &mask) < 0) || !mask ||
        gp_args_dtype(kw[GP_KW_DTYPE], &dtype) < 0)
        Py_RETURN_NOTIMPLEMENTED; /* NumPy's reduction, or NumPy's error */
    for (int d = 0; d < nd; d++)
        if ((mask >> d & 1) && PyArray_DIM(a, d) == 0)
            Py_RETURN_NOTIMPLEMENTED; /* empty reductions: NumPy's identity or error */
    if (PyArray_SIZE(a) == 0)
        Py_RETURN_NOTIMPLEMENTED;
    int8_t loop[4];
    if (dtype >= 0) {
        loop[3] = (int8_t)dtype;
        if ((op == GP_OP_ANY || op == GP_OP_ALL) && dtype != GP_BOOL)
            Py_RETURN_NOTIMPLEMENTED;
    } else if (gp_resolve_loop(op, 2, (int[2]){x.code, x.code}, 1, loop) < 0) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    GpDType acc = (GpDType)loop[3];
    return record_reduction(&x, op, acc, acc, mask, keepdims);
}

/* add.accumulate / multiply.accumulate (cumsum, cumprod) along one axis:
 * a lazy map-scan node.  dtype as NumPy resolves a reduction's; out= and
 * other arguments are left to NumPy. */
static PyObject *capture_accumulate(PyObject *ufunc, PyObject *inputs, PyObject *kwds)
{
    GpOp op = ufunc == gp_hooks.ufunc_of_op[GP_OP_CUMSUM]    ? GP_OP_CUMSUM
              : ufunc == gp_hooks.ufunc_of_op[GP_OP_CUMPROD] ? GP_OP_CUMPROD
                                                             : GP_NOPS;
    if (op == GP_NOPS || PyTuple_GET_SIZE(inputs) != 1 || !PyArray_Check(PyTuple_GET_ITEM(inputs, 0)))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *a = (PyArrayObject *)PyTuple_GET_ITEM(inputs, 0);
    /* ufunc.accumulate(a, axis=0, dtype=None, out=None): one axis (an int,
     * a tuple of one, None for a 1-d array) */
    PyObject *kw[GP_NKW] = {NULL};
    if (gp_args_keywords(kwds, GP_KW(AXIS) | GP_KW(DTYPE) | GP_KW(OUT), kw) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    int nd = PyArray_NDIM(a), dtype;
    uint64_t mask = 1; /* axis= not given: axis 0 */
    Operand x;
    if (!gp_args_out_is_none(kw[GP_KW_OUT]) || nd == 0 || PyArray_SIZE(a) == 0 || gp_classify((PyObject *)a, &x) < 0 ||
        (kw[GP_KW_AXIS] && gp_args_axes(kw[GP_KW_AXIS], nd, &mask) < 0) || mask == 0 || (mask & (mask - 1)) ||
        gp_args_dtype(kw[GP_KW_DTYPE], &dtype) < 0 || dtype == GP_BOOL)
        Py_RETURN_NOTIMPLEMENTED; /* NumPy's scan, or NumPy's error */
    int ax = __builtin_ctzll(mask);
    int8_t loop[4];
    if (dtype >= 0)
        loop[3] = (int8_t)dtype;
    else if (gp_resolve_loop(gp_scan_reduce_op(op), 2, (int[2]){x.code, x.code}, 1, loop) < 0 || loop[3] == GP_BOOL)
        Py_RETURN_NOTIMPLEMENTED;
    GpDType t = (GpDType)loop[3];
    int small = (int64_t)PyArray_SIZE(a) * (int64_t)gp_dtype_size(t) < gp_hooks.min_bytes;
    if (x.pending && small && compute_small_views(&x, 1) < 0)
        return NULL;
    if (!x.pending && small) {
        gp_hooks.eager_small++;
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    GpNode *in = gp_operand_node(&x, t);
    if (!in) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* laid out as NumPy's accumulate allocates it: the input's order='K'
     * (np.cumsum of an F-ordered array is F-ordered) */
    int perm[GP_MAXDIMS];
    PyObject *obj = (PyObject *)a;
    int k_order = gp_k_order(&obj, 1, nd, perm);
    gp_lock();
    GpNode *r = gp_node_scan(op, t, in, ax);
    if (r && k_order)
        gp_node_set_perm(r, perm);
    gp_node_decref(in);
    gp_unlock();
    if (!r)
        return PyErr_NoMemory();
    gp_record_done();
    PyObject *res = gp_array_for_node(r);
    gp_node_release(r);
    return res;
}

PyObject *gp_capture_ufunc(PyObject *ufunc, PyObject *method, PyObject *inputs, PyObject *kwds)
{
    if (!gp_capturing())
        Py_RETURN_NOTIMPLEMENTED;
    if (gp_errstate_for_capture()) {
        gp_declined(GP_WHY_ERRSTATE);
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (PyUnicode_Compare(method, gp_hooks.str_call) == 0)
        return capture_call(ufunc, inputs, kwds);
    if (PyUnicode_Compare(method, gp_hooks.str_reduce) == 0)
        return capture_reduce(ufunc, inputs, kwds);
    if (PyUnicode_CompareWithASCIIString(method, "accumulate") == 0)
        return capture_accumulate(ufunc, inputs, kwds);
    gp_declined(GP_WHY_UFUNC); /* outer, at, reduceat */
    Py_RETURN_NOTIMPLEMENTED;
}

int gp_ndim_of(PyObject *o) { return PyArray_Check(o) ? PyArray_NDIM((PyArrayObject *)o) : -1; }

PyObject *gp_capture_argreduce(GpOp op, PyObject *ao, PyObject *const *args, Py_ssize_t nargs, PyObject *kwds)
{
    PyObject *kw[GP_NKW] = {NULL};
    kw[GP_KW_AXIS] = nargs > 0 ? args[0] : NULL;
    kw[GP_KW_OUT] = nargs > 1 ? args[1] : NULL;
    if (!gp_capturing() || !PyArray_Check(ao) || nargs > 2 ||
        gp_args_keywords(kwds, GP_KW(AXIS) | GP_KW(OUT) | GP_KW(KEEPDIMS), kw) < 0 ||
        (kw[GP_KW_OUT] && kw[GP_KW_OUT] != Py_None) || gp_errstate_for_capture())
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *a = (PyArrayObject *)ao;
    /* keepdims= by its truth value (NumPy's PyArray_BoolConverter) */
    int nd = PyArray_NDIM(a), keepdims = kw[GP_KW_KEEPDIMS] ? PyObject_IsTrue(kw[GP_KW_KEEPDIMS]) : 0, ax;
    Operand x;
    if (keepdims < 0 || nd == 0 || nd > 63 || PyArray_SIZE(a) == 0 || gp_classify(ao, &x) < 0) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED; /* NumPy raises for empty arrays */
    }
    PyObject *axis = kw[GP_KW_AXIS];
    uint64_t mask = (1ull << nd) - 1; /* axis=None: of the flattened array */
    if (axis && axis != Py_None) {
        if (gp_args_axis(axis, nd, &ax) < 0)
            Py_RETURN_NOTIMPLEMENTED; /* NumPy's TypeError (a tuple too) or AxisError */
        mask = 1ull << ax;
        /* along an axis that is not the innermost in memory: NumPy's
         * transposed copy and contiguous scan (PyArray_ArgMin) beat a kernel
         * that reads each output's column with a stride (float32 1000x2000
         * np.abs(a - 1).argmin(axis=0): 16.0 ms against NumPy's 4.3; a
         * computed float64 a.argmax(axis=0): 10.9 against 5.6).  A pending
         * operand is computed first, its map fused, then NumPy's (by
         * design: Ellipsis, not counted as a fallback) */
        npy_intp inner = 1;
        for (int d = ax + 1; d < nd; d++)
            inner *= PyArray_DIM(a, d);
        if (inner > 1 && (x.pending || PyArray_STRIDE(a, ax) != PyArray_ITEMSIZE(a))) {
            if (x.pending && gp_ensure_computed(a) < 0)
                return NULL;
            return Py_NewRef(Py_Ellipsis);
        }
    }
    return record_reduction(&x, op, (GpDType)x.code, GP_INT64, mask, keepdims);
}

/* np.take(a, indices, axis=None, out=None, mode='raise') of a 1-D a
 * without out= and mode=: a[indices] (gp_capture_gather; np.take's result
 * is C-ordered, as the gather's is).  Else NumPy's. */
static PyObject *capture_take(PyObject *args, PyObject *kwds)
{
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    PyObject *kw[GP_NKW] = {NULL};
    if (na < 2 || na > 3)
        Py_RETURN_NOTIMPLEMENTED;
    kw[GP_KW_AXIS] = na > 2 ? PyTuple_GET_ITEM(args, 2) : NULL;
    PyObject *a = PyTuple_GET_ITEM(args, 0), *axis;
    if (gp_args_keywords(kwds, GP_KW(AXIS), kw) < 0 || !PyArray_Check(a) || gp_foreign_subclass(a) ||
        PyArray_NDIM((PyArrayObject *)a) != 1)
        Py_RETURN_NOTIMPLEMENTED;
    axis = kw[GP_KW_AXIS];
    if (axis && axis != Py_None && !(PyLong_CheckExact(axis) && PyLong_AsLong(axis) == 0)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* a grumpy a is computed first, as its subscript would be */
    if (gp_ensure_computed((PyArrayObject *)a) < 0)
        return NULL;
    return gp_capture_gather((PyArrayObject *)a, PyTuple_GET_ITEM(args, 1));
}

PyObject *gp_capture_function(PyObject *func, PyObject *args, PyObject *kwds)
{
    if (!gp_capturing() || gp_errstate_for_capture())
        Py_RETURN_NOTIMPLEMENTED;
    if (func == gp_hooks.np_einsum && PyTuple_GET_SIZE(args) == 3 && (!kwds || !PyDict_GET_SIZE(kwds)))
        return gp_capture_einsum(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), PyTuple_GET_ITEM(args, 2));
    if (func == gp_hooks.np_copyto)
        return gp_capture_copyto(args, kwds);
    if (func == gp_hooks.np_concatenate)
        return gp_capture_concatenate(args, kwds);
    if (func == gp_hooks.np_roll)
        return gp_capture_roll(args, kwds);
    if (func == gp_hooks.np_take)
        return capture_take(args, kwds);
    if (func == gp_hooks.np_searchsorted)
        return gp_sorted_search(args, kwds);
    if (func == gp_hooks.np_tensordot && PyTuple_GET_SIZE(args) >= 2 && PyTuple_GET_SIZE(args) <= 3) {
        PyObject *kw[GP_NKW] = {NULL};
        kw[GP_KW_AXES] = PyTuple_GET_SIZE(args) == 3 ? PyTuple_GET_ITEM(args, 2) : NULL;
        if (gp_args_keywords(kwds, GP_KW(AXES), kw) < 0)
            Py_RETURN_NOTIMPLEMENTED;
        return gp_capture_tensordot(PyTuple_GET_ITEM(args, 0), PyTuple_GET_ITEM(args, 1), kw[GP_KW_AXES]);
    }
    if (func == gp_hooks.ufunc_of_op[GP_OP_ARGMIN] || func == gp_hooks.ufunc_of_op[GP_OP_ARGMAX]) {
        /* np.argmin(a, axis=None, out=None, *, keepdims=<no value>) */
        if (PyTuple_GET_SIZE(args) < 1)
            Py_RETURN_NOTIMPLEMENTED;
        GpOp op = func == gp_hooks.ufunc_of_op[GP_OP_ARGMIN] ? GP_OP_ARGMIN : GP_OP_ARGMAX;
        /* keepdims=np._NoValue is the function's "not given" (np.nanargmax
         * passes it on), where the method would take its truth value */
        PyObject *kw = kwds && PyDict_GetItemString(kwds, "keepdims") == gp_hooks.np_novalue ? PyDict_Copy(kwds)
                                                                                             : Py_XNewRef(kwds);
        if (kw && kw != kwds && PyDict_DelItemString(kw, "keepdims") < 0)
            Py_CLEAR(kw);
        if (kwds && !kw)
            return NULL;
        PyObject *r = gp_capture_argreduce(op, PyTuple_GET_ITEM(args, 0), PySequence_Fast_ITEMS(args) + 1,
                                           PyTuple_GET_SIZE(args) - 1, kw);
        Py_XDECREF(kw);
        return r;
    }
    if (kwds && PyDict_GET_SIZE(kwds))
        Py_RETURN_NOTIMPLEMENTED;
    if (PyTuple_GET_SIZE(args) == 2) {
        PyObject *a = PyTuple_GET_ITEM(args, 0), *b = PyTuple_GET_ITEM(args, 1);
        int na = gp_ndim_of(a), nb = gp_ndim_of(b);
        /* for 1-D and 2-D operands dot, vdot (real 1-D) and inner are matmul */
        if (func == gp_hooks.np_dot && na >= 1 && na <= 2 && nb >= 1 && nb <= 2)
            return gp_capture_product(a, b, GP_PRODUCT_DOT);
        if (func == gp_hooks.np_vdot && na == 1 && nb == 1)
            return gp_capture_product(a, b, GP_PRODUCT_QUIET);
        if (func == gp_hooks.np_outer && na >= 1 && nb >= 1) {
            /* outer(a, b) = ravel(a)[:, None] * ravel(b)[None, :]: a map */
            npy_intp sa[2] = {PyArray_SIZE((PyArrayObject *)a), 1}, sb[2] = {1, PyArray_SIZE((PyArrayObject *)b)};
            PyArray_Dims da = {sa, 2}, db = {sb, 2};
            PyObject *x = gp_newshape_computed((PyArrayObject *)a, &da);
            PyObject *y = x ? gp_newshape_computed((PyArrayObject *)b, &db) : NULL;
            PyObject *r = NULL;
            if (x && y) {
                PyObject *xy[2] = {x, y};
                r = gp_capture_map(GP_OP_MULTIPLY, xy, 2, NULL, NULL);
            }
            Py_XDECREF(x);
            Py_XDECREF(y);
            return r;
        }
        if (func == gp_hooks.np_inner && na >= 1 && na <= 2 && nb >= 1 && nb <= 2) {
            if (nb == 1)
                return gp_capture_product(a, b, GP_PRODUCT_DOT);
            PyObject *bt = PyArray_Transpose((PyArrayObject *)b, NULL); /* a view: folded into the GEMM */
            if (!bt)
                return NULL;
            PyObject *r = gp_capture_product(a, bt, GP_PRODUCT_DOT);
            Py_DECREF(bt);
            return r;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (PyTuple_GET_SIZE(args) != 3)
        Py_RETURN_NOTIMPLEMENTED;
    if (func == gp_hooks.np_where)
        return gp_capture_map(GP_OP_WHERE, &PyTuple_GET_ITEM(args, 0), 3, NULL, NULL);
    if (func == gp_hooks.np_clip) {
        if (PyTuple_GET_ITEM(args, 1) == Py_None || PyTuple_GET_ITEM(args, 2) == Py_None)
            Py_RETURN_NOTIMPLEMENTED;
        return gp_capture_map(GP_OP_CLIP, &PyTuple_GET_ITEM(args, 0), 3, NULL, NULL);
    }
    Py_RETURN_NOTIMPLEMENTED;
}
