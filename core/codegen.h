/* core/codegen.h -- a fused subgraph as a flat program, lowered to LLVM IR.
 *
 * A GpProgram is the canonical form of one fused subgraph: instructions in
 * topological order, leaves and outputs as numbered operand slots, scalar
 * constants as numbered argument slots, and the layout class of every
 * operand's innermost dimension.  It holds no sizes, strides, pointers or
 * constant values, so its bytes are the kernel cache key (DESIGN.md 6).
 *
 * Kernels (paper section 3), over packed arguments (below):
 *   map:        void k(const int64_t *a, i64 o0, i64 o1, i64 j0, i64 j1)
 *               computes points (o, j), o in [o0,o1) over the outer dims,
 *               j in [j0,j1) over the innermost dim, storing every output.
 *               With `accumulate`, an instruction of a reduction op stores
 *               out := out (op) value instead: a reduction over outer axes
 *               as a map whose output has stride 0 along them.
 *   map-scan:   the map kernel with `scan`: a SCAN instruction carries its
 *               accumulator along j in a register and stores every partial
 *               result (paper section 3.2); called with whole rows.
 *   map-reduce: void k(const int64_t *a, i64 o, i64 j0, i64 n, void *result)
 *               reduces the map values at (o, j0..j0+n) to one value of the
 *               reduction dtype in *result: sequentially from the identity,
 *               or (pairwise SUM) as one leaf of NumPy's pairwise summation.
 *               ARGMIN / ARGMAX write a GpArgResult: the index (from j0's
 *               row start, i.e. absolute j) and the value there.
 */
#ifndef GP_CODEGEN_H
#define GP_CODEGEN_H

#include "gp.h"

enum { GP_LAYOUT_CONTIG = 0, GP_LAYOUT_BCAST = 1, GP_LAYOUT_STRIDED = 2 };

typedef struct {
    uint8_t op;       /* GpOp */
    uint8_t dtype;    /* GpDType of the result */
    uint8_t in_dtype; /* GpDType of input 0 (CAST source, comparison operands) */
    uint8_t nin;
    int16_t in[3];    /* indices of earlier instructions */
    int16_t slot;     /* LEAF: operand slot; CONST: constant slot; map output: operand slot; else -1 */
    uint8_t exponent; /* float POWER whose exponent is a constant: its GP_EXPONENT_* (the
                         kernel is specialised for it); else GP_EXPONENT_RUNTIME */
    uint8_t divisor;  /* integer FLOOR_DIVIDE, REMAINDER or FMOD whose divisor is a constant
                         other than 0 and -1: 1 + the constant slot of the divisor's
                         multiplier, the next slot holding its shifts (gp_divisor_magic); the
                         kernel divides by multiplying and tests no zero or overflow.  One
                         kernel for every such divisor: the key (the program's bytes,
                         gp_program_hash) holds the slot, not the value.  Else 0 */
} GpInstr;

/* The multiplier and shifts with which a kernel divides an integer of
 * dtype t (signed or unsigned, 1-8 bytes) by the constant whose bits are d
 * (d != 0; signed: d != -1), after Granlund and Montgomery, "Division by
 * invariant integers using multiplication" (PLDI 1994): unsigned, their
 * figure 4.1, q = (t + ((n - t) >> sh1)) >> sh2 with t = mulhi(n, mul);
 * signed (truncating), their figure 5.1, q0 = n + mulsh(mul, n),
 * q0 = (q0 >> sh1) - (n >> N-1), q = (q0 ^ sign(d)) - sign(d).  *mul holds
 * the N-bit multiplier in its low bits, *shifts sh1 | sh2 << 8 (codegen.c
 * int_divmod_magic emits the same steps). */
GP_API void gp_divisor_magic(GpDType t, uint64_t d, uint64_t *mul, uint64_t *shifts);

