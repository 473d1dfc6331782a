/* dp_smi.c - p2p-doctor's readers of nvidia-smi: -q, the table, -L, --query-gpu
 * csv, nvlink -s (pure C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------ nvidia-smi -q */

static void q_push(dp_ctx *c, int ind, const char *title)
{
    while (c->q_depth > 0 && c->q_ind[c->q_depth - 1] >= ind)
        c->q_depth--;
    if (c->q_depth < Q_DEPTH) {
        c->q_ind[c->q_depth] = ind;
        snprintf(c->q_hdr[c->q_depth], sizeof c->q_hdr[0], "%s", title);
        c->q_depth++;
    }
}

static int q_in(dp_ctx *c, const char *title)
{
    for (int i = 0; i < c->q_depth; i++)
        if (!strcmp(c->q_hdr[i], title))
            return 1;
    return 0;
}

static int q_rec(dp_ctx *c)
{
    if (c->q_rec < 0)
        c->q_rec = dp_rec_anon(c, "smi-q");
    return c->q_rec;
}

void dp_smiq(dp_ctx *c, const char *line)
{
    dr_model *m = c->m;
    const char *p = dp_skip_ws(line);
    int ind = (int)(p - line);
    /* "GPU 00000000:01:00.0": a GPU block */
    if (!strncmp(p, "GPU ", 4) && ind <= 2) {
        char b[16];
        const char *rest = p + 4;
        size_t l = strlen(rest);
        while (l && isspace((unsigned char)rest[l - 1]))
            l--;
        if (l >= 12 && l <= 16 && strchr(rest, ':') && !strchr(rest, ' ') && dp_find_busid(rest, b, sizeof b) == 0) {
            c->q_rec = dp_rec_get(c, "smi-q", c->q_full ? DR_NS_SMI : DR_NS_NONE, c->q_full ? c->q_blocks : -1, b, NULL);
            c->q_blocks++;
            c->q_depth = 0;
            dp_kind(c, DR_K_SMIQ);
            return;
        }
    }
    const char *colon = strstr(p, " : ");
    if (!colon) {
        /* a section title: "    FB Memory Usage" */
        size_t l = strlen(p);
        if (l > 0 && l < 48 && isupper((unsigned char)*p) && !strchr(p, ':') && !strchr(p, '|') &&
            !strchr(p, '=')) {
            char t[48];
            dp_trim_copy(t, sizeof t, p, p + l);
            q_push(c, ind, t);
        }
        return;
    }
    char key[48], val[128];
    dp_trim_copy(key, sizeof key, p, colon);
    dp_trim_copy(val, sizeof val, colon + 3, colon + strlen(colon));
    while (c->q_depth > 0 && c->q_ind[c->q_depth - 1] >= ind)
        c->q_depth--;
    dr_sys *s = &m->sys;
    if (!strcmp(key, "Driver Version") && ind == 0) {
        char v[24];
        if (dp_find_version(val, v, sizeof v) == 0) {
            snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", v);
            dp_ev(c, &s->smi_driver_version_ev);
        }
        return;
    }
    if (!strcmp(key, "Attached GPUs")) {
        c->q_full = 1;
        dp_kind(c, DR_K_SMIQ);
        return;
    }
    int r;
    if (!strcmp(key, "Product Name")) {
        if (c->q_rec >= 0 && m->recs[c->q_rec].name[0] && m->recs[c->q_rec].anon)
            c->q_rec = -1; /* a second GPU of an excerpt */
        if ((r = q_rec(c)) < 0)
            return;
        if (!m->recs[r].name[0])
            snprintf(m->recs[r].name, sizeof m->recs[r].name, "%.95s", val);
        dp_kind(c, DR_K_SMIQ);
        return;
    }
    int is_q = q_in(c, "FB Memory Usage") || q_in(c, "BAR1 Memory Usage") || q_in(c, "PCIe Generation") ||
               q_in(c, "Link Width") || !strcmp(key, "Display Active") ||
               !strcmp(key, "Virtualization Mode") || (!strcmp(key, "Bus Id") && q_in(c, "PCI"));
    if (!is_q)
        return;
    if ((r = q_rec(c)) < 0)
        return;
    dr_grec *g = &m->recs[r];
    dp_kind(c, DR_K_SMIQ);
    long long mib = dp_parse_mib(val);
    if (q_in(c, "FB Memory Usage") && !strcmp(key, "Total"))
        dp_setn(c, &g->vram_mib, mib);
    else if (q_in(c, "BAR1 Memory Usage") && !strcmp(key, "Total"))
        dp_setn(c, &g->bar1_mib, mib);
    else if (q_in(c, "BAR1 Memory Usage") && !strcmp(key, "Used"))
        dp_setn(c, &g->bar1_used_mib, mib);
    else if (q_in(c, "PCIe Generation")) {
        int v = atoi(val);
        if (v <= 0)
            return;
        if (!strcmp(key, "Max"))
            dp_setn(c, &g->gen_max, v);
        else if (!strcmp(key, "Current"))
            dp_setn(c, &g->gen_cur, v);
        else if (!strcmp(key, "Host Max"))
            dp_setn(c, &g->gen_host_max, v);
        else if (!strcmp(key, "Device Max"))
            dp_setn(c, &g->gen_dev_max, v);
    } else if (q_in(c, "Link Width")) {
        int v = atoi(val);
        if (v <= 0)
            return;
        if (!strcmp(key, "Max"))
            dp_setn(c, &g->width_max, v);
        else if (!strcmp(key, "Current"))
            dp_setn(c, &g->width_cur, v);
    } else if (!strcmp(key, "Display Active")) {
        /* ("Display Attached" says Yes on an H100 without outputs: not read) */
        dp_setn_force(c, &g->display, !strcmp(val, "Enabled") ? 1 : 0);
    } else if (!strcmp(key, "Virtualization Mode")) {
        dp_setn(c, &g->virt_passthrough, !strcmp(val, "Pass-Through") ? 1 : 0);
    } else if (!strcmp(key, "Bus Id")) {
        char b[16];
        if (dp_find_busid(val, b, sizeof b) == 0 && !g->busid[0] && g->anon) {
            g->anon = 0;
            snprintf(g->busid, sizeof g->busid, "%s", b);
        }
    }
}

