/* hooks/sorted_search.c -- np.searchsorted of sorted keys by a merge
 * (issue "never slower": a better library call than NumPy makes).
 *
 * NumPy's searchsorted binary-searches every key in the whole array,
 * starting again from the previous key's index at best: a particle
 * filter's systematic resampling, searchsorted(cumsum(w), positions) with
 * 200,000 sorted positions, costs 6.6 ms a call, 33 ns a key.  When the
 * keys are sorted too, the table and the keys are merged: with as many
 * keys as elements or more, in MERGE_WAYS runs side by side without a
 * branch to mispredict (merge_*); with more elements a key, each key's
 * index is found by galloping from the previous one (an exponential
 * search, then a binary search within the last step: Bentley and Yao's
 * unbounded search, as in Timsort's merges; gallop_*), O(m log(n/m))
 * compares instead of O(m log n), the memory read in order.
 *
 * The answer is NumPy's: for a sorted a (checked, in NumPy's order for
 * floats: NaNs last, -0.0 == +0.0) the index of the first element not
 * below a key (side='left') or above it (side='right') is one number,
 * whichever search finds it.  Taken only when a is 1-D with at most
 * SEARCH_MAX_RATIO elements a key, a and v have one aligned native real
 * dtype of 4 or 8 bytes, v is C-contiguous with at least SEARCH_MIN_KEYS
 * keys, no sorter is given, and both are sorted; anything else is NumPy's
 * (NotImplemented to the caller).  Called with the GIL, which the check
 * and the merge release.
 */
#include "capture.h"
#include "hooks.h"

#include <string.h>

#define SEARCH_MIN_KEYS 1024
#define MERGE_WAYS 8
/* at most this many elements of a per key: the check that a is sorted
 * reads all of a, which NumPy's m binary searches do not (a table of 1e8
 * and 1024 keys: tens of milliseconds against tens of microseconds) */
#define SEARCH_MAX_RATIO 64

/* NumPy's order (npysort's LT): NaNs after every number */
#define FLT_LT(x, y) (((x) < (y)) | (((y) != (y)) & ((x) == (x)))) /* no branch: a NaN is rare, a mispredict costly */
#define INT_LT(x, y) ((x) < (y))
#define BELOW(LT, x) (right ? !LT(key, (x)) : LT((x), key))

/* For each element type: sorted_<name>, whether n elements at p (stride s
 * bytes) never descend; bisect_<name>, one key's index by a binary search;
 * merge_<name> and gallop_<name>, out[i] for the m sorted keys (contiguous)
 * -- left counts the elements of a below each key, right those not above
 * it. */
