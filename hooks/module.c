/* hooks/module.c -- the grumpy._grumpy extension module: initialisation
 * and configuration (GRUMPY_* variables), the bridge between arrays and
 * nodes (buffers, pending nodes, results wrapped as grumpy arrays),
 * counters, the module's functions, and the wrapper type of NumPy's
 * creation functions.  The NEP 49 allocator is allocator.c; NumPy's
 * evaluator, replays and the shadow check are evaluate.c.
 */
#define GP_IMPORT_ARRAY_HERE
#include "capture.h"
#include "hooks.h"

#include <sched.h>

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
    /* long long is int64 too, but a distinct type whose scalars are
     * np.longlong: its arrays are NumPy's, so results keep 'q' */
    case NPY_LONGLONG: return sizeof(long) == 8 ? -1 : GP_INT64;
    case NPY_UBYTE: return GP_UINT8;
    case NPY_USHORT: return GP_UINT16;
    case NPY_UINT: return GP_UINT32;
    case NPY_ULONG: return sizeof(long) == 8 ? GP_UINT64 : GP_UINT32;
    case NPY_ULONGLONG: return sizeof(long) == 8 ? -1 : GP_UINT64;
    case NPY_FLOAT: return GP_FLOAT32;
    case NPY_DOUBLE: return GP_FLOAT64;
    default: return -1;
    }
}

PyArray_Descr *gp_descr_from_dtype(GpDType t)
{
    static const int typenum[GP_NDTYPES] = {NPY_BOOL,   NPY_INT8,   NPY_INT16,  NPY_INT32,   NPY_INT64,  NPY_UINT8,
                                            NPY_UINT16, NPY_UINT32, NPY_UINT64, NPY_FLOAT32, NPY_FLOAT64};
    return PyArray_DescrFromType(typenum[t]);
}

/* ---- buffers and nodes of arrays --------------------------------------- */

/* 0 after a materialization that ended with st, or -1 with an exception:
 * its failure, or a deferred warning turned error. */
int gp_raise_status(GpStatus st)
{
    if (st != GP_OK) {
        if (!PyErr_Occurred())
            PyErr_Format(st == GP_ENOMEM ? PyExc_MemoryError : PyExc_RuntimeError,
                         "grumpy: could not compute an array: %s", gp_last_error());
        return -1;
    }
    return gp_raise_deferred();
}

int gp_materialize_or_raise(GpNode *n) { return gp_raise_status(gp_node_materialize(n)); }

int gp_buffer_compute_or_raise(GpBuffer *b)
{
    /* read without the lock (atomic: the resolver thread may compute it
     * meanwhile); gp_buffer_materialize rechecks under the lock */
    int pending = __atomic_load_n(&b->producer, __ATOMIC_ACQUIRE) != NULL ||
                  __atomic_load_n(&b->where, __ATOMIC_ACQUIRE) == GP_ON_DEVICE;
    return gp_raise_status(pending ? gp_buffer_materialize(b) : GP_OK);
}

int gp_buffer_compute_writes_or_raise(GpBuffer *b)
{
    if (!__atomic_load_n(&b->producer, __ATOMIC_ACQUIRE))
        return 0;
    gp_lock();
    GpStatus st = gp_buffer_compute_locked(b); /* rechecked under the lock */
    gp_unlock();
    return gp_raise_status(st);
}

int gp_array_on_device(PyArrayObject *arr)
{
    char *data = PyArray_DATA(arr);
    GpBuffer *b = data && PyArray_NBYTES(arr) != 0 ? gp_buffer_lookup(data) : NULL;
    return b && __atomic_load_n(&b->where, __ATOMIC_ACQUIRE) != GP_ON_HOST;
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
        if (shape[d] != n->shape[d] ||
            (shape[d] > 1 && PyArray_STRIDE(arr, d) != (n->out_view ? n->out_strides[d] : own[d])))
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
    if (!b->producer || b->owner != b->producer || b->producer->completing) {
        gp_unlock();
        return -1;
    }
    GpNode *old = b->owner;
    int perm[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        perm[d] = old->has_perm ? old->perm[d] : d;
    gp_node_set_perm(n, perm); /* the memory keeps its layout */
    gp_node_drop_output(old);  /* old continues as an intermediate of its readers */
    gp_node_set_output(n, b);
    gp_node_incref(n);
    b->owner = n;
    gp_node_decref(old);
    gp_unlock();
    if (n->weight > gp_hooks.max_fuse && gp_materialize_or_raise(n) < 0)
        return -2;
    return 0;
}

static GpNode *node_for_array(PyArrayObject *arr, int fold_large);

GpNode *gp_node_for_array(PyArrayObject *arr) { return node_for_array(arr, 1); }

GpNode *gp_node_for_library_operand(PyArrayObject *arr) { return node_for_array(arr, 0); }

/* fold_large: a view of a pending result is folded into a copy of its
 * producer's subgraph whatever its size (what a map wants: it fuses);
 * otherwise (an operand of a library call, which reads memory) only a view
 * of under half the producer's elements is -- computing a larger one
 * separately would compute most of the producer twice, once for the view
 * and once for the producer's own array (gemver's A.T @ y). */
static GpNode *node_for_array(PyArrayObject *arr, int fold_large)
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
        if (p && p->dtype == (GpDType)t && !p->out_view &&
            (fold_large || 2 * gp_shape_size(nd, shape) < gp_shape_size(p->nd, p->shape))) {
            GpNode *v = gp_pending_view_locked(p, data - b->data, nd, shape, strides);
            if (v) {
                gp_unlock();
                return v;
            }
        }
        /* the producer computed; the contents may stay on a device (a
         * leaf read by the GPU's kernels needs no host copy) */
        GpStatus st = gp_buffer_compute_locked(b);
        gp_unlock();
        if (st != GP_OK)
            return NULL;
    }
    if (b)
        return gp_node_leaf((GpDType)t, nd, shape, strides, data, b);
    /* memory grumpy does not manage: copy it when small, so later writes to
     * it cannot change what pending nodes read */
    npy_intp nbytes = PyArray_NBYTES(arr);
    if (nbytes > GP_FOREIGN_COPY_MAX_BYTES && nbytes > gp_hooks.min_bytes)
        return NULL;
    GpBuffer *copy = gp_buffer_copy_of(arr);
    if (!copy)
        return NULL;
    gp_contiguous_strides(nd, shape, gp_dtype_size((GpDType)t), strides);
    GpNode *n = gp_node_leaf((GpDType)t, nd, shape, strides, copy->data, copy);
    gp_lock(); /* the last reference when n is NULL (gp_buffer_decref) */
    gp_buffer_decref(copy);
    gp_unlock();
    return n;
}

