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
 *              whose value is not finite while its float inputs are
 *              finite, or NaN while none of them is NaN (inf - inf),
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

/* v from lane src of this warp (shfl.sync.idx over the lanes in mask);
 * v is a float or a double (two 32-bit shuffles). */
static LLVMValueRef shuffle(Cg *c, LLVMValueRef v, LLVMValueRef mask, LLVMValueRef src)
{
    LLVMTypeRef i4[4] = {c->i32, c->i32, c->i32, c->i32};
    LLVMTypeRef fty = LLVMFunctionType(c->i32, i4, 4, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, "llvm.nvvm.shfl.sync.idx.i32");
    if (!fn)
        fn = LLVMAddFunction(c->mod, "llvm.nvvm.shfl.sync.idx.i32", fty);
    LLVMValueRef clamp = cg_cint(c->i32, 31);
    if (LLVMTypeOf(v) == c->f32) {
        LLVMValueRef args[4] = {mask, LLVMBuildBitCast(c->b, v, c->i32, ""), src, clamp};
        return LLVMBuildBitCast(c->b, LLVMBuildCall2(c->b, fty, fn, args, 4, ""), c->f32, "");
    }
    LLVMValueRef x = LLVMBuildBitCast(c->b, v, c->i64, "");
    LLVMValueRef lo[4] = {mask, LLVMBuildTrunc(c->b, x, c->i32, ""), src, clamp};
    LLVMValueRef hi[4] = {mask, LLVMBuildTrunc(c->b, LLVMBuildLShr(c->b, x, cg_cint(c->i64, 32), ""), c->i32, ""), src,
                          clamp};
    LLVMValueRef rlo = LLVMBuildZExt(c->b, LLVMBuildCall2(c->b, fty, fn, lo, 4, ""), c->i64, "");
    LLVMValueRef rhi = LLVMBuildZExt(c->b, LLVMBuildCall2(c->b, fty, fn, hi, 4, ""), c->i64, "");
    LLVMValueRef r = LLVMBuildOr(c->b, rlo, LLVMBuildShl(c->b, rhi, cg_cint(c->i64, 32), ""), "");
    return LLVMBuildBitCast(c->b, r, c->f64, "");
}

/* cond ? row(o, j0, n) : -0.0, through memory (the row call is emitted
 * in its own block). */
static LLVMValueRef column_if(Cg *c, LLVMValueRef fn, LLVMValueRef row, LLVMValueRef a, LLVMValueRef o,
                              LLVMValueRef cond, LLVMValueRef j0, LLVMValueRef n, LLVMTypeRef at)
{
    LLVMValueRef slot = cg_entry_alloca(c, at, "col");
    LLVMBuildStore(c->b, cg_cfp(at, -0.0), slot);
    LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(c->ctx, fn, "col");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, fn, "col_done");
    LLVMBuildCondBr(c->b, cond, yes, done);
    LLVMPositionBuilderAtEnd(c->b, yes);
    LLVMBuildStore(c->b, cg_call_row(c, fn, row, a, o, j0, n, NULL), slot);
    LLVMBuildBr(c->b, done);
    LLVMPositionBuilderAtEnd(c->b, done);
    return LLVMBuildLoad2(c->b, at, slot, "");
}

/* A pairwise leaf on eight threads (gp_codegen_leaf_threads): thread q
 * sums column q of NumPy's eight accumulators over the leaf's whole blocks
 * of 8 (column_row) and computes tail point q (n % 8 points after them;
 * all n points when n < 8); lane 0 of the eight gathers them by warp
 * shuffles and adds as NumPy does: ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
 * or -0.0 when n < 8, then the tail points in order.  Every point is
 * computed (and its outputs stored) by one thread. */
