/* hooks/array.c -- grumpy.ndarray, the lazy ndarray subtype.
 *
 * Same memory layout as numpy.ndarray (tp_basicsize is ndarray's), so
 * PyArray_Check holds and NumPy's own C code works on it unchanged.  The
 * link from an array to its pending DAG node is its buffer (core/guard.c):
 * a pending array's memory is PROT_NONE until computed, so code that reads
 * it without asking still sees computed values.  What this file adds:
 *   __array_ufunc__     ufunc calls and reductions -> DAG nodes (capture.c)
 *   __array_function__  where/clip captured, reductions run on grumpy
 *                       arrays, everything else handed to NumPy
 *   astype, copy        cast / copy nodes
 *   repr, str           NumPy's text ("array(...)", never "ndarray(...)")
 *   buffer protocol     computes before exporting memory
 */
#include "capture.h"
#include "hooks.h"

#include <string.h>

/* Elements NumPy's C code is about to read are computed here first, in
 * the caller's context with the GIL held, rather than by a page fault:
 * the kernel's IEEE warnings are given (the fault handler runs no Python)
 * and any error is raised where the value is asked for. */
#define COMPUTED_OR(self, fail)                              \
    do {                                                     \
        if (gp_ensure_computed((PyArrayObject *)(self)) < 0) \
            return fail;                                     \
    } while (0)

/* ---- fallbacks --------------------------------------------------------- */

/* A plain-ndarray view of a computed grumpy array (new reference), or obj
 * itself for anything else. */
static PyObject *plain(PyObject *obj)
{
    if (PyArray_Check(obj)) {
        if (gp_ensure_computed((PyArrayObject *)obj) < 0)
            return NULL;
        if (PyObject_TypeCheck(obj, &GpArray_Type))
            return PyArray_View((PyArrayObject *)obj, NULL, &PyArray_Type);
    }
    Py_INCREF(obj);
    return obj;
}

/* Recursively replaces grumpy arrays in tuples/lists/dicts by plain views:
 * a container with none inside is passed as itself (a list subclass that
 * np.savetxt writes to, a list the function fills), one with some as a new
 * tuple, list or dict of its items. */
static PyObject *plain_deep(PyObject *obj, int depth)
{
    /* deep enough for np.block's nested lists: a grumpy array left inside
     * would send NumPy's call back here, without end */
    if (depth > 64) {
        Py_INCREF(obj);
        return obj;
    }
    if (PyTuple_Check(obj) || PyList_Check(obj)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
        PyObject *out = PyTuple_Check(obj) ? PyTuple_New(n) : PyList_New(n);
        int changed = 0;
        for (Py_ssize_t i = 0; out && i < n; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(obj, i), *x = plain_deep(item, depth + 1);
            if (!x) {
                Py_CLEAR(out);
                break;
            }
            changed |= x != item;
            if (PyTuple_Check(out))
                PyTuple_SET_ITEM(out, i, x);
            else
                PyList_SET_ITEM(out, i, x);
        }
        if (!out || changed)
            return out;
        Py_DECREF(out);
        Py_INCREF(obj);
        return obj;
    }
    if (PyDict_CheckExact(obj)) {
        PyObject *out = PyDict_New(), *k, *v;
        Py_ssize_t pos = 0;
        while (out && PyDict_Next(obj, &pos, &k, &v)) {
            PyObject *x = plain_deep(v, depth + 1);
            if (!x || PyDict_SetItem(out, k, x) < 0)
                Py_CLEAR(out);
            Py_XDECREF(x);
        }
        return out;
    }
    return plain(obj);
}

int gp_prepare_for_write(PyObject *o)
{
    if (!PyArray_Check(o) || PyArray_NBYTES((PyArrayObject *)o) == 0)
        return 0;
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA((PyArrayObject *)o));
    if (!b)
        return 0;
    return gp_raise_status(gp_buffer_prepare_write(b));
}

static int flush_if_writing(PyObject *kwds)
{
    PyObject *out = kwds ? PyDict_GetItemWithError(kwds, gp_hooks.str_out) : NULL;
    if (!out)
        return PyErr_Occurred() ? -1 : 0;
    if (PyTuple_Check(out)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(out); i++)
            if (gp_prepare_for_write(PyTuple_GET_ITEM(out, i)) < 0)
                return -1;
        return 0;
    }
    return gp_prepare_for_write(out);
}

/* The pending readers of the array a NumPy function will write into
 * (np.copyto(dst, ...), np.put(a, ...): GpHooks.writes_first) computed
 * first, here, with their warnings -- not inside the page fault NumPy's
 * write would take, where no warning can be given.  0 or -1 with an
 * exception. */
static int flush_if_writing_first(PyObject *func, PyObject *args)
{
    if (PyTuple_GET_SIZE(args) < 1 || !PyArray_Check(PyTuple_GET_ITEM(args, 0)))
        return 0;
    for (int i = 0; i < 6; i++)
        if (func == gp_hooks.writes_first[i])
            return gp_prepare_for_write(PyTuple_GET_ITEM(args, 0));
    return 0;
}

/* The caller's out arrays (out= or positional) and the objects NumPy was
 * given for them (plain views of grumpy arrays), pairwise.  Borrowed. */
#define MAX_OUTS 8
typedef struct {
    PyObject *orig[MAX_OUTS], *plain[MAX_OUTS];
    /* bit i: the i-th array of orig's .base chain (orig itself is 0) had
     * NPY_ARRAY_WARN_ON_WRITE before the call (written_as_numpy_warned) */
    uint32_t chain_warned[MAX_OUTS];
    int n;
} OutPairs;

static uint32_t chain_warn_bits(PyObject *o)
{
    uint32_t bits = 0;
    if (!PyArray_Check(o) || !(PyArray_FLAGS((PyArrayObject *)o) & GP_NPY_WARN_ON_WRITE))
        return 0; /* (written_as_numpy_warned looks at nothing more) */
    for (int i = 0; i < 32 && o && PyArray_Check(o); i++, o = PyArray_BASE((PyArrayObject *)o))
        if (PyArray_FLAGS((PyArrayObject *)o) & GP_NPY_WARN_ON_WRITE)
            bits |= 1u << i;
    return bits;
}

static void add_out_pairs(OutPairs *p, PyObject *o, PyObject *po)
{
    if (!o || !po)
        return;
    if ((PyTuple_Check(o) && PyTuple_Check(po)) || (PyList_Check(o) && PyList_Check(po))) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; n == PySequence_Fast_GET_SIZE(po) && i < n; i++)
            add_out_pairs(p, PySequence_Fast_GET_ITEM(o, i), PySequence_Fast_GET_ITEM(po, i));
        return;
    }
    if (o != Py_None && p->n < MAX_OUTS) {
        p->orig[p->n] = o;
        p->chain_warned[p->n] = chain_warn_bits(o);
        p->plain[p->n++] = po;
    }
}

static void add_kw_out_pairs(OutPairs *p, PyObject *kwds, PyObject *pkwds)
{
    PyObject *out = kwds ? PyDict_GetItemWithError(kwds, gp_hooks.str_out) : NULL;
    PyObject *pout = pkwds ? PyDict_GetItemWithError(pkwds, gp_hooks.str_out) : NULL;
    PyErr_Clear();
    add_out_pairs(p, out, pout);
}

/* What the caller gets for x, one of NumPy's results: its own out array
 * where NumPy returned the view it was given (NumPy's `np.add(a, b, out=t)
 * is t`), a plain out it passed as is, other arrays as grumpy arrays.  New
 * reference. */
/* The caller's out array NumPy returned x for, or NULL.  Borrowed. */
static PyObject *out_of(const OutPairs *p, PyObject *x)
{
    for (int k = 0; k < p->n; k++)
        if (x == p->plain[k] || x == p->orig[k])
            return p->orig[k];
    return NULL;
}

static PyObject *restored(const OutPairs *p, PyObject *x)
{
    PyObject *o = out_of(p, x);
    Py_INCREF(o ? o : x);
    return o ? o : gp_wrap_result(x);
}

/* The type NumPy's own run would have given x: grumpy's arrays are its
 * ndarrays. */
static PyTypeObject *numpy_type(PyObject *x) { return Py_TYPE(x) == &GpArray_Type ? &PyArray_Type : Py_TYPE(x); }

/* The array NumPy would have made x's .base: PyArray_SetBaseObject (NumPy's
 * arrayobject.c) collapses a view's base to the first array up the chain
 * that owns its data, has no base, or whose base is of another type.
 * grumpy's chains are longer (a grumpy view's base is the grumpy array it
 * was taken of; np.broadcast_arrays' views of a grumpy array pass through
 * plain ones), so the arrays NumPy's collapse would skip are stepped over. */
PyObject *gp_collapsed_base(PyArrayObject *x)
{
    PyObject *obj = PyArray_BASE(x);
    while (obj && PyArray_Check(obj) && !PyArray_CHKFLAGS((PyArrayObject *)obj, NPY_ARRAY_OWNDATA)) {
        PyObject *up = PyArray_BASE((PyArrayObject *)obj);
        if (!up || numpy_type(up) != numpy_type((PyObject *)x))
            break;
        obj = up;
    }
    return obj;
}

/* NumPy warns once per array written with its NPY_ARRAY_WARN_ON_WRITE
 * flag (a view of np.broadcast_arrays' results: the DeprecationWarning
 * "... writing to an array with overlapping memory") and then clears the
 * flag on it and on every array of its .base chain (array_might_be_written
 * in NumPy's arrayobject.c), so that views taken later do not warn again.
 * The plain view NumPy wrote for a grumpy array has a .base chain of its
 * own, which may or may not pass through the caller's array: when NumPy
 * warned (the plain view's flag is gone), the flag is cleared on the
 * chain NumPy would have given the caller's array (gp_collapsed_base), put
 * back on the grumpy arrays between, which NumPy's chain skips and which
 * then warn when written later, as in NumPy, and cleared on the plain
 * views between. */