GpBuffer *gp_buffer_copy_of(PyArrayObject *arr)
{
    GpBuffer *copy = gp_buffer_alloc_uninit((size_t)PyArray_NBYTES(arr));
    if (!copy)
        return NULL;
    PyArray_Descr *descr = PyArray_DESCR(arr);
    Py_INCREF(descr);
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, descr, PyArray_NDIM(arr), PyArray_DIMS(arr), NULL, copy->data,
                                          NPY_ARRAY_WRITEABLE, NULL);
    int ok = view && PyArray_CopyInto((PyArrayObject *)view, arr) == 0;
    Py_XDECREF(view);
    if (!ok) {
        PyErr_Clear();
        gp_lock(); /* the last reference */
        gp_buffer_decref(copy);
        gp_unlock();
        return NULL;
    }
    return copy;
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
    gp_allocating_pending = 1;
    PyObject *arr =
        PyArray_NewFromDescr(&GpArray_Type, descr, n->nd, dims, n->has_perm ? strides : NULL, NULL, 0, NULL);
    gp_allocating_pending = 0;
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
            PyObject *src =
                PyArray_NewFromDescr(&PyArray_Type, d2, n->nd, dims, (npy_intp *)n->strides, n->data, 0, NULL);
            if (!src || PyArray_CopyInto((PyArrayObject *)arr, (PyArrayObject *)src) < 0) {
                Py_XDECREF(src);
                Py_DECREF(arr);
                return NULL;
            }
            Py_DECREF(src);
        }
        return arr;
    }
    gp_lock();
    gp_node_set_output(n, b);
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

/* A view of type's class of arr's memory (arr's dtype, shape, strides and
 * flags) with base as its .base (a new reference taken): new reference, or
 * NULL with an exception set. */
