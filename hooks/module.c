/* hooks/module.c -- the grumpy._grumpy extension module: initialisation,
 * the NumPy memory handler (NEP 49) that makes large buffers page-guarded,
 * counters, result wrapping, and the NumPy evaluator used when the JIT
 * path fails.
 *
 * Memory handler: every NumPy allocation of GP_GUARD_MIN_BYTES or more made
 * while capture is on (in the context where grumpy.enable() ran) is a
 * registered page-aligned mapping (core/guard.c), so a pending array's
 * buffer can be PROT_NONE until computed.  free() from NumPy drops the
 * array's claim: a still-pending node then continues as an intermediate.
 */
#define GP_IMPORT_ARRAY_HERE
#include "hooks.h"

#include <sys/mman.h>

#include <malloc.h>
#include <math.h>
#include <string.h>

#include "backend.h"
#include "blas.h"
#include "cache.h"
#include "codegen.h"
#include "jit.h"
#include "runtime_cpu.h"

GpHooks gp_hooks;

/* ---- NEP 49 memory handler --------------------------------------------- */

/* Set around the allocation of a pending array's buffer (GIL held). */
static int allocating_pending;

/* Allocations below this many bytes are plain malloc: grumpy never makes
 * them pending (GRUMPY_MIN_BYTES), and small leaves are copied when read
 * lazily, so NumPy's small temporaries cost nothing extra. */
static size_t guarded_min(void)
{
    return (size_t)gp_hooks.min_bytes > gp_guard_min_bytes() ? (size_t)gp_hooks.min_bytes : gp_guard_min_bytes();
}

static void *handler_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size < guarded_min() && !allocating_pending)
        return malloc(size ? size : 1);
    GpBuffer *b = allocating_pending ? gp_buffer_reserve(size) : gp_buffer_alloc_uninit(size);
    return b ? b->data : NULL;
}

static void *handler_calloc(void *ctx, size_t n, size_t size)
{
    (void)ctx;
    if (size && n > SIZE_MAX / size)
        return NULL;
    if (n * size < guarded_min())
        return calloc(n ? n : 1, size ? size : 1);
    GpBuffer *b = gp_buffer_alloc(n * size); /* fresh mappings are zero */
    return b ? b->data : NULL;
}

/* NumPy computes every result, and warns for its IEEE flags, even one
 * nobody reads.  A pending result whose array dies unread and that no
 * pending node uses (nothing but the buffer holds its node) is computed before its memory goes, when its error
 * state watches any category: its warnings come at the statement that
 * dropped it, as NumPy's do (pytest.warns around `x.astype(np.int8)`).
 * A warning made an error here cannot propagate: it is reported as
 * unraisable. */
static void compute_if_unread(GpBuffer *b)
{
    if (!PyGILState_Check())
        return;
    gp_lock();
    GpNode *n = b->owner;
    if (n && (n != b->producer || n->materialized || n->evaluated || n->viewed || n->refcnt > 1 || !n->errstate))
        n = NULL;
    /* or a pending write into it (np.copyto(fresh, x), fill): nothing can
     * read the array any more, but NumPy would have written it and warned */
    GpNode *w = b->writer;
    if (!n && w && w == b->producer && !w->materialized && !w->evaluated && w->errstate)
        n = w;
    if (n)
        gp_node_incref(n);
    gp_unlock();
    if (!n)
        return;
    if (!_Py_IsFinalizing()) { /* Py_IsFinalizing from 3.13 */
        /* freed while an exception propagates: it stays the one raised */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (gp_materialize_or_raise(n) < 0)
            PyErr_WriteUnraisable(NULL);
        PyErr_Restore(et, ev, tb);
    }
    gp_node_decref(n);
}

static void handler_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    if (!ptr)
        return;
    GpBuffer *b = gp_buffer_lookup(ptr);
    if (!b || b->data != (char *)ptr) {
        free(ptr);
        return;
    }
    compute_if_unread(b);
    gp_lock();
    GpNode *owner = b->owner;
    b->owner = NULL;
    if (owner) {
        gp_node_drop_output(owner);
        gp_node_decref(owner);
    }
    gp_buffer_drop_writer(b);
    gp_buffer_decref(b);
    gp_unlock();
}

static void *handler_realloc(void *ctx, void *ptr, size_t size)
{
    if (!ptr)
        return handler_malloc(ctx, size);
    GpBuffer *b = gp_buffer_lookup(ptr);
    if (!b || b->data != (char *)ptr) {
        if (size < guarded_min())
            return realloc(ptr, size);
        size_t old = malloc_usable_size(ptr);
        void *p = handler_malloc(ctx, size);
        if (p) {
            memcpy(p, ptr, old < size ? old : size);
            free(ptr);
        }
        return p;
    }
    gp_buffer_materialize(b);
    void *p = handler_malloc(ctx, size);
    if (p) {
        memcpy(p, ptr, b->nbytes < size ? b->nbytes : size);
        handler_free(ctx, ptr, b->nbytes);
    }
    return p;
}

static PyDataMem_Handler grumpy_handler = {
    "grumpy_guarded",
    1,
    {NULL, handler_malloc, handler_calloc, handler_realloc, handler_free},
};

/* ---- dtypes ------------------------------------------------------------ */

int gp_dtype_from_descr(PyArray_Descr *d)
{
    if (!PyArray_ISNBO(d->byteorder))
        return -1;
    switch (d->type_num) {
    case NPY_BOOL: return GP_BOOL;
    case NPY_BYTE: return GP_INT8;
    case NPY_SHORT: return GP_INT16;
    case NPY_INT: return GP_INT32;
    case NPY_LONG: return sizeof(long) == 8 ? GP_INT64 : GP_INT32;
    case NPY_LONGLONG: return GP_INT64;
    case NPY_UBYTE: return GP_UINT8;
    case NPY_USHORT: return GP_UINT16;
    case NPY_UINT: return GP_UINT32;
    case NPY_ULONG: return sizeof(long) == 8 ? GP_UINT64 : GP_UINT32;
    case NPY_ULONGLONG: return GP_UINT64;
    case NPY_FLOAT: return GP_FLOAT32;
    case NPY_DOUBLE: return GP_FLOAT64;
    default: return -1;
    }
}

PyArray_Descr *gp_descr_from_dtype(GpDType t)
{
    static const int typenum[GP_NDTYPES] = {NPY_BOOL, NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64, NPY_UINT8,
                                            NPY_UINT16, NPY_UINT32, NPY_UINT64, NPY_FLOAT32, NPY_FLOAT64};
    return PyArray_DescrFromType(typenum[t]);
}

/* ---- buffers and nodes of arrays --------------------------------------- */

static int raise_deferred(void);

/* 0 after a materialization that ended with st, or -1 with an exception:
 * its failure, or a deferred warning turned error. */
static int raise_after(GpStatus st)
{
    if (st != GP_OK) {
        if (!PyErr_Occurred())
            PyErr_Format(st == GP_ENOMEM ? PyExc_MemoryError : PyExc_RuntimeError,
                         "grumpy: could not compute an array: %s", gp_last_error());
        return -1;
    }
    return raise_deferred();
}

int gp_materialize_or_raise(GpNode *n)
{
    return raise_after(n->materialized ? GP_OK : gp_node_materialize(n));
}

int gp_buffer_compute_or_raise(GpBuffer *b)
{
    /* a racy read of the producer: gp_buffer_materialize rechecks it under the lock */
    return raise_after(b->producer ? gp_buffer_materialize(b) : GP_OK);
}

int gp_ensure_computed(PyArrayObject *arr)
{
    char *data = PyArray_DATA(arr);
    if (!data || PyArray_NBYTES(arr) == 0)
        return 0;
    GpBuffer *b = gp_buffer_lookup(data);
    return b ? gp_buffer_compute_or_raise(b) : 0;
}

/* Whether arr is exactly the result of b's producer: its C-contiguous
 * output, or for an in-place writer the very view it writes. */
static int is_node_output(PyArrayObject *arr, GpBuffer *b)
{
    GpNode *n = b->producer;
    if (PyArray_DATA(arr) != (n->out_view ? n->out_data : b->data) || PyArray_NDIM(arr) != n->nd ||
        gp_dtype_from_descr(PyArray_DESCR(arr)) != (int)n->dtype)
        return 0;
    npy_intp *shape = PyArray_SHAPE(arr);
    int64_t own[GP_MAXDIMS];
    if (!n->out_view)
        gp_node_buffer_strides(n, own);
    for (int d = 0; d < n->nd; d++)
        if (shape[d] != n->shape[d] || (shape[d] > 1 && PyArray_STRIDE(arr, d) != (n->out_view ? n->out_strides[d] : own[d])))
            return 0;
    return 1;
}