static void written_as_numpy_warned(const OutPairs *p)
{
    for (int k = 0; k < p->n; k++) {
        PyObject *o = p->orig[k], *po = p->plain[k];
        if (o == po || !PyArray_Check(o) || !PyArray_Check(po) || !(p->chain_warned[k] & 1) ||
            (PyArray_FLAGS((PyArrayObject *)po) & GP_NPY_WARN_ON_WRITE))
            continue;
        PyObject *next = o; /* the next array of NumPy's chain */
        int i = 0;
        for (PyObject *a = o; a && PyArray_Check(a); a = PyArray_BASE((PyArrayObject *)a), i++) {
            if (a == next) {
                PyArray_CLEARFLAGS((PyArrayObject *)a, GP_NPY_WARN_ON_WRITE);
                next = gp_collapsed_base((PyArrayObject *)a);
            } else if (Py_TYPE(a) != &GpArray_Type) {
                /* a plain view between, which only grumpy's wrapping made
                 * (NumPy's own array is the grumpy one above it): cleared,
                 * so that a view taken later does not inherit the flag
                 * through it (fuzzer seed 724, case 724004497) */
                PyArray_CLEARFLAGS((PyArrayObject *)a, GP_NPY_WARN_ON_WRITE);
            } else if (i < 32 && (p->chain_warned[k] >> i & 1)) {
                PyArray_ENABLEFLAGS((PyArrayObject *)a, GP_NPY_WARN_ON_WRITE);
            }
        }
    }
}

/* result_of_call's value for a NumPy result res (stolen). */
static PyObject *result_of_call(PyObject *res, const OutPairs *p)
{
    written_as_numpy_warned(p);
    if (!res)
        return NULL;
    if (PyTuple_CheckExact(res) && p->n) {
        Py_ssize_t n = PyTuple_GET_SIZE(res);
        PyObject *t = PyTuple_New(n);
        for (Py_ssize_t i = 0; t && i < n; i++) {
            PyObject *x = restored(p, PyTuple_GET_ITEM(res, i));
            if (!x)
                Py_CLEAR(t);
            else
                PyTuple_SET_ITEM(t, i, x);
        }
        Py_DECREF(res);
        return t;
    }
    PyObject *o = out_of(p, res);
    if (o) {
        Py_DECREF(res);
        Py_INCREF(o);
        return o;
    }
    /* the only reference: a grumpy array takes over its memory (OWNDATA,
     * no .base), as the array NumPy returned had it */
    return gp_wrap_result(res);
}

/* The name a fallback is counted under: ufunc or function name, with
 * ".method" for a ufunc method other than __call__; into buf. */
static void call_name(PyObject *obj, PyObject *method, char *buf, size_t n)
{
    PyObject *name = PyObject_GetAttr(obj, gp_hooks.str_name);
    const char *nm = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    const char *m = method ? PyUnicode_AsUTF8(method) : NULL;
    if (method && PyUnicode_Compare(method, gp_hooks.str_call) != 0)
        snprintf(buf, n, "%s.%s", nm ? nm : "?", m ? m : "?");
    else
        snprintf(buf, n, "%s", nm ? nm : "?");
    Py_XDECREF(name);
    PyErr_Clear();
}

/* Takes the current call's decline reason into *why and, for a counted
 * fallback, its name into buf; nonzero when GRUMPY_STRICT refuses the call
 * (exception set). */
static int refused(PyObject *obj, PyObject *method, int count, char *buf, size_t n, const char **why)
{
    *why = gp_decline_take();
    if (!count)
        return 0;
    call_name(obj, method, buf, n);
    return gp_strict_refuses(buf, *why) != 0;
}

/* ---- NumPy at once: operators of small computed operands ---------------
 *
 * An operator whose result is below GRUMPY_MIN_BYTES over operands that are
 * all computed is NumPy's at once (gp_capture_map's OUT_EAGER); reaching
 * that answer through NumPy's override dispatch (the ufunc, its
 * __array_ufunc__ lookup, the arguments normalized into a tuple and a
 * dict) and the capture's classification cost more than the operation
 * itself on a 16 KB row of a large grumpy array (a loop over rows: `v - w`
 * 2-3x NumPy's time).  The operator slots and the protocol methods decide
 * it first, from the arguments' classes, shapes and buffers alone, and
 * call NumPy's own slot or function on plain views, as NumPy does for
 * plain arrays (a reduction of a small computed array likewise).
 * Anything else (a pending or device-resident operand, another class, a
 * large or non-broadcasting result, out=, a gufunc, python -m
 * grumpy.explain's recording) takes the capture's path. */

/* Whether o is of a class such an operator takes: a grumpy array, a plain
 * ndarray (NumPy's exact class) or a Python number; its shape broadcast
 * into *nd / shape (NumPy's rule, the trailing axes aligned) and its item
 * size into *itemsize.  Whether its memory is computed: host_computed. */
static int computed_operand(PyObject *o, int *nd, npy_intp *shape, int *itemsize)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type)
        return 1;
    if (t != &GpArray_Type && t != &PyArray_Type)
        return 0;
    PyArrayObject *a = (PyArrayObject *)o;
    int n = PyArray_NDIM(a);
    if (n > GP_MAXDIMS)
        return 0;
    if (n > *nd) {
        memmove(shape + (n - *nd), shape, (size_t)*nd * sizeof *shape);
        for (int d = 0; d < n - *nd; d++)
            shape[d] = 1;
        *nd = n;
    }
    for (int d = 0; d < n; d++) {
        npy_intp s = PyArray_DIM(a, d), *r = &shape[*nd - n + d];
        if (*r == 1)
            *r = s;
        else if (s != 1 && s != *r)
            return 0; /* NumPy raises; the capture's path lets it */
    }
    if ((int)PyArray_ITEMSIZE(a) > *itemsize)
        *itemsize = (int)PyArray_ITEMSIZE(a);
    return 1;
}

/* Whether o (an operand computed_operand took) is in memory NumPy can read
 * now: a Python number, or an array (a plain one too: it may view grumpy
 * memory, x.view(np.ndarray)) whose buffer has no producer and is on the
 * host.  A lookup under the guard's lock: asked only once the result is
 * known to be small, so a captured operation never pays for it. */
static int host_computed(PyObject *o)
{
    if (!PyArray_Check(o) || PyArray_NBYTES((PyArrayObject *)o) == 0)
        return 1;
    GpBuffer *b = gp_buffer_lookup(PyArray_DATA((PyArrayObject *)o));
    return !b || (!__atomic_load_n(&b->producer, __ATOMIC_ACQUIRE) &&
                  __atomic_load_n(&b->where, __ATOMIC_ACQUIRE) == GP_ON_HOST);
}

/* Whether an element-wise operation of the n operands x (a op b, a ufunc
 * call) is NumPy's at once (above): every operand computed, the
 * broadcast result below GRUMPY_MIN_BYTES at the larger of 8 bytes and
 * the operands' item size an element (a bound on the result's dtype for
 * every dtype grumpy computes). */
static int small_and_computed(PyObject *const *x, Py_ssize_t n)
{
    if (!gp_capturing() || gp_config.explain)
        return 0;
    int nd = 0, itemsize = 8;
    npy_intp shape[GP_MAXDIMS];
    for (Py_ssize_t i = 0; i < n; i++)
        if (!computed_operand(x[i], &nd, shape, &itemsize))
            return 0;
    int64_t bytes = itemsize;
    for (int d = 0; d < nd; d++)
        bytes *= shape[d];
    if (bytes >= gp_hooks.min_bytes)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!host_computed(x[i]))
            return 0;
    return 1;
}

/* A plain view of grumpy array o, else o.  New reference. */
static PyObject *plain_operand(PyObject *o)
{
    if (Py_TYPE(o) == &GpArray_Type)
        return PyArray_View((PyArrayObject *)o, NULL, &PyArray_Type);
    Py_INCREF(o);
    return o;
}

/* ufunc(*x) called with plain views of the n (at most 3) operands x, no
 * keywords: NumPy's result, small, a plain array or a scalar. */
static PyObject *numpy_call_now(PyObject *ufunc, PyObject *const *x, Py_ssize_t n)
{
    PyObject *p[3] = {NULL, NULL, NULL}, *r = NULL;
    Py_ssize_t k = 0;
    for (; k < n; k++)
        if (!(p[k] = plain_operand(x[k])))
            break;
    if (k == n) {
        gp_hooks.eager_small++;
        gp_hooks.eager_direct++;
        r = PyObject_Vectorcall(ufunc, p, (size_t)n, NULL);
    }
    for (Py_ssize_t i = 0; i < k; i++)
        Py_DECREF(p[i]);
    return r;
}

/* Whether o, an argument of a reduction or ufunc method, lets NumPy run it
 * at once: an array of grumpy's or NumPy's exact class below
 * GRUMPY_MIN_BYTES whose memory is computed on the host, a tuple or list
 * of such (np.stack's), or not an array at all (axis, dtype, None). */
static int small_computed_arg(PyObject *o, int depth)
{
    if (PyTuple_Check(o) || PyList_Check(o)) {
        if (depth > 0)
            return !PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            if (!small_computed_arg(PySequence_Fast_GET_ITEM(o, i), depth + 1))
                return 0;
        return 1;
    }
    if (!PyArray_Check(o))
        return 1;
    int nd = 0, itemsize = 1;
    npy_intp shape[GP_MAXDIMS];
    return computed_operand(o, &nd, shape, &itemsize) &&
           (int64_t)PyArray_NBYTES((PyArrayObject *)o) < gp_hooks.min_bytes && host_computed(o);
}

/* small_computed_arg of every positional argument and keyword value. */
static int small_computed_call(PyObject *args, PyObject *kwds)
{
    if (!gp_capturing() || gp_config.explain)
        return 0;
    if (!small_computed_arg(args, 0))
        return 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kwds && PyDict_Next(kwds, &pos, &k, &v))
        if (!small_computed_arg(v, 1) && !(PyTuple_Check(v) && small_computed_arg(v, 0)))
            return 0;
    return 1;
}

