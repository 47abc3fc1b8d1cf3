/* hooks/evaluate.c -- NumPy computing what grumpy recorded: the error
 * state nodes are recorded under, the NumPy evaluator of pending nodes (the
 * path when a kernel cannot be compiled or planned), the replay of nodes
 * whose kernel raised IEEE flags (NumPy's own warnings), and the shadow
 * check (GRUMPY_CHECK).  Everything here runs with the GIL held; the core
 * calls in through function pointers set at module init, never holding
 * the core lock (plan.c lets go of it first).
 */
#include "hooks.h"

#include <sys/mman.h>

#include <math.h>
#include <string.h>

/* ---- NumPy's error state ------------------------------------------------ */

static struct {
    PyObject *var;      /* numpy's extobj context variable */
    PyObject *get_dict; /* _get_extobj_dict(): the current state as a dict */
    PyObject *make;     /* _make_extobj(**modes): a state object */
    PyObject *last;     /* the state object last classified (owned) */
    unsigned last_mask;
    int last_eager;
    PyObject *by_mask[256]; /* owned: a state object per ("warn", "raise") masks, for replays */
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
        gp_record_where = errstate.last_mask ? gp_site_current(GP_NOPS) : 0;
        return errstate.last_eager || gp_site_warns(gp_record_where);
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
    gp_record_where = mask ? gp_site_current(GP_NOPS) : 0;
    return eager || gp_site_warns(gp_record_where);
}

/* The state object with the categories of mask `warn` "warn", those of
 * `raise` "raise", the others "ignore" (GP_FPE_* masks); borrowed or NULL. */
static PyObject *errstate_object(unsigned warn, unsigned raise)
{
    unsigned mask = (warn & 15) | (raise & 15) << 4;
    if (!errstate.by_mask[mask] && errstate.make) {
        PyObject *kw = PyDict_New();
        for (int i = 0; kw && i < 4; i++) {
            PyObject *v = PyUnicode_FromString(raise >> i & 1 ? "raise" : warn >> i & 1 ? "warn" : "ignore");
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

int gp_errstate_init(void)
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
    int locate;   /* NumPy's warnings given at the line that recorded each node (compute_located) */
    int quiet;    /* no warnings, no FloatingPointError: the values only (gp_eval_with_numpy) */
    int store;    /* intermediates the program holds are stored (store_intermediates) */
    GpNode *root; /* the node eval_one computes (stored there, not here) */
    int nheld, held_cap;
    GpNode **held;     /* owned: intermediates to store once every value is computed (PyMem) */
    PyObject **held_v; /* owned: their values */
} Memo;

/* Room in m for one more held intermediate (grown as needed): 1, or 0
 * when memory ran out (that value is then not stored: best effort). */
static int hold_room(Memo *m)
{
    if (m->nheld < m->held_cap)
        return 1;
    int cap = m->held_cap ? 2 * m->held_cap : 16;
    GpNode **h = PyMem_Realloc(m->held, (size_t)cap * sizeof *h);
    if (h)
        m->held = h;
    PyObject **v = h ? PyMem_Realloc(m->held_v, (size_t)cap * sizeof *v) : NULL;
    if (v)
        m->held_v = v;
    if (!h || !v)
        return 0;
    m->held_cap = cap;
    return 1;
}

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
    if (!n->wrap && !gp_leaf_unreadable(n))
        return PyArray_NewFromDescr(&PyArray_Type, descr, n->nd, dims, (npy_intp *)n->strides, n->data, 0, NULL);
    /* np.roll's copy, or of values from before a pending in-place write */
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, descr, n->nd, dims, NULL, NULL, 0, NULL);
    if (r) {
        int64_t strides[GP_MAXDIMS];
        for (int d = 0; d < n->nd; d++)
            strides[d] = PyArray_STRIDE((PyArrayObject *)r, d);
        if (gp_leaf_copy(n, PyArray_DATA((PyArrayObject *)r), strides) != GP_OK)
            Py_SETREF(r, PyErr_NoMemory());
    }
    return r;
}

/* ---- NumPy calls shared with the NumPy back end ------------------------ */

PyObject *gp_numpy_as_dtype(PyObject *v, GpDType t)
{
    PyObject *arr = PyArray_FROM_O(v);
    if (!arr || gp_dtype_from_descr(PyArray_DESCR((PyArrayObject *)arr)) == (int)t)
        return arr;
    PyObject *r = PyArray_CastToType((PyArrayObject *)arr, gp_descr_from_dtype(t), 0);
    Py_DECREF(arr);
    return r;
}

/* x[idx] (GATHER) by NumPy: table an array whose first element is the
 * table's (the 0-d leaf, or the NumPy back end's broadcast of it), index
 * the indices (in range: checked when recorded), length the table's
 * length: np.take over a view of the table.  New reference or NULL. */
static PyObject *numpy_gather(GpDType t, PyObject *table, PyObject *index, PyObject *length)
{
    if (!PyArray_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "grumpy: a gather's table is not an array");
        return NULL;
    }
    PyArrayObject *idx = (PyArrayObject *)PyArray_FROM_O(index);
    if (!idx)
        return NULL;
    npy_intp len = PyArray_PyIntAsIntp(length), stride = (npy_intp)gp_dtype_size(t);
    if (len < 0) {
        Py_DECREF(idx);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "grumpy: a gather's table length is negative");
        return NULL;
    }
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(t), 1, &len, &stride,
                                          PyArray_DATA((PyArrayObject *)table), 0, NULL);
    PyObject *r = view ? PyArray_TakeFrom((PyArrayObject *)view, (PyObject *)idx, 0, NULL, NPY_RAISE) : NULL;
    Py_XDECREF(view);
    Py_DECREF(idx);
    return r;
}