static PyObject *view_with_base(PyArrayObject *arr, PyTypeObject *type, PyObject *base)
{
    PyArray_Descr *descr = PyArray_DESCR(arr);
    Py_INCREF(descr);
    PyObject *v = PyArray_NewFromDescr(type, descr, PyArray_NDIM(arr), PyArray_DIMS(arr), PyArray_STRIDES(arr),
                                       PyArray_DATA(arr), PyArray_FLAGS(arr) & ~NPY_ARRAY_OWNDATA, (PyObject *)arr);
    if (!v)
        return NULL;
    Py_INCREF(base);
    if (PyArray_SetBaseObject((PyArrayObject *)v, base) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* A view of arr's class and memory whose .base is the one NumPy would give
 * it (gp_collapsed_base), or arr itself where that is already its base: a
 * plain view NumPy made of the plain view of a grumpy array that grumpy
 * passed it (np.einsum("ii->i", a) left to NumPy) has that plain view as
 * its base, which NumPy's own run would have collapsed to a's owner.  New
 * reference, or NULL with an exception set. */
static PyObject *plain_with_numpys_base(PyArrayObject *arr)
{
    PyObject *base = PyArray_BASE(arr), *owner;
    /* not an array that owns its memory (the new view would not keep it),
     * and not one NumPy handed back that the caller holds too (identity) */
    if (!base || !PyArray_Check(base) || Py_REFCNT(arr) != 1 ||
        (PyArray_FLAGS(arr) & (NPY_ARRAY_OWNDATA | NPY_ARRAY_WRITEBACKIFCOPY)) ||
        (owner = gp_collapsed_base(arr)) == base) {
        Py_INCREF(arr);
        return (PyObject *)arr;
    }
    return view_with_base(arr, Py_TYPE(arr), owner);
}

PyObject *gp_as_grumpy(PyObject *obj)
{
    if (!PyArray_Check(obj) || Py_TYPE(obj) == &GpArray_Type || !gp_capturing()) {
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
        gp_dtype_from_descr(PyArray_DESCR(arr)) < 0)
        return plain_with_numpys_base(arr);
    PyArrayObject_fields *fa = (PyArrayObject_fields *)obj;
    if (Py_REFCNT(obj) == 1 && (fa->flags & NPY_ARRAY_OWNDATA) && fa->mem_handler &&
        (fa->base == NULL || !PyArray_Check(fa->base))) {
        /* sole owner: the grumpy array takes over the memory (no view; .base
         * is None, or the object NumPy set beside its own memory: the
         * __array_interface__ of a NULL pointer's) */
        PyArray_Descr *descr = PyArray_DESCR(arr);
        Py_INCREF(descr);
        PyObject *g =
            PyArray_NewFromDescr(&GpArray_Type, descr, PyArray_NDIM(arr), PyArray_DIMS(arr), PyArray_STRIDES(arr),
                                 PyArray_DATA(arr), PyArray_FLAGS(arr) & ~NPY_ARRAY_OWNDATA, NULL);
        if (!g)
            return NULL;
        PyArrayObject_fields *fg = (PyArrayObject_fields *)g;
        Py_XSETREF(fg->mem_handler, fa->mem_handler); /* moved: arr frees neither now */
        fa->mem_handler = NULL;
        fg->flags |= NPY_ARRAY_OWNDATA;
        fa->flags &= ~NPY_ARRAY_OWNDATA;
        if (fa->base) {
            Py_INCREF(fa->base);
            if (PyArray_SetBaseObject((PyArrayObject *)g, fa->base) < 0) {
                Py_DECREF(g); /* frees the memory: arr must not */
                return NULL;
            }
        }
        return g;
    }
    /* a view: its base is the one NumPy would give arr (gp_collapsed_base),
     * not arr: np.frombuffer(b)'s base is b, np.einsum("ij", a)'s is a's */
    PyObject *owner = gp_collapsed_base(arr);
    if (!owner || (PyArray_FLAGS(arr) & (NPY_ARRAY_OWNDATA | NPY_ARRAY_WRITEBACKIFCOPY)))
        return PyArray_View(arr, NULL, &GpArray_Type); /* arr keeps its memory alive */
    return view_with_base(arr, &GpArray_Type, owner);
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
    int named =
        PyTuple_Check(res) && !PyTuple_CheckExact(res) && PyObject_HasAttrString((PyObject *)Py_TYPE(res), "_make");
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
    /* the files the code generator's library will be loaded from; their
     * digest, part of every key, is taken when first needed (objload.c) */
    gp_jit_note_files();
    /* the end of Py_Finalize waits for a load of that library under way
     * (jit.h, gp_jit_wait_for_load: maybe on the fault resolver's thread):
     * exit()'s handlers would otherwise run the destructors of LLVM's
     * globals while its constructors still run */
    static int waiting;
    if (!waiting++ && Py_AtExit(gp_jit_wait_for_load) < 0)
        waiting = 0;
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

/* The adaptive rule of sites.c (GRUMPY_ADAPTIVE) for results below 6 MiB
 * (tools/overhead.py: a lone map over computed operands was 1.65x NumPy's
 * time at 1 MiB, 1.28x at 2 MiB, 0.93x at 4 MiB in an earlier session;
 * 2026-11-26: 1.27-1.32x at 4 MiB, 0.83x at 6 MiB, 0.71x at 8 MiB); off
 * where capture at every size tests the kernels.  After min_bytes is set. */
static void set_adaptive(int on)
{
    gp_lock();
    gp_config.lone_max_bytes = on && gp_hooks.min_bytes >= (int64_t)GP_GUARD_MIN_BYTES ? (int64_t)6 << 20 : 0;
    gp_unlock();
    gp_hooks.adaptive = on; /* the warnings rule (gp_site_warns) at every size */
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
    if (gp_check_configure(getenv("GRUMPY_CHECK")) < 0)
        return NULL;
    set_adaptive((int)env_int("GRUMPY_ADAPTIVE", 1));
    gp_hooks.max_fuse = env_int("GRUMPY_MAX_FUSE", 64);
    const char *strict = getenv("GRUMPY_STRICT");
    gp_hooks.strict = strict && !strcmp(strict, "warn") ? GP_STRICT_WARN : (int)env_int("GRUMPY_STRICT", 0);
    gp_config.force_jit_failure = (int)env_int("GRUMPY_DEBUG_JIT_FAIL", 0);
    gp_config.debug_corrupt = (int)env_int("GRUMPY_DEBUG_CORRUPT", 0);
    gp_config.debug_eval_loops = (int)env_int("GRUMPY_DEBUG_EVAL_LOOPS", 0);
    gp_fail_at = env_int("GRUMPY_DEBUG_FAIL", 0);
    gp_config.dump_ir = (int)env_int("GRUMPY_DUMP_IR", 0);
    gp_config.debug_plan = (int)env_int("GRUMPY_DEBUG_PLAN", 0);
    const char *ptx_dir = getenv("GRUMPY_PTX_DIR");
    gp_config.dump_ptx = ptx_dir && *ptx_dir ? ptx_dir : NULL;
    gp_pool_set_threads((int)env_int("GRUMPY_THREADS", 0));
    gp_blas_set_threads(gp_pool_threads());
    if (gp_measure_temporary_refs() < 0)
        return NULL;
    /* a kernel compiles in 20-77 ms at O3 on these machines, about a third less at O2 (jit.c).
     * First runs of tools/programs/ with an empty disk cache (tools/cold_start.py, 2026-11-27): at
     * O3, 1.19x and 1.22x NumPy with the background compile at 40 ms, 1.13x and 1.18x compiling on
     * the calling thread (2 CPUs), 1.20x vs 1.14x on 16; at O2, 1.15x vs 1.25x (2 CPUs), 1.21x vs
     * 1.19x (16), and one-shot programs that NumPy evaluates meanwhile had slow outliers (fresh huge
     * pages for the evaluator's temporaries: random_walk 0.3 s, at times 0.8-1.6 s).  So off by
     * default (opt-in).  Off at every size (testing). */
    gp_config.first_numpy_ns =
        gp_hooks.min_bytes >= (int64_t)GP_GUARD_MIN_BYTES ? env_int("GRUMPY_FIRST_LAUNCH_MS", 0) * 1000000 : 0;
    const char *be = getenv("GRUMPY_BACKEND");
    if (be && *be && strcmp(be, "cpu") && strcmp(be, "numpy") && strcmp(be, "gpu")) {
        PyErr_Format(PyExc_ValueError,
                     "GRUMPY_BACKEND=%s: expected cpu (LLVM kernels, the default), gpu (CUDA) or numpy", be);
        return NULL;
    }
    const char *device = getenv("GRUMPY_DEVICE");
    if (device && *device && strcmp(device, "auto") && strcmp(device, "cpu") && strcmp(device, "gpu")) {
        PyErr_Format(PyExc_ValueError,
                     "GRUMPY_DEVICE=%s: expected auto (the default: an NVIDIA GPU where one is present), cpu or gpu",
                     device);
        return NULL;
    }
    gp_config.gpu_min_bytes = env_int("GRUMPY_GPU_MIN_BYTES", (int64_t)8 << 20);
    gp_config.gpu_warmup_ns = env_int("GRUMPY_GPU_WARMUP_MS", 200) * 1000000;
    /* GRUMPY_BACKEND, when set, names the back end; else GRUMPY_DEVICE:
     * gpu (every kernel on the GPU; no driver is an error), cpu, or auto
     * (the GPU back end with per-kernel placement where a driver loads and
     * a device answers, else the CPU without any driver call) */
    int emulate = (int)env_int("GRUMPY_GPU_EMULATE", 0);
    const GpBackend *chosen = &gp_backend_cpu;
    if (be && *be) {
        chosen = !strcmp(be, "cpu") ? &gp_backend_cpu : !strcmp(be, "numpy") ? &gp_backend_numpy : &gp_backend_gpu;
        device = chosen == &gp_backend_gpu ? "gpu" : "cpu";
    } else if (!device || !*device) {
        device = "auto";
    }
    if (!strcmp(device, "gpu") || (!strcmp(device, "auto") && (emulate || gp_backend_gpu_driver_loads()))) {
        int automatic = !strcmp(device, "auto");
        gp_lock();
        int rc = gp_backend_gpu_open(emulate, automatic);
        gp_unlock();
        if (rc == 0) {
            chosen = &gp_backend_gpu;
        } else if (!automatic) {
            PyErr_Format(PyExc_RuntimeError, "%s=gpu: %s", be && *be ? "GRUMPY_BACKEND" : "GRUMPY_DEVICE",
                         gp_last_error());
            return NULL;
        }
    }
    gp_backend_set(chosen);
    gp_config.host_code_only = chosen != &gp_backend_gpu && !gp_config.dump_ptx;
    if (configure_cache() < 0)
        return NULL;
    if (gp_guard_install() < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    gp_allocator_init();
    PyObject *cap = PyCapsule_New(&gp_mem_handler, "mem_handler", NULL);
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

static PyObject *mod_after_fork_child(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gp_guard_after_fork_child();
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

/* d[name] = count (a Python int).  0, or -1 with an exception. */
static int set_count(PyObject *d, const char *name, long long count)
{
    PyObject *v = PyLong_FromLongLong(count);
    int rc = v ? PyDict_SetItemString(d, name, v) : -1;
    Py_XDECREF(v);
    return rc;
}
static PyObject *mod_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    GpStats s;
    gp_lock();
    gp_jit_collect(); /* the background compiles that finished count */
    s = gp_stats;
    gp_unlock();
    PyObject *fb = PyDict_Copy(gp_hooks.fallbacks);
    if (!fb)
        return NULL;
    PyObject *sites = gp_sites_report();
    if (!sites) {
        Py_DECREF(fb);
        return NULL;
    }
    PyObject *d = Py_BuildValue(
        "{sssLsLsLsLsNsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsNsdsdsLsisisLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLsLs"
        "Ls"
        "ds"
        "ds"
        "Ls"
        "Ls"
        "L"
        "}",
        "backend", gp_backend()->name, "ops_captured", (long long)gp_hooks.captured, "ops_eager_small",
        (long long)gp_hooks.eager_small, "ops_eager_site", (long long)gp_hooks.eager_site, "ops_plain_broadcast",
        (long long)gp_hooks.plain_broadcast, "adaptive_sites", sites, "nodes_recorded", (long long)s.nodes_recorded,
        "kernels_compiled", (long long)s.kernels_compiled, "kernels_launched", (long long)s.kernels_launched,
        "cache_hits", (long long)s.cache_hits, "disk_cache_hits", (long long)s.disk_cache_hits, "disk_objects_loaded",
        (long long)s.disk_objects_loaded, "ptx_disk_hits", (long long)s.ptx_disk_hits, "jit_failures",
        (long long)s.jit_failures, "plan_failures", (long long)s.plan_failures, "first_launches_numpy",
        (long long)s.first_numpy, "compiles_in_background", (long long)s.compiles_in_background, "nodes_fused",
        (long long)s.nodes_fused, "extra_outputs", (long long)s.extra_outputs, "guard_faults",
        (long long)s.guard_faults, "guard_faults_inline", (long long)s.guard_faults_inline, "guard_scratch_pages",
        (long long)s.guard_scratch_pages, "fallbacks", fb, "compile_seconds", (double)s.compile_ns * 1e-9,
        "run_seconds", (double)s.run_ns * 1e-9, "bytes_moved", (long long)s.bytes_moved, "threads", gp_pool_threads(),
        "pending", (int)gp_dag_pending_count(), "live_nodes", (long long)s.live_nodes, "live_buffers",
        (long long)s.live_buffers, "live_buffer_bytes", (long long)s.live_buffer_bytes, "gemm_calls",
        (long long)s.gemm_calls, "gemv_calls", (long long)s.gemv_calls, "dot_calls", (long long)s.dot_calls,
        "blas_operand_copies", (long long)s.blas_operand_copies, "fpe_replays", (long long)s.fpe_replays,
        "fpe_unreported", (long long)s.fpe_unreported, "checks", (long long)s.checks, "check_mismatches",
        (long long)s.check_mismatches, "check_skipped", (long long)s.check_skipped, "check_unspecified",
        (long long)s.check_unspecified, "fail_points", (long long)s.fail_points, "protects", (long long)s.protects,
        "maps", (long long)s.maps, "maps_reused", (long long)s.maps_reused, "serial_launches",
        (long long)s.serial_launches, "kernel_splits", (long long)s.kernel_splits, "views_materialized",
        (long long)s.views_materialized, "host_to_device", (long long)s.host_to_device, "device_to_host",
        (long long)s.device_to_host, "gpu_kernels_launched", (long long)s.gpu_kernels_launched, "gpu_kernels_queued",
        (long long)s.gpu_kernels_queued, "gpu_gemm_calls", (long long)s.gpu_gemm_calls, "bytes_h2d",
        (long long)s.bytes_h2d, "bytes_d2h", (long long)s.bytes_d2h, "gpu_kernel_seconds",
        (double)s.gpu_kernel_ns * 1e-9, "gpu_copy_seconds", (double)s.gpu_copy_ns * 1e-9, "loop_evaluations",
        (long long)s.loop_evaluations, "lock_reentries", (long long)s.lock_reentries, "lock_unheld",
        (long long)s.lock_unheld);
    if (d &&
        (set_count(d, "fpe_to_numpy", s.fpe_to_numpy) < 0 || set_count(d, "stage_copy_bytes", s.stage_copy_bytes) < 0 ||
         set_count(d, "ops_eager_direct", gp_hooks.eager_direct) < 0 ||
         set_count(d, "sorted_searches", gp_hooks.sorted_searches) < 0 ||
         set_count(d, "index_checks_reused", gp_hooks.index_checks_reused) < 0 ||
         set_count(d, "plain_bytes_cached", (long long)gp_allocator_cached_bytes()) < 0 ||
         PyDict_SetItemString(d, "quiet_compares", gp_config.quiet_compares ? Py_True : Py_False) < 0))
        Py_CLEAR(d);
    if (d && gp_fallbacks_into(d) < 0)
        Py_CLEAR(d);
    return d;
}

static PyObject *mod_reset_stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    gp_lock();
    int64_t ln = gp_stats.live_nodes, lb = gp_stats.live_buffers, lbb = gp_stats.live_buffer_bytes;
    /* for the process: a bug whenever it happened */
    int64_t re = gp_stats.lock_reentries, unheld = gp_stats.lock_unheld;
    memset(&gp_stats, 0, sizeof gp_stats);
    gp_stats.lock_reentries = re;
    gp_stats.lock_unheld = unheld;
    gp_stats.live_nodes = ln;
    gp_stats.live_buffers = lb;
    gp_stats.live_buffer_bytes = lbb;
    gp_unlock();
    gp_hooks.captured = gp_hooks.eager_small = gp_hooks.eager_direct = gp_hooks.eager_site = gp_hooks.plain_broadcast =
        gp_hooks.sorted_searches = gp_hooks.index_checks_reused = 0;
    gp_sites_reset();
    gp_fallbacks_reset();
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

int gp_array_is_pending(PyArrayObject *arr)
{
    GpBuffer *b = PyArray_NBYTES(arr) != 0 ? gp_buffer_lookup(PyArray_DATA(arr)) : NULL;
    return b && b->producer;
}

static PyObject *mod_is_pending(PyObject *self, PyObject *obj)
{
    (void)self;
    return PyBool_FromLong(PyArray_Check(obj) && gp_array_is_pending((PyArrayObject *)obj));
}

static PyObject *mod_flush(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (gp_raise_status(gp_dag_flush()) < 0) /* a warning made an error is raised here */
        return NULL;
    Py_RETURN_NONE;
}

/* Entering or leaving a warnings.catch_warnings block (grumpy/__init__.py):
 * everything pending is computed, so its warnings fall on the side of the
 * block where NumPy gives them; not inside the shadow check's own block. */
static PyObject *mod_warnings_barrier(PyObject *self, PyObject *unused)
{
    if (gp_check_running())
        Py_RETURN_NONE;
    if (gp_dag_pending_count() == 0) /* the warnings a fault's kernel left (gp_fpe_queue) */
        return gp_raise_deferred() < 0 ? NULL : Py_NewRef(Py_None);
    return mod_flush(self, unused);
}

_Thread_local int gp_paused;

static PyObject *mod_pause(PyObject *self, PyObject *arg)
{
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "pause(n): n >= 0");
        return NULL;
    }
    int previous = gp_paused;
    gp_paused = (int)n;
    return PyLong_FromLong(previous);
}

static PyObject *mod_set_adaptive(PyObject *self, PyObject *arg)
{
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    set_adaptive(on);
    Py_RETURN_NONE;
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
    PyObject_HEAD PyObject *fn; /* owned: the wrapped NumPy callable */
    vectorcallfunc vectorcall;
    int keeps_given;  /* a result that is one of the call's arguments (out=) is returned as is */
    int dtype_second; /* np.array, asarray, asanyarray, ascontiguousarray, asfortranarray: (obj, dtype, ...) */
} Wrapper;

/* Whether a call passes subok=True: it asks for the class NumPy gives
 * (np.ma.MaskedArray builds its data with np.array(data, subok=True) and
 * names its base class, and its repr, after that result's type), so the
 * result keeps NumPy's class. */
static int asks_subok(PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "subok") == 0) {
            int t = PyObject_IsTrue(args[n + i]); /* as NumPy reads it; its error is NumPy's to raise */
            if (t < 0)
                PyErr_Clear();
            return t == 1;
        }
    return 0;
}

/* Whether a creation call (obj, dtype, ...) asks for long long ('q' or
 * 'Q') where long is 64-bit: its dtype argument (the second positional or
 * dtype=) a dtype, a type or one of the strings naming it (nothing else is
 * converted: NumPy converts the argument itself, with its warnings). */
static int asks_long_long(PyObject *const *args, Py_ssize_t n, PyObject *kwnames)
{
    PyObject *dt = n >= 2 ? args[1] : NULL;
    for (Py_ssize_t i = 0; !dt && kwnames && i < PyTuple_GET_SIZE(kwnames); i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "dtype") == 0)
            dt = args[n + i];
    if (sizeof(long) != 8 || !dt)
        return 0;
    if (PyUnicode_Check(dt)) {
        static const char *const names[] = {"q", "Q", "longlong", "ulonglong", NULL};
        for (int i = 0; names[i]; i++)
            if (PyUnicode_CompareWithASCIIString(dt, names[i]) == 0)
                return 1;
        return 0;
    }
    if (PyArray_DescrCheck(dt))
        return ((PyArray_Descr *)dt)->type_num == NPY_LONGLONG || ((PyArray_Descr *)dt)->type_num == NPY_ULONGLONG;
    return dt == (PyObject *)&PyLongLongArrType_Type || dt == (PyObject *)&PyULongLongArrType_Type;
}

