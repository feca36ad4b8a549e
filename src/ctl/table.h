#pragma once
/* table: the aligned tables of difysandboxctl's output (stats, deps list): a header row, then cells
 * filled left to right, columns as wide as their widest cell, numbers right-aligned. Non-logging. */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct Table Table;

/* The header names the columns; a NULL-terminated list. */
int table_new(Table **ret, const char *const *header);
Table *table_free(Table *t); /* NULL-safe, returns NULL */

void table_set_align_right(Table *t, size_t column, bool right);

/* Adds one cell (copied) to the current row; a row is complete after as many cells as columns. */
int table_add(Table *t, const char *cell);
int table_addf(Table *t, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Prints the table, each line without trailing blanks. Returns 0 or -EIO. */
int table_print(const Table *t, FILE *f);

static inline void table_freep(Table **t) {
        (void) table_free(*t);
}