PyObject *gp_numpy_map(GpOp op, GpDType t, PyObject *const *in, int nin)
{
    if (op == GP_OP_CAST)
        return gp_numpy_as_dtype(in[0], t);
    if (op == GP_OP_GATHER)
        return numpy_gather(t, in[0], in[1], in[2]); /* (nin 3: ops.def) */
    PyObject *fn = op == GP_OP_WHERE ? gp_hooks.np_where : gp_hooks.ufunc_of_op[op];
    PyObject *args = PyTuple_New(nin), *res = NULL;
    for (int i = 0; args && i < nin; i++) {
        Py_INCREF(in[i]);
        PyTuple_SET_ITEM(args, i, in[i]);
    }
    if (args)
        res = PyObject_Call(fn, args, NULL);
    Py_XDECREF(args);
    return res;
}

/* ufunc_of_op[op].<name>(x, **kw); kw is consumed. */
static PyObject *ufunc_method(GpOp op, const char *name, PyObject *x, PyObject *kw)
{
    PyObject *fn = kw ? PyObject_GetAttrString(gp_hooks.ufunc_of_op[op], name) : NULL;
    PyObject *args = fn ? PyTuple_Pack(1, x) : NULL;
    PyObject *res = args ? PyObject_Call(fn, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(fn);
    Py_XDECREF(kw);
    return res;
}

PyObject *gp_numpy_reduce(GpOp op, PyObject *x, PyObject *axes, int keepdims)
{
    return ufunc_method(op, "reduce", x,
                        Py_BuildValue("{sOsO}", "axis", axes, "keepdims", keepdims ? Py_True : Py_False));
}

PyObject *gp_numpy_accumulate(GpOp op, PyObject *x, int axis)
{
    return ufunc_method(op, "accumulate", x, Py_BuildValue("{si}", "axis", axis));
}

/* Whether v is an array of shape (nd dims). */
static int has_shape(PyObject *v, int nd, const int64_t *shape)
{
    if (!PyArray_Check(v) || PyArray_NDIM((PyArrayObject *)v) != nd)
        return 0;
    for (int d = 0; d < nd; d++)
        if (PyArray_DIM((PyArrayObject *)v, d) != (npy_intp)shape[d])
            return 0;
    return 1;
}

PyObject *gp_numpy_full(PyObject *v, int nd, const int64_t *shape)
{
    PyObject *src = PyArray_FROM_O(v);
    if (!src || has_shape(src, nd, shape))
        return src;
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < nd; d++)
        dims[d] = (npy_intp)shape[d];
    PyArray_Descr *descr = PyArray_DESCR((PyArrayObject *)src);
    Py_INCREF(descr);
    PyObject *r = PyArray_Empty(nd, dims, descr, 0);
    if (r && PyArray_CopyInto((PyArrayObject *)r, (PyArrayObject *)src) < 0)
        Py_CLEAR(r);
    Py_DECREF(src);
    return r;
}

/* x (stolen), the value of reduction n's input in (in->nd dims), as an
 * array NumPy reduces in the order its iterator visited the recorded
 * array's dims (n's in_order): x itself when its strides give that order,
 * else a copy laid out in it.  NumPy orders a float sum by the layout
 * (pairwise along the innermost dim), and a value computed here can be
 * laid out otherwise than the program's array was: the first half of a
 * split reduction (plan.c reduce_inner_first) is C-ordered where the
 * program's transposed array was not.  NULL (exception set) when out of
 * memory. */
static PyObject *in_reduce_order(const GpNode *n, const GpNode *in, PyObject *x)
{
    if (!x || !n->has_in_order || !PyArray_Check(x) || PyArray_NDIM((PyArrayObject *)x) != in->nd)
        return x;
    PyArrayObject *a = (PyArrayObject *)x;
    int nd = in->nd, order[GP_MAXDIMS], same = 1;
    int64_t shape[GP_MAXDIMS], strides[GP_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        shape[d] = PyArray_DIM(a, d);
        strides[d] = PyArray_STRIDE(a, d);
    }
    int first = gp_iteration_order(nd, shape, strides, order), j = 0;
    for (int i = 0; same && i < nd; i++) {
        int d = n->in_order[i];
        if (shape[d] == 1)
            continue;
        same = order[first + j++] == d;
    }
    if (same)
        return x;
    npy_intp dims[GP_MAXDIMS], st[GP_MAXDIMS], s = (npy_intp)PyArray_ITEMSIZE(a);
    for (int i = nd - 1; i >= 0; i--) {
        int d = n->in_order[i];
        dims[d] = (npy_intp)shape[d];
        st[d] = s;
        s *= dims[d];
    }
    PyArray_Descr *descr = PyArray_DESCR(a);
    Py_INCREF(descr);
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, st, NULL, 0, NULL);
    if (r && PyArray_CopyInto((PyArrayObject *)r, a) < 0)
        Py_CLEAR(r);
    Py_DECREF(x);
    return r;
}

