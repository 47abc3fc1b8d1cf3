/* core/blas.c -- GEMM, GEMV and dot for the matmul library node.
 *
 * 1. Classify each 2-D operand (rows x cols, byte strides): row-major
 *    (unit column stride) -> CblasNoTrans with lda = row stride; column-major
 *    (unit row stride, e.g. W.T of a C array) -> CblasTrans with lda = column
 *    stride; anything else is refused (GP_EUNSUPPORTED) and the planner
 *    passes a C-contiguous copy instead.
 * 2. Shapes: (M,K)@(K,N) -> gemm, or syrk for a matrix times its own
 *    transpose, as NumPy does; (M,K)@(K,) and (K,)@(K,N) -> gemv (the
 *    second as the transposed product); (K,)@(K,) -> dot; batch dims
 *    (broadcast, stride 0 allowed) -> one gemm per batch index.
 * 3. The library is NumPy's own bundled OpenBLAS when the hooks name it
 *    (gp_blas_use_library: ILP64 symbols with a prefix and suffix), so the
 *    products are NumPy's bit for bit and one BLAS pool serves the process;
 *    otherwise the system's libopenblas.so.0.
 * Source of the interface: the CBLAS reference (netlib) as OpenBLAS
 * implements it; OpenBLAS's own header gives the prototypes.
 */
#include "blas.h"
#include "guard.h"

#include <cblas.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CBLAS entry points with 64-bit integers (NumPy's bundled ILP64 OpenBLAS)
 * or 32-bit ones (a system libopenblas); called through the macros below. */
typedef void (*GemmD64)(int, int, int, int64_t, int64_t, int64_t, double, const double *, int64_t, const double *,
                        int64_t, double, double *, int64_t);
typedef void (*GemmS64)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t, const float *, int64_t,
                        float, float *, int64_t);
typedef void (*GemvD64)(int, int, int64_t, int64_t, double, const double *, int64_t, const double *, int64_t, double,
                        double *, int64_t);
typedef void (*GemvS64)(int, int, int64_t, int64_t, float, const float *, int64_t, const float *, int64_t, float,
                        float *, int64_t);
typedef void (*SyrkD64)(int, int, int, int64_t, int64_t, double, const double *, int64_t, double, double *, int64_t);
typedef void (*SyrkS64)(int, int, int, int64_t, int64_t, float, const float *, int64_t, float, float *, int64_t);
typedef double (*DotD64)(int64_t, const double *, int64_t, const double *, int64_t);
typedef float (*DotS64)(int64_t, const float *, int64_t, const float *, int64_t);
typedef void (*SetThreads)(int);

static struct {
    int tried, ok, ilp64;
    void *dgemm, *sgemm, *dgemv, *sgemv, *ddot, *sdot, *dsyrk, *ssyrk;
    SetThreads set_threads;
    int threads;
    char path[1024], prefix[32], suffix[32];
} lib;

void gp_blas_use_library(const char *path, const char *prefix, const char *suffix)
{
    if (lib.tried)
        return;
    snprintf(lib.path, sizeof lib.path, "%s", path ? path : "");
    snprintf(lib.prefix, sizeof lib.prefix, "%s", prefix ? prefix : "");
    snprintf(lib.suffix, sizeof lib.suffix, "%s", suffix ? suffix : "");
}

static void *sym(void *h, const char *name)
{
    char full[128];
    snprintf(full, sizeof full, "%s%s%s", lib.prefix, name, lib.suffix);
    return dlsym(h, full);
}

