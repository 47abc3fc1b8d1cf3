/*
 * plain_ops.c - operators on plain ndarrays that broadcast small operands
 * into a large result.
 *
 * NumPy dispatches to grumpy only when an operand is a grumpy array; an
 * expression of plain arrays never reaches the capture.  Arrays below
 * GRUMPY_MIN_BYTES are plain by design (np.zeros' and the random
 * generators' as much as a library's), and what costs is a broadcast of
 * small ones into a large one: an N-body step's pairwise differences
 *
 *     d = pos[None, :, :] - pos[:, None, :]      # pos 500 x 3: 12 KB -> 6 MB
 *     r2 = (d ** 2).sum(axis=2) + eps ** 2
 *
 * which NumPy writes and reads back as temporaries of 2-6 MB several times
 * a step, and one fused map-reduce reads never.  The binary operator slots
 * of NumPy's own class (PyArray_Type.tp_as_number) are therefore grumpy's
 * while it captures: an operator whose two operands are plain arrays of
 * NumPy's exact class, of a dtype grumpy computes, at most
 * GP_FOREIGN_COPY_MAX_BYTES each, whose broadcast result is at least
 * GRUMPY_MIN_BYTES and at least PLAIN_EXPANSION times their bytes together,
 * is recorded as if one operand were a grumpy array (the capture copies
 * the operands: later writes to them cannot change the pending result).
 * Comparisons (tp_richcompare) likewise; x[idx] (tp_as_mapping's
 * mp_subscript) of an integer index array into a large result is a
 * gather (capture_writes.c gp_capture_gather), and, for a back end with its own
 * memory, a product (@) of two small matrices into a large one
 * (product_expands).  Everything else goes to NumPy's
 * slot unchanged, after a type check or two: subclasses, in-place
 * operators, complex and object dtypes, results below the threshold,
 * shapes that do not broadcast (NumPy raises).
 *
 * The slots are swapped as a table: PyArray_Type.tp_as_number points to
 * plain_number, a copy of NumPy's table with the binary slots replaced
 * (and tp_richcompare to plain_richcompare); gp_numpy_number keeps
 * NumPy's own, which grumpy.ndarray's slots call.
 * Subclasses keep NumPy's slots (a Python class's come from ndarray's
 * __add__ and such, which wrap NumPy's functions); a C type readied later
 * would inherit these, which pass any operand that is not exactly an
 * ndarray to NumPy's.  This is np.outer's
 * rule (grumpy/__init__.py _outer_of_plain_arrays) for the operators.
 *
 * GIL: every function here runs with it held, as number slots do.
 */
#include "capture.h"
#include "hooks.h"

PyNumberMethods gp_numpy_number;
static PyNumberMethods plain_number;

/* A result below PLAIN_EXPANSION times its operands' bytes is not worth
 * copying them for: NumPy's one pass writes it, and the capture would
 * first copy the operands (a + b of two 1 MiB arrays is NumPy's). */
#define PLAIN_EXPANSION 4

/* Whether plain array a is an operand the capture takes from a plain
 * expression: of a dtype grumpy computes and at most the copy bound (its
 * bytes added to *bytes, its shape broadcast into nd/shape).  -1 for a
 * shape that does not broadcast. */
static int plain_operand(PyArrayObject *a, int64_t *bytes, int *itemsize, int *nd, int64_t *shape)
{
    int n = PyArray_NDIM(a);
    if (n == 0 || n > GP_MAXDIMS || PyArray_NBYTES(a) > GP_FOREIGN_COPY_MAX_BYTES ||
        gp_dtype_from_descr(PyArray_DESCR(a)) < 0)
        return 0;
    *bytes += PyArray_NBYTES(a);
    if (PyArray_ITEMSIZE(a) > *itemsize)
        *itemsize = (int)PyArray_ITEMSIZE(a);
    /* numpy's broadcast: align the trailing axes */
    int lead = n > *nd ? n - *nd : 0;
    if (lead) {
        memmove(shape + lead, shape, (size_t)*nd * sizeof *shape);
        for (int d = 0; d < lead; d++)
            shape[d] = 1;
        *nd = n;
    }
    for (int d = 0; d < n; d++) {
        int64_t s = PyArray_DIM(a, d), *t = &shape[*nd - n + d];
        if (*t == 1)
            *t = s;
        else if (s != 1 && s != *t)
            return -1;
    }
    return 1;
}

