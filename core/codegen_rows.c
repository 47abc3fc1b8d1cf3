/* core/codegen_rows.c -- the row function of each kernel kind, and the
 * driver that emits a whole kernel for a target (paper section 3).
 *
 * A row function computes the point function (codegen.c) over a range of
 * the innermost dimension of one outer index:
 *   map, map-scan   every point stored; SCAN instructions carry their
 *                   accumulator along the row from the identity
 *   map-reduce      chunks of RED_CHUNK points: a vectorizable map loop
 *                   fills a temporary, then it is folded into the
 *                   accumulator in order
 *   pairwise sum    one leaf of NumPy's pairwise summation (n <= 128)
 *   arg-reduction   the first extreme value and its index
 * Its signature (cg_row_nparams): (ptr base_0..K-1, i64 stride_0..K-1,
 * ptr consts, i64 j0, i64 j1|n [, ptr arg_value]).  The target's entry
 * (CgTargetOps.entry) calls it once per outer index.
 */
#include "codegen_ir.h"

#include <stdio.h>
#include <math.h>
#include <string.h>

#define RED_CHUNK 128 /* points per map-reduce chunk; NumPy's PW_BLOCKSIZE */

/* The chunk temporary's element type: a register type, but a byte for a
 * boolean (i1 in memory is a byte anyway, and an array of i1 kept the
 * vectorizer from storing the map's compares as vectors: one extract and
 * one byte store per point, (r2 == 0).any(axis=1) 2.3x slower than
 * NumPy's). */
static LLVMTypeRef tmp_elem(Cg *c, LLVMTypeRef at) { return at == c->i1 ? c->i8 : at; }

static LLVMValueRef tmp_alloca(Cg *c, LLVMTypeRef at)
{
    return cg_entry_alloca(c, LLVMArrayType2(tmp_elem(c, at), RED_CHUNK), "tmp");
}

static LLVMValueRef load_tmp(Cg *c, LLVMValueRef tmp, LLVMTypeRef at, LLVMValueRef i)
{
    LLVMTypeRef et = tmp_elem(c, at);
    LLVMValueRef v = LLVMBuildLoad2(c->b, et, LLVMBuildGEP2(c->b, et, tmp, &i, 1, ""), "");
    return et == at ? v : LLVMBuildTrunc(c->b, v, at, "");
}

/* The identity of reduction op in dtype t as an LLVM constant (+-inf for
 * a float min/max, 0 for a sum, ...: gp_reduce_identity). */
static LLVMValueRef identity_value(Cg *c, GpOp op, GpDType t)
{
    LLVMTypeRef at = cg_reg_type(c, t);
    GpScalar id = gp_reduce_identity(op, t);
    return t == GP_FLOAT32 ? cg_cfp(at, id.f32) : t == GP_FLOAT64 ? cg_cfp(at, id.f) : LLVMConstInt(at, id.u, 0);
}

/* tmp[i] := point(j + i) for i in [0, m): the map part of a map-reduce as
 * a plain loop the vectorizer handles like any map kernel. */
static void fill_tmp(Cg *c, LLVMValueRef fn, CgRow *r, LLVMValueRef tmp, LLVMTypeRef at, LLVMValueRef j, LLVMValueRef m)
{
    LLVMValueRef i;
    CgLoop l = cg_loop_begin(c, fn, cg_cint(c->i64, 0), m, cg_cint(c->i64, 1), &i);
    LLVMValueRef v = cg_emit_point(c, r, LLVMBuildAdd(c->b, j, i, ""), 1);
    LLVMTypeRef et = tmp_elem(c, at);
    if (et != at)
        v = LLVMBuildZExt(c->b, v, et, "");
    LLVMBuildStore(c->b, v, LLVMBuildGEP2(c->b, et, tmp, &i, 1, ""));
    cg_loop_end(c, &l);
}

/* for (c0 = j0; c0 < end; c0 += RED_CHUNK) with tmp[0..m) := the points
 * of the chunk; close with cg_loop_end. */
