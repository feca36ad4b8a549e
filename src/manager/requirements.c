/* requirements: see requirements.h. */

#include "requirements.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/fileio.h"

/* npm's own limit (validate-npm-package-name). */
#define NPM_NAME_MAX 214U
/* How much of a refused text an error message repeats. */
#define QUOTE_MAX 120U

static bool is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

static bool in_set(char c, const char *set) {
        return c != '\0' && strchr(set, c) != NULL;
}

/* The text as an error message may show it: printable ASCII, at most QUOTE_MAX bytes. */
static char *quote(const char *s) {
        size_t n = strlen(s), shown = n > QUOTE_MAX ? QUOTE_MAX : n;
        char *q = malloc(shown + 4);

        if (!q)
                return NULL;
        for (size_t i = 0; i < shown; i++)
                q[i] = (unsigned char) s[i] < 0x20 || (unsigned char) s[i] >= 0x7f ? '?' : s[i];
        if (shown < n)
                memcpy(q + shown, "...", 4);
        else
                q[shown] = '\0';
        return q;
}

/* Sets *reterr to "<prefix>'<text>': <reason>" and returns -EINVAL (or -ENOMEM). */
static int refuse(char **reterr, const char *prefix, const char *text, const char *reason) {
        _cleanup_free_ char *q = NULL;

        if (!reterr)
                return -EINVAL;
        q = quote(text);
        if (!q || asprintf(reterr, "%s'%s': %s", prefix, q, reason) < 0)
                return -ENOMEM;
        return -EINVAL;
}

/* ---- python3: PEP 508 without URLs ---- */

static const char *skip_blanks(const char *p) {
        while (is_blank(*p))
                p++;
        return p;
}

/* A project or extra name: starts and ends with a letter or digit, "._-" inside. NULL when invalid. */
static const char *scan_python_name(const char *p) {
        const char *start = p;

        if (!is_alnum(*p))
                return NULL;
        while (is_alnum(*p) || in_set(*p, "._-"))
                p++;
        if (!is_alnum(p[-1]) || p == start)
                return NULL;
        return p;
}

/* PEP 503: lowercase, every run of "-_." becomes one "-". */
static char *python_name_normalize(const char *name, size_t len) {
        char *n = malloc(len + 1), *o = n;

        if (!n)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];

                if (in_set(c, "-_.")) {
                        if (o == n || o[-1] != '-')
                                *o++ = '-';
                } else
                        *o++ = (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
        }
        *o = '\0';
        return n;
}

/* Parses s (trimmed, no control characters); returns NULL or the reason it is not a plain requirement,
 * and the extent of the name. */
static const char *python_grammar(const char *s, size_t *ret_name_len) {
        const char *p = s, *q;
        bool paren = false;

        q = scan_python_name(p);
        if (!q)
                return "not a requirement: a project name (letters, digits, '.', '_', '-') must come first";
        *ret_name_len = (size_t) (q - s);
        p = skip_blanks(q);

        if (*p == '[') {
                p = skip_blanks(p + 1);
                while (*p != ']') {
                        q = scan_python_name(p);
                        if (!q)
                                return "invalid extras: expected [name, ...]";
                        p = skip_blanks(q);
                        if (*p == ',')
                                p = skip_blanks(p + 1);
                        else if (*p != ']')
                                return "invalid extras: expected [name, ...]";
                }
                p = skip_blanks(p + 1);
        }

        if (*p == '@')
                return "direct references (name @ url) are not allowed";
        if (*p == '(') {
                paren = true;
                p = skip_blanks(p + 1);
        }
        if (in_set(*p, "<>=!~")) {
                for (;;) {
                        static const char *const ops[] = { "===", "==", "!=", "<=", ">=", "~=", "<", ">" };
                        size_t len = 0;

                        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                                if (strncmp(p, ops[i], strlen(ops[i])) == 0) {
                                        len = strlen(ops[i]);
                                        break;
                                }
                        if (len == 0)
                                return "invalid version specifier: expected one of === == != <= >= ~= < >";
                        p = skip_blanks(p + len);
                        q = p;
                        while (is_alnum(*p) || in_set(*p, ".*+!_-"))
                                p++;
                        if (p == q)
                                return "invalid version specifier: a version must follow the operator";
                        p = skip_blanks(p);
                        if (*p != ',')
                                break;
                        p = skip_blanks(p + 1);
                }
        }
        if (paren) {
                if (*p != ')')
                        return "invalid version specifier: ')' expected";
                p = skip_blanks(p + 1);
        }

        if (*p == ';') {
                bool letter = false;

                for (p++; *p; p++) {
                        if (!is_alnum(*p) && !in_set(*p, " \t._<>=!~()\"',*+:"))
                                return "invalid environment marker: unexpected character";
                        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
                                letter = true;
                }
                if (!letter)
                        return "invalid environment marker: a marker such as python_version >= \"3.8\" "
                               "must follow ';'";
                return NULL;
        }
        if (*p != '\0')
                return "not a requirement: expected name[extras] <specifiers> ; <marker>";
        return NULL;
}

