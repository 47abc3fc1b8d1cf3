/* core/blas.h -- matrix products through OpenBLAS's CBLAS interface.
 *
 * The library node of Algorithm 1: its operands are materialized leaves,
 * its result a C-contiguous buffer.  Transposed and other strided 2-D
 * operands are folded into the call (CblasTrans, leading dimensions,
 * increments) rather than copied.  OpenBLAS is loaded with dlopen on first
 * use (NumPy's bundled copy when named, else the system's) and its thread
 * count follows grumpy's. */
#ifndef GP_BLAS_H
#define GP_BLAS_H

#include "gp.h"

/* A materialized operand: shape in elements, strides in bytes. */
typedef struct {
    int nd;
    const int64_t *shape;
    const int64_t *strides;
    const char *data;
} GpBlasOperand;

/* out := a @ b with NumPy's matmul rules (1-D operands promoted and the
 * added dim removed, batch dims broadcast), dtype float32 or float64; out
 * is C-contiguous of the result shape.  GP_OK, GP_EUNSUPPORTED when an
 * operand's layout cannot be passed to BLAS (the caller copies it and
 * retries), GP_EJIT when OpenBLAS cannot be loaded, or GP_ENOMEM when an
 * operand only a device holds cannot be copied to the host.  Core lock
 * held. */
GpStatus gp_blas_matmul(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out);

/* Use the OpenBLAS at path, whose CBLAS symbols are prefix + "cblas_dgemm"
 * + suffix (NumPy's bundled one: "scipy_", "64_", 64-bit integers).  Call
 * before the first product; otherwise the system libopenblas.so.0. */
GP_API void gp_blas_use_library(const char *path, const char *prefix, const char *suffix);

/* Threads OpenBLAS may use (called when grumpy's count changes). */
void gp_blas_set_threads(int n);

#endif
