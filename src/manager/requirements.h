#pragma once
/* requirements: what may be handed to pip and npm. Parses and validates the requirement files
 * (dependencies/python-requirements.txt, dependencies/nodejs-packages.txt) and the package arguments of
 * InstallDependencies, for the installer and for the manager, which checks arguments before it starts
 * anything. Only plain requirements pass: for python3 `name[extras] <specifiers> ; <marker>` (PEP 508
 * without a URL), for nodejs `name`, `name@range`, `@scope/name@range`, and as an argument an absolute
 * path to an existing .tgz. Options (-r, -e, --index-url, --hash, ...), URLs, `name @ url`, paths,
 * environment variables and control characters are refused, and nothing starting with '-' ever passes.
 * Nothing here logs: errors come back as a one-line message for the caller to report. */

#include <stdbool.h>
#include <stddef.h>

#include "runtime/runtime.h"

#define REQUIREMENT_FILE_MAX (1U << 20)
#define REQUIREMENT_LINE_MAX 4096U
#define REQUIREMENTS_MAX 10000U

typedef struct Requirement {
        char *name;   /* the key that deduplicates: the PEP 503 normalized name (python3) or the npm name;
                       * NULL for a tarball until the installer has read its package.json */
        char *text;   /* what pip reads as a line of requirements.txt, or npm gets as an argument */
        bool tarball; /* nodejs: text is the absolute path of a .tgz */
} Requirement;

typedef struct RequirementSet {
        Requirement *items;
        size_t n, allocated;
} RequirementSet;

/* Checks one package argument. Returns 0, or -EINVAL with *reterr = "'<arg>': <reason>" (malloc()ed;
 * the argument is quoted with control characters replaced, and shortened), or -ENOMEM. */
int requirement_check(Language language, const char *arg, char **reterr);

/* The same, and fills *ret (free it with requirement_done()). Surrounding blanks are dropped. */
int requirement_parse(Language language, const char *arg, Requirement *ret, char **reterr);
void requirement_done(Requirement *req);

/* A package to remove: its name alone (python3 `name`, nodejs `name` or `@scope/name`), no version,
 * extras or path. Returns 0 with *ret_name the key sets use (PEP 503 normalized for python3), or -EINVAL
 * with *reterr as requirement_check() sets it, or -ENOMEM. */
int requirement_name_parse(Language language, const char *arg, char **ret_name, char **reterr);

/* An npm package name: `name` or `@scope/name`, URL-safe characters, at most 214 bytes. */
bool requirement_npm_name_is_valid(const char *name);

/* Parses the text of a requirement file: for python3 pip's format (comments from a '#' at the start or
 * after a blank, lines joined by a trailing backslash), for nodejs one npm spec per line (comments as
 * for pip, no continuations, no paths). Each requirement is put into set (requirement_set_put()).
 * Returns 0, or -EINVAL with *reterr = "<origin>:<line>: '<text>': <reason>", or -E2BIG past
 * REQUIREMENTS_MAX, or -ENOMEM. */
int requirements_parse(Language language, const char *text, const char *origin, RequirementSet *set,
                       char **reterr);

/* requirements_parse() of the file at path; a missing file (ENOENT) is empty. An unreadable, oversized
 * or binary file is an error with *reterr naming it. */
int requirements_read_file(Language language, const char *path, RequirementSet *set, char **reterr);

/* Moves *req (its name set) into set: a requirement of the same name is replaced in place, so the
 * later one wins and the order of first appearance stays. *req is emptied on success. */
int requirement_set_put(RequirementSet *set, Requirement *req);
void requirement_set_done(RequirementSet *set);