static int load(void)
{
    if (lib.tried)
        return lib.ok;
    lib.tried = 1;
    void *h = NULL;
    if (lib.path[0]) {
        /* NumPy's own OpenBLAS: the products are NumPy's, bit for bit, and
         * there is one BLAS thread pool in the process */
        h = dlopen(lib.path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (!h)
            h = dlopen(lib.path, RTLD_NOW | RTLD_LOCAL);
        lib.ilp64 = strstr(lib.suffix, "64") != NULL;
    }
    if (!h) {
        /* Debian's OpenBLAS; idle threads sleep after 2^22 cycles (~1.7 ms)
         * instead of 2^28 (read once, when the library initialises; the
         * value grumpy/__init__.py sets for NumPy's, and why) */
        setenv("OPENBLAS_THREAD_TIMEOUT", "22", 0);
        lib.prefix[0] = lib.suffix[0] = 0;
        lib.ilp64 = 0;
        h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        gp_set_error("cannot load OpenBLAS: %s", dlerror());
        return 0;
    }
    lib.dgemm = sym(h, "cblas_dgemm");
    lib.sgemm = sym(h, "cblas_sgemm");
    lib.dgemv = sym(h, "cblas_dgemv");
    lib.sgemv = sym(h, "cblas_sgemv");
    lib.ddot = sym(h, "cblas_ddot");
    lib.sdot = sym(h, "cblas_sdot");
    lib.dsyrk = sym(h, "cblas_dsyrk");
    lib.ssyrk = sym(h, "cblas_ssyrk");
    char name[128]; /* prefix and suffix are at most 31 bytes each */
    snprintf(name, sizeof name, "%sopenblas_set_num_threads%s", lib.prefix, lib.suffix);
    lib.set_threads = (SetThreads)dlsym(h, name);
    lib.ok = lib.dgemm && lib.sgemm && lib.dgemv && lib.sgemv && lib.ddot && lib.sdot; /* syrk: when present */
    if (!lib.ok)
        gp_set_error("OpenBLAS lacks CBLAS symbols");
    if (lib.ok && lib.set_threads && lib.threads > 0)
        lib.set_threads(lib.threads);
    return lib.ok;
}

/* The 32-bit-integer prototypes, from OpenBLAS's cblas.h. */
#define CALL(fn, T64, T32, ...) (lib.ilp64 ? ((T64)lib.fn)(__VA_ARGS__) : ((__typeof__(&T32))lib.fn)(__VA_ARGS__))

void gp_blas_set_threads(int n)
{
    lib.threads = n;
    if (lib.ok && lib.set_threads)
        lib.set_threads(n);
}

typedef struct {
    enum CBLAS_TRANSPOSE trans; /* of the stored row-major matrix */
    int64_t ld;                 /* leading dimension, elements */
} Layout;

/* rows x cols with byte strides s0 (rows), s1 (cols); 0 if not BLAS-able. */
static int classify(int64_t rows, int64_t cols, int64_t s0, int64_t s1, int64_t e, Layout *l)
{
    if (rows <= 1)
        s0 = cols * s1; /* the row stride of a single row is irrelevant */
    if (cols <= 1)
        s1 = e;
    if (s1 == e && s0 % e == 0 && s0 / e >= (cols > 1 ? cols : 1)) {
        l->trans = CblasNoTrans;
        l->ld = s0 / e;
        return 1;
    }
    if (s0 == e && s1 % e == 0 && s1 / e >= (rows > 1 ? rows : 1)) {
        l->trans = CblasTrans;
        l->ld = s1 / e;
        return 1;
    }
    return 0;
}

static int vec_inc(int64_t n, int64_t stride, int64_t e, int64_t *inc)
{
    if (n <= 1) {
        *inc = 1;
        return 1;
    }
    if (stride <= 0 || stride % e)
        return 0;
    *inc = stride / e;
    return 1;
}

/* A product computed to resolve a guard fault can be asked for by code
 * running inside OpenBLAS's own thread pool: NumPy's dot reading a pending
 * grumpy array faults in the pool's workers, which then wait in the fault
 * handler for the resolver, so a call into that pool from the resolver
 * waits for them forever (found by the fuzzer, seed 56005011).  OpenBLAS
 * has no per-thread way to stay out of its pool (its "thread-local" count
 * is process-wide in pthread builds), so such products never enter
 * OpenBLAS: they are summed here, in k order on the calling thread (within
 * the rounding bound of OpenBLAS's order; DESIGN.md section 4). */
static int in_fault_context(void) { return gp_guard_on_resolver() || gp_guard_in_handler(); }

/* c(M,N) := a(M,K) b(K,N), all with byte strides (c: cs0, cs1). */
static void plain_gemm(GpDType t, int64_t M, int64_t N, int64_t K, const char *a, int64_t as0, int64_t as1,
                       const char *b, int64_t bs0, int64_t bs1, char *c, int64_t cs0, int64_t cs1)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            const char *pa = a + i * as0, *pb = b + j * bs1;
            if (t == GP_FLOAT64) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; k++)
                    acc += *(const double *)(pa + k * as1) * *(const double *)(pb + k * bs0);
                memcpy(c + i * cs0 + j * cs1, &acc, sizeof acc);
            } else {
                float acc = 0.0f;
                for (int64_t k = 0; k < K; k++)
                    acc += *(const float *)(pa + k * as1) * *(const float *)(pb + k * bs0);
                memcpy(c + i * cs0 + j * cs1, &acc, sizeof acc);
            }
        }
}