/* What a float POWER computes when its exponent is a constant the plan
 * knows (GpInstr.exponent).  NumPy's power loop turns a broadcast exponent
 * of 2, 1, 0.5, 0 and -1 into square, copy, sqrt, one and reciprocal;
 * 3 and 4 are products of squares here (within 2 ULP of a correctly
 * rounded pow, inside the contract's 4 for transcendentals, DESIGN.md 4;
 * float32 through double, rounded once); any other constant is pow with
 * no test of the exponent at each element (for float32 and a constant that
 * is not an integer, exp(b log a) in double: FRACTION).  RUNTIME: the
 * exponent is read at each point, and the special values are selected
 * there. */
enum {
    GP_EXPONENT_RUNTIME = 0,
    GP_EXPONENT_OTHER,
    GP_EXPONENT_TWO,
    GP_EXPONENT_ONE,
    GP_EXPONENT_HALF,
    GP_EXPONENT_ZERO,
    GP_EXPONENT_MINUS_ONE,
    GP_EXPONENT_THREE,
    GP_EXPONENT_FOUR,
    /* finite and not an integer (2.4, -0.3): for float32, exp(b log a) in
     * double, rounded once (codegen.c fraction_power32); float64 keeps pow */
    GP_EXPONENT_FRACTION,
    /* read at run time, one value for the whole call (a size-1 exponent
     * array): NumPy's power loop selects its square / sqrt / reciprocal /
     * one / copy for it, so the kernel selects them too; an exponent array
     * of more elements (an (n, 1) column) is NumPy's pow at every point,
     * even where a row's exponent is 0.5: pow(-inf, 0.5) is inf, sqrt gives
     * NaN (found by the fuzzer, seed 624) */
    GP_EXPONENT_SCALAR
};

/* The exponent of each class from TWO to FOUR; TWO to MINUS_ONE are the
 * ones NumPy's loop treats specially (also at run time, codegen.c). */
static const double gp_exponent_value[] = {
    [GP_EXPONENT_TWO] = 2.0,        [GP_EXPONENT_ONE] = 1.0,   [GP_EXPONENT_HALF] = 0.5, [GP_EXPONENT_ZERO] = 0.0,
    [GP_EXPONENT_MINUS_ONE] = -1.0, [GP_EXPONENT_THREE] = 3.0, [GP_EXPONENT_FOUR] = 4.0,
};

/* The GP_EXPONENT_* class of a float exponent's value. */
int gp_exponent_class(double b);

typedef struct {
    uint8_t kind;       /* GP_KIND_MAP or GP_KIND_REDUCE */
    uint8_t reduce_op;  /* GpOp of the reduction */
    uint8_t pairwise;   /* REDUCE SUM in NumPy's pairwise order */
    uint8_t accumulate; /* MAP: a REDUCE-kind instruction folds its value into
                            its output element (out := out op v), for
                            reductions over outer axes */
    uint8_t noperands;  /* leaf and output slots */
    uint8_t nconsts;
    uint8_t quiet;                  /* float compares raise no flag on a quiet NaN (codegen.c cg_fcmp_quiet): set by
                      the planner for a program with float compares once gp_config.quiet_compares */
    uint8_t layout[GP_MAXOPERANDS]; /* GP_LAYOUT_* of each operand's innermost dim */
    uint16_t ninstr;
    int16_t root; /* REDUCE: the instruction whose values are reduced */
    GpInstr instr[GP_MAXINSTR];
} GpProgram;

/* Run-time arguments of a kernel as the planner builds them (fixed size,
 * ~14 KB).  A kernel reads them packed (gp_kernel_args_pack). */
typedef struct {
    int64_t nd;                                  /* dims of the iteration space */
    int64_t shape[GP_MAXDIMS];                   /* elements; innermost last */
    char *data[GP_MAXOPERANDS];                  /* first element of each operand */
    int64_t strides[GP_MAXOPERANDS][GP_MAXDIMS]; /* bytes */
    GpScalar consts[GP_MAXCONSTS];
} GpKernelArgs;

