/* packages: see packages.h. */

#include "packages.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cleanup-io.h"
#include "cleanup.h"
#include "fileio.h"
#include "generation.h"

/* A package.json of node_modules, and the header of a METADATA file, are far smaller. */
#define PACKAGE_JSON_MAX (4U << 20)
#define METADATA_LINE_MAX 4096U
#define METADATA_LINES_MAX 10000U
/* Beyond this many entries a generation is not something an installer made. */
#define PACKAGES_MAX 100000U

DEFINE_POINTER_CLEANUP(json_object *, json_object_put);

typedef struct PackageList {
        Package *items;
        size_t n, allocated;
} PackageList;

static void package_list_done(PackageList *l) {
        l->items = packages_free(l->items, l->n);
        l->n = l->allocated = 0;
}

static int package_list_add(PackageList *l, const char *name, const char *version, PackageOrigin origin) {
        _cleanup_free_ char *n = NULL, *v = NULL;

        if (l->n >= PACKAGES_MAX)
                return -E2BIG;
        if (l->n == l->allocated) {
                size_t na = l->allocated ? l->allocated * 2 : 64;
                Package *p = reallocarray(l->items, na, sizeof(Package));

                if (!p)
                        return -ENOMEM;
                l->items = p;
                l->allocated = na;
        }
        n = strdup(name);
        v = strdup(version);
        if (!n || !v)
                return -ENOMEM;
        l->items[l->n++] = (Package){ .name = TAKE_PTR(n), .version = TAKE_PTR(v), .origin = origin };
        return 0;
}

Package *packages_free(Package *packages, size_t n) {
        for (size_t i = 0; packages && i < n; i++) {
                free(packages[i].name);
                free(packages[i].version);
        }
        free(packages);
        return NULL;
}

const char *package_origin_to_string(PackageOrigin origin) {
        static const char *const table[_PACKAGE_ORIGIN_MAX] = {
                [PACKAGE_ORIGIN_RUNTIME] = "runtime",
                [PACKAGE_ORIGIN_GENERATION] = "generation",
        };

        return origin >= 0 && origin < _PACKAGE_ORIGIN_MAX ? table[origin] : NULL;
}

static int package_compare(const void *a, const void *b) {
        const Package *x = a, *y = b;
        int c = strcasecmp(x->name, y->name);

        return c != 0 ? c : strcmp(x->name, y->name);
}

/* ---- core metadata ---- */

/* "Name: x" and "Version: y" from the header of a core metadata file (it ends at the first empty line),
 * as pip reads them. Returns 1 when both were found, 0 when not (a missing file included). */
static int read_metadata(int dir_fd, const char *path, PackageOrigin origin, PackageList *l) {
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *line = NULL, *name = NULL, *version = NULL;
        size_t allocated = 0;
        int fd;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        f = fdopen(fd, "re");
        if (!f) {
                (void) safe_close(fd);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < METADATA_LINES_MAX && !(name && version); i++) {
                ssize_t n = getline(&line, &allocated, f);
                char **field = NULL;
                const char *value;

                if (n < 0 || (size_t) n > METADATA_LINE_MAX)
                        break;
                while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                        line[--n] = '\0';
                if (n == 0)
                        break; /* the end of the header */
                if (strncmp(line, "Name:", 5) == 0)
                        field = &name;
                else if (strncmp(line, "Version:", 8) == 0)
                        field = &version;
                if (!field || *field)
                        continue;
                value = strchr(line, ':') + 1;
                value += strspn(value, " \t");
                if (!*value)
                        continue;
                *field = strdup(value);
                if (!*field)
                        return -ENOMEM;
        }
        if (!name || !version)
                return 0;
        return package_list_add(l, name, version, origin) < 0 ? -ENOMEM : 1;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t ls = strlen(s), lx = strlen(suffix);

        return ls > lx && streq(s + ls - lx, suffix);
}

