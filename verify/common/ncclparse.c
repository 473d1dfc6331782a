/* ncclparse.c - NCCL debug log and child protocol parsing (pure C). */
#include "ncclparse.h"
#include "sysparse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* "<rank>[<anything>]" */
static const char *parse_rank(const char *p, int *rank)
{
    if (!isdigit((unsigned char)*p))
        return NULL;
    char *end = NULL;
    long v = strtol(p, &end, 10);
    if (v < 0 || v > 1000000)
        return NULL;
    p = end;
    if (*p != '[')
        return NULL;
    const char *close = strchr(p, ']');
    if (!close)
        return NULL;
    *rank = (int)v;
    return close + 1;
}

int pv_nccl_parse_line(const char *line, pv_nccl_conn *c)
{
    if (!line)
        return 0;
    const char *p = strstr(line, "NCCL INFO ");
    p = p ? p + 10 : line;
    p = strstr(p, "Channel ");
    if (!p)
        return 0;
    p += 8;
    if (!isdigit((unsigned char)*p))
        return 0;
    char *end = NULL;
    long ch = strtol(p, &end, 10);
    p = end;
    if (*p == '/') { /* "/0" connection index */
        p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    p = skip_ws(p);
    if (*p != ':')
        return 0;
    p = skip_ws(p + 1);
    int a = -1, b = -1;
    p = parse_rank(p, &a);
    if (!p)
        return 0;
    p = skip_ws(p);
    if (strncmp(p, "->", 2) != 0)
        return 0;
    p = skip_ws(p + 2);
    p = parse_rank(p, &b);
    if (!p)
        return 0;
    p = skip_ws(p);
    if (*p == '[') { /* [send] / [receive] */
        const char *close = strchr(p, ']');
        if (!close)
            return 0;
        p = skip_ws(close + 1);
    }
    if (strncmp(p, "via ", 4) != 0)
        return 0;
    p = skip_ws(p + 4);
    size_t l = strcspn(p, "\r\n");
    while (l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t'))
        l--;
    if (l == 0)
        return 0;
    if (l >= sizeof(c->transport))
        l = sizeof(c->transport) - 1;
    memcpy(c->transport, p, l);
    c->transport[l] = '\0';
    c->channel = (int)ch;
    c->src_rank = a;
    c->dst_rank = b;
    return 1;
}

int pv_nccl_parse_log(const char *text, pv_nccl_run *run)
{
    run->nconn = 0;
    run->conn_truncated = 0;
    if (!text)
        return 0;
    const char *p = text;
    char line[1024];
    while (pv_next_line(&p, line, sizeof line, NULL)) {
        pv_nccl_conn c;
        if (pv_nccl_parse_line(line, &c)) {
            int dup = 0;
            for (int i = 0; i < run->nconn; i++) {
                pv_nccl_conn *o = &run->conn[i];
                if (o->channel == c.channel && o->src_rank == c.src_rank && o->dst_rank == c.dst_rank &&
                    strcmp(o->transport, c.transport) == 0) {
                    dup = 1;
                    break;
                }
            }
            if (!dup) {
                if (run->nconn < PV_NCCL_MAX_CONN)
                    run->conn[run->nconn++] = c;
                else
                    run->conn_truncated = 1;
            }
        }
    }
    return run->nconn;
}

void pv_nccl_transport_class(const char *t, char *out, size_t outlen)
{
    size_t l = strcspn(t, "/ ");
    if (l >= outlen)
        l = outlen - 1;
    memcpy(out, t, l);
    out[l] = '\0';
}

int pv_nccl_parse_child(const char *text, pv_nccl_run *run, int *version)
{
    int done = 0, err = 0;
    run->nsizes = 0;
    if (!text)
        return -1;
    const char *p = text;
    char line[1024];
    while (pv_next_line(&p, line, sizeof line, NULL)) {
        if (strncmp(line, "VERSION ", 8) == 0) {
            if (version)
                *version = atoi(line + 8);
        } else if (strncmp(line, "SIZE ", 5) == 0) {
            unsigned long long bytes = 0, nbad = 0;
            long long first = -1;
            double t = 0, alg = 0, bus = 0, e = 0, f = 0;
            if (sscanf(line + 5, "%llu %lf %lf %lf %llu %lld %lf %lf", &bytes, &t, &alg, &bus, &nbad, &first, &e,
                       &f) == 8 &&
                run->nsizes < PV_MAX_SIZES) {
                int k = run->nsizes++;
                run->bytes[k] = bytes;
                run->time_us[k] = t;
                run->algbw[k] = alg;
                run->busbw[k] = bus;
                run->nbad[k] = nbad;
                run->first_bad[k] = first;
                run->expected[k] = e;
                run->found[k] = f;
            } else {
                err = 1;
                snprintf(run->error, sizeof run->error, "malformed child line: %.200s", line);
            }
        } else if (strncmp(line, "ERROR ", 6) == 0) {
            if (!err)
                snprintf(run->error, sizeof run->error, "%.500s", line + 6);
            err = 1;
        } else if (strcmp(line, "DONE") == 0) {
            done = 1;
        }
    }
    if (!done && !err)
        snprintf(run->error, sizeof run->error, "NCCL child ended without reporting DONE");
    return (done && !err) ? 0 : -1;
}