GpNode *gp_pending_node_of(PyArrayObject *arr)
{
    if (PyArray_NBYTES(arr) == 0)
        return NULL;
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA(arr));
    if (!b)
        return NULL;
    /* borrowed: the array's buffer owns the node (b->owner) */
    gp_lock();
    GpNode *n = b->producer && b->owner == b->producer && is_node_output(arr, b) ? b->producer : NULL;
    gp_unlock();
    return n;
}

int gp_rebind_output(PyArrayObject *arr, GpNode *n)
{
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA(arr));
    if (!b)
        return -1;
    gp_lock();
    if (!b->producer || b->owner != b->producer) {
        gp_unlock();
        return -1;
    }
    GpNode *old = b->owner;
    int perm[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        perm[d] = old->has_perm ? old->perm[d] : d;
    gp_node_set_perm(n, perm); /* the memory keeps its layout */
    gp_node_drop_output(old); /* old continues as an intermediate of its readers */
    gp_node_set_output(n, b);
    gp_node_incref(n);
    b->owner = n;
    gp_node_decref(old);
    gp_unlock();
    if (n->weight > gp_hooks.max_fuse && gp_materialize_or_raise(n) < 0)
        return -2;
    return 0;
}

#define FOREIGN_COPY_MAX_BYTES ((npy_intp)1 << 20)

GpNode *gp_node_for_array(PyArrayObject *arr)
{
    int t = gp_dtype_from_descr(PyArray_DESCR(arr));
    int nd = PyArray_NDIM(arr);
    if (t < 0 || nd > GP_MAXDIMS)
        return NULL;
    char *data = PyArray_DATA(arr);
    int64_t shape[GP_MAXDIMS], strides[GP_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        shape[d] = PyArray_DIM(arr, d);
        strides[d] = PyArray_STRIDE(arr, d);
    }
    GpBuffer *b = (PyArray_NBYTES(arr) != 0) ? gp_buffer_lookup(data) : NULL;
    if (b) {
        /* under the lock: a fault in another thread may compute the producer */
        gp_lock();
        GpNode *p = b->producer;
        if (p && is_node_output(arr, b)) {
            gp_node_incref(p);
            gp_unlock();
            return p;
        }
        /* a view of a pending result: its index map folded into the
         * producer's subgraph, when it can be */
        if (p && p->dtype == (GpDType)t && !p->out_view) {
            GpNode *v = gp_pending_view(p, data - b->data, nd, shape, strides);
            if (v) {
                gp_unlock();
                return v;
            }
        }
        gp_unlock();
        if (gp_buffer_materialize(b) != GP_OK)
            return NULL;
    }
    if (b)
        return gp_node_leaf((GpDType)t, nd, shape, strides, data, b);
    /* memory grumpy does not manage: copy it when small, so later writes to
     * it cannot change what pending nodes read */
    npy_intp nbytes = PyArray_NBYTES(arr);
    if (nbytes > FOREIGN_COPY_MAX_BYTES && nbytes > gp_hooks.min_bytes)
        return NULL;
    GpBuffer *copy = gp_buffer_alloc((size_t)nbytes);
    if (!copy)
        return NULL;
    gp_contiguous_strides(nd, shape, gp_dtype_size((GpDType)t), strides);
    PyArray_Descr *descr = PyArray_DESCR(arr);
    Py_INCREF(descr);
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < nd; d++)
        dims[d] = shape[d];
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, NULL, copy->data, NPY_ARRAY_WRITEABLE, NULL);
    GpNode *n = NULL;
    if (view && PyArray_CopyInto((PyArrayObject *)view, arr) == 0)
        n = gp_node_leaf((GpDType)t, nd, shape, strides, copy->data, copy);
    if (!view || !n)
        PyErr_Clear();
    Py_XDECREF(view);
    gp_buffer_decref(copy);
    return n;
}