static PyObject *wrapper_call(Wrapper *w, PyObject *const *args, size_t nargsf, PyObject *kwnames);

static PyObject *wrapper_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Wrapper *w = (Wrapper *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyArray_Check(args[i]) && gp_ensure_computed((PyArrayObject *)args[i]) < 0)
            return NULL;
    /* np.asarray(x, dtype=np.longlong) of a grumpy int64 x: NumPy gives a
     * plain ndarray a 'q' view of it and a subclass its own 'l'
     * (PyArray_FromArray), so the call gets a plain view of x */
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (w->dtype_second && n >= 1 && Py_TYPE(args[0]) == &GpArray_Type && n + nkw <= 32 &&
        asks_long_long(args, n, kwnames)) {
        PyObject *a[32], *plain = PyArray_View((PyArrayObject *)args[0], NULL, &PyArray_Type);
        if (!plain)
            return NULL;
        memcpy(a, args, (size_t)(n + nkw) * sizeof *a);
        a[0] = plain;
        PyObject *res = PyObject_Vectorcall(w->fn, a, nargsf & ~PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
        Py_DECREF(plain);
        if (res && Py_TYPE(res) == &PyArray_Type) /* its base x's, not the plain view's */
            Py_SETREF(res, plain_with_numpys_base((PyArrayObject *)res));
        return res;
    }
    return wrapper_call(w, args, nargsf, kwnames);
}

