#pragma once
/* netns: the run's own network namespace (DESIGN §3.3; network egress). Every run gets a new, empty
 * one. A run with network also gets its loopback up and, on 127.0.0.1:EGRESS_PROXY_PORT, a listening
 * socket made inside the namespace by the child and handed to the parent, which serves the egress proxy
 * on it from the host's namespace (src/egress): the proxy is the run's only way out. Called in the child,
 * as root, before the credentials go; nothing here allocates. */

#define EGRESS_PROXY_PORT 3128
#define EGRESS_PROXY_URL "http://127.0.0.1:3128"

/* Makes the calling process's network namespace a new one, created from the namespace of template_fd
 * (netns-template.h: with a TCP hash table of its own). Returns 0, or a negative errno: the caller must
 * not go on then (it may be left in the template's namespace). */
int netns_enter_new(int template_fd);

/* Brings lo up and returns a listening TCP socket on 127.0.0.1:EGRESS_PROXY_PORT, close-on-exec. */
int netns_open_proxy_listener(int *ret_fd);

/* Passes fd over the unix socket sock (SCM_RIGHTS); and receives it on the other side. */
int netns_send_fd(int sock, int fd);
int netns_receive_fd(int sock, int *ret_fd);