/* name[extras] @ ...: PEP 508's URL form. */
static bool is_direct_reference(const char *s) {
        const char *p = scan_python_name(s);

        if (!p)
                return false;
        p = skip_blanks(p);
        if (*p == '[') {
                p = strchr(p, ']');
                if (!p)
                        return false;
                p = skip_blanks(p + 1);
        }
        return *p == '@';
}

/* pip's ARCHIVE_EXTENSIONS. */
static const char *const archive_extensions[] = {
        ".zip", ".whl",    ".tar.bz2",  ".tbz",    ".tar.xz", ".txz",
        ".tlz", ".tar.lz", ".tar.lzma", ".tar.gz", ".tgz",    ".tar",
};

static const char *python_refusal(const char *s, size_t *ret_name_len) {
        const char *reason;

        if (s[0] == '-')
                return "options (-r, -e, --index-url, ...) are not allowed: only package requirements";
        for (const char *p = s; *p; p++)
                if (is_blank(*p) && p[1] == '-')
                        return "per-requirement options (--hash, --config-settings, ...) are not allowed";
        if (is_direct_reference(s))
                return "direct references (name @ url) are not allowed";
        if (strstr(s, "://"))
                return "URLs are not allowed: only package requirements";
        if (strchr(s, '$'))
                return "environment variables are not allowed";
        if (s[0] == '.' || s[0] == '/' || (s[0] == '~' && s[1] != '=') || strchr(s, '/') || strchr(s, '\\'))
                return "paths are not allowed: only package requirements";
        reason = python_grammar(s, ret_name_len);
        if (reason)
                return reason;
        /* pip takes a name with an archive's extension for a file in its working directory. */
        for (size_t i = 0; i < ELEMENTSOF(archive_extensions); i++) {
                size_t n = *ret_name_len, le = strlen(archive_extensions[i]);

                if (n > le && strncasecmp(s + n - le, archive_extensions[i], le) == 0)
                        return "paths are not allowed: a name ending like an archive file is taken for one";
        }
        return NULL;
}

/* ---- nodejs: npm specs ---- */

static bool has_suffix_nocase(const char *s, const char *suffix) {
        size_t ls = strlen(s), lx = strlen(suffix);

        return ls >= lx && strcasecmp(s + ls - lx, suffix) == 0;
}

/* A name or a scope: URL-safe, not starting with '.' or '_'. */
static bool npm_part_is_valid(const char *p, size_t len) {
        if (len == 0 || p[0] == '.' || p[0] == '_')
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_alnum(p[i]) && !in_set(p[i], "-._~"))
                        return false;
        return true;
}

/* The length of the name at the start of spec (up to the '@' of a range), 0 when invalid. */
static size_t npm_name_length(const char *spec) {
        const char *slash, *at;

        if (spec[0] == '@') {
                slash = strchr(spec, '/');
                if (!slash || !npm_part_is_valid(spec + 1, (size_t) (slash - spec - 1)))
                        return 0;
                at = strchr(slash + 1, '@');
                if (!at)
                        at = spec + strlen(spec);
                if (memchr(slash + 1, '/', (size_t) (at - slash - 1)) ||
                    !npm_part_is_valid(slash + 1, (size_t) (at - slash - 1)))
                        return 0;
        } else {
                at = strchr(spec, '@');
                if (!at)
                        at = spec + strlen(spec);
                if (memchr(spec, '/', (size_t) (at - spec)) ||
                    !npm_part_is_valid(spec, (size_t) (at - spec)))
                        return 0;
        }
        if ((size_t) (at - spec) > NPM_NAME_MAX)
                return 0;
        return (size_t) (at - spec);
}

