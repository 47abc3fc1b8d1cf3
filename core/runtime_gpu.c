/* core/runtime_gpu.c -- the GPU device table of runtime_gpu.h: the CUDA
 * Driver API through dlopen, and the emulated device of tests.
 *
 * CUDA: the few driver entry points grumpy uses are declared here with the
 * driver's C ABI (CUresult is an int, handles are pointers, device
 * addresses 64-bit integers; the _v2 symbols are the current ones), so
 * building needs no CUDA headers and running needs no driver until
 * GRUMPY_BACKEND=gpu asks for one.  Source of the ABI: the CUDA Driver API
 * reference (cuda.h of CUDA 12/13).
 */
#include "runtime_gpu.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- emulated: host memory, host functions ------------------------------ */

/* The lower levels of a pairwise sum's tree (backend_gpu.c: Chunks, device_chunks), one
 * thread per (row o, chunk c) of total = outer * nchunks, grid-stride:
 *   k(ptr partial, ptr chunks, ptr pairs, i64 nleaves, i64 nchunks,
 *     i64 total, ptr out)
 * row r = partial + o * nleaves slots of 8 bytes (GpScalar: a float32 in
 * the first 4); chunk c = chunks[3c..3c+2] = (first pair, pairs, first
 * leaf); for each of its pairs (a, b) in order r[a] += r[b] (add.rn: IEEE
 * round to nearest, no contraction); then out[o * nchunks + c] = r[first
 * leaf].  Hand-written: no program makes it (codegen.c's kernels are the
 * programs'); gp_ptx_dump writes it with theirs, for ptxas in the tests.
 * Here, below both back ends: the CPU back end's gp_ptx_dump writes it too. */
#define PAIRS_ENTRY(T, R, S)                                                                                         \
    ".visible .entry gp_pairs_" T "(.param .u64 partial, .param .u64 chunks, .param .u64 pairs,\n"                   \
    "    .param .u64 nleaves, .param .u64 nchunks, .param .u64 total, .param .u64 out)\n"                            \
    "{\n"                                                                                                            \
    "  .reg .pred %p<3>;\n  .reg .b32 %r<5>;\n  .reg .b64 %d<30>;\n  .reg ." R " %v<4>;\n"                           \
    "  ld.param.u64 %d1, [partial];\n  cvta.to.global.u64 %d1, %d1;\n"                                               \
    "  ld.param.u64 %d2, [chunks];\n  cvta.to.global.u64 %d2, %d2;\n"                                                \
    "  ld.param.u64 %d3, [pairs];\n  cvta.to.global.u64 %d3, %d3;\n"                                                 \
    "  ld.param.u64 %d4, [nleaves];\n  ld.param.u64 %d5, [nchunks];\n  ld.param.u64 %d6, [total];\n"                 \
    "  ld.param.u64 %d7, [out];\n  cvta.to.global.u64 %d7, %d7;\n"                                                   \
    "  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n  mov.u32 %r3, %tid.x;\n  mov.u32 %r4, %nctaid.x;\n"         \
    "  mul.wide.u32 %d8, %r1, %r2;\n  cvt.u64.u32 %d9, %r3;\n  add.u64 %d10, %d8, %d9;\n"                            \
    "  mul.wide.u32 %d11, %r4, %r2;\n"                                                                               \
    "$" T "_thread:\n"                                                                                               \
    "  setp.ge.u64 %p1, %d10, %d6;\n  @%p1 bra $" T "_done;\n"                                                       \
    "  div.u64 %d12, %d10, %d5;\n  rem.u64 %d13, %d10, %d5;\n"                                                       \
    "  mul.lo.u64 %d14, %d12, %d4;\n  shl.b64 %d14, %d14, 3;\n  add.u64 %d15, %d1, %d14;\n"                          \
    "  mul.lo.u64 %d16, %d13, 24;\n  add.u64 %d16, %d2, %d16;\n"                                                     \
    "  ld.global.u64 %d17, [%d16];\n  ld.global.u64 %d18, [%d16+8];\n  ld.global.u64 %d19, [%d16+16];\n"             \
    "  shl.b64 %d20, %d17, 4;\n  add.u64 %d20, %d3, %d20;\n  shl.b64 %d21, %d18, 4;\n  add.u64 %d21, %d20, %d21;\n"  \
    "$" T "_pair:\n"                                                                                                 \
    "  setp.ge.u64 %p2, %d20, %d21;\n  @%p2 bra $" T "_store;\n"                                                     \
    "  ld.global.u64 %d22, [%d20];\n  ld.global.u64 %d23, [%d20+8];\n"                                               \
    "  shl.b64 %d22, %d22, 3;\n  add.u64 %d22, %d15, %d22;\n  shl.b64 %d23, %d23, 3;\n  add.u64 %d23, %d15, %d23;\n" \
    "  ld.global." S " %v1, [%d22];\n  ld.global." S " %v2, [%d23];\n  add.rn." S " %v3, %v1, %v2;\n"                \
    "  st.global." S " [%d22], %v3;\n"                                                                               \
    "  add.u64 %d20, %d20, 16;\n  bra $" T "_pair;\n"                                                                \
    "$" T "_store:\n"                                                                                                \
    "  shl.b64 %d24, %d19, 3;\n  add.u64 %d24, %d15, %d24;\n  ld.global.u64 %d25, [%d24];\n"                         \
    "  shl.b64 %d26, %d10, 3;\n  add.u64 %d26, %d7, %d26;\n  st.global.u64 [%d26], %d25;\n"                          \
    "  add.u64 %d10, %d10, %d11;\n  bra $" T "_thread;\n"                                                            \
    "$" T "_done:\n  ret;\n}\n"