static CgLoop chunk_begin(Cg *c, LLVMValueRef fn, CgRow *r, LLVMValueRef tmp, LLVMTypeRef at, LLVMValueRef j0,
                          LLVMValueRef end, LLVMValueRef *c0, LLVMValueRef *m)
{
    CgLoop outer = cg_loop_begin(c, fn, j0, end, cg_cint(c->i64, RED_CHUNK), c0);
    LLVMValueRef rest = LLVMBuildSub(c->b, end, *c0, "");
    *m = cg_sel(c, LLVMBuildICmp(c->b, LLVMIntSLT, rest, cg_cint(c->i64, RED_CHUNK), ""), rest,
                cg_cint(c->i64, RED_CHUNK));
    fill_tmp(c, fn, r, tmp, at, *c0, *m);
    return outer;
}

/* Declares the row function and positions the builder in it: r gets the
 * operand bases and strides and the broadcast leaves and constants, loaded
 * once; *j0 and *j1 (map: the end; map-reduce: the count) are its range. */
static LLVMValueRef row_begin(Cg *c, const char *name, CgRow *r, LLVMValueRef *j0, LLVMValueRef *j1)
{
    const GpProgram *p = c->p;
    int K = p->noperands, nparams = cg_row_nparams(c);
    LLVMTypeRef params[2 * GP_MAXOPERANDS + 5];
    for (int k = 0; k < K; k++) {
        params[k] = c->ptr;
        params[K + k] = c->i64;
    }
    params[2 * K] = c->ptr;
    params[2 * K + 1] = c->i64;
    params[2 * K + 2] = c->i64;
    params[2 * K + 3] = c->ptr; /* arg-reductions: where the best value goes */
    params[2 * K + 4] = c->ptr; /* flags_param targets: the IEEE flags word, the last parameter */
    int red = p->kind == GP_KIND_REDUCE;
    int arg = red && gp_op_is_arg((GpOp)p->reduce_op);
    LLVMTypeRef ret = arg ? c->i64 : red ? cg_reg_type(c, (GpDType)p->instr[p->root].dtype) : c->vd;
    LLVMValueRef fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(ret, params, (unsigned)nparams, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    c->ops->attrs(c, fn);
    for (int k = 0; k <= K; k++)
        cg_add_attr(c, fn, (unsigned)(k == K ? 2 * K + 1 : k + 1), "noalias");
    LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, fn, "entry"));
    if (c->ops->flags_param)
        c->fpe_flags = LLVMGetParam(fn, (unsigned)nparams - 1);
    for (int k = 0; k < K; k++) {
        r->base[k] = LLVMGetParam(fn, (unsigned)k);
        r->stride[k] = LLVMGetParam(fn, (unsigned)(K + k));
    }
    LLVMValueRef consts = LLVMGetParam(fn, (unsigned)(2 * K));
    *j0 = LLVMGetParam(fn, (unsigned)(2 * K + 1));
    *j1 = LLVMGetParam(fn, (unsigned)(2 * K + 2));
    for (int k = 0; k < p->ninstr; k++) {
        const GpInstr *ins = &p->instr[k];
        if (ins->op == GP_OP_CONST) {
            LLVMValueRef off = cg_cint(c->i64, 8 * ins->slot);
            r->bval[k] = cg_load(c, ins->dtype, LLVMBuildGEP2(c->b, c->i8, consts, &off, 1, ""));
        } else if (ins->op == GP_OP_LEAF && p->layout[ins->slot] == GP_LAYOUT_BCAST) {
            r->bval[k] = cg_load(c, ins->dtype, r->base[ins->slot]);
        } else if (ins->divisor) {
            /* a division by a constant: its multiplier and shifts (sh1 in
             * the low byte, sh2 in the next) in the divisor's type */
            LLVMTypeRef it = cg_reg_type(c, ins->dtype);
            LLVMValueRef off = cg_cint(c->i64, 8 * (ins->divisor - 1)), off2 = cg_cint(c->i64, 8 * ins->divisor);
            LLVMValueRef mul = LLVMBuildLoad2(c->b, c->i64, LLVMBuildGEP2(c->b, c->i8, consts, &off, 1, ""), "");
            LLVMValueRef sh = LLVMBuildLoad2(c->b, c->i64, LLVMBuildGEP2(c->b, c->i8, consts, &off2, 1, ""), "");
            r->magic[k][0] = LLVMBuildIntCast2(c->b, mul, it, 0, "");
            r->magic[k][1] = LLVMBuildIntCast2(c->b, LLVMBuildAnd(c->b, sh, cg_cint(c->i64, 255), ""), it, 0, "");
            r->magic[k][2] = LLVMBuildIntCast2(c->b, LLVMBuildLShr(c->b, sh, cg_cint(c->i64, 8), ""), it, 0, "");
        }
    }
    return fn;
}

