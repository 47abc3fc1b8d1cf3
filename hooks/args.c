/* hooks/args.c -- the arguments of a captured call, read as NumPy reads
 * them: keyword arguments picked into slots, axis= into a bitmask of dims,
 * keepdims=, dtype= and out= into what the capture needs.
 *
 * One rule throughout: these helpers never raise.  Whatever they are not
 * sure of (a keyword grumpy does not know, an axis out of range or
 * repeated, a bool where NumPy wants an integer, an object whose __index__
 * raises) is a decline: the helper returns -1 with no exception set, the
 * capture returns NotImplemented, and NumPy, given the same call, raises
 * its own error with its own message (or computes what grumpy does not).
 *
 * Axes follow NumPy's conversion (numpy/_core/src/multiarray/
 * conversion_utils.c and common.h):
 *   1. an axis is read with PyArray_PyIntAsInt: an int or any object with
 *      __index__, but not a bool or numpy.bool;
 *   2. it must lie in [-ndim, ndim) (check_and_adjust_axis; NumPy's
 *      AxisError otherwise) and a negative one counts from the end;
 *   3. a reduction's axis= is None (every dim), one axis, or a tuple of
 *      distinct axes (ufunc.reduce; NumPy's ValueError "duplicate value in
 *      'axis'" otherwise).  Lists are not tuples (NumPy's TypeError).
 */
#include "hooks.h"

static PyObject *keyword_name[GP_NKW]; /* owned, interned; GIL-protected */

int gp_args_init(void)
{
    static const char *const text[GP_NKW] = {
#define X(id, name) name,
        GP_KEYWORDS(X)
#undef X
    };
    for (int i = 0; i < GP_NKW; i++)
        if (!keyword_name[i] && !(keyword_name[i] = PyUnicode_InternFromString(text[i])))
            return -1;
    return 0;
}

/* The GpKeyword named by key, or -1.  Keys of a call's dict are interned
 * strings as a rule (the compiler's and PyDict_SetItemString's), so the
 * pointer comparison decides; others are compared by value. */
static int keyword_of(PyObject *key)
{
    for (int i = 0; i < GP_NKW; i++)
        if (key == keyword_name[i])
            return i;
    if (!PyUnicode_Check(key))
        return -1;
    for (int i = 0; i < GP_NKW; i++)
        if (PyUnicode_Compare(key, keyword_name[i]) == 0)
            return i;
    return -1;
}

int gp_args_keywords(PyObject *kwds, unsigned accepted, PyObject *slot[GP_NKW])
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (kwds && PyDict_Next(kwds, &pos, &key, &value)) {
        int k = keyword_of(key);
        if (k < 0 || !(accepted >> k & 1) || slot[k]) {
            /* unknown, not this call's, or given twice (NumPy's TypeError) */
            gp_declined(GP_WHY_KEYWORD);
            return -1;
        }
        slot[k] = value;
    }
    return 0;
}

int gp_args_axis(PyObject *o, int ndim, int *axis)
{
    int ax = PyArray_PyIntAsInt(o); /* NumPy's reading: __index__, no bools */
    if (ax == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (ax < -ndim || ax >= ndim)
        return -1; /* NumPy's AxisError */
    *axis = ax < 0 ? ax + ndim : ax;
    return 0;
}

int gp_args_axes(PyObject *axis, int ndim, uint64_t *mask)
{
    if (ndim < 0 || ndim > 63)
        return -1;
    if (axis == Py_None) {
        *mask = (1ull << ndim) - 1;
        return 0;
    }
    int ax;
    if (!PyTuple_Check(axis)) {
        if (gp_args_axis(axis, ndim, &ax) < 0)
            return -1;
        *mask = 1ull << ax;
        return 0;
    }
    uint64_t m = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axis); i++) {
        if (gp_args_axis(PyTuple_GET_ITEM(axis, i), ndim, &ax) < 0 || (m >> ax & 1))
            return -1; /* a repeated axis: NumPy's ValueError */
        m |= 1ull << ax;
    }
    *mask = m;
    return 0;
}

int gp_args_keepdims(PyObject *o, int *keepdims)
{
    if (!o) {
        *keepdims = 0;
        return 0;
    }
    /* NumPy reads it as a C int (PyArray_PythonPyIntFromInt): a str, a
     * float, None, numpy.bool raise its TypeError; other objects with
     * __index__ are left to NumPy too */
    if (!PyLong_Check(o))
        return -1;
    int overflow;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow || v < INT_MIN || v > INT_MAX)
        return -1; /* NumPy's OverflowError */
    *keepdims = v != 0;
    return 0;
}

int gp_args_dtype(PyObject *o, int *dtype)
{
    *dtype = -1;
    if (!o || o == Py_None)
        return 0;
    PyArray_Descr *d = NULL;
    if (!PyArray_DescrConverter2(o, &d) || !d) {
        PyErr_Clear();
        return -1;
    }
    *dtype = gp_dtype_from_descr(d);
    Py_DECREF(d);
    return *dtype < 0 ? -1 : 0;
}

int gp_args_out_is_none(PyObject *out)
{
    return !out || out == Py_None ||
           (PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1 && PyTuple_GET_ITEM(out, 0) == Py_None);
}
