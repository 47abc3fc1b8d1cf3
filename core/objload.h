/* core/objload.h -- the disk cache's kernels without LLVM: their key, their
 * symbol, and a loader for the object code the code generator stored.
 *
 * A process whose kernels are all in the disk cache does not wait for the
 * code generator's library (LLVM: ~17 ms and ~47 MiB on these machines;
 * the first kernel of a process cost ~20 ms): jit_load.c tries the cache
 * through gp_objload first and loads the library only to compile (the
 * first miss), so a run whose kernels are all cached never maps it.  The key
 * is made here, with no LLVM, and the code generator uses the same one
 * when it stores what it compiles (jit.c). */
#ifndef GP_OBJLOAD_H
#define GP_OBJLOAD_H

#include "codegen.h"

/* Hex SHA-256 of the code generator's library file followed by the
 * extension's (grumpy/_grumpy_jit<SUFFIX>, then grumpy/_grumpy<SUFFIX>;
 * the one file holding both in the C tests), computed once, at the first
 * call; NULL when they cannot be read (then no disk cache).  Part of every
 * disk-cache key: objects compiled by another build are never loaded. */
GP_API const char *gp_kernel_library_digest(void);

/* The extension's file (*ext: the file holding this function) and the
 * code generator's library beside it, ".../_grumpy<SUFFIX>" ->
 * ".../_grumpy_jit<SUFFIX>", into gen (cap bytes).  0; 1 when the file is
 * not the extension (the C tests: one program holds both; gen unset); -1
 * when it cannot be found or gen is too small. */
GP_API int gp_library_paths(const char **ext, char *gen, size_t cap);

/* The full disk-cache key of p for a host target kind: the library digest,
 * the CPU (its CPUID signature: vendor, family/model/stepping and feature
 * leaves, the OS-enabled register state), the vector library and the
 * kind, then the program's bytes.  Length, with a malloc'd key in *out
 * (the caller frees); 0 when it cannot be made. */
GP_API size_t gp_kernel_key(const GpProgram *p, GpTargetKind kind, unsigned char **out);

/* The kernel's symbol for a key: "gp_k_" (GP_TARGET_CPU) or "gp_g_" and
 * 32 hex digits of the key's SHA-256, into name[38].  0, or -1. */
GP_API int gp_kernel_symbol(const unsigned char *key, size_t keylen, GpTargetKind kind, char name[38]);

/* Loads an x86-64 ELF relocatable object of len bytes (as the code
 * generator emits: .text, .rodata*, .data, .bss; R_X86_64_PC32, PLT32 and
 * 64 relocations; calls to libc, libm and libmvec) into memory of its own,
 * kept for the process, and returns the address of the defined function
 * `name`; NULL, with nothing kept, for anything else (the caller then
 * hands the object to LLVM).  Every offset and size is checked against
 * len.  Thread-safe; obj is not kept. */
GP_API void *gp_objload(const void *obj, size_t len, const char *name);

/* What gp_objload and gp_kernel_key need from the dynamic loader, done
 * now: libmvec opened, the libraries' digest taken (the back end's
 * prepare, in ordinary context, before the first kernel is looked up). */
GP_API void gp_objload_prepare(void);

/* Where libdevice is read from: $GRUMPY_LIBDEVICE, else
 * $CUDA_HOME/nvvm/libdevice/libdevice.10.bc, else the toolkit's default
 * path under /usr/local/cuda.  The PTX compiler links it (jit_nvptx.c);
 * the PTX key names its file. */
GP_API const char *gp_libdevice_path(void);

/* The disk-cache key of p's PTX for GPU architecture sm ("sm_80") as the
 * kernel `name`: the library digest, libdevice's file (path, size,
 * modification time: a toolkit updated in place gives new keys), sm and
 * name, then the program's bytes.  PTX is text for the driver to
 * assemble, valid whichever LLVM emitted it, so LLVM's version is not in
 * it, as for objects.  Length, with a malloc'd key in *out (the caller
 * frees); 0 when it cannot be made. */
GP_API size_t gp_ptx_key(const GpProgram *p, const char *sm, const char *name, unsigned char **out);

#endif
