#pragma once
/* packages: what a run of a language can import, as {name, version} pairs named as pip and npm name them,
 * read from the packages' own metadata files: for python3 the distributions of the runtime tree's
 * dist-packages (RUNTIME_SITE_DIR: *.dist-info/METADATA, *.egg-info/PKG-INFO) and then those of the
 * current dependency generation (generation.h) in GEN/python; for nodejs
 * GEN/node_modules/<name>/package.json and GEN/node_modules/@scope/<name>/package.json. Read by the worker's
 * /v1/sandbox/dependencies route and the manager's ListDependencies; nothing here logs. */

#include <errno.h>
#include <stddef.h>

/* Where the python3 runtime tree keeps its packages (Debian's layout, relative to the tree's root). */
#define RUNTIME_SITE_DIR "usr/lib/python3/dist-packages"

typedef enum PackageOrigin {
        PACKAGE_ORIGIN_RUNTIME,    /* the runtime tree (difysandbox-prepare-runtime) */
        PACKAGE_ORIGIN_GENERATION, /* the current dependency generation (pip or npm, by the manager) */
        _PACKAGE_ORIGIN_MAX,
        _PACKAGE_ORIGIN_INVALID = -EINVAL,
} PackageOrigin;

typedef struct Package {
        char *name;
        char *version;
        PackageOrigin origin;
} Package;

/* "runtime", "generation" */
const char *package_origin_to_string(PackageOrigin origin);

/* Lists the packages of language ("python3" or "nodejs") under runtime_dir (/var/lib/difysandbox): first
 * those of the tree <runtime_dir>/<language>/current, then those of the current generation of
 * <runtime_dir>/<language>/packages, each part sorted by name; a python3 distribution of the tree that the
 * generation also has (by pip's rules for names) is listed once, as the generation's, which is the one
 * runs import. A missing runtime tree, site directory,
 * packages directory or generation lists nothing; an entry without a readable name and version is
 * skipped. Returns 0 with a malloc()ed array in *ret (NULL when *ret_n is 0), or a negative errno:
 * -EINVAL for an unknown language; then, when reterr_path is not NULL, *reterr_path is the malloc()ed
 * path that could not be read. */
int packages_list(const char *runtime_dir, const char *language, Package **ret, size_t *ret_n,
                  char **reterr_path);

/* Frees the array and its strings; returns NULL. */
Package *packages_free(Package *packages, size_t n);