PyObject *gp_fallback_ufunc(PyObject *ufunc, PyObject *method, PyObject *inputs, PyObject *kwds, int count)
{
    PyObject *pin = NULL, *pkw = NULL, *fn = NULL, *res = NULL;
    char name[160];
    const char *why;
    if (refused(ufunc, method, count, name, sizeof name, &why))
        return NULL;
    if (flush_if_writing(kwds) < 0)
        return NULL;
    if (!(pin = plain_deep(inputs, 0)))
        goto done;
    if (kwds && !(pkw = plain_deep(kwds, 0)))
        goto done;
    /* a call is the ufunc's own (no bound method made, no attribute
     * looked up: this path is every NumPy-handled ufunc call on a grumpy
     * array, and its cost is the tax of "never slower") */
    int call = method == gp_hooks.str_call || PyUnicode_Compare(method, gp_hooks.str_call) == 0;
    if (!call && !(fn = PyObject_GetAttr(ufunc, method)))
        goto done;
    OutPairs outs = {.n = 0};
    if (call) {
        /* positional arguments past the inputs are outs */
        Py_ssize_t nin = -1;
        if (PyObject_TypeCheck(ufunc, &PyUFunc_Type)) {
            nin = ((PyUFuncObject *)ufunc)->nin;
        } else {
            PyObject *nin_o = PyObject_GetAttrString(ufunc, "nin");
            nin = nin_o ? PyLong_AsSsize_t(nin_o) : -1;
            Py_XDECREF(nin_o);
            PyErr_Clear();
        }
        for (Py_ssize_t i = nin; nin >= 0 && i < PyTuple_GET_SIZE(inputs); i++) {
            /* written: its pending readers computed here, with their
             * warnings, not inside the fault NumPy's write would take */
            if (gp_prepare_for_write(PyTuple_GET_ITEM(inputs, i)) < 0)
                goto done;
            add_out_pairs(&outs, PyTuple_GET_ITEM(inputs, i), PyTuple_GET_ITEM(pin, i));
        }
    } else if (PyTuple_GET_SIZE(inputs) > 0 && PyUnicode_CompareWithASCIIString(method, "at") == 0 &&
               gp_prepare_for_write(PyTuple_GET_ITEM(inputs, 0)) < 0) {
        goto done; /* ufunc.at(a, indices, b) writes a */
    }
    add_kw_out_pairs(&outs, kwds, pkw);
    res = result_of_call(PyObject_Call(call ? ufunc : fn, pin, pkw), &outs);
    if (count && res)
        gp_count_fallback_why(name, why);
done:
    Py_XDECREF(pin);
    Py_XDECREF(pkw);
    Py_XDECREF(fn);
    return res;
}

PyObject *gp_fallback_function(PyObject *func, PyObject *args, PyObject *kwds, int count)
{
    PyObject *pargs = NULL, *pkw = NULL, *res = NULL;
    char name[160];
    const char *why;
    if (refused(func, NULL, count, name, sizeof name, &why))
        return NULL;
    if (flush_if_writing(kwds) < 0 || flush_if_writing_first(func, args) < 0)
        return NULL;
    if (!(pargs = plain_deep(args, 0)))
        goto done;
    if (kwds && !(pkw = plain_deep(kwds, 0)))
        goto done;
    OutPairs outs = {.n = 0};
    add_kw_out_pairs(&outs, kwds, pkw); /* first: the pairs are bounded (MAX_OUTS) */
    /* a positional out (np.outer(a, b, out), np.clip(a, lo, hi, out)), or
     * any positional array NumPy hands back as it was given (np.asarray(x)
     * is x; recfunctions.stack_arrays((x,)) is x): the caller's own
     * object, as without grumpy */
    for (int containers = 0; containers < 2; containers++) /* arrays first: the pairs are bounded */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
            PyObject *a = PyTuple_GET_ITEM(args, i);
            if (containers ? PyTuple_Check(a) || PyList_Check(a) : PyArray_Check(a))
                add_out_pairs(&outs, a, PyTuple_GET_ITEM(pargs, i));
        }
    res = result_of_call(PyObject_Call(func, pargs, pkw), &outs);
    if (count && res)
        gp_count_fallback_why(name, why);
done:
    Py_XDECREF(pargs);
    Py_XDECREF(pkw);
    return res;
}

/* ---- the protocol methods ---------------------------------------------- */

/* The array whose var() or std() method runs on this thread (NULL:
 * none).  NumPy's _var (numpy/_core/_methods.py) sums its own temporary,
 * x = arr - mean squared in place (um.multiply(x, x, out=x)), with
 * umr_sum(x, ...) and never reads x again: that np.add.reduce of an array
 * other than self is a temporary's (var_temporary), whose kernel need not
 * write it (GpNode.output_deferred, var_deferred, until the method
 * returns: the sum may be computed later in it, by the division of the
 * result; were x's memory read after all, it would be computed then).
 * The method itself stays NumPy's, so its arithmetic and warnings are
 * NumPy's. */
static _Thread_local PyObject *var_self;
static _Thread_local GpNode *var_deferred;

static GpNode *output_deferred(GpNode *n);
static void output_restored(GpNode *n);

/* Marks the array np.add.reduce sums inside var_self's method
 * output_deferred (var_deferred) when it is _var's temporary: an array
 * grumpy made that owns its memory, not var_self. */
static void var_temporary(PyObject *ufunc, PyObject *method, PyObject *inputs)
{
    if (!var_self || var_deferred || ufunc != gp_hooks.ufunc_of_op[GP_OP_ADD] || PyTuple_GET_SIZE(inputs) != 1 ||
        !(method == gp_hooks.str_reduce ||
          (PyUnicode_Check(method) && PyUnicode_Compare(method, gp_hooks.str_reduce) == 0)))
        return;
    PyObject *x = PyTuple_GET_ITEM(inputs, 0);
    PyArrayObject_fields *f = (PyArrayObject_fields *)x;
    if (x != var_self && Py_TYPE(x) == &GpArray_Type && (f->flags & NPY_ARRAY_OWNDATA) && !f->base)
        var_deferred = output_deferred(gp_pending_node_of((PyArrayObject *)x));
}

static PyObject *ufunc_protocol(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 2) {
        PyErr_SetString(PyExc_TypeError, "__array_ufunc__ needs ufunc and method");
        return NULL;
    }
    PyObject *ufunc = PyTuple_GET_ITEM(args, 0), *method = PyTuple_GET_ITEM(args, 1);
    /* NumPy's at once: an element-wise call (no gufunc: its core dims can
     * make a large result) over small computed operands (no out, given
     * by keyword or as an argument past the inputs), or a reduction
     * (np.add.reduce of ndarray.sum) of a small computed array */
    int call =
        method == gp_hooks.str_call || (PyUnicode_Check(method) && PyUnicode_Compare(method, gp_hooks.str_call) == 0);
    if (call && !(kwds && PyDict_GET_SIZE(kwds)) && PyObject_TypeCheck(ufunc, &PyUFunc_Type) &&
        !((PyUFuncObject *)ufunc)->core_enabled && n - 2 == ((PyUFuncObject *)ufunc)->nin && n - 2 <= 3 &&
        small_and_computed(&PyTuple_GET_ITEM(args, 2), n - 2))
        return numpy_call_now(ufunc, &PyTuple_GET_ITEM(args, 2), n - 2);
    PyObject *inputs = PyTuple_GetSlice(args, 2, n);
    if (!inputs)
        return NULL;
    if (!call && n == 3 &&
        (method == gp_hooks.str_reduce ||
         (PyUnicode_Check(method) && PyUnicode_Compare(method, gp_hooks.str_reduce) == 0)) &&
        small_computed_call(inputs, kwds)) {
        gp_hooks.eager_small++;
        gp_hooks.eager_direct++;
        PyObject *res = gp_fallback_ufunc(ufunc, method, inputs, kwds, 0);
        Py_DECREF(inputs);
        return res;
    }
    gp_decline = NULL;
    var_temporary(ufunc, method, inputs);
    PyObject *res = gp_capture_ufunc(ufunc, method, inputs, kwds);
    if (res == Py_NotImplemented || res == Py_Ellipsis) {
        int count = res == Py_NotImplemented && !gp_paused && !gp_hooks.uncounted;
        Py_DECREF(res);
        res = gp_fallback_ufunc(ufunc, method, inputs, kwds, count);
    }
    Py_DECREF(inputs);
    return res;
}

/* np.nanmin / np.nanmax of an ndarray that is not of object dtype, as
 * NumPy's fast path for a plain ndarray computes it (numpy/lib/
 * _nanfunctions_impl.py): fmin / fmax .reduce with the arguments given,
 * then "All-NaN slice encountered" when a result is NaN.  NumPy's own
 * implementation takes its subclass path for a grumpy array, whose
 * warning reads "All-NaN axis encountered" (fuzzer case 658001946).
 * Py_NotImplemented (new reference) for other arguments. */
static PyObject *nan_extremum(PyObject *ufunc, PyObject *fargs, PyObject *fkw)
{
    static char *kwlist[] = {"a", "axis", "out", "keepdims", "initial", "where", NULL};
    PyObject *a, *opt[5] = {Py_None, Py_None, NULL, NULL, NULL};
    if (!PyArg_ParseTupleAndKeywords(fargs, fkw, "O|OOOOO:nanmin", kwlist, &a, &opt[0], &opt[1], &opt[2], &opt[3],
                                     &opt[4])) {
        PyErr_Clear(); /* NumPy's own error */
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!PyArray_Check(a) || PyArray_TYPE((PyArrayObject *)a) == NPY_OBJECT)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *kw = PyDict_New(), *res = NULL;
    for (int i = 0; kw && i < 5; i++)
        if (opt[i] && opt[i] != gp_hooks.np_novalue && (i != 1 || opt[i] != Py_None) && /* out=None: none */
            PyDict_SetItemString(kw, kwlist[i + 1], opt[i]) < 0)
            Py_CLEAR(kw);
    PyObject *reduce = kw ? PyObject_GetAttr(ufunc, gp_hooks.str_reduce) : NULL;
    PyObject *pos = reduce ? PyTuple_Pack(1, a) : NULL;
    res = pos ? PyObject_Call(reduce, pos, kw) : NULL;
    Py_XDECREF(pos);
    Py_XDECREF(reduce);
    Py_XDECREF(kw);
    PyObject *nan = res ? PyObject_CallOneArg(gp_hooks.np_isnan, res) : NULL;
    PyObject *any = nan ? PyObject_CallMethod(nan, "any", NULL) : NULL;
    int all_nan = any ? PyObject_IsTrue(any) : -1;
    Py_XDECREF(any);
    Py_XDECREF(nan);
    if (res && (all_nan < 0 || (all_nan && PyErr_WarnEx(PyExc_RuntimeWarning, "All-NaN slice encountered", 1) < 0)))
        Py_CLEAR(res);
    return res;
}

/* Whether o holds no array: not one, nor a tuple or list with one (nor a
 * nested tuple or list). */
static int array_free(PyObject *o)
{
    if (PyArray_Check(o))
        return 0;
    if (!PyTuple_Check(o) && !PyList_Check(o))
        return 1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(o, i);
        if (PyArray_Check(x) || PyTuple_Check(x) || PyList_Check(x))
            return 0;
    }
    return 1;
}

/* Whether a function call writes no array it is given: no array among
 * its positional arguments after the first, nor as out=. */
static int reads_only(PyObject *fargs, PyObject *fkw)
{
    for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(fargs); i++)
        if (!array_free(PyTuple_GET_ITEM(fargs, i)))
            return 0;
    PyObject *out = PyDict_GetItemWithError(fkw, gp_hooks.str_out);
    if (!out && PyErr_Occurred())
        PyErr_Clear();
    return !out || out == Py_None;
}

/* n (NULL: none) marked as a temporary being reduced for the length of a
 * call (GpNode.output_deferred), held; output_restored ends it.  n. */
