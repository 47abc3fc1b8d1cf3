/* core/runtime_gpu.h -- a GPU: memory, kernel images, launches.
 *
 * Two implementations of one table (runtime_gpu.c):
 *   "cuda"      an NVIDIA GPU through the CUDA Driver API, libcuda.so.1
 *               loaded with dlopen at first use (grumpy builds, loads and
 *               runs where no driver exists): cuInit, device 0's primary
 *               context, PTX images JIT-compiled by the driver for the
 *               device (cuModuleLoadDataEx), cuLaunchKernel with 256-thread
 *               blocks over the grid-stride kernels of codegen_nvptx.c,
 *               matrix products by cuBLAS (libcublas.so.13 or .12, dlopen)
 *   "emulated"  the same kernels compiled for the host (GP_TARGET_HOST_GRID)
 *               and device memory that is host memory: the GPU back end's
 *               own logic (argument packing, copies, reduction partials,
 *               IEEE flags, residency) tested on machines without a GPU
 *               (GRUMPY_GPU_EMULATE=1)
 * Call with the core lock held.
 */
#ifndef GP_RUNTIME_GPU_H
#define GP_RUNTIME_GPU_H

#include "blas.h"
#include "gp.h"

typedef uint64_t GpDevPtr; /* a device address; 0 is none */

typedef struct {
    const char *name;
    /* Whether the kernel images are PTX text (cuda) or host functions
     * compiled for GP_TARGET_HOST_GRID (emulated). */
    int wants_ptx;
    /* The GPU architecture for the code generator ("sm_90"). */
    const char *arch;
    /* A kernel from an image (PTX text, or a host function), entry `name`;
     * NULL with gp_last_error() set.  Valid for the process. */
    void *(*load)(const void *image, const char *name);
    /* Queues kernel k over nthreads thread indices (grid-stride kernels:
     * any grid covers them) with its nparams parameters (pointers to each
     * value, as cuLaunchKernel takes them: 7 for backend_gpu.c's
     * gp_pairs kernels, 4 for a map kernel, 6 for a
     * map-reduce, codegen_nvptx.c) on the device's one stream (CUDA's
     * legacy default stream: every call of this table is ordered on it),
     * without waiting: the next download waits for it, and a fault in it
     * is that download's error.  0 or -1 (the launch itself refused). */
    int (*launch)(void *k, void **params, int nparams, int64_t nthreads);
    /* Device memory of n bytes (zeroed), ordered on the stream: CUDA's
     * stream-ordered pool (cuMemAllocAsync, cuMemFreeAsync) where the
     * device has one, else cuMemAlloc/cuMemFree (which wait for the
     * device); 0 or -1. */
    int (*alloc)(size_t n, GpDevPtr *d);
    void (*release)(GpDevPtr d);
    /* Page-locked host memory of n bytes (copies to and from it run at the
     * bus's speed), or NULL with gp_last_error() set; freed by host_free. */
    void *(*host_alloc)(size_t n);
    void (*host_free)(void *p);
    /* Copies n bytes host -> device, device -> host, each done on return
     * (a download waits for everything queued before it); 0 or -1. */
    int (*upload)(GpDevPtr d, const void *h, size_t n);
    int (*download)(void *h, GpDevPtr d, size_t n);
    /* Queues a copy of n bytes host -> device from page-locked memory of
     * host_alloc, which must stay unchanged until the next download
     * returns (cuMemcpyHtoDAsync); 0 or -1. */
    int (*upload_queued)(GpDevPtr d, const void *h, size_t n);
    /* Copies n bytes device -> device (dst, src); 0 or -1. */
    int (*copy)(GpDevPtr dst, GpDevPtr src, size_t n);
    /* c := g (blas.h: M x N, C-contiguous) with g's operands at device
     * addresses a and b (g->a, g->b unused), dtype t (float32 or float64),
     * finished on return: cuBLAS (libcublas loaded with dlopen at the first
     * product), or OpenBLAS on the emulated device's host memory.  GP_OK,
     * GP_EUNSUPPORTED (no cuBLAS, a dim beyond its 32-bit sizes: the caller
     * computes on the host), or GP_EJIT with gp_last_error() set.  a, b and
     * c all 0: only whether it can (GP_OK or GP_EUNSUPPORTED), computing
     * nothing. */
    GpStatus (*gemm)(GpDType t, const GpGemm *g, GpDevPtr a, GpDevPtr b, GpDevPtr c);
} GpDevice;

/* The GPU back end's own kernels gp_pairs_f64 / gp_pairs_f32 (the lower
 * levels of a pairwise sum's tree, backend_gpu.c), PTX text for sm_80;
 * written by gp_ptx_dump as gp_pairs.ptx with a pairwise sum's program. */
extern const char gp_pairs_ptx[];

/* Whether libcuda.so.1 can be loaded (dlopen only: no driver call). */
GP_API int gp_gpu_driver_loads(void);

/* The device (opened once): the emulated one when emulate, else CUDA's.
 * NULL with gp_last_error() saying why (no libcuda.so.1, no device, ...). */
const GpDevice *gp_device_open(int emulate);

#endif
