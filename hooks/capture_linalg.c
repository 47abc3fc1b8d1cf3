/* hooks/capture_linalg.c -- matrix products as library nodes: matmul, @,
 * dot, vdot, inner on float32 / float64 (a GEMM, GEMV or dot of the back
 * end: OpenBLAS on the CPU), and tensordot / einsum contractions of two
 * operands rewritten as one product of transposed, reshaped views.
 */
#include "capture.h"

#include <math.h>

/* Result shape of numpy.matmul(a, b), or -1 when NumPy would raise.
 * batch_st[0|1][0..*nvote): a's and b's byte strides along the result's
 * batch dims longer than 1, 0 where the operand broadcasts (no vote in
 * gp_best_axis_order: matmul_in_c_order). */
static int matmul_shape(PyArrayObject *a, PyArrayObject *b, int *nd, int64_t *shape, int64_t (*batch_st)[GP_MAXDIMS],
                        int *nvote)
{
    int na = PyArray_NDIM(a), nb = PyArray_NDIM(b);
    if (na == 0 || nb == 0 || na > GP_MAXDIMS || nb > GP_MAXDIMS)
        return -1;
    int64_t ka = PyArray_DIM(a, na - 1), kb = nb == 1 ? PyArray_DIM(b, 0) : PyArray_DIM(b, nb - 2);
    if (ka != kb)
        return -1;
    int bna = na > 2 ? na - 2 : 0, bnb = nb > 2 ? nb - 2 : 0, bnd = bna > bnb ? bna : bnb;
    *nvote = 0;
    for (int d = 0; d < bnd; d++) {
        int da = d - (bnd - bna), db = d - (bnd - bnb);
        int64_t sa = da >= 0 ? PyArray_DIM(a, da) : 1, sb = db >= 0 ? PyArray_DIM(b, db) : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return -1;
        shape[d] = sa == 1 ? sb : sa; /* NumPy's rule: 1 broadcasts, 0 does not grow */
        if (shape[d] != 1) {
            batch_st[0][*nvote] = sa != 1 ? (int64_t)PyArray_STRIDE(a, da) : 0;
            batch_st[1][(*nvote)++] = sb != 1 ? (int64_t)PyArray_STRIDE(b, db) : 0;
        }
    }
    *nd = bnd;
    if (na >= 2)
        shape[(*nd)++] = PyArray_DIM(a, na - 2);
    if (nb >= 2)
        shape[(*nd)++] = PyArray_DIM(b, nb - 1);
    return 0;
}

/* Whether NumPy lays out a @ b's result in C order, from the batch
 * strides matmul_shape gives (nvote dims).  np.matmul is a gufunc: its
 * iterator orders the result's batch dims by the operands' batch strides
 * (its K order: gp_best_axis_order), the core dims last.  grumpy's
 * products are C-ordered, so a product whose batch dims NumPy would order
 * otherwise is NumPy's (the fuzzer, seed 925: a (2, 2) batch of 1x1
 * products of a broadcast float32 stack with a transposed int64 one, batch
 * strides (8, 16) in NumPy, (16, 8) before). */
static int matmul_in_c_order(int nvote, const int64_t (*batch_st)[GP_MAXDIMS])
{
    int perm[GP_MAXDIMS];
    return nvote < 2 || gp_best_axis_order(nvote, 2, batch_st, perm) == 0;
}

/* a @ b for computed operands of dtype t, by OpenBLAS now, into a new
 * C-contiguous array of NumPy's allocator (nd, shape: the result's).  New
 * reference; Py_Ellipsis when BLAS cannot take a layout (NumPy computes). */
static PyObject *matmul_now(PyArrayObject *a, PyArrayObject *b, GpDType t, int nd, const int64_t *shape)
{
    npy_intp dims[GP_MAXDIMS];
    for (int d = 0; d < nd; d++)
        dims[d] = (npy_intp)shape[d];
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, gp_descr_from_dtype(t), nd, dims, NULL, NULL, 0, NULL);
    if (!r)
        return NULL;
    GpBlasOperand oa = {PyArray_NDIM(a), (const int64_t *)PyArray_DIMS(a), (const int64_t *)PyArray_STRIDES(a),
                        PyArray_DATA(a)};
    GpBlasOperand ob = {PyArray_NDIM(b), (const int64_t *)PyArray_DIMS(b), (const int64_t *)PyArray_STRIDES(b),
                        PyArray_DATA(b)};
    GpStatus st;
    gp_lock(); /* the GIL stays held, as in every materialization */
    st = gp_backend()->matmul(t, oa, ob, PyArray_DATA((PyArrayObject *)r), NULL); /* a NumPy array: host memory */
    gp_unlock();
    /* an infinity or a NaN where the error state watches them: NumPy's
     * product, which checks its IEEE flags ("overflow encountered in
     * matmul"); BLAS through grumpy does not */
    if (st != GP_OK || ((gp_record_errstate & (GP_FPE_OVERFLOW | GP_FPE_INVALID)) &&
                        gp_blas_any_nonfinite(t, PyArray_DATA((PyArrayObject *)r), PyArray_SIZE((PyArrayObject *)r)))) {
        Py_DECREF(r);
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    if (nd == 0)
        return PyArray_Return((PyArrayObject *)r); /* NumPy's scalar */
    return gp_wrap_result(r);
}