static GpNode *output_deferred(GpNode *n)
{
    if (n) {
        gp_lock();
        gp_node_incref(n);
        n->output_deferred++;
        gp_unlock();
    }
    return n;
}

static void output_restored(GpNode *n)
{
    if (n) {
        gp_lock();
        n->output_deferred--;
        gp_node_decref(n);
        gp_unlock();
    }
}

/* np.sum(a * b), np.mean(...), np.max(np.abs(...)): NumPy's
 * implementation calls the argument's method (reduce_method), where the
 * frames between hold references of their own, so a temporary is not
 * seen as one there.  It is seen here: the caller's stack holds its only
 * reference when __array_function__ sees gp_hooks.temporary_refs of them
 * (the dispatcher's, measured by gp_measure_temporary_refs).  Its pending
 * node, to be marked for the call as reduce_method marks one (the kernel
 * that fuses it into the reduction does not write its array), or NULL.
 * Before Python 3.14 only: from 3.14 a local's reference on the stack is
 * borrowed, so `x = a * b; np.sum(x)` would count the same. */
static GpNode *temporary_argument(PyObject *func, PyObject *fargs)
{
#if PY_VERSION_HEX >= 0x030E0000
    (void)func;
    (void)fargs;
    return NULL;
#else
    if (gp_hooks.temporary_refs <= 0 || PyTuple_GET_SIZE(fargs) < 1)
        return NULL;
    PyObject *a = PyTuple_GET_ITEM(fargs, 0);
    PyArrayObject_fields *f = (PyArrayObject_fields *)a;
    if (Py_TYPE(a) != &GpArray_Type || !(f->flags & NPY_ARRAY_OWNDATA) || f->base ||
        Py_REFCNT(a) != gp_hooks.temporary_refs)
        return NULL;
    int once = PySet_Contains(gp_hooks.reads_once, func);
    if (once <= 0) {
        PyErr_Clear();
        return NULL;
    }
    return gp_pending_node_of((PyArrayObject *)a);
#endif
}

/* The array gp_measure_temporary_refs passes to np.sum while it measures
 * (its call alone is answered by the measurement: another thread's
 * __array_function__ calls, which may run while NumPy's dispatcher has
 * let go of the GIL, are not), or NULL.  GIL held. */
static PyObject *measuring;

int gp_measure_temporary_refs(void)
{
    static int measured;
    if (measured)
        return 0;
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *sum = np ? PyObject_GetAttrString(np, "sum") : NULL;
    Py_XDECREF(np);
    PyArray_Descr *d = sum ? PyArray_DescrFromType(NPY_DOUBLE) : NULL;
    PyObject *t = d ? PyArray_NewFromDescr(&GpArray_Type, d, 0, NULL, NULL, NULL, 0, NULL) : NULL; /* steals d */
    if (!t) {
        Py_XDECREF(sum);
        return -1;
    }
    /* t's one reference is this frame's, as a temporary's is its caller's
     * stack slot: a vectorcall passes its arguments without new ones */
    measured = 1;
    gp_hooks.temporary_refs = 0; /* not seen: no deferral */
    measuring = t;
    PyObject *r = PyObject_CallOneArg(sum, t);
    measuring = NULL;
    Py_XDECREF(r);
    Py_DECREF(t);
    Py_DECREF(sum);
    if (!r && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt))
        return -1;
    PyErr_Clear();
    return 0;
}

static PyObject *function_protocol(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    PyObject *func, *types, *fargs, *fkw;
    static char *kwlist[] = {"func", "types", "args", "kwargs", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO:__array_function__", kwlist, &func, &types, &fargs, &fkw))
        return NULL;
    if (!PyTuple_Check(fargs) || !PyDict_Check(fkw)) {
        PyErr_SetString(PyExc_TypeError, "__array_function__: args must be a tuple, kwargs a dict");
        return NULL;
    }
    if (measuring && PyTuple_GET_SIZE(fargs) == 1 && PyTuple_GET_ITEM(fargs, 0) == measuring) {
        gp_hooks.temporary_refs = Py_REFCNT(measuring); /* gp_measure_temporary_refs' call */
        Py_RETURN_NONE;
    }
    /* NumPy's at once: a reduction or scan whose arrays are all small and
     * computed, and no other class overrides it */
    if (PyTuple_Check(types) && PyTuple_GET_SIZE(types) == 1 &&
        PyTuple_GET_ITEM(types, 0) == (PyObject *)&GpArray_Type && small_computed_call(fargs, fkw) &&
        reads_only(fargs, fkw)) {
        int fresh = PySet_Contains(gp_hooks.fresh, func);
        if (fresh < 0)
            return NULL;
        if (fresh) {
            gp_hooks.eager_small++;
            gp_hooks.eager_direct++;
            return gp_fallback_function(func, fargs, PyDict_GET_SIZE(fkw) ? fkw : NULL, 0);
        }
    }
    gp_decline = NULL;
    PyObject *res = gp_capture_function(func, fargs, fkw);
    if (res == Py_Ellipsis) {
        Py_DECREF(res);
        return gp_fallback_function(func, fargs, PyDict_GET_SIZE(fkw) ? fkw : NULL, 0);
    }
    if (res != Py_NotImplemented)
        return res;
    Py_DECREF(res);
    if (func == gp_hooks.np_nanmin || func == gp_hooks.np_nanmax) {
        res = nan_extremum(func == gp_hooks.np_nanmin ? gp_hooks.np_fmin : gp_hooks.np_fmax, fargs, fkw);
        if (res != Py_NotImplemented)
            return res;
        Py_DECREF(res);
    }
    int pass = PySet_Contains(gp_hooks.passthrough, func);
    if (pass < 0)
        return NULL;
    if (pass) {
        /* reductions: NumPy's implementation calls the array's methods,
         * which reach __array_ufunc__ and stay lazy */
        PyObject *impl = PyObject_GetAttr(func, gp_hooks.str_implementation);
        if (!impl)
            return NULL;
        GpNode *n = output_deferred(temporary_argument(func, fargs));
        /* a plain ndarray it makes (subok=False views, np.array copies)
         * comes back as a grumpy array, so what follows is captured too */
        res = gp_wrap_result(PyObject_Call(impl, fargs, PyDict_GET_SIZE(fkw) ? fkw : NULL));
        output_restored(n);
        Py_DECREF(impl);
        return res;
    }
    /* creation functions (zeros_like, ...) are NumPy's job: not counted */
    gp_declined(GP_WHY_FUNCTION);
    int creation = PySet_Contains(gp_hooks.creation, func);
    if (creation < 0)
        return NULL;
    return gp_fallback_function(func, fargs, PyDict_GET_SIZE(fkw) ? fkw : NULL, !creation && !gp_paused);
}

/* A protocol method within an explain scope (hooks.h): what it records
 * is charged to the user's line.  args[0] is the ufunc / function. */
static PyObject *protocol_in_scope(PyObject *(*method)(PyObject *, PyObject *, PyObject *), PyObject *self,
                                   PyObject *args, PyObject *kwds)
{
    GpExplainScope scope;
    gp_explain_enter(&scope);
    PyObject *res = method(self, args, kwds);
    gp_explain_leave(&scope, PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL, NULL);
    return res;
}

static PyObject *array_ufunc(PyObject *self, PyObject *args, PyObject *kwds)
{
    return protocol_in_scope(ufunc_protocol, self, args, kwds);
}

static PyObject *array_function(PyObject *self, PyObject *args, PyObject *kwds)
{
    return protocol_in_scope(function_protocol, self, args, kwds);
}

/* The array methods' captures within an explain scope. */
static int assign_in_scope(PyArrayObject *t, PyObject *value, const char *name)
{
    GpExplainScope scope;
    gp_explain_enter(&scope);
    int rc = gp_capture_assign(t, value);
    gp_explain_leave(&scope, NULL, name);
    return rc;
}

static PyObject *matmul_in_scope(PyObject *a, PyObject *b)
{
    GpExplainScope scope;
    gp_explain_enter(&scope);
    PyObject *r = gp_capture_product(a, b, GP_PRODUCT_DOT);
    gp_explain_leave(&scope, NULL, "dot");
    return r;
}

static PyObject *argreduce_in_scope(GpOp op, PyObject *a, PyObject *const *args, Py_ssize_t nargs, PyObject *kwds)
{
    GpExplainScope scope;
    gp_explain_enter(&scope);
    PyObject *r = gp_capture_argreduce(op, a, args, nargs, kwds);
    gp_explain_leave(&scope, NULL, op == GP_OP_ARGMIN ? "argmin" : "argmax");
    return r;
}

/* ---- binary operators: another subclass's reflected method first ------
 *
 * Python calls the right operand's reflected method first when its type is
 * a subclass of the left operand's that overrides it: with a plain ndarray
 * on the left, np.ma.MaskedArray's __rtruediv__ or np.matrix's __rmul__
 * runs first.  grumpy.ndarray is not their base, so Python calls grumpy's
 * slot first; these give them the turn NumPy's class would (x / masked was
 * np.true_divide(x, masked): other values under the mask, 1.0 where
 * MaskedArray's own division leaves 0.0; x * matrix was element-wise). */
static PyObject *reflected_first(PyObject *a, PyObject *b, const char *rname)
{
    if (Py_TYPE(a) != &GpArray_Type || !gp_foreign_subclass(b))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *mine = PyObject_GetAttrString((PyObject *)Py_TYPE(b), rname);
    PyObject *base = PyObject_GetAttrString((PyObject *)&PyArray_Type, rname);
    PyObject *r = NULL;
    if (!mine || !base)
        PyErr_Clear();
    else if (mine != base)
        r = PyObject_CallMethod(b, rname, "O", a);
    Py_XDECREF(mine);
    Py_XDECREF(base);
    if (!r && !PyErr_Occurred())
        Py_RETURN_NOTIMPLEMENTED;
    return r;
}

/* NumPy's slot (one of binary, power, compare) on plain views of a and b:
 * its result, small, is a plain array or a scalar as NumPy's own. */
static PyObject *numpy_now(PyObject *a, PyObject *b, binaryfunc binary, ternaryfunc power, PyObject *mod,
                           richcmpfunc compare, int op)
{
    PyObject *pa = plain_operand(a), *pb = pa ? plain_operand(b) : NULL, *r = NULL;
    if (pb) {
        gp_hooks.eager_small++;
        gp_hooks.eager_direct++;
        r = binary ? binary(pa, pb) : power ? power(pa, pb, mod) : compare(pa, pb, op);
    }
    Py_XDECREF(pa);
    Py_XDECREF(pb);
    return r;
}

/* x.__add__(y) called as a method is NumPy's slot on (x, y) alone:
 * Python tries the other operand's reflected method first only for the
 * operator (binary_op1), which the slots below emulate; NumPy's
 * test_ufunc_binop_interaction calls the methods */
/* The slot: another subclass's reflected method first, then direct_. */
#define GP_REFLECTED_SLOT(slot, rname)                      \
    static PyObject *array_##slot(PyObject *a, PyObject *b) \
    {                                                       \
        PyObject *r = reflected_first(a, b, rname);         \
        if (r != Py_NotImplemented)                         \
            return r;                                       \
        Py_DECREF(r);                                       \
        return direct_##slot(a, b);                         \
    }
#define GP_BINOP(slot, name, rname)                                            \
    static PyObject *direct_##slot(PyObject *a, PyObject *b)                   \
    {                                                                          \
        PyObject *ab[2] = {a, b};                                              \
        if (small_and_computed(ab, 2))                                         \
            return numpy_now(a, b, gp_numpy_number.slot, NULL, NULL, NULL, 0); \
        return gp_numpy_number.slot(a, b);                                     \
    }                                                                          \
    GP_REFLECTED_SLOT(slot, rname)
GP_ELEMENTWISE_BINARY_SLOTS(GP_BINOP)
#undef GP_BINOP

/* divmod and @ keep the capture's path: divmod has two results, and a
 * small product can be a large one's view (matmul's own rules) */
#define GP_BINOP(slot, name, rname)                                                                 \
    static PyObject *direct_##slot(PyObject *a, PyObject *b) { return gp_numpy_number.slot(a, b); } \
    GP_REFLECTED_SLOT(slot, rname)
#define GP_OTHER_BINARY_SLOTS(X)              \
    X(nb_divmod, "__divmod__", "__rdivmod__") \
    X(nb_matrix_multiply, "__matmul__", "__rmatmul__")
GP_OTHER_BINARY_SLOTS(GP_BINOP)
#undef GP_BINOP
#undef GP_REFLECTED_SLOT

static PyObject *direct_nb_power(PyObject *a, PyObject *b, PyObject *mod)
{
    PyObject *ab[2] = {a, b};
    if (mod == Py_None && small_and_computed(ab, 2))
        return numpy_now(a, b, NULL, gp_numpy_number.nb_power, mod, NULL, 0);
    return gp_numpy_number.nb_power(a, b, mod);
}

static PyObject *array_nb_power(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod == Py_None) {
        PyObject *r = reflected_first(a, b, "__rpow__");
        if (r != Py_NotImplemented)
            return r;
        Py_DECREF(r);
    }
    return direct_nb_power(a, b, mod);
}

