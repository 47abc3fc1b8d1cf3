/* hooks/backend_numpy.c -- the NumPy back end (core/backend.h), selected
 * with GRUMPY_BACKEND=numpy.
 *
 * The second implementation of the back-end interface, after the CPU one:
 * it runs the planner's fused programs by interpreting them with NumPy's
 * own ufuncs over views of the kernel arguments, so everything above the
 * seam (capture, the DAG, planning, staging, the page guard, FP-flag
 * replay) is exercised exactly as with compiled kernels, and the whole test
 * suite passing on it shows that the seam carries everything a back end
 * needs.  It is for testing: each instruction makes a full temporary.
 *
 * Per launch (GP_LAUNCH_* of backend.h), over the iteration space
 * args->shape[0..nd) with the innermost dim last:
 *   1. every instruction in order: LEAF a strided view of its operand, CONST
 *      a NumPy scalar of its dtype, a map op its ufunc (np.where, casts by
 *      PyArray_CastToType), a scan op ufunc.accumulate along the innermost
 *      dim -- all under np.errstate(all="call") with a callback that
 *      collects the IEEE flags NumPy's loops raise (take_fp_flags);
 *   2. every output slot written from its instruction's value (all values
 *      exist before the first write, so an in-place output that is also
 *      read is read before it is written); an accumulating instruction
 *      writes identity op reduce(value) over its output's zero-stride dims;
 *   3. REDUCE / ARGREDUCE: ufunc.reduce (argmin / argmax) of the root
 *      value along the innermost dim, the identity combined in front as the
 *      CPU runtime stores it, copied to out.
 *
 * Threads: called with the core lock held, normally by a thread that holds
 * the GIL too (captured calls, element reads, arrays dropped).  A thread
 * without the GIL (C code reading a pending array with the GIL released,
 * through the fault handler) runs the CPU back end's kernel instead:
 * waiting for the GIL while holding the core lock can deadlock with the
 * thread that holds the GIL.  Known limit: NumPy lets go of the GIL inside
 * long loops, so another Python thread can take it and then wait for the
 * core lock this launch holds, and the launch then waits for the GIL:
 * the NumPy back end is for single-threaded Python (the test suite's
 * threaded tests run on the CPU back end).  A Python exception inside is
 * cleared and the launch reports GP_EUNSUPPORTED (the planner then hands
 * the root to the NumPy evaluator, as for a failed compile).
 */
#include "hooks.h"

#include "backend.h"

static unsigned fp_flags; /* GP_FPE_*: NumPy's UFUNC_FPE_* bits are the same */

/* NumPy's flags, and the CPU back end's for launches it ran (np_launch) */
static unsigned take_fp_flags(void)
{
    return __atomic_exchange_n(&fp_flags, 0u, __ATOMIC_ACQ_REL) | gp_backend_cpu.take_fp_flags();
}

/* np.errstate's call= callback: (kind, flag). */
static PyObject *on_fp_error(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *kind;
    int flag;
    if (!PyArg_ParseTuple(args, "Oi", &kind, &flag))
        return NULL;
    __atomic_fetch_or(&fp_flags, (unsigned)flag & 15u, __ATOMIC_RELAXED);
    Py_RETURN_NONE;
}

static PyMethodDef on_fp_error_def = {"grumpy_numpy_backend_fp_error", on_fp_error, METH_VARARGS, NULL};

/* An ndarray over memory the planner owns (not owning it).  New reference. */
static PyObject *view(GpDType t, int nd, const int64_t *shape, const int64_t *strides, char *data)
{
    npy_intp dims[GP_MAXDIMS], st[GP_MAXDIMS];
    for (int d = 0; d < nd; d++) {
        dims[d] = (npy_intp)shape[d];
        st[d] = (npy_intp)strides[d];
    }
    return PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(t), nd, dims, st, data, NPY_ARRAY_WRITEABLE, NULL);
}

/* A NumPy scalar of dtype t with the value's bits.  New reference. */
static PyObject *scalar(const GpScalar *value, GpDType t)
{
    PyArray_Descr *d = gp_descr_from_dtype(t);
    PyObject *r = d ? PyArray_Scalar((void *)value, d, NULL) : NULL;
    Py_XDECREF(d);
    return r;
}