/* c(N,N) := a a^T or a^T a (la says which of the two the stored a gives):
 * a matrix times its own transpose, as NumPy's matmul computes it
 * (umath/matmul.c.src: the operands are one buffer with swapped strides):
 * the upper triangle by syrk, mirrored into the lower, so the result is
 * exactly symmetric and NumPy's bit for bit (gemm's is neither). */
static GpStatus syrk(GpDType t, int64_t N, int64_t K, const char *a, Layout la, char *c)
{
    if (t == GP_FLOAT64)
        CALL(dsyrk, SyrkD64, cblas_dsyrk, CblasRowMajor, CblasUpper, la.trans, N, K, 1.0, (const double *)a, la.ld, 0.0,
             (double *)c, N > 0 ? N : 1);
    else
        CALL(ssyrk, SyrkS64, cblas_ssyrk, CblasRowMajor, CblasUpper, la.trans, N, K, 1.0f, (const float *)a, la.ld,
             0.0f, (float *)c, N > 0 ? N : 1);
    int64_t e = (int64_t)gp_dtype_size(t);
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = i + 1; j < N; j++)
            memcpy(c + (j * N + i) * e, c + (i * N + j) * e, (size_t)e);
    return GP_OK;
}

/* g for c(M,N) := a(M,K) b(K,N), operands with byte strides; 0 when BLAS
 * cannot take a layout. */
static int describe(int64_t M, int64_t N, int64_t K, const char *a, int64_t as0, int64_t as1, const char *b,
                    int64_t bs0, int64_t bs1, int64_t e, GpGemm *g)
{
    Layout la, lb;
    if (!classify(M, K, as0, as1, e, &la) || !classify(K, N, bs0, bs1, e, &lb))
        return 0;
    *g = (GpGemm){M, N, K, a, b, la.trans == CblasTrans, lb.trans == CblasTrans, la.ld, lb.ld};
    return 1;
}

/* Whether g is a matrix times its own transpose (one buffer, swapped
 * strides): NumPy computes that with syrk. */
static int is_syrk(const GpGemm *g, int64_t as0, int64_t as1, int64_t bs0, int64_t bs1)
{
    return g->a == g->b && g->M == g->N && as0 == bs1 && as1 == bs0 && g->trans_a != g->trans_b;
}

static void call_gemm(GpDType t, const GpGemm *g, char *c)
{
    enum CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans, tb = g->trans_b ? CblasTrans : CblasNoTrans;
    int64_t ldc = g->N > 0 ? g->N : 1;
    if (t == GP_FLOAT64)
        CALL(dgemm, GemmD64, cblas_dgemm, CblasRowMajor, ta, tb, g->M, g->N, g->K, 1.0, (const double *)g->a, g->lda,
             (const double *)g->b, g->ldb, 0.0, (double *)c, ldc);
    else
        CALL(sgemm, GemmS64, cblas_sgemm, CblasRowMajor, ta, tb, g->M, g->N, g->K, 1.0f, (const float *)g->a, g->lda,
             (const float *)g->b, g->ldb, 0.0f, (float *)c, ldc);
}