static PyObject *numpy_compute(GpNode *n, Memo *m)
{
    PyObject *in[3] = {NULL, NULL, NULL}, *res = NULL;
    if (n->replay_in) {
        /* a reduction the planner unrolled into a map: NumPy's reduction */
        PyObject *x = in_reduce_order(n, n->replay_in, numpy_value(n->replay_in, m));
        PyObject *axes = x ? axes_of_mask(n->replay_mask, n->replay_in->nd) : NULL;
        res = axes ? gp_numpy_reduce(n->replay_op, x, axes, n->replay_keepdims) : NULL;
        Py_XDECREF(axes);
        Py_XDECREF(x);
        return res;
    }
    for (int i = 0; i < n->nin; i++) {
        if (n->materialized) {
            /* computed while an input was (a fault on its memory, inline):
             * its inputs are gone, its memory holds the value */
            res = leaf_view(n);
            goto done;
        }
        if (!(in[i] = numpy_value(n->in[i], m)))
            goto done;
    }
    if (gp_op_is_arg(n->op)) {
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
        res = gp_numpy_accumulate(n->op, in[0], __builtin_ctzll(n->reduce_mask));
    } else if (gp_op_kind[n->op] == GP_KIND_REDUCE) {
        PyObject *axes = axes_of_mask(n->reduce_mask, n->in[0]->nd);
        in[0] = axes ? in_reduce_order(n, n->in[0], in[0]) : in[0];
        res = axes && in[0] ? gp_numpy_reduce(n->op, in[0], axes, n->keepdims) : NULL;
        Py_XDECREF(axes);
    } else if (n->op == GP_OP_MATMUL && n->product_dot) {
        res = PyObject_CallFunctionObjArgs(gp_hooks.np_dot, in[0], in[1], NULL); /* "... in dot" */
    } else {
        res = gp_numpy_map(n->op, n->dtype, in, n->nin);
    }
done:
    for (int i = 0; i < 3; i++)
        Py_XDECREF(in[i]);
    return res;
}

/* NumPy's error state set to that of masks warn and raise
 * (errstate_object) until errstate_reset(token): a new reference, or NULL
 * (no state to set; no exception). */
static PyObject *errstate_set(unsigned warn, unsigned raise)
{
    PyObject *state = errstate.var ? errstate_object(warn, raise) : NULL;
    PyObject *token = state ? PyContextVar_Set(errstate.var, state) : NULL;
    if (!token)
        PyErr_Clear();
    return token;
}

/* The state before errstate_set(token) back; a pending exception kept. */
static void errstate_reset(PyObject *token)
{
    if (!token)
        return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyContextVar_Reset(errstate.var, token) < 0)
        PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    Py_DECREF(token);
}

PyObject *gp_fpe_ignored_begin(void) { return errstate_set(0, 0); }

void gp_fpe_ignored_end(PyObject *token) { errstate_reset(token); }

/* numpy_compute under the error state of masks warn and raise
 * (errstate_object). */
static PyObject *compute_in_state(GpNode *n, Memo *m, unsigned warn, unsigned raise)
{
    PyObject *token = errstate_set(warn, raise);
    PyErr_Clear();
    PyObject *v = numpy_compute(n, m);
    errstate_reset(token);
    return v;
}

/* The GP_FPE_* bit of NumPy's message "<category> encountered in <name>"
 * (its _error_handler's text, the same for "warn" and "raise"), or 0. */
/* NumPy's words for the GP_FPE_* categories, bit i's at i. */
static const char *const fpe_category[4] = {"divide by zero", "overflow", "underflow", "invalid value"};

static unsigned fpe_bit_of_message(PyObject *msg)
{
    const char *text = PyUnicode_AsUTF8(msg);
    for (int i = 0; text && i < 4; i++) {
        size_t len = strlen(fpe_category[i]);
        if (strncmp(text, fpe_category[i], len) == 0 && text[len] == ' ')
            return 1u << i;
    }
    PyErr_Clear();
    return 0;
}

/* A RuntimeWarning with text msg at the line of site (0: the running
 * frame's).  0, or -1 with an exception (a filter made it an error). */
static int site_warn(int site, PyObject *msg)
{
    if (site > 0)
        return gp_site_warn(site, PyExc_RuntimeWarning, msg);
    const char *text = PyUnicode_AsUTF8(msg);
    return text ? PyErr_WarnEx(PyExc_RuntimeWarning, text, 1) : -1;
}

/* The operations (GpNode.serial) whose warnings were given, and which
 * categories (GP_FPE_*), the last of those that share a slot: an older
 * one evicted may warn again.  Nodes of one operation share its serial (a
 * view's copy of its producer; the cast of a reduction's dtype=, whose
 * warnings NumPy gives as the reduction's).  GIL held. */
static struct {
    uint64_t serial;
    unsigned given;
} warned[4096];

/* The categories of n's error state among want not yet given for its
 * operation (all of them, for an operation not in the table). */
static unsigned serial_warnings_left(uint64_t serial, unsigned watched, unsigned want)
{
    if (warned[serial % 4096].serial != serial) {
        warned[serial % 4096].serial = serial;
        warned[serial % 4096].given = 0;
    }
    return watched & want & 15 & ~warned[serial % 4096].given;
}

static unsigned warnings_left(const GpNode *n, unsigned want)
{
    return serial_warnings_left(n->serial, n->errstate, want);
}

/* Marks categories given for an operation (after warnings_left).  Only
 * those given: the same values computed again raise the same flags, and
 * another node of the operation (a reduction's cast) may raise others. */
static void serial_warnings_given(uint64_t serial, unsigned bits)
{
    if (warned[serial % 4096].serial == serial)
        warned[serial % 4096].given |= bits;
}

static void warnings_given(const GpNode *n, unsigned bits) { serial_warnings_given(n->serial, bits); }

/* compute_located's work: n computed with its categories in mask ("warn"
 * ones) given as NumPy's warnings at its recorded line, and marked given
 * (warnings_given: those NumPy raised; all of mask where NumPy gave them
 * itself). */