/* a @ b of two 1-D float operands of one dtype, one of them pending (also
 * np.dot, vdot, inner, x.dot: all come here): the multiply and its full sum
 * as one fused map-reduce kernel, which reads the pending operand's own
 * inputs rather than a written temporary, where a BLAS dot needs both
 * computed.  Modified Gram-Schmidt's
 *
 *     r = Q[:, i] @ v;  v = v - r * Q[:, i]
 *
 * reads each strided column once per step this way, not twice (the dot,
 * then the update).  The sum is NumPy's pairwise one of the rounded
 * products (np.sum(a * b)), not BLAS's: the contract's bound for a
 * reduction (DESIGN.md section 4).  The two are recorded with every IEEE
 * flag ignored: NumPy's dot warns (or raises) in its own name ("overflow
 * encountered in matmul"; np.vdot never), so a result that is not finite
 * is NumPy's to compute again (Py_Ellipsis), with its warnings; a finite
 * one had no overflow or invalid operation to report (an error state that
 * raises, calls or watches underflow never gets here: gp_capture_product
 * leaves those to NumPy).  A NumPy scalar of the operands' dtype (sum keeps float32), a
 * new reference; Py_NotImplemented where the product is not captured (the
 * caller's BLAS path); Py_Ellipsis (NumPy's); NULL with an exception. */
/* fn(ctx) with NumPy's error state set to ignore every IEEE flag
 * (gp_fpe_ignored_begin), and so every node it records; the caller's state
 * is back after, whatever fn did, and gp_record_errstate with it (a
 * capture after fn reads the caller's, not fn's).  fn's result; NULL with
 * an exception. */
static PyObject *with_fpe_ignored(PyObject *(*fn)(void *), void *ctx)
{
    PyObject *token = gp_fpe_ignored_begin();
    if (!token) {
        PyErr_SetString(PyExc_RuntimeError, "grumpy: NumPy's error state could not be set");
        return NULL;
    }
    /* (gp_capture_map records with what the last gp_errstate_for_capture found) */
    PyObject *r = gp_errstate_for_capture() ? (Py_INCREF(Py_NotImplemented), Py_NotImplemented) : fn(ctx);
    gp_fpe_ignored_end(token);
    if (r) {
        gp_errstate_for_capture(); /* the caller's again */
    } else {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        gp_errstate_for_capture();
        PyErr_Restore(et, ev, tb);
    }
    return r;
}

/* sum(a * b) of the two operands xy[0], xy[1]: NumPy's scalar, or
 * Py_NotImplemented when the multiply is not captured. */