const char gp_pairs_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n\n" PAIRS_ENTRY("f64", "f64", "f64")
    PAIRS_ENTRY("f32", "f32", "f32");

typedef void (*GridMap)(void *a, int64_t outer, int64_t inner, void *flags);
typedef void (*GridReduce)(void *a, void *leaves, int64_t nleaves, int64_t outer, void *partial, void *flags);
typedef void (*GridPairs)(void *partial, void *chunks, void *pairs, int64_t nleaves, int64_t nchunks, int64_t total,
                          void *out);

static void *emu_load(const void *image, const char *name)
{
    (void)name;
    return (void *)image; /* the host function itself */
}

static int emu_launch(void *k, void **params, int nparams, int64_t nthreads)
{
    (void)nthreads;   /* the host grid loops over every index itself */
    if (nparams == 7) /* backend_gpu.c's gp_pairs kernels */
        ((GridPairs)k)(*(void **)params[0], *(void **)params[1], *(void **)params[2], *(int64_t *)params[3],
                       *(int64_t *)params[4], *(int64_t *)params[5], *(void **)params[6]);
    else if (nparams == 6)
        ((GridReduce)k)(*(void **)params[0], *(void **)params[1], *(int64_t *)params[2], *(int64_t *)params[3],
                        *(void **)params[4], *(void **)params[5]);
    else
        ((GridMap)k)(*(void **)params[0], *(int64_t *)params[1], *(int64_t *)params[2], *(void **)params[3]);
    return 0;
}

static int emu_alloc(size_t n, GpDevPtr *d)
{
    void *p = calloc(1, n ? n : 1);
    *d = (GpDevPtr)(uintptr_t)p;
    if (!p)
        gp_set_error("emulated device: out of memory (%zu bytes)", n);
    return p ? 0 : -1;
}

static void emu_release(GpDevPtr d) { free((void *)(uintptr_t)d); }

static void *emu_host_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        gp_set_error("emulated device: out of host memory (%zu bytes)", n);
    return p;
}

static int emu_upload(GpDevPtr d, const void *h, size_t n)
{
    memcpy((void *)(uintptr_t)d, h, n);
    return 0;
}

static int emu_download(void *h, GpDevPtr d, size_t n)
{
    memcpy(h, (const void *)(uintptr_t)d, n);
    return 0;
}

static int emu_copy(GpDevPtr dst, GpDevPtr src, size_t n)
{
    memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return 0;
}

/* OpenBLAS's gemm on the host memory that is this device's (a matrix
 * times a vector too, where the CPU back end calls gemv: the same values
 * within rounding, not bit for bit). */
