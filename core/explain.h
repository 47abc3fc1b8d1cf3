/* core/explain.h -- what each fused kernel computed, for
 * `python -m grumpy.explain` (grumpy/explain.py).
 *
 * When gp_config.explain is set the planner notes every kernel it runs
 * (plan.c, launch): the program's instructions with the nodes they computed
 * (op, dtype, shape, inputs, written to memory or not, and the user's line
 * that recorded each: GpNode.line, an index of the hooks' site table), how
 * its code was obtained (compiled, the on-disk cache, the in-memory cache)
 * and, once it has run, its time and the bytes it moved.  Launches of one
 * compiled kernel whose instructions came from the same lines add up in
 * one record, so a loop that runs a kernel a million times keeps one.  Off (the default) the
 * planner tests one flag per launch and nothing is kept.
 *
 * Units: times in nanoseconds, bytes in bytes (read from operands plus
 * written to outputs, as gp_stats.bytes_moved counts them), shapes in
 * elements.  Everything here is read and written under the core lock.
 */
#ifndef GP_EXPLAIN_H
#define GP_EXPLAIN_H

#include "codegen.h"
#include "dag.h"

#define GP_EXPLAIN_DIMS 8        /* dims of a node's shape kept (nd says how many it had) */
#define GP_EXPLAIN_RECORDS 65536 /* records kept; later kernels are counted in gp_explain_dropped */

/* One instruction of a recorded kernel, with the node it computed. */
typedef struct {
    uint8_t op;     /* GpOp: LEAF (an operand read from memory), CONST, or what it computes */
    uint8_t dtype;  /* GpDType of its value */
    uint8_t nin;    /* inputs, in[0..nin): earlier instruction indexes */
    uint8_t output; /* 1 when the kernel writes its value to memory (an array, or a value a
                       later kernel reads) */
    int16_t in[3];
    int line;                       /* its node's GpNode.line (0: none, or LEAF / CONST) */
    uint64_t axes;                  /* reduction / scan: bit d set = input axis d reduced */
    int nd;                         /* dims of its node */
    int64_t shape[GP_EXPLAIN_DIMS]; /* elements, the first GP_EXPLAIN_DIMS dims */
    GpScalar value;                 /* CONST: the value, in dtype */
    uint64_t memory;                /* LEAF: a hash of the address and strides it reads (equal for
                                        two reads of one array: a picture draws one input) */
} GpExplainInstr;

/* One kernel, summed over its launches for one set of lines. */
typedef struct {
    const void *kernel; /* the back end's compiled kernel (identity only, never called) */
    const char *kind;   /* static: "map", "map-reduce", "map-scan", "map-accumulate" */
    int nops;           /* instructions that compute (not LEAF or CONST) */
    int64_t launches;
    int64_t run_ns;        /* staging, kernel, outputs put in place, nodes marked (gp_stats.run_ns) */
    int64_t bytes;         /* bytes moved, all launches */
    int64_t compiles;      /* launches whose code LLVM compiled */
    int64_t disk_hits;     /* launches whose code came from the on-disk cache */
    int64_t memory_hits;   /* launches whose code was already compiled in this process */
    int64_t compile_ns;    /* time getting its code (compiling, or loading from disk) */
    int ninstr;            /* the program's, + 1 for a map-reduce (its reduction) */
    GpExplainInstr *instr; /* owned: the first launch's instructions (their lines are the key) */
} GpExplainRecord;

/* The counters a compile moves (gp_stats), taken before the back end's
 * compile; gp_explain_note charges their change to the kernel. */
typedef struct {
    int64_t compiled, disk_hits, memory_hits, compile_ns;
} GpExplainCompile;
void gp_explain_compile_begin(GpExplainCompile *c);

/* Notes a launch of compiled kernel k running program p over the nodes
 * nodes[0..p->ninstr) (borrowed, still pending: before they are marked),
 * and for a map-reduce root, the reduction node that is not among them
 * (NULL otherwise).  c: the counters before the compile.  Returns the
 * record's index for gp_explain_ran, or -1 (off, no memory, too many
 * records).  Core lock held. */
int gp_explain_note(const GpProgram *p, GpNode *const *nodes, const GpNode *root, const void *k,
                    const GpExplainCompile *c);
/* Adds one finished launch of record `index` (of kernel k: a record
 * cleared in between is not touched): ns of run time, bytes moved.
 * Core lock held. */
void gp_explain_ran(int index, const void *k, int64_t ns, int64_t bytes);

/* A copy of every record (its instructions too), taken under the core
 * lock; *n receives their number.  Caller frees with gp_explain_free.
 * NULL with *n = 0 when there are none or no memory. */
GP_API GpExplainRecord *gp_explain_copy(int *n);
GP_API void gp_explain_free(GpExplainRecord *recs, int n);
/* Forgets every record (takes the core lock). */
GP_API void gp_explain_clear(void);
/* Kernels not recorded: GP_EXPLAIN_RECORDS reached, or no memory. */
GP_API extern int64_t gp_explain_dropped;

#endif