/* Whether a op b is a broadcast of small plain operands into a large
 * result that grumpy records (module comment).  Both are arrays (with a
 * scalar the result is no larger than the array), and the cheapest tests
 * come first: this runs for every operator of two plain arrays. */
static int expands(PyObject *a, PyObject *b)
{
    if (Py_TYPE(a) != &PyArray_Type || Py_TYPE(b) != &PyArray_Type)
        return 0;
    PyArrayObject *x = (PyArrayObject *)a, *y = (PyArrayObject *)b;
    int n = PyArray_NDIM(x);
    /* the same shape broadcasts nothing; the result has at most size(a) *
     * size(b) elements of at most 8 bytes */
    if ((n == PyArray_NDIM(y) && memcmp(PyArray_DIMS(x), PyArray_DIMS(y), (size_t)n * sizeof(npy_intp)) == 0) ||
        (double)PyArray_SIZE(x) * (double)PyArray_SIZE(y) * 8.0 < (double)gp_hooks.min_bytes || !gp_capturing())
        return 0;
    int64_t bytes = 0, shape[GP_MAXDIMS];
    int itemsize = 0, nd = 0;
    if (plain_operand(x, &bytes, &itemsize, &nd, shape) != 1 || plain_operand(y, &bytes, &itemsize, &nd, shape) != 1)
        return 0;
    int64_t result = gp_shape_size(nd, shape) * itemsize;
    return result >= gp_hooks.min_bytes && result >= PLAIN_EXPANSION * bytes;
}

/* A grumpy view of plain array o.  New reference. */
static PyObject *grumpy_view(PyObject *o)
{
    if (Py_TYPE(o) == &PyArray_Type)
        return PyArray_View((PyArrayObject *)o, NULL, &GpArray_Type);
    Py_INCREF(o);
    return o;
}

/* Offers a op b to the capture: NumPy's slot called with the plain arrays
 * seen as grumpy arrays reaches grumpy's __array_ufunc__, which records it
 * or, declining, lets NumPy compute it -- not a fallback of the user's
 * grumpy arrays, so neither counted nor refused by GRUMPY_STRICT
 * (gp_hooks.uncounted).  Out of line, and each slot below calls NumPy's
 * own as a tail call when the operator does not expand: NumPy reuses a
 * temporary operand's buffer (a * 2.0 + a) only when the C stack between
 * the interpreter and its slot holds no other library's frame. */
static PyObject *offer(PyObject *a, PyObject *b, binaryfunc binary, ternaryfunc power, PyObject *mod,
                       richcmpfunc compare, int op)
{
    gp_hooks.plain_broadcast++;
    PyObject *va = grumpy_view(a), *vb = va ? grumpy_view(b) : NULL, *r = NULL;
    if (vb) {
        gp_hooks.uncounted++;
        r = binary ? binary(va, vb) : power ? power(va, vb, mod) : compare(va, vb, op);
        gp_hooks.uncounted--;
    }
    Py_XDECREF(va);
    Py_XDECREF(vb);
    return r;
}

#define GP_PLAIN_BINOP(slot, name, rname)                              \
    static PyObject *plain_##slot(PyObject *a, PyObject *b)            \
    {                                                                  \
        if (!expands(a, b))                                            \
            return gp_numpy_number.slot(a, b);                         \
        return offer(a, b, gp_numpy_number.slot, NULL, NULL, NULL, 0); \
    }
GP_ELEMENTWISE_BINARY_SLOTS(GP_PLAIN_BINOP)
#undef GP_PLAIN_BINOP

static PyObject *plain_nb_power(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None || !expands(a, b))
        return gp_numpy_number.nb_power(a, b, mod);
    return offer(a, b, NULL, gp_numpy_number.nb_power, mod, NULL, 0);
}