static PyObject *compute_warning(GpNode *n, Memo *m, unsigned mask)
{
    /* a reduction's cast: NumPy's message for the reduction, so caught
     * and reworded wherever it is given */
    int reword = n->op == GP_OP_CAST && n->cast_for_reduce;
    int locate = ((m->locate && n->where > 0) || reword) && mask;
    for (;;) {
        /* NumPy gives them, those it raises: marked first, as below, and
         * unmarked should the evaluation fail otherwise than by a warning
         * a filter made an error (then none was given) */
        unsigned slot = n->serial % 4096, had = warned[slot].given;
        if (!locate)
            warnings_given(n, mask);
        PyObject *v = compute_in_state(n, m, locate ? 0 : mask, locate ? mask : 0);
        if (!v && !locate && mask && warned[slot].serial == n->serial && !PyErr_ExceptionMatches(PyExc_Warning) &&
            !PyErr_ExceptionMatches(PyExc_FloatingPointError))
            warned[slot].given = had;
        if (v || !locate || !PyErr_ExceptionMatches(PyExc_FloatingPointError))
            return v;
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        PyObject *msg = ev ? PyObject_Str(ev) : NULL;
        unsigned bit = msg ? fpe_bit_of_message(msg) : 0;
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        if (!(bit & mask)) { /* not a category of ours: NumPy's own way */
            Py_XDECREF(msg);
            PyErr_Clear();
            locate = 0;
            continue;
        }
        if (reword)
            Py_SETREF(msg, PyUnicode_Replace(msg, gp_hooks.str_in_cast, gp_hooks.str_in_reduce, 1));
        /* marked given first: the warning runs Python code (filters,
         * showwarning), and with it pending calls that give queued
         * warnings (give_later), this operation's among them */
        warnings_given(n, bit);
        int rc = !msg ? -1 : site_warn(n->where, msg);
        Py_XDECREF(msg);
        if (rc < 0)
            return NULL;
        /* read again: pending calls run by the warning may have given
         * this operation's other categories (give_later) */
        mask = warnings_left(n, mask & ~bit);
        locate = mask != 0;
    }
}

/* n computed by NumPy under its recorded error state.  With m->locate and
 * a recorded frame (GpNode.where), its "warn" categories are "raise"
 * instead: each FloatingPointError NumPy raises becomes the warning NumPy
 * would have given, same category and text, at the line that recorded n
 * (gp_site_warn), and n is computed again without that category -- so
 * NumPy's warnings come in NumPy's order (divide, overflow, underflow,
 * invalid) where NumPy gives them, not at the line that reads the value.
 * New reference, or NULL with an exception (a warnings filter "error"
 * makes one).  An operation's warnings are given once (the warned table:
 * a node fused into two kernels and stored by neither, a view's copy of
 * its producer).  A reduction's dtype= cast is computed first: its
 * warnings and the reduction's are one operation's, as in NumPy. */
static PyObject *compute_located(GpNode *n, Memo *m)
{
    GpNode *cast = gp_op_kind[n->op] == GP_KIND_REDUCE ? n->in[0] : NULL;
    if (cast && cast->cast_for_reduce && !cast->materialized) {
        /* the reduction's cast first (into the memo, as the reduction would
         * compute it): the warnings of the two are one operation's, and
         * NumPy's cast inside the reduction raises first */
        PyObject *c = numpy_value(cast, m);
        if (!c)
            return NULL;
        Py_DECREF(c);
    }
    return compute_warning(n, m, m->quiet ? 0 : warnings_left(n, 15));
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
    PyObject *v = compute_located(n, m);
    if (v && gp_op_kind[n->op] == GP_KIND_MAP && !has_shape(v, n->nd, n->shape))
        /* a map of constants only (np.copyto(x, 0.5)) is a NumPy scalar,
         * and one of an input broadcast only by the node (np.copyto(x, m)
         * of m = x.max(keepdims=True), a (1, 1) value): the node's value
         * has its shape, which a reduction or scan of it needs */
        Py_SETREF(v, gp_numpy_full(v, n->nd, n->shape));
    if (v && m->store && n != m->root && hold_room(m)) {
        /* stored after the evaluation (store_intermediates): storing marks
         * n computed and lets its inputs go, and a value in the memo may
         * be a view of their memory (a cast to the same dtype) */
        gp_lock();
        int own = gp_node_is_held(n);
        if (own)
            gp_node_incref(n);
        gp_unlock();
        if (own) {
            Py_INCREF(v);
            m->held[m->nheld] = n;
            m->held_v[m->nheld++] = v;
        }
    }
    if (v && m->n < 256) {
        m->node[m->n] = n;
        m->value[m->n++] = v;
        Py_INCREF(v);
    }
    return v;
}

static PyObject *deferred_type, *deferred_value, *deferred_tb;

/* ---- warnings found without Python (gp_fpe_queue) ---------------------- */

/* How NumPy names the operation in "<category> encountered in <name>". */
enum { NAME_UFUNC, NAME_CAST, NAME_REDUCE, NAME_ACCUMULATE };

typedef struct {
    uint64_t serial; /* the operation (GpNode.serial): its warnings are given once */
    unsigned errstate, bits;
    int where;
    GpOp op;
    int name;
} Later;

#define LATER_MAX 64
/* The queue: entries and n under the core lock (n also read atomically to
 * skip an empty queue); scheduled (atomic): a pending call is asked for. */
static struct {
    Later e[LATER_MAX];
    int n;
    int scheduled;
} later;

static int give_later(void);

/* The pending call: the queued warnings given on the main thread, right
 * after the statement whose C code faulted; one a filter made an error is
 * raised there, as CPython raises a signal handler's exception. */
static int later_call(void *unused)
{
    (void)unused;
    __atomic_store_n(&later.scheduled, 0, __ATOMIC_RELEASE);
    return give_later();
}

/* Asks for the pending call unless one is asked for already. */
static void schedule_later(void)
{
    if (!__atomic_exchange_n(&later.scheduled, 1, __ATOMIC_ACQ_REL) && Py_AddPendingCall(later_call, NULL) < 0)
        __atomic_store_n(&later.scheduled, 0, __ATOMIC_RELEASE); /* given at the next gp_raise_deferred */
}

/* > 0 while gp_fpe_replay runs (GIL held): its warnings are counted as the
 * replay's (gp_site_replay_end), so queued ones wait until it ends. */
static int replaying;

