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

/* One GEMM, c(M,N) := op(a) op(b) with c C-contiguous (ldc = N): a is
 * stored M x K row-major (trans_a 0) or K x M row-major (trans_a 1, its
 * transpose), leading dimension lda elements; b likewise K x N or N x K.
 * Pointers are to the first stored elements. */
typedef struct {
    int64_t M, N, K;
    const char *a, *b;
    int trans_a, trans_b;
    int64_t lda, ldb;
} GpGemm;

/* Whether out := a @ b (gp_blas_matmul's rules) is one GEMM, *g: 2-D
 * operands, a matrix and a vector (the vector an (N=1 or M=1) matrix), or
 * a stack of matrices times one matrix whose batch rows are evenly spaced
 * (the batch folded into M).  0 for anything else: several GEMMs, a layout
 * BLAS cannot take, an empty dim, a vector dot, or a matrix times its own
 * transpose (NumPy's syrk makes that exactly symmetric; gemm does not). */
int gp_blas_as_gemm(GpDType t, GpBlasOperand a, GpBlasOperand b, GpGemm *g);

/* The bytes operand a (which 0) or b (which 1) of g spans from its first
 * element. */
int64_t gp_gemm_extent(GpDType t, const GpGemm *g, int which);

/* c := g on the host (OpenBLAS), c C-contiguous M x N.  GP_OK, or GP_EJIT
 * when OpenBLAS cannot be loaded.  Core lock held. */
GpStatus gp_blas_gemm(GpDType t, const GpGemm *g, char *c);

/* Whether any of the n elements of type t (float32 or float64; other
 * dtypes: 0) at p is an infinity or a NaN: a product that NumPy would
 * have computed with its IEEE flags checked ("overflow encountered in
 * matmul") and BLAS through grumpy did not.  One pass over p. */
GP_API int gp_blas_any_nonfinite(GpDType t, const void *p, int64_t n);

/* Use the OpenBLAS at path, whose CBLAS symbols are prefix + "cblas_dgemm"
 * + suffix (NumPy's bundled one: "scipy_", "64_", 64-bit integers).  Call
 * before the first product; otherwise the system libopenblas.so.0. */
GP_API void gp_blas_use_library(const char *path, const char *prefix, const char *suffix);

/* Threads OpenBLAS may use (called when grumpy's count changes). */
void gp_blas_set_threads(int n);

#endif