/* map and map-scan: every point of [j0, j1) computed and stored. */
static void map_row(Cg *c, LLVMValueRef fn, CgRow *r, LLVMValueRef j0, LLVMValueRef j1)
{
    const GpProgram *p = c->p;
    for (int k = 0; k < p->ninstr; k++) {
        const GpInstr *ins = &p->instr[k];
        if (gp_op_kind[ins->op] != GP_KIND_SCAN)
            continue;
        /* each row starts from the identity; -0.0 for a float sum, so that
         * the first element is copied exactly as NumPy's accumulate does */
        LLVMTypeRef at = cg_reg_type(c, ins->dtype);
        LLVMValueRef idv = gp_dtype_is_float(ins->dtype) && ins->op == GP_OP_CUMSUM
                               ? cg_cfp(at, -0.0)
                               : identity_value(c, gp_scan_reduce_op((GpOp)ins->op), ins->dtype);
        c->scan_acc[k] = cg_entry_alloca(c, at, "scan");
        LLVMBuildStore(c->b, idv, c->scan_acc[k]);
    }
    LLVMValueRef j;
    CgLoop l = cg_loop_begin(c, fn, j0, j1, cg_cint(c->i64, 1), &j);
    cg_emit_point(c, r, j, 1);
    cg_loop_end(c, &l);
    cg_raise_noted(c);
    LLVMBuildRetVoid(c->b);
}

/* The more extreme of a and b for an arg-reduction (argmax: the larger):
 * NaN-propagating for floats (llvm.maximum; -0.0 below +0.0), so that the
 * vectorizer folds a chunk in vector registers. */
static LLVMValueRef extreme(Cg *c, GpDType t, int is_min, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef x[2] = {a, b};
    if (t == GP_BOOL)
        return is_min ? LLVMBuildAnd(c->b, a, b, "") : LLVMBuildOr(c->b, a, b, "");
    const char *name = gp_dtype_is_float(t)    ? (is_min ? "llvm.minimum" : "llvm.maximum")
                       : gp_dtype_is_signed(t) ? (is_min ? "llvm.smin" : "llvm.smax")
                                               : (is_min ? "llvm.umin" : "llvm.umax");
    return cg_intrinsic(c, name, cg_reg_type(c, t), x, 2);
}

/* A chunk's extreme (extreme() from the identity idv over tmp[0, m)) into
 * *ext_p.  In a GpProgram.quiet program on the CPU a float NaN never
 * reaches the fold (x86's vminps/vmaxps signal "invalid" on a quiet NaN,
 * where NumPy's min is quiet): a NaN point folds as the identity, and an
 * or-reduction of isnan beside the fold (both vectorize) makes the
 * extreme NaN after it. */
