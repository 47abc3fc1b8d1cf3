/* core/cache.h -- the persistent on-disk cache of compiled kernels
 * (DESIGN.md section 6): object code named by a SHA-256 of the full key,
 * the key and a digest of the file stored in it and checked before use,
 * in a directory only this user can write.  The core lock serialises the
 * calls (they run from gp_jit_kernel, or before capture starts). */
#ifndef GP_CACHE_H
#define GP_CACHE_H

#include "gp.h"

#define GP_DIGEST_BYTES 32

/* SHA-256 of n bytes (OpenSSL).  0, or -1 when libcrypto fails. */
GP_API int gp_digest(const void *data, size_t n, unsigned char out[GP_DIGEST_BYTES]);
/* nbytes of digest as 2*nbytes lower-case hex digits and a NUL. */
GP_API void gp_digest_hex(const unsigned char *digest, size_t nbytes, char *out);

/* Uses dir as the cache (created mode 0700, parents too, when missing).
 * NULL or "" turns the cache off and returns 0.  Returns -1 with
 * gp_last_error() naming the reason, cache off, when the directory cannot
 * be opened, is a symbolic link, is not owned by the effective user, or is
 * writable by group or others. */
GP_API int gp_cache_set_dir(const char *dir);
/* Bound on the bytes of all entries; older entries (least recently used
 * first) are removed after each store to stay under it.  Default 256 MiB. */
GP_API void gp_cache_set_max_bytes(uint64_t n);
/* Object code stored under key, or NULL (no entry, a corrupt or untrusted
 * file, a different key).  Caller frees the result with free(). */
GP_API void *gp_cache_load(const void *key, size_t keylen, size_t *objlen);
/* Stores obj under key: a new 0600 file, written whole, fsync'ed, renamed
 * over the entry.  Errors are ignored (the cache is an optimisation). */
GP_API void gp_cache_store(const void *key, size_t keylen, const void *obj, size_t objlen);

/* For `python -m grumpy.cache`: the directory in use (NULL when off), the
 * bound, the entries' count and bytes (-1 when off), and removing every
 * entry and temporary file this user owns there (count, or -1 when off). */
GP_API const char *gp_cache_dir(void);
GP_API uint64_t gp_cache_max_bytes(void);
GP_API int gp_cache_usage(uint64_t *files, uint64_t *bytes);
GP_API int64_t gp_cache_clear(void);

#endif
