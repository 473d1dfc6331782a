/* dp_verify_json.c - p2p-doctor's reader of p2p-verify --json (pure C).  See
 * dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "djson.h"
#include "ncclparse.h"

#define JSON_MAX (64u << 20)

/* ------------------------------------------------------------ p2p-verify (JSON) */

/* p2p-verify --json's bandwidth and latency matrices (matrix_gpus' order). */
static void js_perf(dp_ctx *c, const dj_doc *d, const int *ids, int n)
{
    static const struct {
        const char *on, *off;
        int kind;
    } mx[] = {{"unidirectional_p2p_on", "unidirectional_p2p_off", DR_BW_UNI},
              {"bidirectional_p2p_on", "bidirectional_p2p_off", DR_BW_BI},
              {"latency_us_p2p_on", "latency_us_p2p_off", DR_BW_LAT}};
    int perf = dj_get(d, 0, "performance");
    for (size_t k = 0; k < sizeof mx / sizeof mx[0]; k++) {
        int on = dj_get(d, perf, mx[k].on), off = dj_get(d, perf, mx[k].off);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                double x = dj_num(d, dj_at(d, dj_at(d, on, a), b), -1), y = dj_num(d, dj_at(d, dj_at(d, off, a), b), -1);
                if (a == b || ids[a] < 0 || ids[b] < 0 || (x < 0 && y < 0))
                    continue;
                dr_ev e;
                char text[DR_EV_TEXT];
                snprintf(text, sizeof text, "performance.%s[GPU%d][GPU%d] = %.2f, P2P off %.2f", mx[k].on, ids[a],
                         ids[b], x, y);
                dp_evt(c, &e, text);
                dp_pobs_add(c, DR_OBS_BW, DR_NS_CUDA, ids[a], ids[b], mx[k].kind, x, y, "verify", &e);
            }
    }
}

/* p2p-verify --json's nvidia-smi matrices (topo -p2p r, w; topo -m), in
 * matrix_gpus' order. */
static void js_smi(dp_ctx *c, const dj_doc *d, const int *ids, int n)
{
    static const struct {
        const char *key;
        int mode;
    } mx[] = {{"p2p_read", 'r'}, {"p2p_write", 'w'}, {"topo", 0}};
    int smi = dj_get(d, 0, "nvidia_smi");
    for (size_t k = 0; k < sizeof mx / sizeof mx[0]; k++) {
        int m = dj_get(d, smi, mx[k].key);
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                char cell[24], text[DR_EV_TEXT];
                dj_str(d, dj_at(d, dj_at(d, m, a), b), cell, sizeof cell);
                int topo = !mx[k].mode && dp_topo_cell(cell), cap = mx[k].mode && dp_p2p_cell(cell);
                if (a == b || ids[a] < 0 || ids[b] < 0 || (!topo && !cap))
                    continue;
                dr_ev e;
                snprintf(text, sizeof text, "nvidia_smi.%s[GPU%d][GPU%d] = %s", mx[k].key, ids[a], ids[b], cell);
                dp_evt(c, &e, text);
                dp_pobs_add(c, topo ? DR_OBS_TOPO : DR_OBS_P2PCAP, DR_NS_CUDA, ids[a], ids[b], mx[k].mode, 0, 0, cell, &e);
            }
    }
}

/* p2p-verify --json's links: the limit of each pair's P2P path. */
static void js_links(dp_ctx *c, const dj_doc *d)
{
    int links = dj_get(d, 0, "links");
    for (int x = dj_at(d, links, 0); x >= 0; x = d->nodes[x].next) {
        int a = (int)dj_num(d, dj_get(d, x, "gpu_a"), -1), b = (int)dj_num(d, dj_get(d, x, "gpu_b"), -1);
        int pp = dj_get(d, x, "p2p_path");
        double lim = dj_num(d, dj_get(d, pp, "limit_gbps_per_direction"), -1);
        char type[24], desc[160], text[DR_EV_TEXT];
        dj_str(d, dj_get(d, pp, "type"), type, sizeof type);
        dj_str(d, dj_get(d, pp, "description"), desc, sizeof desc);
        if (lim <= 0)
            continue;
        dr_ev e;
        snprintf(text, sizeof text, "links: GPU%d<->GPU%d P2P path %s", a, b, desc);
        dp_evt(c, &e, text);
        dp_pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, a, b, 0, lim, -1, type, &e);
        dp_pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, b, a, 0, lim, -1, type, &e);
    }
}