/* The distributions of a site directory (dist-packages, or a generation's python/), as pip list finds
 * them: <name>-<version>.dist-info/METADATA (wheels), <name>-<version>.egg-info/PKG-INFO (setup.py
 * installs; Debian's python3-* packages ship these) and a plain <name>.egg-info file, which is itself
 * PKG-INFO. A missing directory lists nothing. */
static int list_site(int parent_fd, const char *dir, PackageOrigin origin, PackageList *l) {
        _cleanup_(closedirp) DIR *d = NULL;
        int fd, r;

        fd = openat(parent_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno; /* a link or file there: ENOTDIR */
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                (void) safe_close(fd);
                return r;
        }
        for (;;) {
                _cleanup_free_ char *path = NULL;
                struct dirent *de;
                bool egg;

                errno = 0;
                de = readdir(d);
                if (!de)
                        return errno != 0 ? -errno : 0;
                if (de->d_name[0] == '.')
                        continue;
                egg = has_suffix(de->d_name, ".egg-info");
                if (!egg && !has_suffix(de->d_name, ".dist-info"))
                        continue;
                if (asprintf(&path, "%s/%s", de->d_name, egg ? "PKG-INFO" : "METADATA") < 0)
                        return -ENOMEM;
                r = read_metadata(dirfd(d), path, origin, l);
                if (r == 0 && egg) /* not a directory: the file is the metadata */
                        r = read_metadata(dirfd(d), de->d_name, origin, l);
                if (r < 0)
                        return r;
        }
}

/* name and version of dir_fd/<dir>/package.json; a file that is missing, too big or not such JSON is
 * skipped. */
static int read_package_json(int dir_fd, const char *dir, PackageList *l) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        json_object *name, *version;
        int r;

        if (asprintf(&path, "%s/package.json", dir) < 0)
                return -ENOMEM;
        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        r = read_full_fd(fd, PACKAGE_JSON_MAX, &text, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;
        o = json_tokener_parse(text);
        if (!o || !json_object_is_type(o, json_type_object) ||
            !json_object_object_get_ex(o, "name", &name) || !json_object_is_type(name, json_type_string) ||
            !json_object_object_get_ex(o, "version", &version) ||
            !json_object_is_type(version, json_type_string))
                return 0;
        return package_list_add(l, json_object_get_string(name), json_object_get_string(version),
                                PACKAGE_ORIGIN_GENERATION);
}

/* The packages directly in dir_fd (node_modules or one @scope of it); recurses once into scopes. */
static int list_node_modules(int dir_fd, bool scope, PackageList *l) {
        _cleanup_(closedirp) DIR *d = NULL;
        int r;

        r = opendir_dup(dir_fd, &d);
        if (r < 0)
                return r;
        for (;;) {
                struct dirent *de;

                errno = 0;
                de = readdir(d);
                if (!de)
                        return errno != 0 ? -errno : 0;
                if (de->d_name[0] == '.') /* ".", "..", ".bin", ".package-lock.json" */
                        continue;
                if (de->d_name[0] == '@') {
                        _cleanup_close_ int sub = -EBADF;

                        if (scope)
                                continue;
                        sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (sub < 0)
                                continue;
                        r = list_node_modules(sub, true, l);
                } else
                        r = read_package_json(dirfd(d), de->d_name, l);
                if (r < 0)
                        return r;
        }
}

