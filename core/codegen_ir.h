/* core/codegen_ir.h -- inside code generation (not for use outside
 * core/codegen*.c).
 *
 * One kernel is emitted by three parts, each in its own file:
 *   codegen.c        target-independent emission: types, loads and stores,
 *                    casts, one instruction, the point function (every
 *                    instruction of the program at one index), loops
 *   codegen_rows.c   one row emitter per kernel kind (map and map-scan,
 *                    map-reduce, pairwise sum, arg-reduction) and the
 *                    driver gp_codegen
 *   codegen_<t>.c    a target (CgTargetOps): how a math function is
 *                    called, how an IEEE exception is raised, function
 *                    attributes, and the kernel entry that walks the outer
 *                    index space and calls the row function
 * Targets: codegen_cpu.c (the host, called by the CPU thread pool) and
 * codegen_nvptx.c (a CUDA kernel, grid-stride over the same index space).
 */
#ifndef GP_CODEGEN_IR_H
#define GP_CODEGEN_IR_H

#include "codegen_llvm.h"

#include <llvm-c/Core.h>

typedef struct Cg Cg;

/* IEEE exceptions a kernel raises explicitly (integer division by zero,
 * MIN // -1, out-of-range casts), as NumPy's loops do. */
enum {
    CG_RAISE_DIVIDE,
    CG_RAISE_OVERFLOW,
    CG_RAISE_INVALID,
    CG_RAISE_NONFINITE /* check_nonfinite targets: a float value became inf or NaN */
};

typedef struct {
    /* Function attributes every emitted function gets. */
    void (*attrs)(Cg *c, LLVMValueRef fn);
    /* A call of the math function `libm_name` (C's double name: "exp",
     * "atan2", ...) over n (1 or 2) values of type t; `intrinsic` is LLVM's
     * name for it when LLVM has one ("llvm.exp"), else NULL. */
    LLVMValueRef (*math)(Cg *c, const char *intrinsic, const char *libm_name, LLVMTypeRef t, LLVMValueRef *args,
                         unsigned n);
    /* Raises IEEE exception CG_RAISE_* at run time when cond (i1) holds. */
    void (*raise_fpe)(Cg *c, LLVMValueRef cond, int kind);
    /* Emits the kernel `name`: its parameters, the walk over the outer
     * index space, the call of row (the row function) per outer index. */
    void (*entry)(Cg *c, LLVMValueRef row, const char *name);
    /* Module-level declarations the target needs once the kernel is emitted
     * (may be NULL). */
    void (*finish)(Cg *c);
    /* 1: the target has no IEEE status flags; the point function raises
     * CG_RAISE_NONFINITE when a float instruction's value is not finite
     * while its float inputs are (codegen_nvptx.c) */
    int check_nonfinite;
    /* 1: row functions and the entry take a last parameter `ptr flags`, an
     * i32 the kernel ORs the GP_FPE_* it raises into (GPU targets) */
    int flags_param;
} CgTargetOps;

extern const CgTargetOps cg_cpu_target;
extern const CgTargetOps cg_nvptx_target;

struct Cg {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
    const GpProgram *p;
    const GpTarget *target;
    const CgTargetOps *ops;
    LLVMValueRef scan_acc[GP_MAXINSTR]; /* map-scan: accumulator (alloca) of each SCAN instruction */
    LLVMValueRef vector_fns[64];        /* CPU: libmvec declarations kept by llvm.compiler.used */
    int nvector_fns;
    LLVMValueRef invalid_acc;                 /* i1 alloca: some cast of this row function was out of range */
    LLVMValueRef invalid_fn;                  /* the function invalid_acc belongs to */
    LLVMValueRef nonfinite_acc, nonfinite_fn; /* the same for CG_RAISE_NONFINITE */
    LLVMValueRef fpe_flags;                   /* flags_param targets: the current function's flags parameter */
};

/* The row function's view of its operands (see codegen_rows.c). */
typedef struct {
    LLVMValueRef base[GP_MAXOPERANDS];   /* row base pointer of each operand */
    LLVMValueRef stride[GP_MAXOPERANDS]; /* inner stride, bytes */
    LLVMValueRef bval[GP_MAXINSTR];      /* broadcast leaves and constants, loaded per row */
    LLVMValueRef magic[GP_MAXINSTR][3];  /* GpInstr.divisor: multiplier, sh1, sh2 (the divisor's dtype) */
} CgRow;