/* ------------------------------------------------------------ nvidia-smi table, -L, csv */

/* "0,1,2,3: NAME" (after "GPU "): a record per index, all of NAME; 0 when
 * the line is not of that form (then nothing is recorded). */
static int smi_gpu_list(dp_ctx *c, const char *p)
{
    long idx[DR_MAX_GPUS];
    int n = 0;
    for (;;) {
        char *end = NULL;
        if (!isdigit((unsigned char)*p) || n == DR_MAX_GPUS)
            return 0;
        idx[n] = strtol(p, &end, 10);
        if (end - p > 3 || idx[n] >= DR_MAX_GPUS)
            return 0;
        n++;
        if (*end == ',') {
            p = end + 1;
            continue;
        }
        if (*end != ':' || end[1] != ' ')
            return 0;
        p = dp_skip_ws(end + 1);
        break;
    }
    char name[96];
    dp_trim_copy(name, sizeof name, p, p + strlen(p));
    if (!name[0] || isdigit((unsigned char)name[0]))
        return 0;
    for (int i = 0; i < n; i++)
        dp_rec_get(c, "smi", DR_NS_SMI, (int)idx[i], NULL, name);
    c->nv_rec = -1;
    dp_kind(c, DR_K_SMI);
    return 1;
}

void dp_smi(dp_ctx *c, const char *line)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    const char *p;
    if ((p = strstr(line, "Driver Version:")) && strstr(line, "NVIDIA-SMI")) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0) {
            snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", v);
            dp_ev(c, &s->smi_driver_version_ev);
        }
        dp_kind(c, DR_K_SMI);
        return;
    }
    /* environment reports: PyTorch's collect_env "Nvidia driver version:
     * 550.54.14", sglang's and vLLM's "NVIDIA Driver Version: ..." */
    p = dp_skip_ws(line);
    if (!strncasecmp(p, "Nvidia driver version:", 22)) {
        char v[24];
        if (dp_find_version(p + 22, v, sizeof v) == 0 && !s->smi_driver_version[0]) {
            snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", v);
            dp_ev(c, &s->smi_driver_version_ev);
            dp_kind(c, DR_K_SMI);
        }
        return;
    }
    /* -L and nvlink -s: "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-...)" */
    if (!strncmp(p, "GPU ", 4) && isdigit((unsigned char)p[4])) {
        char *end = NULL;
        long idx = strtol(p + 4, &end, 10);
        /* "GPU 0: name", not nvidia-smi -q's "GPU 00000000:01:00.0" */
        if (*end == ':' && end[1] == ' ' && end - (p + 4) <= 3 && idx >= 0 && idx < DR_MAX_GPUS) {
            const char *nb = dp_skip_ws(end + 1);
            const char *ne = strstr(nb, " (UUID");
            if (!ne)
                ne = strstr(nb, " (");
            if (!ne)
                ne = nb + strlen(nb);
            char name[96];
            dp_trim_copy(name, sizeof name, nb, ne);
            c->nv_rec = dp_rec_get(c, "smi", DR_NS_SMI, (int)idx, NULL, name);
            c->nv_seen = 0;
            c->nv_active = 0;
            dp_kind(c, DR_K_SMI);
            return;
        }
        /* environment reports (sglang's and vLLM's check_env): GPUs of one
         * model on one line, "GPU 0,1,2,3: NVIDIA GeForce RTX 4090" */
        if (*end == ',' && smi_gpu_list(c, p + 4))
            return;
    }
    /* table row: "|   0  NVIDIA GeForce RTX 4090   Off |   00000000:01:00.0  On |  ..." */
    if (line[0] == '|' || (p[0] == '|')) {
        char b[16];
        const char *bar2 = strchr(p + 1, '|');
        if (bar2 && dp_find_busid(bar2, b, sizeof b) == 0) {
            const char *q = dp_skip_ws(p + 1);
            char *end = NULL;
            long idx = strtol(q, &end, 10);
            if (end != q && idx >= 0 && idx < DR_MAX_GPUS) {
                char name[96];
                dp_trim_copy(name, sizeof name, end, bar2);
                size_t nl = strlen(name);
                /* persistence mode "On"/"Off" at the end of the first cell */
                if (nl > 3 && !strcmp(name + nl - 3, "Off"))
                    name[nl - 3] = '\0';
                else if (nl > 2 && !strcmp(name + nl - 2, "On"))
                    name[nl - 2] = '\0';
                char nm[96];
                dp_trim_copy(nm, sizeof nm, name, name + strlen(name));
                c->t_rec = dp_rec_get(c, "smi", DR_NS_SMI, (int)idx, b, nm);
                if (c->t_rec >= 0) {
                    const char *bar3 = strchr(bar2 + 1, '|');
                    char cell[64];
                    dp_trim_copy(cell, sizeof cell, bar2 + 1, bar3 ? bar3 : bar2 + strlen(bar2));
                    size_t cl = strlen(cell);
                    dr_grec *g = &m->recs[c->t_rec];
                    if (cl > 3 && !strcmp(cell + cl - 3, " On"))
                        dp_setn(c, &g->display, 1);
                    else if (cl > 4 && !strcmp(cell + cl - 4, " Off"))
                        dp_setn(c, &g->display, 0);
                }
                dp_kind(c, DR_K_SMI);
                return;
            }
        }
        if (c->t_rec >= 0 && (p = strstr(line, "MiB /"))) {
            long long mib = dp_parse_mib(p + 5);
            if (mib > 0)
                dp_setn(c, &m->recs[c->t_rec].vram_mib, mib);
            c->t_rec = -1;
            return;
        }
    }
}

