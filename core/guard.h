/* core/guard.h -- page-guarded buffers: allocation, registry, protection.
 *
 * Every buffer grumpy may compute into lazily is a page-aligned anonymous
 * mapping registered here.  Its protection follows its state:
 *   pending producer            -> PROT_NONE  (any touch computes it)
 *   valid on the device only    -> PROT_NONE  (any touch copies it back)
 *   read by pending nodes, or
 *   valid on host and device    -> PROT_READ  (a write computes the readers,
 *                                              drops the device copy)
 *   otherwise                   -> PROT_READ|PROT_WRITE
 * A SIGSEGV on a registered page calls back into the DAG (dag.c) to make the
 * access legal, then returns so the faulting instruction is retried.  Faults
 * on other addresses are chained to the handler installed before ours.
 */
#ifndef GP_GUARD_H
#define GP_GUARD_H

#include "gp.h"

struct GpNode;
struct GpBuffer;

/* Where a buffer's valid contents live.  A back end that keeps results in
 * its own memory (a GPU's) leaves them there; the host copy is made when
 * the host touches the buffer, through the guard like any pending value. */
typedef enum {
    GP_ON_HOST = 0, /* the host pages hold them (always, for the CPU back end) */
    GP_ON_DEVICE,   /* only the device copy does: host pages PROT_NONE; a touch copies them
                       to the host (gp_buffer_to_host) */
    GP_ON_BOTH      /* both do: host pages at most PROT_READ; a host write drops the device
                       copy (gp_buffer_drop_device) */
} GpResidency;

/* What the core asks of the owner (a back end) of a buffer's device copy.
 * Called with the core lock held. */
typedef struct {
    /* Copies b's device copy (b->device) into dst (b->mapped bytes, host
     * memory, writable).  0, or -1 (dst unchanged). */
    int (*to_host)(struct GpBuffer *b, char *dst);
    /* Frees b->device. */
    void (*release)(struct GpBuffer *b);
} GpDeviceCopyOps;

typedef struct GpBuffer {
    char *data;              /* owned: page-aligned mapping (or heap block) */
    size_t nbytes;           /* bytes requested */
    size_t mapped;           /* bytes mapped, a page multiple; 0 = heap, never guarded */
    int refcnt;              /* owners: the NumPy array (via the allocator), nodes */
    int prot;                /* current protection, PROT_* bits */
    uint64_t prot_epoch;     /* changes with prot, and when a kernel's stage is committed onto it
                                (guard.c set_prot), unique among buffers: while prot is
                                PROT_READ and this stays, nothing has written the pages */
    int populated;           /* contents may matter (else a reserved output never written:
                                 gp_buffer_open_for_write may move cached pages under it) */
    struct GpNode *producer; /* borrowed: pending node that will write it, or NULL */
    int64_t nreaders;        /* pending input edges that read it */
    struct GpNode *owner;    /* owned: node whose result the NumPy array on this
                                 buffer shows; released when NumPy frees it (hooks) */
    struct GpNode *writer;   /* owned: pending in-place write into a view of this
                                 buffer (its producer); released when computed */
    int stage_moved;         /* guard.c: b's pages are in a stage (an in-place kernel runs) */
    char *origin;            /* guard.c: b's old pages, moved out and kept while a kernel
                                writes a stage apart (gp_buffer_stage_apart), or NULL */
    int freed;               /* NumPy freed the memory (hooks, core lock held); one never
                                written keeps its protection (an unwritten reservation stays
                                inaccessible, for reuse: guard.c G.spare) */
    GpResidency where;       /* where the valid contents live (above) */
    void *device;            /* the device copy (owned through dev_ops), or NULL */
    const GpDeviceCopyOps *dev_ops;
} GpBuffer;

/* Bytes from which allocations are page-guarded mappings (smaller ones are
 * plain malloc and are never computed lazily). */
#define GP_GUARD_MIN_BYTES ((size_t)1 << 16)
/* The threshold in force (GP_GUARD_MIN_BYTES unless lowered to test
 * capture at every size: GRUMPY_MIN_BYTES below it); n >= 1 bytes.  Set
 * before any buffer is allocated (at enable). */
GP_API void gp_guard_set_min_bytes(size_t n);
GP_API size_t gp_guard_min_bytes(void);

/* New buffer of nbytes (zero-filled), refcnt 1, registered when guarded.
 * Returns NULL on out of memory.  Caller owns the reference. */
GpBuffer *gp_buffer_alloc(size_t nbytes);
/* The same without the zero fill (contents undefined). */
GpBuffer *gp_buffer_alloc_uninit(size_t nbytes);
/* For a pending output: fresh address space, populated when a kernel
 * first writes it (gp_buffer_open_for_write). */
GpBuffer *gp_buffer_reserve(size_t nbytes);
void gp_buffer_incref(GpBuffer *b);
/* Drops a reference; at zero the memory is unregistered and unmapped (or
 * cached).  Core lock held when it may be the last reference: a buffer
 * looked up under the core lock stays valid while the lock is held. */
void gp_buffer_decref(GpBuffer *b);
/* Registered buffer whose mapping contains addr (borrowed), or NULL. */
GpBuffer *gp_buffer_lookup(const void *addr);
/* Applies the protection the buffer's state asks for (see above). */
void gp_buffer_sync_prot(GpBuffer *b);