static void fold_extreme(Cg *c, LLVMValueRef fn, LLVMValueRef tmp, GpDType t, int is_min, LLVMValueRef idv,
                         LLVMValueRef m, LLVMValueRef ext_p)
{
    LLVMTypeRef at = cg_reg_type(c, t);
    int quiet = gp_dtype_is_float(t) && c->target->kind != GP_TARGET_NVPTX && c->p->quiet;
    LLVMValueRef nan_p = quiet ? cg_entry_alloca(c, c->i1, "chunk_nan") : NULL, i;
    LLVMBuildStore(c->b, idv, ext_p);
    if (quiet)
        LLVMBuildStore(c->b, cg_cint(c->i1, 0), nan_p);
    CgLoop fold = cg_loop_begin(c, fn, cg_cint(c->i64, 0), m, cg_cint(c->i64, 1), &i);
    LLVMValueRef v = load_tmp(c, tmp, at, i);
    if (quiet) {
        LLVMValueRef nan = cg_is_nan(c, v);
        LLVMBuildStore(c->b, LLVMBuildOr(c->b, LLVMBuildLoad2(c->b, c->i1, nan_p, ""), nan, ""), nan_p);
        v = cg_sel(c, nan, idv, v);
    }
    LLVMBuildStore(c->b, extreme(c, t, is_min, LLVMBuildLoad2(c->b, at, ext_p, ""), v), ext_p);
    cg_loop_end(c, &fold);
    if (quiet)
        LLVMBuildStore(c->b,
                       cg_sel(c, LLVMBuildLoad2(c->b, c->i1, nan_p, ""), cg_cfp(at, (double)NAN),
                              LLVMBuildLoad2(c->b, at, ext_p, "")),
                       ext_p);
}

/* Whether v is NumPy's better argmin/argmax candidate than the current
 * value cur: strictly more extreme; for floats a NaN wins and the first
 * NaN stays (isnan(cur) ? keep : isnan(v) || v < cur ? take : keep). */
static LLVMValueRef improves(Cg *c, GpDType t, int is_min, LLVMValueRef v, LLVMValueRef cur)
{
    if (gp_dtype_is_float(t)) {
        LLVMValueRef better = cg_fcmp_quiet(c, is_min ? LLVMRealOLT : LLVMRealOGT, v, cur);
        better = LLVMBuildOr(c->b, better, cg_is_nan(c, v), "");
        return LLVMBuildAnd(c->b, better, LLVMBuildNot(c->b, cg_is_nan(c, cur), ""), "");
    }
    if (t == GP_BOOL)
        return is_min ? LLVMBuildAnd(c->b, cur, LLVMBuildNot(c->b, v, ""), "")
                      : LLVMBuildAnd(c->b, v, LLVMBuildNot(c->b, cur, ""), "");
    int sg = gp_dtype_is_signed(t);
    return LLVMBuildICmp(c->b, is_min ? (sg ? LLVMIntSLT : LLVMIntULT) : (sg ? LLVMIntSGT : LLVMIntUGT), v, cur, "");
}

/* NumPy's argmin/argmax over n points from j0: the first extreme value, the
 * first NaN for floats with any.  Per chunk of RED_CHUNK points: the
 * chunk's extreme (a vectorized fold, extreme()), and only when it improves
 * on the value so far a scan for its first index -- the one-point-at-a-time
 * compare and select runs for the chunks that hold a new best, not for
 * every point.  Returns the index, stores the value at the last parameter. */
