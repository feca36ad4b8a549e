#pragma once
/* netns-template: the network namespace the runs' own namespaces are made from, so that each has a TCP
 * hash table of its own (net.ipv4.tcp_child_ehash_entries, Linux 6.1+).
 *
 * Why: a namespace that shares the host's table costs, when it is torn down, a walk of the host's whole
 * TCP hash table in a kernel worker (inet_twsk_purge(), looking for its TIME_WAIT sockets): 262144
 * buckets on this 2-CPU machine, 0.19 ms of every run, and the table grows with the host's memory. One of
 * its own (NETNS_TCP_HASH_ENTRIES buckets) is dropped whole. The sysctl is read from the namespace that
 * creates a new one, and the host's must not change for that: so the runs' namespaces are created from
 * this one, which is otherwise empty (its loopback down, nothing in it) and only ever entered by a run's
 * child for its unshare() (netns_enter_new(), netns.h).
 *
 * Made once by the runner, before it forks anything that starts runs, in a helper process of its own:
 * that one alone moves into the new namespace, and where /proc/sys is read-only to the runner
 * (ProtectKernelTunables= of difysandbox-runner.service), it makes its own private copy of the mount
 * writable to set the value. */

/* Buckets of each run's TCP hash table: the kernel allows half as many TIME_WAIT sockets (a run that
 * closes more connections to the egress proxy within a minute has the rest closed at once, logged by the
 * kernel as a table overflow), and allocates 8 bytes each. */
#define NETNS_TCP_HASH_ENTRIES 2048U

/* Returns 0 with *ret_fd an fd of the new namespace (close-on-exec), -ENOENT when the kernel has no
 * per-namespace TCP hash tables (runs then share the host's table, as before 6.1), or another negative
 * errno. */
int netns_template_open(int *ret_fd);