static PyObject *wrapper_call(Wrapper *w, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    /* a draw into out=: its pending readers computed first, with their
     * warnings, not inside the fault the write would take; a grumpy array
     * is passed as a plain view of itself (Generator.permuted requires
     * `type(out) is np.ndarray`), and the result that is that view is out */
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, out_at = -1;
    for (Py_ssize_t i = 0; w->keeps_given && i < nkw; i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), "out") == 0) {
            if (gp_prepare_for_write(args[n + i]) < 0)
                return NULL;
            out_at = n + i;
        }
    PyObject *res, *given = out_at >= 0 ? args[out_at] : NULL, *plain = NULL;
    if (given && Py_TYPE(given) == &GpArray_Type && n + nkw <= 32) {
        PyObject *a[32];
        if (!(plain = PyArray_View((PyArrayObject *)given, NULL, &PyArray_Type)))
            return NULL;
        memcpy(a, args, (size_t)(n + nkw) * sizeof *a);
        a[out_at] = plain;
        res = PyObject_Vectorcall(w->fn, a, nargsf & ~PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
        if (res == plain) {
            Py_DECREF(res);
            res = Py_NewRef(given);
        }
        Py_DECREF(plain);
    } else {
        res = PyObject_Vectorcall(w->fn, args, nargsf, kwnames);
    }
    if (res && w->keeps_given)
        for (Py_ssize_t i = 0; i < n + nkw; i++)
            if (res == args[i])
                return res; /* rng.random(out=y) is y */
    /* only the conversions answer a plain ndarray with itself: np.frombuffer(x)
     * of one is a new array (it was x itself under grumpy) */
    if (n >= 1 && w->dtype_second) {
        res = gp_self_if_plain_view(args[0], res);
        /* np.array(obj) of an object whose __array__ gave a grumpy array:
         * NumPy's plain view of that array is that array, as NumPy's own
         * answer would be the array __array__ gave (one whose __array__
         * gives a plain view of a grumpy array of the same geometry gets
         * that grumpy array too: the two cannot be told apart here) */
        if (res && res != args[0] && Py_TYPE(res) == &PyArray_Type && PyArray_BASE((PyArrayObject *)res))
            res = gp_self_if_plain_view(PyArray_BASE((PyArrayObject *)res), res);
    }
    if (res && asks_subok(args, n, kwnames))
        return res;
    return gp_wrap_result(res);
}

