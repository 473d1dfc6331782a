/* json.c - streaming JSON writer (pure C). */
#include "json.h"

#include <math.h>
#include <string.h>

void pvj_init(pv_json *j, FILE *f)
{
    memset(j, 0, sizeof(*j));
    j->f = f;
}

void pvj_write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void indent(pv_json *j)
{
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

static void member(pv_json *j, const char *key)
{
    if (j->depth > 0) {
        if (j->count[j->depth] > 0)
            fputc(',', j->f);
        j->count[j->depth]++;
        indent(j);
    } else if (j->count[0]++ > 0) {
        j->error = 1; /* two top-level values */
    }
    if (key) {
        pvj_write_string(j->f, key);
        fputs(": ", j->f);
    }
}

static void open_(pv_json *j, const char *key, char c)
{
    member(j, key);
    fputc(c, j->f);
    if (j->depth + 1 >= PVJ_MAX_DEPTH) {
        j->error = 1;
        return;
    }
    j->depth++;
    j->count[j->depth] = 0;
}

static void close_(pv_json *j, char c)
{
    if (j->depth <= 0) {
        j->error = 1;
        return;
    }
    int had = j->count[j->depth];
    j->depth--;
    if (had)
        indent(j);
    fputc(c, j->f);
}

void pvj_obj(pv_json *j, const char *key) { open_(j, key, '{'); }
void pvj_end_obj(pv_json *j) { close_(j, '}'); }
void pvj_arr(pv_json *j, const char *key) { open_(j, key, '['); }
void pvj_end_arr(pv_json *j) { close_(j, ']'); }

void pvj_str(pv_json *j, const char *key, const char *v)
{
    member(j, key);
    if (v)
        pvj_write_string(j->f, v);
    else
        fputs("null", j->f);
}

void pvj_int(pv_json *j, const char *key, long long v)
{
    member(j, key);
    fprintf(j->f, "%lld", v);
}

void pvj_uint(pv_json *j, const char *key, unsigned long long v)
{
    member(j, key);
    fprintf(j->f, "%llu", v);
}

void pvj_num(pv_json *j, const char *key, double v, int decimals)
{
    member(j, key);
    if (isnan(v) || isinf(v))
        fputs("null", j->f);
    else
        fprintf(j->f, "%.*f", decimals, v);
}

void pvj_bool(pv_json *j, const char *key, int v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void pvj_null(pv_json *j, const char *key)
{
    member(j, key);
    fputs("null", j->f);
}

int pvj_finish(pv_json *j)
{
    fputc('\n', j->f);
    fflush(j->f);
    return (j->depth == 0 && !j->error) ? 0 : -1;
}