static int list_nodejs(int gen_fd, PackageList *l) {
        _cleanup_close_ int fd = -EBADF;

        fd = openat(gen_fd, "node_modules", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        return list_node_modules(fd, false, l);
}

/* ---- the runtime tree ---- */

/* The distributions in the runtime tree's site directory, from their own metadata files (python3:
 * Debian's dist-packages, holding the tree's python3-* packages). Node.js's tree holds no packages. */
static int list_runtime(const char *runtime_dir, const char *language, bool python, PackageList *l,
                        char **reterr_path) {
        _cleanup_free_ char *tree = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t first = l->n;
        int r;

        if (!python)
                return 0;
        if (asprintf(&tree, "%s/%s/current", runtime_dir, language) < 0)
                return -ENOMEM;
        fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
                return 0; /* no tree yet */
        r = fd < 0 ? -errno : list_site(fd, RUNTIME_SITE_DIR, PACKAGE_ORIGIN_RUNTIME, l);
        if (r < 0) {
                if (reterr_path && r != -ENOMEM)
                        *reterr_path = TAKE_PTR(tree);
                return r;
        }
        qsort(l->items + first, l->n - first, sizeof(Package), package_compare);
        return 0;
}

/* ---- the dependency generation ---- */

static int list_generation(const char *runtime_dir, const char *language, bool python, PackageList *l,
                           char **reterr_path) {
        _cleanup_(generation_release) Generation gen = GENERATION_NULL;
        _cleanup_free_ char *packages_dir = NULL;
        size_t first = l->n;
        int r;

        if (asprintf(&packages_dir, "%s/%s/" PACKAGES_DIR_NAME, runtime_dir, language) < 0)
                return -ENOMEM;
        r = generation_acquire(packages_dir, &gen);
        if (r < 0) {
                if (reterr_path)
                        *reterr_path = TAKE_PTR(packages_dir);
                return r;
        }
        if (gen.number == 0)
                return 0;

        r = python ? list_site(gen.dir_fd, "python", PACKAGE_ORIGIN_GENERATION, l)
                   : list_nodejs(gen.dir_fd, l);
        if (r < 0) {
                if (reterr_path && r != -ENOMEM)
                        *reterr_path = TAKE_PTR(gen.path);
                return r;
        }
        qsort(l->items + first, l->n - first, sizeof(Package), package_compare);
        return 0;
}

/* Whether two distribution names are the same to pip (PEP 503): case aside, and runs of '-', '_' and '.'
 * all alike. */
static bool pip_name_equal(const char *a, const char *b) {
        for (;;) {
                bool sa = strchr("-_.", *a) && *a, sb = strchr("-_.", *b) && *b;

                if (sa != sb)
                        return false;
                if (sa) {
                        a += strspn(a, "-_.");
                        b += strspn(b, "-_.");
                        continue;
                }
                if (tolower((unsigned char) *a) != tolower((unsigned char) *b))
                        return false;
                if (!*a)
                        return true;
                a++;
                b++;
        }
}

/* Drops the runtime tree's entries that a generation's entry shadows: a run imports the generation's
 * (its directory comes first on sys.path, src/runtime/python3.c), and pip lists that one. */
static void drop_shadowed(PackageList *l) {
        size_t kept = 0;

        for (size_t i = 0; i < l->n; i++) {
                bool shadowed = false;

                for (size_t j = 0; l->items[i].origin == PACKAGE_ORIGIN_RUNTIME && j < l->n && !shadowed;
                     j++)
                        shadowed = l->items[j].origin == PACKAGE_ORIGIN_GENERATION &&
                                   pip_name_equal(l->items[i].name, l->items[j].name);
                if (shadowed) {
                        free(l->items[i].name);
                        free(l->items[i].version);
                        continue;
                }
                l->items[kept++] = l->items[i];
        }
        l->n = kept;
}

int packages_list(const char *runtime_dir, const char *language, Package **ret, size_t *ret_n,
                  char **reterr_path) {
        _cleanup_(package_list_done) PackageList l = { 0 };
        bool python;
        int r;

        if (!runtime_dir || !language)
                return -EINVAL;
        if (streq(language, "python3"))
                python = true;
        else if (streq(language, "nodejs"))
                python = false;
        else
                return -EINVAL;

        r = list_runtime(runtime_dir, language, python, &l, reterr_path);
        if (r < 0)
                return r;
        r = list_generation(runtime_dir, language, python, &l, reterr_path);
        if (r < 0)
                return r;
        if (python)
                drop_shadowed(&l);

        *ret = TAKE_PTR(l.items);
        *ret_n = l.n;
        l.n = 0;
        return 0;
}
