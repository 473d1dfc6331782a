/* dp_matrix.c - p2p-doctor's reader of GPU matrices: nvidia-smi topo -m and
 * topo -p2p, and the bandwidth, latency and access matrices of CUDA programs
 * (p2pBandwidthLatencyTest, p2p-verify's text) (pure C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sysparse.h"

/* ------------------------------------------------------------ matrices */

static int gpu_tok(const char *t)
{
    long v;
    if (strncmp(t, "GPU", 3) != 0 || !dp_is_int(t + 3, &v) || v >= DR_MAX_GPUS)
        return -1;
    return (int)v;
}

int dp_topo_cell(const char *t)
{
    return !strcmp(t, "SYS") || !strcmp(t, "NODE") || !strcmp(t, "PHB") || !strcmp(t, "PXB") ||
           !strcmp(t, "PIX") || !strcmp(t, "PXN") || !strcmp(t, "SOC") || !strcmp(t, "QPI") ||
           (t[0] == 'N' && t[1] == 'V' && isdigit((unsigned char)t[2]));
}

int dp_p2p_cell(const char *t)
{
    return !strcmp(t, "OK") || !strcmp(t, "CNS") || !strcmp(t, "GNS") || !strcmp(t, "TNS") || !strcmp(t, "NS") ||
           !strcmp(t, "U");
}

int dp_title_of(const char *line)
{
    if (strstr(line, "Connectivity Matrix"))
        return T_ACCESS01;
    if (strstr(line, "% of link") || strstr(line, "% of PCIe") || strstr(line, "link limit"))
        return T_IGNORE;
    int on = strstr(line, "P2P=Enabled") != NULL, off = strstr(line, "P2P=Disabled") != NULL;
    if (!on && !off)
        return T_NONE;
    if (strstr(line, "Latency") && strstr(line, "Matrix"))
        return on ? T_LAT_ON : T_LAT_OFF;
    if (strstr(line, "Bandwidth") && strstr(line, "Matrix")) {
        if (dp_ci_find(line, "Bidirectional"))
            return on ? T_BI_ON : T_BI_OFF;
        return on ? T_UNI_ON : T_UNI_OFF;
    }
    return T_NONE;
}

static double *bw_cell(dp_ctx *c, int t, int a, int b)
{
    int k, onoff;
    switch (t) {
    case T_UNI_ON: k = 0; onoff = 0; break;
    case T_UNI_OFF: k = 0; onoff = 1; break;
    case T_BI_ON: k = 1; onoff = 0; break;
    case T_BI_OFF: k = 1; onoff = 1; break;
    case T_LAT_ON: k = 2; onoff = 0; break;
    case T_LAT_OFF: k = 2; onoff = 1; break;
    default: return NULL;
    }
    if (!c->bw) {
        size_t n = (size_t)3 * 2 * DR_MAX_GPUS * DR_MAX_GPUS;
        c->bw = malloc(n * sizeof(double));
        if (!c->bw)
            return NULL;
        for (size_t i = 0; i < n; i++)
            c->bw[i] = NAN;
    }
    return &c->bw[(((size_t)k * 2 + (size_t)onoff) * DR_MAX_GPUS + (size_t)a) * DR_MAX_GPUS + (size_t)b];
}

static int bw_slot(int t, int *k, int *onoff)
{
    switch (t) {
    case T_UNI_ON: *k = 0; *onoff = 0; return 1;
    case T_UNI_OFF: *k = 0; *onoff = 1; return 1;
    case T_BI_ON: *k = 1; *onoff = 0; return 1;
    case T_BI_OFF: *k = 1; *onoff = 1; return 1;
    case T_LAT_ON: *k = 2; *onoff = 0; return 1;
    case T_LAT_OFF: *k = 2; *onoff = 1; return 1;
    }
    return 0;
}

