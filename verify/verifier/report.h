/* report.h - human-readable and JSON reports (pure C). */
#ifndef P2PV_REPORT_H
#define P2PV_REPORT_H

#include <stdio.h>
#include "results.h"
#include "verdict.h"

/* GPUs taking part in the selected pairs, ascending; returns count. */
int pv_pair_gpus(const pv_results *r, int *ids);
void pv_report_human(FILE *f, const pv_results *r, const pv_verdict *v);
/* One CORRUPTION line (no newline). */
void pv_format_corruption(const pv_int_result *t, char *buf, size_t len);
/* Returns 0 if the JSON writer stayed balanced. */
int pv_report_json(FILE *f, const pv_results *r, const pv_verdict *v);

#endif
