/* table: see table.h. */

#include "table.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

struct Table {
        size_t n_columns;
        char **cells; /* header first, row by row */
        size_t n_cells, allocated;
        bool *align_right;
};

int table_new(Table **ret, const char *const *header) {
        _cleanup_(table_freep) Table *t = NULL;
        size_t n = 0;
        int r;

        while (header[n])
                n++;
        if (n == 0)
                return -EINVAL;

        t = calloc(1, sizeof(Table));
        if (!t)
                return -ENOMEM;
        t->n_columns = n;
        t->align_right = calloc(n, sizeof(bool));
        if (!t->align_right)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = table_add(t, header[i]);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->align_right);
        free(t);
        return NULL;
}

void table_set_align_right(Table *t, size_t column, bool right) {
        if (column < t->n_columns)
                t->align_right[column] = right;
}

static int table_add_take(Table *t, char *cell) {
        if (t->n_cells == t->allocated) {
                size_t n = t->allocated ? t->allocated * 2 : 64;
                char **cells = reallocarray(t->cells, n, sizeof(char *));

                if (!cells) {
                        free(cell);
                        return -ENOMEM;
                }
                t->cells = cells;
                t->allocated = n;
        }
        t->cells[t->n_cells++] = cell;
        return 0;
}

int table_add(Table *t, const char *cell) {
        char *copy = strdup(cell ? cell : "");

        if (!copy)
                return -ENOMEM;
        return table_add_take(t, copy);
}

int table_addf(Table *t, const char *format, ...) {
        char *cell;
        va_list ap;
        int r;

        va_start(ap, format);
        r = vasprintf(&cell, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return table_add_take(t, cell);
}

/* Cells on a terminal: one per UTF-8 sequence (package names and numbers are what tables hold). */
static size_t cell_width(const char *s) {
        size_t w = 0;

        for (; *s; s++)
                if (((unsigned char) *s & 0xc0) != 0x80)
                        w++;
        return w;
}

int table_print(const Table *t, FILE *f) {
        _cleanup_free_ size_t *widths = calloc(t->n_columns, sizeof(size_t));

        if (!widths)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cells; i++) {
                size_t w = cell_width(t->cells[i]);

                if (w > widths[i % t->n_columns])
                        widths[i % t->n_columns] = w;
        }

        for (size_t row = 0; row * t->n_columns < t->n_cells; row++) {
                size_t pending = 0; /* blanks owed before the next cell: none at the end of a line */

                for (size_t c = 0; c < t->n_columns && row * t->n_columns + c < t->n_cells; c++) {
                        const char *cell = t->cells[row * t->n_columns + c];
                        size_t pad = widths[c] - cell_width(cell);

                        if (t->align_right[c])
                                pending += pad;
                        if (fprintf(f, "%*s%s", (int) pending, "", cell) < 0)
                                return -EIO;
                        pending = (t->align_right[c] ? 0 : pad) + 2;
                }
                if (fputc('\n', f) == EOF)
                        return -EIO;
        }
        return 0;
}
