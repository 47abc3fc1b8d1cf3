/* core/objload.c -- the disk cache's kernels without LLVM (objload.h).
 *
 * 1. The key (gp_kernel_key): what the object code depends on besides the
 *    program -- the code generator's and the extension's build (a digest of
 *    their files), the CPU it was compiled for (CPUID: the same signature
 *    makes LLVM's host CPU name and features the same) and the vector
 *    library -- then the program's bytes.  LLVM's version is not in it: an
 *    object is machine code, correct whichever LLVM emitted it.
 * 2. The loader (gp_objload), after the System V x86-64 psABI's relocation
 *    rules and ELF's section and symbol tables (elf.h): the allocated
 *    sections are laid out in one private mapping, code first (read+exec
 *    once relocated), then constants, data and zeroed bss (read+write);
 *    each external function gets a 16-byte stub at the end of the code
 *    (jmp *0(%rip) and its 8-byte address), so that a 32-bit PC-relative
 *    call reaches libm wherever it is mapped.  Externals are looked up as
 *    LLVM's generators did for the JIT: the process (libc, libm), then
 *    libmvec.so.1.  What the code generator does not emit -- other
 *    relocation types, SHT_REL, a PC-relative reference to external data,
 *    TLS, COMMON symbols -- is refused, and LLVM loads the object instead.
 */
#include "objload.h"
#include "cache.h"

#include <cpuid.h>
#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the key ------------------------------------------------------------ */

static int append_file(const char *path, unsigned char **buf, size_t *len, size_t *cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t r;
    while (*buf && (r = fread(*buf + *len, 1, *cap - *len, f)) > 0) {
        *len += r;
        if (*len == *cap) {
            unsigned char *grown = realloc(*buf, *cap *= 2);
            if (!grown)
                free(*buf);
            *buf = grown;
        }
    }
    int bad = ferror(f) || !*buf;
    fclose(f);
    return bad ? -1 : 0;
}

static char library_hex[2 * GP_DIGEST_BYTES + 1];

int gp_library_paths(const char **ext, char *gen, size_t cap)
{
    Dl_info self;
    if (!dladdr((void *)gp_library_paths, &self) || !self.dli_fname)
        return -1;
    const char *base = strrchr(self.dli_fname, '/');
    base = base ? base + 1 : self.dli_fname;
    *ext = self.dli_fname;
    if (strncmp(base, "_grumpy.", strlen("_grumpy.")) != 0)
        return 1;
    int n =
        snprintf(gen, cap, "%.*s_grumpy_jit%s", (int)(base - self.dli_fname), self.dli_fname, base + strlen("_grumpy"));
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static void digest_libraries(void)
{
    const char *ext;
    char gen[4096];
    int split = gp_library_paths(&ext, gen, sizeof gen); /* 1: one file holds both (the C tests) */
    if (split < 0)
        return;
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    int bad = (split == 0 && append_file(gen, &buf, &len, &cap) < 0) || append_file(ext, &buf, &len, &cap) < 0;
    unsigned char d[GP_DIGEST_BYTES];
    if (buf && !bad && gp_digest(buf, len, d) == 0)
        gp_digest_hex(d, GP_DIGEST_BYTES, library_hex);
    free(buf);
}

const char *gp_kernel_library_digest(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, digest_libraries);
    return library_hex[0] ? library_hex : NULL;
}

/* The CPU as CPUID describes it: leaves 0 (vendor), 1 (family, model,
 * stepping; features -- not EBX, which holds the APIC id of the core that
 * ran it), 7.0, 7.1, 0xd.1, 0x24 (AVX10), 0x80000001, and XCR0 (the register state the OS
 * enabled: AVX and AVX-512 are off without it). */
static void cpu_signature(char *out, size_t cap)
{
    unsigned a, b, c, d, max = __get_cpuid_max(0, NULL);
    unsigned r[19] = {0};
    __cpuid(0, a, r[0], r[1], r[2]);
    if (max >= 1) {
        __cpuid(1, r[3], b, r[4], r[5]);
    }
    if (max >= 7) {
        __cpuid_count(7, 0, a, r[6], r[7], r[8]);
        __cpuid_count(7, 1, r[9], r[15], r[16], r[17]);
    }
    if (max >= 0x24) /* AVX10 */
        __cpuid_count(0x24, 0, a, r[18], c, d);
    if (max >= 0xd)
        __cpuid_count(0xd, 1, r[10], b, c, d);
    if (__get_cpuid_max(0x80000000, NULL) >= 0x80000001)
        __cpuid(0x80000001, a, b, r[11], r[12]);
    if (r[4] & (1u << 27)) { /* OSXSAVE: xgetbv reads XCR0 */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        r[13] = lo;
        r[14] = hi;
    }
    int n = 0;
    for (int i = 0; i < 19 && n >= 0 && (size_t)n < cap; i++)
        n += snprintf(out + n, cap - (size_t)n, "%s%08x", i ? "." : "", r[i]);
}

