/* fmt.c - matrix formatting (pure C). */
#include "fmt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pv_fmt_str_matrix(FILE *f, const char *corner, int n, const int *ids, const char *cells, int stride,
                       size_t cellsz, int width)
{
    fprintf(f, "%6s", corner);
    for (int c = 0; c < n; c++)
        fprintf(f, " %*d", width, ids[c]);
    fputc('\n', f);
    for (int r = 0; r < n; r++) {
        fprintf(f, "%6d", ids[r]);
        for (int c = 0; c < n; c++)
            fprintf(f, " %*s", width, cells + ((size_t)r * (size_t)stride + (size_t)c) * cellsz);
        fputc('\n', f);
    }
}

#define CELLSZ 24

void pv_fmt_num_matrix(FILE *f, const char *corner, int n, const int *ids,
                       const double vals[PV_MAX_GPUS][PV_MAX_GPUS], int decimals, int width, int skip_diag)
{
    char *cells = calloc((size_t)n * (size_t)n, CELLSZ);
    if (!cells)
        return;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            char *cell = cells + ((size_t)r * (size_t)n + (size_t)c) * CELLSZ;
            double v = vals[ids[r]][ids[c]];
            if (skip_diag && r == c)
                snprintf(cell, CELLSZ, "-");
            else if (isnan(v))
                snprintf(cell, CELLSZ, "n/a");
            else
                snprintf(cell, CELLSZ, "%.*f", decimals, v);
        }
    pv_fmt_str_matrix(f, corner, n, ids, cells, n, CELLSZ, width);
    free(cells);
}

void pv_fmt_pct_matrix(FILE *f, const char *corner, int n, const int *ids,
                       const double vals[PV_MAX_GPUS][PV_MAX_GPUS],
                       const pv_link limit[PV_MAX_GPUS][PV_MAX_GPUS], double factor, int width)
{
    char *cells = calloc((size_t)n * (size_t)n, CELLSZ);
    if (!cells)
        return;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            char *cell = cells + ((size_t)r * (size_t)n + (size_t)c) * CELLSZ;
            double v = vals[ids[r]][ids[c]];
            double lim = limit[ids[r]][ids[c]].gbps * factor;
            if (r == c)
                snprintf(cell, CELLSZ, "-");
            else if (isnan(v) || lim <= 0.0)
                snprintf(cell, CELLSZ, "n/a");
            else
                snprintf(cell, CELLSZ, "%.1f%%", 100.0 * v / lim);
        }
    pv_fmt_str_matrix(f, corner, n, ids, cells, n, CELLSZ, width);
    free(cells);
}
