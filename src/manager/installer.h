#pragma once
/* installer: difysandbox-installer (DESIGN §4), which builds one dependency generation of a language with
 * pip or npm; its command line and the protocol it speaks to the manager are at the top of
 * installer-main.c. Its parts:
 *   installer-main.c      the command line, the protocol on stdout (progress, generation, error), and the
 *                         steps in order (installer_run()): checks, the generation begun under its lock,
 *                         signals, the commit, and the abort on failure
 *   installer-packages.c  the package set (the requirement file, the current generation's
 *                         extra-packages.txt, the PACKAGE arguments, the tarballs copied into the
 *                         generation) and the files written into the generation for it
 *   installer-tool.c      running pip or npm: its arguments and environment, its process group, and its
 *                         output, forwarded and read for progress and for the error that explains a failure
 * Nothing else includes this: the manager knows the installer only by its protocol (job.c). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* What the installer keeps in the generation only while it builds it. */
#define HOME_DIR ".home"
#define TMP_DIR ".tmp"
#define NPM_CACHE_DIR ".npm-cache"
/* The PATH of the programs the installer runs: tar, pip, npm. */
#define TOOL_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

typedef struct RequirementSet RequirementSet;

typedef struct Installer {
        /* The command line (installer-main.c). */
        Language language;
        const char *packages_dir;
        const char *requirements; /* NULL: none */
        const char *index_url, *registry;
        const char *python, *npm;
        char *const *packages; /* the PACKAGE arguments */
        size_t n_packages;
        bool remove; /* --remove: the PACKAGE arguments are names to take out of the set */
        bool settings_on_stdin;
        char *settings; /* what came on stdin; index_url and registry may point into it */

        /* The generation being built (installer_run()). */
        uint64_t number; /* the generation being built, 0 before generation_begin() */
        int lock_fd;
        char *gen_path; /* <packages_dir>/.gen-<N>.tmp */
        int signal_fd;
        unsigned progress; /* the last one reported */
} Installer;

/* installer-main.c */
/* Sets *reterr (unless already set) to the formatted message, in which %m is strerror(-r); returns r. */
int failf(char **reterr, int r, const char *format, ...) __attribute__((format(printf, 3, 4)));
/* Prints the protocol line "progress <percent> <text>"; percent is held to 100 and never decreases. */
void report_progress(Installer *inst, unsigned percent, const char *format, ...)
        __attribute__((format(printf, 3, 4)));

/* installer-packages.c */
/* Builds the generation's package set (all) and what stays for later refreshes (extra). Tarballs are
 * copied into the generation, and all and extra name the copies. */
int installer_gather_packages(Installer *inst, RequirementSet *all, RequirementSet *extra, char **reterr);
/* Writes extra-packages.txt, and requirements.txt (python3) or package.json (nodejs), into the
 * generation. */
int installer_write_generation_files(const Installer *inst, const RequirementSet *all,
                                     const RequirementSet *extra, char **reterr);

/* installer-tool.c */
/* Runs pip or npm on all in the generation and forwards its output, indented, with progress lines. A
 * signal on inst->signal_fd stops it: -EINTR. A failure of the tool is -EPROTO with *reterr explaining
 * it from the tool's output. */
int installer_install(Installer *inst, const RequirementSet *all, char **reterr);
/* The program the installer runs for its language's package tool: --python for pip, --npm for npm. */
const char *installer_tool_path(const Installer *inst);