static void arg_row(Cg *c, LLVMValueRef fn, CgRow *r, LLVMValueRef j0, LLVMValueRef n)
{
    const GpProgram *p = c->p;
    GpDType rt = (GpDType)p->instr[p->root].dtype;
    LLVMTypeRef at = cg_reg_type(c, rt);
    int is_min = p->reduce_op == GP_OP_ARGMIN, fl = gp_dtype_is_float(rt);
    LLVMValueRef tmp = tmp_alloca(c, at);
    LLVMValueRef acc = cg_entry_alloca(c, at, "acc"), best = cg_entry_alloca(c, c->i64, "best");
    LLVMValueRef ext_p = cg_entry_alloca(c, at, "ext"), found = cg_entry_alloca(c, c->i64, "found");
    LLVMBuildStore(c->b, cg_cint(c->i64, -1), best);
    LLVMValueRef c0, m, i, zero = cg_cint(c->i64, 0);
    LLVMValueRef idv = identity_value(c, is_min ? GP_OP_MIN : GP_OP_MAX, rt);
    CgLoop outer = chunk_begin(c, fn, r, tmp, at, j0, LLVMBuildAdd(c->b, j0, n, ""), &c0, &m);
    /* from the identity, so that a whole chunk is vector steps without a
     * scalar remainder (from its first point, 31 of 128 were scalar) */
    fold_extreme(c, fn, tmp, rt, is_min, idv, m, ext_p);
    LLVMValueRef ext = LLVMBuildLoad2(c->b, at, ext_p, "");
    LLVMValueRef first = LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildLoad2(c->b, c->i64, best, ""), zero, "");
    LLVMValueRef better = LLVMBuildOr(c->b, first, improves(c, rt, is_min, ext, LLVMBuildLoad2(c->b, at, acc, "")), "");
    LLVMBasicBlockRef scan = LLVMAppendBasicBlockInContext(c->ctx, fn, "new_best");
    LLVMBasicBlockRef kept = LLVMAppendBasicBlockInContext(c->ctx, fn, "kept");
    LLVMBuildCondBr(c->b, better, scan, kept);
    LLVMPositionBuilderAtEnd(c->b, scan);
    /* the first point equal to the chunk's extreme (the first NaN when it
     * is NaN; -0.0 == +0.0, so the first of tied zeros, as NumPy's scan) */
    LLVMBuildStore(c->b, cg_cint(c->i64, -1), found);
    CgLoop l = cg_loop_begin(c, fn, zero, m, cg_cint(c->i64, 1), &i);
    LLVMValueRef v = load_tmp(c, tmp, at, i);
    LLVMValueRef match =
        fl ? cg_sel(c, cg_is_nan(c, ext), cg_is_nan(c, v), LLVMBuildFCmp(c->b, LLVMRealOEQ, v, ext, ""))
           : LLVMBuildICmp(c->b, LLVMIntEQ, v, ext, "");
    LLVMValueRef f = LLVMBuildLoad2(c->b, c->i64, found, "");
    LLVMValueRef hit = LLVMBuildAnd(c->b, match, LLVMBuildICmp(c->b, LLVMIntSLT, f, zero, ""), "");
    LLVMBuildStore(c->b, cg_sel(c, hit, i, f), found);
    cg_loop_end(c, &l);
    LLVMValueRef k = LLVMBuildLoad2(c->b, c->i64, found, "");
    LLVMBuildStore(c->b, load_tmp(c, tmp, at, k), acc);
    LLVMBuildStore(c->b, LLVMBuildAdd(c->b, c0, k, ""), best);
    LLVMBuildBr(c->b, kept);
    LLVMPositionBuilderAtEnd(c->b, kept);
    cg_loop_end(c, &outer);
    cg_store(c, rt, LLVMBuildLoad2(c->b, at, acc, ""), LLVMGetParam(fn, (unsigned)(2 * p->noperands + 3)));
    cg_raise_noted(c);
    LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, c->i64, best, ""));
}

/* map-reduce in order: chunks of RED_CHUNK points (a vectorizable map loop
 * fills tmp), each folded into acc from the identity in order. */