/* p2p-verify --json's NCCL runs: bus bandwidth with P2P allowed and disabled,
 * and the transports NCCL chose. */
static void js_nccl(dp_ctx *c, const dj_doc *d)
{
    int nc = dj_get(d, 0, "nccl"), gpus = dj_get(d, nc, "gpus"), dev[2] = {-1, -1};
    int ng = gpus >= 0 ? d->nodes[gpus].nchild : 0;
    for (int k = 0; k < 2 && k < ng; k++)
        dev[k] = (int)dj_num(d, dj_at(d, gpus, k), -1);
    for (int x = dj_at(d, dj_get(d, nc, "runs"), 0); x >= 0; x = d->nodes[x].next) {
        char p2p[48], text[DR_EV_TEXT];
        dj_str(d, dj_get(d, x, "p2p"), p2p, sizeof p2p);
        int idx = !strcmp(p2p, "allowed") ? 0 : (!strncmp(p2p, "disabled", 8) ? 1 : -1);
        if (idx < 0 || dj_bool(d, dj_get(d, x, "ran")) != 1)
            continue;
        double peak = -1;
        for (int z = dj_at(d, dj_get(d, x, "sizes"), 0); z >= 0; z = d->nodes[z].next) {
            double v = dj_num(d, dj_get(d, z, "busbw_gbps"), -1);
            if (v > peak)
                peak = v;
        }
        dr_ev e;
        snprintf(text, sizeof text, "nccl.runs[%s]: busbw %.2f GB/s at the largest size", p2p, peak);
        dp_evt(c, &e, text);
        dp_bus_peak(c, idx, peak, ng, dev, &e);
        for (int t = dj_at(d, dj_get(d, x, "transports"), 0); t >= 0; t = d->nodes[t].next) {
            char via[64], cls[16];
            dj_str(d, dj_get(d, t, "via"), via, sizeof via);
            pv_nccl_transport_class(via, cls, sizeof cls);
            snprintf(text, sizeof text, "nccl.runs[%s].transports: GPU%d->GPU%d via %s", p2p,
                     (int)dj_num(d, dj_get(d, t, "src_gpu"), -1), (int)dj_num(d, dj_get(d, t, "dst_gpu"), -1), via);
            dp_evt(c, &e, text);
            dp_pobs_add(c, DR_OBS_NCCL, DR_NS_CUDA, (int)dj_num(d, dj_get(d, t, "src_gpu"), -1),
                        (int)dj_num(d, dj_get(d, t, "dst_gpu"), -1), idx, 0, 0, cls, &e);
        }
    }
}

/* p2p-verify --json's hazard tests: each one that failed (an injected
 * failure of --self-test is none), with its result line. */
static void js_hazards(dp_ctx *c, const dj_doc *d)
{
    int hz = dj_get(d, 0, "hazards");
    int st = dj_get(d, hz, "self_test");
    if (st >= 0 && d->nodes[st].type != DJ_NULL)
        dr_set(&c->m->sys.selftest, 1, NULL);
    int res = dj_get(d, hz, "results");
    int nres = res >= 0 ? d->nodes[res].nchild : 0;
    for (int i = 0, x = dj_at(d, res, 0); i < nres && x >= 0; i++, x = d->nodes[x].next) {
        char stt[24], test[16], line[140], text[DR_EV_TEXT];
        dj_str(d, dj_get(d, x, "status"), stt, sizeof stt);
        if (strcmp(stt, "fail") != 0 || dj_bool(d, dj_get(d, x, "injected")) == 1)
            continue;
        dj_str(d, dj_get(d, x, "test"), test, sizeof test);
        dj_str(d, dj_get(d, x, "result"), line, sizeof line);
        int a = (int)dj_num(d, dj_get(d, x, "src"), -1), b = (int)dj_num(d, dj_get(d, x, "dst"), -1);
        dr_ev e;
        snprintf(text, sizeof text, "hazards: GPU%d->GPU%d %s: %s", a, b, test, line);
        dp_evt(c, &e, text);
        dp_pobs_add(c, DR_OBS_HAZARD, DR_NS_CUDA, a, b, 1, 0, 0, test, &e);
    }
}

