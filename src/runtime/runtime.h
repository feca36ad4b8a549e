#pragma once
/* runtime: per-language knowledge, one descriptor per language (python3.c, nodejs.c): how its
 * interpreter is started (argv, environment, bootstrap that reads the code from fd 3), which system calls
 * it needs beyond the common table of src/sandbox/seccomp-policy.c, which configuration keys name its
 * interpreter and pool, and how its dependencies are installed (package tool, its arguments, the
 * requirements grammar, the generation's subfolder). Callers read the descriptor rather than branch on a
 * language; a branch that remains is a switch without default, which -Wswitch-enum keeps complete.
 * Nothing here touches the process. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/generation.h" /* RUNTIME_PACKAGES_MOUNT */

typedef struct Config Config;
typedef struct SyscallRule SyscallRule;

typedef enum Language {
        LANGUAGE_PYTHON3,
        LANGUAGE_NODEJS,
        _LANGUAGE_MAX,
        _LANGUAGE_INVALID = -EINVAL,
} Language;

/* The package managers the installer (src/manager/installer-*.c) knows how to drive and read. */
typedef enum PackageTool {
        PACKAGE_TOOL_PIP, /* `python -m pip install --target`, from a requirements.txt */
        PACKAGE_TOOL_NPM, /* `npm install --prefix`, into a package.json */
        _PACKAGE_TOOL_MAX,
} PackageTool;

/* What a requirement may look like (src/manager/requirements.c). */
typedef enum RequirementsGrammar {
        REQUIREMENTS_PEP508, /* name[extras] <specifiers> ; <marker>, '\' continues a line */
        REQUIREMENTS_NPM,    /* name, name@range, @scope/name@range, an absolute path to a .tgz */
        _REQUIREMENTS_GRAMMAR_MAX,
} RequirementsGrammar;

typedef struct Runtime {
        Language language;
        const char *name;                     /* "python3", "nodejs": API name and runtime tree directory */
        const char *const *argv_tail;         /* arguments after the interpreter path, NULL-terminated */
        const char *const *network_argv_tail; /* the same for a run with network */
        const char *const *environment;       /* the whole environment of a run without network */
        const SyscallRule *rules;             /* language rows, sorted by name */
        size_t n_rules;

        /* Its configuration: the key that names the interpreter, and where Config keeps the interpreter,
         * pool_size.<name> and pool_preload.<name> (offsetof(Config, ...); src/config/config-file.c's
         * rows of the same keys fill them). */
        const char *interpreter_key;
        size_t interpreter_offset, pool_size_offset, preload_offset;

        /* Its dependencies (src/manager/): the package tool, its name in logs and messages, the fixed
         * arguments the installer gives it (before the generation's paths), the subfolder of a
         * generation it installs into (what the bootstrap puts on the import path), and the grammar of
         * its requirements. */
        PackageTool package_tool;
        const char *package_tool_name;
        const char *const *install_args;
        const char *packages_subdir;
        RequirementsGrammar requirements;

        /* The command that builds its runtime tree (scripts/difysandbox-prepare-runtime, whose per-language
         * steps are the other place a new language is written). */
        const char *tree_builder;
} Runtime;

/* The accepted names, as usage texts and error messages say them; tests/unit/test-runtime.c checks that
 * it lists every descriptor's name, in the enum's order. */
#define RUNTIME_LANGUAGE_NAMES "python3 or nodejs"

const Runtime *runtime_get(Language language);
Language language_from_string(const char *s);
const char *language_to_string(Language language);

/* The interpreter path from the config; the runtime tree holds it at the same absolute path. */
const char *runtime_interpreter(const Runtime *rt, const Config *cfg);
/* The modules a prepared interpreter of the warm pool imports before it waits for its code
 * (pool_preload.<language>), and how many prepared runs the pool keeps (pool_size.<language>, 0 when
 * prewarm is off). The bootstrap reads the list from DIFYSANDBOX_PRELOAD, comma-separated, and removes
 * the variable before the code runs; a module that fails to import is skipped. */
#define RUNTIME_PRELOAD_VARIABLE "DIFYSANDBOX_PRELOAD"
/* The fd the bootstrap closes after its preloads, before it reads its code (ENTER_FD_READY). */
#define RUNTIME_READY_FD 7
#define RUNTIME_READY_FD_STR "7"
char *const *runtime_pool_preload(const Runtime *rt, const Config *cfg);
unsigned runtime_pool_size(const Runtime *rt, const Config *cfg);

/* Defined by python3.c and nodejs.c. */
const Runtime *python3_runtime(void);
const Runtime *nodejs_runtime(void);