void gp_fpe_queue(const GpNode *x, unsigned bits)
{
    GP_EXPECT_LOCKED();
    if (later.n == LATER_MAX || x->where <= 0) {
        /* (no recorded line: a warning given later would name whatever
         * frame runs then) */
        gp_stats.fpe_unreported++;
        return;
    }
    int reduce = x->replay_in || gp_op_kind[x->op] == GP_KIND_REDUCE || (x->op == GP_OP_CAST && x->cast_for_reduce);
    Later *e = &later.e[later.n];
    e->serial = x->serial;
    e->errstate = x->errstate;
    e->bits = bits;
    e->where = x->where;
    e->op = x->op;
    e->name = reduce                              ? NAME_REDUCE
              : gp_op_kind[x->op] == GP_KIND_SCAN ? NAME_ACCUMULATE
              : x->op == GP_OP_CAST               ? NAME_CAST
                                                  : NAME_UFUNC;
    __atomic_store_n(&later.n, later.n + 1, __ATOMIC_RELEASE);
    schedule_later();
}

/* The queued warnings given, in the order queued (GIL held).  They wait
 * while this thread holds the core lock, inside the shadow check's
 * catch_warnings block and inside a replay (given when it ends).  0, or
 * -1 with an exception (a filter made one an error; the rest are
 * dropped). */
static int give_later(void)
{
    if (!__atomic_load_n(&later.n, __ATOMIC_ACQUIRE) || gp_lock_held() || gp_check_running() || replaying)
        return 0;
    Later e[LATER_MAX];
    gp_lock();
    int n = later.n;
    memcpy(e, later.e, (size_t)n * sizeof *e);
    __atomic_store_n(&later.n, 0, __ATOMIC_RELEASE);
    gp_unlock();
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        unsigned mask = serial_warnings_left(e[i].serial, e[i].errstate, e[i].bits);
        serial_warnings_given(e[i].serial, mask);
        PyObject *ufunc = e[i].name == NAME_UFUNC ? gp_hooks.ufunc_of_op[e[i].op] : NULL;
        PyObject *name = !mask                          ? NULL
                         : ufunc                        ? PyObject_GetAttr(ufunc, gp_hooks.str_name)
                         : e[i].name == NAME_REDUCE     ? PyUnicode_FromString("reduce")
                         : e[i].name == NAME_ACCUMULATE ? PyUnicode_FromString("accumulate")
                         : e[i].name == NAME_CAST       ? PyUnicode_FromString("cast")
                                                        : NULL;
        if (mask && !name) {
            PyErr_Clear();
            continue;
        }
        for (int k = 0; k < 4 && rc == 0; k++) {
            if (!(mask >> k & 1))
                continue;
            PyObject *msg = PyUnicode_FromFormat("%s encountered in %U", fpe_category[k], name);
            rc = !msg ? -1 : site_warn(e[i].where, msg);
            Py_XDECREF(msg);
        }
        Py_XDECREF(name);
    }
    return rc;
}

int gp_raise_deferred(void)
{
    if (give_later() < 0) {
        if (!deferred_type)
            return -1; /* its exception set */
        PyErr_Clear(); /* the older one first */
    }
    if (!deferred_type)
        return 0;
    PyErr_Restore(deferred_type, deferred_value, deferred_tb);
    deferred_type = deferred_value = deferred_tb = NULL;
    return -1;
}

/* The end of a warning callback from the core (fpe_replay, fpe_direct):
 * an exception it raised (a warnings filter "error") kept for the next
 * gp_materialize_or_raise, the caller's exception et/ev/tb restored, the
 * GIL taken at its start (g) released.  Returns rc. */
static int host_call_end(int rc, PyObject *et, PyObject *ev, PyObject *tb, PyGILState_STATE g)
{
    if (rc < 0 && !deferred_type)
        PyErr_Fetch(&deferred_type, &deferred_value, &deferred_tb);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
    return rc;
}

/* GpHostCallbacks.fpe_replay: a kernel over nodes raised IEEE exceptions their error
 * states watch.  NumPy computes the nodes again, in order, each under its
 * recorded state: the warnings are NumPy's own, for the same operations,
 * at the lines that recorded them (compute_located);
 * the values are dropped (the kernel's stand).  A warning turned into an
 * exception (warnings filter "error") is kept and raised by the next
 * gp_materialize_or_raise. */
int gp_fpe_replay(GpNode *const *nodes, int n, GpNode *const *stored, int nstored, unsigned flags)
{
    (void)flags;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    Memo *m = PyMem_Calloc(1, sizeof *m);
    int rc = 0;
    if (m)
        m->locate = 1;
    for (int i = 0; m && i < nstored && rc == 0; i++) {
        /* an in-place output the kernel computed over its own inputs: its
         * values are where the kernel wrote them */
        GpNode *o = stored[i];
        npy_intp dims[GP_MAXDIMS];
        for (int d = 0; d < o->nd; d++)
            dims[d] = (npy_intp)o->shape[d];
        PyObject *v = PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(o->dtype), o->nd, dims,
                                           (npy_intp *)o->out_strides, o->out_data, 0, NULL);
        if (!v || m->n >= 256) {
            Py_XDECREF(v);
            rc = -1;
            break;
        }
        m->node[m->n] = o;
        m->value[m->n++] = v;
    }
    int64_t begin = gp_site_replay_begin();
    replaying++;
    for (int i = 0; m && i < n && rc == 0; i++) {
        PyObject *v = numpy_value(nodes[i], m);
        if (!v)
            rc = -1;
        Py_XDECREF(v);
    }
    if (m && rc == 0)
        gp_site_replay_end(begin, nodes, n);
    if (--replaying == 0 && __atomic_load_n(&later.n, __ATOMIC_ACQUIRE))
        schedule_later(); /* the warnings that waited for the replay */
    if (m) {
        for (int i = 0; i < m->n; i++)
            Py_DECREF(m->value[i]);
        PyMem_Free(m);
    }
    return host_call_end(rc, et, ev, tb, g);
}

