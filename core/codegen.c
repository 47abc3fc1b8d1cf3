/* core/codegen.c -- target-independent IR for the point function of a
 * fused program (paper section 3).
 *
 * A kernel is a row function and an entry (codegen_ir.h):
 *   1. The row function (codegen_rows.c), one noalias pointer per operand,
 *      computes the point function over a range of the innermost
 *      dimension: leaves are loaded by layout class (contiguous: p[j];
 *      broadcast: loaded once; strided: p + j*stride), every instruction is
 *      emitted once per point in topological order (this file), map
 *      outputs are stored.  For map-reduce the row folds the point values
 *      with the reduction's binary operator instead.
 *   2. The target's entry (codegen_cpu.c, codegen_nvptx.c) decomposes each
 *      outer index over the outer dims into per-operand byte offsets and
 *      calls the row function.
 *   3. jit.c optimizes (O2, loop and SLP vectorizers, libmvec) and compiles.
 * Semantics are NumPy's, operation by operation: see the MEANING column of
 * ops.def and the comments below.  No fast-math flags are ever set, so
 * basic float operations round exactly as NumPy's loops do.
 */
#include "codegen.h"
#include "codegen_ir.h"

#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- packed arguments, read by the entries ----------------------------- */

LLVMValueRef cg_karg(Cg *c, LLVMValueRef a, LLVMValueRef slot, LLVMValueRef idx)
{
    if (idx)
        slot = LLVMBuildAdd(c->b, slot, idx, "");
    return LLVMBuildGEP2(c->b, c->i64, a, &slot, 1, "");
}

LLVMValueRef cg_karg_shape(Cg *c, LLVMValueRef nd)
{
    (void)nd;
    return cg_cint(c->i64, 1);
}

LLVMValueRef cg_karg_data(Cg *c, LLVMValueRef nd) { return LLVMBuildAdd(c->b, nd, cg_cint(c->i64, 1), ""); }

LLVMValueRef cg_karg_strides(Cg *c, LLVMValueRef nd, int k)
{
    /* 1 + nd + K + k*nd */
    LLVMValueRef base = LLVMBuildAdd(c->b, nd, cg_cint(c->i64, 1 + c->p->noperands), "");
    return LLVMBuildAdd(c->b, base, LLVMBuildMul(c->b, nd, cg_cint(c->i64, k), ""), "");
}

LLVMValueRef cg_karg_consts(Cg *c, LLVMValueRef nd) { return cg_karg_strides(c, nd, c->p->noperands); }

int cg_row_nparams(const Cg *c)
{
    const GpProgram *p = c->p;
    int arg = p->kind == GP_KIND_REDUCE && gp_op_is_arg((GpOp)p->reduce_op);
    return 2 * p->noperands + 3 + arg + c->ops->flags_param;
}

/* ---- types and constants --------------------------------------------- */

LLVMTypeRef cg_reg_type(Cg *c, GpDType t)
{
    switch (t) {
    case GP_BOOL: return c->i1;
    case GP_INT8:
    case GP_UINT8: return c->i8;
    case GP_INT16:
    case GP_UINT16: return c->i16;
    case GP_INT32:
    case GP_UINT32: return c->i32;
    case GP_INT64:
    case GP_UINT64: return c->i64;
    case GP_FLOAT32: return c->f32;
    default: return c->f64;
    }
}

LLVMTypeRef cg_mem_type(Cg *c, GpDType t) { return t == GP_BOOL ? c->i8 : cg_reg_type(c, t); }

int cg_bits(GpDType t) { return t == GP_BOOL ? 1 : (int)gp_dtype_size(t) * 8; }

LLVMValueRef cg_cint(LLVMTypeRef t, long long v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
LLVMValueRef cg_cfp(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

/* Loads a value of dtype t from memory at p (bool bytes: nonzero is true). */
LLVMValueRef cg_load(Cg *c, GpDType t, LLVMValueRef p)
{
    LLVMValueRef v = LLVMBuildLoad2(c->b, cg_mem_type(c, t), p, "");
    if (t == GP_BOOL)
        v = LLVMBuildICmp(c->b, LLVMIntNE, v, cg_cint(c->i8, 0), "");
    return v;
}

void cg_store(Cg *c, GpDType t, LLVMValueRef v, LLVMValueRef p)
{
    if (t == GP_BOOL)
        v = LLVMBuildZExt(c->b, v, c->i8, "");
    LLVMBuildStore(c->b, v, p);
}

/* ---- calls ------------------------------------------------------------- */

LLVMValueRef cg_intrinsic(Cg *c, const char *name, LLVMTypeRef t, LLVMValueRef *args, unsigned n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef tys[1] = {t};
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, tys, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->ctx, id, tys, 1);
    return LLVMBuildCall2(c->b, fty, fn, args, n, "");
}

/* A math function through the target (codegen_ir.h). */
static LLVMValueRef math(Cg *c, const char *in, const char *libm_name, LLVMTypeRef t, LLVMValueRef *args, unsigned n)
{
    return c->ops->math(c, in, libm_name, t, args, n);
}

LLVMValueRef cg_is_nan(Cg *c, LLVMValueRef v) { return LLVMBuildFCmp(c->b, LLVMRealUNO, v, v, ""); }

/* An ordered relational compare (OLT, OLE, OGT, OGE) of floats.  In a
 * program with GpProgram.quiet it raises no IEEE flag on a quiet NaN, as
 * NumPy's loops' compares (_CMP_LT_OQ): x86's vector compares for these
 * predicates signal "invalid" on any NaN, which costs a kernel a NumPy
 * replay (plan.c report_fpe).  Each operand is zero where it is NaN and
 * the answer false there: x86-64 compares with AVX-512 masks (a masked-off
 * lane raises nothing) or blends.  It costs 20-40% of a compare-bound
 * kernel's time, so it is only compiled once a program's data had NaNs
 * (gp_config.quiet_compares).  GPU targets have no flags: the compare as
 * is. */
LLVMValueRef cg_fcmp_quiet(Cg *c, LLVMRealPredicate pred, LLVMValueRef a, LLVMValueRef b)
{
    if (c->target->kind == GP_TARGET_NVPTX || !c->p->quiet)
        return LLVMBuildFCmp(c->b, pred, a, b, "");
    /* each operand on its own, so that a loop-invariant one (a constant,
     * a broadcast) is made quiet once, outside the loop */
    LLVMValueRef q[2] = {a, b}, ord = NULL, zero = LLVMConstNull(LLVMTypeOf(a));
    for (int i = 0; i < 2; i++) {
        if (LLVMIsConstant(q[i]))
            continue;
        LLVMValueRef o = LLVMBuildFCmp(c->b, LLVMRealORD, q[i], q[i], "");
        q[i] = cg_sel(c, o, q[i], zero);
        ord = ord ? LLVMBuildAnd(c->b, ord, o, "") : o;
    }
    LLVMValueRef r = LLVMBuildFCmp(c->b, pred, q[0], q[1], "");
    return ord ? LLVMBuildAnd(c->b, ord, r, "") : r;
}
LLVMValueRef cg_sel(Cg *c, LLVMValueRef k, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(c->b, k, a, b, "");
}

/* "invalid" from a conversion is ORed into a flag of the row function, a
 * reduction the vectorizer keeps in vector registers, and raised once
 * before the function returns (cg_raise_noted): a branch per element would
 * keep the loop scalar (6x slower for a fused sin and cast).  *acc is the
 * flag's alloca in function *acc_fn. */
static void note(Cg *c, LLVMValueRef *acc, LLVMValueRef *acc_fn, LLVMValueRef cond)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(c->b));
    if (*acc_fn != fn) {
        *acc_fn = fn;
        *acc = cg_entry_alloca(c, c->i1, "noted");
        LLVMValueRef next = LLVMGetNextInstruction(*acc);
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
        LLVMPositionBuilderBefore(eb, next);
        LLVMBuildStore(eb, LLVMConstInt(c->i1, 0, 0), *acc);
        LLVMDisposeBuilder(eb);
    }
    LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i1, *acc, "");
    LLVMBuildStore(c->b, LLVMBuildOr(c->b, cur, cond, ""), *acc);
}