bool requirement_npm_name_is_valid(const char *name) {
        size_t len;

        if (!name)
                return false;
        len = npm_name_length(name);
        return len > 0 && name[len] == '\0';
}

static const char *npm_refusal(const char *s, bool argument, bool *ret_tarball, size_t *ret_name_len) {
        size_t len;

        *ret_tarball = false;
        if (s[0] == '-')
                return "options are not allowed: only package specs (name, name@range, @scope/name@range)";
        if (strstr(s, "://") || strchr(s, ':'))
                return "URLs and protocols (git:, file:, npm:, http:) are not allowed: only package specs";
        if (s[0] == '/' && argument) {
                size_t n = strlen(s);

                if (n < 5 || !streq(s + n - 4, ".tgz"))
                        return "a path must name a package tarball ending in .tgz";
                *ret_tarball = true;
                return NULL;
        }
        /* npm takes "x.tgz", "x.tar" and "x.tar.gz" for files, whatever comes before. */
        if (in_set(s[0], "./~") || strchr(s, '\\') || has_suffix_nocase(s, ".tgz") ||
            has_suffix_nocase(s, ".tar") || has_suffix_nocase(s, ".tar.gz"))
                return argument ? "paths must be absolute and name a .tgz file"
                                : "paths are not allowed: only package specs";
        len = npm_name_length(s);
        if (len == 0) {
                const char *at = strchr(s + (s[0] == '@'), '@');
                size_t upto = at ? (size_t) (at - s) : strlen(s);

                if (s[0] != '@' && memchr(s, '/', upto))
                        return "repositories (user/repo) are not allowed: only package specs";
                return "invalid package name: expected name or @scope/name (letters, digits, '-', '.', '_', "
                       "'~')";
        }
        if (s[len] == '@') {
                const char *range = s + len + 1;

                if (!*range)
                        return "a version range must follow '@'";
                for (const char *p = range; *p; p++)
                        if (!is_alnum(*p) && !in_set(*p, " ._*^~<>=|+-"))
                                return "invalid version range or tag";
        }
        *ret_name_len = len;
        return NULL;
}

/* ---- one requirement ---- */

/* The grammar of language's requirements (its descriptor says), or -EINVAL for no language of ours. */
static int grammar_of(Language language, RequirementsGrammar *ret) {
        const Runtime *rt = runtime_get(language);

        if (!rt)
                return -EINVAL;
        *ret = rt->requirements;
        return 0;
}

/* Why s is refused in grammar, or NULL; the length of its name, and whether it names a tarball. */
static const char *grammar_refusal(RequirementsGrammar grammar, const char *s, bool argument,
                                   bool *ret_tarball, size_t *ret_name_len) {
        switch (grammar) {
        case REQUIREMENTS_PEP508:
                return python_refusal(s, ret_name_len);
        case REQUIREMENTS_NPM:
                return npm_refusal(s, argument, ret_tarball, ret_name_len);
        case _REQUIREMENTS_GRAMMAR_MAX:
                break;
        }
        return "no grammar";
}

/* The key that deduplicates: PEP 503's normalized name, or npm's name as written. */
static char *grammar_name(RequirementsGrammar grammar, const char *s, size_t name_len) {
        switch (grammar) {
        case REQUIREMENTS_PEP508:
                return python_name_normalize(s, name_len);
        case REQUIREMENTS_NPM:
        case _REQUIREMENTS_GRAMMAR_MAX:
                break;
        }
        return strndup(s, name_len);
}

