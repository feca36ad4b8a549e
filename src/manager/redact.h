#pragma once
/* redact: takes the user and password out of URLs in text that is printed (a job's Log, the journal, the
 * installer's errors): python_pip_mirror_url, npm_registry and the proxies may hold them
 * (http://USER:PASSWORD@HOST), and what is printed is readable by people who may not hold them. Used by
 * the manager (job.c) and the installer (installer-*.c). */

/* Replaces the user information of every "scheme://user[:password]@host" in s with "***", in place (the
 * text only shrinks). Returns s. */
char *redact_url_credentials(char *s);
