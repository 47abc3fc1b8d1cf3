/* hooks/capture_writes.c -- writes into existing arrays as pending
 * in-place nodes (t[...] = value, np.copyto with where=),
 * np.concatenate as writes of each piece into slices of one result,
 * np.roll as a copy read through a wrapped leaf (fused into its users),
 * and x[idx] as a gather (fused into its users).
 */
#include "capture.h"

#include <sys/mman.h>

/* Whether array o broadcasts to t's shape (NumPy's rules). */
int gp_broadcasts_to(PyArrayObject *o, PyArrayObject *t)
{
    int on = PyArray_NDIM(o), nd = PyArray_NDIM(t);
    if (on > nd)
        return 0;
    for (int d = 0; d < on; d++) {
        npy_intp s = PyArray_DIM(o, d), want = PyArray_DIM(t, nd - on + d);
        if (s != want && s != 1)
            return 0;
    }
    return 1;
}

/* Scalar value converted to t's dtype as NumPy's assignment converts it
 * (t[...] = value, t.fill(value)): set into a 0-d array of that dtype by
 * NumPy's own setitem.  NumPy raises OverflowError for an integer out of
 * t's range (a NumPy int64 too: `v[:, ::-1] = x.sum()` into an int32 v,
 * which a cast wrapped: fuzz case 668000149), ValueError for NaN into an
 * integer dtype, and warns as it casts; both assignments convert a scalar
 * so (tests/test_regressions.py compares them over scalar kinds and
 * dtypes).  New reference to t's dtype's scalar, or NULL with NumPy's
 * exception. */
static PyObject *scalar_as_numpy_sets_it(PyArrayObject *t, PyObject *value)
{
    PyArray_Descr *d = PyArray_DESCR(t);
    Py_INCREF(d);
    PyArrayObject *z = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, d, 0, NULL, NULL, NULL, 0, NULL);
    PyObject *key = z ? PyTuple_New(0) : NULL;
    PyObject *converted = NULL;
    if (key && PyObject_SetItem((PyObject *)z, key, value) == 0) {
        Py_INCREF(z);
        converted = PyArray_Return(z);
    }
    Py_XDECREF(key);
    Py_XDECREF(z);
    return converted;
}

/* t := value where mask (everywhere when mask is NULL), lazily: a node
 * writing t's memory in place (a copy with broadcast and a cast to t's
 * dtype; with a mask, where(mask, value, t)).  Returns 0 when captured, 1
 * when the caller must let NumPy write (nothing done), -1 with an
 * exception.  A value or mask in t's memory is left to NumPy, which copies
 * overlapping data first. */
static int capture_write(PyArrayObject *t, PyObject *value, PyArrayObject *mask, int setitem)
{
    int dt = gp_dtype_from_descr(PyArray_DESCR(t));
    int nd = PyArray_NDIM(t);
    Operand x, xm, xt;
    if (!gp_capturing() || dt < 0 || nd > GP_MAXDIMS || !PyArray_ISWRITEABLE(t) ||
        (PyArray_FLAGS(t) & GP_NPY_WARN_ON_WRITE) || (int64_t)PyArray_NBYTES(t) < gp_hooks.min_bytes ||
        gp_has_internal_overlap(t) || gp_classify(value, &x) < 0 || gp_errstate_for_capture())
        return 1;
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA(t));
    if (!b || gp_write_stages_too_much(t, b))
        return 1;
    if (x.is_array &&
        (!gp_broadcasts_to((PyArrayObject *)value, t) ||
         (PyArray_NBYTES((PyArrayObject *)value) != 0 && gp_buffer_lookup(PyArray_DATA((PyArrayObject *)value)) == b)))
        return 1; /* NumPy raises its broadcast error, or copies the overlap */
    if (mask && (gp_classify((PyObject *)mask, &xm) < 0 || xm.code != GP_BOOL || !gp_broadcasts_to(mask, t) ||
                 (PyArray_NBYTES(mask) != 0 && gp_buffer_lookup(PyArray_DATA(mask)) == b)))
        return 1;
    /* setitem: a scalar value as NumPy converts it, before anything is done */
    PyObject *converted = NULL;
    if (setitem && !x.is_array &&
        (!(converted = scalar_as_numpy_sets_it(t, value)) || gp_classify(converted, &x) < 0)) {
        Py_XDECREF(converted);
        return PyErr_Occurred() ? -1 : 1;
    }
    int64_t shape[GP_MAXDIMS], strides[GP_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        shape[d] = PyArray_DIM(t, d);
        strides[d] = PyArray_STRIDE(t, d);
    }
    int failed = gp_buffer_compute_writes_or_raise(b) < 0;
    if (!failed && b->nreaders > 0 && gp_dag_flush() != GP_OK) {
        PyErr_Format(PyExc_RuntimeError, "grumpy flush failed: %s", gp_last_error());
        failed = 1;
    }
    if (failed) {
        Py_XDECREF(converted);
        return -1;
    }
    GpNode *in[3] = {NULL, NULL, NULL}, *n = NULL;
    in[1] = gp_operand_node(&x, (GpDType)dt);
    Py_XDECREF(converted); /* the constant node holds its value */
    if (!in[1])
        goto fail;
    if (mask) {
        /* the old values are read through the same pointer the kernel writes */
        if (gp_classify((PyObject *)t, &xt) < 0 || !(in[0] = gp_operand_node(&xm, GP_BOOL)) ||
            !(in[2] = gp_operand_node(&xt, (GpDType)dt)))
            goto fail;
        n = gp_record_map(GP_OP_WHERE, (GpDType)dt, 3, in, nd, shape);
    } else {
        n = gp_record_map(GP_OP_CAST, (GpDType)dt, 1, &in[1], nd, shape);
    }
    gp_lock();
    for (int i = 0; i < 3; i++)
        if (in[i])
            gp_node_decref(in[i]);
    GpStatus st = n ? gp_settle_other_writer_locked(b, n) : GP_OK;
    if (n && st == GP_OK)
        gp_node_set_output_view(n, b, PyArray_DATA(t), strides);
    gp_unlock();
    if (!n) {
        PyErr_NoMemory();
        return -1;
    }
    if (st != GP_OK) {
        gp_node_release(n);
        return gp_raise_status(st);
    }
    int rc = n->weight > gp_hooks.max_fuse ? gp_materialize_or_raise(n) : 0;
    gp_node_release(n);
    gp_record_done();
    return rc;