static void note_invalid(Cg *c, LLVMValueRef cond) { note(c, &c->invalid_acc, &c->invalid_fn, cond); }

void cg_raise_noted(Cg *c)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(c->b));
    if (c->invalid_fn == fn)
        c->ops->raise_fpe(c, LLVMBuildLoad2(c->b, c->i1, c->invalid_acc, ""), CG_RAISE_INVALID);
    if (c->nonfinite_fn == fn)
        c->ops->raise_fpe(c, LLVMBuildLoad2(c->b, c->i1, c->nonfinite_acc, ""), CG_RAISE_NONFINITE);
}

static LLVMValueRef is_finite(Cg *c, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    return LLVMBuildFCmp(c->b, LLVMRealOLT, cg_intrinsic(c, "llvm.fabs", t, &v, 1), cg_cfp(t, (double)INFINITY), "");
}

/* check_nonfinite targets: value v of dtype t (inputs x[0..nin)) is not
 * finite while its float inputs are (divide, overflow, invalid), or a NaN
 * while none of them is (invalid: inf - inf, 0 * inf, sqrt(-inf)): some
 * IEEE exception would have been raised (noted, raised once per row). */
static void note_nonfinite(Cg *c, GpDType t, LLVMValueRef v, LLVMValueRef *x, int nin)
{
    if (!gp_dtype_is_float(t))
        return;
    LLVMValueRef cond = LLVMBuildNot(c->b, is_finite(c, v), "");
    LLVMValueRef nan_in = LLVMConstInt(c->i1, 0, 0);
    for (int i = 0; i < nin; i++)
        if (LLVMGetTypeKind(LLVMTypeOf(x[i])) == LLVMFloatTypeKind ||
            LLVMGetTypeKind(LLVMTypeOf(x[i])) == LLVMDoubleTypeKind) {
            cond = LLVMBuildAnd(c->b, cond, is_finite(c, x[i]), "");
            nan_in = LLVMBuildOr(c->b, nan_in, cg_is_nan(c, x[i]), "");
        }
    LLVMValueRef new_nan = LLVMBuildAnd(c->b, cg_is_nan(c, v), LLVMBuildNot(c->b, nan_in, ""), "");
    note(c, &c->nonfinite_acc, &c->nonfinite_fn, LLVMBuildOr(c->b, cond, new_nan, ""));
}

static LLVMValueRef tanh_f32(Cg *c, LLVMValueRef xf);
static LLVMValueRef cos_f64(Cg *c, LLVMValueRef x);

/* ---- casts: C semantics as NumPy's loops compile on x86-64 ------------- */

/* The IEEE bits of x as a float32 (f32) or a float64. */
static uint64_t float_bits(double x, int f32)
{
    if (f32) {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        return u;
    }
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Float to a 32- or 64-bit signed integer as cvttsd2si: out-of-range and NaN
 * give the "integer indefinite" value INT_MIN and raise "invalid" (NumPy:
 * "invalid value encountered in cast").  *out_of_range, when given, gets
 * the condition instead of the raise (the caller decides). */
static LLVMValueRef x86_fptosi(Cg *c, LLVMValueRef v, GpDType from, int nbits, LLVMValueRef *out_of_range)
{
    /* float32 in float32: no float32 lies in (-2^31 - 1, -2^31) (they are
     * 128 apart there), so v > -2^31 - 1 is v >= -2^31, and float32 holds
     * -2^31, 2^31, -2^63 and 2^63 exactly; truncating v is truncating
     * (double)v.  A widening to double would halve the vector width. */
    int f32 = from == GP_FLOAT32;
    LLVMTypeRef ft = f32 ? c->f32 : c->f64, it = nbits == 32 ? c->i32 : c->i64;
    double lo = nbits == 32 ? (f32 ? -2147483648.0 : -2147483649.0) : -9223372036854775808.0;
    double hi = nbits == 32 ? 2147483648.0 : 9223372036854775808.0;
    /* The range test compares the bits as integers: |v|'s bits are below
     * hi's for v >= +0 and below -lo's (+1 where lo itself is in range)
     * for v <= -0; NaN's are above infinity's.  A floating compare would
     * raise "invalid" for a NaN, and LLVM may compute a scalar compare as
     * a packed one whose other lanes hold whatever the register held
     * (x86-64's cvtsd2ss keeps them): a spurious flag, then a replay. */
    LLVMTypeRef bt = f32 ? c->i32 : c->i64;
    LLVMValueRef bits = LLVMBuildBitCast(c->b, v, bt, "");
    LLVMValueRef mag = LLVMBuildAnd(c->b, bits, LLVMConstInt(bt, f32 ? 0x7fffffffull : 0x7fffffffffffffffull, 0), "");
    LLVMValueRef neg = LLVMBuildICmp(c->b, LLVMIntSLT, bits, LLVMConstInt(bt, 0, 0), "");
    uint64_t hi_bits = float_bits(hi, f32), lo_bits = float_bits(-lo, f32) + (nbits == 32 && !f32 ? 0 : 1);
    LLVMValueRef limit = cg_sel(c, neg, LLVMConstInt(bt, lo_bits, 0), LLVMConstInt(bt, hi_bits, 0));
    LLVMValueRef in_range = LLVMBuildICmp(c->b, LLVMIntULT, mag, limit, "");
    LLVMValueRef oor = LLVMBuildNot(c->b, in_range, "");
    if (out_of_range)
        *out_of_range = oor;
    else
        note_invalid(c, oor);
    LLVMValueRef safe = cg_sel(c, in_range, v, cg_cfp(ft, 0.0));
    LLVMValueRef r = LLVMBuildFPToSI(c->b, safe, it, "");
    return cg_sel(c, in_range, r, LLVMConstInt(it, nbits == 32 ? 0x80000000ull : 0x8000000000000000ull, 0));
}

static LLVMValueRef emit_cast(Cg *c, LLVMValueRef v, GpDType from, GpDType to)
{
    LLVMTypeRef tt = cg_reg_type(c, to);
    if (from == to)
        return v;
    if (to == GP_BOOL) {
        if (gp_dtype_is_float(from))
            return LLVMBuildFCmp(c->b, LLVMRealUNE, v, cg_cfp(cg_reg_type(c, from), 0.0), "");
        return LLVMBuildICmp(c->b, LLVMIntNE, v, cg_cint(cg_reg_type(c, from), 0), "");
    }
    if (gp_dtype_is_float(from) && gp_dtype_is_float(to))
        return to == GP_FLOAT64 ? LLVMBuildFPExt(c->b, v, tt, "") : LLVMBuildFPTrunc(c->b, v, tt, "");
    if (gp_dtype_is_float(to)) {
        if (from == GP_BOOL || gp_dtype_is_unsigned(from))
            return LLVMBuildUIToFP(c->b, v, tt, "");
        return LLVMBuildSIToFP(c->b, v, tt, "");
    }
    if (gp_dtype_is_float(from)) {
        LLVMValueRef r;
        switch (to) {
        case GP_INT8:
        case GP_INT16:
        case GP_UINT8:
        case GP_UINT16:
        case GP_INT32: r = x86_fptosi(c, v, from, 32, NULL); break;
        case GP_UINT64: {
            /* gcc's sequence: values >= 2^63 are offset by 2^63 first */
            LLVMValueRef d = from == GP_FLOAT32 ? LLVMBuildFPExt(c->b, v, c->f64, "") : v;
            /* d >= 2^63, NaN not (gcc's comisd), as integers (x86_fptosi) */
            LLVMValueRef db = LLVMBuildBitCast(c->b, d, c->i64, "");
            LLVMValueRef big = LLVMBuildAnd(
                c->b, LLVMBuildICmp(c->b, LLVMIntSGE, db, LLVMConstInt(c->i64, float_bits(0x1p63, 0), 0), ""),
                LLVMBuildICmp(c->b, LLVMIntSLE, db, LLVMConstInt(c->i64, float_bits(INFINITY, 0), 0), ""), "");
            LLVMValueRef low_oor, shifted_oor;
            LLVMValueRef lowpart = x86_fptosi(c, d, GP_FLOAT64, 64, &low_oor);
            LLVMValueRef shifted = x86_fptosi(c, LLVMBuildFSub(c->b, d, cg_cfp(c->f64, 9223372036854775808.0), ""),
                                              GP_FLOAT64, 64, &shifted_oor);
            shifted = LLVMBuildXor(c->b, shifted, LLVMConstInt(c->i64, 0x8000000000000000ull, 0), "");
            r = cg_sel(c, big, shifted, lowpart);
            note_invalid(c, cg_sel(c, big, shifted_oor, low_oor)); /* the conversion gcc's sequence ran */
            break;
        }
        default: /* INT64, UINT32 */ r = x86_fptosi(c, v, from, 64, NULL);
        }
        return (int)LLVMGetIntTypeWidth(LLVMTypeOf(r)) > cg_bits(to) ? LLVMBuildTrunc(c->b, r, tt, "") : r;
    }
    /* integer to integer: truncate or extend by the source's signedness */
    if (cg_bits(to) < cg_bits(from))
        return LLVMBuildTrunc(c->b, v, tt, "");
    if (cg_bits(to) == cg_bits(from))
        return v;
    if (gp_dtype_is_signed(from))
        return LLVMBuildSExt(c->b, v, tt, "");
    return LLVMBuildZExt(c->b, v, tt, "");
}

/* ---- integer division family (NumPy: x // 0 == 0, x % 0 == 0) --------- */

static LLVMValueRef int_divmod(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b, int want_mod, int floor_sem)
{
    LLVMTypeRef it = cg_reg_type(c, t);
    LLVMValueRef zero = cg_cint(it, 0), one = cg_cint(it, 1);
    LLVMValueRef bzero = LLVMBuildICmp(c->b, LLVMIntEQ, b, zero, "");
    c->ops->raise_fpe(c, bzero, CG_RAISE_DIVIDE); /* x // 0, x % 0: NumPy's divide-by-zero flag */
    if (!gp_dtype_is_signed(t)) {
        LLVMValueRef safe = cg_sel(c, bzero, one, b);
        LLVMValueRef r = want_mod ? LLVMBuildURem(c->b, a, safe, "") : LLVMBuildUDiv(c->b, a, safe, "");
        return cg_sel(c, bzero, zero, r);
    }
    LLVMValueRef minv = LLVMConstInt(it, 1ull << (cg_bits(t) - 1), 0);
    LLVMValueRef ovf = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, a, minv, ""),
                                    LLVMBuildICmp(c->b, LLVMIntEQ, b, cg_cint(it, -1), ""), "");
    if (!want_mod)
        c->ops->raise_fpe(c, ovf, CG_RAISE_OVERFLOW); /* MIN // -1: NumPy's overflow flag */
    LLVMValueRef bad = LLVMBuildOr(c->b, bzero, ovf, "");
    LLVMValueRef safe = cg_sel(c, bad, one, b);
    LLVMValueRef q = LLVMBuildSDiv(c->b, a, safe, "");
    LLVMValueRef r = LLVMBuildSRem(c->b, a, safe, "");
    if (floor_sem) {
        /* adjust toward -inf when the remainder's sign differs from b's */
        LLVMValueRef adjust = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntNE, r, zero, ""),
                                           LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildXor(c->b, r, b, ""), zero, ""), "");
        q = cg_sel(c, adjust, LLVMBuildSub(c->b, q, one, ""), q);
        r = cg_sel(c, adjust, LLVMBuildAdd(c->b, r, b, ""), r);
    }
    if (want_mod)
        return cg_sel(c, bad, zero, r);
    /* MIN // -1 wraps to MIN as NumPy's loop does; x // 0 is 0 */
    return cg_sel(c, bzero, zero, cg_sel(c, ovf, minv, q));
}