static void reduce_row(Cg *c, LLVMValueRef fn, CgRow *r, LLVMValueRef j0, LLVMValueRef n)
{
    const GpProgram *p = c->p;
    GpOp rop = (GpOp)p->reduce_op;
    GpDType rt = (GpDType)p->instr[p->root].dtype;
    LLVMTypeRef at = cg_reg_type(c, rt);
    LLVMValueRef tmp = tmp_alloca(c, at);
    LLVMValueRef acc = cg_entry_alloca(c, at, "acc");
    LLVMValueRef idv = identity_value(c, rop, rt);
    LLVMBuildStore(c->b, idv, acc);
    LLVMValueRef c0, m, i, zero = cg_cint(c->i64, 0);
    CgLoop outer = chunk_begin(c, fn, r, tmp, at, j0, LLVMBuildAdd(c->b, j0, n, ""), &c0, &m);
    LLVMBasicBlockRef join = NULL;
    if (gp_dtype_is_float(rt) && (rop == GP_OP_MIN || rop == GP_OP_MAX)) {
        /* the chunk's extreme first, by llvm.minimum/maximum, which the
         * vectorizer folds (the in-order step below, which keeps the first
         * NaN and takes the later of tied zeros, it does not: a float32
         * x.min() ran 4.6x NumPy's time).  A number other than zero is the
         * one value the in-order fold reaches (equal numbers other than
         * zero have one bit pattern), taken into acc by the same step; a
         * NaN (whose payload is the first NaN's) or a zero (-0.0 and +0.0
         * tie: the order decides) folds the chunk in order. */
        LLVMValueRef ep = cg_entry_alloca(c, at, "ext");
        /* from the identity (+-inf), so that a whole chunk is vector
         * steps without a scalar remainder */
        fold_extreme(c, fn, tmp, rt, rop == GP_OP_MIN, idv, m, ep);
        LLVMValueRef ext = LLVMBuildLoad2(c->b, at, ep, "");
        LLVMValueRef exact = LLVMBuildFCmp(c->b, LLVMRealUEQ, ext, cg_cfp(at, 0.0), ""); /* NaN or a zero */
        LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(c->ctx, fn, "chunk_extreme");
        LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(c->ctx, fn, "chunk_in_order");
        join = LLVMAppendBasicBlockInContext(c->ctx, fn, "chunk_done");
        LLVMBuildCondBr(c->b, exact, slow, fast);
        LLVMPositionBuilderAtEnd(c->b, fast);
        LLVMBuildStore(c->b, cg_reduce_step(c, rop, rt, LLVMBuildLoad2(c->b, at, acc, ""), ext), acc);
        LLVMBuildBr(c->b, join);
        LLVMPositionBuilderAtEnd(c->b, slow);
    }
    CgLoop l = cg_loop_begin(c, fn, zero, m, cg_cint(c->i64, 1), &i);
    LLVMValueRef v = load_tmp(c, tmp, at, i);
    LLVMBuildStore(c->b, cg_reduce_step(c, rop, rt, LLVMBuildLoad2(c->b, at, acc, ""), v), acc);
    cg_loop_end(c, &l);
    if (join) {
        LLVMBuildBr(c->b, join);
        LLVMPositionBuilderAtEnd(c->b, join);
    }
    cg_loop_end(c, &outer);
    cg_raise_noted(c);
    LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, at, acc, ""));
}

/* sum_{i in [lo, hi)} tmp[i] into acc, in order. */
static void sum_tmp(Cg *c, LLVMValueRef fn, LLVMValueRef tmp, LLVMTypeRef at, LLVMValueRef acc, LLVMValueRef lo,
                    LLVMValueRef hi)
{
    LLVMValueRef i;
    CgLoop l = cg_loop_begin(c, fn, lo, hi, cg_cint(c->i64, 1), &i);
    LLVMBuildStore(c->b, LLVMBuildFAdd(c->b, LLVMBuildLoad2(c->b, at, acc, ""), load_tmp(c, tmp, at, i), ""), acc);
    cg_loop_end(c, &l);
}

/* NumPy's pairwise leaf (n <= PW_BLOCK = RED_CHUNK): the map values go to
 * tmp first, as NumPy's own temporary; then n < 8 is summed sequentially
 * from -0.0, else with eight accumulators over blocks of 8 combined as
 * ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the remainder in order. */