GpStatus gp_blas_gemm(GpDType t, const GpGemm *g, char *c)
{
    int64_t e = (int64_t)gp_dtype_size(t);
    if (in_fault_context()) { /* never into OpenBLAS's pool (in_fault_context) */
        int64_t as0 = g->trans_a ? e : g->lda * e, as1 = g->trans_a ? g->lda * e : e;
        int64_t bs0 = g->trans_b ? e : g->ldb * e, bs1 = g->trans_b ? g->ldb * e : e;
        plain_gemm(t, g->M, g->N, g->K, g->a, as0, as1, g->b, bs0, bs1, c, g->N * e, e);
        return GP_OK;
    }
    if (!load())
        return GP_EJIT;
    call_gemm(t, g, c);
    return GP_OK;
}

int64_t gp_gemm_extent(GpDType t, const GpGemm *g, int which)
{
    int trans = which ? g->trans_b : g->trans_a;
    int64_t r = which ? g->K : g->M, c = which ? g->N : g->K, ld = which ? g->ldb : g->lda;
    int64_t rows = trans ? c : r, cols = trans ? r : c;
    return ((rows - 1) * ld + cols) * (int64_t)gp_dtype_size(t);
}

static GpStatus gemm(GpDType t, int64_t M, int64_t N, int64_t K, const char *a, int64_t as0, int64_t as1, const char *b,
                     int64_t bs0, int64_t bs1, char *c)
{
    int64_t e = (int64_t)gp_dtype_size(t);
    if (in_fault_context()) {
        plain_gemm(t, M, N, K, a, as0, as1, b, bs0, bs1, c, N * e, e);
        return GP_OK;
    }
    GpGemm g;
    if (!describe(M, N, K, a, as0, as1, b, bs0, bs1, e, &g))
        return GP_EUNSUPPORTED;
    gp_stats.gemm_calls++;
    if (is_syrk(&g, as0, as1, bs0, bs1) && (t == GP_FLOAT64 ? lib.dsyrk : lib.ssyrk))
        return syrk(t, N, K, a, (Layout){g.trans_a ? CblasTrans : CblasNoTrans, g.lda}, c);
    call_gemm(t, &g, c);
    return GP_OK;
}

/* y(R) := A(R,K) x(K): A with byte strides s0, s1; x with stride xs. */
static GpStatus gemv(GpDType t, int64_t R, int64_t K, const char *a, int64_t s0, int64_t s1, const char *x, int64_t xs,
                     char *y)
{
    if (in_fault_context()) { /* y(R,1) := a(R,K) x(K,1) */
        int64_t e = (int64_t)gp_dtype_size(t);
        plain_gemm(t, R, 1, K, a, s0, s1, x, xs, 0, y, e, 0);
        return GP_OK;
    }
    int64_t e = (int64_t)gp_dtype_size(t), incx;
    Layout l;
    if (!classify(R, K, s0, s1, e, &l) || !vec_inc(K, xs, e, &incx))
        return GP_EUNSUPPORTED;
    /* stored matrix: R x K row-major (NoTrans), or K x R row-major (Trans) */
    int64_t rows = l.trans == CblasNoTrans ? R : K, cols = l.trans == CblasNoTrans ? K : R;
    if (R == 0)
        return GP_OK;
    if (K == 0) {
        memset(y, 0, (size_t)(R * e));
        return GP_OK;
    }
    gp_stats.gemv_calls++;
    if (t == GP_FLOAT64)
        CALL(dgemv, GemvD64, cblas_dgemv, CblasRowMajor, l.trans, rows, cols, 1.0, (const double *)a, l.ld,
             (const double *)x, incx, 0.0, (double *)y, 1);
    else
        CALL(sgemv, GemvS64, cblas_sgemv, CblasRowMajor, l.trans, rows, cols, 1.0f, (const float *)a, l.ld,
             (const float *)x, incx, 0.0f, (float *)y, 1);
    return GP_OK;
}

/* out[i] := M_i x (or M_i^T x when transposed) for every batch index i of
 * the stacked matrices m. */