/* High half of the 2N-bit product of N-bit a and b, signed or unsigned.
 * 64-bit on the CPU: four 32x32-bit products, as the loop vectorizer can
 * widen them (x86 has no vector 64x64 -> 128 multiply; LLVM would
 * scalarize an i128 product), and the signed high half from the unsigned
 * one (Hacker's Delight 8-3: minus b where a < 0, minus a where b < 0). */
static LLVMValueRef mul_high(Cg *c, LLVMValueRef a, LLVMValueRef b, int sg)
{
    LLVMTypeRef it = LLVMTypeOf(a);
    unsigned n = LLVMGetIntTypeWidth(it);
    if (n == 64 && c->target->kind != GP_TARGET_NVPTX) {
        LLVMValueRef lo = cg_cint(it, 0xffffffffll), k32 = cg_cint(it, 32);
        LLVMValueRef a0 = LLVMBuildAnd(c->b, a, lo, ""), a1 = LLVMBuildLShr(c->b, a, k32, "");
        LLVMValueRef b0 = LLVMBuildAnd(c->b, b, lo, ""), b1 = LLVMBuildLShr(c->b, b, k32, "");
        LLVMValueRef p00 = LLVMBuildMul(c->b, a0, b0, ""), p01 = LLVMBuildMul(c->b, a0, b1, "");
        LLVMValueRef p10 = LLVMBuildMul(c->b, a1, b0, ""), p11 = LLVMBuildMul(c->b, a1, b1, "");
        LLVMValueRef t = LLVMBuildAdd(c->b, p10, LLVMBuildLShr(c->b, p00, k32, ""), "");
        LLVMValueRef w = LLVMBuildAdd(c->b, LLVMBuildAnd(c->b, t, lo, ""), p01, "");
        LLVMValueRef hi = LLVMBuildAdd(c->b, p11, LLVMBuildLShr(c->b, t, k32, ""), "");
        hi = LLVMBuildAdd(c->b, hi, LLVMBuildLShr(c->b, w, k32, ""), "");
        if (sg) {
            LLVMValueRef k63 = cg_cint(it, 63);
            hi = LLVMBuildSub(c->b, hi, LLVMBuildAnd(c->b, LLVMBuildAShr(c->b, a, k63, ""), b, ""), "");
            hi = LLVMBuildSub(c->b, hi, LLVMBuildAnd(c->b, LLVMBuildAShr(c->b, b, k63, ""), a, ""), "");
        }
        return hi;
    }
    LLVMTypeRef wt = LLVMIntTypeInContext(c->ctx, 2 * n);
    LLVMValueRef p =
        LLVMBuildMul(c->b, LLVMBuildIntCast2(c->b, a, wt, sg, ""), LLVMBuildIntCast2(c->b, b, wt, sg, ""), "");
    return LLVMBuildTrunc(c->b, LLVMBuildLShr(c->b, p, cg_cint(wt, n), ""), it, "");
}

/* int_divmod by a constant divisor b (not 0; signed: not -1) with its
 * multiplier and shifts m[0..2] (GpInstr.divisor, gp_divisor_magic's
 * steps): the same values as int_divmod's, with no division instruction
 * and nothing to raise. */
static LLVMValueRef int_divmod_magic(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *m, int want_mod,
                                     int floor_sem)
{
    LLVMTypeRef it = cg_reg_type(c, t);
    LLVMValueRef q, zero = cg_cint(it, 0);
    if (!gp_dtype_is_signed(t)) {
        LLVMValueRef hi = mul_high(c, a, m[0], 0);
        LLVMValueRef s = LLVMBuildAdd(c->b, hi, LLVMBuildLShr(c->b, LLVMBuildSub(c->b, a, hi, ""), m[1], ""), "");
        q = LLVMBuildLShr(c->b, s, m[2], "");
    } else {
        LLVMValueRef top = cg_cint(it, cg_bits(t) - 1);
        LLVMValueRef q0 = LLVMBuildAdd(c->b, a, mul_high(c, a, m[0], 1), "");
        q0 = LLVMBuildSub(c->b, LLVMBuildAShr(c->b, q0, m[1], ""), LLVMBuildAShr(c->b, a, top, ""), "");
        LLVMValueRef dsign = LLVMBuildAShr(c->b, b, top, "");
        q = LLVMBuildSub(c->b, LLVMBuildXor(c->b, q0, dsign, ""), dsign, "");
    }
    LLVMValueRef r = LLVMBuildSub(c->b, a, LLVMBuildMul(c->b, q, b, ""), "");
    if (floor_sem && gp_dtype_is_signed(t)) {
        /* adjust toward -inf when the remainder's sign differs from b's */
        LLVMValueRef adjust = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntNE, r, zero, ""),
                                           LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildXor(c->b, r, b, ""), zero, ""), "");
        q = cg_sel(c, adjust, LLVMBuildSub(c->b, q, cg_cint(it, 1), ""), q);
        r = cg_sel(c, adjust, LLVMBuildAdd(c->b, r, b, ""), r);
    }
    return want_mod ? r : q;
}