static void pairwise_row(Cg *c, LLVMValueRef fn, CgRow *r, LLVMValueRef j0, LLVMValueRef n)
{
    const GpProgram *p = c->p;
    LLVMTypeRef at = cg_reg_type(c, (GpDType)p->instr[p->root].dtype);
    LLVMValueRef tmp = tmp_alloca(c, at);
    LLVMValueRef acc = cg_entry_alloca(c, at, "acc");
    fill_tmp(c, fn, r, tmp, at, j0, n);
    LLVMBasicBlockRef small = LLVMAppendBasicBlockInContext(c->ctx, fn, "small");
    LLVMBasicBlockRef big = LLVMAppendBasicBlockInContext(c->ctx, fn, "big");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, n, cg_cint(c->i64, 8), ""), small, big);
    LLVMPositionBuilderAtEnd(c->b, small);
    LLVMBuildStore(c->b, cg_cfp(at, -0.0), acc);
    sum_tmp(c, fn, tmp, at, acc, cg_cint(c->i64, 0), n);
    cg_raise_noted(c);
    LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, at, acc, ""));

    LLVMPositionBuilderAtEnd(c->b, big);
    /* the eight accumulators as one <8 x T> (lane q is NumPy's r[q]: the
     * same additions, in vector registers) */
    LLVMTypeRef vt = LLVMVectorType(at, 8);
    LLVMValueRef racc = cg_entry_alloca(c, vt, "r"), rv[8], i;
    LLVMValueRef v0 =
        LLVMBuildLoad2(c->b, vt, LLVMBuildGEP2(c->b, at, tmp, (LLVMValueRef[]){cg_cint(c->i64, 0)}, 1, ""), "");
    LLVMSetAlignment(v0, (unsigned)(cg_bits((GpDType)p->instr[p->root].dtype) / 8));
    LLVMBuildStore(c->b, v0, racc);
    LLVMValueRef nblk = LLVMBuildSub(c->b, n, LLVMBuildSRem(c->b, n, cg_cint(c->i64, 8), ""), "");
    CgLoop l = cg_loop_begin(c, fn, cg_cint(c->i64, 8), nblk, cg_cint(c->i64, 8), &i);
    LLVMValueRef vi = LLVMBuildLoad2(c->b, vt, LLVMBuildGEP2(c->b, at, tmp, &i, 1, ""), "");
    LLVMSetAlignment(vi, (unsigned)(cg_bits((GpDType)p->instr[p->root].dtype) / 8));
    LLVMBuildStore(c->b, LLVMBuildFAdd(c->b, LLVMBuildLoad2(c->b, vt, racc, ""), vi, ""), racc);
    cg_loop_end(c, &l);
    LLVMValueRef rvec = LLVMBuildLoad2(c->b, vt, racc, "");
    for (int q = 0; q < 8; q++)
        rv[q] = LLVMBuildExtractElement(c->b, rvec, cg_cint(c->i32, q), "");
    LLVMValueRef s01 = LLVMBuildFAdd(c->b, rv[0], rv[1], ""), s23 = LLVMBuildFAdd(c->b, rv[2], rv[3], "");
    LLVMValueRef s45 = LLVMBuildFAdd(c->b, rv[4], rv[5], ""), s67 = LLVMBuildFAdd(c->b, rv[6], rv[7], "");
    LLVMBuildStore(c->b, LLVMBuildFAdd(c->b, LLVMBuildFAdd(c->b, s01, s23, ""), LLVMBuildFAdd(c->b, s45, s67, ""), ""),
                   acc);
    sum_tmp(c, fn, tmp, at, acc, nblk, n);
    cg_raise_noted(c);
    LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, at, acc, ""));
}

/* One column of NumPy's pairwise leaf, for a GPU whose eight threads
 * share a leaf (gp_codegen_leaf_threads; codegen_nvptx.c combines them):
 * n points from j0 at steps of 8, summed in order from -0.0 (so the
 * column is NumPy's r[q] = x[q] + x[q+8] + ..., the same additions:
 * -0.0 + x is x for every x). */