static void mx_cell(dp_ctx *c, int row, int col, const char *t)
{
    int ns = c->mx_style == 1 ? DR_NS_SMI : DR_NS_CUDA;
    if (row == col || !strcmp(t, "X") || !strcmp(t, "-") || !strcasecmp(t, "N/A"))
        return;
    dr_ev e;
    char text[DR_EV_TEXT];
    if (dp_topo_cell(t)) {
        dp_pobs_add(c, DR_OBS_TOPO, ns, row, col, 0, 0, 0, t, NULL);
        dp_kind(c, DR_K_TOPO);
    } else if (dp_p2p_cell(t)) {
        if (c->mx_p2pmode == 'n' || c->mx_p2pmode == 'a') {
            dp_kind(c, DR_K_P2PCAP); /* NVLink or atomics capability: not P2P itself */
            return;
        }
        snprintf(text, sizeof text, "%s (GPU%d -> GPU%d: %s)", c->line, row, col, t);
        dp_evt(c, &e, text);
        dp_pobs_add(c, DR_OBS_P2PCAP, ns, row, col, c->mx_p2pmode ? c->mx_p2pmode : '?', 0, 0, t, &e);
        dp_kind(c, DR_K_P2PCAP);
    } else if (!strcmp(t, "yes") || !strcmp(t, "no")) {
        dp_pobs_add(c, DR_OBS_ACCESS, ns, row, col, t[0] == 'y', 0, 0, NULL, NULL);
    } else if (c->mx_title == T_ACCESS01 && (!strcmp(t, "1") || !strcmp(t, "0"))) {
        dp_pobs_add(c, DR_OBS_ACCESS, ns, row, col, t[0] == '1', 0, 0, NULL, NULL);
        dp_kind(c, DR_K_P2PBW);
    } else {
        char *end = NULL;
        double v = strtod(t, &end);
        double *cell = bw_cell(c, c->mx_title, row, col);
        if (!cell)
            return;
        if (end != t && !*end && v >= 0 && isfinite(v) && strchr(t, '.')) {
            *cell = v;
        } else if (end != t && !*end) {
            c->mx_short++; /* the tools print two decimals: a value without them was cut */
        } else if (c->mx_bad++ == 0) {
            snprintf(c->mx_bad_tok, sizeof c->mx_bad_tok, "%s", t);
        }
    }
}