static void pairwise_lanes(Cg *c, LLVMValueRef fn, LLVMValueRef row, LLVMValueRef a, LLVMValueRef t,
                           LLVMValueRef nleaves, LLVMValueRef leaves, LLVMValueRef partial)
{
    const GpProgram *p = c->p;
    GpDType rt = (GpDType)p->instr[p->root].dtype;
    LLVMTypeRef at = cg_reg_type(c, rt);
    LLVMValueRef eight = cg_cint(c->i64, 8), zero = cg_cint(c->i64, 0);
    LLVMValueRef q = LLVMBuildAnd(c->b, t, cg_cint(c->i64, 7), ""), g = LLVMBuildLShr(c->b, t, cg_cint(c->i64, 3), "");
    LLVMValueRef o = LLVMBuildUDiv(c->b, g, nleaves, ""), leaf = LLVMBuildURem(c->b, g, nleaves, "");
    LLVMValueRef at2 = LLVMBuildMul(c->b, leaf, cg_cint(c->i64, 2), "");
    LLVMValueRef j0 = LLVMBuildLoad2(c->b, c->i64, LLVMBuildGEP2(c->b, c->i64, leaves, &at2, 1, ""), "");
    at2 = LLVMBuildAdd(c->b, at2, cg_cint(c->i64, 1), "");
    LLVMValueRef n = LLVMBuildLoad2(c->b, c->i64, LLVMBuildGEP2(c->b, c->i64, leaves, &at2, 1, ""), "");
    LLVMValueRef whole = LLVMBuildICmp(c->b, LLVMIntSGE, n, eight, "");
    LLVMValueRef nblk =
        cg_sel(c, whole, LLVMBuildSub(c->b, n, LLVMBuildAnd(c->b, n, cg_cint(c->i64, 7), ""), ""), zero);
    LLVMValueRef tail = LLVMBuildSub(c->b, n, nblk, "");
    LLVMValueRef r = column_if(c, fn, row, a, o, whole, LLVMBuildAdd(c->b, j0, q, ""),
                               LLVMBuildLShr(c->b, nblk, cg_cint(c->i64, 3), ""), at);
    LLVMValueRef tq = column_if(c, fn, row, a, o, LLVMBuildICmp(c->b, LLVMIntULT, q, tail, ""),
                                LLVMBuildAdd(c->b, LLVMBuildAdd(c->b, j0, nblk, ""), q, ""), cg_cint(c->i64, 1), at);
    /* the eight lanes of this leaf: aligned groups of 8 in the warp */
    LLVMValueRef lane = LLVMBuildCall2(
        c->b, LLVMFunctionType(c->i32, NULL, 0, 0),
        LLVMGetNamedFunction(c->mod, "llvm.nvvm.read.ptx.sreg.laneid")
            ? LLVMGetNamedFunction(c->mod, "llvm.nvvm.read.ptx.sreg.laneid")
            : LLVMAddFunction(c->mod, "llvm.nvvm.read.ptx.sreg.laneid", LLVMFunctionType(c->i32, NULL, 0, 0)),
        NULL, 0, "");
    LLVMValueRef base = LLVMBuildAnd(c->b, lane, cg_cint(c->i32, 24), "");
    LLVMValueRef mask = LLVMBuildShl(c->b, cg_cint(c->i32, 0xff), base, "");
    LLVMValueRef rv[8], tv[8];
    for (int k = 0; k < 8; k++) {
        LLVMValueRef src = LLVMBuildAdd(c->b, base, cg_cint(c->i32, k), "");
        rv[k] = shuffle(c, r, mask, src);
        tv[k] = shuffle(c, tq, mask, src);
    }
    LLVMBasicBlockRef first = LLVMAppendBasicBlockInContext(c->ctx, fn, "lane0");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, fn, "lane0_done");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, q, zero, ""), first, done);
    LLVMPositionBuilderAtEnd(c->b, first);
    LLVMValueRef s01 = LLVMBuildFAdd(c->b, rv[0], rv[1], ""), s23 = LLVMBuildFAdd(c->b, rv[2], rv[3], "");
    LLVMValueRef s45 = LLVMBuildFAdd(c->b, rv[4], rv[5], ""), s67 = LLVMBuildFAdd(c->b, rv[6], rv[7], "");
    LLVMValueRef tree = LLVMBuildFAdd(c->b, LLVMBuildFAdd(c->b, s01, s23, ""), LLVMBuildFAdd(c->b, s45, s67, ""), "");
    LLVMValueRef res = cg_sel(c, whole, tree, cg_cfp(at, -0.0));
    for (int k = 0; k < 8; k++)
        res = cg_sel(c, LLVMBuildICmp(c->b, LLVMIntULT, cg_cint(c->i64, k), tail, ""),
                     LLVMBuildFAdd(c->b, res, tv[k], ""), res);
    LLVMValueRef off = LLVMBuildMul(c->b, g, cg_cint(c->i64, (long long)sizeof(GpScalar)), "");
    cg_store(c, rt, res, LLVMBuildGEP2(c->b, c->i8, partial, &off, 1, ""));
    LLVMBuildBr(c->b, done);
    LLVMPositionBuilderAtEnd(c->b, done);
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
    if (red && gp_codegen_leaf_threads(p, c->target->kind) == 8) {
        LLVMValueRef nleaves = LLVMGetParam(fn, 2);
        LLVMValueRef total =
            LLVMBuildMul(c->b, LLVMBuildMul(c->b, nleaves, LLVMGetParam(fn, 3), ""), cg_cint(c->i64, 8), "");
        CgLoop l = grid_stride(c, fn, total, &t);
        pairwise_lanes(c, fn, row, a, t, nleaves, LLVMGetParam(fn, 1), LLVMGetParam(fn, 4));
        cg_loop_end(c, &l);
    } else if (red) {
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