PyObject *gp_array_for_node(GpNode *n)
{
    PyArray_Descr *descr = gp_descr_from_dtype(n->dtype);
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        dims[d] = n->shape[d];
    npy_intp strides[GP_MAXDIMS];
    if (n->has_perm) {
        int64_t s64[GP_MAXDIMS];
        gp_node_buffer_strides(n, s64);
        for (int d = 0; d < n->nd; d++)
            strides[d] = (npy_intp)s64[d];
    }
    allocating_pending = 1;
    PyObject *arr = PyArray_NewFromDescr(&GpArray_Type, descr, n->nd, dims, n->has_perm ? strides : NULL, NULL, 0, NULL);
    allocating_pending = 0;
    if (!arr)
        return NULL;
    char *data = PyArray_DATA((PyArrayObject *)arr);
    GpBuffer *b = (PyArray_NBYTES((PyArrayObject *)arr) != 0) ? gp_buffer_lookup(data) : NULL;
    if (!b || b->data != data || n->materialized) {
        /* not a guarded buffer (small result): compute now and copy */
        if (gp_materialize_or_raise(n) < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        if ((PyArray_NBYTES((PyArrayObject *)arr) != 0)) {
            PyArray_Descr *d2 = gp_descr_from_dtype(n->dtype);
            PyObject *src = PyArray_NewFromDescr(&PyArray_Type, d2, n->nd, dims, (npy_intp *)n->strides,
                                                 n->data, 0, NULL);
            if (!src || PyArray_CopyInto((PyArrayObject *)arr, (PyArrayObject *)src) < 0) {
                Py_XDECREF(src);
                Py_DECREF(arr);
                return NULL;
            }
            Py_DECREF(src);
        }
        return arr;
    }
    gp_node_set_output(n, b);
    gp_lock();
    gp_node_incref(n);
    b->owner = n;
    gp_unlock();
    if (n->weight > gp_hooks.max_fuse && gp_materialize_or_raise(n) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* ---- wrapping results as grumpy arrays --------------------------------- */

PyObject *gp_as_grumpy(PyObject *obj)
{
    if (!PyArray_Check(obj) || Py_TYPE(obj) == &GpArray_Type || !gp_hooks.enabled) {
        Py_INCREF(obj);
        return obj;
    }
    if (Py_TYPE(obj) != &PyArray_Type) { /* other subclasses keep their type */
        Py_INCREF(obj);
        return obj;
    }
    PyArrayObject *arr = (PyArrayObject *)obj;
    /* small, or of a dtype grumpy never computes (complex, object, strings,
     * datetimes, non-native byte order): stays plain, costs nothing, and C
     * code that insists on NumPy's own class (pocketfft's out= arrays)
     * keeps working */
    /* a 0-d array too: NumPy's ufuncs answer it with a scalar, or with an
     * array under out=..., which they do not pass to __array_ufunc__ */
    if ((int64_t)PyArray_NBYTES(arr) < gp_hooks.min_bytes || PyArray_NDIM(arr) == 0 ||
        gp_dtype_from_descr(PyArray_DESCR(arr)) < 0) {
        Py_INCREF(obj);
        return obj;
    }
    PyArrayObject_fields *fa = (PyArrayObject_fields *)obj;
    if (Py_REFCNT(obj) == 1 && (fa->flags & NPY_ARRAY_OWNDATA) && fa->base == NULL && fa->mem_handler) {
        /* sole owner: the grumpy array takes over the memory (no view, .base is None) */
        PyArray_Descr *descr = PyArray_DESCR(arr);
        Py_INCREF(descr);
        PyObject *g = PyArray_NewFromDescr(&GpArray_Type, descr, PyArray_NDIM(arr), PyArray_DIMS(arr),
                                           PyArray_STRIDES(arr), PyArray_DATA(arr), PyArray_FLAGS(arr) & ~NPY_ARRAY_OWNDATA, NULL);
        if (!g)
            return NULL;
        PyArrayObject_fields *fg = (PyArrayObject_fields *)g;
        Py_XSETREF(fg->mem_handler, fa->mem_handler);
        Py_INCREF(fg->mem_handler);
        fg->flags |= NPY_ARRAY_OWNDATA;
        fa->flags &= ~NPY_ARRAY_OWNDATA;
        return g;
    }
    return PyArray_View(arr, NULL, &GpArray_Type);
}

PyObject *gp_wrap_result(PyObject *res)
{
    if (!res)
        return NULL;
    if (PyArray_Check(res)) {
        PyObject *g = gp_as_grumpy(res);
        Py_DECREF(res);
        return g;
    }
    /* tuples, and named tuples (np.linalg.qr's QRResult, svd's, ...) */
    int named = PyTuple_Check(res) && !PyTuple_CheckExact(res) && PyObject_HasAttrString((PyObject *)Py_TYPE(res), "_make");
    if (PyTuple_CheckExact(res) || named) {
        Py_ssize_t n = PyTuple_GET_SIZE(res);
        int any = 0;
        for (Py_ssize_t i = 0; i < n; i++)
            any |= PyArray_CheckExact(PyTuple_GET_ITEM(res, i));
        if (!any)
            return res;
        PyObject *t = PyTuple_New(n);
        for (Py_ssize_t i = 0; t && i < n; i++) {
            PyObject *x = PyTuple_GET_ITEM(res, i);
            PyObject *g = gp_as_grumpy(x);
            if (!g) {
                Py_CLEAR(t);
                break;
            }
            PyTuple_SET_ITEM(t, i, g);
        }
        if (named && t) {
            PyObject *made = PyObject_CallMethod((PyObject *)Py_TYPE(res), "_make", "(O)", t);
            Py_SETREF(t, made);
        }
        Py_DECREF(res);
        return t;
    }
    return res;
}

void gp_count_fallback(const char *name)
{
    PyObject *key = PyUnicode_FromString(name);
    if (!key) {
        PyErr_Clear();
        return;
    }
    PyObject *cur = PyDict_GetItemWithError(gp_hooks.fallbacks, key);
    long n = cur ? PyLong_AsLong(cur) : 0;
    PyObject *v = PyLong_FromLong(n + 1);
    if (!v || PyDict_SetItem(gp_hooks.fallbacks, key, v) < 0)
        PyErr_Clear();
    Py_XDECREF(v);
    Py_DECREF(key);
}

/* ---- NumPy's error state ------------------------------------------------ */

static struct {
    PyObject *var;         /* numpy's extobj context variable */
    PyObject *get_dict;    /* _get_extobj_dict(): the current state as a dict */
    PyObject *make;        /* _make_extobj(**modes): a state object */
    PyObject *last;        /* the state object last classified (owned) */
    unsigned last_mask;
    int last_eager;
    PyObject *by_mask[16]; /* owned: a state object per "warn" mask, for replays */
} errstate;

static const char *const fpe_names[4] = {"divide", "over", "under", "invalid"}; /* GP_FPE_* bit order */

int gp_errstate_for_capture(void)
{
    PyObject *cur = NULL;
    if (!errstate.var || PyContextVar_Get(errstate.var, NULL, &cur) < 0 || !cur) {
        PyErr_Clear();
        return 1;
    }
    if (cur == errstate.last) {
        Py_DECREF(cur);
        gp_record_errstate = errstate.last_mask;
        return errstate.last_eager;
    }
    PyObject *d = PyObject_CallNoArgs(errstate.get_dict);
    unsigned mask = 0;
    int eager = d == NULL || !PyDict_Check(d);
    for (int i = 0; !eager && i < 4; i++) {
        PyObject *mode = PyDict_GetItemString(d, fpe_names[i]);
        if (mode && PyUnicode_Check(mode) && PyUnicode_CompareWithASCIIString(mode, "warn") == 0)
            mask |= 1u << i;
        else if (!mode || !PyUnicode_Check(mode) || PyUnicode_CompareWithASCIIString(mode, "ignore") != 0)
            eager = 1;
    }
    Py_XDECREF(d);
    PyErr_Clear();
    Py_XSETREF(errstate.last, cur);
    errstate.last_mask = mask;
    errstate.last_eager = eager;
    gp_record_errstate = mask;
    return eager;
}

/* The state object for a "warn" mask (others "ignore"); borrowed or NULL. */
static PyObject *errstate_object(unsigned mask)
{
    mask &= 15;
    if (!errstate.by_mask[mask] && errstate.make) {
        PyObject *kw = PyDict_New();
        for (int i = 0; kw && i < 4; i++) {
            PyObject *v = PyUnicode_FromString(mask >> i & 1 ? "warn" : "ignore");
            if (!v || PyDict_SetItemString(kw, fpe_names[i], v) < 0)
                Py_CLEAR(kw);
            Py_XDECREF(v);
        }
        PyObject *args = PyTuple_New(0);
        if (kw && args)
            errstate.by_mask[mask] = PyObject_Call(errstate.make, args, kw);
        Py_XDECREF(args);
        Py_XDECREF(kw);
        PyErr_Clear();
    }
    return errstate.by_mask[mask];
}

static int init_errstate(void)
{
    PyObject *mu = PyImport_ImportModule("numpy._core._multiarray_umath");
    if (!mu)
        return -1;
    errstate.var = PyObject_GetAttrString(mu, "_extobj_contextvar");
    errstate.get_dict = PyObject_GetAttrString(mu, "_get_extobj_dict");
    errstate.make = PyObject_GetAttrString(mu, "_make_extobj");
    Py_DECREF(mu);
    if (!errstate.var || !errstate.get_dict || !errstate.make || !PyContextVar_CheckExact(errstate.var)) {
        /* another NumPy: every operation under a non-default state is NumPy's */
        PyErr_Clear();
        Py_CLEAR(errstate.var);
    }
    return 0;
}

/* ---- NumPy evaluator of pending nodes ---------------------------------- */

typedef struct {
    GpNode *node[256];
    PyObject *value[256];
    int n;
} Memo;

/* The tuple of the axes set in mask (bits 0..nd-1), for NumPy's axis=.
 * New reference or NULL with an exception. */
static PyObject *axes_of_mask(uint64_t mask, int nd)
{
    int count = 0;
    for (int d = 0; d < nd; d++)
        count += (int)(mask >> d & 1);
    PyObject *axes = PyTuple_New(count);
    for (int d = 0, k = 0; axes && d < nd; d++) {
        if (!(mask >> d & 1))
            continue;
        PyObject *ax = PyLong_FromLong(d);
        if (!ax) {
            Py_CLEAR(axes);
            break;
        }
        PyTuple_SET_ITEM(axes, k++, ax);
    }
    return axes;
}

static PyObject *numpy_value(GpNode *n, Memo *m);

static PyObject *leaf_view(GpNode *n)
{
    PyArray_Descr *descr = gp_descr_from_dtype(n->dtype);
    if (n->op == GP_OP_CONST)
        return PyArray_Scalar(&n->value, descr, NULL);
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        dims[d] = n->shape[d];
    return PyArray_NewFromDescr(&PyArray_Type, descr, n->nd, dims, (npy_intp *)n->strides, n->data, 0, NULL);
}

static PyObject *numpy_compute(GpNode *n, Memo *m)
{
    PyObject *in[3] = {NULL, NULL, NULL}, *res = NULL;
    if (n->replay_in) {
        /* a reduction the planner unrolled into a map: NumPy's reduction */
        PyObject *x = numpy_value(n->replay_in, m);
        PyObject *axes = x ? axes_of_mask(n->replay_mask, n->replay_in->nd) : NULL;
        PyObject *fn = axes ? PyObject_GetAttr(gp_hooks.ufunc_of_op[n->replay_op], gp_hooks.str_reduce) : NULL;
        PyObject *kw = fn ? Py_BuildValue("{sOsO}", "axis", axes, "keepdims", n->replay_keepdims ? Py_True : Py_False) : NULL;
        PyObject *args = kw ? PyTuple_Pack(1, x) : NULL;
        if (args)
            res = PyObject_Call(fn, args, kw);
        Py_XDECREF(args);
        Py_XDECREF(kw);
        Py_XDECREF(fn);
        Py_XDECREF(axes);
        Py_XDECREF(x);
        return res;
    }
    for (int i = 0; i < n->nin; i++)
        if (!(in[i] = numpy_value(n->in[i], m)))
            goto done;
    if (n->op == GP_OP_CAST) {
        PyObject *arr = PyArray_FROM_O(in[0]);
        res = arr ? PyArray_CastToType((PyArrayObject *)arr, gp_descr_from_dtype(n->dtype), 0) : NULL;
        Py_XDECREF(arr);
    } else if (gp_op_is_arg(n->op)) {
        int single = -1, count = 0;
        for (int d = 0; d < n->in[0]->nd; d++)
            if (n->reduce_mask >> d & 1)
                single = d, count++;
        PyObject *axis = count == 1 && n->in[0]->nd > 1 ? PyLong_FromLong(single) : (Py_INCREF(Py_None), Py_None);
        PyObject *kw = Py_BuildValue("{sOsO}", "axis", axis, "keepdims", n->keepdims ? Py_True : Py_False);
        PyObject *args = PyTuple_Pack(1, in[0]);
        if (kw && args)
            res = PyObject_Call(gp_hooks.ufunc_of_op[n->op], args, kw);
        Py_XDECREF(axis);
        Py_XDECREF(kw);
        Py_XDECREF(args);
    } else if (gp_op_kind[n->op] == GP_KIND_SCAN) {
        PyObject *fn = PyObject_GetAttrString(gp_hooks.ufunc_of_op[n->op], "accumulate");
        PyObject *kw = Py_BuildValue("{si}", "axis", __builtin_ctzll(n->reduce_mask));
        PyObject *args = PyTuple_Pack(1, in[0]);
        if (fn && kw && args)
            res = PyObject_Call(fn, args, kw);
        Py_XDECREF(fn);
        Py_XDECREF(kw);
        Py_XDECREF(args);
    } else if (gp_op_kind[n->op] == GP_KIND_REDUCE) {
        PyObject *axes = axes_of_mask(n->reduce_mask, n->in[0]->nd);
        PyObject *fn = PyObject_GetAttr(gp_hooks.ufunc_of_op[n->op], gp_hooks.str_reduce);
        PyObject *kw = Py_BuildValue("{sOsO}", "axis", axes, "keepdims", n->keepdims ? Py_True : Py_False);
        PyObject *args = PyTuple_Pack(1, in[0]);
        if (fn && kw && args)
            res = PyObject_Call(fn, args, kw);
        Py_XDECREF(fn);
        Py_XDECREF(kw);
        Py_XDECREF(args);
        Py_XDECREF(axes);
    } else {
        PyObject *fn = n->op == GP_OP_WHERE ? gp_hooks.np_where : gp_hooks.ufunc_of_op[n->op];
        PyObject *args = PyTuple_New(n->nin);
        for (int i = 0; args && i < n->nin; i++) {
            Py_INCREF(in[i]);
            PyTuple_SET_ITEM(args, i, in[i]);
        }
        if (args)
            res = PyObject_Call(fn, args, NULL);
        Py_XDECREF(args);
    }
done:
    for (int i = 0; i < 3; i++)
        Py_XDECREF(in[i]);
    return res;
}

/* New reference to n's value as a NumPy array or scalar. */
static PyObject *numpy_value(GpNode *n, Memo *m)
{
    if (n->materialized)
        return leaf_view(n);
    for (int i = 0; i < m->n; i++)
        if (m->node[i] == n) {
            Py_INCREF(m->value[i]);
            return m->value[i];
        }
    PyObject *state = errstate.var ? errstate_object(n->errstate) : NULL;
    PyObject *token = state ? PyContextVar_Set(errstate.var, state) : NULL;
    PyErr_Clear();
    PyObject *v = numpy_compute(n, m);
    if (token) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (PyContextVar_Reset(errstate.var, token) < 0)
            PyErr_Clear();
        PyErr_Restore(et, ev, tb);
        Py_DECREF(token);
    }
    if (v && m->n < 256) {
        m->node[m->n] = n;
        m->value[m->n++] = v;
        Py_INCREF(v);
    }
    return v;
}

static PyObject *deferred_type, *deferred_value, *deferred_tb;

static int raise_deferred(void)
{
    if (!deferred_type)
        return 0;
    PyErr_Restore(deferred_type, deferred_value, deferred_tb);
    deferred_type = deferred_value = deferred_tb = NULL;
    return -1;
}

/* gp_fpe_hook: a kernel over nodes raised IEEE exceptions their error
 * states watch.  NumPy computes the nodes again, in order, each under its
 * recorded state: the warnings are NumPy's own, for the same operations;
 * the values are dropped (the kernel's stand).  A warning turned into an
 * exception (warnings filter "error") is kept and raised by the next
 * gp_materialize_or_raise. */
static int fpe_replay(GpNode *const *nodes, int n, unsigned flags)
{
    (void)flags;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Memo *m = PyMem_Calloc(1, sizeof *m);
    int rc = 0;
    for (int i = 0; m && i < n && rc == 0; i++) {
        PyObject *v = numpy_value(nodes[i], m);
        if (!v)
            rc = -1;
        Py_XDECREF(v);
    }
    if (m) {
        for (int i = 0; i < m->n; i++)
            Py_DECREF(m->value[i]);
        PyMem_Free(m);
    }
    if (rc < 0 && !deferred_type)
        PyErr_Fetch(&deferred_type, &deferred_value, &deferred_tb);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
    return rc;
}

/* Whether the pending subgraph of x reads memory of buffer b (an in-place
 * write reads the old values of what it writes), or with b NULL memory that
 * a pending node will still write (reading it would compute that node
 * first and see its new values); conservatively 1 past a visit budget. */
static int reads_buffer(const GpNode *x, const GpBuffer *b, int *budget)
{
    if (--*budget < 0)
        return 1;
    if (x->materialized)
        return b ? x->buf == b : x->buf && x->buf->producer != NULL;
    for (int i = 0; i < x->nin; i++)
        if (x->in[i] && reads_buffer(x->in[i], b, budget))
            return 1;
    return 0;
}

/* Copies the C-contiguous elements of src (elsize bytes each) into the
 * strided n-d array at dst. */
static void copy_strided(char *dst, const int64_t *strides, int nd, const int64_t *shape, const char *src,
                         size_t elsize)
{
    int64_t total = 1, idx[GP_MAXDIMS] = {0}, want = (int64_t)elsize;
    int contiguous = 1;
    for (int d = nd - 1; d >= 0; d--) {
        contiguous &= shape[d] == 1 || strides[d] == want;
        want *= shape[d];
        total *= shape[d];
    }
    if (contiguous) {
        memcpy(dst, src, (size_t)total * elsize);
        return;
    }
    for (int64_t i = 0; i < total; i++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
            off += idx[d] * strides[d];
        memcpy(dst + off, src + i * (int64_t)elsize, elsize);
        for (int d = nd - 1; d >= 0 && ++idx[d] == shape[d]; d--)
            idx[d] = 0;
    }
}

GpStatus gp_eval_with_numpy(GpNode *n)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    GpStatus st = GP_EJIT;
    Memo *m = PyMem_Calloc(1, sizeof *m);
    int have_buffer = !n->materialized && gp_node_ensure_buffer(n) == GP_OK;
    int budget = 4096;
    /* an in-place write reads the old values: the memory is opened first
     * (another thread may then see the old values until the copy below) */
    if (have_buffer && reads_buffer(n, n->buf, &budget)) {
        gp_lock();
        gp_buffer_open_for_write(n->buf);
        gp_unlock();
    }
    PyObject *v = m && have_buffer ? numpy_value(n, m) : NULL;
    /* NumPy's value, cast and broadcast into a private C-ordered array */
    PyObject *src = NULL;
    if (v) {
        npy_intp dims[GP_MAXDIMS];
        for (int d = 0; d < n->nd; d++)
            dims[d] = n->shape[d];
        src = PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(n->dtype), n->nd, dims, NULL, NULL, 0, NULL);
        PyObject *vv = src ? PyArray_FROM_O(v) : NULL;
        if (!vv || PyArray_CopyInto((PyArrayObject *)src, (PyArrayObject *)vv) < 0)
            Py_CLEAR(src);
        Py_XDECREF(vv);
    }
    if (n->materialized) {
        st = GP_OK;
    } else if (src) {
        /* the values go in with the core lock held and no NumPy call: staged
         * (guard.c), so other threads see all of them or fault and wait */
        gp_lock();
        GpBuffer *b = n->buf;
        char *stage;
        int copy = 0;
        if (!n->materialized && gp_buffer_stage(b, &stage, &copy) == 0 &&
            (!copy || gp_buffer_read_protected(b->data, stage, b->mapped) == 0 || (gp_buffer_unstage(b, stage), 0))) {
            int64_t own[GP_MAXDIMS];
            gp_node_buffer_strides(n, own);
            char *first = n->out_view ? n->out_data : b->data;
            copy_strided(stage + (first - b->data), n->out_view ? n->out_strides : own, n->nd, n->shape,
                         PyArray_DATA((PyArrayObject *)src), gp_dtype_size(n->dtype));
            int prot = b->producer != n ? PROT_NONE
                       : b->nreaders > 0 || n->nusers > 0 ? PROT_READ : PROT_READ | PROT_WRITE;
            if (gp_buffer_commit(b, stage, prot) == 0) {
                gp_node_mark_materialized(n);
                st = GP_OK;
            }
        } else if (n->materialized) { /* another thread computed it meanwhile */
            st = GP_OK;
        }
        gp_unlock();
    }
    Py_XDECREF(src);
    Py_XDECREF(v);
    if (m) {
        for (int i = 0; i < m->n; i++)
            Py_DECREF(m->value[i]);
        PyMem_Free(m);
    }
    if (st != GP_OK) {
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        PyObject *s = v2 ? PyObject_Str(v2) : NULL;
        gp_set_error("NumPy evaluation failed: %s", s ? PyUnicode_AsUTF8(s) : "?");
        if (t2 && PyErr_GivenExceptionMatches(t2, PyExc_MemoryError))
            st = GP_ENOMEM; /* raised as NumPy's MemoryError where the value is asked for */
        Py_XDECREF(s);
        Py_XDECREF(t2);
        Py_XDECREF(v2);
        Py_XDECREF(tb2);
        PyErr_Clear();
    }
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
    return st;
}