/* GpHostCallbacks.fpe_direct: NumPy's warnings for the categories in
 * flags that n's error state watches, as NumPy's ufunc loop gives them
 * after raising those flags: "<category> encountered in <ufunc name>",
 * one per category in NumPy's order (divide, overflow, underflow,
 * invalid), at the line that recorded n.  Once per operation, as
 * compute_located. */
int gp_fpe_direct(GpNode *n, unsigned flags)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    unsigned mask = warnings_left(n, flags);
    warnings_given(n, mask);
    PyObject *ufunc = gp_hooks.ufunc_of_op[n->op];
    PyObject *name = mask && ufunc ? PyObject_GetAttr(ufunc, gp_hooks.str_name) : NULL;
    int rc = 0;
    for (int i = 0; name && i < 4 && rc == 0; i++) {
        if (!(mask >> i & 1))
            continue;
        PyObject *msg = PyUnicode_FromFormat("%s encountered in %U", fpe_category[i], name);
        rc = !msg ? -1 : site_warn(n->where, msg);
        Py_XDECREF(msg);
    }
    Py_XDECREF(name);
    return host_call_end(rc, et, ev, tb, g);
}

/* v cast and broadcast into a new C-ordered array of n's dtype and shape. */
static PyObject *value_as_node_array(GpNode *n, PyObject *v)
{
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        dims[d] = n->shape[d];
    PyObject *arr =
        PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(n->dtype), n->nd, dims, NULL, NULL, 0, NULL);
    PyObject *vv = arr ? PyArray_FROM_O(v) : NULL;
    if (!vv || PyArray_CopyInto((PyArrayObject *)arr, (PyArrayObject *)vv) < 0)
        Py_CLEAR(arr);
    Py_XDECREF(vv);
    return arr;
}

/* NumPy's value v of n, cast and broadcast into a private C-ordered array
 * (new reference, or NULL with an exception); one already of n's dtype and
 * shape, C-ordered and aligned, and owning its memory (NumPy's new result:
 * not a view of an input, nor of n's own buffer), as it is: a second copy
 * would fault in fresh pages. */
static PyObject *private_values(GpNode *n, PyObject *v)
{
    if (PyArray_CheckExact(v) && has_shape(v, n->nd, n->shape) &&
        PyArray_CHKFLAGS((PyArrayObject *)v, NPY_ARRAY_OWNDATA) &&
        gp_dtype_from_descr(PyArray_DESCR((PyArrayObject *)v)) == (int)n->dtype &&
        PyArray_ISCARRAY_RO((PyArrayObject *)v) && PyArray_ISNOTSWAPPED((PyArrayObject *)v)) {
        Py_INCREF(v);
        return v;
    }
    return value_as_node_array(n, v);
}

/* The intermediates the evaluator computed on the way to its roots
 * (Memo.held), stored when the program still holds their arrays, as a
 * kernel writes extra outputs (DESIGN.md section 5): computed again later
 * -- by a kernel, with libmvec's transcendentals -- they could differ from
 * the values the roots were computed from (np.cos(x) held as c,
 * (2 * c).sum(-1) left to NumPy by a failed compile, then c's own kernel:
 * 3724 of 6000 row sums differed from c's).  Best effort: a store that
 * fails leaves a node pending.  Once every value is computed: a store
 * lets the node's inputs go, and a value may be a view of their memory
 * (Black-Scholes under fault injection printed a negative mean call when
 * the casts of its inputs were stored as they were computed).  GIL held,
 * core lock not. */
static void store_intermediates(Memo *m)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    /* every private copy first: a store lets its node's inputs go, and
     * another held value may be a view of their memory (t = L.copy();
     * u = t.copy(): the same-dtype casts hand back L's view) */
    PyObject **src = m->nheld ? PyMem_Calloc((size_t)m->nheld, sizeof *src) : NULL;
    for (int i = 0; src && i < m->nheld; i++) {
        GpNode *n = m->held[i];
        gp_lock();
        int own = gp_node_is_held(n);
        gp_unlock();
        src[i] = own ? private_values(n, m->held_v[i]) : NULL;
        PyErr_Clear();
        Py_CLEAR(m->held_v[i]);
    }
    for (int i = 0; src && i < m->nheld; i++) {
        GpNode *n = m->held[i];
        if (!src[i])
            continue;
        gp_lock();
        if (!n->materialized) {
            GpStatus st = gp_node_prepare_store(n);
            if (st == GP_OK)
                st = gp_node_store(n, PyArray_DATA((PyArrayObject *)src[i]));
            if (st != GP_OK)
                gp_node_abandon_store(n);
        }
        gp_unlock();
    }
    for (int i = 0; i < m->nheld; i++) {
        if (src)
            Py_XDECREF(src[i]);
        else
            Py_CLEAR(m->held_v[i]); /* no memory for the copies' table: nothing is stored */
    }
    PyMem_Free(src);
    gp_lock();
    for (int i = 0; i < m->nheld; i++)
        gp_node_decref(m->held[i]);
    gp_unlock();
    PyMem_Free(m->held);
    PyMem_Free(m->held_v);
    m->held = NULL;
    m->held_v = NULL;
    m->nheld = m->held_cap = 0;
    PyErr_Restore(et, ev, tb);
}

/* Node n computed by NumPy into its result memory, with memo m (shared
 * by the nodes of one gp_eval_with_numpy call).  GIL held, core lock not. */