static GpStatus batched_gemv(GpDType t, GpBlasOperand m, int transposed, GpBlasOperand x, char *out)
{
    int64_t e = (int64_t)gp_dtype_size(t), nb = 1;
    int r = transposed ? m.nd - 1 : m.nd - 2, c = transposed ? m.nd - 2 : m.nd - 1;
    int64_t R = m.shape[r], K = m.shape[c], rs = m.strides[r], cs = m.strides[c];
    for (int d = 0; d < m.nd - 2; d++)
        nb *= m.shape[d];
    for (int64_t i = 0; i < nb; i++) {
        int64_t off = 0, rem = i;
        for (int d = m.nd - 3; d >= 0; d--) {
            off += (rem % m.shape[d]) * m.strides[d];
            rem /= m.shape[d];
        }
        GpStatus st = gemv(t, R, K, m.data + off, rs, cs, x.data, x.strides[0], out + i * R * e);
        if (st != GP_OK)
            return st;
    }
    return GP_OK;
}

static GpStatus matmul(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out);

/* OpenBLAS's threads read x's host memory: a value only a device holds
 * (guard.h GP_ON_DEVICE) is copied to the host first -- their fault
 * would wait for the core lock, which the caller holds while it waits
 * for them.  0, or -1 (it could not be copied). */
static int on_host(GpBlasOperand x)
{
    int64_t n = 1;
    for (int d = 0; d < x.nd; d++)
        n *= x.shape[d];
    GpBuffer *b = n ? gp_buffer_lookup(x.data) : NULL;
    return b && __atomic_load_n(&b->where, __ATOMIC_ACQUIRE) == GP_ON_DEVICE ? gp_buffer_to_host(b) : 0;
}

/* The batch dims of a @ b (a at least 2-D; b 2-D or more, or 1-D: no
 * batch dims): their broadcast shape and each operand's byte stride per
 * dim (0 where it broadcasts).  Returns their number; *nb is the batch
 * count. */
static int batch_dims(GpBlasOperand a, GpBlasOperand b, int64_t *bshape, int64_t *astr, int64_t *bstr, int64_t *nb)
{
    int bnd_b = b.nd >= 2 ? b.nd - 2 : 0, bnd = (a.nd - 2 > bnd_b ? a.nd - 2 : bnd_b);
    *nb = 1;
    for (int d = 0; d < bnd; d++) {
        int da = d - (bnd - (a.nd - 2)), db = d - (bnd - bnd_b);
        int64_t sa = da >= 0 ? a.shape[da] : 1, sb = db >= 0 ? b.shape[db] : 1;
        bshape[d] = sa == 1 ? sb : sa; /* 1 broadcasts; a 0-length batch stays 0 */
        astr[d] = da >= 0 && sa != 1 ? a.strides[da] : 0;
        bstr[d] = db >= 0 && sb != 1 ? b.strides[db] : 0;
        *nb *= bshape[d];
    }
    return bnd;
}

/* Whether the batch of a folds into M: the other operand is one matrix for
 * every batch index (bstr all 0) and a's rows (M per index, nb indices)
 * are evenly spaced, *row_stride bytes apart; *rows = nb * M. */
static int folds(GpBlasOperand a, int bnd, const int64_t *bstr, int64_t nb, int64_t M, int64_t *rows,
                 int64_t *row_stride)
{
    for (int d = 0; d < bnd; d++)
        if (bstr[d] != 0)
            return 0;
    /* (a stride-0 dim, a broadcast row, is not a first dim's "no stride
     * yet": np.broadcast_to(x[:, None, :], (2, 3, K)) @ W once folded its
     * rows 2 apart instead of 3 x 0 apart, and returned zeros) */
    int64_t want = 0;
    int first = 1;
    *rows = 1;
    *row_stride = a.strides[a.nd - 2];
    for (int d = a.nd - 2; d >= 0; d--) {
        if (a.shape[d] == 1)
            continue;
        if (first)
            *row_stride = a.strides[d];
        else if (a.strides[d] != want)
            return 0;
        first = 0;
        want = a.strides[d] * a.shape[d];
        *rows *= a.shape[d];
    }
    return *rows == nb * M;
}