/* Validates s, already trimmed; prefix starts the error message. */
static int parse_trimmed(Language language, const char *s, bool argument, const char *prefix,
                         Requirement *ret, char **reterr) {
        _cleanup_free_ char *name = NULL, *text = NULL;
        const char *reason = NULL;
        RequirementsGrammar grammar;
        size_t name_len = 0;
        bool tarball = false;

        if (grammar_of(language, &grammar) < 0)
                return -EINVAL;
        if (!*s)
                return refuse(reterr, prefix, s, "empty");
        if (strlen(s) > REQUIREMENT_LINE_MAX)
                return refuse(reterr, prefix, s, "too long");
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 && *p != '\t')
                        return refuse(reterr, prefix, s, "control characters are not allowed");
                else if ((unsigned char) *p >= 0x7f)
                        return refuse(reterr, prefix, s, "only ASCII characters are allowed");

        reason = grammar_refusal(grammar, s, argument, &tarball, &name_len);
        if (reason)
                return refuse(reterr, prefix, s, reason);

        if (tarball) {
                struct stat st;

                if (stat(s, &st) < 0)
                        return refuse(reterr, prefix, s, strerror(errno));
                if (!S_ISREG(st.st_mode))
                        return refuse(reterr, prefix, s, "not a regular file");
        } else {
                name = grammar_name(grammar, s, name_len);
                if (!name)
                        return -ENOMEM;
        }
        text = strdup(s);
        if (!text)
                return -ENOMEM;
        if (ret)
                *ret = (Requirement){ .name = TAKE_PTR(name), .text = TAKE_PTR(text), .tarball = tarball };
        return 0;
}

/* A copy of s without leading and trailing blanks. */
static char *strip(const char *s, size_t len) {
        while (len > 0 && (is_blank(*s) || *s == '\r' || *s == '\n')) {
                s++;
                len--;
        }
        while (len > 0 && (is_blank(s[len - 1]) || s[len - 1] == '\r' || s[len - 1] == '\n'))
                len--;
        return strndup(s, len);
}

int requirement_parse(Language language, const char *arg, Requirement *ret, char **reterr) {
        _cleanup_free_ char *s = NULL;

        if (!arg)
                return -EINVAL;
        s = strip(arg, strlen(arg));
        if (!s)
                return -ENOMEM;
        return parse_trimmed(language, s, /* argument= */ true, "", ret, reterr);
}

int requirement_check(Language language, const char *arg, char **reterr) {
        return requirement_parse(language, arg, NULL, reterr);
}

/* Whether s is a package name alone, without a version. */
static bool grammar_name_alone(RequirementsGrammar grammar, const char *s) {
        switch (grammar) {
        case REQUIREMENTS_PEP508:
                return s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")] ==
                       '\0';
        case REQUIREMENTS_NPM:
                return requirement_npm_name_is_valid(s);
        case _REQUIREMENTS_GRAMMAR_MAX:
                break;
        }
        return false;
}

int requirement_name_parse(Language language, const char *arg, char **ret_name, char **reterr) {
        _cleanup_(requirement_done) Requirement req = { 0 };
        RequirementsGrammar grammar;
        int r;

        r = requirement_parse(language, arg, &req, reterr);
        if (r < 0)
                return r;
        if (req.tarball)
                return refuse(reterr, "", req.text, "name the package to remove, not a tarball");
        r = grammar_of(language, &grammar);
        if (r < 0)
                return r;
        if (!grammar_name_alone(grammar, req.text))
                return refuse(reterr, "", req.text, "expected a package name alone, without a version");
        if (ret_name)
                *ret_name = TAKE_PTR(req.name);
        return 0;
}

void requirement_done(Requirement *req) {
        if (!req)
                return;
        free(req->name);
        free(req->text);
        *req = (Requirement){ 0 };
}

/* ---- sets ---- */

int requirement_set_put(RequirementSet *set, Requirement *req) {
        if (!req->name || !req->text)
                return -EINVAL;
        for (size_t i = 0; i < set->n; i++)
                if (streq(set->items[i].name, req->name)) {
                        requirement_done(&set->items[i]);
                        set->items[i] = *req;
                        *req = (Requirement){ 0 };
                        return 0;
                }
        if (set->n >= REQUIREMENTS_MAX)
                return -E2BIG;
        if (set->n == set->allocated) {
                size_t na = set->allocated ? set->allocated * 2 : 16;
                Requirement *items = reallocarray(set->items, na, sizeof(Requirement));

                if (!items)
                        return -ENOMEM;
                set->items = items;
                set->allocated = na;
        }
        set->items[set->n++] = *req;
        *req = (Requirement){ 0 };
        return 0;
}