/* x.__pow__(y[, mod]) called as a method (GP_BINOP's note) */
static PyObject *array_pow_method(PyObject *self, PyObject *args)
{
    PyObject *other, *mod = Py_None;
    if (!PyArg_UnpackTuple(args, "__pow__", 1, 2, &other, &mod))
        return NULL;
    return direct_nb_power(self, other, mod);
}

/* Comparisons likewise (NumPy's tp_richcompare, saved before plain_ops.c
 * replaces ndarray's). */
static richcmpfunc numpy_richcompare;

static PyObject *array_richcompare(PyObject *a, PyObject *b, int op)
{
    PyObject *ab[2] = {a, b};
    if (small_and_computed(ab, 2))
        return numpy_now(a, b, NULL, NULL, NULL, numpy_richcompare, op);
    return numpy_richcompare(a, b, op);
}

static PyObject *plain_view_of(PyObject *self)
{
    if (gp_ensure_computed((PyArrayObject *)self) < 0)
        return NULL;
    return PyArray_View((PyArrayObject *)self, NULL, &PyArray_Type);
}

static PyObject *array_repr(PyObject *self)
{
    PyObject *v = plain_view_of(self);
    if (!v)
        return NULL;
    PyObject *r = PyObject_Repr(v);
    Py_DECREF(v);
    return r;
}

static PyObject *array_str(PyObject *self)
{
    PyObject *v = plain_view_of(self);
    if (!v)
        return NULL;
    PyObject *r = PyObject_Str(v);
    Py_DECREF(v);
    return r;
}

static int array_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    /* exported memory may be read or written by system calls, which get
     * EFAULT instead of a page fault: compute it (and, for a writable
     * export, its pending readers) first */
    if (gp_ensure_computed((PyArrayObject *)self) < 0)
        return -1;
    if ((flags & PyBUF_WRITABLE) && gp_prepare_for_write(self) < 0)
        return -1;
    return PyArray_Type.tp_as_buffer->bf_getbuffer(self, view, flags);
}

static PyBufferProcs array_as_buffer;
static PyMappingMethods array_as_mapping;
static PySequenceMethods array_as_sequence;
static PyNumberMethods array_as_number;

/* Iteration and int(a), float(a), operator.index(a), bool(a): NumPy reads
 * elements; computed first (COMPUTED_OR). */
static PyObject *array_sq_item(PyObject *self, Py_ssize_t i)
{
    if (PyArray_NDIM((PyArrayObject *)self) <= 1)
        COMPUTED_OR(self, NULL);
    return PyArray_Type.tp_as_sequence->sq_item(self, i);
}

static PyObject *array_int(PyObject *self)
{
    COMPUTED_OR(self, NULL);
    return gp_numpy_number.nb_int(self);
}

static PyObject *array_float(PyObject *self)
{
    COMPUTED_OR(self, NULL);
    return gp_numpy_number.nb_float(self);
}

static PyObject *array_index(PyObject *self)
{
    COMPUTED_OR(self, NULL);
    return gp_numpy_number.nb_index(self);
}

static int array_bool(PyObject *self)
{
    COMPUTED_OR(self, -1);
    return gp_numpy_number.nb_bool(self);
}

/* Basic indexing only (ints, slices, Ellipsis, None): the target is a view. */
static int basic_key(PyObject *key)
{
    if (PyTuple_Check(key)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++)
            if (!basic_key(PyTuple_GET_ITEM(key, i)) || PyTuple_Check(PyTuple_GET_ITEM(key, i)))
                return 0;
        return 1;
    }
    return PyLong_CheckExact(key) || PySlice_Check(key) || key == Py_Ellipsis || key == Py_None;
}

/* Whether a[key] reads a's elements (a scalar, or advanced indexing's
 * copy) rather than making a view. */
static int key_reads_elements(PyObject *self, PyObject *key)
{
    if (!basic_key(key))
        return 1;
    int ints = PyLong_CheckExact(key);
    for (Py_ssize_t i = 0; PyTuple_Check(key) && i < PyTuple_GET_SIZE(key); i++)
        ints += PyLong_CheckExact(PyTuple_GET_ITEM(key, i));
    return ints >= PyArray_NDIM((PyArrayObject *)self);
}

/* Index arrays in key (a mask, an integer array, or such in a tuple) are
 * read by NumPy's C code: computed first, in the caller's context (as
 * COMPUTED_OR), rather than by a page fault.  0 or -1 with an exception. */
static int key_arrays_computed(PyObject *key)
{
    if (PyArray_Check(key))
        return gp_ensure_computed((PyArrayObject *)key);
    for (Py_ssize_t i = 0; PyTuple_Check(key) && i < PyTuple_GET_SIZE(key); i++) {
        PyObject *k = PyTuple_GET_ITEM(key, i);
        if (PyArray_Check(k) && gp_ensure_computed((PyArrayObject *)k) < 0)
            return -1;
    }
    return 0;
}

/* a[key]: NumPy's, but a 0-d result is a plain ndarray view, as every 0-d
 * array is (its ufuncs and reductions answer 0-d arrays with scalars, or
 * with arrays where the caller asked, which __array_ufunc__ does not see). */
static PyObject *array_subscript(PyObject *self, PyObject *key)
{
    if (key_reads_elements(self, key))
        COMPUTED_OR(self, NULL);
    if (key_arrays_computed(key) < 0)
        return NULL;
    if (gp_capturing() && PyArray_Check(key)) {
        PyObject *g = gp_capture_gather((PyArrayObject *)self, key);
        if (g != Py_NotImplemented)
            return g;
        Py_DECREF(g);
    }
    PyObject *r = gp_numpy_mapping.mp_subscript(self, key);
    if (r && Py_TYPE(r) == &GpArray_Type && PyArray_NDIM((PyArrayObject *)r) == 0) {
        /* the same view, of NumPy's class, with r's base (a[0, 0, ...].base
         * is a, as NumPy gives it) */
        PyArrayObject *ra = (PyArrayObject *)r;
        PyArray_Descr *d = PyArray_DESCR(ra);
        Py_INCREF(d);
        PyObject *v = PyArray_NewFromDescr(&PyArray_Type, d, 0, NULL, NULL, PyArray_DATA(ra),
                                           PyArray_FLAGS(ra) & NPY_ARRAY_WRITEABLE, NULL);
        PyObject *base = PyArray_BASE(ra) ? PyArray_BASE(ra) : r;
        Py_INCREF(base);
        if (v && PyArray_SetBaseObject((PyArrayObject *)v, base) < 0)
            Py_CLEAR(v);
        else if (!v)
            Py_DECREF(base);
        Py_DECREF(r);
        return v;
    }
    return r;
}

/* Whether writable view t and array v are the same elements: same address,
 * dtype, shape and strides.  t[...] = v then copies each element onto
 * itself, which changes nothing but computing v (the end of `a[k] += x`,
 * which Python runs as a[k] = a[k].__iadd__(x): NumPy's copy would also
 * bring a GPU-resident buffer back to the host at every such statement). */
static int same_elements(PyArrayObject *t, PyObject *v)
{
    if (!PyArray_Check(v) || !PyArray_ISWRITEABLE(t) || (PyArray_FLAGS(t) & GP_NPY_WARN_ON_WRITE))
        return 0;
    PyArrayObject *a = (PyArrayObject *)v;
    int nd = PyArray_NDIM(t);
    return PyArray_DATA(a) == PyArray_DATA(t) && PyArray_NDIM(a) == nd &&
           PyArray_EquivTypes(PyArray_DESCR(a), PyArray_DESCR(t)) &&
           !memcmp(PyArray_DIMS(a), PyArray_DIMS(t), (size_t)nd * sizeof(npy_intp)) &&
           !memcmp(PyArray_STRIDES(a), PyArray_STRIDES(t), (size_t)nd * sizeof(npy_intp));
}

/* t[...] = t[...]: the pending writer of t's buffer computed, as NumPy's
 * copy would make it, and the buffer left where its valid copy is (the
 * host or the device).  0 or -1 with an exception. */