static GpStatus emu_gemm(GpDType t, const GpGemm *g, GpDevPtr a, GpDevPtr b, GpDevPtr c)
{
    if (!a && !b && !c)
        return GP_OK; /* the probe */
    GpGemm h = *g;
    h.a = (const char *)(uintptr_t)a;
    h.b = (const char *)(uintptr_t)b;
    return gp_blas_gemm(t, &h, (char *)(uintptr_t)c);
}

static const GpDevice emulated = {"emulated",     0,    "host",     emu_load,     emu_launch, emu_alloc, emu_release,
                                  emu_host_alloc, free, emu_upload, emu_download, emu_upload, emu_copy,  emu_gemm};

/* ---- CUDA through the driver API ---------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;

#define CU_ATTR_CC_MAJOR 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CU_ATTR_CC_MINOR 76
#define CU_ATTR_MEMORY_POOLS 115    /* CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED */
#define CU_POOL_RELEASE_THRESHOLD 4 /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (a cuuint64_t) */
/* Bytes the stream-ordered pool keeps for reuse beyond those in use; more
 * goes back to the device at the next synchronization (the default, 0,
 * returns every freed block at each). */
#define CU_POOL_KEEP ((unsigned long long)1 << 30)

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                             void **, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemAllocHost)(void **, size_t);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, void *);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* stream-ordered allocation (CUDA 11.2): used where all are found and
     * the device supports memory pools (pool not NULL) */
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, void *);
    CUresult (*MemFreeAsync)(CUdeviceptr, void *);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, void *);
    CUresult (*DeviceGetDefaultMemPool)(void **, CUdevice);
    CUresult (*MemPoolSetAttribute)(void *, int, void *);
    CUresult (*MemPoolTrimTo)(void *, size_t);
    /* pinned copies (copy_pinned): used where both are found */
    CUresult (*MemHostRegister)(void *, size_t, unsigned);
    CUresult (*MemHostUnregister)(void *);
    void *pool;
    CUcontext ctx;
    char arch[16];
} cu;

static int cu_check(CUresult r, const char *what)
{
    if (r == 0)
        return 0;
    const char *s = NULL;
    if (cu.GetErrorString)
        cu.GetErrorString(r, &s);
    gp_set_error("CUDA %s: %s (%d)", what, s ? s : "error", r);
    return -1;
}

static void *cu_load(const void *image, const char *name)
{
    CUmodule mod;
    CUfunction fn;
    if (cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent") ||
        cu_check(cu.ModuleLoadDataEx(&mod, image, 0, NULL, NULL), "cuModuleLoadDataEx") ||
        cu_check(cu.ModuleGetFunction(&fn, mod, name), "cuModuleGetFunction"))
        return NULL;
    return fn;
}

static int cu_launch(void *k, void **params, int nparams, int64_t nthreads)
{
    (void)nparams;
    if (nthreads <= 0)
        return 0;
    int64_t blocks = (nthreads + 255) / 256;
    if (blocks > 65536)
        blocks = 65536; /* grid-stride kernels: any grid covers every index */
    return cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent") ||
                   cu_check(cu.LaunchKernel(k, (unsigned)blocks, 1, 1, 256, 1, 1, 0, NULL, params, NULL),
                            "cuLaunchKernel")
               ? -1
               : 0;
}

/* From the stream-ordered pool: a failure first returns the pool's free
 * blocks to the device (after the stream drains) and tries once more. */
static int cu_alloc_queued(size_t n, CUdeviceptr *p)
{
    CUresult r = cu.MemAllocAsync(p, n, NULL);
    if (r != 0 && cu.CtxSynchronize() == 0 && cu.MemPoolTrimTo(cu.pool, 0) == 0)
        r = cu.MemAllocAsync(p, n, NULL);
    if (cu_check(r, "cuMemAllocAsync"))
        return -1;
    if (cu_check(cu.MemsetD8Async(*p, 0, n, NULL), "cuMemsetD8Async")) {
        cu.MemFreeAsync(*p, NULL);
        return -1;
    }
    return 0;
}