int dp_matrix(dp_ctx *c, const char *line)
{
    char buf[DP_LINE_MAX];
    snprintf(buf, sizeof buf, "%s", line);
    char *tok[DR_MAX_GPUS + 16];
    int nt = pv_tokenize(buf, tok, DR_MAX_GPUS + 16);
    if (nt == 0) {
        c->mx_style = 0;
        return 0;
    }
    /* header, style 1: "GPU0 GPU1 NIC0 CPU Affinity NUMA Affinity ..." (a row
     * "GPU0 X NV4 ..." has a cell second) */
    if (gpu_tok(tok[0]) == 0 && (nt == 1 || gpu_tok(tok[1]) == 1 || !strncmp(tok[1], "NIC", 3) ||
                                 !strncmp(tok[1], "mlx", 3) || !strcmp(tok[1], "CPU"))) {
        int k = 0, numa = -1;
        c->mx_ncol = 0;
        for (; k < nt; k++) {
            if (!strcmp(tok[k], "CPU") || !strcmp(tok[k], "NUMA"))
                break;
            if (c->mx_ncol < DR_MAX_GPUS)
                c->mx_cols[c->mx_ncol++] = gpu_tok(tok[k]);
        }
        for (int j = k; j + 1 < nt; j++)
            if (!strcmp(tok[j], "NUMA") && !strcmp(tok[j + 1], "Affinity"))
                numa = k < nt && !strcmp(tok[k], "CPU") ? 2 : 1;
        c->mx_style = 1;
        c->mx_numa = numa;
        c->mx_rows = 0;
        for (int i = 0; i < c->mx_ncol; i++)
            if (c->mx_cols[i] >= 0)
                dp_rec_get(c, "topo", DR_NS_SMI, c->mx_cols[i], NULL, NULL);
        dp_kind(c, c->p2p_ctx ? DR_K_P2PCAP : DR_K_TOPO); /* (one GPU: no cell tells) */
        c->mx_p2pmode = c->p2p_ctx;
        c->p2p_ctx = 0;
        return 1;
    }
    /* header, style 2: "D\D 0 1 2" or "GPU 0 1" or "CPU 0 1" */
    long v;
    if ((!strcmp(tok[0], "D\\D") || !strcmp(tok[0], "GPU") || !strcmp(tok[0], "CPU")) && nt >= 2 &&
        dp_is_int(tok[1], &v) && v == 0) {
        c->mx_ncol = 0;
        for (int k = 1; k < nt && c->mx_ncol < DR_MAX_GPUS; k++) {
            if (!dp_is_int(tok[k], &v) || v != c->mx_ncol)
                break;
            c->mx_cols[c->mx_ncol++] = (int)v;
        }
        c->mx_style = 2;
        c->mx_numa = -1;
        c->mx_rows = 0;
        c->mx_title = !strcmp(tok[0], "CPU") ? T_IGNORE : c->title;
        if (c->mx_title != T_IGNORE)
            for (int i = 0; i < c->mx_ncol; i++)
                dp_rec_get(c, c->vt_on ? "verify" : "p2pbw", DR_NS_CUDA, c->mx_cols[i], NULL, NULL);
        return 1;
    }
    if (!c->mx_style)
        return 0;
    int row = -1;
    if (c->mx_style == 1)
        row = gpu_tok(tok[0]);
    else if (dp_is_int(tok[0], &v) && v < DR_MAX_GPUS)
        row = (int)v;
    if (row < 0 || nt < 2) {
        if (c->mx_style == 1 && tok[0][0] != 'N' && strncmp(tok[0], "mlx", 3) != 0)
            c->mx_style = 0; /* NIC rows are skipped, anything else ends it */
        else if (c->mx_style == 2)
            c->mx_style = 0;
        return 0;
    }
    int ncells = nt - 1 < c->mx_ncol ? nt - 1 : c->mx_ncol;
    if (nt - 1 < c->mx_ncol) {
        ncells--; /* cut or wrapped: its last value may be cut too */
        c->mx_short++;
    }
    for (int k = 0; k < ncells; k++)
        if (c->mx_cols[k] >= 0)
            mx_cell(c, row, c->mx_cols[k], tok[1 + k]);
    if (c->mx_style == 2 && c->mx_title != T_IGNORE)
        dp_rec_get(c, c->vt_on ? "verify" : "p2pbw", DR_NS_CUDA, row, NULL, NULL);
    if (c->mx_style == 1) {
        int r = dp_rec_get(c, "topo", DR_NS_SMI, row, NULL, NULL);
        if (r >= 0 && c->mx_numa > 0 && 1 + c->mx_ncol + c->mx_numa - 1 < nt) {
            long numa;
            if (dp_is_int(tok[1 + c->mx_ncol + c->mx_numa - 1], &numa))
                dp_setn(c, &c->m->recs[r].numa, numa);
        }
    }
    int k, onoff;
    if (c->mx_style == 2 && bw_slot(c->mx_title, &k, &onoff) && c->bw_ev[k][onoff].line == 0) {
        char text[DR_EV_TEXT];
        snprintf(text, sizeof text, "matrix at line %ld", c->ln);
        dp_evt(c, &c->bw_ev[k][onoff], text);
    }
    c->mx_rows++;
    return 1;
}

void dp_bw_emit(dp_ctx *c)
{
    if (!c->bw)
        return;
    static const char *names[3] = {"unidirectional", "bidirectional", "latency"};
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < DR_MAX_GPUS; a++)
            for (int b = 0; b < DR_MAX_GPUS; b++) {
                if (a == b)
                    continue;
                double on = c->bw[(((size_t)k * 2 + 0) * DR_MAX_GPUS + (size_t)a) * DR_MAX_GPUS + (size_t)b];
                double off = c->bw[(((size_t)k * 2 + 1) * DR_MAX_GPUS + (size_t)a) * DR_MAX_GPUS + (size_t)b];
                if (isnan(on) && isnan(off))
                    continue;
                dr_ev e = c->bw_ev[k][isnan(on) ? 1 : 0];
                char text[DR_EV_TEXT];
                char on_s[24] = "-", off_s[24] = "-";
                if (!isnan(on))
                    snprintf(on_s, sizeof on_s, "%.2f", on);
                if (!isnan(off))
                    snprintf(off_s, sizeof off_s, "%.2f", off);
                snprintf(text, sizeof text, "%.100s %s GPU%d->GPU%d: P2P=Enabled %s, P2P=Disabled %s",
                         e.text, names[k], a, b, on_s, off_s);
                snprintf(e.text, sizeof e.text, "%s", text);
                dp_pobs_add(c, DR_OBS_BW, DR_NS_CUDA, a, b, k == 0 ? DR_BW_UNI : (k == 1 ? DR_BW_BI : DR_BW_LAT),
                            isnan(on) ? -1 : on, isnan(off) ? -1 : off, NULL, &e);
            }
    dp_kind(c, DR_K_P2PBW);
}
