#pragma once
/* fileio: reading a whole fd or file into memory, held to a cap. The one place that loops over read(),
 * so every reader of code, config, cgroup files and runtime metadata has the same bounds. */

#include <stddef.h>

/* Reads fd to its end into a malloc()ed, NUL-terminated buffer. -EFBIG past max bytes. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* The same for the file at path (opened O_RDONLY|O_CLOEXEC|O_NOCTTY). ret_len may be NULL. */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);