/* C's fmod(a, b), exact.  LLVM's frem is exact on the host (a call of
 * libm's fmod); its NVPTX lowering is a - trunc(a / b) * b, which is not
 * exact once the quotient needs more bits than the mantissa has, so a GPU
 * calls libdevice's __nv_fmod. */
static LLVMValueRef cg_fmod(Cg *c, LLVMValueRef a, LLVMValueRef b)
{
    if (c->target->kind != GP_TARGET_NVPTX)
        return LLVMBuildFRem(c->b, a, b, "");
    LLVMValueRef args[2] = {a, b};
    return c->ops->math(c, NULL, "fmod", LLVMTypeOf(a), args, 2);
}

/* NumPy's npy_divmod for floats; returns floor quotient or modulus. */
static LLVMValueRef float_divmod(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b, int want_mod)
{
    LLVMTypeRef ft = cg_reg_type(c, t);
    LLVMValueRef zero = cg_cfp(ft, 0.0);
    LLVMValueRef args[2] = {a, b};
    LLVMValueRef mod = cg_fmod(c, a, b);
    LLVMValueRef bzero = LLVMBuildFCmp(c->b, LLVMRealOEQ, b, zero, "");
    LLVMValueRef div = LLVMBuildFDiv(c->b, LLVMBuildFSub(c->b, a, mod, ""), b, "");
    LLVMValueRef modnz = LLVMBuildFCmp(c->b, LLVMRealUNE, mod, zero, "");
    LLVMValueRef signs_differ = LLVMBuildXor(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, b, zero, ""),
                                             LLVMBuildFCmp(c->b, LLVMRealOLT, mod, zero, ""), "");
    LLVMValueRef adj = LLVMBuildAnd(c->b, modnz, signs_differ, "");
    LLVMValueRef mod2 = cg_sel(c, adj, LLVMBuildFAdd(c->b, mod, b, ""), mod);
    LLVMValueRef zb[2] = {zero, b};
    mod2 = cg_sel(c, modnz, mod2, cg_intrinsic(c, "llvm.copysign", ft, zb, 2));
    if (want_mod)
        return cg_sel(c, bzero, mod, mod2);
    LLVMValueRef div2 = cg_sel(c, adj, LLVMBuildFSub(c->b, div, cg_cfp(ft, 1.0), ""), div);
    LLVMValueRef fl = cg_intrinsic(c, "llvm.floor", ft, &div2, 1);
    LLVMValueRef up = LLVMBuildFCmp(c->b, LLVMRealOGT, LLVMBuildFSub(c->b, div2, fl, ""), cg_cfp(ft, 0.5), "");
    fl = cg_sel(c, up, LLVMBuildFAdd(c->b, fl, cg_cfp(ft, 1.0), ""), fl);
    LLVMValueRef q = LLVMBuildFDiv(c->b, a, b, "");
    LLVMValueRef zq[2] = {zero, q};
    LLVMValueRef divnz = LLVMBuildFCmp(c->b, LLVMRealUNE, div2, zero, "");
    LLVMValueRef res = cg_sel(c, divnz, fl, cg_intrinsic(c, "llvm.copysign", ft, zq, 2));
    (void)args;
    return cg_sel(c, bzero, q, res);
}

/* Integer a ** b for b >= 0 (the hooks only capture such exponents):
 * square-and-multiply over the bits of b, wrapping as NumPy's loop. */
static LLVMValueRef int_power(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b)
{
    LLVMTypeRef it = cg_reg_type(c, t);
    LLVMValueRef r = cg_cint(it, 1), base = a, e = b;
    for (int i = 0; i < cg_bits(t); i++) {
        LLVMValueRef bit = LLVMBuildTrunc(c->b, e, c->i1, "");
        r = cg_sel(c, bit, LLVMBuildMul(c->b, r, base, ""), r);
        base = LLVMBuildMul(c->b, base, base, "");
        e = LLVMBuildLShr(c->b, e, cg_cint(it, 1), "");
    }
    return r;
}

/* a ** b for floats; float32 through double, rounded once. */
static LLVMValueRef float_pow(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b)
{
    if (t == GP_FLOAT32) {
        LLVMValueRef dx[2] = {LLVMBuildFPExt(c->b, a, c->f64, ""), LLVMBuildFPExt(c->b, b, c->f64, "")};
        return LLVMBuildFPTrunc(c->b, math(c, "llvm.pow", "pow", c->f64, dx, 2), c->f32, "");
    }
    LLVMValueRef x[2] = {a, b};
    return math(c, "llvm.pow", "pow", c->f64, x, 2);
}

/* a ** b for float32 a and a finite constant b that is not an integer
 * (GP_EXPONENT_FRACTION): exp(b log a) in double, rounded once to float32,
 * two calls cheaper than one double pow (sRGB's c ** 2.4: half the time).
 * log and exp within a few ULP of a double keep the double within about
 * 2^-43 of a**b relative (|b log a| < 104 wherever a**b is a float32),
 * far inside half a float32 ULP (2^-24): the float32 is the correctly
 * rounded one but where a**b lies that close to a rounding midpoint (then
 * one ULP off; DESIGN.md 4 allows 4 for transcendentals).  pow's special
 * values and flags: a = +-0 with b > 0 is +0 (log(0) would raise
 * divide-by-zero); a = -inf is taken as +inf (pow(-inf, b) = pow(inf, b)
 * for b not an odd integer); a < 0 gives NaN and "invalid" (from log), 0
 * with b < 0 inf and "divide" (from log), as pow. */
static LLVMValueRef fraction_power32(Cg *c, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef da = LLVMBuildFPExt(c->b, a, c->f64, ""), db = LLVMBuildFPExt(c->b, b, c->f64, "");
    LLVMValueRef zero_base = LLVMBuildAnd(c->b, LLVMBuildFCmp(c->b, LLVMRealOEQ, da, cg_cfp(c->f64, 0.0), ""),
                                          LLVMBuildFCmp(c->b, LLVMRealOGT, db, cg_cfp(c->f64, 0.0), ""), "");
    LLVMValueRef x = cg_sel(c, zero_base, cg_cfp(c->f64, 1.0), da);
    x = cg_sel(c, LLVMBuildFCmp(c->b, LLVMRealOEQ, da, cg_cfp(c->f64, -INFINITY), ""), cg_cfp(c->f64, INFINITY), x);
    LLVMValueRef y = LLVMBuildFMul(c->b, db, math(c, "llvm.log", "log", c->f64, &x, 1), "");
    LLVMValueRef e = cg_sel(c, zero_base, cg_cfp(c->f64, 0.0), math(c, "llvm.exp", "exp", c->f64, &y, 1));
    return LLVMBuildFPTrunc(c->b, e, c->f32, "");
}

/* a ** b for a constant float exponent b of class cls (GP_EXPONENT_*,
 * codegen.h): no pow call, and no test of b, for the special values. */
static LLVMValueRef constant_power(Cg *c, GpDType t, int cls, LLVMValueRef a, LLVMValueRef b)
{
    LLVMTypeRef ft = cg_reg_type(c, t);
    switch (cls) {
    case GP_EXPONENT_TWO: return LLVMBuildFMul(c->b, a, a, "");
    case GP_EXPONENT_ONE: return a;
    case GP_EXPONENT_HALF: return cg_intrinsic(c, "llvm.sqrt", ft, &a, 1);
    case GP_EXPONENT_ZERO: return cg_cfp(ft, 1.0);
    case GP_EXPONENT_MINUS_ONE: return LLVMBuildFDiv(c->b, cg_cfp(ft, 1.0), a, "");
    case GP_EXPONENT_THREE:
    case GP_EXPONENT_FOUR: {
        /* float32 in double: 72 exact bits rounded to 53, then once to 24 */
        LLVMValueRef x = t == GP_FLOAT32 ? LLVMBuildFPExt(c->b, a, c->f64, "") : a;
        LLVMValueRef x2 = LLVMBuildFMul(c->b, x, x, "");
        LLVMValueRef r = LLVMBuildFMul(c->b, x2, cls == GP_EXPONENT_THREE ? x : x2, "");
        return t == GP_FLOAT32 ? LLVMBuildFPTrunc(c->b, r, c->f32, "") : r;
    }
    case GP_EXPONENT_FRACTION: return t == GP_FLOAT32 ? fraction_power32(c, a, b) : float_pow(c, t, a, b);
    default: return float_pow(c, t, a, b);
    }
}