static int cu_alloc(size_t n, GpDevPtr *d)
{
    CUdeviceptr p = 0;
    n = n ? n : 1;
    if (cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent"))
        return -1;
    if (cu.pool) {
        if (cu_alloc_queued(n, &p) != 0)
            return -1;
    } else if (cu_check(cu.MemAlloc(&p, n), "cuMemAlloc") || cu_check(cu.MemsetD8(p, 0, n), "cuMemsetD8")) {
        if (p)
            cu.MemFree(p);
        return -1;
    }
    *d = p;
    return 0;
}

static void cu_release(GpDevPtr d)
{
    cu.CtxSetCurrent(cu.ctx);
    if (cu.pool)
        cu.MemFreeAsync(d, NULL);
    else
        cu.MemFree(d);
}

static void *cu_host_alloc(size_t n)
{
    void *p = NULL;
    if (cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent") ||
        cu_check(cu.MemAllocHost(&p, n ? n : 1), "cuMemAllocHost"))
        return NULL;
    return p;
}

static void cu_host_free(void *p)
{
    cu.CtxSetCurrent(cu.ctx);
    cu.MemFreeHost(p);
}

/* Copies of PIN_MIN bytes or more between pageable host memory and the
 * device pin the host pages for the copy (cuMemHostRegister), so the bus
 * moves them directly; a pageable cuMemcpy stages them through the
 * driver's own buffers.  Measured on an H100 (2026-11-27, the same
 * machine and run): 256 MiB up and back took 73-93 ms pinned for the copy,
 * 111-126 ms as pageable copies, 95-103 ms through two page-locked 8 MiB
 * chunks in turn; a Jacobi + heat loop on two 128 MiB grids set on the
 * host, 20 steps, 3.44 vs 3.87 ms a step.  This form (flags 0 both ways)
 * on another H100 the same day: 100-103 ms after the first (make test-gpu
 * passed).  A range that cannot be pinned (already registered, no driver
 * support) is copied as before. */
#define PIN_MIN ((size_t)4 << 20)

/* n bytes host -> device (up) or device -> host, done on return; 0 or -1. */
static int copy_pinned(void *h, CUdeviceptr d, size_t n, int up)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)h & ~(page - 1),
              hi = ((uintptr_t)h + n + page - 1) & ~(page - 1);
    int pinned = n >= PIN_MIN && cu.MemHostRegister && cu.MemHostRegister((void *)lo, hi - lo, 0) == 0;
    int rc = up ? cu_check(cu.MemcpyHtoD(d, h, n), "cuMemcpyHtoD") : cu_check(cu.MemcpyDtoH(h, d, n), "cuMemcpyDtoH");
    if (pinned)
        cu.MemHostUnregister((void *)lo);
    return rc;
}

static int cu_upload(GpDevPtr d, const void *h, size_t n)
{
    return cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent") || copy_pinned((void *)(uintptr_t)h, d, n, 1) ? -1 : 0;
}

static int cu_upload_queued(GpDevPtr d, const void *h, size_t n)
{
    return cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent") ||
                   cu_check(cu.MemcpyHtoDAsync(d, h, n, NULL), "cuMemcpyHtoDAsync")
               ? -1
               : 0;
}

static int cu_download(void *h, GpDevPtr d, size_t n)
{
    return cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent") || copy_pinned(h, d, n, 0) ? -1 : 0;
}

static int cu_copy(GpDevPtr dst, GpDevPtr src, size_t n)
{
    return cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent") || cu_check(cu.MemcpyDtoD(dst, src, n), "cuMemcpyDtoD")
               ? -1
               : 0;
}

/* cuBLAS, loaded at the first product (the toolkit's libcublas.so.13 or
 * .12, found by the loader or under /usr/local/cuda), its handle bound to
 * the primary context current on this thread and the legacy default stream
 * the kernels run on.  Default math mode: no TF32 for float32 (the
 * product is float32's, as NumPy's).  Source of the ABI: the cuBLAS
 * library reference (cublas_api.h: cublasStatus_t is an int, the handle a
 * pointer, CUBLAS_OP_N 0 and CUBLAS_OP_T 1, column-major operands). */
typedef int (*CublasDgemm)(void *, int, int, int, int, int, const double *, const double *, int, const double *, int,
                           const double *, double *, int);