static PyObject *sum_of_products(void *ctx)
{
    PyObject **xy = ctx;
    PyObject *prod = gp_capture_map(GP_OP_MULTIPLY, xy, 2, NULL, NULL);
    if (!prod || prod == Py_NotImplemented)
        return prod;
    if (prod == Py_Ellipsis) {
        Py_DECREF(prod);
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *r = PyObject_CallMethod(prod, "sum", NULL);
    Py_DECREF(prod);
    return r;
}

static PyObject *vector_dot(PyObject *a, PyObject *b)
{
    PyObject *xy[2] = {a, b};
    PyObject *r = with_fpe_ignored(sum_of_products, xy);
    if (r && r != Py_NotImplemented) {
        double v = PyFloat_AsDouble(r);
        if (v == -1.0 && PyErr_Occurred())
            Py_CLEAR(r);
        else if (!isfinite(v)) /* overflow or an invalid operation: NumPy's warnings */
            Py_SETREF(r, (Py_INCREF(Py_Ellipsis), Py_Ellipsis));
    }
    return r;
}

PyObject *gp_capture_product(PyObject *ao, PyObject *bo, int kind)
{
    if (!gp_capturing() || !PyArray_Check(ao) || !PyArray_Check(bo))
        Py_RETURN_NOTIMPLEMENTED;
    Operand x[2];
    if (gp_classify(ao, &x[0]) < 0 || gp_classify(bo, &x[1]) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    int nd, codes[2] = {x[0].code, x[1].code};
    int64_t shape[GP_MAXDIMS], batch_st[2][GP_MAXDIMS];
    int nvote;
    if (matmul_shape((PyArrayObject *)ao, (PyArrayObject *)bo, &nd, shape, batch_st, &nvote) < 0)
        Py_RETURN_NOTIMPLEMENTED; /* NumPy raises its ValueError */
    if (kind == GP_PRODUCT_MATMUL && !matmul_in_c_order(nvote, (const int64_t(*)[GP_MAXDIMS])batch_st)) {
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    int8_t loop[4];
    if (gp_resolve_loop(GP_OP_MATMUL, 2, codes, 0, loop) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    if (gp_errstate_for_capture() || (kind != GP_PRODUCT_QUIET && (gp_record_errstate & GP_FPE_UNDERFLOW))) {
        /* an error state that raises or calls, a line that warned, or
         * underflow watched (a result with tiny values looks like any
         * other): NumPy's product, which checks its IEEE flags
         * (FloatingPointError "overflow encountered in dot"); BLAS
         * through grumpy does not */
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    GpDType t = (GpDType)loop[3];
    if (nd == 0 && (x[0].pending || x[1].pending) && (t == GP_FLOAT64 || t == GP_FLOAT32) && x[0].code == (int)t &&
        x[1].code == (int)t) {
        PyObject *r = vector_dot(ao, bo);
        if (r != Py_NotImplemented)
            return r; /* (NULL, a scalar, or Py_Ellipsis: NumPy's) */
        Py_DECREF(r);
    }
    int64_t bytes = gp_shape_size(nd, shape) * (int64_t)gp_dtype_size(t);
    int64_t in_bytes = (int64_t)PyArray_NBYTES((PyArrayObject *)ao) + (int64_t)PyArray_NBYTES((PyArrayObject *)bo);
    if (!x[0].pending && !x[1].pending && bytes < gp_hooks.min_bytes) {
        /* a small product is computed at once: laziness would make the
         * elementwise work that reads it pay grumpy's per-kernel cost;
         * large computed operands still go to BLAS with their views folded */
        gp_hooks.eager_small++;
        if (in_bytes >= gp_hooks.min_bytes && x[0].code == (int)t && x[1].code == (int)t)
            return matmul_now((PyArrayObject *)ao, (PyArrayObject *)bo, t, nd, shape);
        Py_INCREF(Py_Ellipsis);
        return Py_Ellipsis;
    }
    /* a pending matrix times its own transpose (X.T @ X): NumPy's syrk
     * (blas.c) needs both operands on one buffer, where two views of a
     * pending array would each be its own expression: it is computed */
    PyArrayObject *a = (PyArrayObject *)ao, *b = (PyArrayObject *)bo;
    if ((x[0].pending || x[1].pending) && PyArray_NDIM(a) == 2 && PyArray_NDIM(b) == 2 &&
        PyArray_DATA(a) == PyArray_DATA(b) && PyArray_DIM(a, 0) == PyArray_DIM(b, 1) &&
        PyArray_DIM(a, 1) == PyArray_DIM(b, 0) && PyArray_STRIDE(a, 0) == PyArray_STRIDE(b, 1) &&
        PyArray_STRIDE(a, 1) == PyArray_STRIDE(b, 0)) {
        if (gp_ensure_computed(a) < 0)
            return NULL;
        if (gp_classify(ao, &x[0]) < 0 || gp_classify(bo, &x[1]) < 0)
            Py_RETURN_NOTIMPLEMENTED;
    }
    GpNode *in[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        x[i].library = 1;
        in[i] = gp_operand_node(&x[i], t);
        if (!in[i]) {
            if (i)
                gp_node_release(in[0]);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    gp_lock();
    GpNode *n = gp_node_map(GP_OP_MATMUL, t, 2, in, nd, shape);
    if (n) {
        n->product_dot = kind == GP_PRODUCT_DOT;
        if (kind == GP_PRODUCT_QUIET)
            n->errstate = 0; /* np.einsum, np.vdot: no warnings */
    }
    gp_node_decref(in[0]);
    gp_node_decref(in[1]);
    gp_unlock();
    if (!n)
        return PyErr_NoMemory();
    gp_record_done();
    return gp_node_result(n);
}

/* ---- contractions (tensordot, einsum) as one matmul -------------------- */

/* A contraction of a and b described by axis lists: out[batch..., free_a...,
 * free_b...] = sum over the contracted axes of a * b.  Axis numbers are the
 * operand's own; batch axes pair up in order and have equal lengths. */
typedef struct {
    int nbatch, nfree_a, nfree_b, ncon;
    int batch_a[GP_MAXDIMS], batch_b[GP_MAXDIMS];
    int free_a[GP_MAXDIMS], free_b[GP_MAXDIMS];
    int con_a[GP_MAXDIMS], con_b[GP_MAXDIMS];
} Contraction;

/* x transposed to axes[0..n) and reshaped to shape[0..ns) (a view when the
 * layout allows, NumPy's copy otherwise: gp_newshape_computed).  New
 * reference or NULL. */
static PyObject *permute_reshape(PyObject *x, const int *axes, int n, npy_intp *shape, int ns)
{
    npy_intp perm[GP_MAXDIMS];
    for (int i = 0; i < n; i++)
        perm[i] = axes[i];
    PyArray_Dims pd = {perm, n}, sd = {shape, ns};
    PyObject *t = PyArray_Transpose((PyArrayObject *)x, &pd);
    if (!t)
        return NULL;
    PyObject *r = gp_newshape_computed((PyArrayObject *)t, &sd);
    Py_DECREF(t);
    return r;
}

/* The contraction as one (batched) matrix product: a to (batch..., M, K),
 * b to (batch..., K, N), one library node, the result reshaped to (batch...,
 * free_a..., free_b...).  Without batch axes a side with no free axes is a
 * vector (GEMV / dot); kind: gp_capture_product's (tensordot's is np.dot,
 * einsum's quiet).  New reference, Py_NotImplemented / Py_Ellipsis as
 * gp_capture_product, or NULL with an exception. */
static PyObject *capture_contraction(PyObject *a, PyObject *b, const Contraction *c, int kind)
{
    PyArrayObject *pa = (PyArrayObject *)a, *pb = (PyArrayObject *)b;
    int axes[GP_MAXDIMS], n = 0, ns = 0, nr = 0;
    npy_intp sa[GP_MAXDIMS], sb[GP_MAXDIMS], sr[GP_MAXDIMS];
    npy_intp M = 1, K = 1, N = 1;
    for (int i = 0; i < c->nbatch; i++)
        sr[nr++] = PyArray_DIM(pa, c->batch_a[i]);
    for (int i = 0; i < c->nfree_a; i++)
        M *= sr[nr++] = PyArray_DIM(pa, c->free_a[i]);
    for (int i = 0; i < c->nfree_b; i++)
        N *= sr[nr++] = PyArray_DIM(pb, c->free_b[i]);
    for (int i = 0; i < c->ncon; i++)
        K *= PyArray_DIM(pa, c->con_a[i]);
    int vec_a = c->nbatch == 0 && c->nfree_a == 0, vec_b = c->nbatch == 0 && c->nfree_b == 0;
    /* a -> (batch..., M, K) */
    for (int i = 0; i < c->nbatch; i++)
        axes[n++] = c->batch_a[i], sa[ns++] = PyArray_DIM(pa, c->batch_a[i]);
    for (int i = 0; i < c->nfree_a; i++)
        axes[n++] = c->free_a[i];
    for (int i = 0; i < c->ncon; i++)
        axes[n++] = c->con_a[i];
    if (!vec_a)
        sa[ns++] = M;
    sa[ns++] = K;
    PyObject *x = permute_reshape(a, axes, n, sa, ns);
    if (!x)
        return NULL;
    /* b -> (batch..., K, N) */
    n = ns = 0;
    for (int i = 0; i < c->nbatch; i++)
        axes[n++] = c->batch_b[i], sb[ns++] = PyArray_DIM(pb, c->batch_b[i]);
    for (int i = 0; i < c->ncon; i++)
        axes[n++] = c->con_b[i];
    for (int i = 0; i < c->nfree_b; i++)
        axes[n++] = c->free_b[i];
    sb[ns++] = K;
    if (!vec_b)
        sb[ns++] = N;
    PyObject *y = permute_reshape(b, axes, n, sb, ns);
    PyObject *r = y ? gp_capture_product(x, y, kind) : NULL;
    Py_DECREF(x);
    Py_XDECREF(y);
    if (!r || r == Py_NotImplemented || r == Py_Ellipsis)
        return r;
    int same = PyArray_Check(r) && PyArray_NDIM((PyArrayObject *)r) == nr;
    for (int d = 0; same && d < nr; d++)
        same = PyArray_DIM((PyArrayObject *)r, d) == sr[d];
    if (PyArray_Check(r) && !same) {
        PyArray_Dims rd = {sr, nr};
        Py_SETREF(r, PyArray_Newshape((PyArrayObject *)r, &rd, NPY_CORDER));
    } else if (!PyArray_Check(r) && nr > 0) {
        Py_SETREF(r, NULL); /* a scalar for a non-scalar result: cannot happen */
        PyErr_SetString(PyExc_SystemError, "grumpy: contraction returned a scalar");
    }
    return r;
}

/* np.tensordot(a, b, axes): axes an int N (a's last N with b's first N) or a
 * pair of ints / int sequences.  Py_NotImplemented for anything NumPy would
 * reject (NumPy raises its own error) or that is not float arrays. */
PyObject *gp_capture_tensordot(PyObject *a, PyObject *b, PyObject *axes)
{
    if (!PyArray_Check(a) || !PyArray_Check(b))
        Py_RETURN_NOTIMPLEMENTED;
    int na = gp_ndim_of(a), nb = gp_ndim_of(b);
    if (na > GP_MAXDIMS || nb > GP_MAXDIMS)
        Py_RETURN_NOTIMPLEMENTED;
    Contraction c;
    memset(&c, 0, sizeof c);
    if (!axes || PyLong_Check(axes)) {
        long k = axes ? PyLong_AsLong(axes) : 2;
        if (k < 0 || k > na || k > nb) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        c.ncon = (int)k;
        for (int i = 0; i < c.ncon; i++)
            c.con_a[i] = na - c.ncon + i, c.con_b[i] = i;
    } else {
        if (!PySequence_Check(axes) || PySequence_Size(axes) != 2) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        for (int side = 0; side < 2; side++) {
            PyObject *s = PySequence_GetItem(axes, side);
            if (!s)
                goto bad;
            /* a sequence of axes, or one axis (NumPy's tensordot: len() or
             * not); a repeated axis is refused below */
            int *dst = side ? c.con_b : c.con_a, nd = side ? nb : na, cnt = 0;
            Py_ssize_t len = PySequence_Check(s) ? PySequence_Size(s) : -1;
            if (len < 0) {
                PyErr_Clear();
                cnt = gp_args_axis(s, nd, &dst[0]) < 0 ? -1 : 1;
            } else if (len <= GP_MAXDIMS) {
                for (Py_ssize_t i = 0; cnt >= 0 && i < len; i++) {
                    PyObject *v = PySequence_GetItem(s, i);
                    cnt = v && gp_args_axis(v, nd, &dst[cnt]) == 0 ? cnt + 1 : -1;
                    Py_XDECREF(v);
                }
            } else {
                cnt = -1;
            }
            Py_DECREF(s);
            if (cnt < 0)
                goto bad; /* (clears an error of GetItem) */
            if (side && cnt != c.ncon)
                goto bad;
            c.ncon = cnt;
        }
    }
    unsigned long long used_a = 0, used_b = 0;
    for (int i = 0; i < c.ncon; i++) {
        if ((used_a >> c.con_a[i] & 1) || (used_b >> c.con_b[i] & 1) ||
            PyArray_DIM((PyArrayObject *)a, c.con_a[i]) != PyArray_DIM((PyArrayObject *)b, c.con_b[i]))
            goto bad;
        used_a |= 1ull << c.con_a[i];
        used_b |= 1ull << c.con_b[i];
    }
    for (int d = 0; d < na; d++)
        if (!(used_a >> d & 1))
            c.free_a[c.nfree_a++] = d;
    for (int d = 0; d < nb; d++)
        if (!(used_b >> d & 1))
            c.free_b[c.nfree_b++] = d;
    if (c.ncon == 0) /* an outer product: NumPy's */
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = capture_contraction(a, b, &c, GP_PRODUCT_DOT);
    if (r && r != Py_NotImplemented && r != Py_Ellipsis && !PyArray_Check(r)) {
        /* a full contraction: NumPy's tensordot returns a 0-d array (its
         * reshape of the product), not dot's scalar */
        Py_SETREF(r, PyArray_FromAny(r, NULL, 0, 0, 0, NULL));
    }
    return r;
bad:
    PyErr_Clear();
    Py_RETURN_NOTIMPLEMENTED;
}

typedef struct {
    PyObject *xy[2], *axes, *dtype;
} BatchedSum;

/* (xy[0] * xy[1]).sum(axes, dtype): a pending array, Py_NotImplemented
 * when the multiply is not captured (small: NumPy's einsum). */
static PyObject *batched_sum(void *ctx)
{
    BatchedSum *s = ctx;
    PyObject *prod = gp_capture_map(GP_OP_MULTIPLY, s->xy, 2, NULL, NULL);
    if (!prod || prod == Py_NotImplemented)
        return prod;
    if (prod == Py_Ellipsis) {
        Py_DECREF(prod);
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *r = PyObject_CallMethod(prod, "sum", "(OO)", s->axes, s->dtype);
    Py_DECREF(prod);
    return r;
}

/* A contraction with batch letters and nothing free ("ij,ij->i", "bij,bij->b",
 * scikit-learn's row_norms): one tiny product per batch index as a GEMM
 * (400,000 calls of 8 elements), but a multiply and a sum over the
 * contracted axes as ufuncs: one fused map-reduce kernel, the short rows
 * unrolled (plan.c).  Float operands of one dtype (as einsum, the sum keeps
 * it).  The result's axes are a's batch axes in a's order; *order / *no
 * receive their letters for the caller's transpose.  New reference, or
 * Py_NotImplemented. */
static PyObject *batched_dot(PyObject *a, PyObject *b, const char *in1, int l1, const int *pos2, const Contraction *c,
                             int *order, int *no)
{
    PyArray_Descr *da = PyArray_DESCR((PyArrayObject *)a), *db = PyArray_DESCR((PyArrayObject *)b);
    int t = gp_dtype_from_descr(da);
    if ((t != GP_FLOAT64 && t != GP_FLOAT32) || gp_dtype_from_descr(db) != t)
        Py_RETURN_NOTIMPLEMENTED;
    npy_intp perm[GP_MAXDIMS];
    for (int i = 0; i < l1; i++)
        perm[i] = pos2[in1[i] - 'a']; /* b's axes in a's letter order */
    PyArray_Dims pd = {perm, l1};
    PyObject *bt = PyArray_Transpose((PyArrayObject *)b, &pd);
    if (!bt)
        return NULL;
    PyObject *axes = PyTuple_New(c->ncon);
    for (int k = 0; axes && k < c->ncon; k++) {
        PyObject *ax = PyLong_FromLong(c->con_a[k]);
        if (!ax)
            Py_CLEAR(axes);
        else
            PyTuple_SET_ITEM(axes, k, ax);
    }
    /* recorded with every IEEE flag ignored: NumPy's einsum never warns */
    BatchedSum bs = {{a, bt}, axes, (PyObject *)da};
    PyObject *r = axes ? with_fpe_ignored(batched_sum, &bs) : NULL;
    Py_XDECREF(axes);
    Py_DECREF(bt);
    *no = 0;
    for (int i = 0; i < l1; i++) {
        int contracted = 0;
        for (int k = 0; k < c->ncon; k++)
            contracted |= c->con_a[k] == i;
        if (!contracted)
            order[(*no)++] = in1[i] - 'a';
    }
    return r;
}

/* The output letters of einsum "...->out" of a and b of length > 1 (their
 * positions in out), in the order NumPy's c_einsum lays its result out,
 * slowest first, into seq; returns how many.  Its iterator runs over the
 * output's letters, then the summed ones in alphabetical order, sorted by
 * NumPy's best-axis-ordering rule over the operands' strides
 * (gp_best_axis_order; a letter an operand lacks, or of length 1, has no
 * stride); the allocated output takes its letters' order from that. */
static int einsum_numpy_order(PyArrayObject *a, PyArrayObject *b, const char *out, const int *pos1, const int *pos2,
                              int *seq)
{
    int lo = (int)strlen(out), nl = 0, labels[GP_MAXDIMS], ns = 0;
    for (int i = 0; i < lo; i++)
        labels[nl++] = out[i] - 'a';
    for (int l = 0; l < 26 && nl < GP_MAXDIMS; l++)
        if ((pos1[l] >= 0 || pos2[l] >= 0) && !strchr(out, 'a' + l))
            labels[nl++] = l;
    int64_t st[2][GP_MAXDIMS];
    for (int j = 0; j < nl; j++) {
        int l = labels[j];
        st[0][j] = pos1[l] >= 0 && PyArray_DIM(a, pos1[l]) != 1 ? (int64_t)PyArray_STRIDE(a, pos1[l]) : 0;
        st[1][j] = pos2[l] >= 0 && PyArray_DIM(b, pos2[l]) != 1 ? (int64_t)PyArray_STRIDE(b, pos2[l]) : 0;
    }
    int order[GP_MAXDIMS];
    gp_best_axis_order(nl, 2, (const int64_t(*)[GP_MAXDIMS])st, order);
    for (int i = 0; i < nl; i++) {
        int l = labels[order[i]];
        npy_intp len = pos1[l] >= 0 ? PyArray_DIM(a, pos1[l]) : PyArray_DIM(b, pos2[l]);
        if (order[i] < lo && len != 1)
            seq[ns++] = order[i];
    }
    return ns;
}

/* r (stolen), einsum's result for "...->out" of a and b, laid out as
 * NumPy's c_einsum allocates it (einsum_numpy_order): r itself when its
 * strides fall along that order, else a copy in it (the product is
 * computed in that order where it can be: gp_capture_einsum).  New
 * reference or NULL. */
static PyObject *in_einsum_layout(PyObject *r, PyObject *a, PyObject *b, const char *out, const int *pos1,
                                  const int *pos2)
{
    PyArrayObject *pr = (PyArrayObject *)r;
    int lo = (int)strlen(out), seq[GP_MAXDIMS], perm[GP_MAXDIMS], same = 1;
    if (!PyArray_Check(r) || PyArray_NDIM(pr) != lo || lo < 2)
        return r;
    int ns = einsum_numpy_order((PyArrayObject *)a, (PyArrayObject *)b, out, pos1, pos2, seq);
    for (int i = 1; i < ns; i++) /* r's strides fall along that order */
        same &= llabs((long long)PyArray_STRIDE(pr, seq[i - 1])) > llabs((long long)PyArray_STRIDE(pr, seq[i]));
    if (same)
        return r;
    /* output dims slowest first: those of length 1 keep their places */
    for (int d = 0, j = 0; d < lo; d++)
        perm[d] = PyArray_DIM(pr, d) != 1 ? seq[j++] : d;
    npy_intp strides[GP_MAXDIMS];
    gp_perm_strides(lo, PyArray_DIMS(pr), PyArray_ITEMSIZE(pr), perm, strides);
    PyArray_Descr *descr = PyArray_DESCR(pr);
    Py_INCREF(descr);
    PyObject *c = PyArray_NewFromDescr(&GpArray_Type, descr, lo, PyArray_DIMS(pr), strides, NULL, 0, NULL);
    /* the product computed here, with its warnings and errors, not by the
     * faults NumPy's copy would take (as gp_capture_concatenate does) */
    if (c && (gp_ensure_computed(pr) < 0 || PyArray_CopyInto((PyArrayObject *)c, pr) < 0))
        Py_CLEAR(c);
    Py_DECREF(r);
    return c;
}

/* Sorts the n entries of x (and of y with them) by rank[letter of x's entry]. */
static void sort_by_rank(int *x, int *y, int n, const char *letters, const int *rank)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && rank[letters[x[k - 1]] - 'a'] > rank[letters[x[k]] - 'a']; k--) {
            int t = x[k];
            x[k] = x[k - 1], x[k - 1] = t;
            if (y)
                t = y[k], y[k] = y[k - 1], y[k - 1] = t;
        }
}

/* Contraction c of einsum "in1,in2->out" of a and b reordered so that its
 * product, computed in the order (batch, free of a, free of b), is laid out
 * as NumPy lays out its result (einsum_numpy_order): each group in that
 * order, and *swap set when the free letters of b come first there (the
 * product is then b's with a's).  0, or -1 when that order is not one of
 * those (the letters interleave): the layout is then a copy's. */
static int einsum_in_numpy_order(PyArrayObject *a, PyArrayObject *b, const char *in1, const char *in2, const char *out,
                                 const int *pos1, const int *pos2, Contraction *c, int *swap)
{
    int seq[GP_MAXDIMS], rank[26];
    int ns = einsum_numpy_order(a, b, out, pos1, pos2, seq);
    for (int l = 0; l < 26; l++)
        rank[l] = -1; /* length 1: anywhere */
    for (int i = 0; i < ns; i++)
        rank[out[seq[i]] - 'a'] = i;
    sort_by_rank(c->batch_a, c->batch_b, c->nbatch, in1, rank);
    sort_by_rank(c->free_a, NULL, c->nfree_a, in1, rank);
    sort_by_rank(c->free_b, NULL, c->nfree_b, in2, rank);
    int last_batch = -1, first_a = ns, last_a = -1, first_b = ns, last_b = -1;
    for (int i = 0; i < c->nbatch; i++)
        last_batch = rank[in1[c->batch_a[i]] - 'a'] > last_batch ? rank[in1[c->batch_a[i]] - 'a'] : last_batch;
    for (int i = 0; i < c->nfree_a; i++) {
        int r = rank[in1[c->free_a[i]] - 'a'];
        if (r >= 0)
            first_a = r < first_a ? r : first_a, last_a = r > last_a ? r : last_a;
    }
    for (int i = 0; i < c->nfree_b; i++) {
        int r = rank[in2[c->free_b[i]] - 'a'];
        if (r >= 0)
            first_b = r < first_b ? r : first_b, last_b = r > last_b ? r : last_b;
    }
    int first_free = first_a < first_b ? first_a : first_b;
    if (last_batch >= 0 && first_free < ns && last_batch > first_free)
        return -1;
    *swap = last_b >= 0 && last_a >= 0 && last_b < first_a;
    return *swap || last_a < 0 || last_b < 0 || last_a < first_b ? 0 : -1;
}

/* The contraction c of einsum "in1,in2->out" of a and b, as a product of
 * a with b, or of b with a when swap (then b's free letters come first:
 * einsum_in_numpy_order); order[0..*no) receives the letters of its
 * result's dims.  As capture_contraction. */
static PyObject *contraction_in_order(PyObject *a, PyObject *b, const char *in1, const char *in2, const Contraction *c,
                                      int swap, int *order, int *no)
{
    *no = 0;
    for (int i = 0; i < c->nbatch; i++)
        order[(*no)++] = in1[c->batch_a[i]] - 'a';
    for (int k = 0; k < 2; k++)
        if ((k == 0) != swap)
            for (int i = 0; i < c->nfree_a; i++)
                order[(*no)++] = in1[c->free_a[i]] - 'a';
        else
            for (int i = 0; i < c->nfree_b; i++)
                order[(*no)++] = in2[c->free_b[i]] - 'a';
    if (!swap)
        return capture_contraction(a, b, c, GP_PRODUCT_QUIET);
    Contraction s = *c;
    memcpy(s.batch_a, c->batch_b, sizeof s.batch_a);
    memcpy(s.batch_b, c->batch_a, sizeof s.batch_b);
    s.nfree_a = c->nfree_b;
    s.nfree_b = c->nfree_a;
    memcpy(s.free_a, c->free_b, sizeof s.free_a);
    memcpy(s.free_b, c->free_a, sizeof s.free_b);
    memcpy(s.con_a, c->con_b, sizeof s.con_a);
    memcpy(s.con_b, c->con_a, sizeof s.con_b);
    return capture_contraction(b, a, &s, GP_PRODUCT_QUIET);
}

/* np.einsum("in1,in2->out", a, b) with explicit output, letters only, each
 * letter once per operand: letters of both operands and the output are batch
 * axes, of both operands only contracted, of one operand free.  The product
 * is computed in the output's order (batch, free of a, free of b) and
 * transposed to the requested one (a view). */
PyObject *gp_capture_einsum(PyObject *spec, PyObject *a, PyObject *b)
{
    const char *s = PyUnicode_Check(spec) ? PyUnicode_AsUTF8(spec) : NULL;
    const char *comma = s ? strchr(s, ',') : NULL, *arrow = s ? strstr(s, "->") : NULL;
    if (!s || !comma || !arrow || arrow < comma || !PyArray_Check(a) || !PyArray_Check(b))
        Py_RETURN_NOTIMPLEMENTED;
    const char *in1 = s, *in2 = comma + 1, *out = arrow + 2;
    int l1 = (int)(comma - s), l2 = (int)(arrow - comma - 1), lo = (int)strlen(out);
    if (l1 != gp_ndim_of(a) || l2 != gp_ndim_of(b) || lo > GP_MAXDIMS || l1 > GP_MAXDIMS || l2 > GP_MAXDIMS)
        Py_RETURN_NOTIMPLEMENTED;
    int pos1[26], pos2[26], poso[26];
    for (int i = 0; i < 26; i++)
        pos1[i] = pos2[i] = poso[i] = -1;
    struct {
        const char *str;
        int len;
        int *pos;
    } parts[3] = {{in1, l1, pos1}, {in2, l2, pos2}, {out, lo, poso}};
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < parts[p].len; i++) {
            char ch = parts[p].str[i];
            if (ch < 'a' || ch > 'z' || parts[p].pos[ch - 'a'] >= 0)
                Py_RETURN_NOTIMPLEMENTED;
            parts[p].pos[ch - 'a'] = i;
        }
    Contraction c;
    memset(&c, 0, sizeof c);
    int order[GP_MAXDIMS], no = 0; /* output letters in computed order */
    for (int i = 0; i < lo; i++) { /* batch letters keep the output's order */
        int l = out[i] - 'a';
        if (pos1[l] < 0 && pos2[l] < 0)
            Py_RETURN_NOTIMPLEMENTED;
        if (pos1[l] >= 0 && pos2[l] >= 0) {
            if (PyArray_DIM((PyArrayObject *)a, pos1[l]) != PyArray_DIM((PyArrayObject *)b, pos2[l]))
                Py_RETURN_NOTIMPLEMENTED; /* broadcasting: NumPy's */
            c.batch_a[c.nbatch] = pos1[l], c.batch_b[c.nbatch++] = pos2[l], order[no++] = l;
        }
    }
    for (int i = 0; i < l1; i++) {
        int l = in1[i] - 'a';
        if (pos2[l] < 0) {
            if (poso[l] < 0)
                Py_RETURN_NOTIMPLEMENTED; /* summed over one operand only */
            c.free_a[c.nfree_a++] = i, order[no++] = l;
        } else if (poso[l] < 0) {
            if (PyArray_DIM((PyArrayObject *)a, i) != PyArray_DIM((PyArrayObject *)b, pos2[l]))
                Py_RETURN_NOTIMPLEMENTED;
            c.con_a[c.ncon] = i, c.con_b[c.ncon++] = pos2[l];
        }
    }
    for (int i = 0; i < l2; i++) {
        int l = in2[i] - 'a';
        if (pos1[l] < 0) {
            if (poso[l] < 0)
                Py_RETURN_NOTIMPLEMENTED;
            c.free_b[c.nfree_b++] = i, order[no++] = l;
        }
    }
    if (c.ncon == 0)
        Py_RETURN_NOTIMPLEMENTED; /* no summation: NumPy's */
    PyObject *r;
    int swap = 0;
    if (c.nbatch > 0 && c.nfree_a == 0 && c.nfree_b == 0) {
        r = batched_dot(a, b, in1, l1, pos2, &c, order, &no);
    } else {
        if (einsum_in_numpy_order((PyArrayObject *)a, (PyArrayObject *)b, in1, in2, out, pos1, pos2, &c, &swap) != 0)
            swap = 0;
        r = contraction_in_order(a, b, in1, in2, &c, swap, order, &no);
    }
    if (!r || !PyArray_Check(r))
        return r;
    npy_intp perm[GP_MAXDIMS];
    int identity = 1;
    for (int i = 0; i < lo; i++) {
        for (int j = 0; j < no; j++)
            if (order[j] == out[i] - 'a')
                perm[i] = j;
        identity &= perm[i] == i;
    }
    if (!identity) {
        PyArray_Dims pd = {perm, lo};
        Py_SETREF(r, PyArray_Transpose((PyArrayObject *)r, &pd));
    }
    return r ? in_einsum_layout(r, a, b, out, pos1, pos2) : NULL;
}