#define SEARCH_FUNCS(name, T, LT)                                                                                        \
    static int sorted_##name(const char *p, npy_intp n, npy_intp s)                                                      \
    {                                                                                                                    \
        /* in blocks without a branch per pair (vectorizable), the first                                               \
         * descent ends the check at its block */ \
        for (npy_intp b = 1; b < n; b += 1024) {                                                                         \
            npy_intp e = n - b > 1024 ? b + 1024 : n;                                                                    \
            int down = 0;                                                                                                \
            for (npy_intp i = b; i < e; i++)                                                                             \
                down |= LT(*(const T *)(p + i * s), *(const T *)(p + (i - 1) * s));                                      \
            if (down)                                                                                                    \
                return 0;                                                                                                \
        }                                                                                                                \
        return 1;                                                                                                        \
    }                                                                                                                    \
    /* the first index of n elements at a (stride s) not BELOW key */                                                    \
    static npy_intp bisect_##name(const char *a, npy_intp n, npy_intp s, T key, int right)                               \
    {                                                                                                                    \
        npy_intp lo = 0, hi = n;                                                                                         \
        while (lo < hi) {                                                                                                \
            npy_intp mid = lo + (hi - lo) / 2;                                                                           \
            if (BELOW(LT, *(const T *)(a + mid * s)))                                                                    \
                lo = mid + 1;                                                                                            \
            else                                                                                                         \
                hi = mid;                                                                                                \
        }                                                                                                                \
        return lo;                                                                                                       \
    }                                                                                                                    \
    /* as many keys as elements or more (n >= 1): a merge of the two, each                                            \
     * step past a key or an element, without a branch to mispredict; the                                             \
     * keys in MERGE_WAYS runs, each started by a bisection, merged side by                                           \
     * side so that their steps overlap (one merge is a chain of dependent                                            \
     * loads) */  \
    static void merge_##name(const char *a, npy_intp n, npy_intp s, const void *keys, npy_intp m, int right,             \
                             npy_intp *out)                                                                              \
    {                                                                                                                    \
        const T *k = keys;                                                                                               \
        npy_intp i[MERGE_WAYS], end[MERGE_WAYS], j[MERGE_WAYS];                                                          \
        for (int w = 0; w < MERGE_WAYS; w++) {                                                                           \
            i[w] = m / MERGE_WAYS * w;                                                                                   \
            end[w] = w == MERGE_WAYS - 1 ? m : m / MERGE_WAYS * (w + 1);                                                 \
            j[w] = i[w] < end[w] ? bisect_##name(a, n, s, k[i[w]], right) : 0;                                           \
        }                                                                                                                \
        for (int live = 1; live;) {                                                                                      \
            live = 0;                                                                                                    \
            for (int w = 0; w < MERGE_WAYS; w++) {                                                                       \
                if (i[w] == end[w])                                                                                      \
                    continue;                                                                                            \
                live = 1;                                                                                                \
                T key = k[i[w]];                                                                                         \
                npy_intp at = j[w] < n ? j[w] : n - 1;                                                                   \
                int below = (j[w] < n) & BELOW(LT, *(const T *)(a + at * s));                                            \
                out[i[w]] = j[w];                                                                                        \
                j[w] += below;                                                                                           \
                i[w] += !below;                                                                                          \
            }                                                                                                            \
        }                                                                                                                \
    }                                                                                                                    \
    static void gallop_##name(const char *a, npy_intp n, npy_intp s, const void *keys, npy_intp m, int right,            \
                              npy_intp *out)                                                                             \
    {                                                                                                                    \
        const T *k = keys;                                                                                               \
        npy_intp j = 0; /* the previous key's answer: no key's is smaller */                                             \
        for (npy_intp i = 0; i < m; i++) {                                                                               \
            T key = k[i];                                                                                                \
            /* BELOW(LT, x): x lies before the answer (left: x < key; right: not key < x) */                             \
            if (j < n && BELOW(LT, *(const T *)(a + j * s))) {                                                           \
                npy_intp lo = j, step = 1, hi = j + 1;                                                                   \
                while (hi < n && BELOW(LT, *(const T *)(a + hi * s))) {                                                  \
                    lo = hi;                                                                                             \
                    step *= 2;                                                                                           \
                    hi = n - lo > step ? lo + step : n;                                                                  \
                }                                                                                                        \
                /* BELOW(a[lo]); hi == n or not BELOW(a[hi]) */                                                          \
                while (hi - lo > 1) {                                                                                    \
                    npy_intp mid = lo + (hi - lo) / 2;                                                                   \
                    if (BELOW(LT, *(const T *)(a + mid * s)))                                                            \
                        lo = mid;                                                                                        \
                    else                                                                                                 \
                        hi = mid;                                                                                        \
                }                                                                                                        \
                j = hi;                                                                                                  \
            }                                                                                                            \
            out[i] = j;                                                                                                  \
        }                                                                                                                \
    }

SEARCH_FUNCS(f64, double, FLT_LT)
SEARCH_FUNCS(f32, float, FLT_LT)
SEARCH_FUNCS(i64, int64_t, INT_LT)
SEARCH_FUNCS(i32, int32_t, INT_LT)
SEARCH_FUNCS(u64, uint64_t, INT_LT)
SEARCH_FUNCS(u32, uint32_t, INT_LT)

typedef struct {
    int (*sorted)(const char *p, npy_intp n, npy_intp s);
    void (*merge)(const char *a, npy_intp n, npy_intp s, const void *keys, npy_intp m, int right, npy_intp *out);
    void (*gallop)(const char *a, npy_intp n, npy_intp s, const void *keys, npy_intp m, int right, npy_intp *out);
} SearchFuncs;

#define SEARCH_ENTRY(name)                         \
    {                                              \
        sorted_##name, merge_##name, gallop_##name \
    }
static const SearchFuncs search_funcs[6] = {SEARCH_ENTRY(f64), SEARCH_ENTRY(f32), SEARCH_ENTRY(i64),
                                            SEARCH_ENTRY(i32), SEARCH_ENTRY(u64), SEARCH_ENTRY(u32)};