/* ---- the shadow check (GRUMPY_CHECK) --------------------------------------
 *
 * Every sampled kernel's output is also computed by the NumPy evaluator
 * above (before the kernel runs, while the pending inputs exist) and
 * compared under the contract of DESIGN.md section 4: integers and booleans
 * exactly; floats with NaN in the same places and within a bound that
 * allows transcendentals' ULPs and a different summation order
 * (|g - w| <= 8 eps |w| + r max|w|, r = 1e-10 for float64, 1e-4 for
 * float32).  A mismatch is printed (the node's pending DAG and the Python
 * stack that asked for the value), counted, and NumPy's values replace the
 * kernel's, so the program continues with NumPy's answer.  The evaluation
 * runs with warnings ignored: the program sees NumPy's warnings once. */

static double check_fraction;     /* 0: off; 1: every kernel */
static uint64_t check_rng = 0x9e3779b97f4a7c15ull;

#define SHADOW_MAX 16

typedef struct {
    int n;
    GpNode *node[SHADOW_MAX];      /* owned: the root, then live intermediates
                                      (arrays the program holds: extra outputs) */
    PyObject *value[SHADOW_MAX];   /* NumPy's value of each, C-ordered, its dtype and shape */
    char dag[1024];                /* the pending subgraph, as text */
} Shadow;