const char *gp_libdevice_path(void)
{
    static char path[4096];
    if (path[0])
        return path;
    const char *env = getenv("GRUMPY_LIBDEVICE");
    const char *home = getenv("CUDA_HOME");
    if (env && *env)
        snprintf(path, sizeof path, "%s", env);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/nvvm/libdevice/libdevice.10.bc", home);
    else
        snprintf(path, sizeof path, "%s", "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
    return path;
}

/* p's bytes after a header env of m bytes, into a malloc'd key. */
static size_t key_with_program(const char *env, int m, const GpProgram *p, unsigned char **out)
{
    if (m < 0)
        return 0;
    size_t n = gp_program_key_size(p);
    unsigned char *k = malloc((size_t)m + n);
    if (!k)
        return 0;
    memcpy(k, env, (size_t)m);
    memcpy(k + m, p, n);
    *out = k;
    return (size_t)m + n;
}

size_t gp_ptx_key(const GpProgram *p, const char *sm, const char *name, unsigned char **out)
{
    const char *lib = gp_kernel_library_digest();
    if (!lib)
        return 0;
    struct stat st;
    const char *ld = gp_libdevice_path();
    long long size = -1, mtime = -1;
    if (stat(ld, &st) == 0) {
        size = (long long)st.st_size;
        mtime = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
    char env[8192];
    int m = snprintf(env, sizeof env, "ptx 1|library %s|libdevice %s %lld %lld|sm %s|name %s|", lib, ld, size, mtime,
                     sm, name);
    return m < (int)sizeof env ? key_with_program(env, m, p, out) : 0;
}

size_t gp_kernel_key(const GpProgram *p, GpTargetKind kind, unsigned char **out)
{
    const char *lib = gp_kernel_library_digest();
    if (!lib)
        return 0;
    char cpu[256], env[512]; /* 19 words of 9 characters */
    cpu_signature(cpu, sizeof cpu);
    int m = snprintf(env, sizeof env, "objects 1|library %s|cpu %s|LIBMVEC-X86|target %d|", lib, cpu, (int)kind);
    return m < (int)sizeof env ? key_with_program(env, m, p, out) : 0;
}

int gp_kernel_symbol(const unsigned char *key, size_t keylen, GpTargetKind kind, char name[38])
{
    unsigned char d[GP_DIGEST_BYTES];
    if (gp_digest(key, keylen, d) < 0)
        return -1;
    memcpy(name, kind == GP_TARGET_CPU ? "gp_k_" : "gp_g_", 5);
    gp_digest_hex(d, 16, name + 5);
    return 0;
}

/* ---- the loader --------------------------------------------------------- */

#define STUB_BYTES 16
#define MAX_SECTIONS 64
#define MAX_EXTERNALS 64

typedef struct {
    const unsigned char *obj;
    size_t len;
    const Elf64_Shdr *sh;
    unsigned nsh;
    const Elf64_Sym *sym;
    size_t nsym;
    const char *str; /* the symbol table's strings */
    size_t nstr;
    size_t at[MAX_SECTIONS]; /* loaded sections: offset in the mapping, or SIZE_MAX */
    size_t code_bytes, total_bytes;
    unsigned nstubs;
    unsigned stub_sym[MAX_EXTERNALS]; /* the symbol index of each stub */
    unsigned char *base;
} Obj;

static int in_file(const Obj *o, uint64_t off, uint64_t n) { return off <= o->len && n <= o->len - off; }

static const char *sym_name(const Obj *o, const Elf64_Sym *s)
{
    if (s->st_name >= o->nstr || !memchr(o->str + s->st_name, 0, o->nstr - s->st_name))
        return NULL;
    return o->str + s->st_name;
}

/* The header, section table and symbol table: 0, or -1 for anything this
 * loader does not take. */
static int parse(Obj *o)
{
    if (o->len < sizeof(Elf64_Ehdr))
        return -1;
    const Elf64_Ehdr *e = (const Elf64_Ehdr *)o->obj;
    if (memcmp(e->e_ident, ELFMAG, SELFMAG) || e->e_ident[EI_CLASS] != ELFCLASS64 ||
        e->e_ident[EI_DATA] != ELFDATA2LSB || e->e_type != ET_REL || e->e_machine != EM_X86_64 ||
        e->e_shentsize != sizeof(Elf64_Shdr) || e->e_shnum == 0 || e->e_shnum > MAX_SECTIONS ||
        !in_file(o, e->e_shoff, (uint64_t)e->e_shnum * sizeof(Elf64_Shdr)) || e->e_shoff % 8)
        return -1;
    o->sh = (const Elf64_Shdr *)(o->obj + e->e_shoff);
    o->nsh = e->e_shnum;
    for (unsigned i = 0; i < o->nsh; i++) {
        const Elf64_Shdr *s = &o->sh[i];
        if (s->sh_type == SHT_REL || (s->sh_flags & SHF_TLS))
            return -1;
        if (s->sh_type != SHT_SYMTAB)
            continue;
        if (o->sym || s->sh_entsize != sizeof(Elf64_Sym) || !in_file(o, s->sh_offset, s->sh_size) || s->sh_offset % 8 ||
            s->sh_link >= o->nsh || !in_file(o, o->sh[s->sh_link].sh_offset, o->sh[s->sh_link].sh_size))
            return -1;
        o->sym = (const Elf64_Sym *)(o->obj + s->sh_offset);
        o->nsym = s->sh_size / sizeof(Elf64_Sym);
        o->str = (const char *)o->obj + o->sh[s->sh_link].sh_offset;
        o->nstr = o->sh[s->sh_link].sh_size;
    }
    return o->sym ? 0 : -1;
}

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

/* Offsets of the allocated sections: code, then the rest. */
static int layout(Obj *o)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), off = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 0; i < o->nsh; i++) {
            const Elf64_Shdr *s = &o->sh[i];
            if (pass == 0)
                o->at[i] = SIZE_MAX;
            int code = (s->sh_flags & SHF_EXECINSTR) != 0;
            if (!(s->sh_flags & SHF_ALLOC) || s->sh_size == 0 || code != (pass == 0))
                continue;
            if (s->sh_type != SHT_PROGBITS && s->sh_type != SHT_NOBITS)
                return -1;
            size_t a = s->sh_addralign ? s->sh_addralign : 1;
            if (a & (a - 1) || a > page || s->sh_size > ((size_t)1 << 30) ||
                (s->sh_type == SHT_PROGBITS && !in_file(o, s->sh_offset, s->sh_size)))
                return -1;
            o->at[i] = off = align_up(off, a);
            off += s->sh_size;
        }
        if (pass == 0) { /* the stubs end the code */
            off = align_up(off, STUB_BYTES) + (size_t)MAX_EXTERNALS * STUB_BYTES;
            o->code_bytes = off = align_up(off, page);
        }
    }
    o->total_bytes = align_up(off, page);
    return 0;
}