int gp_blas_as_gemm(GpDType t, GpBlasOperand a, GpBlasOperand b, GpGemm *g)
{
    if ((t != GP_FLOAT32 && t != GP_FLOAT64) || a.nd < 1 || b.nd < 1 || (a.nd == 1 && b.nd == 1))
        return 0;
    int64_t e = (int64_t)gp_dtype_size(t), M, K, N, as0, as1, bs0, bs1;
    if (a.nd == 1) { /* (K,) @ (K, N): a one-row matrix; a stack of b is several products */
        if (b.nd != 2)
            return 0;
        M = 1, K = a.shape[0], N = b.shape[1];
        as0 = 0, as1 = a.strides[0], bs0 = b.strides[0], bs1 = b.strides[1];
    } else {
        int64_t bshape[GP_MAXDIMS], astr[GP_MAXDIMS], bstr[GP_MAXDIMS], nb;
        int bnd = batch_dims(a, b, bshape, astr, bstr, &nb);
        K = a.shape[a.nd - 1];
        N = b.nd == 1 ? 1 : b.shape[b.nd - 1]; /* (..., M, K) @ (K,): a one-column matrix */
        bs0 = b.nd == 1 ? b.strides[0] : b.strides[b.nd - 2];
        bs1 = b.nd == 1 ? e : b.strides[b.nd - 1];
        as1 = a.strides[a.nd - 1];
        if (nb == 0 || !folds(a, bnd, bstr, nb, a.shape[a.nd - 2], &M, &as0))
            return 0;
    }
    if (M <= 0 || N <= 0 || K <= 0 || !describe(M, N, K, a.data, as0, as1, b.data, bs0, bs1, e, g))
        return 0;
    return !is_syrk(g, as0, as1, bs0, bs1);
}

GpStatus gp_blas_matmul(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out)
{
    if (t != GP_FLOAT32 && t != GP_FLOAT64)
        return GP_EUNSUPPORTED;
    if (!load())
        return GP_EJIT;
    if (on_host(a) != 0 || on_host(b) != 0) {
        gp_set_error("no memory to copy a product's operand to the host");
        return GP_ENOMEM;
    }
    return matmul(t, a, b, out);
}

static GpStatus matmul(GpDType t, GpBlasOperand a, GpBlasOperand b, char *out)
{
    int64_t e = (int64_t)gp_dtype_size(t);
    if (a.nd == 1 && b.nd == 1 && in_fault_context()) {
        plain_gemm(t, 1, 1, a.shape[0], a.data, 0, a.strides[0], b.data, b.strides[0], 0, out, 0, 0);
        return GP_OK;
    }
    if (a.nd == 1 && b.nd == 1) {
        int64_t ia, ib, K = a.shape[0];
        if (!vec_inc(K, a.strides[0], e, &ia) || !vec_inc(K, b.strides[0], e, &ib))
            return GP_EUNSUPPORTED;
        gp_stats.dot_calls++;
        if (t == GP_FLOAT64) {
            double r =
                K ? CALL(ddot, DotD64, cblas_ddot, K, (const double *)a.data, ia, (const double *)b.data, ib) : 0.0;
            memcpy(out, &r, sizeof r);
        } else {
            float r =
                K ? CALL(sdot, DotS64, cblas_sdot, K, (const float *)a.data, ia, (const float *)b.data, ib) : 0.0f;
            memcpy(out, &r, sizeof r);
        }
        return GP_OK;
    }
    if (b.nd == 1) /* (..., M, K) @ (K,): A x per batch index of a */
        return batched_gemv(t, a, 0, b, out);
    if (a.nd == 1) /* (K,) @ (..., K, N) = B^T a per batch index of b */
        return batched_gemv(t, b, 1, a, out);
    /* (..., M, K) @ (..., K, N) with broadcast batch dims */
    int64_t M = a.shape[a.nd - 2], K = a.shape[a.nd - 1], N = b.shape[b.nd - 1];
    int64_t bshape[GP_MAXDIMS], astr[GP_MAXDIMS], bstr[GP_MAXDIMS], nb, rows, row_stride;
    int bnd = batch_dims(a, b, bshape, astr, bstr, &nb);
    /* b the same matrix for every batch index (a 2-D weight applied to a
     * stack: x @ W): one GEMM with the batch folded into M (13,750 one-row
     * GEMMs were 3.4x slower than NumPy) */
    if (nb > 1 && M > 0 && N > 0 && K > 0 && folds(a, bnd, bstr, nb, M, &rows, &row_stride))
        return gemm(t, rows, N, K, a.data, row_stride, a.strides[a.nd - 1], b.data, b.strides[b.nd - 2],
                    b.strides[b.nd - 1], out);
    for (int64_t i = 0; i < nb; i++) {
        int64_t oa = 0, ob = 0, rem = i;
        for (int d = bnd - 1; d >= 0; d--) {
            int64_t idx = rem % bshape[d];
            rem /= bshape[d];
            oa += idx * astr[d];
            ob += idx * bstr[d];
        }
        if (M == 0 || N == 0)
            continue;
        if (K == 0) {
            memset(out + i * M * N * e, 0, (size_t)(M * N * e));
            continue;
        }
        GpStatus st = gemm(t, M, N, K, a.data + oa, a.strides[a.nd - 2], a.strides[a.nd - 1], b.data + ob,
                           b.strides[b.nd - 2], b.strides[b.nd - 1], out + i * M * N * e);
        if (st != GP_OK)
            return st;
    }
    return GP_OK;
}