/* A counted loop (cg_loop_begin .. cg_loop_end). */
typedef struct {
    LLVMValueRef var;
    LLVMBasicBlockRef cond, body, exit;
    LLVMValueRef step;
} CgLoop;

/* codegen.c: types and constants */
LLVMTypeRef cg_reg_type(Cg *c, GpDType t); /* in registers: bool is i1 */
LLVMTypeRef cg_mem_type(Cg *c, GpDType t); /* in memory: bool is a byte */
int cg_bits(GpDType t);
LLVMValueRef cg_cint(LLVMTypeRef t, long long v);
LLVMValueRef cg_cfp(LLVMTypeRef t, double v);
/* A value of dtype t loaded from / stored to memory at p. */
LLVMValueRef cg_load(Cg *c, GpDType t, LLVMValueRef p);
void cg_store(Cg *c, GpDType t, LLVMValueRef v, LLVMValueRef p);
LLVMValueRef cg_intrinsic(Cg *c, const char *name, LLVMTypeRef t, LLVMValueRef *args, unsigned n);
LLVMValueRef cg_is_nan(Cg *c, LLVMValueRef v);
LLVMValueRef cg_fcmp_quiet(Cg *c, LLVMRealPredicate pred, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef cg_sel(Cg *c, LLVMValueRef k, LLVMValueRef a, LLVMValueRef b);
/* An alloca in the entry block of the current function (SROA promotes it). */
LLVMValueRef cg_entry_alloca(Cg *c, LLVMTypeRef t, const char *name);
/* Before a row function returns: an out-of-range cast noted in it, raised once. */
void cg_raise_noted(Cg *c);
LLVMValueRef cg_reduce_step(Cg *c, GpOp op, GpDType t, LLVMValueRef acc, LLVMValueRef v);
/* Address of element j of operand slot (by its layout class). */
LLVMValueRef cg_element_ptr(Cg *c, CgRow *r, int slot, GpDType t, LLVMValueRef j);
/* The point function at inner index j: every instruction; stores map
 * outputs when store_outputs; returns the reduced instruction's value
 * (map-reduce) or NULL. */
LLVMValueRef cg_emit_point(Cg *c, CgRow *r, LLVMValueRef j, int store_outputs);
/* for (*i = start; *i < end; *i += step) { ... cg_loop_end } */
CgLoop cg_loop_begin(Cg *c, LLVMValueRef fn, LLVMValueRef start, LLVMValueRef end, LLVMValueRef step, LLVMValueRef *i);
void cg_loop_end(Cg *c, CgLoop *l);
void cg_add_attr(Cg *c, LLVMValueRef fn, unsigned idx, const char *name);
/* Packed kernel arguments (codegen.h): the address of slot `slot` (+ idx
 * slots when idx) of the packed block at a, whose nd has been loaded. */
LLVMValueRef cg_karg(Cg *c, LLVMValueRef a, LLVMValueRef slot, LLVMValueRef idx);
/* Slot indices of the packed layout for nd (an i64 value) */
LLVMValueRef cg_karg_shape(Cg *c, LLVMValueRef nd);          /* first shape slot */
LLVMValueRef cg_karg_data(Cg *c, LLVMValueRef nd);           /* first data slot */
LLVMValueRef cg_karg_strides(Cg *c, LLVMValueRef nd, int k); /* operand k's first stride slot */
LLVMValueRef cg_karg_consts(Cg *c, LLVMValueRef nd);         /* first constant slot */

/* The call of the row function for outer index o (codegen.c). */
LLVMValueRef cg_call_row(Cg *c, LLVMValueRef fn, LLVMValueRef row, LLVMValueRef a, LLVMValueRef o, LLVMValueRef j0,
                         LLVMValueRef j1, LLVMValueRef result);

/* The row function's signature, for the entries of the targets:
 * (ptr base_0..K-1, i64 stride_0..K-1, ptr consts, i64 j0, i64 j1|n
 *  [, ptr arg_value] [, ptr flags]) returning void (map), the reduction's
 * value (map-reduce) or the index (i64, arg-reduction). */
int cg_row_nparams(const Cg *c);

#endif
