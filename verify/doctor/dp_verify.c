/* dp_verify.c - p2p-doctor's reader of p2p-verify's text output (its
 * matrices are dp_matrix.c's) (pure C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysparse.h"

/* ------------------------------------------------------------ p2p-verify (text) */

/* "= 450.0 GB/s per direction" of a limit's description: the figure, -1 none. */
static double gbps_per_direction(const char *s)
{
    const char *q = strstr(s, " GB/s per direction"), *b = q;
    if (!q)
        return -1;
    while (b > s && (isdigit((unsigned char)b[-1]) || b[-1] == '.'))
        b--;
    return b < q ? atof(b) : -1;
}

/* An all-reduce's bus bandwidth (p2p-verify's text or JSON) for P2P allowed
 * (0) or disabled (1): the largest of its sizes. */
void dp_bus_peak(dp_ctx *c, int idx, double v, int ngpus, const int *dev, const dr_ev *e)
{
    dr_busbw *b = &c->m->sys.nccl_bus[idx];
    if (!isfinite(v) || v <= 0 || v <= b->peak || b->avg > 0)
        return;
    b->peak = v;
    b->ngpus = ngpus;
    b->dev[0] = ngpus == 2 ? dev[0] : -1;
    b->dev[1] = ngpus == 2 ? dev[1] : -1;
    b->ev = *e;
}

/* p2p-verify's text: its limits and its NCCL table; 1 when the line was one. */
static int vt_more(dp_ctx *c, const char *line)
{
    const char *p;
    int a, b;
    if ((p = strstr(line, "P2P on : ")) && sscanf(dp_skip_ws(line), "GPU%d<->GPU%d", &a, &b) == 2) {
        double lim = gbps_per_direction(p);
        const char *type = !strncmp(p + 9, "NVLink", 6) ? "nvlink" : "pcie";
        if (lim > 0) {
            dp_pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, a, b, 0, lim, -1, type, NULL);
            dp_pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, b, a, 0, lim, -1, type, NULL);
        }
        return 1;
    }
    if ((p = strstr(line, "ncclCommInitAll over GPUs "))) {
        const char *q = p + 26;
        char *e = NULL;
        c->vt_ndev = 0;
        while (isdigit((unsigned char)*q)) {
            long v = strtol(q, &e, 10);
            if (c->vt_ndev < 2)
                c->vt_dev[c->vt_ndev] = (int)v;
            c->vt_ndev++;
            q = *e == ',' ? e + 1 : e;
        }
        return 1;
    }
    if (strstr(line, "| P2P allowed") && strstr(line, "NCCL_P2P_DISABLE=1")) {
        c->vt_nccl = 1;
        return 1;
    }
    if (!c->vt_nccl)
        return 0;
    const char *b1 = strchr(line, '|'), *b2 = b1 ? strchr(b1 + 1, '|') : NULL;
    if (!b2) {
        c->vt_nccl = 0;
        return 0;
    }
    const char *part[2] = {b1 + 1, b2 + 1};
    dr_ev e;
    dp_ev(c, &e);
    for (int k = 0; k < 2; k++) {
        double t, v;
        if (sscanf(part[k], "%lf %lf", &t, &v) == 2)
            dp_bus_peak(c, k, v, c->vt_ndev, c->vt_dev, &e);
    }
    return 1;
}

void dp_verify_text(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p;
    if (strstr(line, "p2p-verify") && strstr(line, "GPU peer-to-peer verification")) {
        c->vt_on = 1;
        dp_kind(c, DR_K_VERIFY);
        return;
    }
    if ((p = strstr(line, "== VERDICT:"))) {
        const char *e = strstr(p, "(exit ");
        if (e) {
            dp_setn_force(c, &s->verify_status, atoi(e + 6));
            dp_ev(c, &s->verify_ev);
            dp_kind(c, DR_K_VERIFY);
        }
        return;
    }
    if (strstr(line, "self-test:") && strstr(line, "injected")) {
        dp_setn(c, &s->selftest, 1);
        return;
    }
    if ((p = strstr(line, "CORRUPTION GPU")) && strstr(p, "->GPU")) {
        int a = atoi(p + 14);
        const char *q = strstr(p, "->GPU");
        dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, atoi(q + 5), 1, 0, 0, NULL, NULL);
        dp_kind(c, DR_K_VERIFY);
        return;
    }
    if (!c->vt_on || vt_more(c, line))
        return;
    p = dp_skip_ws(line);
    if (!strncmp(p, "GPU", 3) && isdigit((unsigned char)p[3]) && strstr(p, "->GPU")) {
        int a = atoi(p + 3);
        const char *q = strstr(p, "->GPU");
        int b = atoi(q + 5);
        size_t l = strlen(p);
        if (l >= 3 && !strcmp(p + l - 3, " OK"))
            dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, b, 0, 0, 0, NULL, NULL);
        else if (strstr(p, "CORRUPT"))
            dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, b, 1, 0, 0, NULL, NULL);
        return;
    }
    /* topology rows: "0    NVIDIA H200    0000:00:06.0  256 GiB ..." */
    long idx;
    char buf[256], *tok[4];
    snprintf(buf, sizeof buf, "%s", p);
    char b[16];
    if (pv_tokenize(buf, tok, 1) == 1 && dp_is_int(tok[0], &idx) && idx < DR_MAX_GPUS &&
        dp_find_busid(line, b, sizeof b) == 0) {
        const char *nb = dp_skip_ws(p + strlen(tok[0]));
        const char *be = strstr(p, b);
        if (!be) {
            /* busid printed in another case: find it by its domain start */
            be = strchr(nb, ':');
            while (be && be > nb && be[-1] != ' ')
                be--;
        }
        char name[96];
        dp_trim_copy(name, sizeof name, nb, be && be > nb ? be : nb + strlen(nb));
        int r = dp_rec_get(c, "verify", DR_NS_CUDA, (int)idx, b, name);
        const char *gi = be ? strstr(be, "GiB") : NULL;
        if (r >= 0 && gi) {
            const char *q = gi;
            while (q > be && q[-1] == ' ')
                q--;
            while (q > be && (isdigit((unsigned char)q[-1]) || q[-1] == '.'))
                q--;
            dp_setn(c, &c->m->recs[r].bar1_mib, (long long)llround(atof(q) * 1024));
        }
    }
}
