#pragma once
/* packages: what a run of a language can import, as {name, version} pairs: the Debian packages the
 * runtime tree was built from (its metadata file, written by difysandbox-prepare-runtime) and then the
 * packages of the current dependency generation (generation.h): for python3 the *.dist-info/METADATA of
 * GEN/python, for nodejs GEN/node_modules/<name>/package.json and
 * GEN/node_modules/@scope/<name>/package.json. Read by the worker's /v1/sandbox/dependencies route and the
 * manager's ListDependencies; nothing here logs. */

#include <stddef.h>

/* The runtime tree's metadata, a JSON object whose "packages" array holds {"name", "version", ...}. */
#define RUNTIME_METADATA ".difysandbox-runtime"
#define RUNTIME_METADATA_MAX (16U << 20)

typedef struct Package {
        char *name;
        char *version;
} Package;

/* Lists the packages of language ("python3" or "nodejs") under runtime_dir (/var/lib/difysandbox): first
 * those of <runtime_dir>/<language>/current/RUNTIME_METADATA in its order, then those of the current
 * generation of <runtime_dir>/<language>/packages sorted by name. A missing runtime tree, metadata file,
 * packages directory or generation lists nothing; a generation's entry without a readable name and
 * version is skipped. Returns 0 with a malloc()ed array in *ret (NULL when *ret_n is 0), or a negative
 * errno: -EINVAL for an unknown language, -EBADMSG for malformed runtime metadata; then, when
 * reterr_path is not NULL, *reterr_path is the malloc()ed path that could not be read. */
int packages_list(const char *runtime_dir, const char *language, Package **ret, size_t *ret_n,
                  char **reterr_path);

/* Frees the array and its strings; returns NULL. */
Package *packages_free(Package *packages, size_t n);