/* An external function's address: the process's, then libmvec's. */
static void *mvec_handle;
static void open_mvec(void) { mvec_handle = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL); }

void gp_objload_prepare(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, open_mvec);
    (void)gp_kernel_library_digest();
}

static void *external(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) {
        gp_objload_prepare();
        f = mvec_handle ? dlsym(mvec_handle, name) : NULL;
    }
    return f;
}

/* The address a relocation's symbol si stands for (S); for a call
 * (R_X86_64_PLT32) to an external function, its stub.  0 when refused. */
static uint64_t symbol_value(Obj *o, unsigned si, unsigned type)
{
    if (si >= o->nsym)
        return 0;
    const Elf64_Sym *s = &o->sym[si];
    if (s->st_shndx == SHN_UNDEF) {
        const char *name = sym_name(o, s);
        void *f = name && *name ? external(name) : NULL;
        if (!f)
            return 0;
        if (type == R_X86_64_64)
            return (uint64_t)(uintptr_t)f;
        if (type != R_X86_64_PLT32) /* PC-relative data of a library: needs a GOT */
            return 0;
        unsigned k = 0;
        while (k < o->nstubs && o->stub_sym[k] != si)
            k++;
        if (k == o->nstubs) {
            if (o->nstubs == MAX_EXTERNALS)
                return 0;
            o->stub_sym[o->nstubs++] = si;
            unsigned char *stub = o->base + o->code_bytes - (size_t)(MAX_EXTERNALS - k) * STUB_BYTES;
            static const unsigned char jmp[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
            uint64_t addr = (uint64_t)(uintptr_t)f;
            memcpy(stub, jmp, sizeof jmp);
            memcpy(stub + sizeof jmp, &addr, sizeof addr);
        }
        return (uint64_t)(uintptr_t)(o->base + o->code_bytes - (size_t)(MAX_EXTERNALS - k) * STUB_BYTES);
    }
    if (s->st_shndx == SHN_ABS)
        return s->st_value;
    if (s->st_shndx >= o->nsh || o->at[s->st_shndx] == SIZE_MAX || s->st_value > o->sh[s->st_shndx].sh_size)
        return 0;
    return (uint64_t)(uintptr_t)(o->base + o->at[s->st_shndx]) + s->st_value;
}

static int relocate(Obj *o)
{
    for (unsigned i = 0; i < o->nsh; i++) {
        const Elf64_Shdr *r = &o->sh[i];
        if (r->sh_type != SHT_RELA)
            continue;
        if (r->sh_info >= o->nsh || r->sh_entsize != sizeof(Elf64_Rela) || !in_file(o, r->sh_offset, r->sh_size) ||
            r->sh_offset % 8)
            return -1;
        if (o->at[r->sh_info] == SIZE_MAX) {
            if (o->sh[r->sh_info].sh_flags & SHF_ALLOC)
                return -1;
            continue; /* relocations of a section not loaded (none are emitted) */
        }
        const Elf64_Shdr *t = &o->sh[r->sh_info];
        const Elf64_Rela *rel = (const Elf64_Rela *)(o->obj + r->sh_offset);
        for (size_t k = 0; k < r->sh_size / sizeof(Elf64_Rela); k++) {
            unsigned type = ELF64_R_TYPE(rel[k].r_info), si = ELF64_R_SYM(rel[k].r_info);
            unsigned width = type == R_X86_64_64 ? 8 : 4;
            if ((type != R_X86_64_PC32 && type != R_X86_64_PLT32 && type != R_X86_64_64) ||
                rel[k].r_offset > t->sh_size || t->sh_size - rel[k].r_offset < width || t->sh_type == SHT_NOBITS)
                return -1;
            uint64_t S = symbol_value(o, si, type);
            if (!S)
                return -1;
            unsigned char *P = o->base + o->at[r->sh_info] + rel[k].r_offset;
            if (type == R_X86_64_64) {
                uint64_t v = S + (uint64_t)rel[k].r_addend;
                memcpy(P, &v, 8);
            } else {
                int64_t v = (int64_t)(S + (uint64_t)rel[k].r_addend - (uint64_t)(uintptr_t)P);
                if (v < INT32_MIN || v > INT32_MAX)
                    return -1;
                int32_t v32 = (int32_t)v;
                memcpy(P, &v32, 4);
            }
        }
    }
    return 0;
}

void *gp_objload(const void *obj, size_t len, const char *name)
{
    Obj o = {.obj = obj, .len = len};
    if (!obj || parse(&o) < 0 || layout(&o) < 0)
        return NULL;
    void *m = mmap(NULL, o.total_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    o.base = m;
    for (unsigned i = 0; i < o.nsh; i++)
        if (o.at[i] != SIZE_MAX && o.sh[i].sh_type == SHT_PROGBITS)
            memcpy(o.base + o.at[i], o.obj + o.sh[i].sh_offset, o.sh[i].sh_size);
    void *fn = NULL;
    if (relocate(&o) == 0) {
        for (size_t k = 0; k < o.nsym && !fn; k++) {
            const Elf64_Sym *s = &o.sym[k];
            const char *n = sym_name(&o, s);
            if (ELF64_ST_TYPE(s->st_info) == STT_FUNC && s->st_shndx != SHN_UNDEF && s->st_shndx < o.nsh &&
                o.at[s->st_shndx] != SIZE_MAX && (o.sh[s->st_shndx].sh_flags & SHF_EXECINSTR) && n &&
                strcmp(n, name) == 0 && s->st_value < o.sh[s->st_shndx].sh_size)
                fn = o.base + o.at[s->st_shndx] + s->st_value;
        }
    }
    if (fn && mprotect(o.base, o.code_bytes, PROT_READ | PROT_EXEC) != 0)
        fn = NULL;
    if (!fn)
        munmap(m, o.total_bytes);
    return fn;
}