static void describe_dag(const GpNode *n, char *out, size_t cap, int depth, int *budget)
{
    size_t len = strlen(out);
    if (len + 48 >= cap || --*budget < 0)
        return;
    if (n->materialized) {
        snprintf(out + len, cap - len, "leaf");
        return;
    }
    snprintf(out + len, cap - len, "%s(", gp_op_name[n->op]);
    for (int i = 0; i < n->nin; i++) {
        if (i)
            strncat(out, ", ", cap - strlen(out) - 1);
        if (n->in[i] && depth < 12)
            describe_dag(n->in[i], out, cap, depth + 1, budget);
        else
            strncat(out, "...", cap - strlen(out) - 1);
    }
    strncat(out, ")", cap - strlen(out) - 1);
}

/* v cast and broadcast into a new C-ordered array of n's dtype and shape. */
static PyObject *value_as_node_array(GpNode *n, PyObject *v)
{
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        dims[d] = n->shape[d];
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(n->dtype), n->nd, dims, NULL, NULL, 0, NULL);
    PyObject *vv = arr ? PyArray_FROM_O(v) : NULL;
    if (!vv || PyArray_CopyInto((PyArrayObject *)arr, (PyArrayObject *)vv) < 0)
        Py_CLEAR(arr);
    Py_XDECREF(vv);
    return arr;
}

static __thread int checking; /* this thread's check_begin is evaluating NumPy's value */

static void count_skipped(void)
{
    gp_lock();
    gp_stats.check_skipped++;
    gp_unlock();
}

static void *check_begin(GpNode *n)
{
    PyGILState_STATE g = PyGILState_Ensure();
    if (check_fraction < 1.0) { /* the GIL guards the sampler */
        check_rng = check_rng * 6364136223846793005ull + 1442695040888963407ull;
        if ((double)(check_rng >> 11) * (1.0 / 9007199254740992.0) >= check_fraction) {
            PyGILState_Release(g);
            return NULL;
        }
    }
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Shadow *sh = NULL;
    int budget = 4096;
    /* an in-place write's old values, and memory a pending node will still
     * write, cannot be read without computing them first */
    if (n->out_view || (n->buf && reads_buffer(n, n->buf, &budget)) || reads_buffer(n, NULL, &budget)) {
        count_skipped();
        goto done;
    }
    /* its own catch_warnings block is no barrier (mod_warnings_barrier):
     * it runs while n is being computed */
    checking++;
    PyObject *warnings = PyImport_ImportModule("warnings");
    PyObject *cw = warnings ? PyObject_CallMethod(warnings, "catch_warnings", NULL) : NULL;
    PyObject *entered = cw ? PyObject_CallMethod(cw, "__enter__", NULL) : NULL;
    PyObject *ign = entered ? PyObject_CallMethod(warnings, "simplefilter", "s", "ignore") : NULL;
    Memo *m = ign ? PyMem_Calloc(1, sizeof *m) : NULL;
    PyObject *v = m ? numpy_value(n, m) : NULL;
    sh = v ? PyMem_Calloc(1, sizeof *sh) : NULL;
    if (sh && (sh->value[0] = value_as_node_array(n, v))) {
        sh->node[sh->n++] = n;
        /* intermediates the program holds become the kernel's extra
         * outputs: their values are checked too */
        for (int i = 0; i < m->n && sh->n < SHADOW_MAX; i++) {
            GpNode *x = m->node[i];
            if (x == n || x->materialized || !x->buf || x->out_view)
                continue;
            if (!(sh->value[sh->n] = value_as_node_array(x, m->value[i])))
                break;
            sh->node[sh->n++] = x;
        }
        gp_lock();
        for (int i = 0; i < sh->n; i++)
            gp_node_incref(sh->node[i]);
        budget = 200;
        describe_dag(n, sh->dag, sizeof sh->dag, 0, &budget);
        gp_unlock();
    } else if (sh) {
        PyMem_Free(sh);
        sh = NULL;
    }
    if (m) {
        for (int i = 0; i < m->n; i++)
            Py_DECREF(m->value[i]);
        PyMem_Free(m);
    }
    if (cw) {
        PyObject *x = PyObject_CallMethod(cw, "__exit__", "OOO", Py_None, Py_None, Py_None);
        Py_XDECREF(x);
    }
    checking--;
    Py_XDECREF(ign);
    Py_XDECREF(entered);
    Py_XDECREF(cw);
    Py_XDECREF(warnings);
    Py_XDECREF(v);
    PyErr_Clear();
    if (!sh)
        count_skipped();
done:
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
    return sh;
}

/* Largest violation of the contract between got and want (C-ordered, same
 * dtype t, count elements): its index, or -1 if none. */
static int64_t contract_violation(const char *got, const char *want, int64_t count, GpDType t, double *err)
{
    int64_t worst = -1;
    *err = 0.0;
    if (gp_dtype_is_float(t)) {
        int f32 = t == GP_FLOAT32;
        double eps = f32 ? 1.1920928955078125e-07 : 2.220446049250313e-16, r = f32 ? 1e-4 : 1e-10, scale = 0.0;
        for (int64_t i = 0; i < count; i++) {
            double w = f32 ? (double)((const float *)want)[i] : ((const double *)want)[i];
            if (isfinite(w) && fabs(w) > scale)
                scale = fabs(w);
        }
        for (int64_t i = 0; i < count; i++) {
            double g = f32 ? (double)((const float *)got)[i] : ((const double *)got)[i];
            double w = f32 ? (double)((const float *)want)[i] : ((const double *)want)[i];
            double e;
            if (isnan(w) || isnan(g))
                e = isnan(w) && isnan(g) ? 0.0 : INFINITY;
            else if (isinf(w) || isinf(g))
                e = g == w ? 0.0 : INFINITY;
            else
                e = fabs(g - w) > 8 * eps * fabs(w) + r * scale ? fabs(g - w) : 0.0;
            if (e > *err) {
                *err = e;
                worst = i;
            }
        }
        return worst;
    }
    size_t es = gp_dtype_size(t);
    for (int64_t i = 0; i < count; i++)
        if (memcmp(got + i * (int64_t)es, want + i * (int64_t)es, es) != 0) {
            *err = 1.0;
            return i;
        }
    return -1;
}

/* Compares node n (computed) with want; on a mismatch puts want's values
 * in n's memory and reports it.  GIL held, core lock not. */
