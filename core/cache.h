/* core/cache.h -- the persistent on-disk cache of compiled kernels
 * (DESIGN.md section 6): object code, content-addressed by a hash of the
 * full key, the key stored in the file and compared before use. */
#ifndef GP_CACHE_H
#define GP_CACHE_H

#include "gp.h"

/* Directory of the cache (created mode 0700 on first store); NULL or ""
 * turns the cache off.  Copied. */
GP_API void gp_cache_set_dir(const char *dir);
/* Object code stored under key, or NULL.  Caller frees *obj with free(). */
void *gp_cache_load(const void *key, size_t keylen, uint64_t hash, size_t *objlen);
/* Stores obj under key: written to a temporary file then renamed, so
 * concurrent processes never see a partial file.  Errors are ignored (the
 * cache is an optimisation). */
void gp_cache_store(const void *key, size_t keylen, uint64_t hash, const void *obj, size_t objlen);

#endif