/* Residency (core lock held).  gp_buffer_set_device: b's contents are now
 * the device copy `device` (owned through ops; any previous copy is
 * released): GP_ON_DEVICE, host pages inaccessible (keep_host: the host
 * pages hold the same values, GP_ON_BOTH, read-only).  Guarded (mapped)
 * buffers only: -1 otherwise, or when the pages cannot be protected.
 * gp_buffer_to_host: a GP_ON_DEVICE buffer's device copy moved into its
 * host pages (GP_ON_BOTH, read-only); 0, or -1 (out of memory, device
 * error: b unchanged).  gp_buffer_drop_device: the device copy released,
 * GP_ON_HOST (before a host write; when the host copy is stale the caller
 * brings it over first). */
int gp_buffer_set_device(GpBuffer *b, void *device, const GpDeviceCopyOps *ops, int keep_host);
int gp_buffer_to_host(GpBuffer *b);
void gp_buffer_drop_device(GpBuffer *b);
/* A kernel wrote b's new contents into `device` (owned through ops; any
 * other device copy is released) while b is staged for its write:
 * GP_ON_DEVICE, and gp_buffer_commit makes the host pages inaccessible. */
void gp_buffer_mark_device(GpBuffer *b, void *device, const GpDeviceCopyOps *ops);

/* Makes b writable for a kernel (or evaluator) about to compute into it. */
void gp_buffer_open_for_write(GpBuffer *b);
/* b's pages made read-only now, as a pending reader makes them (and left
 * so, as after a reader's last use, until something writes them): from
 * then on every write faults, so while b->prot_epoch stays, nothing has
 * written b.  A guarded buffer on the host with no pending producer only;
 * 0, or -1 (b unchanged).  Core lock held. */
int gp_buffer_read_only(GpBuffer *b);

/* Installs the SIGSEGV/SIGBUS handler on top of the current one (a no-op if
 * ours is current), chaining to the one it replaces.  Returns 0 or -1. */
int gp_guard_install(void);
/* In a child after fork() that goes on running (the hooks call it from
 * Python's after-fork hook, before any other code of the child): starts
 * the child's resolver thread when guarded buffers came over.  Ordinary
 * context; takes the guard's lock. */
GP_API void gp_guard_after_fork_child(void);
/* Registers the guard's lock's fork handlers (once; gp_core_init calls it
 * before the core lock's, so fork() takes the core lock first). */
void gp_guard_init_fork(void);
/* 1 once a buffer that had to be made inaccessible or read-only could not
 * be (mprotect failed): pending values are no longer safe from readers, so
 * the hooks compute everything pending and stop capturing. */
int gp_guard_broken(void);

/* Puts back the handlers gp_guard_install replaced, if ours is on top
 * (around faulthandler.enable/disable, which save and restore handlers). */
int gp_guard_uninstall(void);

/* Set by dag.c: makes every access to b legal (computes its producer and,
 * for a buffer with readers, the readers).  Runs with the core lock held. */
extern void (*gp_guard_resolve)(GpBuffer *b);
/* Registered by plan.c: called once, in ordinary context, before the first
 * protection that can make a buffer fault (the back end's prepare). */
extern void (*gp_guard_before_first_fault)(void);

/* Whether this thread is resolving a fault (inside grumpy's fault handler,
 * or the resolver thread serving one): no Python there. */
GP_API int gp_guard_in_handler(void);
/* Whether this thread is the resolver thread (guard.c), which never takes
 * the GIL: what needs Python is left pending for the faulting thread. */
int gp_guard_on_resolver(void);

/* Staging (see guard.c): where a kernel is to write b (core lock held).
 * *stage is b->data when nobody can be waiting on b (open, or a heap
 * block); else private pages of b->mapped bytes, undefined, into which the
 * caller must first copy b's contents when *needs_contents is set (an
 * in-place write; gp_buffer_read_old).  0, or -1 when memory could
 * not be had (b unchanged). */
int gp_buffer_stage(GpBuffer *b, char **stage, int *needs_contents);
/* gp_buffer_stage into private pages whatever b's state (never b->data,
 * never b's own pages), so that b's old contents are kept until the commit
 * and gp_buffer_unstage puts them back as they were: an in-place kernel
 * whose outputs may be given up for NumPy's (plan.c numpy_for_flags).  An
 * inaccessible b's pages are moved out meanwhile (b->origin; its range
 * stays inaccessible, empty).  -1 also for a buffer that is not a guarded
 * mapping. */
int gp_buffer_stage_apart(GpBuffer *b, char **stage, int *needs_contents);
/* Whether gp_buffer_stage_apart would move b's pages out and keep them
 * (b->origin): a guarded mapping, populated and inaccessible. */
int gp_buffer_pages_movable(const GpBuffer *b);
/* Copies n bytes at byte offset off of b's contents, as they were when b
 * was staged, to dst: from b->origin, or b's guarded range of any
 * protection through /proc/self/mem.  Thread-safe between gp_buffer_stage
 * and the commit (the core lock held by the caller's thread).  0, or -1. */
int gp_buffer_read_old(const GpBuffer *b, size_t off, char *dst, size_t n);
/* Copies all of b's current contents (b->mapped bytes) to dst whatever
 * its protection (a leaf's memory made inaccessible by a pending in-place
 * write: plan.c read_inaccessible_leaves).  Core lock held.  0, or -1. */
int gp_buffer_read_contents(const GpBuffer *b, char *dst);
/* Puts the staged pages in place with protection prot (PROT_* bits); b is
 * populated afterwards.  0, or -1 if the values were lost (out of memory). */
int gp_buffer_commit(GpBuffer *b, char *stage, int prot);
/* Gives back a stage whose computation failed; b keeps its old contents. */
void gp_buffer_unstage(GpBuffer *b, char *stage);

#endif