static void check_one(GpNode *n, PyArrayObject *want, const char *dag)
{
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        dims[d] = n->shape[d];
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(n->dtype), n->nd, dims,
                                          (npy_intp *)n->strides, n->data, 0, NULL);
    PyObject *got = view ? PyArray_NewCopy((PyArrayObject *)view, NPY_CORDER) : NULL;
    Py_XDECREF(view);
    if (!got)
        return;
    double err;
    int64_t i = contract_violation(PyArray_DATA((PyArrayObject *)got), PyArray_DATA(want), gp_node_size(n), n->dtype,
                                   &err);
    gp_lock();
    gp_stats.checks++;
    if (i >= 0) {
        gp_stats.check_mismatches++;
        /* NumPy's values go in: the program continues with them */
        gp_buffer_open_for_write(n->buf);
        copy_strided(n->data, n->strides, n->nd, n->shape, PyArray_DATA(want), gp_dtype_size(n->dtype));
    }
    gp_unlock();
    if (i >= 0) {
        PyObject *flat_g = PyArray_Ravel((PyArrayObject *)got, NPY_CORDER);
        PyObject *flat_w = PyArray_Ravel(want, NPY_CORDER);
        PyObject *a = flat_g ? PySequence_GetItem(flat_g, (Py_ssize_t)i) : NULL;
        PyObject *b = flat_w ? PySequence_GetItem(flat_w, (Py_ssize_t)i) : NULL;
        PyArray_Descr *dd = gp_descr_from_dtype(n->dtype);
        PySys_FormatStderr("grumpy check: a %s kernel (%R, %d dims) differs from NumPy at flat index %zd: "
                           "grumpy %R, NumPy %R (error %s); NumPy's values are used.\n  fused DAG: %s\n",
                           gp_op_name[n->op], (PyObject *)dd, n->nd, (Py_ssize_t)i, a ? a : Py_None, b ? b : Py_None,
                           err == INFINITY ? "inf" : "beyond the bound", dag);
        Py_XDECREF(dd);
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(flat_g);
        Py_XDECREF(flat_w);
        PyObject *tbm = PyImport_ImportModule("traceback");
        PyObject *r = tbm ? PyObject_CallMethod(tbm, "print_stack", "(Oi)", Py_None, 8) : NULL;
        Py_XDECREF(r);
        Py_XDECREF(tbm);
    }
    Py_DECREF(got);
}

static void check_end(GpNode *root, void *opaque, int compare)
{
    (void)root;
    Shadow *sh = opaque;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    for (int i = 0; i < sh->n; i++) {
        /* an intermediate not computed by this kernel stays pending; memory
         * a pending write will change is not compared */
        GpNode *x = sh->node[i];
        gp_lock();
        int ok = compare && x->materialized && x->buf && !x->buf->producer && !x->buf->writer;
        gp_unlock();
        if (ok)
            check_one(x, (PyArrayObject *)sh->value[i], sh->dag);
        PyErr_Clear();
        Py_DECREF(sh->value[i]);
    }
    gp_lock();
    for (int i = 0; i < sh->n; i++)
        gp_node_decref(sh->node[i]);
    gp_unlock();
    PyMem_Free(sh);
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
}

/* ---- module functions -------------------------------------------------- */

void gp_record_done(void)
{
    gp_hooks.captured++;
    if (!gp_guard_broken() || !gp_hooks.enabled)
        return;
    gp_hooks.enabled = 0;
    PyThreadState *ts = PyEval_SaveThread(); /* a fault elsewhere may need the GIL */
    gp_dag_flush();
    PyEval_RestoreThread(ts);
}

static int64_t env_int(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 10) : dflt;
}

/* The kernel cache from GRUMPY_CACHE_DIR (default $XDG_CACHE_HOME/grumpy
 * or ~/.cache/grumpy; "off" or "0": none) and GRUMPY_CACHE_MAX_MB (default
 * 256), once per process.  A directory that is not safe to use is one
 * RuntimeWarning, and the cache is off.  0, or -1 with an exception set
 * (the warning made an error by a filter, a bad bound). */
static int configure_cache(void)
{
    static int done;
    if (done)
        return 0;
    done = 1;
    const char *mbs = getenv("GRUMPY_CACHE_MAX_MB");
    char *end = NULL;
    int64_t mb = mbs && *mbs ? strtoll(mbs, &end, 10) : 256;
    if (mb < 0 || mb > ((int64_t)1 << 30) || (end && *end)) {
        PyErr_Format(PyExc_ValueError, "GRUMPY_CACHE_MAX_MB=%s: expected a size in MiB, 0 to 2^30", mbs);
        return -1;
    }
    gp_cache_set_max_bytes((uint64_t)mb << 20);
    const char *dir = getenv("GRUMPY_CACHE_DIR");
    char dflt[1024];
    if (!dir) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            snprintf(dflt, sizeof dflt, "%s/grumpy", xdg);
        else if (home && *home)
            snprintf(dflt, sizeof dflt, "%s/.cache/grumpy", home);
        else
            dflt[0] = 0;
        dir = dflt;
    }
    if (gp_cache_set_dir(strcmp(dir, "0") == 0 || strcmp(dir, "off") == 0 ? NULL : dir) < 0)
        return PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "grumpy: kernel cache off: %s", gp_last_error());
    if (gp_cache_dir())
        gp_jit_library_digest(); /* of the library as loaded now, before it can be replaced on disk */
    return 0;
}

static PyObject *mod_cache_info(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (configure_cache() < 0)
        return NULL;
    uint64_t files = 0, bytes = 0;
    const char *dir = gp_cache_dir();
    gp_lock();
    gp_cache_usage(&files, &bytes);
    gp_unlock();
    return Py_BuildValue("{sz sK sK sK}", "dir", dir, "files", (unsigned long long)files, "bytes",
                         (unsigned long long)bytes, "max_bytes", (unsigned long long)gp_cache_max_bytes());
}

static PyObject *mod_cache_clear(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (configure_cache() < 0)
        return NULL;
    gp_lock();
    int64_t n = gp_cache_clear();
    gp_unlock();
    return PyLong_FromLongLong(n < 0 ? 0 : n);
}