/* Whether base is self or an object self's base chain reaches: NumPy
 * collapses a new view's base chain past views of the view's own class
 * (PyArray_SetBaseObject), so a plain view of a grumpy view of a plain
 * array has that plain array as its base (scipy.sparse's coo.reshape
 * passes its data, a view, through np.array(data, copy=False) and
 * expects the same object back). */
static int base_reaches(PyObject *base, PyObject *self)
{
    PyObject *o = self;
    for (int i = 0; o && i < 64; i++) {
        if (o == base)
            return 1;
        if (!PyArray_Check(o))
            return 0;
        o = PyArray_BASE((PyArrayObject *)o);
    }
    return 0;
}

PyObject *gp_self_if_plain_view(PyObject *self, PyObject *res)
{
    if (!res || Py_TYPE(self) != &GpArray_Type || Py_TYPE(res) != &PyArray_Type ||
        !base_reaches(PyArray_BASE((PyArrayObject *)res), self))
        return res;
    PyArrayObject *r = (PyArrayObject *)res, *x = (PyArrayObject *)self;
    int same = PyArray_DATA(r) == PyArray_DATA(x) && PyArray_NDIM(r) == PyArray_NDIM(x) &&
               PyArray_EquivTypes(PyArray_DESCR(r), PyArray_DESCR(x)) &&
               PyArray_DESCR(r)->type_num == PyArray_DESCR(x)->type_num && /* 'q' is not 'l' */
               PyArray_ISWRITEABLE(r) == PyArray_ISWRITEABLE(x);
    for (int d = 0; same && d < PyArray_NDIM(r); d++)
        same = PyArray_DIM(r, d) == PyArray_DIM(x, d) && PyArray_STRIDE(r, d) == PyArray_STRIDE(x, d);
    if (!same)
        return res;
    Py_INCREF(self); /* before res goes: it may hold self's only reference */
    Py_DECREF(res);
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
     * follows __wrapped__): its own __wrapped__ where it has one (NumPy's
     * dispatchers: np.empty_like.__wrapped__ is the C function, whose
     * __text_signature__ NumPy's test_multiarray reads), else itself */
    if (PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
        PyObject *inner = PyObject_GetAttr(((Wrapper *)self)->fn, name);
        if (inner || !PyErr_ExceptionMatches(PyExc_AttributeError))
            return inner;
        PyErr_Clear();
        Py_INCREF(((Wrapper *)self)->fn);
        return ((Wrapper *)self)->fn;
    }
    static const char *const forwarded[] = {
        "__doc__", "__name__", "__qualname__", "__module__", "__signature__", "__text_signature__", NULL};
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

/* Compared, hashed and pickled as the callable it wraps (a bound method
 * made at each access, rng.normal == rng.normal, is its own key; pickle
 * and multiprocessing send it as NumPy's own: np.zeros by name,
 * rng.normal as getattr(rng, "normal")). */
static PyObject *wrapper_richcompare(PyObject *a, PyObject *b, int op)
{
    if (op != Py_EQ && op != Py_NE)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *fb = Py_TYPE(b) == Py_TYPE(a) ? ((Wrapper *)b)->fn : b;
    return PyObject_RichCompare(((Wrapper *)a)->fn, fb, op);
}

static Py_hash_t wrapper_hash(PyObject *self) { return PyObject_Hash(((Wrapper *)self)->fn); }

static PyObject *wrapper_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyObject_CallMethod(((Wrapper *)self)->fn, "__reduce__", NULL);
}

static PyMethodDef wrapper_methods[] = {
    {"__reduce__", wrapper_reduce, METH_NOARGS, "Pickles as the wrapped NumPy callable."},
    {NULL, NULL, 0, NULL},
};

static PyObject *wrapper_descr_get(PyObject *self, PyObject *obj, PyObject *type);

static PyTypeObject Wrapper_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grumpy._grumpy.CreationWrapper",
    .tp_basicsize = sizeof(Wrapper),
    .tp_dealloc = wrapper_dealloc,
    .tp_vectorcall_offset = offsetof(Wrapper, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = wrapper_getattr,
    .tp_repr = wrapper_repr,
    .tp_richcompare = wrapper_richcompare,
    .tp_hash = wrapper_hash,
    .tp_methods = wrapper_methods,
    .tp_descr_get = wrapper_descr_get,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A NumPy creation function whose array results are grumpy arrays.",
};