static int self_assign(PyArrayObject *t)
{
    GpBuffer *b = PyArray_NBYTES(t) != 0 ? gp_buffer_lookup(PyArray_DATA(t)) : NULL;
    if (b && gp_buffer_compute_writes_or_raise(b) < 0)
        return -1;
    return gp_raise_deferred(); /* as NumPy's own path would raise it here */
}

/* a[key] = value: for basic indexing a lazy write into the view (fused with
 * the value's computation), nothing when the value is the view's own
 * elements; anything else is NumPy's own assignment. */
static int array_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    /* a key naming one element (a[i, j] = v) gives NumPy's scalar, not a
     * view, and reading it would read the memory: NumPy's own assignment */
    if (value && gp_capturing() && !key_reads_elements(self, key)) {
        PyObject *view = gp_numpy_mapping.mp_subscript(self, key);
        if (!view)
            return -1;
        int rc = 1;
        if (PyArray_Check(view))
            rc = same_elements((PyArrayObject *)view, value)
                     ? self_assign((PyArrayObject *)view)
                     : assign_in_scope((PyArrayObject *)view, value, "__setitem__");
        Py_DECREF(view);
        if (rc <= 0)
            return rc;
    }
    /* NumPy's own assignment reads the index arrays and the value */
    if (key_arrays_computed(key) < 0 ||
        (value && PyArray_Check(value) && gp_ensure_computed((PyArrayObject *)value) < 0) ||
        gp_ensure_computed((PyArrayObject *)self) < 0 || gp_prepare_for_write(self) < 0)
        return -1;
    return gp_numpy_mapping.mp_ass_subscript(self, key, value);
}

/* Calls ndarray's own method `name` on self.  New reference or NULL. */
static PyObject *call_base(PyObject *self, const char *name, PyObject *args, PyObject *kwds)
{
    PyObject *m = PyObject_GetAttrString((PyObject *)&PyArray_Type, name);
    if (!m)
        return NULL;
    Py_ssize_t n = args ? PyTuple_GET_SIZE(args) : 0;
    PyObject *full = PyTuple_New(n + 1);
    if (!full) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(self);
    PyTuple_SET_ITEM(full, 0, self);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(PyTuple_GET_ITEM(args, i));
        PyTuple_SET_ITEM(full, i + 1, PyTuple_GET_ITEM(args, i));
    }
    PyObject *r = PyObject_Call(m, full, kwds);
    Py_DECREF(full);
    Py_DECREF(m);
    return r;
}

/* The same, with self computed first. */
static PyObject *base_method(PyObject *self, const char *name, PyObject *args, PyObject *kwds)
{
    if (gp_ensure_computed((PyArrayObject *)self) < 0)
        return NULL;
    PyObject *r = call_base(self, name, args, kwds);
    /* arrays of dtypes grumpy does not compute are plain ndarrays, however
     * they are made (x.astype(np.complex64) of a grumpy x) */
    if (r && Py_TYPE(r) == &GpArray_Type && gp_dtype_from_descr(PyArray_DESCR((PyArrayObject *)r)) < 0) {
        PyObject *v = PyArray_View((PyArrayObject *)r, NULL, &PyArray_Type);
        Py_SETREF(r, v);
    }
    return r;
}

/* A lazy copy of self converted to dtype t, in C order (copy()) or in
 * self's memory order (c_order 0: astype's order='K').  New reference, or
 * Py_NotImplemented when it cannot be captured. */
static PyObject *cast_record(PyObject *self, PyArray_Descr *descr, int c_order)
{
    PyArrayObject *a = (PyArrayObject *)self;
    int t = gp_dtype_from_descr(descr);
    /* a cast of a pending array fuses into its producer's kernel, as a
     * ufunc of a pending operand does, whatever the result's size: a small
     * result is no reason to write the larger input out and read it back */
    if (t < 0 ||
        ((int64_t)PyArray_SIZE(a) * (int64_t)PyDataType_ELSIZE(descr) < gp_hooks.min_bytes &&
         !gp_array_is_pending(a)) ||
        gp_errstate_for_capture())
        Py_RETURN_NOTIMPLEMENTED;
    GpNode *in = gp_node_for_array(a);
    if (!in) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    int perm[GP_MAXDIMS];
    int k_order = !c_order && gp_like_order(a, perm); /* astype: order='K' */
    gp_lock();
    GpNode *n = gp_node_map(GP_OP_CAST, (GpDType)t, 1, &in, in->nd, in->shape);
    gp_node_decref(in);
    if (n && k_order)
        gp_node_set_perm(n, perm);
    gp_unlock();
    if (!n)
        return PyErr_NoMemory();
    PyObject *r = gp_array_for_node(n);
    gp_node_release(n);
    gp_record_done();
    return r;
}

/* cast_record within an explain scope (hooks.h). */
static PyObject *lazy_cast(PyObject *self, PyArray_Descr *descr, int c_order)
{
    GpExplainScope scope;
    gp_explain_enter(&scope);
    PyObject *r = cast_record(self, descr, c_order);
    gp_explain_leave(&scope, NULL, c_order ? "copy" : "astype");
    return r;
}

static PyObject *array_astype(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) == 1 && (!kwds || PyDict_GET_SIZE(kwds) == 0)) {
        PyArray_Descr *descr = NULL;
        if (!PyArray_DescrConverter(PyTuple_GET_ITEM(args, 0), &descr))
            return NULL;
        PyObject *r = lazy_cast(self, descr, 0);
        Py_DECREF(descr);
        if (r != Py_NotImplemented)
            return r;
        Py_DECREF(r);
    }
    return gp_self_if_plain_view(self, base_method(self, "astype", args, kwds));
}

static PyObject *array_copy(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) == 0 && (!kwds || PyDict_GET_SIZE(kwds) == 0)) {
        PyArray_Descr *descr = PyArray_DESCR((PyArrayObject *)self);
        PyObject *r = lazy_cast(self, descr, 1);
        if (r != Py_NotImplemented)
            return r;
        Py_DECREF(r);
    }
    return base_method(self, "copy", args, kwds);
}

/* ravel() / flatten() that may copy -- flatten always, ravel of an array
 * not C-contiguous or with an order: self is computed first, here, with
 * its warnings.  NumPy's C copy read the pending memory, and the kernel
 * run for that fault gave none (tools/fuzz.py --warnings: the overflow of
 * `np.exp(x.T).ravel()` was lost).  Not a lazy copy: NumPy's functions
 * ravel arrays that their C code reads next (np.sort, np.percentile), and
 * a pending copy would fault there.  A C-contiguous ravel is a view of
 * self, lazy as self. */
static PyObject *flat_method(PyObject *self, PyObject *args, PyObject *kwds, const char *name)
{
    int copies = !strcmp(name, "flatten") || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)self) ||
                 PyTuple_GET_SIZE(args) > 0 || (kwds && PyDict_GET_SIZE(kwds) > 0);
    return copies ? base_method(self, name, args, kwds) : call_base(self, name, args, kwds);
}

static PyObject *array_ravel(PyObject *self, PyObject *args, PyObject *kwds)
{
    return flat_method(self, args, kwds, "ravel");
}

static PyObject *array_flatten(PyObject *self, PyObject *args, PyObject *kwds)
{
    return flat_method(self, args, kwds, "flatten");
}

/* cumsum() / cumprod() over the flattened array (no axis): NumPy's C
 * method ravels self first, a copy when self is not C-contiguous, which
 * read the pending memory and computed it inside a page fault, with no
 * warnings (fuzzer case 658000564: `v4.cumsum(axis=None)` of a transposed
 * v4 lost the warnings of np.log(v4), fused with v4): self is computed
 * first, here, as for flat_method.  Along an axis, or over a C-contiguous
 * array, NumPy's method reaches add / multiply .accumulate, captured. */
static PyObject *scan_method(PyObject *self, PyObject *args, PyObject *kwds, const char *name)
{
    PyObject *axis = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0)
                     : kwds                     ? PyDict_GetItemString(kwds, "axis")
                                                : NULL;
    int flattens = (!axis || axis == Py_None) && !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)self);
    return flattens ? base_method(self, name, args, kwds) : call_base(self, name, args, kwds);
}

static PyObject *array_cumsum(PyObject *self, PyObject *args, PyObject *kwds)
{
    return scan_method(self, args, kwds, "cumsum");
}

static PyObject *array_cumprod(PyObject *self, PyObject *args, PyObject *kwds)
{
    return scan_method(self, args, kwds, "cumprod");
}

/* view(): a view that is not a grumpy array leaves grumpy's sight (its
 * buffer export, for one, cannot compute), so self is computed first. */
static PyObject *array_view(PyObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *type = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyType_Check(PyTuple_GET_ITEM(args, i)))
            type = PyTuple_GET_ITEM(args, i);
    if (kwds && !type)
        type = PyDict_GetItemString(kwds, "type");
    if (type && PyType_Check(type) && !PyType_IsSubtype((PyTypeObject *)type, &GpArray_Type) &&
        gp_ensure_computed((PyArrayObject *)self) < 0)
        return NULL;
    return call_base(self, "view", args, kwds);
}

/* a.dot(b): a matrix product like numpy.dot (1-D and 2-D operands). */
static PyObject *array_dot(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) == 1 && (!kwds || PyDict_GET_SIZE(kwds) == 0)) {
        PyObject *b = PyTuple_GET_ITEM(args, 0);
        int na = PyArray_NDIM((PyArrayObject *)self), nb = PyArray_Check(b) ? PyArray_NDIM((PyArrayObject *)b) : -1;
        if (na >= 1 && na <= 2 && nb >= 1 && nb <= 2) {
            PyObject *r = matmul_in_scope(self, b);
            if (r != Py_NotImplemented && r != Py_Ellipsis)
                return r;
            int count = r == Py_NotImplemented;
            Py_DECREF(r);
            if (count)
                gp_count_fallback("dot");
        }
    }
    return base_method(self, "dot", args, kwds);
}

/* x.take(indices, axis=None, out=None, mode='raise'): with indices an
 * array and no out= or mode=, of a 1-D x (axis None or 0) or an n-D x's
 * rows (axis 0), the gather x[indices] is (gp_capture_gather: NumPy's
 * take and subscript give the same C-ordered result); x is computed
 * first, as np.take's is.  Anything else is NumPy's method. */