fail:
    for (int i = 0; i < 3; i++)
        gp_node_release(in[i]);
    return PyErr_Occurred() ? -1 : 1;
}

/* t[...] = value and t.fill(value): capture_write with NumPy's scalar
 * conversion (scalar_as_numpy_sets_it). */
int gp_capture_assign(PyArrayObject *t, PyObject *value) { return capture_write(t, value, NULL, 1); }

/* np.copyto(dst, src, casting='same_kind', where=True) as a lazy write.
 * The cast must be allowed by NumPy's rule for `casting`
 * (PyArray_CanCastTypeTo); Python scalars are taken for float dst only
 * (their weak-scalar conversion is then a plain cast).  None on success,
 * Py_NotImplemented when NumPy must do it (it raises its own errors). */
PyObject *gp_capture_copyto(PyObject *args, PyObject *kwds)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 2 || n > 4 || !PyArray_Check(PyTuple_GET_ITEM(args, 0)))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *dst = (PyArrayObject *)PyTuple_GET_ITEM(args, 0);
    PyObject *src = PyTuple_GET_ITEM(args, 1);
    PyObject *kw[GP_NKW] = {NULL};
    kw[GP_KW_CASTING] = n > 2 ? PyTuple_GET_ITEM(args, 2) : NULL;
    kw[GP_KW_WHERE] = n > 3 ? PyTuple_GET_ITEM(args, 3) : NULL;
    if (gp_args_keywords(kwds, GP_KW(CASTING) | GP_KW(WHERE), kw) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *casting = kw[GP_KW_CASTING], *where = kw[GP_KW_WHERE];
    NPY_CASTING rule = NPY_SAME_KIND_CASTING;
    if (casting && !PyArray_CastingConverter(casting, &rule)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (where == Py_True)
        where = NULL;
    if (where && !PyArray_Check(where))
        Py_RETURN_NOTIMPLEMENTED;
    if (PyArray_Check(src) || PyArray_IsScalar(src, Generic)) {
        PyArray_Descr *sd = PyArray_Check(src)
                                ? (Py_INCREF(PyArray_DESCR((PyArrayObject *)src)), PyArray_DESCR((PyArrayObject *)src))
                                : PyArray_DescrFromScalar(src);
        int ok = sd && PyArray_CanCastTypeTo(sd, PyArray_DESCR(dst), rule);
        Py_XDECREF(sd);
        if (!ok) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
    } else if (!(PyFloat_CheckExact(src) || PyLong_CheckExact(src) || PyBool_Check(src)) || !PyArray_ISFLOAT(dst) ||
               rule == NPY_NO_CASTING || rule == NPY_EQUIV_CASTING) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (where && PyArray_Check(src) && gp_record_errstate &&
        !PyArray_EquivTypes(PyArray_DESCR((PyArrayObject *)src), PyArray_DESCR(dst)))
        Py_RETURN_NOTIMPLEMENTED; /* a masked cast warns for the unmasked elements only: NumPy's */
    int rc = capture_write(dst, src, (PyArrayObject *)where, 0);
    if (rc < 0)
        return NULL;
    if (rc > 0)
        Py_RETURN_NOTIMPLEMENTED;
    Py_RETURN_NONE;
}

static int valid_casting(PyObject *v)
{
    NPY_CASTING c;
    if (PyArray_CastingConverter(v, &c))
        return 1;
    PyErr_Clear();
    return 0;
}

/* The byte strides of np.concatenate's result of shape dims for arrays
 * a[0..n) of nd dims, laid out in NumPy's dim order: its
 * PyArray_CreateMultiSortedStridePerm (gp_vote_axis_order, slowest first,
 * a dim voting where it is longer than 1).  0, or -1 without memory (no
 * exception set). */
static int concatenate_strides(PyObject *const *a, Py_ssize_t n, int nd, const npy_intp *dims, npy_intp *strides)
{
    int64_t(*st)[GP_MAXDIMS] = n <= INT_MAX / 2 ? malloc((size_t)n * 2 * sizeof *st) : NULL;
    if (!st)
        return -1;
    int64_t(*vote)[GP_MAXDIMS] = st + n;
    for (Py_ssize_t k = 0; k < n; k++)
        for (int d = 0; d < nd; d++) {
            st[k][d] = PyArray_STRIDE((PyArrayObject *)a[k], d);
            vote[k][d] = PyArray_DIM((PyArrayObject *)a[k], d) != 1;
        }
    int perm[GP_MAXDIMS];
    gp_vote_axis_order(nd, (int)n, (const int64_t(*)[GP_MAXDIMS])st, (const int64_t(*)[GP_MAXDIMS])vote, 0, perm);
    free(st);
    gp_perm_strides(nd, dims, PyDataType_ELSIZE(PyArray_DESCR((PyArrayObject *)a[0])), perm, strides);
    return 0;
}

/* np.concatenate(seq, axis=0) of arrays of one dtype, at least one pending:
 * a new array whose parts are lazy writes, so each part's expression is
 * computed straight into its place (one kernel per part, no temporaries).
 * Other arguments, mixed dtypes and shapes NumPy rejects are NumPy's. */
PyObject *gp_capture_concatenate(PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) < 1 || PyTuple_GET_SIZE(args) > 2)
        Py_RETURN_NOTIMPLEMENTED;
    /* np.concatenate(seq, axis=0, out=None, *, dtype=None, casting=...) */
    PyObject *kw[GP_NKW] = {NULL};
    kw[GP_KW_AXIS] = PyTuple_GET_SIZE(args) > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
    if (gp_args_keywords(kwds, GP_KW(AXIS) | GP_KW(OUT) | GP_KW(DTYPE) | GP_KW(CASTING), kw) < 0 ||
        (kw[GP_KW_OUT] && kw[GP_KW_OUT] != Py_None) || (kw[GP_KW_DTYPE] && kw[GP_KW_DTYPE] != Py_None) ||
        (kw[GP_KW_CASTING] && !valid_casting(kw[GP_KW_CASTING])))
        Py_RETURN_NOTIMPLEMENTED; /* (equal dtypes: every casting rule allows the copy) */
    PyObject *seq = PyTuple_GET_ITEM(args, 0);
    if (!(PyList_CheckExact(seq) || PyTuple_CheckExact(seq)) || PySequence_Fast_GET_SIZE(seq) < 1)
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    if (!PyArray_Check(items[0]))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *first = (PyArrayObject *)items[0];
    int nd = PyArray_NDIM(first), axis = 0;
    if (nd < 1 || nd > GP_MAXDIMS || (kw[GP_KW_AXIS] && gp_args_axis(kw[GP_KW_AXIS], nd, &axis) < 0) ||
        gp_dtype_from_descr(PyArray_DESCR(first)) < 0)
        Py_RETURN_NOTIMPLEMENTED; /* NumPy's (axis=None flattens), or NumPy's error */
    npy_intp dims[GP_MAXDIMS];
    memcpy(dims, PyArray_DIMS(first), (size_t)nd * sizeof *dims);
    dims[axis] = 0;
    int any_pending = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyArrayObject *a = (PyArrayObject *)items[i];
        if (!PyArray_Check(items[i]) || gp_foreign_subclass(items[i]) || PyArray_NDIM(a) != nd ||
            !PyArray_EquivTypes(PyArray_DESCR(a), PyArray_DESCR(first)) ||
            PyArray_DESCR(a)->type_num != PyArray_DESCR(first)->type_num)
            Py_RETURN_NOTIMPLEMENTED; /* 'l' and 'q' give NumPy's promotion ('q'), not the first's */
        for (int d = 0; d < nd; d++)
            if (d != axis && PyArray_DIM(a, d) != PyArray_DIM(first, d))
                Py_RETURN_NOTIMPLEMENTED; /* NumPy's ValueError */
        dims[axis] += PyArray_DIM(a, axis);
        Operand x;
        if (gp_classify(items[i], &x) == 0)
            any_pending |= x.pending;
    }
    int64_t bytes = (int64_t)PyDataType_ELSIZE(PyArray_DESCR(first));
    for (int d = 0; d < nd; d++)
        bytes *= dims[d];
    if (!any_pending || bytes < gp_hooks.min_bytes) {
        gp_hooks.eager_small++; /* nothing to fuse: NumPy's copy loops */
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    /* laid out as NumPy lays out its result (np.concatenate of F-ordered
     * pieces is F-ordered) */
    npy_intp strides[GP_MAXDIMS];
    if (concatenate_strides(items, n, nd, dims, strides) < 0) {
        Py_INCREF(Py_Ellipsis); /* NumPy's */
        return Py_Ellipsis;
    }
    PyArray_Descr *descr = PyArray_DESCR(first);
    Py_INCREF(descr);
    PyObject *out = PyArray_NewFromDescr(&GpArray_Type, descr, nd, dims, strides, NULL, 0, NULL);
    if (!out)
        return NULL;
    npy_intp start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        npy_intp len = PyArray_DIM((PyArrayObject *)items[i], axis);
        PyObject *key = PyTuple_New(nd);
        for (int d = 0; key && d < nd; d++) {
            PyObject *lo = d == axis ? PyLong_FromSsize_t(start) : NULL,
                     *hi = d == axis ? PyLong_FromSsize_t(start + len) : NULL;
            PyObject *sl = d != axis ? PySlice_New(NULL, NULL, NULL) : lo && hi ? PySlice_New(lo, hi, NULL) : NULL;
            Py_XDECREF(lo);
            Py_XDECREF(hi);
            if (!sl) {
                Py_CLEAR(key);
                break;
            }
            PyTuple_SET_ITEM(key, d, sl);
        }
        PyObject *part = key ? PyObject_GetItem(out, key) : NULL;
        Py_XDECREF(key);
        int rc = part ? capture_write((PyArrayObject *)part, items[i], NULL, 0) : -1;
        if (rc > 0)
            /* NumPy's copy: the piece computed and the part's buffer made
             * writable here, not by the faults the copy would take (a
             * kernel run for a fault gives no warnings: the third piece of
             * a pending division's np.stack lost its warnings) */
            rc = gp_ensure_computed((PyArrayObject *)items[i]) < 0 || gp_prepare_for_write(part) < 0
                     ? -1
                     : PyArray_CopyInto((PyArrayObject *)part, (PyArrayObject *)items[i]);
        Py_XDECREF(part);
        if (rc < 0) {
            Py_DECREF(out);
            return NULL;
        }
        start += len;
    }
    gp_record_done();
    return out;
}