static PyObject *wrap_callable(PyObject *fn, int keeps_given)
{
    Wrapper *w = PyObject_New(Wrapper, &Wrapper_Type);
    if (!w)
        return NULL;
    Py_INCREF(fn);
    w->fn = fn;
    w->vectorcall = wrapper_vectorcall;
    w->keeps_given = keeps_given;
    w->dtype_second = 0;
    PyObject *name = PyObject_GetAttrString(fn, "__name__");
    static const char *const with_dtype[] = {"array",          "asarray", "asanyarray", "ascontiguousarray",
                                             "asfortranarray", NULL};
    for (int i = 0; name && PyUnicode_Check(name) && with_dtype[i]; i++)
        w->dtype_second |= PyUnicode_CompareWithASCIIString(name, with_dtype[i]) == 0;
    Py_XDECREF(name);
    PyErr_Clear(); /* (a callable without a name) */
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
    PyObject *w = wrap_callable(bound, ((Wrapper *)self)->keeps_given);
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
    return wrap_callable(fn, 0);
}

/* wrap_methods(cls, names): each of cls's own methods named in names (an
 * iterable of str; absent ones skipped) replaced in cls's dict by a wrapper
 * that returns its array results as grumpy arrays, and an array it was
 * given (out=) as is.  For NumPy's random Generator and RandomState, whose
 * draws are the large arrays a Monte Carlo program computes on: the
 * classes stay NumPy's own (`type(rng) is np.random.Generator`, isinstance,
 * pickles), only their dicts change, which Python's setattr refuses for an
 * extension type (Py_TPFLAGS_IMMUTABLETYPE).  Idempotent.  GIL held.
 * Raises TypeError when cls is not a class with a dict. */