static GpStatus eval_one(GpNode *n, Memo *m)
{
    GpStatus st = GP_EJIT;
    /* the pending writers of memory it reads first (no fault while NumPy
     * reads it); an in-place write reads the old values: opened first */
    gp_lock();
    int have_buffer = gp_node_inputs_ready(n) == GP_OK && !n->materialized && gp_node_prepare_store(n) == GP_OK;
    gp_unlock();
    m->root = n;
    PyObject *v = have_buffer ? numpy_value(n, m) : NULL;
    PyObject *src = v ? private_values(n, v) : NULL;
    gp_lock();
    if (n->materialized)
        st = GP_OK;
    else if (src)
        st = gp_node_store(n, PyArray_DATA((PyArrayObject *)src)); /* no NumPy call under the lock */
    if (st != GP_OK)
        gp_node_abandon_store(n);
    gp_unlock();
    Py_XDECREF(src);
    Py_XDECREF(v);
    return st;
}

/* nodes[0..count) in order with one memo (quiet: values only). */
static GpStatus eval_in_order(GpNode *const *nodes, int count, int quiet)
{
    Memo *m = PyMem_Calloc(1, sizeof *m);
    if (!m)
        return GP_ENOMEM;
    m->locate = 1;
    m->quiet = quiet;
    m->store = 1;
    GpStatus st = GP_OK;
    for (int i = 0; i < count && st == GP_OK; i++)
        if (!nodes[i]->materialized) {
            if (!quiet)
                gp_explain_plan_failure(nodes[i]);
            st = eval_one(nodes[i], m);
        }
    store_intermediates(m);
    for (int i = 0; i < m->n; i++)
        Py_DECREF(m->value[i]);
    PyMem_Free(m);
    return st;
}