/* ---- one instruction --------------------------------------------------- */

static LLVMValueRef max_like(Cg *c, GpDType t, LLVMValueRef a, LLVMValueRef b, int is_max)
{
    if (gp_dtype_is_float(t)) {
        LLVMValueRef better = cg_fcmp_quiet(c, is_max ? LLVMRealOGT : LLVMRealOLT, a, b);
        return cg_sel(c, cg_is_nan(c, a), a, cg_sel(c, better, a, b));
    }
    LLVMIntPredicate pr =
        gp_dtype_is_signed(t) ? (is_max ? LLVMIntSGT : LLVMIntSLT) : (is_max ? LLVMIntUGT : LLVMIntULT);
    return cg_sel(c, LLVMBuildICmp(c->b, pr, a, b, ""), a, b);
}

static LLVMValueRef compare(Cg *c, GpOp op, GpDType t, LLVMValueRef a, LLVMValueRef b)
{
    if (gp_dtype_is_float(t)) {
        static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                               LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
        LLVMRealPredicate pr = fp[op - GP_OP_EQUAL];
        return pr == LLVMRealOEQ || pr == LLVMRealUNE ? LLVMBuildFCmp(c->b, pr, a, b, "") /* (quiet on x86) */
                                                      : cg_fcmp_quiet(c, pr, a, b);
    }
    int s = gp_dtype_is_signed(t);
    LLVMIntPredicate ip[] = {LLVMIntEQ,
                             LLVMIntNE,
                             s ? LLVMIntSLT : LLVMIntULT,
                             s ? LLVMIntSLE : LLVMIntULE,
                             s ? LLVMIntSGT : LLVMIntUGT,
                             s ? LLVMIntSGE : LLVMIntUGE};
    return LLVMBuildICmp(c->b, ip[op - GP_OP_EQUAL], a, b, "");
}

static LLVMValueRef truth(Cg *c, GpDType t, LLVMValueRef v) { return emit_cast(c, v, t, GP_BOOL); }

