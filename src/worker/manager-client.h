#pragma once
/* manager-client: the worker's side of the control plane, for the HTTP dependency routes (DESIGN §1):
 * asks difysandbox-manager over the system bus to refresh a language's dependencies and waits for the
 * job to end. Runs never need this; only those two routes do. */

#include <stdint.h>

/* Calls RefreshDependencies(language) and waits up to timeout_usec for the job's JobRemoved. Returns 0
 * when the job is done (a new generation is current); otherwise a negative errno with *ret_error set to
 * a line for the API's -500 message: -EHOSTUNREACH (no bus, or no manager on it), -EPROTO (the manager
 * refused, or the job failed: the installer's last line), -ETIMEDOUT, or another -errno. */
int manager_refresh_dependencies(const char *language, uint64_t timeout_usec, char **ret_error);
