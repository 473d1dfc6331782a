/* dp_nccl.c - p2p-doctor's reader of NCCL logs (NCCL_DEBUG=INFO) and
 * nccl-tests' output (pure C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncclparse.h"
#include "sysparse.h"

/* ------------------------------------------------------------ NCCL */

/* NCCL_P2P_DISABLE in a line: NCCL's own "NCCL_P2P_DISABLE set by environment
 * to 1" (the run it is in), "export NCCL_P2P_DISABLE=1" (every later run),
 * "NCCL_P2P_DISABLE=1 ./all_reduce_perf ..." (the next run); unset and 0 undo. */
static void nc_p2p_env(dp_ctx *c, const char *line, const char *p)
{
    const char *v = p + 16;
    if (strstr(line, "unset NCCL_P2P_DISABLE")) {
        c->nc_env_off = 0;
        return;
    }
    int off;
    if (!strncmp(v, " set by environment to ", 23))
        off = atoi(v + 23) != 0;
    else if (*v == '=')
        off = atoi(v + 1 + (v[1] == '"' || v[1] == '\'')) != 0;
    else
        return;
    if (strstr(line, "NCCL INFO") && c->nc_run)
        c->nc_off = off;
    else if (strstr(line, "export "))
        c->nc_env_off = off;
    else
        c->nc_cmd_off = off;
}

/* The end of an nccl-tests run: its bus bandwidth, kept per P2P state (the
 * better of two runs of one state). */
void dp_nc_close_run(dp_ctx *c)
{
    if (!c->nc_run)
        return;
    c->nc_run = 0;
    dr_busbw *b = &c->m->sys.nccl_bus[c->nc_off ? 1 : 0], *r = &c->nc_bus;
    if (r->avg <= 0 && r->peak <= 0)
        return;
    if ((r->avg > 0 && r->avg > b->avg) || (b->avg <= 0 && r->peak > b->peak))
        *b = *r;
}

static void nc_open_run(dp_ctx *c)
{
    dp_nc_close_run(c);
    c->nc_run = 1;
    c->nc_off = c->nc_env_off || c->nc_cmd_off;
    c->nc_cmd_off = 0;
    c->nc_bus.avg = c->nc_bus.peak = -1;
    c->nc_bus.ngpus = 0;
    c->nc_bus.dev[0] = c->nc_bus.dev[1] = -1;
    dp_ev(c, &c->nc_bus.ev);
}

/* A result row of nccl-tests: its out-of-place busbw. */
static void nc_row(dp_ctx *c, char **tok, int nt)
{
    char *end = NULL;
    int k = c->nc_busbw_col;
    if (!c->nc_run || k < 0 || k >= nt)
        return;
    double v = strtod(tok[k], &end);
    if (end != tok[k] && !*end && isfinite(v) && v > c->nc_bus.peak)
        c->nc_bus.peak = v;
}

