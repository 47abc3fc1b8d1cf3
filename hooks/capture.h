/* hooks/capture.h -- what the capture files share (capture.c: ufuncs,
 * reductions, scans, the dispatch of NumPy functions; capture_linalg.c:
 * products and contractions; capture_writes.c: writes into arrays, copyto,
 * concatenate).  GIL held throughout. */
#ifndef GP_CAPTURE_H
#define GP_CAPTURE_H

#include "hooks.h"

enum { CODE_PYINT = GP_NDTYPES, CODE_PYFLOAT, NCODES };

typedef struct {
    PyObject *obj; /* borrowed */
    int code;      /* GpDType, CODE_PYINT or CODE_PYFLOAT */
    int is_array;
    int library; /* an operand of a library call (gp_node_for_library_operand); gp_classify sets 0 */
    int pending;
} Operand;

/* An ndarray of another subclass (MaskedArray, matrix, memmap, a user's):
 * an operation with one is NumPy's. */
int gp_foreign_subclass(PyObject *o);
/* Classifies operand o (an array, or a Python / NumPy scalar) into *x:
 * 0, or -1 when it cannot be captured. */
int gp_classify(PyObject *o, Operand *x);
/* The node of operand x converted to loop dtype t (a CAST when needed).
 * New reference or NULL. */
GpNode *gp_operand_node(const Operand *x, GpDType t);
/* A fresh grumpy array for pending node r. */
PyObject *gp_node_result(GpNode *r);
int64_t gp_shape_size(int nd, const int64_t *shape);
/* PyArray_Newshape(a, shape, C order), for a shape that merges a's dims in
 * order.  When NumPy would copy (the reshape is not a view) and a is
 * pending, a is computed first, here, with its warnings: NumPy's copy
 * would read its memory inside a page fault, where the kernel's warnings,
 * and those of siblings fused with it, are lost (`np.log(v)` beside
 * `np.tensordot(v.T, v.T, axes=2)`: warnings fuzz case 671001358).  New
 * reference, or NULL with an exception. */
PyObject *gp_newshape_computed(PyArrayObject *a, PyArray_Dims *shape);
/* NumPy's loop dtypes for op on operand codes (ufunc.resolve_dtypes,
 * cached): 0, or -1 when NumPy refuses or grumpy cannot compute them. */
int gp_resolve_loop(GpOp op, int nin, const int *codes, int reduction, int8_t *loop);
/* Whether a's elements overlap each other in memory. */
int gp_has_internal_overlap(PyArrayObject *a);
/* Whether a lazy write into view (inside buffer b) would stage far more
 * than it writes (GRUMPY_ADAPTIVE on): then NumPy writes it. */
int gp_write_stages_too_much(PyArrayObject *view, const GpBuffer *b);
/* Before n becomes b's pending in-place writer (gp_node_set_output_view,
 * which keeps one writer per buffer): a producer of b recorded since the
 * caller computed b's writes -- by another Python thread writing another
 * part of b, which can run between the two (the GIL passes in a
 * finalizer, a copy, a flush) -- is computed first, so that the writes
 * happen in the order they were recorded and none is forgotten.  Core
 * lock held; GP_OK or the failure (gp_last_error says why). */
GpStatus gp_settle_other_writer_locked(GpBuffer *b, GpNode *n);
/* Whether array o broadcasts to t's shape (NumPy's rules). */
int gp_broadcasts_to(PyArrayObject *o, PyArrayObject *t);
/* A map op over objs[0..nin) (out= and where= as the ufunc's). */
PyObject *gp_capture_map(GpOp op, PyObject *const *objs, int nin, PyObject *out, PyObject *where);
/* ndim of an array, -1 for anything else. */
int gp_ndim_of(PyObject *o);

/* capture_linalg.c */
PyObject *gp_capture_tensordot(PyObject *a, PyObject *b, PyObject *axes);
PyObject *gp_capture_einsum(PyObject *spec, PyObject *a, PyObject *b);
/* capture_writes.c */
PyObject *gp_capture_copyto(PyObject *args, PyObject *kwds);
PyObject *gp_capture_concatenate(PyObject *args, PyObject *kwds);
PyObject *gp_capture_roll(PyObject *args, PyObject *kwds);
/* x[key] for a computed 1-D x and one integer index array key: a pending
 * gather (GP_OP_GATHER), or NotImplemented (NumPy's indexing). */
PyObject *gp_capture_gather(PyArrayObject *x, PyObject *key);
/* sorted_search.c: np.searchsorted(a, v, side=, sorter=) of a sorted 1-D a
 * and sorted keys v by a merge, NumPy's answer as an intp array of v's
 * shape; NotImplemented for anything else (NumPy's). */
PyObject *gp_sorted_search(PyObject *args, PyObject *kwds);

#endif