/* The element type's index in search_funcs, or -1: 0 f64, 1 f32, 2 i64,
 * 3 i32, 4 u64, 5 u32. */
static int search_type(PyArray_Descr *d)
{
    if (!PyArray_ISNBO(d->byteorder) || (d->elsize != 4 && d->elsize != 8))
        return -1;
    int wide = d->elsize == 8;
    switch (d->kind) {
    case 'f': return wide ? 0 : 1;
    case 'i': return wide ? 2 : 3;
    case 'u': return wide ? 4 : 5;
    default: return -1;
    }
}

/* side= as NumPy spells it: 0 left, 1 right, -1 anything else (NumPy's
 * to judge) */
static int search_side(PyObject *side)
{
    if (!side)
        return 0;
    if (!PyUnicode_Check(side)) /* (None included) */
        return -1;
    if (PyUnicode_CompareWithASCIIString(side, "left") == 0)
        return 0;
    if (PyUnicode_CompareWithASCIIString(side, "right") == 0)
        return 1;
    return -1;
}

PyObject *gp_sorted_search(PyObject *args, PyObject *kwds)
{
    /* np.searchsorted(a, v, side='left', sorter=None) */
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    if (na < 2 || na > 4)
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *a = PyTuple_GET_ITEM(args, 0), *v = PyTuple_GET_ITEM(args, 1);
    PyObject *side = na > 2 ? PyTuple_GET_ITEM(args, 2) : NULL, *sorter = na > 3 ? PyTuple_GET_ITEM(args, 3) : NULL;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyObject *key, *val;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwds, &pos, &key, &val)) {
            if (PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "side") == 0 && !side)
                side = val;
            else if (PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "sorter") == 0 && !sorter)
                sorter = val;
            else
                Py_RETURN_NOTIMPLEMENTED;
        }
    }
    int right = search_side(side);
    if (right < 0 || (sorter && sorter != Py_None) || !PyArray_Check(a) || !PyArray_Check(v) ||
        gp_foreign_subclass(a) || gp_foreign_subclass(v))
        Py_RETURN_NOTIMPLEMENTED;
    PyArrayObject *A = (PyArrayObject *)a, *V = (PyArrayObject *)v;
    int t = search_type(PyArray_DESCR(A));
    if (t < 0 || PyArray_NDIM(A) != 1 || PyArray_SIZE(V) < SEARCH_MIN_KEYS ||
        !PyArray_EquivTypes(PyArray_DESCR(A), PyArray_DESCR(V)) || PyArray_DESCR(V)->kind != PyArray_DESCR(A)->kind ||
        !PyArray_IS_C_CONTIGUOUS(V) || !PyArray_ISALIGNED(A) || !PyArray_ISALIGNED(V) ||
        PyArray_DIM(A, 0) / SEARCH_MAX_RATIO > PyArray_SIZE(V))
        Py_RETURN_NOTIMPLEMENTED;
    if (gp_ensure_computed(A) < 0 || gp_ensure_computed(V) < 0)
        return NULL;
    const char *ap = PyArray_BYTES(A), *kp = PyArray_BYTES(V);
    npy_intp n = PyArray_DIM(A, 0), s = PyArray_STRIDE(A, 0), m = PyArray_SIZE(V);
    PyObject *r = PyArray_SimpleNew(PyArray_NDIM(V), PyArray_DIMS(V), NPY_INTP);
    if (!r)
        return NULL;
    npy_intp *out = (npy_intp *)PyArray_DATA((PyArrayObject *)r);
    const SearchFuncs *f = &search_funcs[t];
    int ok;
    /* without the GIL, as NumPy's binary search */
    Py_BEGIN_ALLOW_THREADS;
    ok = f->sorted(kp, m, PyArray_ITEMSIZE(V)) && f->sorted(ap, n, s);
    if (ok && n == 0)
        memset(out, 0, (size_t)m * sizeof *out);
    else if (ok)
        (n <= 4 * m ? f->merge : f->gallop)(ap, n, s, kp, m, right, out);
    Py_END_ALLOW_THREADS;
    if (!ok) {
        Py_DECREF(r);
        Py_RETURN_NOTIMPLEMENTED; /* NumPy's binary search (its answer for an unsorted a is its own) */
    }
    gp_hooks.sorted_searches++;
    return gp_wrap_result(r);
}
