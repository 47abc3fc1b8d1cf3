/* core/codegen_nvptx.c -- an NVIDIA GPU as a code generation target
 * (codegen_ir.h): the same row functions as the CPU's, called from CUDA
 * kernels (LLVM's NVPTX back end, triple nvptx64-nvidia-cuda;
 * LLVM_NOTES.md "NVPTX").
 *
 *   math       llvm.* intrinsics the NVPTX back end lowers itself (sqrt,
 *              fabs, floor, ceil, trunc, rint, copysign); every other
 *              function is libdevice's __nv_<name> (double) or
 *              __nv_<name>f, linked from the toolkit's libdevice.10.bc
 *   raise_fpe  an atomic OR of GP_FPE_* into the i32 at the kernel's last
 *              parameter `flags` (device memory the runtime reads and clears).
 *              A GPU has no IEEE status flags, so every float instruction
 *              whose value is not finite while its float inputs are also
 *              raises all three of divide, overflow and invalid: the
 *              planner then replays the nodes with NumPy, which gives
 *              NumPy's exact warnings (a spurious flag costs a replay,
 *              never a wrong warning)
 *   entry      the kernel `name` (calling convention ptx_kernel), the
 *              packed arguments (codegen.h) in device memory at `a`:
 *   (each entry below ends with a parameter `ptr flags`)
 *     map         k(ptr a, i64 outer, i64 inner, ptr flags): one thread per point
 *                 (o, j), grid-stride over outer*inner
 *     map-scan    the same signature: one thread per row o,
 *                 the row scanned in order
 *     accumulate  the same signature: one thread per column j,
 *                 folding rows o = 0..outer-1 in order (no atomics: the
 *                 result is the CPU's, bit for bit)
 *     map-reduce  k(ptr a, ptr leaves, i64 nleaves, i64 outer, ptr partial, ptr flags):
 *                 one thread per (o, leaf): leaf L is the range
 *                 [leaves[2L], leaves[2L] + leaves[2L+1]) of row o, reduced
 *                 by the row function into partial[o*nleaves + L] (the
 *                 reduction's dtype, or a GpArgResult); the runtime
 *                 combines partials in a fixed order (NumPy's pairwise tree
 *                 for a float sum), so results do not vary run to run
 */
#include "codegen_ir.h"

#include <stdio.h>
#include <string.h>

#define PTX_KERNEL_CC 71 /* LLVM's CallingConv::PTX_Kernel */

static void nvptx_attrs(Cg *c, LLVMValueRef fn)
{
    const char *cpu = c->target->cpu, *features = c->target->features;
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(c->ctx, "target-cpu", 10, cpu, (unsigned)strlen(cpu)));
    LLVMAddAttributeAtIndex(
        fn, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(c->ctx, "target-features", 15, features, (unsigned)strlen(features)));
    cg_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
}

static int native(const char *in)
{
    static const char *const names[] = {"llvm.sqrt",  "llvm.fabs", "llvm.floor",   "llvm.ceil",
                                        "llvm.trunc", "llvm.rint", "llvm.copysign"};
    for (size_t i = 0; in && i < sizeof names / sizeof *names; i++)
        if (!strcmp(in, names[i]))
            return 1;
    return 0;
}

static LLVMValueRef nvptx_math(Cg *c, const char *in, const char *libm_name, LLVMTypeRef t, LLVMValueRef *args,
                               unsigned n)
{
    if (native(in))
        return cg_intrinsic(c, in, t, args, n);
    char full[48];
    snprintf(full, sizeof full, "__nv_%s%s", libm_name ? libm_name : in + 5, t == c->f32 ? "f" : "");
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef fty = LLVMFunctionType(t, params, n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, full);
    if (!fn) {
        fn = LLVMAddFunction(c->mod, full, fty);
        cg_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
    }
    return LLVMBuildCall2(c->b, fty, fn, args, n, "");
}

static void nvptx_raise_fpe(Cg *c, LLVMValueRef cond, int kind)
{
    unsigned bits = kind == CG_RAISE_DIVIDE     ? GP_FPE_DIVIDE
                    : kind == CG_RAISE_OVERFLOW ? GP_FPE_OVERFLOW
                    : kind == CG_RAISE_INVALID  ? GP_FPE_INVALID
                                                : GP_FPE_DIVIDE | GP_FPE_OVERFLOW | GP_FPE_INVALID;
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(c->b));
    LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(c->ctx, fn, "fpe");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(c->ctx, fn, "fpe_done");
    LLVMBuildCondBr(c->b, cond, yes, cont);
    LLVMPositionBuilderAtEnd(c->b, yes);
    LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpOr, c->fpe_flags, LLVMConstInt(c->i32, bits, 0),
                       LLVMAtomicOrderingMonotonic, 0);
    LLVMBuildBr(c->b, cont);
    LLVMPositionBuilderAtEnd(c->b, cont);
}

static LLVMValueRef sreg(Cg *c, const char *name)
{
    LLVMTypeRef fty = LLVMFunctionType(c->i32, NULL, 0, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn)
        fn = LLVMAddFunction(c->mod, name, fty);
    return LLVMBuildZExt(c->b, LLVMBuildCall2(c->b, fty, fn, NULL, 0, ""), c->i64, "");
}