void requirement_set_done(RequirementSet *set) {
        if (!set)
                return;
        for (size_t i = 0; i < set->n; i++)
                requirement_done(&set->items[i]);
        free(set->items);
        *set = (RequirementSet){ 0 };
}

/* ---- files ---- */

/* pip's COMMENT_RE, (^|\s+)#.*$: the offset of the '#' that starts a comment, or len. */
static size_t comment_start(const char *s, size_t len) {
        for (size_t i = 0; i < len; i++)
                if (s[i] == '#' && (i == 0 || is_blank(s[i - 1])))
                        return i;
        return len;
}

static bool is_comment_line(const char *s, size_t len) {
        size_t i = 0;

        while (i < len && is_blank(s[i]))
                i++;
        return i < len && s[i] == '#';
}

static int parse_logical_line(Language language, const char *line, size_t len, const char *origin,
                              unsigned lineno, RequirementSet *set, char **reterr) {
        _cleanup_(requirement_done) Requirement req = { 0 };
        _cleanup_free_ char *s = NULL, *prefix = NULL;
        int r;

        s = strip(line, comment_start(line, len));
        if (!s)
                return -ENOMEM;
        if (!*s)
                return 0;
        if (asprintf(&prefix, "%s:%u: ", origin, lineno) < 0)
                return -ENOMEM;
        r = parse_trimmed(language, s, /* argument= */ false, prefix, &req, reterr);
        if (r < 0)
                return r;
        r = requirement_set_put(set, &req);
        if (r == -E2BIG && reterr &&
            asprintf(reterr, "%s:%u: more than %u requirements", origin, lineno, REQUIREMENTS_MAX) < 0)
                return -ENOMEM;
        return r;
}

int requirements_parse(Language language, const char *text, const char *origin, RequirementSet *set,
                       char **reterr) {
        _cleanup_free_ char *joined = NULL;
        size_t joined_len = 0;
        unsigned lineno = 0, first = 0;
        const char *p = text;
        RequirementsGrammar grammar;
        int r;

        if (grammar_of(language, &grammar) < 0)
                return -EINVAL;
        joined = malloc(strlen(text) + 1);
        if (!joined)
                return -ENOMEM;

        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);

                lineno++;
                if (len > 0 && p[len - 1] == '\r')
                        len--;
                /* pip joins a line ending in a backslash with the next, unless it is a comment. */
                if (grammar == REQUIREMENTS_PEP508 && len > 0 && p[len - 1] == '\\' &&
                    !is_comment_line(p, len)) {
                        if (joined_len == 0)
                                first = lineno;
                        memcpy(joined + joined_len, p, len - 1);
                        joined_len += len - 1;
                } else if (joined_len > 0) {
                        if (!is_comment_line(p, len)) {
                                memcpy(joined + joined_len, p, len);
                                joined_len += len;
                        }
                        r = parse_logical_line(language, joined, joined_len, origin, first, set, reterr);
                        if (r < 0)
                                return r;
                        joined_len = 0;
                } else {
                        r = parse_logical_line(language, p, len, origin, lineno, set, reterr);
                        if (r < 0)
                                return r;
                }
                p += nl ? (size_t) (nl - p) + 1 : strlen(p);
        }
        if (joined_len > 0)
                return parse_logical_line(language, joined, joined_len, origin, first, set, reterr);
        return 0;
}

int requirements_read_file(Language language, const char *path, RequirementSet *set, char **reterr) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_full_file(path, REQUIREMENT_FILE_MAX, &text, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                if (r != -ENOMEM && reterr &&
                    asprintf(reterr, "cannot read %s: %s", path,
                             r == -EFBIG ? "larger than 1 MiB" : strerror(-r)) < 0)
                        return -ENOMEM;
                return r;
        }
        if (memchr(text, '\0', len)) {
                if (reterr && asprintf(reterr, "%s: not a text file (it holds NUL bytes)", path) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }
        return requirements_parse(language, text, path, set, reterr);
}