GpStatus gp_eval_with_numpy(GpNode *const *nodes, int count)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    GpStatus st = eval_in_order(nodes, count, 0);
    if (st != GP_OK && PyErr_Occurred() &&
        (PyErr_ExceptionMatches(PyExc_Warning) || PyErr_ExceptionMatches(PyExc_FloatingPointError))) {
        /* NumPy's own exception (a warnings filter "error", np.errstate
         * "raise"): as after a kernel's replay (gp_fpe_replay), the values
         * stand -- computed again without warnings -- and the exception is
         * raised where a value is next asked for (gp_raise_deferred) */
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        if (!deferred_type) {
            deferred_type = t2;
            deferred_value = v2;
            deferred_tb = tb2;
        } else {
            Py_XDECREF(t2);
            Py_XDECREF(v2);
            Py_XDECREF(tb2);
        }
        st = eval_in_order(nodes, count, 1);
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

static double check_fraction; /* 0: off; 1: every kernel */
static uint64_t check_rng = 0x9e3779b97f4a7c15ull;

#define SHADOW_MAX 16

typedef struct {
    int n;
    GpNode *node[SHADOW_MAX];    /* owned: the root, then live intermediates
                                      (arrays the program holds: extra outputs) */
    PyObject *value[SHADOW_MAX]; /* NumPy's value of each, C-ordered, its dtype and shape */
    PyObject *scale;             /* root's shape, float64: per element the largest |value| of the
                                    fused computation's intermediates (intermediate_scale), or NULL */
    char dag[1024];              /* the pending subgraph, as text */
    unsigned unspecified;        /* bit i: an out-of-range float-to-integer cast feeds node[i] */
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

static __thread int checking; /* this thread's check_begin is evaluating NumPy's value */

static void count_skipped(void)
{
    gp_lock();
    gp_stats.check_skipped++;
    gp_unlock();
}

/* Whether src (a float array or scalar) has an element whose cast to the
 * integer dtype t has no defined value: NaN, an infinity, or a value whose
 * truncation t cannot hold (C11 6.3.1.4).  NumPy warns "invalid value
 * encountered in cast" for these and its own result depends on the loop it
 * picks: uint32 of -3e9 is 2147483648 in its contiguous SIMD loop and
 * 1294967296 in its strided one.  -1 with an exception on failure. */
static int cast_out_of_range(PyObject *src, GpDType t)
{
    PyObject *d = PyArray_FROMANY(src, NPY_DOUBLE, 0, 0, NPY_ARRAY_CARRAY_RO | NPY_ARRAY_FORCECAST);
    if (!d)
        return -1;
    int bits = 8 * (int)gp_dtype_size(t), is_signed = gp_dtype_is_signed(t);
    double hi = ldexp(1.0, is_signed ? bits - 1 : bits), lo = is_signed ? -hi - 1.0 : -1.0;
    const double *x = PyArray_DATA((PyArrayObject *)d);
    npy_intp count = PyArray_SIZE((PyArrayObject *)d);
    int out = 0;
    for (npy_intp i = 0; i < count && !out; i++)
        out = !(x[i] > lo && x[i] < hi); /* NaN too */
    Py_DECREF(d);
    return out;
}

/* The float-to-integer casts among m's nodes that are out of range for
 * their input's NumPy value (cast_out_of_range), at most cap: how many. */
static int unspecified_casts(Memo *m, GpNode **bad, int cap)
{
    int nbad = 0;
    for (int i = 0; i < m->n && nbad < cap; i++) {
        GpNode *x = m->node[i];
        if (x->op != GP_OP_CAST || !(gp_dtype_is_signed(x->dtype) || gp_dtype_is_unsigned(x->dtype)) ||
            !gp_dtype_is_float(x->in[0]->dtype))
            continue;
        PyObject *src = numpy_value(x->in[0], m);
        int r = src ? cast_out_of_range(src, x->dtype) : -1;
        Py_XDECREF(src);
        if (r > 0)
            bad[nbad++] = x;
        else if (r < 0)
            PyErr_Clear(); /* unknown: the values are compared as usual */
    }
    return nbad;
}

/* Whether x is one of bad or computed from one (through pending inputs;
 * *budget bounds the walk, a shared subgraph may be seen twice). */
static int fed_by(const GpNode *x, GpNode *const *bad, int nbad, int *budget)
{
    if (!x || x->materialized || --*budget < 0)
        return 0;
    for (int i = 0; i < nbad; i++)
        if (x == bad[i])
            return 1;
    for (int i = 0; i < x->nin; i++)
        if (fed_by(x->in[i], bad, nbad, budget))
            return 1;
    return 0;
}

/* Per element of n's shape, the largest finite magnitude among the NumPy
 * values of the memo's float nodes that broadcast to it (the fused map's
 * intermediates); new float64 C-ordered array, or NULL (no exception).
 * The contract bounds each operation's error (a few ULP of its result), so
 * a sum that cancels may differ from NumPy's by a few ULP of its operands,
 * not of its own tiny result: log(tan(x))*a + b at -1.1e-16 against 0
 * (scipy.stats' tests at every size). */
static PyObject *intermediate_scale(GpNode *n, Memo *m)
{
    if (!gp_dtype_is_float(n->dtype) || gp_op_kind[n->op] != GP_KIND_MAP)
        return NULL;
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < n->nd; d++)
        dims[d] = n->shape[d];
    PyArrayObject *acc = (PyArrayObject *)PyArray_ZEROS(n->nd, dims, NPY_DOUBLE, 0);
    if (!acc)
        goto fail;
    npy_intp count = PyArray_SIZE(acc);
    double *a = PyArray_DATA(acc);
    for (int i = 0; i < m->n; i++) {
        GpNode *x = m->node[i];
        if (!gp_dtype_is_float(x->dtype) || x->nd > n->nd)
            continue;
        PyArrayObject *v = (PyArrayObject *)PyArray_FROMANY(m->value[i], NPY_DOUBLE, 0, 0, NPY_ARRAY_FORCECAST);
        PyArrayObject *full = v ? (PyArrayObject *)PyArray_NewLikeArray(acc, NPY_CORDER, NULL, 0) : NULL;
        if (full && PyArray_CopyInto(full, v) == 0) { /* broadcasts, or fails: skipped */
            const double *f = PyArray_DATA(full);
            for (npy_intp k = 0; k < count; k++)
                if (isfinite(f[k]) && fabs(f[k]) > a[k])
                    a[k] = fabs(f[k]);
        }
        PyErr_Clear();
        Py_XDECREF(full);
        Py_XDECREF(v);
    }
    return (PyObject *)acc;
fail:
    PyErr_Clear();
    return NULL;
}

void *gp_check_begin(GpNode *n)
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
    if (n->out_view || (n->buf && gp_node_reads_buffer(n, n->buf, &budget)) || gp_node_reads_buffer(n, NULL, &budget)) {
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
        sh->scale = intermediate_scale(n, m);
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
        GpNode *bad[16];
        int nbad = unspecified_casts(m, bad, 16);
        gp_lock();
        for (int i = 0; i < sh->n && nbad; i++) {
            int walk = 4096;
            if (fed_by(sh->node[i], bad, nbad, &walk))
                sh->unspecified |= 1u << i;
        }
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
 * dtype t, count elements): its index, or -1 if none.  A float element may
 * differ by 8 ULP of its value plus 8 ULP of inter[i] (its computation's
 * largest intermediate, intermediate_scale; NULL: none), plus r of the
 * array's largest magnitude. */
static int64_t contract_violation(const char *got, const char *want, const double *inter, int64_t count, GpDType t,
                                  double *err)
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
                e = fabs(g - w) > 8 * eps * (fabs(w) + (inter ? inter[i] : 0.0)) + r * scale ? fabs(g - w) : 0.0;
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
 * in n's memory and reports it.  A mismatch where unspecified (an
 * out-of-range float-to-integer cast feeds n: no value is NumPy's) is only
 * counted, check_unspecified, and n's values stand.  GIL held, core lock
 * not. */
static void check_one(GpNode *n, PyArrayObject *want, PyObject *scale, const char *dag, int unspecified)
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
    int64_t i =
        contract_violation(PyArray_DATA((PyArrayObject *)got), PyArray_DATA(want),
                           scale ? PyArray_DATA((PyArrayObject *)scale) : NULL, gp_node_size(n), n->dtype, &err);
    gp_lock();
    gp_stats.checks++;
    if (i >= 0 && unspecified) {
        gp_stats.check_unspecified++;
        i = -1;
    }
    if (i >= 0) {
        gp_stats.check_mismatches++;
        /* NumPy's values go in: the program continues with them */
        gp_buffer_open_for_write(n->buf);
        gp_copy_strided(n->data, n->strides, n->nd, n->shape, PyArray_DATA(want), gp_dtype_size(n->dtype));
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

void gp_check_end(GpNode *root, void *opaque, int compare)
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
            check_one(x, (PyArrayObject *)sh->value[i], i == 0 ? sh->scale : NULL, sh->dag,
                      (int)(sh->unspecified >> i & 1));
        PyErr_Clear();
        Py_DECREF(sh->value[i]);
    }
    gp_lock();
    for (int i = 0; i < sh->n; i++)
        gp_node_decref(sh->node[i]);
    gp_unlock();
    Py_XDECREF(sh->scale);
    PyMem_Free(sh);
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
}

int gp_check_configure(const char *value)
{
    if (!value || !*value)
        return 0;
    char *end;
    double f = strtod(value, &end);
    if (*end || !(f >= 0.0 && f <= 1.0)) {
        PyErr_Format(PyExc_ValueError, "GRUMPY_CHECK=%s: expected 0, 1 or a fraction of kernels in (0, 1)", value);
        return -1;
    }
    check_fraction = f;
    gp_config.shadow_check = f > 0.0;
    return 0;
}

int gp_check_running(void) { return checking; }