typedef int (*CublasSgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                           const float *, float *, int);

static struct {
    int tried;
    void *handle;
    CublasDgemm dgemm;
    CublasSgemm sgemm;
} cb;

static int cb_open(void)
{
    if (cb.tried)
        return cb.handle != NULL;
    cb.tried = 1;
    static const char *names[] = {"libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.13",
                                  "/usr/local/cuda/lib64/libcublas.so.12"};
    /* the first that loads and makes a handle (a libcublas too new for the
     * driver fails cublasCreate: the next is tried) */
    for (size_t i = 0; i < sizeof names / sizeof *names && !cb.handle; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL), *h = NULL;
        if (!lib)
            continue;
        int (*create)(void **) = (int (*)(void **))dlsym(lib, "cublasCreate_v2");
        cb.dgemm = (CublasDgemm)dlsym(lib, "cublasDgemm_v2");
        cb.sgemm = (CublasSgemm)dlsym(lib, "cublasSgemm_v2");
        if (create && cb.dgemm && cb.sgemm && cu.CtxSetCurrent(cu.ctx) == 0 && create(&h) == 0)
            cb.handle = h;
        else
            dlclose(lib);
    }
    return cb.handle != NULL;
}

/* Row-major c(M,N) = op(a) op(b) is column-major c^T(N,M) = op(b)^T op(a)^T:
 * cuBLAS is called with the operands swapped, each stored matrix read as
 * its column-major transpose. */
static GpStatus cu_gemm(GpDType t, const GpGemm *g, GpDevPtr a, GpDevPtr b, GpDevPtr c)
{
    if (!cb_open() || g->M > INT_MAX || g->N > INT_MAX || g->K > INT_MAX || g->lda > INT_MAX || g->ldb > INT_MAX)
        return GP_EUNSUPPORTED;
    if (!a && !b && !c)
        return GP_OK; /* the probe: it can */
    int m = (int)g->N, n = (int)g->M, k = (int)g->K, st;
    if (cu_check(cu.CtxSetCurrent(cu.ctx), "cuCtxSetCurrent"))
        return GP_EJIT;
    if (t == GP_FLOAT64) {
        double one = 1.0, zero = 0.0;
        st = cb.dgemm(cb.handle, g->trans_b, g->trans_a, m, n, k, &one, (const double *)(uintptr_t)b, (int)g->ldb,
                      (const double *)(uintptr_t)a, (int)g->lda, &zero, (double *)(uintptr_t)c, m);
    } else {
        float one = 1.0f, zero = 0.0f;
        st = cb.sgemm(cb.handle, g->trans_b, g->trans_a, m, n, k, &one, (const float *)(uintptr_t)b, (int)g->ldb,
                      (const float *)(uintptr_t)a, (int)g->lda, &zero, (float *)(uintptr_t)c, m);
    }
    if (st != 0) {
        gp_set_error("cuBLAS gemm: status %d", st);
        return GP_EJIT;
    }
    return cu_check(cu.CtxSynchronize(), "cuBLAS gemm") ? GP_EJIT : GP_OK;
}

static GpDevice cuda = {
    "cuda",       1,         cu.arch,     cu_load,          cu_launch, cu_alloc, cu_release, cu_host_alloc,
    cu_host_free, cu_upload, cu_download, cu_upload_queued, cu_copy,   cu_gemm};

int gp_gpu_driver_loads(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib)
        dlclose(lib);
    return lib != NULL;
}

/* A driver entry point and where its address goes. */
typedef struct {
    void **slot;
    const char *name;
} Symbol;

/* Looks up each of the n symbols of syms in lib: NULL, or the name of the
 * first one lib lacks. */
static const char *bind_symbols(void *lib, const Symbol *syms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(*syms[i].slot = dlsym(lib, syms[i].name)))
            return syms[i].name;
    return NULL;
}

/* The device's default stream-ordered pool (cu.pool), keeping
 * CU_POOL_KEEP bytes for reuse; left NULL (cuMemAlloc) where the driver
 * or device lacks one. */