static PyObject *array_take(PyObject *self, PyObject *args, PyObject *kwds)
{
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    PyObject *axis = na > 1 ? PyTuple_GET_ITEM(args, 1) : NULL;
    if (kwds && PyDict_GET_SIZE(kwds) == 1 && na == 1)
        axis = PyDict_GetItemString(kwds, "axis");
    int nd = PyArray_NDIM((PyArrayObject *)self);
    int axis0 = axis && PyLong_CheckExact(axis) && PyLong_AsLong(axis) == 0;
    PyErr_Clear(); /* (an axis too large for a long: NumPy's method says so) */
    if (gp_capturing() && na >= 1 && na <= 2 && (!kwds || PyDict_GET_SIZE(kwds) == 0 || (na == 1 && axis)) &&
        (axis0 || (nd == 1 && (!axis || axis == Py_None))) && nd >= 1) {
        if (gp_ensure_computed((PyArrayObject *)self) < 0)
            return NULL;
        PyObject *g = gp_capture_gather((PyArrayObject *)self, PyTuple_GET_ITEM(args, 0));
        if (g != Py_NotImplemented)
            return g;
        Py_DECREF(g);
    }
    return base_method(self, "take", args, kwds);
}

/* a.searchsorted(v, side='left', sorter=None): of sorted keys, grumpy's
 * merge (sorted_search.c), as np.searchsorted(a, v) */
static PyObject *array_searchsorted(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (gp_capturing() && !gp_errstate_for_capture()) {
        Py_ssize_t na = PyTuple_GET_SIZE(args);
        PyObject *all = PyTuple_New(na + 1);
        if (!all)
            return NULL;
        PyTuple_SET_ITEM(all, 0, Py_NewRef(self));
        for (Py_ssize_t i = 0; i < na; i++)
            PyTuple_SET_ITEM(all, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
        PyObject *r = gp_sorted_search(all, kwds);
        Py_DECREF(all);
        if (r != Py_NotImplemented)
            return r;
        Py_DECREF(r);
    }
    return base_method(self, "searchsorted", args, kwds);
}

/* a.argmin(axis=None, out=None, *, keepdims=False) and argmax. */
static PyObject *arg_method(PyObject *self, PyObject *args, PyObject *kwds, GpOp op, const char *name)
{
    PyObject *r = argreduce_in_scope(op, self, PySequence_Fast_ITEMS(args), PyTuple_GET_SIZE(args), kwds);
    if (r != Py_NotImplemented && r != Py_Ellipsis)
        return r;
    if (r == Py_NotImplemented)
        gp_count_fallback(name); /* also for arguments NumPy rejects */
    Py_DECREF(r);
    return base_method(self, name, args, kwds);
}

static PyObject *array_argmin(PyObject *self, PyObject *args, PyObject *kwds)
{
    return arg_method(self, args, kwds, GP_OP_ARGMIN, "argmin");
}

static PyObject *array_argmax(PyObject *self, PyObject *args, PyObject *kwds)
{
    return arg_method(self, args, kwds, GP_OP_ARGMAX, "argmax");
}

/* x.sum(), x.mean(), x.prod(), x.max(), x.min(), x.any(), x.all() of a
 * temporary -- (a * b).sum(), where the call holds self's only reference
 * (Py_REFCNT 1: the interpreter's stack) -- NumPy's method, with self's
 * pending node marked for the call (GpNode.output_deferred): the kernel
 * that fuses it into the reduction does not write self's array, which
 * dies when the call returns (DESIGN.md section 5 writes extra outputs for
 * arrays still alive).  The node stays pending, so should the memory be
 * read after all (a C caller that held the only reference), it is
 * computed then.  Methods that read self twice (var, std) are left as
 * they are: they would compute the map twice. */
static int a_temporary(PyObject *self)
{
    PyArrayObject_fields *f = (PyArrayObject_fields *)self;
    if (!(f->flags & NPY_ARRAY_OWNDATA) || f->base) /* a view: its base is alive */
        return 0;
#if PY_VERSION_HEX >= 0x030E0000
    return PyUnstable_Object_IsUniqueReferencedTemporary(self); /* 3.14 borrows locals' references */
#else
    return Py_REFCNT(self) == 1;
#endif
}

/* Whether a call's positional arguments and keyword values hold no array. */
static int holds_no_array(PyObject *args, PyObject *kwds)
{
    if (args && !array_free(args))
        return 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kwds && PyDict_Next(kwds, &pos, &k, &v))
        if (!array_free(v))
            return 0;
    return 1;
}

/* NumPy's method `name` at once on a plain view of self, when self is
 * small and computed and no array is among the arguments (out=, where=:
 * the capture's path).  New reference, NULL with NumPy's exception, or
 * Py_NotImplemented (new reference) for the caller's own path. */
static PyObject *small_method_now(PyObject *self, PyObject *args, PyObject *kwds, const char *name)
{
    if (!small_computed_call(self, NULL) || !holds_no_array(args, kwds))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *v = PyArray_View((PyArrayObject *)self, NULL, &PyArray_Type);
    PyObject *r = v ? call_base(v, name, args, kwds) : NULL;
    Py_XDECREF(v);
    gp_hooks.eager_small++;
    gp_hooks.eager_direct++;
    return r;
}

static PyObject *reduce_method(PyObject *self, PyObject *args, PyObject *kwds, const char *name)
{
    PyObject *now = small_method_now(self, args, kwds, name);
    if (now != Py_NotImplemented)
        return now;
    Py_DECREF(now);
    GpNode *n = output_deferred(a_temporary(self) ? gp_pending_node_of((PyArrayObject *)self) : NULL);
    PyObject *r = call_base(self, name, args, kwds);
    output_restored(n);
    return r;
}

#define REDUCE_METHOD(name)                                                       \
    static PyObject *array_##name(PyObject *self, PyObject *args, PyObject *kwds) \
    {                                                                             \
        return reduce_method(self, args, kwds, #name);                            \
    }
REDUCE_METHOD(sum)
REDUCE_METHOD(mean)
REDUCE_METHOD(prod)
REDUCE_METHOD(max)
REDUCE_METHOD(min)
REDUCE_METHOD(any)
REDUCE_METHOD(all)

/* x.std(), x.var(): reduce_method's NumPy at once for a small computed x,
 * else NumPy's method on x as it is (they read x twice: see a_temporary) */
#define READS_TWICE_METHOD(name)                                                  \
    static PyObject *array_##name(PyObject *self, PyObject *args, PyObject *kwds) \
    {                                                                             \
        PyObject *r = small_method_now(self, args, kwds, #name);                  \
        if (r != Py_NotImplemented)                                               \
            return r;                                                             \
        Py_DECREF(r);                                                             \
        PyObject *was = var_self;                                                 \
        GpNode *had = var_deferred;                                               \
        var_self = self;                                                          \
        var_deferred = NULL;                                                      \
        r = call_base(self, #name, args, kwds);                                   \
        output_restored(var_deferred);                                            \
        var_self = was;                                                           \
        var_deferred = had;                                                       \
        return r;                                                                 \
    }
READS_TWICE_METHOD(std)
READS_TWICE_METHOD(var)

#define FORWARD(name)                                                             \
    static PyObject *array_##name(PyObject *self, PyObject *args, PyObject *kwds) \
    {                                                                             \
        return base_method(self, #name, args, kwds);                              \
    }
/* NumPy's method `name`, which writes self's memory (x.sort(), x.put(...),
 * a fill grumpy does not record): the pending arrays reading that memory
 * are computed first, here, with their warnings -- not in the page fault
 * NumPy's write would take, where no warning can be given (fuzz case
 * 692001582: `v = x / x` then `x.fill(1)` of a bool x lost "invalid value
 * encountered in divide"). */
static PyObject *writes_method(PyObject *self, const char *name, PyObject *args, PyObject *kwds)
{
    if (gp_ensure_computed((PyArrayObject *)self) < 0 ||
        (PyArray_ISWRITEABLE((PyArrayObject *)self) && gp_prepare_for_write(self) < 0))
        return NULL;                          /* (a read-only array: NumPy's ValueError, nothing flushed) */
    return call_base(self, name, args, kwds); /* (their results are None) */
}

#define WRITES_METHOD(name)                                                       \
    static PyObject *array_##name(PyObject *self, PyObject *args, PyObject *kwds) \
    {                                                                             \
        return writes_method(self, #name, args, kwds);                            \
    }
WRITES_METHOD(sort)
WRITES_METHOD(partition)
WRITES_METHOD(put)
WRITES_METHOD(setfield)

/* a.fill(value) with a Python number or a NumPy number or bool scalar: a
 * lazy write of the constant, converted as NumPy's assignment converts it
 * (capture_writes.c scalar_as_numpy_sets_it: its OverflowError, its cast
 * warnings); anything else is NumPy's */
static PyObject *array_fill(PyObject *self, PyObject *args)
{
    PyObject *value;
    if (!PyArg_ParseTuple(args, "O:fill", &value))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)self;
    int number = PyFloat_CheckExact(value) || PyLong_CheckExact(value) || PyBool_Check(value) ||
                 PyArray_IsScalar(value, Number) || PyArray_IsScalar(value, Bool);
    if (number && !PyArray_IsScalar(value, ComplexFloating) && (PyArray_ISFLOAT(a) || PyArray_ISINTEGER(a))) {
        int rc = assign_in_scope(a, value, "fill");
        if (rc < 0)
            return NULL;
        if (rc == 0)
            Py_RETURN_NONE;
    }
    return writes_method(self, "fill", args, NULL);
}

/* a.reshape(...): NumPy's.  A reshape NumPy makes as a view of a pending
 * array stays lazy; one it can only make as a copy reads the memory, so
 * the array is computed first, here, with its warnings, rather than
 * inside a page fault (where none can be given).  NumPy >= 2.1 says which
 * (copy=False raises ValueError when a copy is needed); with an older
 * NumPy, or a copy= of the caller's, the array is computed first.  A
 * C-contiguous array's C-order reshape is always a view. */
static PyObject *array_reshape(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (!kwds && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)self))
        return call_base(self, "reshape", args, NULL);
    PyObject *probe = kwds ? PyDict_Copy(kwds) : PyDict_New();
    int own_copy = kwds ? PyDict_Contains(kwds, gp_hooks.str_copy) : 0;
    if (!probe || own_copy < 0 || (!own_copy && PyDict_SetItem(probe, gp_hooks.str_copy, Py_False) < 0)) {
        Py_XDECREF(probe);
        return NULL;
    }
    PyObject *r = own_copy ? NULL : call_base(self, "reshape", args, probe);
    Py_DECREF(probe);
    if (r || (!own_copy && !PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_TypeError)))
        return r;
    PyErr_Clear();
    return base_method(self, "reshape", args, kwds);
}

/* methods that read the data wholesale: compute first instead of faulting */
FORWARD(tobytes)
FORWARD(tolist)
FORWARD(item)
FORWARD(tofile)

/* Pickling (and copyreg, multiprocessing, joblib) sees a plain ndarray:
 * the computed values under NumPy's own class, loadable where grumpy is
 * not installed. */
static PyObject *array_reduce_ex(PyObject *self, PyObject *args)
{
    PyObject *v = plain_view_of(self);
    if (!v)
        return NULL;
    PyObject *r =
        PyObject_CallMethod(v, "__reduce_ex__", "O", PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : Py_None);
    Py_DECREF(v);
    return r;
}

static PyObject *array_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *v = plain_view_of(self);
    if (!v)
        return NULL;
    PyObject *r = PyObject_CallMethod(v, "__reduce__", NULL);
    Py_DECREF(v);
    return r;
}