/* Step 1: the value of instruction i (inputs in v).  New reference. */
static PyObject *instruction_value(const GpProgram *p, const GpKernelArgs *a, int i, PyObject *const *v)
{
    const GpInstr *ins = &p->instr[i];
    GpOp op = (GpOp)ins->op;
    GpDType t = (GpDType)ins->dtype;
    if (op == GP_OP_LEAF)
        return view(t, (int)a->nd, a->shape, a->strides[ins->slot], a->data[ins->slot]);
    if (op == GP_OP_CONST)
        return scalar(&a->consts[ins->slot], t);
    PyObject *x = v[ins->in[0]], *r = NULL;
    if (gp_op_kind[op] == GP_KIND_REDUCE) /* an accumulating fold: its input's value (step 2 folds it) */
        return gp_numpy_full(x, (int)a->nd, a->shape);
    if (gp_op_kind[op] == GP_KIND_SCAN) {
        /* a value of constants only is a scalar: scanned at the full shape */
        PyObject *fx = gp_numpy_full(x, (int)a->nd, a->shape);
        r = fx ? gp_numpy_accumulate(op, fx, (int)a->nd - 1) : NULL;
        Py_XDECREF(fx);
    } else {
        PyObject *in[3];
        for (int k = 0; k < ins->nin; k++)
            in[k] = v[ins->in[k]];
        r = gp_numpy_map(op, t, in, ins->nin);
    }
    if (!r)
        return NULL;
    PyObject *c = gp_numpy_as_dtype(r, t);
    Py_DECREF(r);
    return c;
}

/* identity op x, as the CPU runtime stores a reduction.  New reference. */
static PyObject *with_identity(GpOp op, GpDType t, PyObject *x)
{
    GpOp comb = op == GP_OP_SUM    ? GP_OP_ADD
                : op == GP_OP_PROD ? GP_OP_MULTIPLY
                : op == GP_OP_MIN  ? GP_OP_MINIMUM
                : op == GP_OP_MAX  ? GP_OP_MAXIMUM
                : op == GP_OP_ANY  ? GP_OP_LOGICAL_OR
                                   : GP_OP_LOGICAL_AND;
    GpScalar id = gp_reduce_identity(op, t);
    PyObject *in[2] = {scalar(&id, t), x};
    PyObject *r = in[0] ? gp_numpy_map(comb, t, in, 2) : NULL;
    Py_XDECREF(in[0]);
    if (!r)
        return NULL;
    PyObject *c = gp_numpy_as_dtype(r, t);
    Py_DECREF(r);
    return c;
}

/* Step 2 for one output instruction. 0 or -1 with an exception. */
static int write_output(const GpProgram *p, const GpKernelArgs *a, int i, PyObject *value, const GpLaunch *l)
{
    const GpInstr *ins = &p->instr[i];
    int nd = (int)a->nd, slot = ins->slot;
    int64_t shape[GP_MAXDIMS];
    memcpy(shape, a->shape, sizeof shape);
    PyObject *src = value;
    Py_INCREF(src);
    if (gp_op_kind[ins->op] == GP_KIND_REDUCE) {
        /* fold over the output's zero-stride dims, kept as length 1 */
        PyObject *axes = PyList_New(0);
        for (int d = 0; axes && d < nd; d++) {
            if (a->strides[slot][d] != 0)
                continue;
            shape[d] = 1;
            PyObject *ax = PyLong_FromLong(d);
            if (!ax || PyList_Append(axes, ax) < 0)
                Py_CLEAR(axes);
            Py_XDECREF(ax);
        }
        PyObject *tup = axes ? PyList_AsTuple(axes) : NULL;
        PyObject *red = tup ? gp_numpy_reduce((GpOp)ins->op, src, tup, 1) : NULL;
        Py_XDECREF(tup);
        Py_XDECREF(axes);
        Py_SETREF(src, red ? with_identity(l->op, (GpDType)ins->dtype, red) : NULL);
        Py_XDECREF(red);
        if (!src)
            return -1;
    }
    PyObject *dst = view((GpDType)ins->dtype, nd, shape, a->strides[slot], a->data[slot]);
    int rc = dst ? PyArray_CopyInto((PyArrayObject *)dst, (PyArrayObject *)src) : -1;
    Py_XDECREF(dst);
    Py_DECREF(src);
    return rc;
}

