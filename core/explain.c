/* core/explain.c -- per-kernel records for `python -m grumpy.explain`
 * (explain.h says what a record holds).
 *
 * gp_explain_note, at each launch while gp_config.explain is set:
 *   1. Lines: the GpNode.line of the node of each instruction that
 *      computes (0 for its operands: they were computed before, by another
 *      kernel or by NumPy).
 *   2. Find the record of this compiled kernel with these lines (an open-
 *      addressing table over a hash of both); a new one copies the
 *      program's instructions and their nodes' shapes, dtypes and lines.
 *   3. Charge the compile: how the counters of gp_stats that the back end's
 *      compile moves have changed since gp_explain_compile_begin.
 * gp_explain_ran then adds the launch's time and bytes, once it has run.
 *
 * Records are individually allocated and never move while they live, and
 * are freed only by gp_explain_clear; the table of them grows by doubling.
 * Everything is under the core lock.
 */
#include "explain.h"

#include <stdlib.h>
#include <string.h>

int64_t gp_explain_dropped;

/* The records, for the process; under the core lock. */
static struct {
    GpExplainRecord **records; /* owned, each owned */
    int nrecords, capacity;
    int *slots; /* open addressing: record index + 1, 0 = empty; nslots a power of two */
    int nslots;
} S;

/* The line of instruction i of a launch's program (i == p->ninstr: the
 * map-reduce root): its node's, for an instruction that computes. */
static int line_at(const GpProgram *p, GpNode *const *nodes, const GpNode *root, int i)
{
    const GpNode *n = i < p->ninstr ? nodes[i] : root;
    if (!n || (i < p->ninstr && (p->instr[i].op == GP_OP_LEAF || p->instr[i].op == GP_OP_CONST)))
        return 0;
    return n->line;
}

/* One FNV-1a-like step of a 64-bit value into h. */
static uint64_t hash_step(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001B3ull; }

/* A record's key: its kernel and the line of each instruction. */
static uint64_t key_hash(const void *k, int ninstr, const int *lines)
{
    uint64_t h = (uint64_t)(uintptr_t)k * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < ninstr; i++)
        h = hash_step(h, (uint64_t)(unsigned)lines[i]);
    return h ^ h >> 29;
}

static int same_key(const GpExplainRecord *r, const void *k, int ninstr, const int *lines)
{
    if (r->kernel != k || r->ninstr != ninstr)
        return 0;
    for (int i = 0; i < ninstr; i++)
        if (r->instr[i].line != lines[i])
            return 0;
    return 1;
}

/* Doubles the slot table (rehashing every record); 0 or -1. */
static int grow_slots(void)
{
    int n = S.nslots ? 2 * S.nslots : 256;
    int *s = calloc((size_t)n, sizeof *s);
    if (!s)
        return -1;
    for (int i = 0; i < S.nrecords; i++) {
        const GpExplainRecord *r = S.records[i];
        int lines[GP_MAXINSTR + 1];
        for (int k = 0; k < r->ninstr; k++)
            lines[k] = r->instr[k].line;
        size_t j = key_hash(r->kernel, r->ninstr, lines) & (size_t)(n - 1);
        while (s[j])
            j = (j + 1) & (size_t)(n - 1);
        s[j] = i + 1;
    }
    free(S.slots);
    S.slots = s;
    S.nslots = n;
    return 0;
}

static const char *kind_of(const GpProgram *p)
{
    if (p->kind == GP_KIND_REDUCE)
        return "map-reduce";
    for (int k = 0; k < p->ninstr; k++)
        if (gp_op_kind[p->instr[k].op] == GP_KIND_SCAN)
            return "map-scan";
    return p->accumulate ? "map-accumulate" : "map";
}

static void describe(GpExplainInstr *e, const GpInstr *ins, const GpNode *n)
{
    e->op = ins->op;
    e->dtype = ins->dtype;
    e->nin = ins->nin;
    for (int i = 0; i < ins->nin && i < 3; i++)
        e->in[i] = ins->in[i];
    e->output = ins->slot >= 0 && ins->op != GP_OP_LEAF && ins->op != GP_OP_CONST;
    if (!n)
        return;
    GpKind kind = gp_op_kind[n->op];
    e->axes = kind == GP_KIND_REDUCE || kind == GP_KIND_SCAN ? n->reduce_mask : 0;
    e->nd = n->nd;
    memcpy(e->shape, n->shape, (size_t)(n->nd < GP_EXPLAIN_DIMS ? n->nd : GP_EXPLAIN_DIMS) * sizeof *e->shape);
    if (ins->op == GP_OP_CONST)
        e->value = n->value;
    if (ins->op == GP_OP_LEAF) {
        uint64_t h = (uint64_t)(uintptr_t)n->data;
        for (int d = 0; d < n->nd; d++)
            h = hash_step(h, (uint64_t)n->strides[d]);
        e->memory = h;
    }
}

static int grow_records(void)
{
    int cap = S.capacity ? 2 * S.capacity : 64;
    GpExplainRecord **grown = realloc(S.records, (size_t)cap * sizeof *grown);
    if (!grown)
        return -1;
    S.records = grown;
    S.capacity = cap;
    return 0;
}