static PyMethodDef array_methods[] = {
#define GP_BINOP_METHOD_DEF(slot, name, rname) \
    {name, (PyCFunction)(void (*)(void))direct_##slot, METH_O | METH_COEXIST, "NumPy's ndarray." name "."},
    GP_ELEMENTWISE_BINARY_SLOTS(GP_BINOP_METHOD_DEF) GP_OTHER_BINARY_SLOTS(GP_BINOP_METHOD_DEF)
#undef GP_BINOP_METHOD_DEF
        {"__pow__", (PyCFunction)(void (*)(void))array_pow_method, METH_VARARGS | METH_COEXIST,
         "NumPy's ndarray.__pow__."},
    {"__reduce_ex__", (PyCFunction)(void (*)(void))array_reduce_ex, METH_VARARGS,
     "Pickles as a plain numpy.ndarray (loadable without grumpy)."},
    {"__reduce__", (PyCFunction)(void (*)(void))array_reduce, METH_NOARGS,
     "Pickles as a plain numpy.ndarray (loadable without grumpy)."},
#define REDUCE_METHOD_DEF(name)                                                                              \
    {                                                                                                        \
#name, (PyCFunction)(void (*)(void))array_##name, METH_VARARGS | METH_KEYWORDS,                      \
            "NumPy's ndarray." #name "; of a temporary, its pending values are not written (reduce_method)." \
    }
    REDUCE_METHOD_DEF(sum),
    REDUCE_METHOD_DEF(mean),
    REDUCE_METHOD_DEF(prod),
    REDUCE_METHOD_DEF(max),
    REDUCE_METHOD_DEF(min),
    REDUCE_METHOD_DEF(any),
    REDUCE_METHOD_DEF(all),
    REDUCE_METHOD_DEF(std),
    REDUCE_METHOD_DEF(var),
    {"__array_ufunc__", (PyCFunction)(void (*)(void))array_ufunc, METH_VARARGS | METH_KEYWORDS,
     "Records ufunc calls and reductions lazily (NEP 13); falls back to NumPy."},
    {"__array_function__", (PyCFunction)(void (*)(void))array_function, METH_VARARGS | METH_KEYWORDS,
     "Captures or forwards NumPy functions (NEP 18)."},
    {"astype", (PyCFunction)(void (*)(void))array_astype, METH_VARARGS | METH_KEYWORDS,
     "Lazy astype (see ndarray.astype)."},
    {"copy", (PyCFunction)(void (*)(void))array_copy, METH_VARARGS | METH_KEYWORDS, "Lazy copy (see ndarray.copy)."},
    {"ravel", (PyCFunction)(void (*)(void))array_ravel, METH_VARARGS | METH_KEYWORDS,
     "ndarray.ravel; one that copies computes the array first."},
    {"cumsum", (PyCFunction)(void (*)(void))array_cumsum, METH_VARARGS | METH_KEYWORDS, "See ndarray.cumsum."},
    {"cumprod", (PyCFunction)(void (*)(void))array_cumprod, METH_VARARGS | METH_KEYWORDS, "See ndarray.cumprod."},
    {"flatten", (PyCFunction)(void (*)(void))array_flatten, METH_VARARGS | METH_KEYWORDS,
     "ndarray.flatten, the array computed first."},
    {"argmin", (PyCFunction)(void (*)(void))array_argmin, METH_VARARGS | METH_KEYWORDS,
     "Lazy argmin (see ndarray.argmin)."},
    {"argmax", (PyCFunction)(void (*)(void))array_argmax, METH_VARARGS | METH_KEYWORDS,
     "Lazy argmax (see ndarray.argmax)."},
    {"fill", (PyCFunction)(void (*)(void))array_fill, METH_VARARGS,
     "Lazy fill with a Python number (see ndarray.fill)."},
    {"take", (PyCFunction)(void (*)(void))array_take, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.take; of an index array, a lazy gather."},
    {"searchsorted", (PyCFunction)(void (*)(void))array_searchsorted, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.searchsorted; of sorted keys, one merge."},
    {"dot", (PyCFunction)(void (*)(void))array_dot, METH_VARARGS | METH_KEYWORDS,
     "Matrix product (see ndarray.dot): GEMM/GEMV through OpenBLAS."},
    {"view", (PyCFunction)(void (*)(void))array_view, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.view; a non-grumpy view is computed first."},
    {"reshape", (PyCFunction)(void (*)(void))array_reshape, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.reshape (a copy computes the array first)."},
    {"tobytes", (PyCFunction)(void (*)(void))array_tobytes, METH_VARARGS | METH_KEYWORDS, "See ndarray.tobytes."},
    {"tolist", (PyCFunction)(void (*)(void))array_tolist, METH_VARARGS | METH_KEYWORDS, "See ndarray.tolist."},
    {"item", (PyCFunction)(void (*)(void))array_item, METH_VARARGS | METH_KEYWORDS, "See ndarray.item."},
    {"tofile", (PyCFunction)(void (*)(void))array_tofile, METH_VARARGS | METH_KEYWORDS, "See ndarray.tofile."},
    {"sort", (PyCFunction)(void (*)(void))array_sort, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.sort; the arrays reading it computed first."},
    {"partition", (PyCFunction)(void (*)(void))array_partition, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.partition; the arrays reading it computed first."},
    {"put", (PyCFunction)(void (*)(void))array_put, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.put; the arrays reading it computed first."},
    {"setfield", (PyCFunction)(void (*)(void))array_setfield, METH_VARARGS | METH_KEYWORDS,
     "See ndarray.setfield; the arrays reading it computed first."},
    {NULL, NULL, 0, NULL},
};

/* The attributes that hand out the data pointer (__array_interface__,
 * __array_struct__, ctypes): computed first, in the caller's context, and
 * for a writable array the pending readers of its old values too (the
 * pointer may be written through, as a writable buffer export) -- so code
 * that takes the address never meets a pending buffer in the fault
 * handler.  Then ndarray's own attribute. */
static PyObject *pointer_attr(PyObject *self, void *closure)
{
    const char *name = closure;
    if (gp_ensure_computed((PyArrayObject *)self) < 0)
        return NULL;
    if (PyArray_ISWRITEABLE((PyArrayObject *)self) && gp_prepare_for_write(self) < 0)
        return NULL;
    PyObject *d = PyDict_GetItemString(PyArray_Type.tp_dict, name); /* borrowed */
    if (!d || !Py_TYPE(d)->tp_descr_get) {
        PyErr_Format(PyExc_AttributeError, "numpy.ndarray has no attribute %s", name);
        return NULL;
    }
    return Py_TYPE(d)->tp_descr_get(d, self, (PyObject *)Py_TYPE(self));
}

static PyGetSetDef array_getset[] = {
    {"__array_interface__", pointer_attr, NULL, "See ndarray.__array_interface__; computed first.",
     "__array_interface__"},
    {"__array_struct__", pointer_attr, NULL, "See ndarray.__array_struct__; computed first.", "__array_struct__"},
    {"ctypes", pointer_attr, NULL, "See ndarray.ctypes; computed first.", "ctypes"},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject GpArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "grumpy.ndarray",
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "grumpy.ndarray: a numpy.ndarray whose operations are recorded lazily,\n"
              "fused and compiled.  Shape, dtype and strides are always known; the\n"
              "values are computed when first needed.",
    .tp_methods = array_methods,
    .tp_getset = array_getset,
    .tp_repr = array_repr,
    .tp_str = array_str,
};

int gp_array_type_init(PyObject *module)
{
    GpArray_Type.tp_base = &PyArray_Type;
    GpArray_Type.tp_basicsize = PyArray_Type.tp_basicsize;
    array_as_buffer = *PyArray_Type.tp_as_buffer;
    array_as_buffer.bf_getbuffer = array_getbuffer;
    GpArray_Type.tp_as_buffer = &array_as_buffer;
    array_as_mapping = *PyArray_Type.tp_as_mapping;
    array_as_mapping.mp_ass_subscript = array_ass_subscript;
    array_as_mapping.mp_subscript = array_subscript;
    GpArray_Type.tp_as_mapping = &array_as_mapping;
    array_as_sequence = *PyArray_Type.tp_as_sequence;
    array_as_sequence.sq_item = array_sq_item;
    GpArray_Type.tp_as_sequence = &array_as_sequence;
    array_as_number = *PyArray_Type.tp_as_number;
    array_as_number.nb_int = array_int;
    array_as_number.nb_float = array_float;
    array_as_number.nb_index = array_index;
    array_as_number.nb_bool = array_bool;
#define GP_SET_SLOT(slot, name, rname) array_as_number.slot = array_##slot;
    GP_ELEMENTWISE_BINARY_SLOTS(GP_SET_SLOT)
    GP_OTHER_BINARY_SLOTS(GP_SET_SLOT)
#undef GP_SET_SLOT
    array_as_number.nb_power = array_nb_power;
    GpArray_Type.tp_as_number = &array_as_number;
    numpy_richcompare = PyArray_Type.tp_richcompare;
    GpArray_Type.tp_richcompare = array_richcompare;
    GpArray_Type.tp_hash = PyArray_Type.tp_hash; /* inherited with tp_richcompare only when both are unset */
    if (PyType_Ready(&GpArray_Type) < 0)
        return -1;
    gp_plain_ops_install();
    /* np.ma.MaskedArray takes its base class from data._baseclass when
     * there is one (else type(data)), prints it in its repr ("masked_array"
     * for ndarray, else "masked_" + its name) and views its .data as it:
     * a masked array of a grumpy array is NumPy's masked_array, whose .data
     * is a plain ndarray, as it is without grumpy */
    if (PyDict_SetItemString(GpArray_Type.tp_dict, "_baseclass", (PyObject *)&PyArray_Type) < 0)
        return -1;
    PyType_Modified(&GpArray_Type);
    Py_INCREF(&GpArray_Type);
    if (PyModule_AddObject(module, "ndarray", (PyObject *)&GpArray_Type) < 0) {
        Py_DECREF(&GpArray_Type);
        return -1;
    }
    return 0;
}