/* Step 3: a reduction of the root value along the innermost dim. */
static int write_reduction(const GpProgram *p, const GpKernelArgs *a, PyObject *value, const GpLaunch *l)
{
    (void)p;
    PyObject *x = gp_numpy_full(value, (int)a->nd, a->shape);
    PyObject *axis = x ? PyLong_FromLong((long)a->nd - 1) : NULL, *r = NULL;
    if (!axis) {
        Py_XDECREF(x);
        return -1;
    }
    if (l->kind == GP_LAUNCH_ARGREDUCE) {
        PyObject *kw = Py_BuildValue("{sO}", "axis", axis);
        PyObject *args = kw ? PyTuple_Pack(1, x) : NULL;
        r = args ? PyObject_Call(gp_hooks.ufunc_of_op[l->op], args, kw) : NULL;
        Py_XDECREF(args);
        Py_XDECREF(kw);
        if (r)
            Py_SETREF(r, gp_numpy_as_dtype(r, GP_INT64));
    } else {
        PyObject *red = gp_numpy_reduce(l->op, x, axis, 0);
        r = red ? with_identity(l->op, l->dtype, red) : NULL;
        Py_XDECREF(red);
    }
    Py_DECREF(axis);
    Py_DECREF(x);
    if (!r)
        return -1;
    int64_t strides[GP_MAXDIMS];
    GpDType t = l->kind == GP_LAUNCH_ARGREDUCE ? GP_INT64 : l->dtype;
    gp_contiguous_strides((int)a->nd - 1, a->shape, gp_dtype_size(t), strides);
    PyObject *dst = view(t, (int)a->nd - 1, a->shape, strides, l->out);
    int rc = dst ? PyArray_CopyInto((PyArrayObject *)dst, (PyArrayObject *)r) : -1;
    Py_XDECREF(dst);
    Py_DECREF(r);
    return rc;
}

static int run_program(const GpProgram *p, GpKernelArgs *a, const GpLaunch *l)
{
    PyObject *v[GP_MAXINSTR] = {NULL};
    int rc = -1;
    for (int i = 0; i < p->ninstr; i++)
        if (!(v[i] = instruction_value(p, a, i, v)))
            goto done;
    for (int i = 0; i < p->ninstr; i++) {
        const GpInstr *ins = &p->instr[i];
        if (ins->op != GP_OP_LEAF && ins->op != GP_OP_CONST && ins->slot >= 0 && write_output(p, a, i, v[i], l) < 0)
            goto done;
    }
    if ((l->kind == GP_LAUNCH_REDUCE || l->kind == GP_LAUNCH_ARGREDUCE) && write_reduction(p, a, v[p->root], l) < 0)
        goto done;
    rc = 0;
done:
    for (int i = 0; i < p->ninstr; i++)
        Py_XDECREF(v[i]);
    return rc;
}

/* fn() inside np.errstate(all="call", call=on_fp_error). */
static int with_fp_collection(int (*fn)(void *), void *ctx)
{
    static PyObject *callback;
    if (!callback && !(callback = PyCFunction_New(&on_fp_error_def, NULL)))
        return -1;
    PyObject *np = PyImport_ImportModule("numpy");
    PyObject *es = np ? PyObject_GetAttrString(np, "errstate") : NULL;
    PyObject *kw = es ? Py_BuildValue("{sssO}", "all", "call", "call", callback) : NULL;
    PyObject *empty = kw ? PyTuple_New(0) : NULL;
    PyObject *cm = empty ? PyObject_Call(es, empty, kw) : NULL;
    PyObject *entered = cm ? PyObject_CallMethod(cm, "__enter__", NULL) : NULL;
    int rc = -1;
    if (entered) {
        rc = fn(ctx);
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *ex = PyObject_CallMethod(cm, "__exit__", "OOO", Py_None, Py_None, Py_None);
        if (!ex)
            rc = -1;
        Py_XDECREF(ex);
        if (et)
            PyErr_Restore(et, ev, tb);
    }
    Py_XDECREF(entered);
    Py_XDECREF(cm);
    Py_XDECREF(empty);
    Py_XDECREF(kw);
    Py_XDECREF(es);
    Py_XDECREF(np);
    return rc;
}

