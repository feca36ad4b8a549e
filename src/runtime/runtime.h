#pragma once
/* runtime: per-language knowledge. Each language (python3.c, nodejs.c) says how its interpreter is
 * started (argv, environment, bootstrap that reads the code from fd 3) and which system calls it needs
 * beyond the common table of src/sandbox/seccomp-policy.c. Nothing here touches the process. */

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

typedef struct Runtime {
        Language language;
        const char *name;                     /* "python3", "nodejs": API name and runtime tree directory */
        const char *const *argv_tail;         /* arguments after the interpreter path, NULL-terminated */
        const char *const *network_argv_tail; /* the same for a run with network */
        const char *const *environment;       /* the whole environment of a run without network */
        const SyscallRule *rules;             /* language rows, sorted by name */
        size_t n_rules;
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
char *const *runtime_pool_preload(const Runtime *rt, const Config *cfg);
unsigned runtime_pool_size(const Runtime *rt, const Config *cfg);

/* Defined by python3.c and nodejs.c. */
const Runtime *python3_runtime(void);
const Runtime *nodejs_runtime(void);
