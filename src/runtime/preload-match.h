#pragma once
/* preload-match: whether a run's code names one of the warm pool's preload modules (pool_preload), so
 * that the runner hands it a prepared run with those modules imported, and any other code a light one
 * (issue 25: `print(1)` took a preloaded run, whose imports were then paid for again by the next refill).
 * A hint for choosing among equally isolated prepared runs, never a security decision: a wrong answer
 * costs an import's time or a preloaded run, nothing else. Pure logic over the code's bytes.
 *
 * A module is named when its name appears as a whole word: not preceded by a letter, digit or '_', and
 * not followed by one ("import pandas as pd", "from numpy import", "require('lodash')"; not "mypandas"
 * or "pandas_helper"); a dotted module by its top-level name ("numpy.linalg": numpy). The worker asks, on
 * the code it sends (it parses untrusted requests; the runner parses nothing of the code). */

#include <stdbool.h>
#include <stddef.h>

/* modules: a NULL-terminated list (NULL or empty: none is named). */
bool code_names_module(const char *code, size_t len, char *const *modules);