static void column_row(Cg *c, LLVMValueRef fn, CgRow *r, LLVMValueRef j0, LLVMValueRef n)
{
    const GpProgram *p = c->p;
    LLVMTypeRef at = cg_reg_type(c, (GpDType)p->instr[p->root].dtype);
    LLVMValueRef acc = cg_entry_alloca(c, at, "acc"), j;
    LLVMBuildStore(c->b, cg_cfp(at, -0.0), acc);
    LLVMValueRef end = LLVMBuildAdd(c->b, j0, LLVMBuildMul(c->b, n, cg_cint(c->i64, 8), ""), "");
    CgLoop l = cg_loop_begin(c, fn, j0, end, cg_cint(c->i64, 8), &j);
    LLVMValueRef v = cg_emit_point(c, r, j, 1);
    LLVMBuildStore(c->b, LLVMBuildFAdd(c->b, LLVMBuildLoad2(c->b, at, acc, ""), v, ""), acc);
    cg_loop_end(c, &l);
    cg_raise_noted(c);
    LLVMBuildRet(c->b, LLVMBuildLoad2(c->b, at, acc, ""));
}

static LLVMValueRef emit_row(Cg *c, const char *name)
{
    CgRow r;
    LLVMValueRef j0, j1;
    LLVMValueRef fn = row_begin(c, name, &r, &j0, &j1);
    const GpProgram *p = c->p;
    if (p->kind != GP_KIND_REDUCE)
        map_row(c, fn, &r, j0, j1);
    else if (gp_op_is_arg((GpOp)p->reduce_op))
        arg_row(c, fn, &r, j0, j1);
    else if (gp_codegen_leaf_threads(p, c->target->kind) == 8)
        column_row(c, fn, &r, j0, j1);
    else if (p->pairwise)
        pairwise_row(c, fn, &r, j0, j1);
    else
        reduce_row(c, fn, &r, j0, j1);
    return fn;
}

LLVMModuleRef gp_codegen(const GpProgram *p, const GpTarget *t, LLVMContextRef ctx, const char *name)
{
    Cg c;
    memset(&c, 0, sizeof c);
    c.target = t;
    c.ops = t->kind == GP_TARGET_NVPTX ? &cg_nvptx_target : &cg_cpu_target;
    CgTargetOps grid;
    if (t->kind == GP_TARGET_HOST_GRID) {
        /* the GPU's kernels, run by the host: NVPTX entries and flags,
         * the CPU's math and attributes (tests of the GPU back end) */
        grid = cg_nvptx_target;
        grid.attrs = cg_cpu_target.attrs;
        grid.math = cg_cpu_target.math;
        grid.finish = cg_cpu_target.finish;
        c.ops = &grid;
    }
    c.ctx = ctx;
    c.p = p;
    c.mod = LLVMModuleCreateWithNameInContext(name, ctx);
    c.b = LLVMCreateBuilderInContext(ctx);
    c.i1 = LLVMInt1TypeInContext(ctx);
    c.i8 = LLVMInt8TypeInContext(ctx);
    c.i16 = LLVMInt16TypeInContext(ctx);
    c.i32 = LLVMInt32TypeInContext(ctx);
    c.i64 = LLVMInt64TypeInContext(ctx);
    c.f32 = LLVMFloatTypeInContext(ctx);
    c.f64 = LLVMDoubleTypeInContext(ctx);
    c.ptr = LLVMPointerTypeInContext(ctx, 0);
    c.vd = LLVMVoidTypeInContext(ctx);

    char rowname[96];
    snprintf(rowname, sizeof rowname, "%s_row", name);
    LLVMValueRef row = emit_row(&c, rowname);
    c.ops->entry(&c, row, name);
    if (c.ops->finish)
        c.ops->finish(&c);
    LLVMDisposeBuilder(c.b);
    return c.mod;
}