static LLVMValueRef emit_op(Cg *c, const GpInstr *ins, LLVMValueRef *x)
{
    GpDType t = ins->dtype, ti = ins->in_dtype;
    LLVMTypeRef rt = cg_reg_type(c, t), it = cg_reg_type(c, ti);
    int fl = gp_dtype_is_float(ti), sg = gp_dtype_is_signed(ti);
    LLVMValueRef a = x[0], b = x[1];
    const char *m = NULL;  /* libm name */
    const char *in = NULL; /* intrinsic name */
    switch ((GpOp)ins->op) {
    case GP_OP_CAST: return emit_cast(c, a, ti, t);
    case GP_OP_ADD:
        return fl              ? LLVMBuildFAdd(c->b, a, b, "")
               : ti == GP_BOOL ? LLVMBuildOr(c->b, a, b, "")
                               : LLVMBuildAdd(c->b, a, b, "");
    case GP_OP_SUBTRACT: return fl ? LLVMBuildFSub(c->b, a, b, "") : LLVMBuildSub(c->b, a, b, "");
    case GP_OP_MULTIPLY:
        return fl              ? LLVMBuildFMul(c->b, a, b, "")
               : ti == GP_BOOL ? LLVMBuildAnd(c->b, a, b, "")
                               : LLVMBuildMul(c->b, a, b, "");
    case GP_OP_TRUE_DIVIDE: return LLVMBuildFDiv(c->b, a, b, "");
    case GP_OP_FLOOR_DIVIDE:
        return fl             ? float_divmod(c, ti, a, b, 0)
               : ins->divisor ? int_divmod_magic(c, ti, a, b, x + 2, 0, 1)
                              : int_divmod(c, ti, a, b, 0, 1);
    case GP_OP_REMAINDER:
        return fl             ? float_divmod(c, ti, a, b, 1)
               : ins->divisor ? int_divmod_magic(c, ti, a, b, x + 2, 1, 1)
                              : int_divmod(c, ti, a, b, 1, 1);
    case GP_OP_FMOD:
        return fl             ? cg_fmod(c, a, b)
               : ins->divisor ? int_divmod_magic(c, ti, a, b, x + 2, 1, 0)
                              : int_divmod(c, ti, a, b, 1, 0);
    case GP_OP_POWER:
        if (!fl)
            return int_power(c, ti, a, b);
        if (ins->exponent != GP_EXPONENT_RUNTIME && ins->exponent != GP_EXPONENT_SCALAR)
            return constant_power(c, ti, ins->exponent, a, b);
        if (ins->exponent == GP_EXPONENT_SCALAR) {
            /* NumPy's power loop with a broadcast exponent: -1, 0, 0.5, 1, 2
             * are reciprocal, one, sqrt, copy and square, selected here at
             * each point (the exponent is known only at run time) */
            LLVMValueRef r = float_pow(c, ti, a, b);
            for (int cls = GP_EXPONENT_TWO; cls <= GP_EXPONENT_MINUS_ONE; cls++)
                r = cg_sel(c, LLVMBuildFCmp(c->b, LLVMRealOEQ, b, cg_cfp(it, gp_exponent_value[cls]), ""),
                           constant_power(c, ti, cls, a, b), r);
            return r;
        }
        return float_pow(c, ti, a, b);
    case GP_OP_EQUAL:
    case GP_OP_NOT_EQUAL:
    case GP_OP_LESS:
    case GP_OP_LESS_EQUAL:
    case GP_OP_GREATER:
    case GP_OP_GREATER_EQUAL: return compare(c, (GpOp)ins->op, ti, a, b);
    case GP_OP_LOGICAL_AND: return LLVMBuildAnd(c->b, truth(c, ti, a), truth(c, ins->nin > 1 ? ti : ti, b), "");
    case GP_OP_LOGICAL_OR: return LLVMBuildOr(c->b, truth(c, ti, a), truth(c, ti, b), "");
    case GP_OP_LOGICAL_XOR: return LLVMBuildXor(c->b, truth(c, ti, a), truth(c, ti, b), "");
    case GP_OP_LOGICAL_NOT: return LLVMBuildNot(c->b, truth(c, ti, a), "");
    case GP_OP_BITWISE_AND: return LLVMBuildAnd(c->b, a, b, "");
    case GP_OP_BITWISE_OR: return LLVMBuildOr(c->b, a, b, "");
    case GP_OP_BITWISE_XOR: return LLVMBuildXor(c->b, a, b, "");
    case GP_OP_INVERT: return LLVMBuildNot(c->b, a, "");
    case GP_OP_LEFT_SHIFT:
    case GP_OP_RIGHT_SHIFT: {
        /* NumPy: a shift by >= bits (or a negative count) gives 0, or -1
         * for a negative a shifted right */
        LLVMValueRef nb = cg_cint(it, cg_bits(ti));
        LLVMValueRef ok = LLVMBuildICmp(c->b, LLVMIntULT, b, nb, "");
        LLVMValueRef safe = cg_sel(c, ok, b, cg_cint(it, 0));
        if (ins->op == GP_OP_LEFT_SHIFT)
            return cg_sel(c, ok, LLVMBuildShl(c->b, a, safe, ""), cg_cint(it, 0));
        if (!sg)
            return cg_sel(c, ok, LLVMBuildLShr(c->b, a, safe, ""), cg_cint(it, 0));
        LLVMValueRef fill =
            cg_sel(c, LLVMBuildICmp(c->b, LLVMIntSLT, a, cg_cint(it, 0), ""), cg_cint(it, -1), cg_cint(it, 0));
        return cg_sel(c, ok, LLVMBuildAShr(c->b, a, safe, ""), fill);
    }
    case GP_OP_ABSOLUTE:
        if (fl)
            return cg_intrinsic(c, "llvm.fabs", it, &a, 1);
        if (!sg)
            return a;
        return cg_sel(c, LLVMBuildICmp(c->b, LLVMIntSLT, a, cg_cint(it, 0), ""), LLVMBuildNeg(c->b, a, ""), a);
    case GP_OP_NEGATIVE: return fl ? LLVMBuildFNeg(c->b, a, "") : LLVMBuildNeg(c->b, a, "");
    case GP_OP_POSITIVE: return a;
    case GP_OP_SIGN:
        if (fl) {
            LLVMValueRef r = cg_sel(c, LLVMBuildFCmp(c->b, LLVMRealOEQ, a, cg_cfp(it, 0.0), ""), cg_cfp(it, 0.0), a);
            r = cg_sel(c, cg_fcmp_quiet(c, LLVMRealOLT, a, cg_cfp(it, 0.0)), cg_cfp(it, -1.0), r);
            return cg_sel(c, cg_fcmp_quiet(c, LLVMRealOGT, a, cg_cfp(it, 0.0)), cg_cfp(it, 1.0), r);
        } else {
            LLVMValueRef pos =
                LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, sg ? LLVMIntSGT : LLVMIntUGT, a, cg_cint(it, 0), ""), it, "");
            if (!sg)
                return pos;
            LLVMValueRef neg = LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a, cg_cint(it, 0), ""), it, "");
            return LLVMBuildSub(c->b, pos, neg, "");
        }
    case GP_OP_SQUARE: return fl ? LLVMBuildFMul(c->b, a, a, "") : ti == GP_BOOL ? a : LLVMBuildMul(c->b, a, a, "");
    case GP_OP_RECIPROCAL: return LLVMBuildFDiv(c->b, cg_cfp(it, 1.0), a, "");
    case GP_OP_SQRT: in = "llvm.sqrt"; break;
    case GP_OP_CBRT: m = "cbrt"; break;
    case GP_OP_EXP: in = "llvm.exp"; break;
    case GP_OP_EXP2: in = "llvm.exp2"; break;
    case GP_OP_EXPM1: m = "expm1"; break;
    case GP_OP_LOG: in = "llvm.log"; break;
    case GP_OP_LOG2: in = "llvm.log2"; break;
    case GP_OP_LOG10: in = "llvm.log10"; break;
    case GP_OP_LOG1P: m = "log1p"; break;
    case GP_OP_SIN: in = "llvm.sin"; break;
    case GP_OP_COS: in = "llvm.cos"; break;
    case GP_OP_TAN: m = "tan"; break;
    case GP_OP_ARCSIN: m = "asin"; break;
    case GP_OP_ARCCOS: m = "acos"; break;
    case GP_OP_ARCTAN: m = "atan"; break;
    case GP_OP_SINH: m = "sinh"; break;
    case GP_OP_COSH: m = "cosh"; break;
    case GP_OP_TANH: m = "tanh"; break;
    case GP_OP_ARCSINH: m = "asinh"; break;
    case GP_OP_ARCCOSH: m = "acosh"; break;
    case GP_OP_ARCTANH: m = "atanh"; break;
    case GP_OP_ARCTAN2: m = "atan2"; break;
    case GP_OP_HYPOT: m = "hypot"; break;
    case GP_OP_MAXIMUM:
    case GP_OP_MINIMUM:
        if (ti == GP_BOOL)
            return ins->op == GP_OP_MAXIMUM ? LLVMBuildOr(c->b, a, b, "") : LLVMBuildAnd(c->b, a, b, "");
        return max_like(c, ti, a, b, ins->op == GP_OP_MAXIMUM);
    case GP_OP_FMAX:
    case GP_OP_FMIN:
        if (fl) {
            /* NumPy's vector loops: NaN ignored, ties give the second operand
             * (isnan(b) ? a : isnan(a) ? b : a > b ? a : b for fmax) */
            LLVMValueRef better = cg_fcmp_quiet(c, ins->op == GP_OP_FMAX ? LLVMRealOGT : LLVMRealOLT, a, b);
            return cg_sel(c, cg_is_nan(c, b), a, cg_sel(c, cg_is_nan(c, a), b, cg_sel(c, better, a, b)));
        }
        if (ti == GP_BOOL)
            return ins->op == GP_OP_FMAX ? LLVMBuildOr(c->b, a, b, "") : LLVMBuildAnd(c->b, a, b, "");
        return max_like(c, ti, a, b, ins->op == GP_OP_FMAX);
    case GP_OP_FLOOR:
        if (!fl)
            return a;
        in = "llvm.floor";
        break;
    case GP_OP_CEIL:
        if (!fl)
            return a;
        in = "llvm.ceil";
        break;
    case GP_OP_TRUNC:
        if (!fl)
            return a;
        in = "llvm.trunc";
        break;
    case GP_OP_RINT:
        if (!fl)
            return a;
        in = "llvm.rint";
        break;
    case GP_OP_ISNAN: return fl ? cg_is_nan(c, a) : cg_cint(c->i1, 0);
    case GP_OP_ISINF:
        return fl ? LLVMBuildFCmp(c->b, LLVMRealOEQ, cg_intrinsic(c, "llvm.fabs", it, &a, 1),
                                  cg_cfp(it, (double)INFINITY), "")
                  : cg_cint(c->i1, 0);
    case GP_OP_ISFINITE:
        return fl ? LLVMBuildFCmp(c->b, LLVMRealOLT, cg_intrinsic(c, "llvm.fabs", it, &a, 1),
                                  cg_cfp(it, (double)INFINITY), "")
                  : cg_cint(c->i1, 1);
    case GP_OP_SIGNBIT:
        if (fl) {
            LLVMTypeRef bt = ti == GP_FLOAT32 ? c->i32 : c->i64;
            return LLVMBuildICmp(c->b, LLVMIntSLT, LLVMBuildBitCast(c->b, a, bt, ""), cg_cint(bt, 0), "");
        }
        return sg ? LLVMBuildICmp(c->b, LLVMIntSLT, a, cg_cint(it, 0), "") : cg_cint(c->i1, 0);
    case GP_OP_COPYSIGN: in = "llvm.copysign"; break;
    case GP_OP_WHERE: return cg_sel(c, a, x[1], x[2]);
    case GP_OP_CLIP: {
        /* NumPy's _NPY_CLIP: min(max(x, lo), hi), a NaN x propagates */
        GpDType tv = ins->dtype;
        LLVMValueRef lo = x[1], hi = x[2], r;
        if (gp_dtype_is_float(tv)) {
            r = cg_sel(c, cg_is_nan(c, a), a, cg_sel(c, cg_fcmp_quiet(c, LLVMRealOGT, a, lo), a, lo));
            return cg_sel(c, cg_is_nan(c, r), r, cg_sel(c, cg_fcmp_quiet(c, LLVMRealOLT, r, hi), r, hi));
        }
        int s2 = gp_dtype_is_signed(tv);
        r = cg_sel(c, LLVMBuildICmp(c->b, s2 ? LLVMIntSGT : LLVMIntUGT, a, lo, ""), a, lo);
        return cg_sel(c, LLVMBuildICmp(c->b, s2 ? LLVMIntSLT : LLVMIntULT, r, hi, ""), r, hi);
    }
    default: return NULL;
    }
    (void)rt;
    unsigned n = (unsigned)gp_op_nin[ins->op];
    int exact = ins->op == GP_OP_SQRT || ins->op == GP_OP_COPYSIGN || !strncmp(in ? in : "", "llvm.floor", 10) ||
                ins->op == GP_OP_CEIL || ins->op == GP_OP_TRUNC || ins->op == GP_OP_RINT;
    if (ti == GP_FLOAT32 && ins->op == GP_OP_TANH)
        return tanh_f32(c, x[0]);
    if (ti == GP_FLOAT32 && !exact) {
        /* float32 transcendentals are evaluated in double and rounded once:
         * within 1 ULP of the exact result, so within NumPy's own bound */
        LLVMValueRef dx[2];
        for (unsigned i = 0; i < n; i++)
            dx[i] = LLVMBuildFPExt(c->b, x[i], c->f64, "");
        LLVMValueRef r = math(c, in, m, c->f64, dx, n);
        return LLVMBuildFPTrunc(c->b, r, c->f32, "");
    }
    if (ins->op == GP_OP_COS && ti == GP_FLOAT64)
        return cos_f64(c, x[0]);
    return math(c, in, m, it, x, n);
}

