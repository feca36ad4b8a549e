#pragma once
/* top: `difysandboxctl top`, a live view of the host's runs in the spirit of systemd-cgtop, refreshed
 * every second: per language the runs per second, their p50/p95 over the last second, pool hits and
 * refusals; runs in flight against max_workers, the queue; and the scopes of the runs with their
 * language, age, CPU and memory. It reads what the runners write (the shared stats file, the admission
 * locks, the runs' cgroups) and needs no manager.
 *
 * On a terminal it redraws in place and reads keys: q quits, s changes the order of the scopes (CPU,
 * memory, age). When stdout is not a terminal it prints plain blocks of lines, one per refresh, no
 * escape sequences. Lines fit the terminal's width (80 columns when unknown). */

typedef struct Config Config;

/* Runs until q (terminal), a signal (SIGINT, SIGTERM), or iterations refreshes (0: no end). Returns 0 or
 * a negative errno, after printing why. */
int top_run(const Config *cfg, unsigned iterations);