static PyObject *mod_enable(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gp_hooks.min_bytes = env_int("GRUMPY_MIN_BYTES", 1 << 20); /* measured: tools/threshold.py */
    if (gp_hooks.min_bytes < 0)
        gp_hooks.min_bytes = 0;
    /* below grumpy's floor: capture at every size, for testing (small
     * buffers are page-guarded mappings too; slow) */
    if (gp_hooks.min_bytes < (int64_t)GP_GUARD_MIN_BYTES)
        gp_guard_set_min_bytes((size_t)gp_hooks.min_bytes);
    const char *chk = getenv("GRUMPY_CHECK");
    if (chk && *chk) {
        char *end;
        double f = strtod(chk, &end);
        if (*end || !(f >= 0.0 && f <= 1.0)) {
            PyErr_Format(PyExc_ValueError, "GRUMPY_CHECK=%s: expected 0, 1 or a fraction of kernels in (0, 1)", chk);
            return NULL;
        }
        check_fraction = f;
        gp_check_begin = f > 0.0 ? check_begin : NULL;
        gp_check_end = check_end;
    }
    gp_hooks.max_fuse = env_int("GRUMPY_MAX_FUSE", 64);
    gp_hooks.strict = (int)env_int("GRUMPY_STRICT", 0);
    gp_config.force_jit_failure = (int)env_int("GRUMPY_DEBUG_JIT_FAIL", 0);
    gp_config.debug_corrupt = (int)env_int("GRUMPY_DEBUG_CORRUPT", 0);
    gp_fail_at = env_int("GRUMPY_DEBUG_FAIL", 0);
    gp_config.dump_ir = (int)env_int("GRUMPY_DUMP_IR", 0);
    gp_config.debug_plan = (int)env_int("GRUMPY_DEBUG_PLAN", 0);
    gp_pool_set_threads((int)env_int("GRUMPY_THREADS", 0));
    gp_blas_set_threads(gp_pool_threads());
    const char *be = getenv("GRUMPY_BACKEND");
    if (be && *be && strcmp(be, "cpu") && strcmp(be, "numpy")) {
        PyErr_Format(PyExc_ValueError, "GRUMPY_BACKEND=%s: expected cpu (LLVM kernels, the default) or numpy", be);
        return NULL;
    }
    gp_backend_set(be && !strcmp(be, "numpy") ? &gp_backend_numpy : &gp_backend_cpu);
    if (configure_cache() < 0)
        return NULL;
    if (gp_guard_install() < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    PyObject *cap = PyCapsule_New(&grumpy_handler, "mem_handler", NULL);
    if (!cap)
        return NULL;
    PyObject *old = PyDataMem_SetHandler(cap);
    Py_DECREF(cap);
    if (!old)
        return NULL;
    Py_DECREF(old);
    gp_hooks.enabled = 1;
    Py_RETURN_NONE;
}

static PyObject *mod_uninstall_guard(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (gp_guard_uninstall() < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

static PyObject *mod_reinstall_guard(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (gp_hooks.enabled && gp_guard_install() < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
}

static PyObject *mod_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    GpStats s;
    gp_lock();
    s = gp_stats;
    gp_unlock();
    PyObject *fb = PyDict_Copy(gp_hooks.fallbacks);
    if (!fb)
        return NULL;
    return Py_BuildValue(
        "{sssLsLsLsLsLsLsLsLsLsLsLsLsNsdsdsLsisisLsLsLsLsLsLsLsLsLsLsLsLsL}", "backend", gp_backend()->name, "ops_captured", (long long)gp_hooks.captured,
        "ops_eager_small", (long long)gp_hooks.eager_small, "nodes_recorded", (long long)s.nodes_recorded,
        "kernels_compiled", (long long)s.kernels_compiled, "kernels_launched", (long long)s.kernels_launched,
        "cache_hits", (long long)s.cache_hits, "disk_cache_hits", (long long)s.disk_cache_hits, "jit_failures", (long long)s.jit_failures,
        "plan_failures", (long long)s.plan_failures,
        "nodes_fused", (long long)s.nodes_fused, "extra_outputs", (long long)s.extra_outputs,
        "guard_faults", (long long)s.guard_faults, "fallbacks", fb, "compile_seconds",
        (double)s.compile_ns * 1e-9, "run_seconds", (double)s.run_ns * 1e-9, "bytes_moved",
        (long long)s.bytes_moved, "threads", gp_pool_threads(), "pending", (int)gp_dag_pending_count(), "live_nodes",
        (long long)s.live_nodes, "live_buffers", (long long)s.live_buffers, "live_buffer_bytes",
        (long long)s.live_buffer_bytes, "gemm_calls", (long long)s.gemm_calls, "gemv_calls",
        (long long)s.gemv_calls, "dot_calls", (long long)s.dot_calls, "blas_operand_copies",
        (long long)s.blas_operand_copies, "fpe_replays", (long long)s.fpe_replays, "fpe_unreported",
        (long long)s.fpe_unreported, "checks", (long long)s.checks, "check_mismatches", (long long)s.check_mismatches,
        "check_skipped", (long long)s.check_skipped, "fail_points", (long long)s.fail_points);
}

static PyObject *mod_reset_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gp_lock();
    int64_t ln = gp_stats.live_nodes, lb = gp_stats.live_buffers, lbb = gp_stats.live_buffer_bytes;
    memset(&gp_stats, 0, sizeof gp_stats);
    gp_stats.live_nodes = ln;
    gp_stats.live_buffers = lb;
    gp_stats.live_buffer_bytes = lbb;
    gp_unlock();
    gp_hooks.captured = gp_hooks.eager_small = 0;
    PyDict_Clear(gp_hooks.fallbacks);
    Py_RETURN_NONE;
}

static PyObject *mod_as_grumpy(PyObject *self, PyObject *obj)
{
    (void)self;
    return gp_as_grumpy(obj);
}

static PyObject *mod_materialize(PyObject *self, PyObject *obj)
{
    (void)self;
    if (PyArray_Check(obj) && gp_ensure_computed((PyArrayObject *)obj) < 0)
        return NULL;
    Py_INCREF(obj);
    return obj;
}

static PyObject *mod_is_pending(PyObject *self, PyObject *obj)
{
    (void)self;
    if (!PyArray_Check(obj) || !(PyArray_NBYTES((PyArrayObject *)obj) != 0))
        Py_RETURN_FALSE;
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA((PyArrayObject *)obj));
    return PyBool_FromLong(b && b->producer);
}

static PyObject *mod_flush(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (raise_after(gp_dag_flush()) < 0) /* a warning made an error is raised here */
        return NULL;
    Py_RETURN_NONE;
}

/* Entering or leaving a warnings.catch_warnings block (grumpy/__init__.py):
 * everything pending is computed, so its warnings fall on the side of the
 * block where NumPy gives them; not inside the shadow check's own block. */
static PyObject *mod_warnings_barrier(PyObject *self, PyObject *unused)
{
    if (checking || gp_dag_pending_count() == 0)
        Py_RETURN_NONE;
    return mod_flush(self, unused);
}

static PyObject *mod_set_threads(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    gp_pool_set_threads((int)n);
    gp_blas_set_threads(gp_pool_threads());
    Py_RETURN_NONE;
}

static PyObject *mod_captured_ops(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyObject *l = PyList_New(0);
    for (int op = 0; l && op < GP_NOPS; op++)
        if (gp_hooks.ufunc_of_op[op]) {
            PyObject *s = PyUnicode_FromString(gp_op_numpy_name[op]);
            if (!s || PyList_Append(l, s) < 0)
                Py_CLEAR(l);
            Py_XDECREF(s);
        }
    return l;
}

/* ---- creation function wrapper ----------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *fn; /* owned: the wrapped NumPy callable */
    vectorcallfunc vectorcall;
} Wrapper;

static PyObject *wrapper_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Wrapper *w = (Wrapper *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyArray_Check(args[i]) && gp_ensure_computed((PyArrayObject *)args[i]) < 0)
            return NULL;
    PyObject *res = PyObject_Vectorcall(w->fn, args, nargsf, kwnames);
    if (n >= 1)
        res = gp_self_if_plain_view(args[0], res);
    return gp_wrap_result(res);
}

PyObject *gp_self_if_plain_view(PyObject *self, PyObject *res)
{
    if (!res || Py_TYPE(self) != &GpArray_Type || Py_TYPE(res) != &PyArray_Type ||
        PyArray_BASE((PyArrayObject *)res) != self)
        return res;
    PyArrayObject *r = (PyArrayObject *)res, *x = (PyArrayObject *)self;
    int same = PyArray_DATA(r) == PyArray_DATA(x) && PyArray_NDIM(r) == PyArray_NDIM(x) &&
               PyArray_EquivTypes(PyArray_DESCR(r), PyArray_DESCR(x)) &&
               PyArray_ISWRITEABLE(r) == PyArray_ISWRITEABLE(x);
    for (int d = 0; same && d < PyArray_NDIM(r); d++)
        same = PyArray_DIM(r, d) == PyArray_DIM(x, d) && PyArray_STRIDE(r, d) == PyArray_STRIDE(x, d);
    if (!same)
        return res;
    Py_DECREF(res);
    Py_INCREF(self);
    return self;
}

static void wrapper_dealloc(PyObject *self)
{
    Py_XDECREF(((Wrapper *)self)->fn);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *wrapper_getattr(PyObject *self, PyObject *name)
{
    /* look like the wrapped function (numpy.ma checks __doc__, inspect
     * follows __wrapped__) */
    if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
        Py_INCREF(((Wrapper *)self)->fn);
        return ((Wrapper *)self)->fn;
    }
    static const char *const forwarded[] = {"__doc__", "__name__", "__qualname__", "__module__",
                                            "__signature__", "__text_signature__", NULL};
    for (int i = 0; forwarded[i]; i++)
        if (PyUnicode_CompareWithASCIIString(name, forwarded[i]) == 0)
            return PyObject_GetAttr(((Wrapper *)self)->fn, name);
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return r;
    PyErr_Clear();
    return PyObject_GetAttr(((Wrapper *)self)->fn, name);
}

static PyObject *wrapper_repr(PyObject *self) { return PyObject_Repr(((Wrapper *)self)->fn); }

static PyObject *wrapper_descr_get(PyObject *self, PyObject *obj, PyObject *type);

static PyTypeObject Wrapper_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grumpy._grumpy.CreationWrapper",
    .tp_basicsize = sizeof(Wrapper),
    .tp_dealloc = wrapper_dealloc,
    .tp_vectorcall_offset = offsetof(Wrapper, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = wrapper_getattr,
    .tp_repr = wrapper_repr,
    .tp_descr_get = wrapper_descr_get,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A NumPy creation function whose array results are grumpy arrays.",
};

static PyObject *wrap_callable(PyObject *fn)
{
    Wrapper *w = PyObject_New(Wrapper, &Wrapper_Type);
    if (!w)
        return NULL;
    Py_INCREF(fn);
    w->fn = fn;
    w->vectorcall = wrapper_vectorcall;
    return (PyObject *)w;
}

