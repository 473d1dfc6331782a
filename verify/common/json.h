/* json.h - a small streaming JSON writer (pure C). */
#ifndef P2PV_JSON_H
#define P2PV_JSON_H

#include <stdio.h>

#define PVJ_MAX_DEPTH 32

typedef struct {
    FILE *f;
    int depth;
    int count[PVJ_MAX_DEPTH]; /* members written at each level */
    int error;
} pv_json;

void pvj_init(pv_json *j, FILE *f);
/* key is NULL inside arrays and for the top-level value */
void pvj_obj(pv_json *j, const char *key);
void pvj_end_obj(pv_json *j);
void pvj_arr(pv_json *j, const char *key);
void pvj_end_arr(pv_json *j);
void pvj_str(pv_json *j, const char *key, const char *v); /* NULL -> null */
void pvj_int(pv_json *j, const char *key, long long v);
void pvj_uint(pv_json *j, const char *key, unsigned long long v);
void pvj_num(pv_json *j, const char *key, double v, int decimals); /* NaN/inf -> null */
void pvj_bool(pv_json *j, const char *key, int v);
void pvj_null(pv_json *j, const char *key);
/* Finish: newline at the end.  Returns 0 when balanced and no error. */
int pvj_finish(pv_json *j);
/* Write s as a JSON string literal (quotes included). */
void pvj_write_string(FILE *f, const char *s);

#endif
