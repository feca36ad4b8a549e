#pragma once
/* languages: where the languages of src/runtime/ meet the sandbox. sandbox/ knows no language; this
 * hands it, for each language of the Language enum and in its order, what a run needs of it
 * (sandbox/run.h's RunLanguage), from the language's descriptor and the configuration. A RunRequest's
 * language is then the Language value itself. */

typedef struct Config Config;
typedef struct RunFailure RunFailure;
typedef struct Sandbox Sandbox;

/* sandbox_new() with every language. cfg must outlive the sandbox (its strings are borrowed). Logs one
 * warning when runs can have no time namespace here (no CAP_SYS_TIME): they still run. */
int languages_sandbox_new(const Config *cfg, Sandbox **ret, RunFailure *reterr);