/* float64 cos: exactly 1 for |x| < 2^-26.5 (x^2/2 below half an ULP of
 * 1: the correctly rounded value), as NumPy gives it; libmvec's vector
 * cos is 1 ULP low for some x near 1e-9 (scipy.stats' circmean accuracy
 * test relies on cos(x) == 1.0 there).  The constant is the double
 * nearest 2^-26.5, just above it: every x below it is below 2^-26.5. */
static LLVMValueRef cos_f64(Cg *c, LLVMValueRef x)
{
    LLVMValueRef r = math(c, "llvm.cos", NULL, c->f64, &x, 1);
    LLVMValueRef tiny = LLVMBuildFCmp(c->b, LLVMRealOLT, cg_intrinsic(c, "llvm.fabs", c->f64, &x, 1),
                                      cg_cfp(c->f64, 0x1.6a09e667f3bcdp-27), "");
    return cg_sel(c, tiny, cg_cfp(c->f64, 1.0), r);
}

/* float32 tanh evaluated in double and rounded once (within 1 ULP of the
 * exact value): 1 - 2 / (exp(2x) + 1) for |x| >= 1/32, whose absolute
 * error (~2e-16) is below 1e-14 relative there; the odd Taylor series to
 * x^9 below 1/32 as x * (1 + x^2 p(x^2)) (truncation under 1e-17 relative;
 * the sign of -0.0 kept).
 * glibc's vector tanh is about 4x slower than vector exp, so float32 uses
 * exp, which vectorizes through libmvec; float64 keeps libm's tanh. */
static LLVMValueRef tanh_f32(Cg *c, LLVMValueRef xf)
{
    LLVMValueRef d = LLVMBuildFPExt(c->b, xf, c->f64, "");
    LLVMValueRef d2 = LLVMBuildFMul(c->b, d, d, "");
    static const double taylor[] = {-1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0};
    LLVMValueRef p = cg_cfp(c->f64, taylor[3]);
    for (int i = 2; i >= 0; i--)
        p = LLVMBuildFAdd(c->b, cg_cfp(c->f64, taylor[i]), LLVMBuildFMul(c->b, d2, p, ""), "");
    LLVMValueRef small =
        LLVMBuildFMul(c->b, d, LLVMBuildFAdd(c->b, cg_cfp(c->f64, 1.0), LLVMBuildFMul(c->b, d2, p, ""), ""), "");
    LLVMValueRef twice = LLVMBuildFAdd(c->b, d, d, "");
    LLVMValueRef e = math(c, "llvm.exp", "exp", c->f64, &twice, 1);
    LLVMValueRef large = LLVMBuildFSub(
        c->b, cg_cfp(c->f64, 1.0),
        LLVMBuildFDiv(c->b, cg_cfp(c->f64, 2.0), LLVMBuildFAdd(c->b, e, cg_cfp(c->f64, 1.0), ""), ""), "");
    LLVMValueRef ad = cg_intrinsic(c, "llvm.fabs", c->f64, &d, 1);
    LLVMValueRef r = cg_sel(c, LLVMBuildFCmp(c->b, LLVMRealOLT, ad, cg_cfp(c->f64, 1.0 / 32.0), ""), small, large);
    return LLVMBuildFPTrunc(c->b, r, c->f32, "");
}

/* ---- reductions -------------------------------------------------------- */

LLVMValueRef cg_reduce_step(Cg *c, GpOp op, GpDType t, LLVMValueRef acc, LLVMValueRef v)
{
    int fl = gp_dtype_is_float(t);
    switch (op) {
    case GP_OP_SUM:
        return fl             ? LLVMBuildFAdd(c->b, acc, v, "")
               : t == GP_BOOL ? LLVMBuildOr(c->b, acc, v, "")
                              : LLVMBuildAdd(c->b, acc, v, "");
    case GP_OP_PROD:
        return fl             ? LLVMBuildFMul(c->b, acc, v, "")
               : t == GP_BOOL ? LLVMBuildAnd(c->b, acc, v, "")
                              : LLVMBuildMul(c->b, acc, v, "");
    case GP_OP_MIN: return t == GP_BOOL ? LLVMBuildAnd(c->b, acc, v, "") : max_like(c, t, acc, v, 0);
    case GP_OP_MAX: return t == GP_BOOL ? LLVMBuildOr(c->b, acc, v, "") : max_like(c, t, acc, v, 1);
    case GP_OP_ANY: return LLVMBuildOr(c->b, acc, v, "");
    default: return LLVMBuildAnd(c->b, acc, v, "");
    }
}

/* Address of element j of operand slot (by its layout class). */
LLVMValueRef cg_element_ptr(Cg *c, CgRow *r, int slot, GpDType t, LLVMValueRef j)
{
    if (c->p->layout[slot] == GP_LAYOUT_CONTIG)
        return LLVMBuildGEP2(c->b, cg_mem_type(c, t), r->base[slot], &j, 1, "");
    LLVMValueRef off = LLVMBuildMul(c->b, j, r->stride[slot], "");
    return LLVMBuildGEP2(c->b, c->i8, r->base[slot], &off, 1, "");
}

/* Emits the point function at inner index j; returns the value of the
 * reduced instruction (map-reduce) and stores map outputs. */
LLVMValueRef cg_emit_point(Cg *c, CgRow *r, LLVMValueRef j, int store_outputs)
{
    const GpProgram *p = c->p;
    LLVMValueRef val[GP_MAXINSTR];
    for (int k = 0; k < p->ninstr; k++) {
        const GpInstr *ins = &p->instr[k];
        GpDType t = ins->dtype;
        if (ins->op == GP_OP_CONST || (ins->op == GP_OP_LEAF && p->layout[ins->slot] == GP_LAYOUT_BCAST)) {
            val[k] = r->bval[k];
        } else if (ins->op == GP_OP_LEAF) {
            val[k] = cg_load(c, t, cg_element_ptr(c, r, ins->slot, t, j));
        } else {
            LLVMValueRef x[5] = {NULL, NULL, NULL, NULL, NULL};
            for (int i = 0; i < ins->nin; i++)
                x[i] = val[ins->in[i]];
            if (ins->divisor) /* a // d: then d's multiplier and shifts (int_divmod_magic) */
                memcpy(x + 2, r->magic[k], sizeof r->magic[k]);
            if (gp_op_kind[ins->op] == GP_KIND_SCAN) {
                /* map-scan: acc := acc (op) value, stored at every point */
                LLVMTypeRef at = cg_reg_type(c, t);
                LLVMValueRef acc[2] = {LLVMBuildLoad2(c->b, at, c->scan_acc[k], ""), x[0]};
                val[k] = cg_reduce_step(c, gp_scan_reduce_op((GpOp)ins->op), t, acc[0], acc[1]);
                if (c->ops->check_nonfinite) /* (the step's own flags: inf + -inf) */
                    note_nonfinite(c, t, val[k], acc, 2);
                LLVMBuildStore(c->b, val[k], c->scan_acc[k]);
                if (store_outputs && ins->slot >= 0)
                    cg_store(c, t, val[k], cg_element_ptr(c, r, ins->slot, t, j));
                continue;
            }
            if (gp_op_kind[ins->op] == GP_KIND_REDUCE) {
                /* accumulate: out := out (op) value, in the order of the outer loop */
                LLVMValueRef ptr = cg_element_ptr(c, r, ins->slot, t, j);
                LLVMValueRef acc[2] = {cg_load(c, t, ptr), x[0]};
                LLVMValueRef v = cg_reduce_step(c, (GpOp)ins->op, t, acc[0], acc[1]);
                if (c->ops->check_nonfinite) /* (the step's own flags: inf + -inf) */
                    note_nonfinite(c, t, v, acc, 2);
                cg_store(c, t, v, ptr);
                val[k] = x[0];
                continue;
            }
            if (ins->op == GP_OP_GATHER) {
                /* x[idx]: the table is a broadcast (0-d) operand at its
                 * first element, x[2] its length; the index was checked
                 * in [-length, length) when recorded, and an index another thread
                 * wrote since reads element 0 rather than outside */
                const GpInstr *table = &p->instr[ins->in[0]], *index = &p->instr[ins->in[1]];
                LLVMValueRef base = r->base[table->slot];
                LLVMValueRef i = LLVMBuildIntCast2(c->b, x[1], c->i64, gp_dtype_is_signed((GpDType)index->dtype), "");
                if (gp_dtype_is_signed((GpDType)index->dtype)) /* from the end, as NumPy's x[-1] */
                    i = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, i, cg_cint(c->i64, 0), ""),
                                        LLVMBuildAdd(c->b, i, x[2], ""), i, "");
                i = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntULT, i, x[2], ""), i, cg_cint(c->i64, 0), "");
                val[k] = cg_load(c, t, LLVMBuildGEP2(c->b, cg_mem_type(c, t), base, &i, 1, ""));
                if (store_outputs && ins->slot >= 0)
                    cg_store(c, t, val[k], cg_element_ptr(c, r, ins->slot, t, j));
                continue;
            }
            val[k] = emit_op(c, ins, x);
            if (c->ops->check_nonfinite)
                note_nonfinite(c, (GpDType)ins->dtype, val[k], x, ins->nin);
            if (store_outputs && ins->slot >= 0)
                cg_store(c, t, val[k], cg_element_ptr(c, r, ins->slot, t, j));
        }
    }
    return p->kind == GP_KIND_REDUCE ? val[p->root] : NULL;
}