/* A new record of kernel k for program p (steps 2: instructions copied);
 * NULL when out of memory. */
static GpExplainRecord *record_new(const GpProgram *p, GpNode *const *nodes, const GpNode *root, const void *k)
{
    GpExplainRecord *r = calloc(1, sizeof *r);
    int n = p->ninstr + (root != NULL);
    if (!r || !(r->instr = calloc((size_t)n, sizeof *r->instr))) {
        free(r);
        return NULL;
    }
    r->kernel = k;
    r->kind = kind_of(p);
    r->ninstr = n;
    for (int i = 0; i < p->ninstr; i++)
        describe(&r->instr[i], &p->instr[i], nodes[i]);
    if (root) {
        /* the reduction a map-reduce kernel ends in: reads instruction p->root */
        GpInstr ins = {.op = (uint8_t)root->op, .dtype = (uint8_t)root->dtype, .nin = 1, .in = {p->root}, .slot = 0};
        describe(&r->instr[p->ninstr], &ins, root);
    }
    return r;
}

void gp_explain_compile_begin(GpExplainCompile *c)
{
    c->compiled = gp_stats.kernels_compiled;
    c->disk_hits = gp_stats.disk_cache_hits;
    c->memory_hits = gp_stats.cache_hits;
    c->compile_ns = gp_stats.compile_ns;
}

int gp_explain_note(const GpProgram *p, GpNode *const *nodes, const GpNode *root, const void *k,
                    const GpExplainCompile *c)
{
    /* step 1 */
    int lines[GP_MAXINSTR + 1], ninstr = p->ninstr + (root != NULL), nops = 0;
    for (int i = 0; i < ninstr; i++) {
        lines[i] = line_at(p, nodes, root, i);
        nops += i == p->ninstr || (p->instr[i].op != GP_OP_LEAF && p->instr[i].op != GP_OP_CONST);
    }
    if (S.nrecords * 2 >= S.nslots && grow_slots() < 0) {
        gp_explain_dropped++;
        return -1;
    }
    /* step 2 */
    size_t j = key_hash(k, ninstr, lines) & (size_t)(S.nslots - 1);
    while (S.slots[j] && !same_key(S.records[S.slots[j] - 1], k, ninstr, lines))
        j = (j + 1) & (size_t)(S.nslots - 1);
    int index = S.slots[j] - 1;
    if (index < 0) {
        if (S.nrecords == GP_EXPLAIN_RECORDS || (S.nrecords == S.capacity && grow_records() < 0)) {
            gp_explain_dropped++;
            return -1;
        }
        GpExplainRecord *r = record_new(p, nodes, root, k);
        if (!r) {
            gp_explain_dropped++;
            return -1;
        }
        r->nops = nops;
        for (int i = 0; i < ninstr; i++)
            r->instr[i].line = lines[i];
        index = S.nrecords++;
        S.records[index] = r;
        S.slots[j] = index + 1;
    }
    /* step 3 */
    GpExplainRecord *r = S.records[index];
    r->compiles += gp_stats.kernels_compiled - c->compiled;
    r->disk_hits += gp_stats.disk_cache_hits - c->disk_hits;
    r->memory_hits += gp_stats.cache_hits - c->memory_hits;
    r->compile_ns += gp_stats.compile_ns - c->compile_ns;
    return index;
}

void gp_explain_ran(int index, const void *k, int64_t ns, int64_t bytes)
{
    if (index < 0 || index >= S.nrecords || S.records[index]->kernel != k)
        return;
    S.records[index]->launches++;
    S.records[index]->run_ns += ns;
    S.records[index]->bytes += bytes;
}

GpExplainRecord *gp_explain_copy(int *n)
{
    gp_lock();
    GpExplainRecord *out = S.nrecords ? calloc((size_t)S.nrecords, sizeof *out) : NULL;
    int i = 0;
    for (; out && i < S.nrecords; i++) {
        out[i] = *S.records[i];
        out[i].instr = malloc((size_t)out[i].ninstr * sizeof *out[i].instr);
        if (!out[i].instr)
            break;
        memcpy(out[i].instr, S.records[i]->instr, (size_t)out[i].ninstr * sizeof *out[i].instr);
    }
    gp_unlock();
    if (out && i < S.nrecords) {
        gp_explain_free(out, i);
        out = NULL;
    }
    *n = out ? i : 0;
    return out;
}

void gp_explain_free(GpExplainRecord *recs, int n)
{
    for (int i = 0; recs && i < n; i++)
        free(recs[i].instr);
    free(recs);
}

void gp_explain_clear(void)
{
    gp_lock();
    for (int i = 0; i < S.nrecords; i++) {
        free(S.records[i]->instr);
        free(S.records[i]);
    }
    free(S.records);
    free(S.slots);
    S.records = NULL;
    S.slots = NULL;
    S.nrecords = S.capacity = S.nslots = 0;
    gp_explain_dropped = 0;
    gp_unlock();
}