/* Packed kernel arguments: only what program p uses, in int64 slots (8
 * bytes each), for K = p->noperands, C = p->nconsts and nd = a->nd:
 *   [0]                          nd
 *   [1, 1+nd)                    shape, elements, innermost last
 *   [1+nd, 1+nd+K)               data pointer of each operand
 *   [1+nd+K + k*nd + d]          byte stride of operand k along dim d
 *   [1+nd+K+K*nd, ... + C)       constants (GpScalar bits)
 * For nd = 3, K = 4, C = 2: 22 slots, 176 bytes (a CUDA launch takes at
 * most 4 KB of parameters; the fixed GpKernelArgs is ~14 KB). */
GP_API size_t gp_kernel_args_slots(const GpProgram *p, int64_t nd);
/* Writes a's packed form for p into out[0 .. gp_kernel_args_slots). */
GP_API void gp_kernel_args_pack(const GpProgram *p, const GpKernelArgs *a, int64_t *out);

/* An accumulating launch's output (the slot of p's folding instruction)
 * set to the identity of reduction op in dtype t before the kernel folds
 * into it.  GP_OK, or GP_EUNSUPPORTED (no folding instruction). */
GP_API GpStatus gp_kernel_args_fill_identity(const GpProgram *p, GpKernelArgs *args, GpOp op, GpDType t);

typedef void (*GpMapKernel)(const int64_t *a, int64_t o0, int64_t o1, int64_t j0, int64_t j1);
typedef void (*GpReduceKernel)(const int64_t *a, int64_t o, int64_t j0, int64_t n, void *result);

/* The kinds of machine code is generated for (GpTarget, codegen_llvm.h). */
typedef enum {
    GP_TARGET_CPU,      /* the host, kernels called by the CPU thread pool */
    GP_TARGET_NVPTX,    /* an NVIDIA GPU (codegen_nvptx.c) */
    GP_TARGET_HOST_GRID /* the GPU's kernels compiled for the host, each launch run by one host
                           thread over every thread index (the emulated device of tests) */
} GpTargetKind;

/* Threads per leaf of a map-reduce kernel of program p for target kind t:
 * 8 for a float pairwise sum on a GPU (one per NumPy accumulator r[q]:
 * codegen_nvptx.c), else 1.  The GPU back end launches that many threads
 * per (row, leaf). */
static inline int gp_codegen_leaf_threads(const GpProgram *p, GpTargetKind t)
{
    GpDType rt = (GpDType)p->instr[p->root].dtype;
    return t == GP_TARGET_NVPTX && p->kind == GP_KIND_REDUCE && p->pairwise && (rt == GP_FLOAT32 || rt == GP_FLOAT64)
               ? 8
               : 1;
}

/* Whether codegen lowers op with input dtype t (NumPy has such a loop). */
GP_API int gp_op_supports(GpOp op, GpDType t);

/* Partial result of an arg-reduction. */
typedef struct {
    int64_t index;
    GpScalar value;
} GpArgResult;

/* Whether program p compares floats: a float comparison, maximum,
 * minimum, fmax, fmin, clip or sign, or a float min/max/arg reduction (what
 * GpProgram.quiet changes). */
GP_API int gp_program_compares_floats(const GpProgram *p);

/* Bytes of p that are significant (the cache key). */
GP_API size_t gp_program_key_size(const GpProgram *p);
/* FNV-1a of those bytes: the in-memory kernel caches' and file names' hash. */
GP_API uint64_t gp_program_hash(const GpProgram *p);
/* Whether GRUMPY_DEBUG_JIT_FAIL (gp_config.force_jit_failure) fails p's
 * compile: 1 every program's, N >= 2 the programs whose hash N divides
 * (about one in N, the same ones in every process, so a failing case
 * repeats), 0 none.  Compilers and the disk cache ask it first. */
GP_API int gp_jit_fail_forced(const GpProgram *p);

#endif