/* Whether a @ b is a product of two small plain matrices into a large one
 * (a training step's dlogits @ W2.T: 4096 x 10 and 10 x 2048 float32,
 * 160 KB and 80 KB, into 32 MB) that the back end keeps in its own memory
 * (backend.h `resident`: the GPU's), recorded as the broadcasts are: the
 * product is then a GEMM node, computed where the work that reads it runs
 * (cuBLAS next to the operand it is multiplied with; NumPy's host product
 * was uploaded whole every step).  On the CPU back end NumPy's product is
 * faster: the same BLAS call without the capture (tools/overhead-style
 * loop of (1024 x 8) @ (8 x 512), result read at once: NumPy 207 us,
 * NumPy's product under grumpy 154 us, recorded 235 us).  Two 2-D
 * operands of one float dtype, each at most the copy bound, whose result
 * is at least GRUMPY_MIN_BYTES and PLAIN_EXPANSION times their bytes. */
static int product_expands(PyObject *a, PyObject *b)
{
    if (Py_TYPE(a) != &PyArray_Type || Py_TYPE(b) != &PyArray_Type || !gp_backend()->resident || !gp_capturing())
        return 0;
    PyArrayObject *x = (PyArrayObject *)a, *y = (PyArrayObject *)b;
    if (PyArray_NDIM(x) != 2 || PyArray_NDIM(y) != 2 || PyArray_DIM(x, 1) != PyArray_DIM(y, 0))
        return 0;
    int t = gp_dtype_from_descr(PyArray_DESCR(x));
    if ((t != GP_FLOAT32 && t != GP_FLOAT64) || gp_dtype_from_descr(PyArray_DESCR(y)) != t ||
        PyArray_NBYTES(x) > GP_FOREIGN_COPY_MAX_BYTES || PyArray_NBYTES(y) > GP_FOREIGN_COPY_MAX_BYTES)
        return 0;
    int64_t result = (int64_t)PyArray_DIM(x, 0) * PyArray_DIM(y, 1) * (int64_t)gp_dtype_size((GpDType)t);
    return result >= gp_hooks.min_bytes && result >= PLAIN_EXPANSION * (PyArray_NBYTES(x) + PyArray_NBYTES(y));
}

static PyObject *plain_nb_matrix_multiply(PyObject *a, PyObject *b)
{
    if (!product_expands(a, b))
        return gp_numpy_number.nb_matrix_multiply(a, b);
    return offer(a, b, gp_numpy_number.nb_matrix_multiply, NULL, NULL, NULL, 0);
}

/* Comparisons: NumPy's tp_richcompare, whose bool result is recorded as
 * the arithmetic's is (labels[:, None] == classes[None, :]). */
static richcmpfunc numpy_richcompare;

static PyObject *plain_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!expands(a, b))
        return numpy_richcompare(a, b, op);
    return offer(a, b, NULL, NULL, NULL, numpy_richcompare, op);
}

/* x[idx] of a plain x and an integer index array: a gather
 * (gp_capture_gather), the plain table copied when it is small; any other
 * key, NumPy's subscript after one type check. */
PyMappingMethods gp_numpy_mapping;
static PyMappingMethods plain_mapping;

static PyObject *plain_mp_subscript(PyObject *self, PyObject *key)
{
    if (PyArray_Check(key) && Py_TYPE(self) == &PyArray_Type && gp_capturing()) {
        PyObject *g = gp_capture_gather((PyArrayObject *)self, key);
        if (g != Py_NotImplemented)
            return g;
        Py_DECREF(g);
    }
    return gp_numpy_mapping.mp_subscript(self, key);
}

void gp_plain_ops_install(void)
{
    if (PyArray_Type.tp_as_number == &plain_number)
        return;
    gp_numpy_mapping = *PyArray_Type.tp_as_mapping;
    plain_mapping = gp_numpy_mapping;
    plain_mapping.mp_subscript = plain_mp_subscript;
    PyArray_Type.tp_as_mapping = &plain_mapping;
    gp_numpy_number = *PyArray_Type.tp_as_number;
    plain_number = gp_numpy_number;
#define GP_SET_SLOT(slot, name, rname) plain_number.slot = plain_##slot;
    GP_ELEMENTWISE_BINARY_SLOTS(GP_SET_SLOT)
#undef GP_SET_SLOT
    plain_number.nb_power = plain_nb_power;
    plain_number.nb_matrix_multiply = plain_nb_matrix_multiply;
    PyArray_Type.tp_as_number = &plain_number;
    numpy_richcompare = PyArray_Type.tp_richcompare;
    PyArray_Type.tp_richcompare = plain_richcompare;
}