void dp_csv(dp_ctx *c, const char *line)
{
    if (strstr(line, "pci.bus_id") || (strstr(line, "index") && strstr(line, "name") && strchr(line, ','))) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", line);
        c->csv_on = 1;
        c->csv_idx = c->csv_name = c->csv_bus = c->csv_mem = c->csv_gen = c->csv_genmax = c->csv_w = c->csv_wmax =
            c->csv_disp = -1;
        int col = 0;
        char *save = NULL;
        for (char *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save), col++) {
            char t[64];
            dp_trim_copy(t, sizeof t, f, f + strlen(f));
            if (!strcmp(t, "index"))
                c->csv_idx = col;
            else if (!strcmp(t, "name"))
                c->csv_name = col;
            else if (!strcmp(t, "pci.bus_id"))
                c->csv_bus = col;
            else if (!strncmp(t, "memory.total", 12))
                c->csv_mem = col;
            else if (!strcmp(t, "pcie.link.gen.current"))
                c->csv_gen = col;
            else if (!strcmp(t, "pcie.link.gen.max"))
                c->csv_genmax = col;
            else if (!strcmp(t, "pcie.link.width.current"))
                c->csv_w = col;
            else if (!strcmp(t, "pcie.link.width.max"))
                c->csv_wmax = col;
            else if (!strcmp(t, "display_active"))
                c->csv_disp = col;
        }
        if (c->csv_idx < 0 && c->csv_bus < 0)
            c->csv_on = 0;
        return;
    }
    if (!c->csv_on || !strchr(line, ','))
        return;
    char buf[1024], *f[32];
    snprintf(buf, sizeof buf, "%s", line);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t && n < 32; t = strtok_r(NULL, ",", &save))
        f[n++] = t;
    long idx = -1;
    char b[16] = "", name[96] = "";
    if (c->csv_idx >= 0 && c->csv_idx < n && !dp_is_int(dp_skip_ws(f[c->csv_idx]), &idx))
        return;
    if (c->csv_bus >= 0 && c->csv_bus < n && dp_find_busid(f[c->csv_bus], b, sizeof b) != 0)
        return;
    if (c->csv_name >= 0 && c->csv_name < n)
        dp_trim_copy(name, sizeof name, f[c->csv_name], f[c->csv_name] + strlen(f[c->csv_name]));
    int r = dp_rec_get(c, "smi", idx >= 0 ? DR_NS_SMI : DR_NS_NONE, (int)idx, b, name);
    if (r < 0)
        return;
    dr_grec *g = &c->m->recs[r];
    if (c->csv_mem >= 0 && c->csv_mem < n)
        dp_setn(c, &g->vram_mib, dp_parse_mib(f[c->csv_mem]));
    if (c->csv_gen >= 0 && c->csv_gen < n && atoi(f[c->csv_gen]) > 0)
        dp_setn(c, &g->gen_cur, atoi(f[c->csv_gen]));
    if (c->csv_genmax >= 0 && c->csv_genmax < n && atoi(f[c->csv_genmax]) > 0)
        dp_setn(c, &g->gen_max, atoi(f[c->csv_genmax]));
    if (c->csv_w >= 0 && c->csv_w < n && atoi(f[c->csv_w]) > 0)
        dp_setn(c, &g->width_cur, atoi(f[c->csv_w]));
    if (c->csv_wmax >= 0 && c->csv_wmax < n && atoi(f[c->csv_wmax]) > 0)
        dp_setn(c, &g->width_max, atoi(f[c->csv_wmax]));
    if (c->csv_disp >= 0 && c->csv_disp < n)
        dp_setn(c, &g->display, strstr(f[c->csv_disp], "Enabled") ? 1 : 0);
    dp_kind(c, DR_K_SMI);
}

/* ------------------------------------------------------------ nvlink -s */

static void nv_close(dp_ctx *c)
{
    if (c->nv_rec >= 0 && c->nv_seen)
        dp_setn(c, &c->m->recs[c->nv_rec].nvlinks, c->nv_active);
}

void dp_nvlink(dp_ctx *c, const char *line)
{
    const char *p = dp_skip_ws(line);
    if (strstr(line, "all links are inActive") || strstr(line, "all links are inactive")) {
        dp_kind(c, DR_K_NVLINK);
        return;
    }
    if (strncmp(p, "Link ", 5) != 0 || !isdigit((unsigned char)p[5]) || c->nv_rec < 0)
        return;
    const char *colon = strchr(p, ':');
    if (!colon)
        return;
    c->nv_seen = 1;
    const char *v = dp_skip_ws(colon + 1);
    if (strstr(v, "inactive") || strstr(v, "<inactive>") || strstr(v, "Inactive")) {
        /* counted as seen */
    } else if (isdigit((unsigned char)*v) && strstr(v, "GB/s")) {
        c->nv_active++;
    }
    c->m->recs[c->nv_rec].nvlinks.v = -1;
    nv_close(c);
    dp_kind(c, DR_K_NVLINK);
}