static void js_verify(dp_ctx *c, const dj_doc *d)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    char tool[32];
    dj_str(d, dj_get(d, 0, "tool"), tool, sizeof tool);
    if (strcmp(tool, "p2p-verify") != 0) {
        dr_note(m, "%s: JSON, but not p2p-verify's (tool \"%s\"): not read", c->fname, tool);
        return;
    }
    dp_kind(c, DR_K_VERIFY);
    dr_ev e;
    char text[DR_EV_TEXT];
    int gpus = dj_get(d, 0, "gpus");
    for (int i = 0; i < DR_MAX_GPUS; i++) {
        int g = dj_at(d, gpus, i);
        if (g < 0)
            break;
        int idx = (int)dj_num(d, dj_get(d, g, "index"), -1);
        char name[96], bus[32], b[16] = "";
        dj_str(d, dj_get(d, g, "name"), name, sizeof name);
        dj_str(d, dj_get(d, g, "pci_bus_id"), bus, sizeof bus);
        if (dp_find_busid(bus, b, sizeof b) != 0)
            b[0] = '\0';
        if (idx < 0 || idx >= DR_MAX_GPUS)
            continue;
        int r = dp_rec_get(c, "verify", DR_NS_CUDA, idx, b, name);
        if (r < 0)
            continue;
        dr_grec *gr = &m->recs[r];
        snprintf(text, sizeof text, "gpus[%d]: %s %s", i, name, bus);
        dp_evt(c, &e, text);
        double v = dj_num(d, dj_get(d, g, "memory_bytes"), -1);
        if (v > 0)
            dr_set(&gr->vram_mib, (long long)(v / 1048576.0), &e);
        v = dj_num(d, dj_get(d, g, "bar1_bytes"), -1);
        if (v > 0)
            dr_set(&gr->bar1_mib, (long long)(v / 1048576.0), &e);
        int pc = dj_get(d, g, "pcie");
        v = dj_num(d, dj_get(d, pc, "gen_max"), -1);
        if (v > 0)
            dr_set(&gr->gen_max, (long long)v, &e);
        v = dj_num(d, dj_get(d, pc, "width_max"), -1);
        if (v > 0)
            dr_set(&gr->width_max, (long long)v, &e);
        v = dj_num(d, dj_get(d, pc, "width_current"), -1);
        if (v > 0)
            dr_set(&gr->width_cur, (long long)v, &e);
        v = dj_num(d, dj_get(d, g, "nvlink_active_links"), -1);
        if (v >= 0)
            dr_set(&gr->nvlinks, (long long)v, &e);
    }
    /* matrices use matrix_gpus' order */
    int mg = dj_get(d, 0, "matrix_gpus"), ids[DR_MAX_GPUS], n = 0;
    for (; n < DR_MAX_GPUS; n++) {
        int x = dj_at(d, mg, n);
        if (x < 0)
            break;
        ids[n] = (int)dj_num(d, x, -1);
    }
    int cap = dj_get(d, 0, "can_access_peer");
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            int v = dj_bool(d, dj_at(d, dj_at(d, cap, a), b));
            if (a == b || v < 0 || ids[a] < 0 || ids[b] < 0)
                continue;
            snprintf(text, sizeof text, "can_access_peer[GPU%d][GPU%d] = %s", ids[a], ids[b], v ? "true" : "false");
            dp_evt(c, &e, text);
            dp_pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, ids[a], ids[b], v, 0, 0, NULL, &e);
        }
    js_perf(c, d, ids, n);
    js_smi(c, d, ids, n);
    js_links(c, d);
    js_nccl(c, d);
    int integ = dj_get(d, 0, "integrity");
    int st = dj_get(d, integ, "self_test");
    if (st >= 0 && d->nodes[st].type != DJ_NULL)
        dr_set(&s->selftest, 1, NULL);
    int res = dj_get(d, integ, "results");
    int nres = res >= 0 ? d->nodes[res].nchild : 0;
    for (int i = 0, x = dj_at(d, res, 0); i < nres && x >= 0; i++, x = d->nodes[x].next) {
        char stt[16], meth[48];
        dj_str(d, dj_get(d, x, "status"), stt, sizeof stt);
        dj_str(d, dj_get(d, x, "method"), meth, sizeof meth);
        int a = (int)dj_num(d, dj_get(d, x, "src"), -1), b = (int)dj_num(d, dj_get(d, x, "dst"), -1);
        if (strcmp(stt, "ok") != 0 && strcmp(stt, "corrupt") != 0)
            continue;
        snprintf(text, sizeof text, "integrity: GPU%d->GPU%d %s size %.0f: %s", a, b, meth,
                 dj_num(d, dj_get(d, x, "size"), 0), stt);
        dp_evt(c, &e, text);
        dp_pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, b, stt[0] == 'c', 0, 0, NULL, &e);
    }
    js_hazards(c, d);
    int vd = dj_get(d, 0, "verdict");
    double code = dj_num(d, dj_get(d, vd, "exit_code"), -1);
    if (code >= 0) {
        char stat[32];
        dj_str(d, dj_get(d, vd, "status"), stat, sizeof stat);
        snprintf(text, sizeof text, "verdict: %s (exit %d)", stat, (int)code);
        dp_evt(c, &e, text);
        s->verify_status.v = -1;
        dr_set(&s->verify_status, (long long)code, &e);
        s->verify_ev = e;
    }
    char drv[24];
    dj_str(d, dj_get(d, 0, "driver_version"), drv, sizeof drv);
    if (drv[0] && !s->smi_driver_version[0]) {
        snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", drv);
        dp_evt(c, &s->smi_driver_version_ev, "driver_version (p2p-verify --json)");
    }
}