static void open_pool(void *lib, CUdevice dev)
{
    const Symbol syms[] = {
        {(void **)&cu.MemAllocAsync, "cuMemAllocAsync"},
        {(void **)&cu.MemFreeAsync, "cuMemFreeAsync"},
        {(void **)&cu.MemsetD8Async, "cuMemsetD8Async"},
        {(void **)&cu.DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool"},
        {(void **)&cu.MemPoolSetAttribute, "cuMemPoolSetAttribute"},
        {(void **)&cu.MemPoolTrimTo, "cuMemPoolTrimTo"},
    };
    if (bind_symbols(lib, syms, sizeof syms / sizeof *syms))
        return;
    int pools = 0;
    void *pool = NULL;
    unsigned long long keep = CU_POOL_KEEP;
    if (cu.DeviceGetAttribute(&pools, CU_ATTR_MEMORY_POOLS, dev) == 0 && pools &&
        cu.DeviceGetDefaultMemPool(&pool, dev) == 0 &&
        cu.MemPoolSetAttribute(pool, CU_POOL_RELEASE_THRESHOLD, &keep) == 0)
        cu.pool = pool;
}

static int cu_open(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        gp_set_error("no CUDA driver: %s", dlerror());
        return -1;
    }
    const Symbol syms[] = {
        {(void **)&cu.Init, "cuInit"},
        {(void **)&cu.DeviceGet, "cuDeviceGet"},
        {(void **)&cu.DeviceGetAttribute, "cuDeviceGetAttribute"},
        {(void **)&cu.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
        {(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
        {(void **)&cu.CtxSynchronize, "cuCtxSynchronize"},
        {(void **)&cu.ModuleLoadDataEx, "cuModuleLoadDataEx"},
        {(void **)&cu.ModuleGetFunction, "cuModuleGetFunction"},
        {(void **)&cu.LaunchKernel, "cuLaunchKernel"},
        {(void **)&cu.MemAlloc, "cuMemAlloc_v2"},
        {(void **)&cu.MemFree, "cuMemFree_v2"},
        {(void **)&cu.MemcpyHtoD, "cuMemcpyHtoD_v2"},
        {(void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2"},
        {(void **)&cu.MemcpyDtoD, "cuMemcpyDtoD_v2"},
        {(void **)&cu.MemsetD8, "cuMemsetD8_v2"},
        {(void **)&cu.MemAllocHost, "cuMemAllocHost_v2"},
        {(void **)&cu.MemFreeHost, "cuMemFreeHost"},
        {(void **)&cu.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
        {(void **)&cu.GetErrorString, "cuGetErrorString"},
    };
    const char *missing = bind_symbols(lib, syms, sizeof syms / sizeof *syms);
    if (missing) {
        gp_set_error("CUDA driver lacks %s", missing);
        return -1;
    }
    CUdevice dev;
    int major = 0, minor = 0;
    if (cu_check(cu.Init(0), "cuInit") || cu_check(cu.DeviceGet(&dev, 0), "cuDeviceGet") ||
        cu_check(cu.DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, dev), "compute capability") ||
        cu_check(cu.DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, dev), "compute capability") ||
        cu_check(cu.PrimaryCtxRetain(&cu.ctx, dev), "cuDevicePrimaryCtxRetain"))
        return -1;
    snprintf(cu.arch, sizeof cu.arch, "sm_%d%d", major, minor);
    open_pool(lib, dev);
    const Symbol pin[] = {
        {(void **)&cu.MemHostRegister, "cuMemHostRegister_v2"},
        {(void **)&cu.MemHostUnregister, "cuMemHostUnregister"},
    };
    if (bind_symbols(lib, pin, sizeof pin / sizeof *pin))
        cu.MemHostRegister = NULL; /* pageable copies (copy_pinned) */
    return 0;
}

const GpDevice *gp_device_open(int emulate)
{
    static int tried, ok;
    static char why[256];
    if (emulate)
        return &emulated;
    if (!tried) {
        tried = 1;
        ok = cu_open() == 0;
        if (!ok)
            snprintf(why, sizeof why, "%s", gp_last_error());
    }
    if (!ok)
        gp_set_error("%s", why);
    return ok ? &cuda : NULL;
}