void dp_nccl(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p;
    if ((p = strstr(line, "NCCL_P2P_DISABLE")))
        nc_p2p_env(c, line, p);
    if (line[0] == '#' && strstr(line, "nThread ") && strstr(line, "nGpus ")) {
        nc_open_run(c);
        dp_kind(c, DR_K_NCCL);
        return;
    }
    if ((p = strstr(line, "# Avg bus bandwidth")) && (p = strchr(p, ':'))) {
        char *end = NULL;
        double v = strtod(p + 1, &end);
        if (c->nc_run && end != p + 1 && isfinite(v) && v > 0) {
            c->nc_bus.avg = v;
            dp_ev(c, &c->nc_bus.ev);
        }
        dp_nc_close_run(c);
        dp_kind(c, DR_K_NCCL);
        return;
    }
    /* "comm 0x.. rank 4 nranks 8 cudaDev 4 nvmlDev 4 busId 91000 commId 0x.. - Init COMPLETE", and the
     * same fields at the end of a run: "comm 0x.. rank 4 nranks 8 cudaDev 4 busId 91000 - Destroy COMPLETE" */
    if (((p = strstr(line, "Init COMPLETE")) || (p = strstr(line, "Destroy COMPLETE"))) && (p = strstr(line, " rank "))) {
        int rank = atoi(p + 6);
        const char *d = strstr(line, "cudaDev ");
        const char *b = strstr(line, "busId ");
        if (d && rank >= 0 && rank < MAX_RANKS) {
            int dev = atoi(d + 8);
            c->rank_dev[rank] = dev;
            if (b) {
                unsigned long long v = strtoull(b + 6, NULL, 16);
                char bb[16];
                snprintf(bb, sizeof bb, "%04llx:%02llx:%02llx.%llx", (v >> 20) & 0xffff, (v >> 12) & 0xff,
                         (v >> 4) & 0x1f, v & 0x7);
                dp_rec_get(c, "nccl", DR_NS_CUDA, dev, bb, NULL);
            }
        }
        dp_kind(c, DR_K_NCCL);
        return;
    }
    /* NCCL 1.x tests: "#   Rank  0 uses device  0 [0x05] Tesla M40 24GB", also with its "#" lost
     * in a Markdown paste */
    if ((p = strstr(line, "Rank ")) && strstr(line, " uses device ") && strchr(line, '[')) {
        const char *q = dp_skip_ws(line);
        if (*q == '#')
            q = dp_skip_ws(q + 1);
        int rank = -1, dev = -1, n = 0;
        if (sscanf(q, "Rank %d uses device %d%n", &rank, &dev, &n) == 2 && dev >= 0 && dev < DR_MAX_GPUS) {
            const char *lb = strchr(q + n, '['), *rb = lb ? strchr(lb, ']') : NULL;
            char b[16] = "", name[96] = "";
            unsigned bus = 0;
            if (lb && rb && sscanf(lb + 1, "0x%x", &bus) == 1)
                snprintf(b, sizeof b, "0000:%02x:00.0", bus & 0xff);
            if (rb)
                dp_trim_copy(name, sizeof name, rb + 1, rb + strlen(rb));
            dp_rec_get(c, "nccl", DR_NS_CUDA, dev, b[0] ? b : NULL, name[0] ? name : NULL);
            if (rank >= 0 && rank < MAX_RANKS)
                c->rank_dev[rank] = dev;
            dp_kind(c, DR_K_NCCL);
            return;
        }
    }
    /* nccl-tests: "#  Rank  0 Group  0 Pid 123 on host device  0 [0x01] NVIDIA GeForce RTX 4090" */
    if ((p = strstr(line, "Rank ")) && line[0] == '#' && (p = strstr(line, " device "))) {
        int dev = atoi(p + 8);
        const char *lb = strchr(p, '['), *rb = lb ? strchr(lb, ']') : NULL;
        const char *r = strstr(line, "Rank ");
        int rank = atoi(r + 5);
        if (lb && rb && dev >= 0 && dev < DR_MAX_GPUS) {
            char inner[32], b[16] = "", name[96];
            dp_trim_copy(inner, sizeof inner, lb + 1, rb);
            unsigned dom = 0, bus = 0, d = 0;
            if (!strncmp(inner, "0x", 2) && sscanf(inner, "%x", &bus) == 1)
                snprintf(b, sizeof b, "0000:%02x:00.0", bus & 0xff);
            else if (sscanf(inner, "%x:%x:%x", &dom, &bus, &d) == 3)
                snprintf(b, sizeof b, "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff, d & 0x1f);
            dp_trim_copy(name, sizeof name, rb + 1, rb + strlen(rb));
            dp_rec_get(c, "nccl", DR_NS_CUDA, dev, b, name);
            if (rank >= 0 && rank < MAX_RANKS)
                c->rank_dev[rank] = dev;
            if (c->nc_run && rank >= 0 && rank < 2)
                c->nc_bus.dev[rank] = dev;
            c->nc_bus.ngpus += c->nc_run;
        }
        dp_kind(c, DR_K_NCCL);
        return;
    }
    if ((p = strstr(line, "Out of bounds values"))) {
        if (strstr(p, "FAILED"))
            dp_setn(c, &s->nccl_wrong, 1);
        else if (strstr(p, "OK"))
            dp_setn(c, &s->nccl_ok, 1);
        dp_kind(c, DR_K_NCCL);
        return;
    }
    if (line[0] == '#' && strstr(line, "#wrong")) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", line);
        char *tok[32];
        int nt = pv_tokenize(buf, tok, 32);
        c->nt_nwrong = 0;
        for (int i = 0; i < nt && c->nt_nwrong < 4; i++)
            if (!strcmp(tok[i], "#wrong") || !strcmp(tok[i], "wrong"))
                c->nt_wrong[c->nt_nwrong++] = i - (tok[0][0] == '#' && tok[0][1] == '\0' ? 1 : 0);
        c->nc_busbw_col = c->nt_nwrong > 0 ? c->nt_wrong[0] - 1 : -1;
        dp_kind(c, DR_K_NCCL);
        return;
    }
    if (c->nt_nwrong > 0 && isdigit((unsigned char)*dp_skip_ws(line))) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", line);
        char *tok[32];
        int nt = pv_tokenize(buf, tok, 32);
        for (int i = 0; i < c->nt_nwrong; i++) {
            long w;
            int at = c->nt_wrong[i];
            if (at >= 0 && at < nt && dp_is_int(tok[at], &w) && w > 0)
                dp_setn(c, &s->nccl_wrong, 1);
        }
        nc_row(c, tok, nt);
        return;
    }
    if (!strstr(line, "NCCL INFO") || !strstr(line, " via "))
        return;
    pv_nccl_conn conn;
    if (!pv_nccl_parse_line(line, &conn))
        return;
    char cls[16];
    pv_nccl_transport_class(conn.transport, cls, sizeof cls);
    int a = conn.src_rank, b = conn.dst_rank;
    if (a >= 0 && a < MAX_RANKS && c->rank_dev[a] >= 0)
        a = c->rank_dev[a];
    if (b >= 0 && b < MAX_RANKS && c->rank_dev[b] >= 0)
        b = c->rank_dev[b];
    dp_pobs_add(c, DR_OBS_NCCL, DR_NS_CUDA, a, b, c->nc_run ? c->nc_off : (c->nc_env_off || c->nc_cmd_off), 0, 0, cls,
                NULL);
    dp_kind(c, DR_K_NCCL);
}
