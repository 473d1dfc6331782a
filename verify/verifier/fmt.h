/* fmt.h - matrix/table formatting (pure C). */
#ifndef P2PV_FMT_H
#define P2PV_FMT_H

#include <stdio.h>
#include "results.h"

/* Print an n x n matrix labelled by ids[], cells row-major with row stride
 * `stride` cells of cellsz bytes each.  Cells right-aligned in `width`. */
void pv_fmt_str_matrix(FILE *f, const char *corner, int n, const int *ids, const char *cells, int stride,
                       size_t cellsz, int width);
/* Same for doubles (row stride PV_MAX_GPUS); NaN prints as "n/a", and
 * with skip_diag the diagonal prints as "-". */
void pv_fmt_num_matrix(FILE *f, const char *corner, int n, const int *ids,
                       const double vals[PV_MAX_GPUS][PV_MAX_GPUS], int decimals, int width, int skip_diag);
/* vals[i][j] / (factor * limit[i][j].gbps) as "81.2%"; "-" on the diagonal,
 * "n/a" where either side is unknown. */
void pv_fmt_pct_matrix(FILE *f, const char *corner, int n, const int *ids,
                       const double vals[PV_MAX_GPUS][PV_MAX_GPUS],
                       const pv_link limit[PV_MAX_GPUS][PV_MAX_GPUS], double factor, int width);

#endif