/* for (t = blockIdx*blockDim + threadIdx; t < n; t += gridDim*blockDim);
 * the host grid runs every t on the one calling thread. */
static CgLoop grid_stride(Cg *c, LLVMValueRef fn, LLVMValueRef n, LLVMValueRef *t)
{
    if (c->target->kind == GP_TARGET_HOST_GRID)
        return cg_loop_begin(c, fn, cg_cint(c->i64, 0), n, cg_cint(c->i64, 1), t);
    LLVMValueRef bdim = sreg(c, "llvm.nvvm.read.ptx.sreg.ntid.x");
    LLVMValueRef first = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, sreg(c, "llvm.nvvm.read.ptx.sreg.ctaid.x"), bdim, ""),
                                      sreg(c, "llvm.nvvm.read.ptx.sreg.tid.x"), "");
    LLVMValueRef step = LLVMBuildMul(c->b, sreg(c, "llvm.nvvm.read.ptx.sreg.nctaid.x"), bdim, "");
    return cg_loop_begin(c, fn, first, n, step, t);
}

static int has_scan(const GpProgram *p)
{
    for (int i = 0; i < p->ninstr; i++)
        if (gp_op_kind[p->instr[i].op] == GP_KIND_SCAN)
            return 1;
    return 0;
}

static void nvptx_entry(Cg *c, LLVMValueRef row, const char *name)
{
    const GpProgram *p = c->p;
    int red = p->kind == GP_KIND_REDUCE;
    LLVMTypeRef params[6] = {c->ptr, red ? c->ptr : c->i64, c->i64, red ? c->i64 : c->ptr, c->ptr, c->ptr};
    unsigned nparams = red ? 6 : 4;
    LLVMValueRef fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(c->vd, params, nparams, 0));
    if (c->target->kind == GP_TARGET_NVPTX)
        LLVMSetFunctionCallConv(fn, PTX_KERNEL_CC);
    c->ops->attrs(c, fn);
    LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, fn, "entry"));
    c->fpe_flags = LLVMGetParam(fn, nparams - 1);
    LLVMValueRef a = LLVMGetParam(fn, 0), t, one = cg_cint(c->i64, 1);
    if (red) {
        LLVMValueRef leaves = LLVMGetParam(fn, 1), nleaves = LLVMGetParam(fn, 2);
        LLVMValueRef total = LLVMBuildMul(c->b, nleaves, LLVMGetParam(fn, 3), "");
        CgLoop l = grid_stride(c, fn, total, &t);
        LLVMValueRef o = LLVMBuildUDiv(c->b, t, nleaves, ""), leaf = LLVMBuildURem(c->b, t, nleaves, "");
        LLVMValueRef at = LLVMBuildMul(c->b, leaf, cg_cint(c->i64, 2), "");
        LLVMValueRef j0 = LLVMBuildLoad2(c->b, c->i64, LLVMBuildGEP2(c->b, c->i64, leaves, &at, 1, ""), "");
        at = LLVMBuildAdd(c->b, at, one, "");
        LLVMValueRef n = LLVMBuildLoad2(c->b, c->i64, LLVMBuildGEP2(c->b, c->i64, leaves, &at, 1, ""), "");
        size_t size = gp_op_is_arg((GpOp)p->reduce_op) ? sizeof(GpArgResult) : sizeof(GpScalar);
        LLVMValueRef off = LLVMBuildMul(c->b, t, cg_cint(c->i64, (long long)size), "");
        LLVMValueRef result = LLVMBuildGEP2(c->b, c->i8, LLVMGetParam(fn, 4), &off, 1, "");
        cg_call_row(c, fn, row, a, o, j0, n, result);
        cg_loop_end(c, &l);
    } else if (p->accumulate) {
        LLVMValueRef outer = LLVMGetParam(fn, 1), o;
        CgLoop l = grid_stride(c, fn, LLVMGetParam(fn, 2), &t);
        CgLoop rows = cg_loop_begin(c, fn, cg_cint(c->i64, 0), outer, one, &o);
        cg_call_row(c, fn, row, a, o, t, LLVMBuildAdd(c->b, t, one, ""), NULL);
        cg_loop_end(c, &rows);
        cg_loop_end(c, &l);
    } else if (has_scan(p)) {
        CgLoop l = grid_stride(c, fn, LLVMGetParam(fn, 1), &t);
        cg_call_row(c, fn, row, a, t, cg_cint(c->i64, 0), LLVMGetParam(fn, 2), NULL);
        cg_loop_end(c, &l);
    } else {
        LLVMValueRef inner = LLVMGetParam(fn, 2);
        CgLoop l = grid_stride(c, fn, LLVMBuildMul(c->b, LLVMGetParam(fn, 1), inner, ""), &t);
        LLVMValueRef o = LLVMBuildUDiv(c->b, t, inner, ""), j = LLVMBuildURem(c->b, t, inner, "");
        cg_call_row(c, fn, row, a, o, j, LLVMBuildAdd(c->b, j, one, ""), NULL);
        cg_loop_end(c, &l);
    }
    LLVMBuildRetVoid(c->b);
}

static void nvptx_finish(Cg *c) { LLVMSetTarget(c->mod, "nvptx64-nvidia-cuda"); }

const CgTargetOps cg_nvptx_target = {nvptx_attrs, nvptx_math, nvptx_raise_fpe, nvptx_entry, nvptx_finish, 1, 1};