static PyObject *mod_wrap_methods(PyObject *self, PyObject *args)
{
    (void)self;
    PyTypeObject *cls;
    PyObject *names;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &cls, &names))
        return NULL;
    PyObject *dict = cls->tp_dict;
    if (!dict || !PyDict_Check(dict)) {
        PyErr_SetString(PyExc_TypeError, "wrap_methods: a class with its own dict");
        return NULL;
    }
    PyObject *it = PyObject_GetIter(names), *name;
    if (!it)
        return NULL;
    int changed = 0;
    while ((name = PyIter_Next(it))) {
        PyObject *fn = PyUnicode_Check(name) ? PyDict_GetItemWithError(dict, name) : NULL;
        PyObject *w = fn && Py_TYPE(fn) != &Wrapper_Type && PyCallable_Check(fn) ? wrap_callable(fn, 1) : NULL;
        int bad = w ? PyDict_SetItem(dict, name, w) < 0 : PyErr_Occurred() != NULL;
        changed |= w != NULL;
        Py_XDECREF(w);
        Py_DECREF(name);
        if (bad)
            break;
    }
    Py_DECREF(it);
    if (changed)
        PyType_Modified(cls); /* the attribute cache holds the old entries */
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
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
    {"enable", mod_enable, METH_NOARGS,
     "enable()\n--\n\nTurns capture on for this process: installs the page guard and the NEP 49 memory handler, reads "
     "GRUMPY_* variables."},
    {"after_fork_child", mod_after_fork_child, METH_NOARGS,
     "Starts a forked child's fault resolver thread when guarded buffers came over (os.register_at_fork)."},
    {"reinstall_guard", mod_reinstall_guard, METH_NOARGS,
     "Puts the fault handler back on top (after faulthandler.enable())."},
    {"uninstall_guard", mod_uninstall_guard, METH_NOARGS,
     "Takes the fault handler off the top of the chain (around faulthandler calls)."},
    {"stats", mod_stats, METH_NOARGS, "stats() -> dict of counters (see grumpy.stats)."},
    {"reset_stats", mod_reset_stats, METH_NOARGS, "Zeroes the counters."},
    {"as_grumpy", mod_as_grumpy, METH_O, "as_grumpy(a) -> a as a grumpy.ndarray (no copy)."},
    {"materialize", mod_materialize, METH_O, "materialize(a) -> a, computed."},
    {"is_pending", mod_is_pending, METH_O, "is_pending(a) -> True if a's memory is not computed yet."},
    {"flush", mod_flush, METH_NOARGS, "Computes every pending array."},
    {"warnings_barrier", mod_warnings_barrier, METH_NOARGS,
     "Computes every pending array (at a warnings.catch_warnings boundary)."},
    {"set_threads", mod_set_threads, METH_O, "set_threads(n): kernel threads (n <= 0: all CPUs)."},
    {"pause", mod_pause, METH_O,
     "pause(n) -> previous: this thread's depth of grumpy.disabled() blocks (0: capture on)."},
    {"set_adaptive", mod_set_adaptive, METH_O, "set_adaptive(on): the call-site rule of GRUMPY_ADAPTIVE."},
    {"captured_ops", mod_captured_ops, METH_NOARGS, "Names of the NumPy ufuncs grumpy fuses."},
    {"wrap", mod_wrap, METH_O, "wrap(fn) -> callable returning grumpy arrays."},
    {"wrap_methods", mod_wrap_methods, METH_VARARGS,
     "wrap_methods(cls, names): cls's methods named return grumpy arrays (NumPy's random classes)."},
    {"use_blas", mod_use_blas, METH_VARARGS, "use_blas(path, prefix, suffix): the OpenBLAS for matrix products."},
    {"cpu", mod_cpu, METH_NOARGS, "Host CPU as seen by the JIT."},
    {"cache_info", mod_cache_info, METH_NOARGS,
     "cache_info() -> {'dir': str or None (off), 'files', 'bytes', 'max_bytes'} of the on-disk kernel cache."},
    {"cache_clear", mod_cache_clear, METH_NOARGS,
     "cache_clear() -> number of files removed from the on-disk kernel cache."},
    {"_explain", gp_explain_set, METH_O,
     "_explain(on): python -m grumpy.explain's recording (hooks/explain.c); True also drops what was kept."},
    {"_explain_report", gp_explain_report, METH_NOARGS,
     "_explain_report() -> {'kernels': [dict per kernel and lines], 'lines': {site: (file, line, recorded, "
     "small, adaptive)}, 'calls': {(file:line, call, reason): count}, 'dropped': int} (grumpy/explain.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_grumpy",
    "grumpy's C core: the lazy ndarray subtype, capture hooks, planner, JIT and runtime.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
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
    gp_hooks.np_roll = PyObject_GetAttrString(np, "roll");
    gp_hooks.np_take = PyObject_GetAttrString(np, "take");
    gp_hooks.np_searchsorted = PyObject_GetAttrString(np, "searchsorted");
    if (!(gp_hooks.np_nanmin = PyObject_GetAttrString(np, "nanmin")) ||
        !(gp_hooks.np_nanmax = PyObject_GetAttrString(np, "nanmax")) ||
        !(gp_hooks.np_fmin = PyObject_GetAttrString(np, "fmin")) ||
        !(gp_hooks.np_fmax = PyObject_GetAttrString(np, "fmax")) ||
        !(gp_hooks.np_isnan = PyObject_GetAttrString(np, "isnan")))
        goto fail;
    static const char *const writes_first[6] = {"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis"};
    for (int i = 0; i < 6; i++)
        if (!(gp_hooks.writes_first[i] = PyObject_GetAttrString(np, writes_first[i])))
            goto fail;
    gp_hooks.fallbacks = PyDict_New();
    if (gp_fallbacks_init() < 0 || gp_args_init() < 0)
        goto fail;
    gp_hooks.passthrough = PySet_New(NULL);
    if (!gp_hooks.np_where || !gp_hooks.np_clip || !gp_hooks.np_dot || !gp_hooks.np_vdot || !gp_hooks.np_inner ||
        !gp_hooks.np_outer || !gp_hooks.np_tensordot || !gp_hooks.np_einsum || !gp_hooks.np_copyto ||
        !gp_hooks.np_novalue || !gp_hooks.np_concatenate || !gp_hooks.np_roll || !gp_hooks.np_take ||
        !gp_hooks.np_searchsorted || !gp_hooks.fallbacks || !gp_hooks.passthrough)
        goto fail;
    /* implemented by NumPy with the array's own methods: run them on grumpy
     * arrays (reductions stay lazy, transposes stay views) */
    static const char *const passthrough[] = {
        "sum",          "prod",       "mean",        "min",           "max",           "amin",
        "amax",         "any",        "all",         "around",        "round",         "transpose",
        "shape",        "ndim",       "size",        "cumsum",        "cumprod",       "var",
        "std",          "ptp",        "average",     "count_nonzero", "nansum",        "nanprod",
        "nanmean",      "nanvar",     "nanstd",      "nanmin",        "nanmax",        "nanargmin",
        "nanargmax",    "nancumsum",  "nancumprod",  "reshape",       "ravel",         "swapaxes",
        "moveaxis",     "squeeze",    "expand_dims", "flip",          "fliplr",        "flipud",
        "broadcast_to", "atleast_1d", "atleast_2d",  "atleast_3d",    "shares_memory", "may_share_memory",
        "stack",        "hstack",     "vstack",      "dstack",        "column_stack",  NULL};
    if (add_functions(gp_hooks.passthrough, np, passthrough) < 0)
        goto fail;
    /* reductions and scans: over small computed arrays NumPy's at once
     * (array.c function_protocol) */
    static const char *const fresh[] = {"sum",     "prod",      "mean",      "min",           "max",        "amin",
                                        "amax",    "any",       "all",       "around",        "round",      "cumsum",
                                        "cumprod", "var",       "std",       "ptp",           "average",    "nansum",
                                        "nanprod", "nanmean",   "nanvar",    "count_nonzero", "nanstd",     "nanmin",
                                        "nanmax",  "nanargmin", "nanargmax", "nancumsum",     "nancumprod", NULL};
    if (!(gp_hooks.fresh = PySet_New(NULL)) || add_functions(gp_hooks.fresh, np, fresh) < 0)
        goto fail;
    static const char *const creation[] = {"zeros_like", "ones_like", "empty_like", "full_like",         "copy",
                                           "array",      "asarray",   "asanyarray", "ascontiguousarray", NULL};
    if (!(gp_hooks.creation = PySet_New(NULL)) || add_functions(gp_hooks.creation, np, creation) < 0)
        goto fail;
    static const char *const reads_once[] = {"sum", "prod", "mean", "min", "max", "amin", "amax", "any", "all", NULL};
    if (!(gp_hooks.reads_once = PySet_New(NULL)) || add_functions(gp_hooks.reads_once, np, reads_once) < 0)
        goto fail;
#define INTERN(field, text)                                   \
    if (!(gp_hooks.field = PyUnicode_InternFromString(text))) \
        goto fail;
    INTERN(str_reduce, "reduce");
    INTERN(str_call, "__call__");
    INTERN(str_out, "out");
    INTERN(str_implementation, "_implementation");
    INTERN(str_name, "__name__");
    INTERN(str_copy, "copy");
    INTERN(str_in_cast, " encountered in cast");
    INTERN(str_in_reduce, " encountered in reduce");
    Py_DECREF(np);
    Py_DECREF(um);
    return 0;
fail:
    Py_XDECREF(np);
    Py_XDECREF(um);
    return -1;
}

/* GpHostCallbacks.let_others_run */
static void let_others_run(void)
{
    if (!PyGILState_Check()) {
        sched_yield();
        return;
    }
    PyThreadState *ts = PyEval_SaveThread();
    sched_yield();
    PyEval_RestoreThread(ts);
}

PyMODINIT_FUNC PyInit__grumpy(void);
PyMODINIT_FUNC PyInit__grumpy(void)
{
    import_array();
    import_umath();
    static const GpHostCallbacks host = {
        .eval_with_gil = gp_eval_with_numpy,
        .eval_without_gil = gp_eval_loops,
        .fpe_replay = gp_fpe_replay,
        .fpe_direct = gp_fpe_direct,
        .fpe_later = gp_fpe_later,
        .fpe_queue = gp_fpe_queue,
        .check_begin = gp_check_begin,
        .check_end = gp_check_end,
        .let_others_run = let_others_run,
    };
    gp_core_init(&host);
    if (PyType_Ready(&Wrapper_Type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (init_tables() < 0 || gp_eval_loops_init() < 0 || gp_errstate_init() < 0 || gp_array_type_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