/* One integer of np.roll's shift or axis: an int or an object with
 * __index__ (NumPy converts with int() / operator.index).  0, or -1
 * (declined, no exception). */
static int roll_int(PyObject *o, long long *v)
{
    if (PyBool_Check(o) || !(PyLong_Check(o) || PyArray_IsScalar(o, Integer))) {
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    *v = i ? PyLong_AsLongLong(i) : -1;
    Py_XDECREF(i);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* np.roll's shift or axis as a list of n integers: a scalar (n = 1) or a
 * tuple or list.  0, or -1 (declined). */
static int roll_ints(PyObject *o, long long *v, int *n)
{
    if (PyTuple_Check(o) || PyList_Check(o)) {
        Py_ssize_t k = PySequence_Fast_GET_SIZE(o);
        if (k < 1 || k > GP_MAXDIMS)
            return -1;
        for (Py_ssize_t i = 0; i < k; i++)
            if (roll_int(PySequence_Fast_ITEMS(o)[i], &v[i]) < 0)
                return -1;
        *n = (int)k;
        return 0;
    }
    *n = 1;
    return roll_int(o, v);
}

/* np.roll(a, shift, axis) with axis given, or None for a 1-D array (None
 * flattens an n-D one: NumPy's): a
 * pending copy of `a` read through a wrapped leaf, so a stencil's rolled
 * operands fuse into one kernel instead of a copy each (plan.c splits the
 * kernel into boxes).  A pending `a` is rolled through its map subgraph
 * when that is cheap to compute once per roll, else computed first (it
 * is read at several shifts, as a rule).  The result is C-ordered as NumPy's
 * empty_like(a) is for the layouts taken here.  shift and axis broadcast
 * as np.broadcast(shift, axis) does, shifts of one axis add up. */
PyObject *gp_capture_roll(PyObject *args, PyObject *kwds)
{
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    PyObject *kw[GP_NKW] = {NULL};
    if (na < 1 || na > 3)
        Py_RETURN_NOTIMPLEMENTED;
    kw[GP_KW_SHIFT] = na > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
    kw[GP_KW_AXIS] = na > 2 ? PyTuple_GET_ITEM(args, 2) : NULL;
    if (gp_args_keywords(kwds, GP_KW(SHIFT) | GP_KW(AXIS), kw) < 0 || !kw[GP_KW_SHIFT])
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *ao = PyTuple_GET_ITEM(args, 0);
    if (!PyArray_Check(ao) || gp_foreign_subclass(ao))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *a = (PyArrayObject *)ao;
    int nd = PyArray_NDIM(a), nsh, nax;
    long long sh[GP_MAXDIMS], ax[GP_MAXDIMS] = {0};
    /* axis=None rolls the flattened array: a 1-D array's own axis */
    int flat = !kw[GP_KW_AXIS] || kw[GP_KW_AXIS] == Py_None;
    if (nd < 1 || nd > GP_MAXDIMS || (flat && nd != 1) || gp_dtype_from_descr(PyArray_DESCR(a)) < 0 ||
        PyArray_SIZE(a) == 0 || roll_ints(kw[GP_KW_SHIFT], sh, &nsh) < 0 ||
        (flat ? (nax = 1, nsh != 1) : roll_ints(kw[GP_KW_AXIS], ax, &nax) < 0) || (nsh != nax && nsh != 1 && nax != 1))
        Py_RETURN_NOTIMPLEMENTED; /* NumPy's, or NumPy's error */
    /* NumPy's empty_like(a) (order 'K') is C-ordered when a's strides are */
    for (int d = 0; d + 1 < nd; d++) {
        npy_intp s0 = PyArray_STRIDE(a, d), s1 = PyArray_STRIDE(a, d + 1);
        if (PyArray_DIM(a, d) > 1 && PyArray_DIM(a, d + 1) > 1 && (s0 < 0 ? -s0 : s0) < (s1 < 0 ? -s1 : s1))
            Py_RETURN_NOTIMPLEMENTED;
    }
    int64_t shift[GP_MAXDIMS] = {0};
    int pairs = nsh > nax ? nsh : nax;
    for (int i = 0; i < pairs; i++) {
        long long s = sh[nsh == 1 ? 0 : i], x = ax[nax == 1 ? 0 : i];
        if (x < -nd || x >= nd)
            Py_RETURN_NOTIMPLEMENTED; /* NumPy's AxisError */
        int d = (int)(x < 0 ? x + nd : x);
        int64_t len = PyArray_DIM(a, d);
        shift[d] = (shift[d] + s % len) % len;
    }
    if ((int64_t)PyArray_NBYTES(a) < gp_hooks.min_bytes) {
        gp_hooks.eager_small++; /* NumPy's copy */
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    GpNode *n = gp_node_for_array(a);
    if (!n)
        return PyErr_Occurred() ? NULL : (Py_INCREF(Py_NotImplemented), Py_NotImplemented);
    /* a cheap pending map is rolled through its subgraph (plan.c
     * gp_pending_rolled_locked), any other computed first */
    GpNode *leaf = NULL;
    if (!n->materialized) {
        gp_lock();
        leaf = gp_pending_rolled_locked(n, shift);
        gp_unlock();
    }
    if (!leaf && !n->materialized && gp_materialize_or_raise(n) < 0) {
        gp_node_release(n);
        return NULL;
    }
    if (!leaf)
        leaf = gp_node_leaf_rolled(n, shift);
    gp_node_release(n);
    GpNode *r = leaf ? gp_record_map(GP_OP_CAST, leaf->dtype, 1, &leaf, leaf->nd, leaf->shape) : NULL;
    gp_node_release(leaf);
    if (!r)
        return PyErr_NoMemory();
    /* laid out as NumPy's empty_like(a), which np.roll fills: order='K' */
    int perm[GP_MAXDIMS];
    if (gp_like_order(a, perm)) {
        gp_lock();
        gp_node_set_perm(r, perm);
        gp_unlock();
    }
    PyObject *res = gp_node_result(r);
    gp_record_done();
    return res;
}

/* Whether every index of the C-contiguous integer array k (grumpy dtype
 * kt) lies in [-len, len): then x[k] reads no element out of bounds (a
 * negative index counts from the end, as NumPy's and Python's do; one
 * outside is NumPy's IndexError).  One pass over k, on the calling
 * thread: a signed index i is in range when (uint64)(i + len) < 2 len, an
 * unsigned one when i < len, OR-ed over blocks of INDEX_BLOCK indices
 * that GCC's -O2 vectorizer turns into vector compares (with AVX2 where
 * the CPU has it: index_range_bad's clones).  A bootstrap's
 * x[idx] of 2.5M int64 indices: 1.3 ms instead of 2.2 ms, 0.18 instead of
 * 1.5 ns an index when k is in cache (a min/max loop before). */
#define INDEX_BLOCK 64
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define INDEX_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define INDEX_CLONES
#endif

/* Nonzero when some of the count indices at p (type kt) is outside
 * [-len, len) (signed types) or [0, len) (unsigned ones); len >= 1. */
INDEX_CLONES static uint64_t index_range_bad(const char *p, int64_t count, GpDType kt, int64_t len)
{
    uint64_t bad = 0, span = 2 * (uint64_t)len, ulen = (uint64_t)len;
    int64_t i = 0;
    switch (kt) {
#define SCAN(DT, T, OUTSIDE)                                 \
    case DT: {                                               \
        const T *v = (const T *)(const void *)p;             \
        for (; i + INDEX_BLOCK <= count; i += INDEX_BLOCK) { \
            uint64_t b = 0;                                  \
            for (int j = 0; j < INDEX_BLOCK; j++)            \
                b |= OUTSIDE(v[i + j]);                      \
            bad |= b;                                        \
        }                                                    \
        for (; i < count; i++)                               \
            bad |= OUTSIDE(v[i]);                            \
        return bad;                                          \
    }
#define SIGNED_OUTSIDE(x) ((uint64_t)(int64_t)(x) + ulen >= span)
#define UNSIGNED_OUTSIDE(x) ((uint64_t)(x) >= ulen)
        SCAN(GP_INT8, int8_t, SIGNED_OUTSIDE)
        SCAN(GP_INT16, int16_t, SIGNED_OUTSIDE)
        SCAN(GP_INT32, int32_t, SIGNED_OUTSIDE)
        SCAN(GP_INT64, int64_t, SIGNED_OUTSIDE)
        SCAN(GP_UINT8, uint8_t, UNSIGNED_OUTSIDE)
        SCAN(GP_UINT16, uint16_t, UNSIGNED_OUTSIDE)
        SCAN(GP_UINT32, uint32_t, UNSIGNED_OUTSIDE)
        SCAN(GP_UINT64, uint64_t, UNSIGNED_OUTSIDE)
#undef SCAN
#undef SIGNED_OUTSIDE
#undef UNSIGNED_OUTSIDE
    default: return 1;
    }
}

/* The last index array found in range, kept while nothing can have
 * written it since: x[idx] and y[idx] of one idx check it once (a
 * bootstrap's 20 MB idx: 1.3 ms a check).  The buffer is made read-only
 * before the scan (gp_buffer_read_only: a write from another thread during
 * the scan faults), and the check is kept only when the buffer's
 * prot_epoch after the gather is recorded is the one it had before the
 * scan; it holds while that epoch stays (core/guard.h).  GIL held. */
static struct {
    uint64_t epoch; /* 0: none */
    const char *data;
    int64_t count, len;
    GpDType kt;
} checked, scanned; /* scanned: the last scan's, kept by keep_index_check */

static int same_check(GpBuffer *b, PyArrayObject *k, GpDType kt, int64_t len)
{
    return b && checked.epoch && b->prot == PROT_READ && b->prot_epoch == checked.epoch &&
           checked.data == PyArray_DATA(k) && checked.count == (int64_t)PyArray_SIZE(k) && checked.kt == kt &&
           checked.len == len;
}

static int indices_in_range(PyArrayObject *k, GpDType kt, int64_t len)
{
    if (len < 1 || len > INT64_MAX / 2)
        return 0;
    gp_lock();
    GpBuffer *b = PyArray_NBYTES(k) > 0 ? gp_buffer_lookup(PyArray_DATA(k)) : NULL;
    int known = same_check(b, k, kt, len);
    scanned.epoch = !known && b && gp_buffer_read_only(b) == 0 ? b->prot_epoch : 0;
    gp_unlock();
    if (known) {
        gp_hooks.index_checks_reused++;
        return 1;
    }
    if (index_range_bad(PyArray_DATA(k), (int64_t)PyArray_SIZE(k), kt, len) != 0)
        return 0;
    scanned.data = PyArray_DATA(k);
    scanned.count = (int64_t)PyArray_SIZE(k);
    scanned.kt = kt;
    scanned.len = len;
    return 1;
}

/* After a gather of k was recorded: the scan of k kept when k's buffer is
 * read-only at the epoch it had before the scan. */
static void keep_index_check(PyArrayObject *k)
{
    if (!scanned.epoch || scanned.data != PyArray_DATA(k) || scanned.count != (int64_t)PyArray_SIZE(k))
        return;
    gp_lock();
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA(k));
    if (b && b->prot == PROT_READ && b->prot_epoch == scanned.epoch)
        checked = scanned;
    scanned.epoch = 0;
    gp_unlock();
}

/* The table of a gather: a 0-d leaf at the first element of x's elements
 * in grumpy's memory -- x's own buffer b when x is C-contiguous there
 * (its pending readers then include the gather: a write to x computes it
 * first), else (b NULL) a private copy that nothing else writes.  New
 * reference, or NULL (with an exception when x's pending values could
 * not be computed). */
static GpNode *gather_table(PyArrayObject *x, GpDType t, GpBuffer *b)
{
    if (b) {
        gp_lock();
        GpStatus st = gp_buffer_compute_locked(b); /* (a plain view of pending memory) */
        GpNode *leaf = st == GP_OK ? gp_node_leaf(t, 0, NULL, NULL, PyArray_DATA(x), b) : NULL;
        gp_unlock();
        if (st != GP_OK)
            gp_raise_status(st);
        return leaf;
    }
    GpBuffer *copy = gp_buffer_copy_of(x);
    GpNode *leaf = copy ? gp_node_leaf(t, 0, NULL, NULL, copy->data, copy) : NULL;
    if (copy) {
        gp_lock(); /* the last reference when leaf is NULL */
        gp_buffer_decref(copy);
        gp_unlock();
    }
    return leaf;
}

/* A leaf reading the computed, C-contiguous index array k broadcast along
 * x's rows: shape k.shape + x.shape[1:], stride 0 over the row's axes --
 * k's own memory when it is grumpy's, else a private copy of k (at most
 * the copy bound of a plain operand: NULL above it).  A leaf of k's shape
 * broadcast by a pending node would be priced as recomputed per element
 * and computed in a kernel of its own; a NumPy view of k with the zero
 * strides would be copied whole, row times k's bytes.  New reference, or
 * NULL. */
static GpNode *index_along_rows(PyArrayObject *k, PyArrayObject *x)
{
    int nd = PyArray_NDIM(k), xnd = PyArray_NDIM(x), t = gp_dtype_from_descr(PyArray_DESCR(k));
    int64_t shape[GP_MAXDIMS], strides[GP_MAXDIMS];
    for (int d = 0; d < nd + xnd - 1; d++) {
        shape[d] = d < nd ? PyArray_DIM(k, d) : PyArray_DIM(x, d - nd + 1);
        strides[d] = d < nd ? PyArray_STRIDE(k, d) : 0; /* (a copy of k has k's: k is C-contiguous) */
    }
    char *data = PyArray_DATA(k);
    GpBuffer *b = PyArray_NBYTES(k) != 0 ? gp_buffer_lookup(data) : NULL, *copy = NULL;
    if (!b) {
        if (PyArray_NBYTES(k) > GP_FOREIGN_COPY_MAX_BYTES && PyArray_NBYTES(k) > gp_hooks.min_bytes)
            return NULL;
        if (!(copy = gp_buffer_copy_of(k)))
            return NULL;
        b = copy;
        data = copy->data;
    }
    gp_lock();
    GpStatus st = copy ? GP_OK : gp_buffer_compute_locked(b); /* (a plain view of pending memory) */
    GpNode *leaf = st == GP_OK ? gp_node_leaf((GpDType)t, nd + xnd - 1, shape, strides, data, b) : NULL;
    if (copy)
        gp_buffer_decref(copy); /* the leaf's reference keeps it */
    gp_unlock();
    if (st != GP_OK)
        gp_raise_status(st);
    return leaf;
}

/* The offsets of x[k]'s elements in x's C-ordered table, for an n-D x
 * (n > 1) whose rows are x[i]: k * row + (0, 1, ..., row - 1) as int64
 * nodes of shape k.shape + x.shape[1:] (k broadcast along the row, plus a
 * row of 0 .. row - 1 in x.shape[1:]).  In range when every k is: row *
 * x.shape[0] is x's size (a negative k gives a negative offset by the same
 * size, which the kernel adds).  New reference, or NULL (with an exception
 * when k's pending values could not be computed; without one when k or the
 * row of offsets is larger than a plain operand's copy bound: NumPy's). */
static GpNode *element_offsets(PyArrayObject *x, PyArrayObject *k)
{
    int xnd = PyArray_NDIM(x);
    PyArray_Dims rd = {PyArray_DIMS(x) + 1, xnd - 1};
    npy_intp row = PyArray_SIZE(x) / PyArray_DIM(x, 0);
    GpNode *kb = index_along_rows(k, x);
    if (!kb)
        return NULL;
    PyObject *iota = PyArray_Arange(0.0, (double)row, 1.0, NPY_INT64);
    PyObject *rv = iota ? PyArray_Newshape((PyArrayObject *)iota, &rd, NPY_CORDER) : NULL;
    GpNode *in[2] = {kb, rv ? gp_node_for_array((PyArrayObject *)rv) : NULL};
    Py_XDECREF(iota);
    Py_XDECREF(rv);
    PyErr_Clear(); /* (a failed arange: NumPy's subscript) */
    GpNode *r = NULL;
    gp_lock();
    if (in[1]) {
        GpScalar rs = {.i = row};
        GpNode *at =
            in[0]->dtype == GP_INT64 ? in[0] : gp_node_map(GP_OP_CAST, GP_INT64, 1, &in[0], in[0]->nd, in[0]->shape);
        GpNode *c = at ? gp_node_const(GP_INT64, rs) : NULL;
        GpNode *m[2] = {at, c};
        GpNode *start = c ? gp_node_map(GP_OP_MULTIPLY, GP_INT64, 2, m, at->nd, at->shape) : NULL;
        GpNode *a[2] = {start, in[1]};
        r = start ? gp_node_map(GP_OP_ADD, GP_INT64, 2, a, start->nd, start->shape) : NULL;
        if (start)
            gp_node_decref(start);
        if (c)
            gp_node_decref(c);
        if (at && at != in[0])
            gp_node_decref(at);
    }
    for (int i = 0; i < 2; i++)
        if (in[i])
            gp_node_decref(in[i]);
    gp_unlock();
    return r;
}

/* Whether x[k] of an n-D x is C-ordered in NumPy: its result keeps the
 * memory order of x.shape[1:] (a transposed or Fortran-ordered table's is
 * not), which is C order when the axes longer than 1 have non-increasing
 * |strides|.  The gather's result is always C-ordered. */
static int rows_c_ordered(PyArrayObject *x)
{
    npy_intp last = -1;
    for (int d = 1; d < PyArray_NDIM(x); d++) {
        if (PyArray_DIM(x, d) <= 1)
            continue;
        npy_intp s = PyArray_STRIDE(x, d) < 0 ? -PyArray_STRIDE(x, d) : PyArray_STRIDE(x, d);
        if (last >= 0 && s > last)
            return 0;
        last = s;
    }
    return 1;
}

/* x[key] (grumpy.ndarray's subscript, a plain ndarray's, np.take): a
 * x of a grumpy dtype and a C-contiguous integer index array whose every
 * index is in range (of x's first axis), with a result of
 * GRUMPY_MIN_BYTES or more, becomes a pending gather of x's elements at
 * the indices -- so that its users read x at the indices inside their
 * kernels (a bootstrap's `x[idx].mean(axis=1)` is one map-reduce over idx,
 * k-means' `X - C[labels]` one map over X and labels) rather than a copy.
 * An n-D x is gathered by rows: x[k] has shape k.shape + x.shape[1:], its
 * elements' offsets in x's table computed in the kernel
 * (element_offsets).  The result is C-ordered, as NumPy's for a C-ordered
 * index; a negative index counts from the end (the kernel adds the
 * table's length).  Anything else is NumPy's (NotImplemented): indices
 * out of range, whose IndexError is NumPy's, boolean masks,
 * several index arrays, index arrays of other layouts, a back end without
 * gathers.  New reference, NotImplemented, or NULL with an
 * exception. */
static PyObject *capture_gather(PyArrayObject *x, PyObject *key)
{
    if (!PyArray_Check(key) || gp_foreign_subclass(key))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *k = (PyArrayObject *)key;
    int xt = gp_dtype_from_descr(PyArray_DESCR(x)), kt = gp_dtype_from_descr(PyArray_DESCR(k));
    int nd = PyArray_NDIM(k), xnd = PyArray_NDIM(x);
    if (xnd < 1 || xt < 0 || kt < 0 || kt == GP_BOOL || gp_dtype_is_float((GpDType)kt) || nd < 1 ||
        nd + xnd - 1 > GP_MAXDIMS || !PyArray_IS_C_CONTIGUOUS(k) || PyArray_DIM(x, 0) == 0 ||
        !gp_backend()->supports(GP_OP_GATHER, (GpDType)xt))
        Py_RETURN_NOTIMPLEMENTED;
    int64_t row = PyArray_SIZE(x) / PyArray_DIM(x, 0), bytes; /* elements of one x[i]; the result's bytes */
    if (__builtin_mul_overflow((int64_t)PyArray_SIZE(k), row, &bytes) ||
        __builtin_mul_overflow(bytes, (int64_t)gp_dtype_size((GpDType)xt), &bytes) || !rows_c_ordered(x))
        Py_RETURN_NOTIMPLEMENTED; /* (a broadcast table of 2^60 elements; a result NumPy orders otherwise) */
    if (bytes < gp_hooks.min_bytes) {
        gp_hooks.eager_small++;
        Py_RETURN_NOTIMPLEMENTED;
    }
    /* a table not in grumpy's memory is copied: when that costs little
     * beside the gather's own writes */
    GpBuffer *own = PyArray_IS_C_CONTIGUOUS(x) ? gp_buffer_lookup(PyArray_DATA(x)) : NULL;
    if (!own && PyArray_NBYTES(x) > GP_FOREIGN_COPY_MAX_BYTES && (int64_t)PyArray_NBYTES(x) > bytes / 4)
        Py_RETURN_NOTIMPLEMENTED;
    if (gp_errstate_for_capture())
        Py_RETURN_NOTIMPLEMENTED;
    if (gp_ensure_computed(k) < 0) /* (the plain subscript's key may be pending) */
        return NULL;
    if (!indices_in_range(k, (GpDType)kt, PyArray_DIM(x, 0)))
        Py_RETURN_NOTIMPLEMENTED;
    /* the length too: an index another thread writes between the check and
     * the kernel (a data race NumPy would answer with IndexError or not)
     * reads element 0 rather than outside the table */
    GpScalar len = {.i = PyArray_SIZE(x)};
    GpNode *in[3] = {gather_table(x, (GpDType)xt, own), NULL, NULL};
    if (in[0]) {
        in[1] = xnd == 1 ? gp_node_for_array(k) : element_offsets(x, k);
        in[2] = gp_node_const(GP_INT64, len);
    }
    int64_t shape[GP_MAXDIMS];
    for (int d = 0; d < nd; d++)
        shape[d] = PyArray_DIM(k, d);
    for (int d = 1; d < xnd; d++)
        shape[nd + d - 1] = PyArray_DIM(x, d);
    nd += xnd - 1;
    GpNode *r = in[0] && in[1] && in[2] ? gp_record_map(GP_OP_GATHER, (GpDType)xt, 3, in, nd, shape) : NULL;
    for (int i = 0; i < 3; i++)
        gp_node_release(in[i]);
    if (!r) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    keep_index_check(k);
    PyObject *res = gp_node_result(r);
    gp_record_done();
    return res;
}

PyObject *gp_capture_gather(PyArrayObject *x, PyObject *key)
{
    GpExplainScope scope; /* (explain: the gather is the user's line's) */
    gp_explain_enter(&scope);
    PyObject *res = capture_gather(x, key);
    gp_explain_leave(&scope, NULL, "__getitem__");
    return res;
}