/* As a class attribute the wrapper binds as the function it wraps does: a
 * Python function becomes a bound method (wrapped again), a builtin such
 * as np.array does not bind at all (`array = np.array` in a class body,
 * called as self.array(x, dtype=...), as NumPy's own tests do). */
static PyObject *wrapper_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    PyObject *fn = ((Wrapper *)self)->fn;
    descrgetfunc get = Py_TYPE(fn)->tp_descr_get;
    if (!obj || obj == Py_None || !get) {
        Py_INCREF(self);
        return self;
    }
    PyObject *bound = get(fn, obj, type);
    if (!bound)
        return NULL;
    if (bound == fn) {
        Py_DECREF(bound);
        Py_INCREF(self);
        return self;
    }
    PyObject *w = wrap_callable(bound);
    Py_DECREF(bound);
    return w;
}

static PyObject *mod_use_blas(PyObject *self, PyObject *args)
{
    (void)self;
    const char *path, *prefix, *suffix;
    if (!PyArg_ParseTuple(args, "sss", &path, &prefix, &suffix))
        return NULL;
    gp_blas_use_library(path, prefix, suffix);
    Py_RETURN_NONE;
}

static PyObject *mod_wrap(PyObject *self, PyObject *fn)
{
    (void)self;
    return wrap_callable(fn);
}

static PyObject *mod_cpu(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    char *ir = NULL;
    (void)ir;
    return Py_BuildValue("{ss}", "cpu", gp_jit_cpu_name());
}

static PyMethodDef module_methods[] = {
    {"enable", mod_enable, METH_NOARGS, "enable()\n--\n\nTurns capture on for this process: installs the page guard and the NEP 49 memory handler, reads GRUMPY_* variables."},
    {"reinstall_guard", mod_reinstall_guard, METH_NOARGS, "Puts the fault handler back on top (after faulthandler.enable())."},
    {"uninstall_guard", mod_uninstall_guard, METH_NOARGS, "Takes the fault handler off the top of the chain (around faulthandler calls)."},
    {"stats", mod_stats, METH_NOARGS, "stats() -> dict of counters (see grumpy.stats)."},
    {"reset_stats", mod_reset_stats, METH_NOARGS, "Zeroes the counters."},
    {"as_grumpy", mod_as_grumpy, METH_O, "as_grumpy(a) -> a as a grumpy.ndarray (no copy)."},
    {"materialize", mod_materialize, METH_O, "materialize(a) -> a, computed."},
    {"is_pending", mod_is_pending, METH_O, "is_pending(a) -> True if a's memory is not computed yet."},
    {"flush", mod_flush, METH_NOARGS, "Computes every pending array."},
    {"warnings_barrier", mod_warnings_barrier, METH_NOARGS, "Computes every pending array (at a warnings.catch_warnings boundary)."},
    {"set_threads", mod_set_threads, METH_O, "set_threads(n): kernel threads (n <= 0: all CPUs)."},
    {"captured_ops", mod_captured_ops, METH_NOARGS, "Names of the NumPy ufuncs grumpy fuses."},
    {"wrap", mod_wrap, METH_O, "wrap(fn) -> callable returning grumpy arrays."},
    {"use_blas", mod_use_blas, METH_VARARGS, "use_blas(path, prefix, suffix): the OpenBLAS for matrix products."},
    {"cpu", mod_cpu, METH_NOARGS, "Host CPU as seen by the JIT."},
    {"cache_info", mod_cache_info, METH_NOARGS, "cache_info() -> {'dir': str or None (off), 'files', 'bytes', 'max_bytes'} of the on-disk kernel cache."},
    {"cache_clear", mod_cache_clear, METH_NOARGS, "cache_clear() -> number of files removed from the on-disk kernel cache."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_grumpy",
    "grumpy's C core: the lazy ndarray subtype, capture hooks, planner, JIT and runtime.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

/* Adds numpy's functions named in the NULL-terminated names to set. */
static int add_functions(PyObject *set, PyObject *np, const char *const *names)
{
    for (int i = 0; names[i]; i++) {
        PyObject *f = PyObject_GetAttrString(np, names[i]);
        if (!f || PySet_Add(set, f) < 0) {
            Py_XDECREF(f);
            return -1;
        }
        Py_DECREF(f);
    }
    return 0;
}

static int init_tables(void)
{
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *um = PyImport_ImportModule("numpy._core.umath");
    if (!np || !um)
        goto fail;
    for (int op = 0; op < GP_NOPS; op++) {
        const char *name = gp_op_numpy_name[op];
        if (!*name || gp_op_kind[op] == GP_KIND_LEAF)
            continue;
        PyObject *o = PyObject_GetAttrString(op == GP_OP_CLIP ? um : np, name);
        if (!o) {
            PyErr_Clear();
            continue;
        }
        gp_hooks.ufunc_of_op[op] = o;
    }
    gp_hooks.np_where = PyObject_GetAttrString(np, "where");
    gp_hooks.np_clip = PyObject_GetAttrString(np, "clip");
    gp_hooks.np_dot = PyObject_GetAttrString(np, "dot");
    gp_hooks.np_vdot = PyObject_GetAttrString(np, "vdot");
    gp_hooks.np_inner = PyObject_GetAttrString(np, "inner");
    gp_hooks.np_outer = PyObject_GetAttrString(np, "outer");
    gp_hooks.np_tensordot = PyObject_GetAttrString(np, "tensordot");
    gp_hooks.np_einsum = PyObject_GetAttrString(np, "einsum");
    gp_hooks.np_copyto = PyObject_GetAttrString(np, "copyto");
    gp_hooks.np_novalue = PyObject_GetAttrString(np, "_NoValue");
    gp_hooks.np_concatenate = PyObject_GetAttrString(np, "concatenate");
    gp_hooks.fallbacks = PyDict_New();
    gp_hooks.passthrough = PySet_New(NULL);
    if (!gp_hooks.np_where || !gp_hooks.np_clip || !gp_hooks.np_dot || !gp_hooks.np_vdot || !gp_hooks.np_inner ||
        !gp_hooks.np_outer || !gp_hooks.np_tensordot || !gp_hooks.np_einsum || !gp_hooks.np_copyto || !gp_hooks.np_novalue || !gp_hooks.np_concatenate ||
        !gp_hooks.fallbacks || !gp_hooks.passthrough)
        goto fail;
    /* implemented by NumPy with the array's own methods: run them on grumpy
     * arrays (reductions stay lazy, transposes stay views) */
    static const char *const passthrough[] = {
        "sum", "prod", "mean", "min", "max", "amin", "amax", "any", "all", "around", "round", "transpose",
        "shape", "ndim", "size", "cumsum", "cumprod", "var", "std", "ptp", "average", "count_nonzero",
        "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmin", "nanmax", "nanargmin", "nanargmax",
        "nancumsum", "nancumprod", "reshape", "ravel", "swapaxes", "moveaxis", "squeeze", "expand_dims",
        "flip", "fliplr", "flipud", "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d",
        "shares_memory", "may_share_memory", "stack", "hstack", "vstack", "dstack", "column_stack", NULL};
    if (add_functions(gp_hooks.passthrough, np, passthrough) < 0)
        goto fail;
    gp_hooks.creation = PySet_New(NULL);
    if (!gp_hooks.creation)
        goto fail;
    static const char *const creation[] = {"zeros_like", "ones_like", "empty_like", "full_like", "copy",
                                           "array", "asarray", "asanyarray", "ascontiguousarray", NULL};
    if (add_functions(gp_hooks.creation, np, creation) < 0)
        goto fail;
#define INTERN(field, text)                                  \
    if (!(gp_hooks.field = PyUnicode_InternFromString(text))) \
        goto fail;
    INTERN(str_reduce, "reduce");
    INTERN(str_call, "__call__");
    INTERN(str_out, "out");
    INTERN(str_axis, "axis");
    INTERN(str_dtype, "dtype");
    INTERN(str_keepdims, "keepdims");
    INTERN(str_where, "where");
    INTERN(str_initial, "initial");
    INTERN(str_implementation, "_implementation");
    INTERN(str_name, "__name__");
    Py_DECREF(np);
    Py_DECREF(um);
    return 0;
fail:
    Py_XDECREF(np);
    Py_XDECREF(um);
    return -1;
}

PyMODINIT_FUNC PyInit__grumpy(void);
PyMODINIT_FUNC PyInit__grumpy(void)
{
    import_array();
    import_umath();
    gp_core_init();
    if (PyType_Ready(&Wrapper_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (init_tables() < 0 || init_errstate() < 0 || gp_array_type_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    gp_eval_fallback = gp_eval_with_numpy;
    gp_fpe_hook = fpe_replay;
    return m;
}