typedef struct {
    const GpProgram *p;
    GpKernelArgs *a;
    const GpLaunch *l;
} LaunchCtx;

static int launch_in_errstate(void *ctx)
{
    LaunchCtx *c = ctx;
    return run_program(c->p, c->a, c->l);
}

static void *np_compile(const GpProgram *p) { return (void *)p; /* the program is its own kernel */ }

static GpStatus np_launch(void *k, const GpProgram *p, GpKernelArgs *a, const GpLaunch *l)
{
    (void)k;
    if (!PyGILState_Check()) {
        /* C code reading a pending array with the GIL released (the fault
         * handler's thread): waiting for the GIL while holding the core
         * lock could deadlock with the thread holding the GIL, so this
         * launch is the CPU back end's */
        void *cpu = gp_backend_cpu.compile(p);
        return cpu ? gp_backend_cpu.launch(cpu, p, a, l) : GP_EJIT;
    }
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    LaunchCtx c = {p, a, l};
    /* NumPy runs here inside the core (core lock held): nothing it does,
     * nor a finalizer the collector runs meanwhile, is captured */
    gp_paused++;
    int rc = a->nd >= 1 ? with_fp_collection(launch_in_errstate, &c) : -1;
    gp_paused--;
    if (rc < 0) {
        gp_set_error("the NumPy back end could not run a program");
        PyErr_Clear();
    }
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
    return rc < 0 ? GP_EUNSUPPORTED : GP_OK;
}

static GpStatus np_matmul(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out, struct GpBuffer *out_buf)
{
    if (!PyGILState_Check()) /* as in np_launch */
        return gp_backend_cpu.matmul(t, a, b, out, out_buf);
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    gp_paused++; /* inside the core: as in np_launch */
    PyObject *va = view(t, a.nd, a.shape, a.strides, (char *)a.data);
    PyObject *vb = va ? view(t, b.nd, b.shape, b.strides, (char *)b.data) : NULL;
    /* flags ignored: a result with an infinity or a NaN is replayed for
     * NumPy's warnings at the recorded line (plan.c product_fpe; an eager
     * product is NumPy's again: capture_linalg.c matmul_now) */
    PyObject *quiet = vb ? gp_fpe_ignored_begin() : NULL;
    PyObject *r = vb ? PyObject_CallFunctionObjArgs(gp_hooks.ufunc_of_op[GP_OP_MATMUL], va, vb, NULL) : NULL;
    gp_fpe_ignored_end(quiet);
    int rc = -1;
    if (r && PyArray_Check(r)) {
        PyArrayObject *ra = (PyArrayObject *)r;
        int64_t shape[GP_MAXDIMS], strides[GP_MAXDIMS];
        for (int d = 0; d < PyArray_NDIM(ra); d++)
            shape[d] = PyArray_DIM(ra, d);
        gp_contiguous_strides(PyArray_NDIM(ra), shape, gp_dtype_size(t), strides);
        PyObject *dst = view(t, PyArray_NDIM(ra), shape, strides, out);
        rc = dst ? PyArray_CopyInto((PyArrayObject *)dst, ra) : -1;
        Py_XDECREF(dst);
    }
    Py_XDECREF(r);
    Py_XDECREF(vb);
    Py_XDECREF(va);
    gp_paused--;
    if (rc < 0) {
        gp_set_error("the NumPy back end could not make a product");
        PyErr_Clear();
    }
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(g);
    return rc < 0 ? GP_EUNSUPPORTED : GP_OK;
}

static void np_prepare(void)
{
    if (gp_backend_cpu.prepare)
        gp_backend_cpu.prepare();
}

const GpBackend gp_backend_numpy = {
    /* prepare: launches on threads without the GIL (the fault resolver)
     * fall back to the CPU back end's kernels */
    "numpy", gp_op_supports, np_compile, np_launch, take_fp_flags, np_matmul, np_prepare, 0, NULL, 1,
};