void dp_js_close(dp_ctx *c)
{
    if (!c->js_on)
        return;
    if (c->js_over) {
        dr_note(c->m, "%s: JSON larger than %u MiB: not read", c->fname, JSON_MAX >> 20);
    } else {
        dj_doc d;
        if (dj_parse(&d, c->js, c->js_len, 2000000) == 0)
            js_verify(c, &d);
        else
            dr_note(c->m, "%s: not valid JSON (%s): its verification results were not read", c->fname, d.err);
        dj_free(&d);
    }
    free(c->js);
    c->js = NULL;
    c->js_on = 0;
}

void dp_js_line(dp_ctx *c, const char *line)
{
    if (c->ln == 1 || (!c->js_on && c->js_len == 0 && c->m->files[c->fi].lines <= 1)) {
        if (*dp_skip_ws(line) == '{')
            c->js_on = 1;
    }
    if (!c->js_on || c->js_over)
        return;
    size_t l = strlen(line);
    if (c->js_len + l + 2 > JSON_MAX) {
        c->js_over = 1;
        return;
    }
    if (c->js_len + l + 2 > c->js_cap) {
        size_t cap = c->js_cap ? c->js_cap * 2 : 65536;
        while (cap < c->js_len + l + 2)
            cap *= 2;
        char *n = realloc(c->js, cap);
        if (!n) {
            c->js_over = 1;
            return;
        }
        c->js = n;
        c->js_cap = cap;
    }
    memcpy(c->js + c->js_len, line, l);
    c->js_len += l;
    c->js[c->js_len++] = '\n';
    c->js[c->js_len] = '\0';
}
