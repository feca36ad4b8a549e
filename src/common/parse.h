#pragma once
/* parse: the only place numbers are parsed from text (command line, config, environment). Every parser
 * takes the whole string, refuses signs, junk, empty input and overflow, and returns -EINVAL or -ERANGE
 * without touching *ret on failure. */

#include <stdbool.h>
#include <stdint.h>

int parse_uint64(const char *s, uint64_t *ret);
int parse_uint32(const char *s, uint32_t *ret);

/* "512", "64K", "512M", "2G", "1T" (powers of 1024; a trailing "B" or "iB" is accepted: "64MiB"). */
int parse_size(const char *s, uint64_t *ret);

/* Seconds with an optional fraction and unit: "5", "2.5", "500ms", "3s", "1min". Returns microseconds. */
int parse_duration(const char *s, uint64_t *ret_usec);

/* "50%" or "150%": percent of one CPU, as systemd's CPUQuota=. 1% .. 100000%. */
int parse_percent(const char *s, uint32_t *ret);

/* "true/false/yes/no/on/off/1/0", case-insensitive. */
int parse_boolean(const char *s, bool *ret);