/* A counted loop for (i = start; i < end; i += step) around body(); the
 * counter lives in an alloca that SROA turns into a phi. */
/* An alloca in the entry block of the current function, where SROA can
 * promote it to SSA values. */
LLVMValueRef cg_entry_alloca(Cg *c, LLVMTypeRef t, const char *name)
{
    LLVMBasicBlockRef cur = LLVMGetInsertBlock(c->b);
    LLVMValueRef fn = LLVMGetBasicBlockParent(cur);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(fn);
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(c->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first)
        LLVMPositionBuilderBefore(eb, first);
    else
        LLVMPositionBuilderAtEnd(eb, entry);
    LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
    LLVMDisposeBuilder(eb);
    return a;
}

CgLoop cg_loop_begin(Cg *c, LLVMValueRef fn, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step, LLVMValueRef *i)
{
    CgLoop l;
    l.var = cg_entry_alloca(c, c->i64, "i");
    l.step = step;
    LLVMBuildStore(c->b, start, l.var);
    l.cond = LLVMAppendBasicBlockInContext(c->ctx, fn, "cond");
    l.body = LLVMAppendBasicBlockInContext(c->ctx, fn, "body");
    l.exit = LLVMAppendBasicBlockInContext(c->ctx, fn, "exit");
    LLVMBuildBr(c->b, l.cond);
    LLVMPositionBuilderAtEnd(c->b, l.cond);
    LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i64, l.var, "");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, cur, end, ""), l.body, l.exit);
    LLVMPositionBuilderAtEnd(c->b, l.body);
    *i = LLVMBuildLoad2(c->b, c->i64, l.var, "");
    return l;
}

void cg_loop_end(Cg *c, CgLoop *l)
{
    LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i64, l->var, "");
    LLVMBuildStore(c->b, LLVMBuildAdd(c->b, cur, l->step, ""), l->var);
    LLVMBuildBr(c->b, l->cond);
    LLVMPositionBuilderAtEnd(c->b, l->exit);
}

void cg_add_attr(Cg *c, LLVMValueRef fn, unsigned idx, const char *name)
{
    unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(c->ctx, k, 0));
}

/* ---- the call of the row function for one outer index ------------------ */

/* Decomposes outer index o over the outer dims of the packed arguments at a
 * into per-operand byte offsets and calls row over inner range (j0, j1);
 * a map-reduce's value (or an arg-reduction's GpArgResult) is stored at
 * result when given.  The same for every target: only how o is chosen
 * differs (codegen_cpu.c: a loop; codegen_nvptx.c: the thread's index). */
LLVMValueRef cg_call_row(Cg *c, LLVMValueRef fn, LLVMValueRef row, LLVMValueRef a, LLVMValueRef o, LLVMValueRef j0,
                         LLVMValueRef j1, LLVMValueRef result)
{
    const GpProgram *p = c->p;
    int K = p->noperands;
    LLVMValueRef nd = LLVMBuildLoad2(c->b, c->i64, a, "nd");
    LLVMValueRef inner = LLVMBuildSub(c->b, nd, cg_cint(c->i64, 1), "");
    LLVMValueRef off[GP_MAXOPERANDS], strides[GP_MAXOPERANDS];
    for (int k = 0; k < K; k++) {
        strides[k] = cg_karg_strides(c, nd, k);
        off[k] = cg_entry_alloca(c, c->i64, "off");
        LLVMBuildStore(c->b, cg_cint(c->i64, 0), off[k]);
    }
    LLVMValueRef rem = cg_entry_alloca(c, c->i64, "rem");
    LLVMBuildStore(c->b, o, rem);
    /* for (q = 0; q < nd-1; q++) with d = nd-2-q, innermost outer dim first */
    LLVMValueRef q;
    CgLoop l = cg_loop_begin(c, fn, cg_cint(c->i64, 0), inner, cg_cint(c->i64, 1), &q);
    LLVMValueRef d = LLVMBuildSub(c->b, LLVMBuildSub(c->b, inner, cg_cint(c->i64, 1), ""), q, "");
    LLVMValueRef size = LLVMBuildLoad2(c->b, c->i64, cg_karg(c, a, cg_karg_shape(c, nd), d), "");
    LLVMValueRef rv = LLVMBuildLoad2(c->b, c->i64, rem, "");
    LLVMValueRef idx = LLVMBuildURem(c->b, rv, size, "");
    LLVMBuildStore(c->b, LLVMBuildUDiv(c->b, rv, size, ""), rem);
    for (int k = 0; k < K; k++) {
        LLVMValueRef st = LLVMBuildLoad2(c->b, c->i64, cg_karg(c, a, strides[k], d), "");
        LLVMValueRef cur = LLVMBuildLoad2(c->b, c->i64, off[k], "");
        LLVMBuildStore(c->b, LLVMBuildAdd(c->b, cur, LLVMBuildMul(c->b, idx, st, ""), ""), off[k]);
    }
    cg_loop_end(c, &l);
    LLVMValueRef args[2 * GP_MAXOPERANDS + 5];
    LLVMValueRef data = cg_karg_data(c, nd);
    for (int k = 0; k < K; k++) {
        LLVMValueRef base = LLVMBuildLoad2(c->b, c->ptr, cg_karg(c, a, data, cg_cint(c->i64, k)), "");
        LLVMValueRef ofs = LLVMBuildLoad2(c->b, c->i64, off[k], "");
        args[k] = LLVMBuildGEP2(c->b, c->i8, base, &ofs, 1, "");
        args[K + k] = LLVMBuildLoad2(c->b, c->i64, cg_karg(c, a, strides[k], inner), "");
    }
    args[2 * K] = cg_karg(c, a, cg_karg_consts(c, nd), NULL);
    args[2 * K + 1] = j0;
    args[2 * K + 2] = j1;
    int arg = result && gp_op_is_arg((GpOp)p->reduce_op);
    if (arg) {
        LLVMValueRef voff = cg_cint(c->i64, (long long)offsetof(GpArgResult, value));
        args[2 * K + 3] = LLVMBuildGEP2(c->b, c->i8, result, &voff, 1, "");
    }
    if (c->ops->flags_param)
        args[2 * K + 3 + arg] = c->fpe_flags;
    LLVMValueRef v = LLVMBuildCall2(c->b, LLVMGlobalGetValueType(row), row, args, (unsigned)cg_row_nparams(c), "");
    if (arg)
        LLVMBuildStore(c->b, v, result); /* GpArgResult.index */
    else if (result)
        cg_store(c, (GpDType)p->instr[p->root].dtype, v, result);
    return v;
}