/* Four 32-bit lanes (GCC / Clang vector extensions, one SSE2 operation
 * each: wider vectors or 64-bit lane compares are scalarized without AVX
 * or SSE4.1): -O2 leaves the scalar loop unvectorized, and a scalar scan
 * of a 512 KB product cost ~8% of the GEMM it checks (tools/rnn.py's
 * 256 x 512 x 512 float32 products). */
typedef uint32_t GpU32x4 __attribute__((vector_size(16)));

/* Whether a word w[j] of w[0 .. nwords), nwords a multiple of 4, has
 * (w[j] & mask[j % 4]) == mask[j % 4] where lanes[j % 4] is set. */
static int any_masked_word(const uint32_t *w, int64_t nwords, GpU32x4 mask, GpU32x4 lanes)
{
    GpU32x4 acc = {0, 0, 0, 0};
    for (int64_t j = 0; j < nwords; j += 4) {
        GpU32x4 x;
        memcpy(&x, w + j, sizeof x);
        acc |= (GpU32x4)((x & mask) == mask) & lanes;
    }
    return (acc[0] | acc[1] | acc[2] | acc[3]) != 0;
}

int gp_blas_any_nonfinite(GpDType t, const void *p, int64_t n)
{
    /* the exponent bits all ones: an infinity or a NaN (integer tests: no
     * IEEE flag raised on this thread); a float64's are in its high word */
    if (t == GP_FLOAT64) {
        const uint64_t *v = p, e = 0x7ff0000000000000ull;
        const uint32_t hi = (uint32_t)(e >> 32);
        int64_t body = n / 2 * 2;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        const GpU32x4 mask = {hi, 0, hi, 0}, lanes = {~0u, 0, ~0u, 0};
#else
        const GpU32x4 mask = {0, hi, 0, hi}, lanes = {0, ~0u, 0, ~0u};
#endif
        if (any_masked_word(p, 2 * body, mask, lanes))
            return 1;
        for (int64_t i = body; i < n; i++)
            if ((v[i] & e) == e)
                return 1;
        return 0;
    }
    if (t == GP_FLOAT32) {
        const uint32_t *v = p, e = 0x7f800000u;
        int64_t body = n / 4 * 4;
        if (any_masked_word(v, body, (GpU32x4){e, e, e, e}, (GpU32x4){~0u, ~0u, ~0u, ~0u}))
            return 1;
        for (int64_t i = body; i < n; i++)
            if ((v[i] & e) == e)
                return 1;
        return 0;
    }
    return 0;
}
