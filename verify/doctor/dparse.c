/* dparse.c - p2p-doctor's parsers (pure C).  See dparse.h.
 *
 * One context per file; dp_line hands each line to every parser below.
 * Each parser returns quickly unless the line has its marker. */
#define _POSIX_C_SOURCE 200809L
#include "dparse.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "djson.h"
#include "ncclparse.h"
#include "results.h"
#include "sysparse.h"

#define JSON_MAX (64u << 20)
#define Q_DEPTH 12
#define MAX_RANKS 256

enum { T_NONE = 0, T_ACCESS01, T_UNI_ON, T_UNI_OFF, T_BI_ON, T_BI_OFF, T_LAT_ON, T_LAT_OFF, T_IGNORE };

struct dp_ctx {
    dr_model *m;
    int fi;
    const char *fname;
    long ln;
    const char *line;
    /* CUDA_VISIBLE_DEVICES of the run being read: its index i is CUDA's cvd[i] */
    int cvd[DR_MAX_GPUS], ncvd, cvd_export;
    /* nvidia-smi -q */
    int q_rec, q_blocks, q_full;
    int q_depth, q_ind[Q_DEPTH];
    char q_hdr[Q_DEPTH][48];
    /* nvidia-smi table */
    int t_rec;
    /* matrices */
    int mx_style; /* 0 none, 1 "GPU0 GPU1" header (nvidia-smi), 2 "D\D 0 1" (CUDA) */
    int mx_ncol, mx_cols[DR_MAX_GPUS], mx_numa, mx_title, mx_rows;
    int title;
    double *bw; /* [3][2][N][N] */
    dr_ev bw_ev[3][2];
    /* lspci */
    int pci_kind, pci_idx, pci_mem, pci_bar1_reg, pci_in_rebar;
    /* nvlink -s */
    int nv_rec, nv_seen, nv_active;
    /* simpleP2P */
    int sp_a, sp_b, sp_errs;
    dr_ev sp_ev;
    /* NCCL */
    int rank_dev[MAX_RANKS];
    int nt_wrong[4], nt_nwrong;
    /* API mismatch block */
    int api_left, api_nv;
    char api_v[2][24];
    /* modinfo block */
    int mi_on, mi_signed;
    dr_ev mi_ev;
    /* nvidia-smi --query-gpu csv */
    int csv_on, csv_idx, csv_name, csv_bus, csv_mem, csv_gen, csv_genmax, csv_w, csv_wmax, csv_disp;
    /* JSON (p2p-verify --json) */
    char *js;
    size_t js_len, js_cap;
    int js_on, js_over;
    /* p2p-verify text */
    int vt_on;
    /* deviceQuery, /proc/driver/nvidia/gpus */
    char gl_name[96];
    int gl_idx;
    /* the file is named as a command line (cmdline.txt): every line is one */
    int hint_cmdline;
    /* a "topo -p2p <mode>" command line was seen: the next GPU matrix is
     * one, of that mode (r, w, x for rw, p, n for NVLink, a for atomics, ?) */
    int p2p_ctx, mx_p2pmode;
    /* the line before was "cat /proc/cmdline" */
    int cmdline_next;
    /* torch.cuda.can_device_access_peer(a, b) without its answer yet */
    int torch_a, torch_b;
    /* sysfs (collect) */
    int sf_rec;
    char sf_busid[16];
    /* matrix rows shorter than their header (cut or wrapped: the last value is
     * not read), values that are no numbers ("41,47": not read) */
    int mx_short, mx_bad;
    char mx_bad_tok[24];
    /* nvbandwidth: the test of the last "Running <test>." line, where in its
     * matrix (0 none, 1 title seen, 2 in it), the columns, the figures */
    int nvb_test, nvb_state, nvb_ncol, nvb_cols[DR_MAX_GPUS];
    int nvb_on, nvb_ndev; /* its "nvbandwidth Version:" line seen; GPUs it listed */
    struct nvb_data *nvb;
    /* setpci: reads whose value is on a following line, and the register of a
     * loop over devices ("for d in ...; do echo $d; setpci -s $d REG; done") */
    dr_setpci sp_pending[4];
    int sp_npending, sp_loop;
    dr_setpci sp_loopreg;
    /* the loop's devices are PLX switch ports ("for d in $(lspci | grep -i
     * plx ...)"): its values print without their addresses */
    int sp_plx;
    char sp_for_var[24], sp_for_bdf[16][16]; /* a shell loop's variable and its list of devices */
    int sp_for_n;
    /* lspci -t: the bus of the devices that start at each column, the domain
     * and root bus of the tree being read */
    short lt_bus[256];
    int lt_on, lt_dom, lt_root;
    /* NCCL runs: NCCL_P2P_DISABLE=1 exported, or on the next run's command
     * line; the open run (nccl-tests) and its bus bandwidth */
    int nc_env_off, nc_cmd_off, nc_run, nc_off, nc_busbw_col;
    dr_busbw nc_bus;
    /* p2p-verify text: its NCCL table and the GPUs of its NCCL runs */
    int vt_nccl, vt_ndev, vt_dev[2];
    /* test outputs and whether they reached their end: 0 not seen, 1 begun,
     * 2 ended; nccl-tests: its column header, its result rows */
    int cut_p2pbw, cut_sp, cut_nc, cut_nc_rows;
    int cut_mx, cut_mx_ncol, cut_mx_rows; /* p2pBandwidthLatencyTest: in a matrix, its columns, its rows */
    char cut_where[64]; /* where the begun output was last: "its first bandwidth matrix" */
    dr_ev cut_last;     /* the last non-empty line */
};

/* nvbandwidth's figures: P2P copies per ordered pair (data from a to b), and
 * each GPU's copies to and from host memory, GB/s (NAN unknown). */
struct nvb_data {
    double d2d[DR_MAX_GPUS][DR_MAX_GPUS];
    double h2d[DR_MAX_GPUS], d2h[DR_MAX_GPUS];
    dr_ev ev; /* the first row of P2P figures */
};

/* ------------------------------------------------------------ helpers */

static int ci_starts(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*prefix))
            return 0;
    return 1;
}

static const char *ci_find(const char *hay, const char *needle)
{
    if (!*needle)
        return hay;
    for (; *hay; hay++)
        if (tolower((unsigned char)*hay) == tolower((unsigned char)*needle) && ci_starts(hay, needle))
            return hay;
    return NULL;
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static void trim_copy(char *out, size_t outlen, const char *b, const char *e)
{
    while (b < e && isspace((unsigned char)*b))
        b++;
    while (e > b && isspace((unsigned char)e[-1]))
        e--;
    size_t l = (size_t)(e - b);
    if (l >= outlen)
        l = outlen - 1;
    memcpy(out, b, l);
    out[l] = '\0';
}

static int is_int(const char *s, long *v)
{
    char *end = NULL;
    if (!isdigit((unsigned char)*s))
        return 0;
    long x = strtol(s, &end, 10);
    if (*end)
        return 0;
    *v = x;
    return 1;
}

static void ev(dp_ctx *c, dr_ev *e)
{
    dr_ev_make(e, c->fname, c->ln, c->line);
}

static void evt(dp_ctx *c, dr_ev *e, const char *text)
{
    dr_ev_make(e, c->fname, c->ln, text);
}

static void setn(dp_ctx *c, dr_num *n, long long v)
{
    dr_ev e;
    ev(c, &e);
    dr_set(n, v, &e);
}

/* Overwrite: the later line of the same output is the newer state. */
static void setn_force(dp_ctx *c, dr_num *n, long long v)
{
    n->v = -1;
    setn(c, n, v);
}

static int hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = tolower(ch);
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

int dp_find_busid(const char *s, char *out, size_t outlen)
{
    if (!s)
        return -1;
    size_t n = strlen(s);
    for (size_t i = 0; i + 7 <= n; i++) {
        /* bb:dd.f at i */
        const char *p = s + i;
        if (hexval(p[0]) < 0 || hexval(p[1]) < 0 || p[2] != ':' || hexval(p[3]) < 0 || hexval(p[4]) < 0 ||
            p[5] != '.' || !(p[6] >= '0' && p[6] <= '7'))
            continue;
        if (i > 0 && (isalnum((unsigned char)p[-1]) && p[-1] != ':'))
            continue;
        if (i + 7 < n && isalnum((unsigned char)p[7]))
            continue;
        /* a domain before it: hex digits then ':' */
        unsigned dom = 0;
        if (i >= 2 && p[-1] == ':') {
            size_t k = i - 1, digits = 0;
            while (k > 0 && hexval(s[k - 1]) >= 0 && digits < 8) {
                k--;
                digits++;
            }
            if (digits >= 1 && (k == 0 || !isalnum((unsigned char)s[k - 1]) || s[k - 1] == ':')) {
                for (size_t t = k; t < i - 1; t++)
                    dom = dom * 16 + (unsigned)hexval(s[t]);
            }
        }
        unsigned bus = (unsigned)(hexval(p[0]) * 16 + hexval(p[1]));
        unsigned dev = (unsigned)(hexval(p[3]) * 16 + hexval(p[4]));
        if (dev > 0x1f || dom > 0xffff)
            continue;
        snprintf(out, outlen, "%04x:%02x:%02x.%c", dom, bus, dev, p[6]);
        return 0;
    }
    /* "PCI:0000:01:00" (NVRM's own form, no function) */
    const char *q = strstr(s, "PCI:");
    if (q) {
        unsigned dom, bus, dev;
        if (sscanf(q + 4, "%x:%x:%x", &dom, &bus, &dev) == 3 && bus <= 0xff && dev <= 0x1f && dom <= 0xffff) {
            snprintf(out, outlen, "%04x:%02x:%02x.0", dom, bus, dev);
            return 0;
        }
    }
    return -1;
}

static int find_versions(const char *s, char out[][24], int max)
{
    int n = 0;
    size_t len = strlen(s);
    for (size_t i = 0; i < len && n < max; i++) {
        if (!isdigit((unsigned char)s[i]) || (i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '.')))
            continue;
        size_t j = i, parts = 0, digits[4] = {0};
        while (j < len && parts < 4) {
            size_t d = 0;
            while (j < len && isdigit((unsigned char)s[j])) {
                j++;
                d++;
            }
            digits[parts++] = d;
            if (j < len && s[j] == '.' && j + 1 < len && isdigit((unsigned char)s[j + 1]))
                j++;
            else
                break;
        }
        if (j < len && (isalnum((unsigned char)s[j])))
            continue;
        if (parts < 2 || parts > 3 || digits[0] != 3 || digits[1] > 3 || (parts == 3 && digits[2] > 3) ||
            s[i] < '3') {
            i = j;
            continue;
        }
        size_t l = j - i;
        if (l < 24) {
            memcpy(out[n], s + i, l);
            out[n][l] = '\0';
            n++;
        }
        i = j;
    }
    return n;
}

int dp_find_version(const char *s, char *out, size_t outlen)
{
    char v[1][24];
    if (!s || find_versions(s, v, 1) < 1)
        return -1;
    snprintf(out, outlen, "%s", v[0]);
    return 0;
}

int dp_vercmp(const char *a, const char *b)
{
    while (*a || *b) {
        long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
        if (x != y)
            return x < y ? -1 : 1;
        if (*a == '.')
            a++;
        if (*b == '.')
            b++;
        if (!*a && !*b)
            break;
        if (!isdigit((unsigned char)*a) && *a)
            break;
        if (!isdigit((unsigned char)*b) && *b)
            break;
    }
    return 0;
}

void dp_model_key(const char *name, char *out, size_t outlen)
{
    char buf[128];
    const char *b = strchr(name, '[');
    const char *e = b ? strchr(b, ']') : NULL;
    if (b && e && e > b + 1) /* lspci: "AD102 [GeForce RTX 4090]" */
        trim_copy(buf, sizeof buf, b + 1, e);
    else
        snprintf(buf, sizeof buf, "%s", name);
    char *tok[16];
    int n = pv_tokenize(buf, tok, 16);
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char t[64];
        snprintf(t, sizeof t, "%s", tok[i]);
        for (char *p = t; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        if (!strcmp(t, "nvidia") || !strcmp(t, "corporation") || !strcmp(t, "geforce") || !strcmp(t, "corp."))
            continue;
        size_t tl = strlen(t);
        if (o + tl + 2 >= outlen)
            break;
        if (o)
            out[o++] = ' ';
        memcpy(out + o, t, tl);
        o += tl;
        out[o] = '\0';
    }
}

static long long size_to_mib(double v, const char *unit)
{
    char u = (char)toupper((unsigned char)unit[0]);
    double mib = -1;
    if (u == 'K')
        mib = v / 1024.0;
    else if (u == 'M')
        mib = v;
    else if (u == 'G')
        mib = v * 1024.0;
    else if (u == 'T')
        mib = v * 1024.0 * 1024.0;
    return mib < 0 ? -1 : (long long)llround(mib);
}

/* "24564 MiB", "32G", "256MB", "16 GiB" -> MiB; -1 if none. */
static long long parse_mib(const char *s)
{
    s = skip_ws(s);
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    end = (char *)skip_ws(end);
    if (!isalpha((unsigned char)*end))
        return -1;
    return size_to_mib(v, end);
}

static int gts_to_gen(double gts)
{
    if (gts < 1)
        return -1;
    if (gts < 3)
        return 1;
    if (gts < 6)
        return 2;
    if (gts < 10)
        return 3;
    if (gts < 20)
        return 4;
    if (gts < 40)
        return 5;
    return 6;
}

/* ------------------------------------------------------------ records */

static int rec_find(dp_ctx *c, const char *src, int ns, int index, const char *busid)
{
    dr_model *m = c->m;
    for (int r = 0; r < m->nrecs; r++) {
        dr_grec *g = &m->recs[r];
        if (strcmp(g->file, c->fname) != 0 || g->anon)
            continue;
        if (busid && busid[0] && g->busid[0]) {
            if (!strcmp(g->busid, busid))
                return r;
            continue;
        }
        if (ns && g->ns == ns && index >= 0 && g->index == index && (!src || !strcmp(g->src, src) ||
                                                                      !busid || !busid[0] || !g->busid[0]))
            return r;
    }
    return -1;
}

/* The record of a GPU in this file (found or new); -1 when full. */
static int rec_get(dp_ctx *c, const char *src, int ns, int index, const char *busid, const char *name)
{
    dr_model *m = c->m;
    if (index >= DR_MAX_GPUS * 4)
        return -1;
    int r = rec_find(c, src, ns, index, busid);
    if (r < 0) {
        if (m->nrecs >= DR_MAX_RECS) {
            m->truncated_recs++;
            return -1;
        }
        r = m->nrecs++;
        dr_grec_reset(&m->recs[r]);
        snprintf(m->recs[r].file, sizeof m->recs[r].file, "%s", c->fname);
        snprintf(m->recs[r].src, sizeof m->recs[r].src, "%s", src);
        m->recs[r].line = c->ln;
    }
    dr_grec *g = &m->recs[r];
    if (ns && index >= 0 && g->index < 0) {
        g->ns = ns;
        g->index = index;
        if (ns == DR_NS_CUDA && index < c->ncvd)
            g->cuda_abs = c->cvd[index];
    }
    if (busid && busid[0] && !g->busid[0])
        snprintf(g->busid, sizeof g->busid, "%s", busid);
    if (name && name[0] && !g->name[0])
        snprintf(g->name, sizeof g->name, "%s", name);
    return r;
}

static int rec_anon(dp_ctx *c, const char *src)
{
    dr_model *m = c->m;
    if (m->nrecs >= DR_MAX_RECS) {
        m->truncated_recs++;
        return -1;
    }
    int r = m->nrecs++;
    dr_grec_reset(&m->recs[r]);
    m->recs[r].anon = 1;
    snprintf(m->recs[r].file, sizeof m->recs[r].file, "%s", c->fname);
    snprintf(m->recs[r].src, sizeof m->recs[r].src, "%s", src);
    return r;
}

static void pobs_add(dp_ctx *c, int kind, int ns, int a, int b, int val, double x, double y, const char *text,
                     const dr_ev *e)
{
    dr_model *m = c->m;
    if (a == b || a < 0 || b < 0 || a >= DR_MAX_GPUS || b >= DR_MAX_GPUS)
        return;
    if (m->npobs >= DR_MAX_POBS) {
        m->truncated_recs++;
        return;
    }
    dr_pobs *o = &m->pobs[m->npobs++];
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->ns = ns;
    o->a = a;
    o->b = b;
    o->val = val;
    o->x = x;
    o->y = y;
    if (text)
        snprintf(o->text, sizeof o->text, "%s", text);
    if (e)
        o->ev = *e;
    else
        ev(c, &o->ev);
}

static void kind(dp_ctx *c, unsigned k)
{
    c->m->files[c->fi].kinds |= k;
}

/* ------------------------------------------------------------ registry keys */

static void regkeys_parse(dp_ctx *c, dr_regkeys *rk, const char *s)
{
    /* s: the value, possibly quoted: "A=1;B=0x2" */
    char buf[512];
    s = skip_ws(s);
    if (*s == '"' || *s == '\'')
        s++;
    snprintf(buf, sizeof buf, "%s", s);
    char *q = strpbrk(buf, "\"'");
    if (q)
        *q = '\0';
    rk->present = 1;
    rk->n = 0;
    ev(c, &rk->ev);
    char *save = NULL;
    for (char *item = strtok_r(buf, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || rk->n >= DR_MAX_KEYS)
            continue;
        *eq = '\0';
        char key[40];
        trim_copy(key, sizeof key, item, eq);
        char *end = NULL;
        const char *vs = skip_ws(eq + 1);
        long long v = strtoll(vs, &end, 0);
        if (!key[0] || end == vs)
            continue;
        snprintf(rk->key[rk->n], sizeof rk->key[0], "%s", key);
        rk->val[rk->n++] = v;
    }
}

/* "options nvidia ...", "nvidia.NVreg_...=" on a command line, Talos/NixOS
 * key = value forms: the NVreg_ options a machine is configured with. */
static void p_modopts(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "NVreg_");
    if (!p || strstr(line, "parm:"))
        return;
    dr_sys *s = &c->m->sys;
    for (; p; p = strstr(p + 6, "NVreg_")) {
        const char *name = p + 6;
        const char *eq = name;
        while (*eq && (isalnum((unsigned char)*eq) || *eq == '_'))
            eq++;
        size_t nl = (size_t)(eq - name);
        const char *v = skip_ws(eq);
        if (*v == ':' && (nl == 14 && !strncmp(name, "RegistryDwords", 14)))
            v = skip_ws(v + 1); /* "NVreg_RegistryDwords: ..." yaml-ish */
        else if (*v == '=' || *v == ':')
            v = skip_ws(v + 1);
        else
            continue;
        if (nl == 14 && !strncmp(name, "RegistryDwords", 14)) {
            regkeys_parse(c, &s->configured, v);
            kind(c, DR_K_MODOPTS);
        } else if (nl == 18 && !strncmp(name, "EnableResizableBar", 18)) {
            if (*v == '"' || *v == '\'')
                v++;
            if (isdigit((unsigned char)*v)) {
                setn_force(c, &s->rebar_option_configured, strtol(v, NULL, 0) ? 1 : 0);
                kind(c, DR_K_MODOPTS);
            }
        }
    }
}

/* /proc/driver/nvidia/params: "RegistryDwords: "A=1;B=2"", "EnableResizableBar: 1";
 * module parameter lists without the NVreg_ prefix (Talos, NixOS):
 * "RegistryDwords="A=1;B=2"", configured. */
static void p_params(dp_ctx *c, const char *line)
{
    const char *p = skip_ws(line);
    dr_sys *s = &c->m->sys;
    if (!strncmp(p, "RegistryDwords=", 15) || !strncmp(p, "RegistryDwords =", 16)) {
        regkeys_parse(c, &s->configured, strchr(p, '=') + 1);
        kind(c, DR_K_MODOPTS);
        return;
    }
    if (!strncmp(p, "EnableResizableBar=", 19)) {
        setn_force(c, &s->rebar_option_configured, strtol(p + 19, NULL, 0) ? 1 : 0);
        kind(c, DR_K_MODOPTS);
        return;
    }
    if (!strncmp(p, "RegistryDwords:", 15)) {
        regkeys_parse(c, &s->applied, p + 15);
        kind(c, DR_K_PARAMS);
    } else if (!strncmp(p, "EnableResizableBar:", 19)) {
        setn_force(c, &s->rebar_option_applied, strtol(skip_ws(p + 19), NULL, 0) ? 1 : 0);
        kind(c, DR_K_PARAMS);
    }
}

/* ------------------------------------------------------------ kernel command line */

static void cmdline_tokens(dp_ctx *c, const char *s)
{
    char buf[DP_LINE_MAX];
    snprintf(buf, sizeof buf, "%s", s);
    char *tok[256];
    int n = pv_tokenize(buf, tok, 256);
    dr_sys *m = &c->m->sys;
    for (int i = 0; i < n; i++) {
        char *t = tok[i];
        while (*t == '"' || *t == '\'')
            t++;
        size_t l = strlen(t);
        while (l && (t[l - 1] == '"' || t[l - 1] == '\''))
            t[--l] = '\0';
        if (!strcmp(t, "iommu=pt") || !strcmp(t, "iommu.passthrough=1") || !strcmp(t, "iommu.passthrough=on"))
            setn_force(c, &m->cmd_iommu_pt, 1);
        else if (!strcmp(t, "iommu=nopt") || !strcmp(t, "iommu.passthrough=0"))
            setn_force(c, &m->cmd_iommu_pt, 0);
        else if (!strcmp(t, "intel_iommu=off") || !strcmp(t, "amd_iommu=off") || !strcmp(t, "iommu=off"))
            setn_force(c, &m->iommu_off, 1);
        else if (!strncmp(t, "intel_iommu=", 12) && strstr(t + 12, "on"))
            setn_force(c, &m->cmd_iommu_on, 1);
        else if (!strcmp(t, "amd_iommu=on") || !strcmp(t, "amd_iommu=force_isolation"))
            setn_force(c, &m->cmd_iommu_on, 1);
        else if (!strncmp(t, "pcie_acs_override=", 18))
            setn_force(c, &m->acs_override, 1);
    }
    kind(c, DR_K_CMDLINE);
    p_modopts(c, s);
}

static void p_cmdline(dp_ctx *c, const char *line)
{
    const char *p;
    if (c->cmdline_next) {
        c->cmdline_next = 0;
        if (strchr(line, '=') && !strstr(line, "cat /proc/cmdline")) {
            cmdline_tokens(c, line);
            return;
        }
    }
    size_t ll = strlen(line);
    if (ll >= 17 && !strcmp(line + ll - 17, "cat /proc/cmdline")) {
        c->cmdline_next = 1;
        return;
    }
    if (c->hint_cmdline && !strchr(line, '$') && !strchr(line, '#') && strchr(line, '=')) {
        cmdline_tokens(c, line);
        return;
    }
    if ((p = strstr(line, "Kernel command line:")) || (p = strstr(line, "Command line:"))) {
        cmdline_tokens(c, strchr(p, ':') + 1);
        return;
    }
    if ((p = strstr(line, "GRUB_CMDLINE_LINUX"))) {
        const char *eq = strchr(p, '=');
        if (eq)
            cmdline_tokens(c, eq + 1);
        return;
    }
    if (strstr(line, "BOOT_IMAGE=") || (strstr(line, "root=") && (strstr(line, " ro") || strstr(line, " rw"))))
        cmdline_tokens(c, line);
}

/* ------------------------------------------------------------ kernel log */

static void fault_dev(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    char b[16], buf[160];
    const char *d = strstr(line, "device=");
    if (!d)
        d = strstr(line, "device [");
    if (!d)
        d = strstr(line, "Request device");
    /* newer kernels: "Request device [0xca:0x00.0]" */
    size_t o = 0;
    for (const char *q = d ? d : line; *q && o + 1 < sizeof buf; q++) {
        if (q[0] == '0' && q[1] == 'x' && isxdigit((unsigned char)q[2]) && (q == line || !isalnum((unsigned char)q[-1]))) {
            q++;
            continue;
        }
        buf[o++] = *q;
    }
    buf[o] = '\0';
    if (dp_find_busid(buf, b, sizeof b) != 0)
        return;
    for (int i = 0; i < s->nfault_dev; i++)
        if (!strcmp(s->fault_dev[i], b))
            return;
    if (s->nfault_dev < 8) {
        snprintf(s->fault_dev[s->nfault_dev], 16, "%s", b);
        ev(c, &s->fault_dev_ev[s->nfault_dev]);
        s->nfault_dev++;
    }
}

static void p_api_mismatch(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    if (strstr(line, "API mismatch")) {
        c->api_left = 4;
        c->api_nv = 0;
        setn(c, &s->api_mismatch, 1);
        kind(c, DR_K_DMESG);
    }
    if (c->api_left <= 0)
        return;
    c->api_left--;
    char v[3][24];
    int n = find_versions(line, v, 3);
    for (int i = 0; i < n && c->api_nv < 2; i++)
        memcpy(c->api_v[c->api_nv++], v[i], 24);
    if (c->api_nv == 2) {
        snprintf(s->api_client, sizeof s->api_client, "%s", c->api_v[0]);
        snprintf(s->api_module, sizeof s->api_module, "%s", c->api_v[1]);
        c->api_left = 0;
    }
}

static void p_dmesg(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    p_api_mismatch(c, line);
    /* "nvidia 0000:84:00.0: ...": the kernel names a device the nvidia
     * driver is bound to, an NVIDIA GPU */
    const char *nv = strstr(line, "nvidia 0000:");
    char nb[16];
    if (nv && dp_find_busid(nv + 7, nb, sizeof nb) == 0 && !strncmp(nv + 7, nb, 12))
        rec_get(c, "dmesg", DR_NS_NONE, -1, nb, NULL);
    if (strstr(line, "IO_PAGE_FAULT") || strstr(line, "DMAR: [DMA") || strstr(line, "DMAR:[DMA") ||
        strstr(line, "PTE Read access is not set") || strstr(line, "PTE Write access is not set") ||
        (strstr(line, "smmu") && strstr(line, "Unhandled context fault"))) {
        s->iommu_fault.v = s->iommu_fault.v < 0 ? 1 : s->iommu_fault.v + 1;
        if (s->iommu_fault.ev.line == 0)
            ev(c, &s->iommu_fault.ev);
        fault_dev(c, line);
        setn(c, &s->iommu_present, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "Default domain type:")) {
        /* the kernel's policy, printed with or without IOMMU hardware */
        if (strstr(line, "Translated"))
            setn_force(c, &s->iommu_translated, 1);
        else if (strstr(line, "Passthrough"))
            setn_force(c, &s->iommu_translated, 0);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "DMAR: IOMMU enabled") || strstr(line, "AMD-Vi: Interrupt remapping enabled") ||
        strstr(line, "AMD-Vi: Found IOMMU") || strstr(line, "Adding to iommu group") ||
        strstr(line, "AMD IOMMUv2") || strstr(line, "DMAR-IR: Enabled IRQ remapping") ||
        strstr(line, "perf/amd_iommu: Detected AMD IOMMU")) {
        setn(c, &s->iommu_present, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "DMAR: IOMMU disabled") || strstr(line, "AMD-Vi: AMD IOMMU disabled")) {
        setn(c, &s->iommu_off, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "Hypervisor detected") || strstr(line, "Booting paravirtualized kernel on")) {
        if (!strstr(line, "bare hardware"))
            setn(c, &s->vm_guest, 1);
        return;
    }
    const char *p;
    if ((p = strstr(line, "NVRM: loading NVIDIA UNIX"))) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0) {
            snprintf(s->loaded_version, sizeof s->loaded_version, "%s", v);
            ev(c, &s->loaded_version_ev);
        }
        setn_force(c, &s->module_open, strstr(p, "Open Kernel Module") ? 1 : 0);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "rm_init_adapter failed") || strstr(line, "None of the NVIDIA devices were initialized") ||
        strstr(line, "The NVIDIA probe routine failed")) {
        setn(c, &s->init_failed, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "No devices were found")) {
        setn(c, &s->no_gpu_found, 1);
        return;
    }
    if (strstr(line, "peer access is not supported between these two devices") ||
        strstr(line, "lacks GPU P2P capability")) {
        setn(c, &s->p2p_unavailable, 1);
        kind(c, DR_K_CUDAERR);
        return;
    }
    if (strstr(line, "could not insert 'nvidia'") && strstr(line, "Operation not permitted")) {
        setn(c, &s->insert_eperm, 1);
        return;
    }
    if (strstr(line, "RmInitAdapter failed")) {
        setn(c, &s->init_failed, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "fallen off the bus")) {
        setn(c, &s->fell_off_bus, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "NVRM: No NVIDIA GPU found")) {
        setn(c, &s->no_gpu_found, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if ((p = strstr(line, "NVRM: BAR")) && strstr(line, "M @ 0x")) {
        int bar = atoi(p + 9);
        long mb = atol(p + 11);
        char b[16];
        if (bar == 1 && mb == 0 && dp_find_busid(line, b, sizeof b) == 0 && s->nbar1_invalid < 8) {
            snprintf(s->bar1_invalid[s->nbar1_invalid].busid, 16, "%s", b);
            ev(c, &s->bar1_invalid[s->nbar1_invalid].ev);
            s->nbar1_invalid++;
        }
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "No address space to allocate resized BAR1") || strstr(line, "BAR resizing failed") ||
        strstr(line, "BAR resize resource not supported") || strstr(line, "Fatal Error while attempting to resize") ||
        strstr(line, "Not resizing BAR because the firmware forbids")) {
        setn(c, &s->rebar_failed, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    /* RM's static BAR1 peer mapping (_kbusCreateStaticBar1IOMMUMapping and
     * ..ForGpuPair, kern_bus_gh100.c), as pasted with or without timestamps */
    if ((p = strstr(line, "peer DMA address 0x")) && strstr(line, "is not aligned")) {
        size_t n = strspn(p + 17, "0123456789abcdefABCDEFx");
        snprintf(s->peer_map_addr, sizeof s->peer_map_addr, "%.*s", (int)(n < 23 ? n : 23), p + 17);
        setn(c, &s->peer_map_unaligned, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if ((p = strstr(line, "IOMMU mapping failed from GPU"))) {
        int a = -1, b = -1;
        if (sscanf(p, "IOMMU mapping failed from GPU%d to GPU%d", &a, &b) == 2 && s->peer_map_from < 0) {
            s->peer_map_from = a;
            s->peer_map_to = b;
        }
        setn(c, &s->peer_map_failed, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "is not large enough to map FB") || ci_find(line, "staticbar1") ||
        (ci_find(line, "static bar1") && (ci_find(line, "fail") || ci_find(line, "error")))) {
        if (!strstr(line, "is not large enough to map FB") && !ci_find(line, "fail") && !ci_find(line, "error"))
            return;
        setn(c, &s->static_bar1_error, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if ((p = strstr(line, "BAR ")) && (strstr(line, "no space") || strstr(line, "failed to assign") ||
                                       strstr(line, "can't assign"))) {
        char b[16];
        if (dp_find_busid(line, b, sizeof b) == 0 && s->nnospace < 8) {
            int bar = atoi(p + 4);
            for (int i = 0; i < s->nnospace; i++)
                if (!strcmp(s->nospace[i].busid, b) && s->nospace[i].bar == bar)
                    return;
            snprintf(s->nospace[s->nnospace].busid, 16, "%s", b);
            s->nospace[s->nnospace].bar = bar;
            ev(c, &s->nospace[s->nnospace].ev);
            s->nnospace++;
            kind(c, DR_K_DMESG);
        }
        return;
    }
    if (strstr(line, "Loading of unsigned module is rejected") || strstr(line, "Key was rejected by service") ||
        strstr(line, "Loading of module with unavailable key is rejected") ||
        strstr(line, "Required key not available") ||
        (strstr(line, "Lockdown:") && strstr(line, "unsigned module"))) {
        setn(c, &s->module_rejected, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "module verification failed: signature and/or required key missing") &&
        ci_find(line, "nvidia")) {
        /* the kernel loaded it anyway (tainted): nothing is enforced */
        setn(c, &s->unsigned_loaded, 1);
        kind(c, DR_K_DMESG);
        return;
    }
    if (ci_find(line, "secure boot enabled") || strstr(line, "SecureBoot enabled") ||
        ci_find(line, "secure boot: enabled") ||
        strstr(line, "locked down from EFI Secure Boot")) {
        setn_force(c, &s->secure_boot, 1);
        kind(c, DR_K_SECBOOT);
        return;
    }
    if (ci_find(line, "secure boot disabled") || strstr(line, "SecureBoot disabled") ||
        ci_find(line, "secure boot: disabled") ||
        strstr(line, "EFI variables are not supported")) {
        setn_force(c, &s->secure_boot, 0);
        kind(c, DR_K_SECBOOT);
        return;
    }
    if (strstr(line, "unsupported display driver / cuda driver combination") ||
        strstr(line, "cudaErrorSystemDriverMismatch")) {
        setn(c, &s->cuda_driver_mismatch, 1);
        return;
    }
    if (strstr(line, "Driver/library version mismatch")) {
        setn(c, &s->nvml_mismatch, 1);
        return;
    }
    if ((p = strstr(line, "NVML library version:"))) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0 && s->nuserspace < 4) {
            snprintf(s->userspace_versions[s->nuserspace++], 24, "%s", v);
            ev(c, &s->userspace_ev);
            kind(c, DR_K_USERSPACE);
        }
        return;
    }
    if (strstr(line, "couldn't communicate with the NVIDIA driver") ||
        strstr(line, "NVIDIA driver is not loaded")) {
        setn(c, &s->driver_not_loaded, 1);
        return;
    }
    if (strstr(line, "illegal memory access") || strstr(line, "cudaErrorMapBufferObjectFailed") ||
        strstr(line, "mapping of buffer object failed") || strstr(line, "cudaErrorIllegalAddress") ||
        strstr(line, "cudaErrorPeerAccessUnsupported")) {
        if (strstr(line, "illegal memory access"))
            setn(c, &s->illegal_access, 1);
        if (s->p2p_error.v < 0 && c->sp_a >= 0 && c->sp_b >= 0) {
            s->p2p_error_a = c->sp_a;
            s->p2p_error_b = c->sp_b;
        }
        setn(c, &s->p2p_error, 1);
        kind(c, DR_K_CUDAERR);
        return;
    }
    if ((strstr(line, "vgaarb: setting as boot VGA device") || strstr(line, "nvidia-drmdrmfb frame buffer device") ||
         (strstr(line, "fbcon:") && strstr(line, "nvidia-drm") && strstr(line, "primary device"))) &&
        s->nconsole < 8) {
        char b[16];
        if (dp_find_busid(line, b, sizeof b) == 0) {
            snprintf(s->console[s->nconsole].busid, 16, "%s", b);
            ev(c, &s->console[s->nconsole].ev);
            s->nconsole++;
            kind(c, DR_K_DMESG);
        }
        return;
    }
    /* NCCL: "Could not enable P2P between dev 1(=41000) and dev 0(=1000)" */
    if ((p = strstr(line, "Could not enable P2P between dev "))) {
        int a = atoi(p + 33);
        const char *q = strstr(p + 33, " and dev ");
        if (q)
            pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, a, atoi(q + 9), 0, 0, 0, NULL, NULL);
        kind(c, DR_K_NCCL);
        return;
    }
    if ((p = strstr(line, "nouveau ")) && dp_find_busid(p, (char[16]){0}, 16) == 0) {
        setn(c, &s->nouveau, 1);
        return;
    }
}

/* ------------------------------------------------------------ versions, modinfo, userspace */

/* deviceQuery: "Device 0: "NVIDIA GeForce RTX 4090"" then "Device PCI Domain ID / Bus
 * ID / location ID: 0 / 1 / 0"; /proc/driver/nvidia/gpus/X/information:
 * "Model: NVIDIA ..." then "Bus Location: 0000:01:00.0". */
static void p_gpulist(dp_ctx *c, const char *line)
{
    const char *p = skip_ws(line);
    if (!strncmp(p, "Device ", 7) && isdigit((unsigned char)p[7]) && strstr(p, ": \"")) {
        const char *q = strchr(p, '"'), *e = q ? strchr(q + 1, '"') : NULL;
        if (q && e) {
            trim_copy(c->gl_name, sizeof c->gl_name, q + 1, e);
            c->gl_idx = atoi(p + 7);
            rec_get(c, "devquery", DR_NS_CUDA, c->gl_idx, NULL, c->gl_name);
            kind(c, DR_K_DEVQUERY);
        }
        return;
    }
    if (strstr(p, "Device PCI Domain ID / Bus ID") && c->gl_idx >= 0) {
        const char *q = strrchr(p, ':');
        unsigned dom, bus, dev;
        if (q && sscanf(q + 1, " %u / %u / %u", &dom, &bus, &dev) == 3) {
            char b[16];
            snprintf(b, sizeof b, "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff, dev & 0x1f);
            int r = rec_get(c, "devquery", DR_NS_CUDA, c->gl_idx, NULL, NULL);
            if (r >= 0 && !c->m->recs[r].busid[0])
                snprintf(c->m->recs[r].busid, sizeof c->m->recs[r].busid, "%s", b);
        }
        return;
    }
    if (!strncmp(p, "Model:", 6)) {
        trim_copy(c->gl_name, sizeof c->gl_name, p + 6, p + strlen(p));
        c->gl_idx = -1;
        return;
    }
    if (!strncmp(p, "Bus Location:", 13) && c->gl_name[0]) {
        char b[16];
        if (dp_find_busid(p + 13, b, sizeof b) == 0) {
            rec_get(c, "devquery", DR_NS_NONE, -1, b, c->gl_name);
            kind(c, DR_K_DEVQUERY);
        }
        c->gl_name[0] = '\0';
    }
}

static void p_version(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "NVRM version:");
    if (!p)
        return;
    dr_sys *s = &c->m->sys;
    char v[24];
    if (dp_find_version(p, v, sizeof v) == 0) {
        snprintf(s->module_version, sizeof s->module_version, "%s", v);
        ev(c, &s->module_version_ev);
    }
    setn_force(c, &s->module_open, strstr(p, "Open Kernel Module") ? 1 : 0);
    kind(c, DR_K_VERSION);
}

static void mi_close(dp_ctx *c)
{
    if (!c->mi_on)
        return;
    dr_sys *s = &c->m->sys;
    dr_set(&s->modinfo_signed, c->mi_signed, &c->mi_ev);
    c->mi_on = 0;
}

static void p_modinfo(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p = skip_ws(line);
    if (!strncmp(p, "filename:", 9)) {
        mi_close(c);
        const char *f = skip_ws(p + 9);
        const char *base = strrchr(f, '/');
        base = base ? base + 1 : f;
        if (!strncmp(base, "nvidia.ko", 9)) {
            c->mi_on = 1;
            c->mi_signed = 0;
            ev(c, &c->mi_ev);
            snprintf(s->modinfo_filename, sizeof s->modinfo_filename, "%s", f);
            kind(c, DR_K_MODINFO);
        }
        return;
    }
    if (!c->mi_on) {
        char v[24];
        if (!strncmp(p, "version:", 8) && dp_find_version(p + 8, v, sizeof v) == 0 && !s->modinfo_version[0]) {
            snprintf(s->modinfo_version, sizeof s->modinfo_version, "%s", v);
            kind(c, DR_K_MODINFO);
        }
        return;
    }
    if (!strncmp(p, "version:", 8)) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0)
            snprintf(s->modinfo_version, sizeof s->modinfo_version, "%s", v);
    } else if (!strncmp(p, "license:", 8)) {
        setn_force(c, &s->modinfo_proprietary, strstr(p, "MIT") || strstr(p, "GPL") ? 0 : 1);
    } else if (!strncmp(p, "signer:", 7) || !strncmp(p, "sig_id:", 7)) {
        c->mi_signed = 1;
    } else if (!*p || !strchr(p, ':')) {
        mi_close(c);
    }
}

static void p_userspace(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "libnvidia-ml.so.");
    if (!p)
        p = strstr(line, "libcuda.so.");
    if (!p)
        return;
    p = strstr(p, ".so.") + 4;
    char v[24];
    if (dp_find_version(p, v, sizeof v) != 0 || p != strstr(p, v))
        return;
    dr_sys *s = &c->m->sys;
    for (int i = 0; i < s->nuserspace; i++)
        if (!strcmp(s->userspace_versions[i], v))
            return;
    if (s->nuserspace < 4) {
        snprintf(s->userspace_versions[s->nuserspace++], 24, "%s", v);
        ev(c, &s->userspace_ev);
        kind(c, DR_K_USERSPACE);
    }
}

/* build.sh doctor --collect's own lines (nvidia-p2p.txt, sysfs.txt) */
static void p_collect(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p = skip_ws(line);
    if (!strncmp(p, "nvidia-p2p-installed:", 21)) {
        char v[24] = "";
        dp_find_version(p + 21, v, sizeof v);
        snprintf(s->p2p_installed, sizeof s->p2p_installed, "%s", v);
        ev(c, &s->p2p_installed_ev);
        setn(c, &s->p2p_state_seen, 1);
        kind(c, DR_K_P2PSTATE);
    } else if (!strncmp(p, "nvidia-p2p-dkms:", 16)) {
        /* "none", or the version dpkg gives ("550.163.01-1"); nothing else (dpkg -S lines) */
        const char *q = skip_ws(p + 16);
        char v[24] = "";
        if (!strncmp(q, "none", 4)) {
            s->p2p_deb_version[0] = '\0';
            setn_force(c, &s->p2p_deb, 0);
        } else if (isdigit((unsigned char)*q) && dp_find_version(q, v, sizeof v) == 0) {
            snprintf(s->p2p_deb_version, sizeof s->p2p_deb_version, "%s", v);
            setn_force(c, &s->p2p_deb, 1);
        }
        kind(c, DR_K_P2PSTATE);
    } else if (!strncmp(p, "other-nvidia-kernel-packages:", 29)) {
        const char *q = skip_ws(p + 29);
        int none = !strncmp(q, "none", 4);
        setn_force(c, &s->other_kmod_packages, none ? 0 : 1);
        trim_copy(s->other_kmod_names, sizeof s->other_kmod_names, q, none ? q : q + strlen(q));
        kind(c, DR_K_P2PSTATE);
    } else if (!strncmp(p, "nvidia-p2p-srcversion:", 22)) {
        trim_copy(s->p2p_srcversion, sizeof s->p2p_srcversion, p + 22, p + strlen(p));
    } else if (!strncmp(p, "loaded-version:", 15)) {
        char v[24];
        if (dp_find_version(p + 15, v, sizeof v) == 0 && !s->loaded_version[0]) {
            snprintf(s->loaded_version, sizeof s->loaded_version, "%s", v);
            ev(c, &s->loaded_version_ev);
        }
    } else if (!strncmp(p, "loaded-srcversion:", 18)) {
        trim_copy(s->loaded_srcversion, sizeof s->loaded_srcversion, p + 18, p + strlen(p));
    } else if (!strncmp(p, "nouveau-loaded: 1", 17)) {
        setn(c, &s->nouveau, 1);
        kind(c, DR_K_SYSFS);
    } else if (!strncmp(p, "userspace-libraries: none", 25)) {
        kind(c, DR_K_USERSPACE);
    } else if (!strncmp(p, "modprobe-options: none", 22)) {
        kind(c, DR_K_MODOPTS);
    } else if (!strncmp(p, "sysfs-gpus:", 11)) {
        setn(c, &s->sysfs_gpus, strtol(skip_ws(p + 11), NULL, 10));
        kind(c, DR_K_SYSFS);
    } else if (!strncmp(p, "iommu-present:", 14)) {
        long v = strtol(skip_ws(p + 14), NULL, 10);
        setn_force(c, &s->iommu_present, v ? 1 : 0);
        if (!v)
            setn(c, &s->iommu_off, 1);
        kind(c, DR_K_IOMMU);
    } else if (!strncmp(p, "sysfs-gpu ", 10)) {
        char b[16];
        c->sf_rec = -1;
        if (dp_find_busid(p + 10, b, sizeof b) == 0) {
            c->sf_rec = rec_get(c, "sysfs", DR_NS_NONE, -1, b, NULL);
            snprintf(c->sf_busid, sizeof c->sf_busid, "%s", b);
            kind(c, DR_K_SYSFS);
        }
    } else if (c->sf_rec >= 0 && (!strncmp(p, "resource ", 9) || !strncmp(p, "bar1_bytes ", 11))) {
        dr_grec *g = &c->m->recs[c->sf_rec];
        if (!strncmp(p, "bar1_bytes ", 11)) {
            long long b = strtoll(p + 11, NULL, 0);
            if (b > 0)
                setn(c, &g->bar1_mib, b >> 20);
            else
                setn(c, &g->bar1_unassigned, 1);
        }
    } else if (c->sf_rec >= 0) {
        dr_grec *g = &c->m->recs[c->sf_rec];
        if (!strncmp(p, "boot_vga ", 9))
            setn(c, &g->boot_vga, atoi(p + 9) ? 1 : 0);
        else if (!strncmp(p, "current_link_width ", 19))
            setn(c, &g->width_cur, atoi(p + 19));
        else if (!strncmp(p, "max_link_width ", 15))
            setn(c, &g->width_max, atoi(p + 15));
        else if (!strncmp(p, "current_link_speed ", 19))
            setn(c, &g->gen_cur, gts_to_gen(atof(p + 19)));
        else if (!strncmp(p, "max_link_speed ", 15))
            setn(c, &g->gen_max, gts_to_gen(atof(p + 15)));
        else if (!strncmp(p, "numa_node ", 10))
            setn(c, &g->numa, atoi(p + 10));
        else if (!strncmp(p, "driver ", 7)) {
            snprintf(g->driver_in_use, sizeof g->driver_in_use, "%s", skip_ws(p + 7));
            if (!strcmp(g->driver_in_use, "nouveau"))
                setn(c, &s->nouveau, 1);
        }
        else if (!strncmp(p, "iommu_group_type ", 17) && s->ngroup_type < DR_MAX_GPUS) {
            const char *t = skip_ws(p + 17);
            long long tr = !strncmp(t, "identity", 8) ? 0 : (!strncmp(t, "DMA", 3) ? 1 : -1);
            if (tr >= 0) {
                snprintf(s->group_type[s->ngroup_type].busid, 16, "%s", c->sf_busid);
                s->group_type[s->ngroup_type].type = tr;
                ev(c, &s->group_type[s->ngroup_type].ev);
                s->ngroup_type++;
                kind(c, DR_K_IOMMU);
            }
        }
    }
}

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
        c->q_rec = rec_anon(c, "smi-q");
    return c->q_rec;
}

static void p_smiq(dp_ctx *c, const char *line)
{
    dr_model *m = c->m;
    const char *p = skip_ws(line);
    int ind = (int)(p - line);
    /* "GPU 00000000:01:00.0": a GPU block */
    if (!strncmp(p, "GPU ", 4) && ind <= 2) {
        char b[16];
        const char *rest = p + 4;
        size_t l = strlen(rest);
        while (l && isspace((unsigned char)rest[l - 1]))
            l--;
        if (l >= 12 && l <= 16 && strchr(rest, ':') && !strchr(rest, ' ') && dp_find_busid(rest, b, sizeof b) == 0) {
            c->q_rec = rec_get(c, "smi-q", c->q_full ? DR_NS_SMI : DR_NS_NONE, c->q_full ? c->q_blocks : -1, b, NULL);
            c->q_blocks++;
            c->q_depth = 0;
            kind(c, DR_K_SMIQ);
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
            trim_copy(t, sizeof t, p, p + l);
            q_push(c, ind, t);
        }
        return;
    }
    char key[48], val[128];
    trim_copy(key, sizeof key, p, colon);
    trim_copy(val, sizeof val, colon + 3, colon + strlen(colon));
    while (c->q_depth > 0 && c->q_ind[c->q_depth - 1] >= ind)
        c->q_depth--;
    dr_sys *s = &m->sys;
    if (!strcmp(key, "Driver Version") && ind == 0) {
        char v[24];
        if (dp_find_version(val, v, sizeof v) == 0) {
            snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", v);
            ev(c, &s->smi_driver_version_ev);
        }
        return;
    }
    if (!strcmp(key, "Attached GPUs")) {
        c->q_full = 1;
        kind(c, DR_K_SMIQ);
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
        kind(c, DR_K_SMIQ);
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
    kind(c, DR_K_SMIQ);
    long long mib = parse_mib(val);
    if (q_in(c, "FB Memory Usage") && !strcmp(key, "Total"))
        setn(c, &g->vram_mib, mib);
    else if (q_in(c, "BAR1 Memory Usage") && !strcmp(key, "Total"))
        setn(c, &g->bar1_mib, mib);
    else if (q_in(c, "BAR1 Memory Usage") && !strcmp(key, "Used"))
        setn(c, &g->bar1_used_mib, mib);
    else if (q_in(c, "PCIe Generation")) {
        int v = atoi(val);
        if (v <= 0)
            return;
        if (!strcmp(key, "Max"))
            setn(c, &g->gen_max, v);
        else if (!strcmp(key, "Current"))
            setn(c, &g->gen_cur, v);
        else if (!strcmp(key, "Host Max"))
            setn(c, &g->gen_host_max, v);
        else if (!strcmp(key, "Device Max"))
            setn(c, &g->gen_dev_max, v);
    } else if (q_in(c, "Link Width")) {
        int v = atoi(val);
        if (v <= 0)
            return;
        if (!strcmp(key, "Max"))
            setn(c, &g->width_max, v);
        else if (!strcmp(key, "Current"))
            setn(c, &g->width_cur, v);
    } else if (!strcmp(key, "Display Active")) {
        /* ("Display Attached" says Yes on an H100 without outputs: not read) */
        setn_force(c, &g->display, !strcmp(val, "Enabled") ? 1 : 0);
    } else if (!strcmp(key, "Virtualization Mode")) {
        setn(c, &g->virt_passthrough, !strcmp(val, "Pass-Through") ? 1 : 0);
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
        p = skip_ws(end + 1);
        break;
    }
    char name[96];
    trim_copy(name, sizeof name, p, p + strlen(p));
    if (!name[0] || isdigit((unsigned char)name[0]))
        return 0;
    for (int i = 0; i < n; i++)
        rec_get(c, "smi", DR_NS_SMI, (int)idx[i], NULL, name);
    c->nv_rec = -1;
    kind(c, DR_K_SMI);
    return 1;
}

static void p_smi(dp_ctx *c, const char *line)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    const char *p;
    if ((p = strstr(line, "Driver Version:")) && strstr(line, "NVIDIA-SMI")) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0) {
            snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", v);
            ev(c, &s->smi_driver_version_ev);
        }
        kind(c, DR_K_SMI);
        return;
    }
    /* environment reports: PyTorch's collect_env "Nvidia driver version:
     * 550.54.14", sglang's and vLLM's "NVIDIA Driver Version: ..." */
    p = skip_ws(line);
    if (!strncasecmp(p, "Nvidia driver version:", 22)) {
        char v[24];
        if (dp_find_version(p + 22, v, sizeof v) == 0 && !s->smi_driver_version[0]) {
            snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", v);
            ev(c, &s->smi_driver_version_ev);
            kind(c, DR_K_SMI);
        }
        return;
    }
    /* -L and nvlink -s: "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-...)" */
    if (!strncmp(p, "GPU ", 4) && isdigit((unsigned char)p[4])) {
        char *end = NULL;
        long idx = strtol(p + 4, &end, 10);
        /* "GPU 0: name", not nvidia-smi -q's "GPU 00000000:01:00.0" */
        if (*end == ':' && end[1] == ' ' && end - (p + 4) <= 3 && idx >= 0 && idx < DR_MAX_GPUS) {
            const char *nb = skip_ws(end + 1);
            const char *ne = strstr(nb, " (UUID");
            if (!ne)
                ne = strstr(nb, " (");
            if (!ne)
                ne = nb + strlen(nb);
            char name[96];
            trim_copy(name, sizeof name, nb, ne);
            c->nv_rec = rec_get(c, "smi", DR_NS_SMI, (int)idx, NULL, name);
            c->nv_seen = 0;
            c->nv_active = 0;
            kind(c, DR_K_SMI);
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
            const char *q = skip_ws(p + 1);
            char *end = NULL;
            long idx = strtol(q, &end, 10);
            if (end != q && idx >= 0 && idx < DR_MAX_GPUS) {
                char name[96];
                trim_copy(name, sizeof name, end, bar2);
                size_t nl = strlen(name);
                /* persistence mode "On"/"Off" at the end of the first cell */
                if (nl > 3 && !strcmp(name + nl - 3, "Off"))
                    name[nl - 3] = '\0';
                else if (nl > 2 && !strcmp(name + nl - 2, "On"))
                    name[nl - 2] = '\0';
                char nm[96];
                trim_copy(nm, sizeof nm, name, name + strlen(name));
                c->t_rec = rec_get(c, "smi", DR_NS_SMI, (int)idx, b, nm);
                if (c->t_rec >= 0) {
                    const char *bar3 = strchr(bar2 + 1, '|');
                    char cell[64];
                    trim_copy(cell, sizeof cell, bar2 + 1, bar3 ? bar3 : bar2 + strlen(bar2));
                    size_t cl = strlen(cell);
                    dr_grec *g = &m->recs[c->t_rec];
                    if (cl > 3 && !strcmp(cell + cl - 3, " On"))
                        setn(c, &g->display, 1);
                    else if (cl > 4 && !strcmp(cell + cl - 4, " Off"))
                        setn(c, &g->display, 0);
                }
                kind(c, DR_K_SMI);
                return;
            }
        }
        if (c->t_rec >= 0 && (p = strstr(line, "MiB /"))) {
            long long mib = parse_mib(p + 5);
            if (mib > 0)
                setn(c, &m->recs[c->t_rec].vram_mib, mib);
            c->t_rec = -1;
            return;
        }
    }
}

static void p_csv(dp_ctx *c, const char *line)
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
            trim_copy(t, sizeof t, f, f + strlen(f));
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
    if (c->csv_idx >= 0 && c->csv_idx < n && !is_int(skip_ws(f[c->csv_idx]), &idx))
        return;
    if (c->csv_bus >= 0 && c->csv_bus < n && dp_find_busid(f[c->csv_bus], b, sizeof b) != 0)
        return;
    if (c->csv_name >= 0 && c->csv_name < n)
        trim_copy(name, sizeof name, f[c->csv_name], f[c->csv_name] + strlen(f[c->csv_name]));
    int r = rec_get(c, "smi", idx >= 0 ? DR_NS_SMI : DR_NS_NONE, (int)idx, b, name);
    if (r < 0)
        return;
    dr_grec *g = &c->m->recs[r];
    if (c->csv_mem >= 0 && c->csv_mem < n)
        setn(c, &g->vram_mib, parse_mib(f[c->csv_mem]));
    if (c->csv_gen >= 0 && c->csv_gen < n && atoi(f[c->csv_gen]) > 0)
        setn(c, &g->gen_cur, atoi(f[c->csv_gen]));
    if (c->csv_genmax >= 0 && c->csv_genmax < n && atoi(f[c->csv_genmax]) > 0)
        setn(c, &g->gen_max, atoi(f[c->csv_genmax]));
    if (c->csv_w >= 0 && c->csv_w < n && atoi(f[c->csv_w]) > 0)
        setn(c, &g->width_cur, atoi(f[c->csv_w]));
    if (c->csv_wmax >= 0 && c->csv_wmax < n && atoi(f[c->csv_wmax]) > 0)
        setn(c, &g->width_max, atoi(f[c->csv_wmax]));
    if (c->csv_disp >= 0 && c->csv_disp < n)
        setn(c, &g->display, strstr(f[c->csv_disp], "Enabled") ? 1 : 0);
    kind(c, DR_K_SMI);
}

/* ------------------------------------------------------------ nvlink -s */

static void nv_close(dp_ctx *c)
{
    if (c->nv_rec >= 0 && c->nv_seen)
        setn(c, &c->m->recs[c->nv_rec].nvlinks, c->nv_active);
}

static void p_nvlink(dp_ctx *c, const char *line)
{
    const char *p = skip_ws(line);
    if (strstr(line, "all links are inActive") || strstr(line, "all links are inactive")) {
        kind(c, DR_K_NVLINK);
        return;
    }
    if (strncmp(p, "Link ", 5) != 0 || !isdigit((unsigned char)p[5]) || c->nv_rec < 0)
        return;
    const char *colon = strchr(p, ':');
    if (!colon)
        return;
    c->nv_seen = 1;
    const char *v = skip_ws(colon + 1);
    if (strstr(v, "inactive") || strstr(v, "<inactive>") || strstr(v, "Inactive")) {
        /* counted as seen */
    } else if (isdigit((unsigned char)*v) && strstr(v, "GB/s")) {
        c->nv_active++;
    }
    c->m->recs[c->nv_rec].nvlinks.v = -1;
    nv_close(c);
    kind(c, DR_K_NVLINK);
}

/* ------------------------------------------------------------ matrices */

static int gpu_tok(const char *t)
{
    long v;
    if (strncmp(t, "GPU", 3) != 0 || !is_int(t + 3, &v) || v >= DR_MAX_GPUS)
        return -1;
    return (int)v;
}

static int topo_cell(const char *t)
{
    return !strcmp(t, "SYS") || !strcmp(t, "NODE") || !strcmp(t, "PHB") || !strcmp(t, "PXB") ||
           !strcmp(t, "PIX") || !strcmp(t, "PXN") || !strcmp(t, "SOC") || !strcmp(t, "QPI") ||
           (t[0] == 'N' && t[1] == 'V' && isdigit((unsigned char)t[2]));
}

static int p2p_cell(const char *t)
{
    return !strcmp(t, "OK") || !strcmp(t, "CNS") || !strcmp(t, "GNS") || !strcmp(t, "TNS") || !strcmp(t, "NS") ||
           !strcmp(t, "U");
}

static int title_of(const char *line)
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
        if (ci_find(line, "Bidirectional"))
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
    if (topo_cell(t)) {
        pobs_add(c, DR_OBS_TOPO, ns, row, col, 0, 0, 0, t, NULL);
        kind(c, DR_K_TOPO);
    } else if (p2p_cell(t)) {
        if (c->mx_p2pmode == 'n' || c->mx_p2pmode == 'a') {
            kind(c, DR_K_P2PCAP); /* NVLink or atomics capability: not P2P itself */
            return;
        }
        snprintf(text, sizeof text, "%s (GPU%d -> GPU%d: %s)", c->line, row, col, t);
        evt(c, &e, text);
        pobs_add(c, DR_OBS_P2PCAP, ns, row, col, c->mx_p2pmode ? c->mx_p2pmode : '?', 0, 0, t, &e);
        kind(c, DR_K_P2PCAP);
    } else if (!strcmp(t, "yes") || !strcmp(t, "no")) {
        pobs_add(c, DR_OBS_ACCESS, ns, row, col, t[0] == 'y', 0, 0, NULL, NULL);
    } else if (c->mx_title == T_ACCESS01 && (!strcmp(t, "1") || !strcmp(t, "0"))) {
        pobs_add(c, DR_OBS_ACCESS, ns, row, col, t[0] == '1', 0, 0, NULL, NULL);
        kind(c, DR_K_P2PBW);
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

static int p_matrix(dp_ctx *c, const char *line)
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
                rec_get(c, "topo", DR_NS_SMI, c->mx_cols[i], NULL, NULL);
        kind(c, c->p2p_ctx ? DR_K_P2PCAP : DR_K_TOPO); /* (one GPU: no cell tells) */
        c->mx_p2pmode = c->p2p_ctx;
        c->p2p_ctx = 0;
        return 1;
    }
    /* header, style 2: "D\D 0 1 2" or "GPU 0 1" or "CPU 0 1" */
    long v;
    if ((!strcmp(tok[0], "D\\D") || !strcmp(tok[0], "GPU") || !strcmp(tok[0], "CPU")) && nt >= 2 &&
        is_int(tok[1], &v) && v == 0) {
        c->mx_ncol = 0;
        for (int k = 1; k < nt && c->mx_ncol < DR_MAX_GPUS; k++) {
            if (!is_int(tok[k], &v) || v != c->mx_ncol)
                break;
            c->mx_cols[c->mx_ncol++] = (int)v;
        }
        c->mx_style = 2;
        c->mx_numa = -1;
        c->mx_rows = 0;
        c->mx_title = !strcmp(tok[0], "CPU") ? T_IGNORE : c->title;
        if (c->mx_title != T_IGNORE)
            for (int i = 0; i < c->mx_ncol; i++)
                rec_get(c, c->vt_on ? "verify" : "p2pbw", DR_NS_CUDA, c->mx_cols[i], NULL, NULL);
        return 1;
    }
    if (!c->mx_style)
        return 0;
    int row = -1;
    if (c->mx_style == 1)
        row = gpu_tok(tok[0]);
    else if (is_int(tok[0], &v) && v < DR_MAX_GPUS)
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
        rec_get(c, c->vt_on ? "verify" : "p2pbw", DR_NS_CUDA, row, NULL, NULL);
    if (c->mx_style == 1) {
        int r = rec_get(c, "topo", DR_NS_SMI, row, NULL, NULL);
        if (r >= 0 && c->mx_numa > 0 && 1 + c->mx_ncol + c->mx_numa - 1 < nt) {
            long numa;
            if (is_int(tok[1 + c->mx_ncol + c->mx_numa - 1], &numa))
                setn(c, &c->m->recs[r].numa, numa);
        }
    }
    int k, onoff;
    if (c->mx_style == 2 && bw_slot(c->mx_title, &k, &onoff) && c->bw_ev[k][onoff].line == 0) {
        char text[DR_EV_TEXT];
        snprintf(text, sizeof text, "matrix at line %ld", c->ln);
        evt(c, &c->bw_ev[k][onoff], text);
    }
    c->mx_rows++;
    return 1;
}

static void bw_emit(dp_ctx *c)
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
                pobs_add(c, DR_OBS_BW, DR_NS_CUDA, a, b, k == 0 ? DR_BW_UNI : (k == 1 ? DR_BW_BI : DR_BW_LAT),
                         isnan(on) ? -1 : on, isnan(off) ? -1 : off, NULL, &e);
            }
    kind(c, DR_K_P2PBW);
}

/* ------------------------------------------------------------ nvbandwidth */

enum { NVB_NONE = 0, NVB_H2D, NVB_D2H, NVB_D2D_WRITE, NVB_D2D_READ, NVB_OTHER };

/* The test of "Running <test>." (testcase keys of nvbandwidth): what its
 * matrix holds.  Bidirectional, all-to-one and latency tests are not read. */
static int nvb_test_of(const char *name)
{
    static const struct {
        const char *prefix;
        int test;
    } tests[] = {
        {"host_to_device_memcpy_", NVB_H2D},
        {"device_to_host_memcpy_", NVB_D2H},
        {"device_to_device_memcpy_write_", NVB_D2D_WRITE},
        {"device_to_device_memcpy_read_", NVB_D2D_READ},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (!strncmp(name, tests[i].prefix, strlen(tests[i].prefix)))
            return tests[i].test;
    return NVB_OTHER;
}

static struct nvb_data *nvb_data(dp_ctx *c)
{
    if (!c->nvb) {
        c->nvb = malloc(sizeof *c->nvb);
        if (!c->nvb)
            return NULL;
        for (int a = 0; a < DR_MAX_GPUS; a++) {
            c->nvb->h2d[a] = c->nvb->d2h[a] = NAN;
            for (int b = 0; b < DR_MAX_GPUS; b++)
                c->nvb->d2d[a][b] = NAN;
        }
        memset(&c->nvb->ev, 0, sizeof c->nvb->ev);
    }
    return c->nvb;
}

/* "Device 0: NVIDIA H100 80GB HBM3 (00000000:18:00)": nvbandwidth's GPU list
 * (CUDA numbering; domain, bus and device in hex, no function).  Versions
 * before 0.7 print the name alone ("Device 0: NVIDIA GeForce RTX 2080 Ti"):
 * read only after nvbandwidth's version line (deviceQuery quotes its name). */
static int nvb_device(dp_ctx *c, const char *p)
{
    long idx;
    char *end = NULL;
    if (strncmp(p, "Device ", 7) != 0 || !isdigit((unsigned char)p[7]))
        return 0;
    idx = strtol(p + 7, &end, 10);
    const char *lp = strrchr(p, '(');
    size_t l = strlen(p);
    unsigned dom, bus, dev;
    char tail, b[16] = "", name[96];
    if (*end != ':' || idx >= DR_MAX_GPUS)
        return 0;
    if (lp && p[l - 1] == ')' && l - (size_t)(lp - p) == 16 && sscanf(lp, "(%8x:%2x:%2x%c", &dom, &bus, &dev, &tail) == 4 &&
        tail == ')' && dev <= 0x1f) {
        snprintf(b, sizeof b, "%04x:%02x:%02x.0", dom & 0xffff, bus, dev);
        trim_copy(name, sizeof name, end + 1, lp);
    } else if (c->nvb_on && !lp && *skip_ws(end + 1) && *skip_ws(end + 1) != '"') {
        trim_copy(name, sizeof name, end + 1, p + l);
    } else {
        return 0;
    }
    rec_get(c, "nvbw", DR_NS_CUDA, (int)idx, b, name);
    if (idx + 1 > c->nvb_ndev)
        c->nvb_ndev = (int)idx + 1;
    kind(c, DR_K_NVBW);
    return 1;
}

/* The test of a matrix title, for a matrix whose "Running <test>." line is
 * not there (an excerpt): the copy-engine tests' titles tell them apart. */
static int nvb_test_of_title(const char *p)
{
    static const struct {
        const char *title;
        int test;
    } t[] = {
        {"memcpy CE CPU(row) -> GPU(column) bandwidth", NVB_H2D},
        {"memcpy CE CPU(row) <- GPU(column) bandwidth", NVB_D2H},
        {"memcpy CE GPU(row) <- GPU(column) bandwidth", NVB_D2D_WRITE},
        {"memcpy CE GPU(row) -> GPU(column) bandwidth", NVB_D2D_READ},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strncmp(p, t[i].title, strlen(t[i].title)))
            return t[i].test;
    return NVB_NONE;
}

/* "Waiving device_to_device_memcpy_write_ce.": nvbandwidth skips its
 * device-to-device tests (and all-to-one, one-to-all) when CUDA grants peer
 * access between no two of its GPUs (filterHasAccessiblePeerPairs). */
static int nvb_waived(dp_ctx *c, const char *p)
{
    static const char *const peer_tests[] = {"device_to_device_", "all_to_one_", "one_to_all_"};
    size_t l = strlen(p);
    if (strncmp(p, "Waiving ", 8) != 0 || l < 10 || p[l - 1] != '.')
        return 0;
    int peer = 0;
    for (size_t i = 0; i < sizeof peer_tests / sizeof peer_tests[0]; i++)
        if (!strncmp(p + 8, peer_tests[i], strlen(peer_tests[i])))
            peer = 1;
    if (peer && c->nvb_ndev >= 2)
        for (int a = 0; a < c->nvb_ndev; a++)
            for (int b = 0; b < c->nvb_ndev; b++)
                if (a != b)
                    pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, a, b, 0, 0, 0, NULL, NULL);
    kind(c, DR_K_NVBW);
    return 1;
}

/* One row of an nvbandwidth matrix: "0     N/A    392.21    391.85". */
static void nvb_row(dp_ctx *c, char **tok, int nt)
{
    long row;
    struct nvb_data *d = nvb_data(c);
    if (!d || !is_int(tok[0], &row) || row >= DR_MAX_GPUS)
        return;
    int ncells = nt - 1 < c->nvb_ncol ? nt - 2 : c->nvb_ncol; /* a short row: cut, its last value too */
    if (nt - 1 < c->nvb_ncol)
        c->mx_short++;
    for (int k = 0; k < ncells; k++) {
        char *end = NULL;
        double v = strtod(tok[1 + k], &end);
        int col = c->nvb_cols[k];
        if (!strcasecmp(tok[1 + k], "N/A"))
            continue;
        if (end == tok[1 + k] || *end || !isfinite(v) || v < 0) {
            if (c->mx_bad++ == 0)
                snprintf(c->mx_bad_tok, sizeof c->mx_bad_tok, "%s", tok[1 + k]);
            continue;
        }
        if (!strchr(tok[1 + k], '.')) {
            c->mx_short++; /* printed with two decimals: cut */
            continue;
        }
        if (v == 0) /* older versions print 0.00 for a pair they skip */
            continue;
        double *cell = NULL;
        if (c->nvb_test == NVB_H2D && row == 0)
            cell = &d->h2d[col];
        else if (c->nvb_test == NVB_D2H && row == 0)
            cell = &d->d2h[col];
        else if (c->nvb_test == NVB_D2D_WRITE && row != col) /* copies row -> column */
            cell = &d->d2d[row][col];
        else if (c->nvb_test == NVB_D2D_READ && row != col) /* row reads column: column -> row */
            cell = &d->d2d[col][row];
        if (cell && (isnan(*cell) || v > *cell))
            *cell = v;
        if (cell && c->nvb_test >= NVB_D2D_WRITE && d->ev.line == 0)
            ev(c, &d->ev);
    }
}

/* nvbandwidth's text output; 1 when the line was one of its matrix. */
static int p_nvbw(dp_ctx *c, const char *line)
{
    const char *p = skip_ws(line);
    if (!strncmp(p, "nvbandwidth Version:", 20)) {
        c->nvb_on = 1;
        kind(c, DR_K_NVBW);
        return 1;
    }
    size_t l = strlen(p);
    if (!strncmp(p, "Running ", 8) && l > 9 && p[l - 1] == '.' && strspn(p + 8, "abcdefghijklmnopqrstuvwxyz_0123456789") == l - 9) {
        char name[64];
        trim_copy(name, sizeof name, p + 8, p + l - 1);
        c->nvb_test = nvb_test_of(name);
        c->nvb_state = 0;
        kind(c, DR_K_NVBW);
        return 1;
    }
    if (nvb_device(c, p))
        return 1;
    if (c->nvb_on && nvb_waived(c, p))
        return 1;
    if (c->nvb_test == NVB_NONE && (c->nvb_test = nvb_test_of_title(p)) != NVB_NONE)
        c->nvb_state = 0; /* a title without its "Running" line (an excerpt) */
    if (c->nvb_test == NVB_NONE)
        return 0;
    if (!strncmp(p, "memcpy ", 7) && strstr(p, "bandwidth (GB/s)")) {
        c->nvb_state = c->nvb_test == NVB_OTHER ? 0 : 1;
        return 1;
    }
    if (!strncmp(p, "SUM ", 4)) {
        c->nvb_test = NVB_NONE; /* the test's end: the next title may come without its "Running" line */
        c->nvb_state = 0;
        return 1;
    }
    if (c->nvb_state == 0)
        return 0;
    char buf[DP_LINE_MAX], *tok[DR_MAX_GPUS + 2];
    snprintf(buf, sizeof buf, "%s", p);
    int nt = pv_tokenize(buf, tok, DR_MAX_GPUS + 2);
    long v;
    if (c->nvb_state == 1) {
        c->nvb_ncol = 0;
        for (int k = 0; k < nt && is_int(tok[k], &v) && v == c->nvb_ncol && v < DR_MAX_GPUS; k++)
            c->nvb_cols[c->nvb_ncol++] = (int)v;
        c->nvb_state = nt > 0 && c->nvb_ncol == nt ? 2 : 0;
        if (c->nvb_state == 2)
            for (int k = 0; k < c->nvb_ncol; k++) /* the GPUs, where the device list is not there */
                rec_get(c, "nvbw", DR_NS_CUDA, c->nvb_cols[k], NULL, NULL);
        return c->nvb_state == 2;
    }
    if (nt < 2 || !is_int(tok[0], &v)) {
        c->nvb_state = 0; /* the matrix ends */
        return 0;
    }
    nvb_row(c, tok, nt);
    kind(c, DR_K_NVBW);
    return 1;
}

/* At the end of the file: nvbandwidth's P2P copies, each beside the host
 * path of its two GPUs (the slowest of their copies to and from host memory:
 * what copies staged through host memory would be limited by). */
static void nvb_emit(dp_ctx *c)
{
    struct nvb_data *d = c->nvb;
    if (!d)
        return;
    for (int a = 0; a < DR_MAX_GPUS; a++)
        for (int b = 0; b < DR_MAX_GPUS; b++) {
            double on = d->d2d[a][b], host = -1;
            if (a == b || isnan(on))
                continue;
            const double hp[4] = {d->h2d[a], d->d2h[a], d->h2d[b], d->d2h[b]};
            for (int k = 0; k < 4; k++)
                if (!isnan(hp[k]) && (host < 0 || hp[k] < host))
                    host = hp[k];
            dr_ev e = d->ev;
            char text[DR_EV_TEXT];
            if (host > 0)
                snprintf(text, sizeof text, "nvbandwidth GPU%d->GPU%d: P2P %.2f GB/s; host path %.2f GB/s (the slowest "
                                            "copy of the two GPUs to or from host memory)", a, b, on, host);
            else
                snprintf(text, sizeof text, "nvbandwidth GPU%d->GPU%d: P2P %.2f GB/s", a, b, on);
            snprintf(e.text, sizeof e.text, "%s", text);
            pobs_add(c, DR_OBS_BW, DR_NS_CUDA, a, b, DR_BW_UNI, on, host, "nvbw", &e);
        }
    kind(c, DR_K_NVBW);
}

/* ------------------------------------------------------------ setpci */

/* setpci's "-s" for one device: [[domain:]bus:]slot.func in hex; 0 on success. */
static int sp_slot(const char *t, char *out, size_t outlen)
{
    unsigned dom = 0, bus, dev, fn;
    char tail;
    if (sscanf(t, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4) {
        dom = 0;
        if (sscanf(t, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3)
            return -1;
    }
    if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7 || !isxdigit((unsigned char)t[0]))
        return -1;
    snprintf(out, outlen, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    return 0;
}

/* setpci's register "ECAP_ACS+6.w", "ECAP0d+0x6.W", "14e.w", each with an
 * optional "=VALUE" (a write), into r; 0 on success.  Other capabilities,
 * named registers and masked writes: -1. */
static int sp_reg(const char *t, dr_setpci *r)
{
    const char *p = t;
    char *e = NULL;
    r->acs = 0;
    r->write = 0;
    r->value = -1;
    if (!strncasecmp(p, "ECAP_ACS", 8)) {
        r->acs = 1;
        p += 8;
    } else if (!strncasecmp(p, "ECAP", 4) && isxdigit((unsigned char)p[4])) {
        if (strtoul(p + 4, &e, 16) != 0xd)
            return -1;
        r->acs = 1;
        p = e;
    }
    unsigned long reg = 0;
    if (!r->acs) {
        reg = strtoul(p, &e, 16);
        if (e == p || (*e != '.' && *e != '+'))
            return -1;
        p = e;
    }
    if (*p == '+') {
        reg += strtoul(p + 1, &e, 16);
        if (e == p + 1)
            return -1;
        p = e;
    }
    if (*p != '.' || !strchr("bBwWlL", p[1]) || !p[1])
        return -1;
    r->width = tolower((unsigned char)p[1]) == 'b' ? 1 : (tolower((unsigned char)p[1]) == 'w' ? 2 : 4);
    r->reg = (int)(reg & 0xfff);
    p += 2;
    if (*p == '@')
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    if (*p == '=') {
        r->value = (long)strtoul(p + 1, &e, 16);
        if (e == p + 1 || *e)
            return -1;
        r->write = 1;
        return 0;
    }
    return *p ? -1 : 0;
}

static void sp_add(dp_ctx *c, const dr_setpci *r)
{
    dr_model *m = c->m;
    if (m->nsetpci >= DR_MAX_SETPCI) {
        m->truncated_recs++;
        return;
    }
    dr_setpci *x = &m->setpci[m->nsetpci++];
    *x = *r;
    ev(c, &x->ev);
    kind(c, DR_K_SETPCI);
}

/* "for VAR in BDF BDF ...; do" (the rest of the line may hold the loop's
 * body): the variable and its devices, for a write "setpci -s "$VAR" R=V" in
 * the loop (a write prints nothing to read the device from).  A list with
 * anything but device addresses ("$(lspci ...)") is not kept. */
static void sp_for(dp_ctx *c, const char *line)
{
    char buf[DP_LINE_MAX], *tok[64];
    snprintf(buf, sizeof buf, "%s", line);
    int nt = pv_tokenize(buf, tok, 64), i = 0;
    while (i < nt && strcmp(tok[i], "for"))
        i++;
    if (i + 3 >= nt || strcmp(tok[i + 2], "in"))
        return;
    c->sp_for_n = 0;
    snprintf(c->sp_for_var, sizeof c->sp_for_var, "%s", tok[i + 1]);
    for (i += 3; i < nt && strcmp(tok[i], "do") && strcmp(tok[i], ";"); i++) {
        size_t l = strlen(tok[i]);
        int last = l > 1 && tok[i][l - 1] == ';';
        if (last)
            tok[i][l - 1] = '\0';
        if (c->sp_for_n >= 16 || sp_slot(tok[i], c->sp_for_bdf[c->sp_for_n], sizeof c->sp_for_bdf[0]) != 0) {
            c->sp_for_n = 0;
            return;
        }
        c->sp_for_n++;
        if (last)
            break;
    }
}

/* setpci's -s argument names the loop's variable: $VAR, ${VAR}, "$VAR". */
static int sp_for_arg(const dp_ctx *c, const char *a)
{
    char v[32];
    size_t l = strlen(a);
    if (l >= 2 && (a[0] == '"' || a[0] == '\'') && a[l - 1] == a[0]) {
        a++;
        l -= 2;
    }
    if (l < 2 || l >= sizeof v || a[0] != '$' || !c->sp_for_n)
        return 0;
    memcpy(v, a + 1, l - 1);
    v[l - 1] = '\0';
    if (v[0] == '{' && l > 3 && v[l - 2] == '}') {
        memmove(v, v + 1, l - 3);
        v[l - 3] = '\0';
    }
    return !strcmp(v, c->sp_for_var);
}

/* A setpci command line: its writes are recorded, its reads wait for their
 * value on the following lines (or come as -v's lines, or a loop's). */
static void sp_command(dp_ctx *c, const char *args)
{
    char buf[DP_LINE_MAX], *tok[64], slot[16] = "";
    snprintf(buf, sizeof buf, "%s", args);
    int nt = pv_tokenize(buf, tok, 64), verbose = 0, loop = 0, forlist = 0;
    dr_setpci regs[4];
    int nregs = 0;
    for (int i = 0; i < nt; i++) {
        char *t = tok[i];
        if (!strcmp(t, ";") || !strcmp(t, "|") || !strcmp(t, "&&") || t[0] == '#')
            break;
        size_t l = strlen(t);
        if (l && t[l - 1] == ';')
            t[l - 1] = '\0';
        if (!strcmp(t, "-v")) {
            verbose = 1;
        } else if (!strncmp(t, "-s", 2) || !strncmp(t, "-d", 2)) {
            const char *a = t[2] ? t + 2 + (t[2] == '=') : (i + 1 < nt ? tok[++i] : "");
            loop = t[1] == 'd' || sp_slot(a, slot, sizeof slot) != 0;
            forlist = t[1] == 's' && loop && sp_for_arg(c, a);
        } else if (nregs < 4 && sp_reg(t, &regs[nregs]) == 0) {
            snprintf(regs[nregs].busid, sizeof regs[nregs].busid, "%s", slot);
            regs[nregs].cap_off = -1;
            nregs++;
        }
    }
    c->sp_npending = 0;
    c->sp_loop = 0;
    for (int k = 0; k < nregs; k++) {
        if (loop && forlist && regs[k].write) {
            /* a write in "for VAR in BDF...": one write to each device listed */
            for (int j = 0; j < c->sp_for_n; j++) {
                dr_setpci r = regs[k];
                snprintf(r.busid, sizeof r.busid, "%s", c->sp_for_bdf[j]);
                sp_add(c, &r);
            }
            continue;
        }
        if (loop) {
            c->sp_loop = !regs[k].write && !verbose;
            c->sp_loopreg = regs[k];
            return;
        }
        if (regs[k].write)
            sp_add(c, &regs[k]);
        else if (!verbose && c->sp_npending < 4)
            c->sp_pending[c->sp_npending++] = regs[k];
    }
}

/* setpci -v's lines: "0000:02:08.0 (ecap 000d @148) @14e = 001d" (a read),
 * "0000:02:08.0 (ecap 000d @148) @14e 0000" (a write); 1 when one. */
static int sp_verbose(dp_ctx *c, const char *p)
{
    dr_setpci r;
    memset(&r, 0, sizeof r);
    r.cap_off = -1;
    unsigned id, off, reg;
    if (strlen(p) < 14 || p[12] != ' ')
        return 0;
    char slot[13];
    memcpy(slot, p, 12);
    slot[12] = '\0';
    if (sp_slot(slot, r.busid, sizeof r.busid) != 0)
        return 0;
    const char *q = p + 13;
    if (sscanf(q, "(ecap %x @%x) ", &id, &off) == 2) {
        if (id != 0xd)
            return 0;
        r.acs = 1;
        r.cap_off = (int)off;
        q = strchr(q, ')') + 1;
        if (*q != ' ')
            return 0; /* cut after the capability (a paste's last line): no register, no value */
        q++;
    }
    char *e = NULL;
    if (*q != '@' || (reg = (unsigned)strtoul(q + 1, &e, 16), e == q + 1))
        return 0;
    r.reg = r.acs ? (int)reg - r.cap_off : (int)reg;
    q = e;
    if (!strncmp(q, " = ", 3)) {
        q += 3;
    } else if (*q == ' ') {
        q++;
        r.write = 1;
    } else {
        return 0;
    }
    size_t digits = strspn(q, "0123456789abcdefABCDEF");
    if ((digits != 2 && digits != 4 && digits != 8) || q[digits])
        return 0;
    r.width = (int)digits / 2;
    r.value = (long)strtoul(q, NULL, 16);
    sp_add(c, &r);
    return 1;
}

/* The devices of "for d in $(lspci ...)" are PLX switch ports: lspci's output
 * filtered by grep for "plx" (not the loop variable's name), or -d 10b5:
 * (PLX's vendor id). */
static int sp_for_plx(const char *q)
{
    const char *l = ci_find(q, "lspci"), *g;
    if (!l)
        return 0;
    if (ci_find(l, "-d 10b5:") || ci_find(l, "-d10b5:"))
        return 1;
    if (!(g = ci_find(l, "grep")))
        return 0;
    size_t seg = strcspn(g, "|);");
    for (const char *x = g; x + 3 <= g + seg; x++)
        if (!strncasecmp(x, "plx", 3))
            return 1;
    return 0;
}

/* A loop's value printed alone ("001d": "setpci -s $d REG" without an echo of
 * $d): which device it is cannot be told, so it goes to no bridge; where the
 * register is ACS control (ECAP_ACS+6, or 0xf2a of PLX switch ports, where
 * NVIDIA's ACS script for PLX switches writes it), a redirect bit set is
 * ACS redirection somewhere on the machine (as an ACSCtl line without its
 * device).  1 when the line is such a value. */
static int sp_loop_value(dp_ctx *c, const char *p)
{
    const dr_setpci *r = &c->sp_loopreg;
    size_t digits = strspn(p, "0123456789abcdefABCDEF");
    if (digits != (size_t)r->width * 2 || p[digits])
        return 0;
    int ctl = (r->acs && r->reg == 6 && r->width == 2) || (!r->acs && r->reg == 0xf2a && r->width == 2 && c->sp_plx);
    if (ctl) {
        long v = (long)strtoul(p, NULL, 16);
        if (v & 0xc) {
            setn(c, &c->m->sys.acs_unknown_ctx, 1);
            setn(c, &c->m->sys.acs_redir_any, 1);
        }
    }
    kind(c, DR_K_SETPCI);
    return 1;
}

static void p_setpci(dp_ctx *c, const char *line)
{
    const char *p = skip_ws(line), *q;
    size_t digits = strspn(p, "0123456789abcdefABCDEF");
    if (!strncmp(p, "[sudo]", 6))
        return; /* sudo's password prompt between a command and its output */
    if (!strncmp(p, "done", 4) && (!p[4] || p[4] == ';' || p[4] == ' '))
        c->sp_for_n = 0; /* the end of a shell loop */
    else if ((q = strstr(p, "for ")) && (q == p || q[-1] == ' ' || q[-1] == ';')) {
        sp_for(c, q);
        c->sp_plx = sp_for_plx(q);
    }
    if (c->sp_npending > 0 && digits == (size_t)c->sp_pending[0].width * 2 && !p[digits]) {
        dr_setpci r = c->sp_pending[0];
        r.value = (long)strtoul(p, NULL, 16);
        sp_add(c, &r);
        memmove(c->sp_pending, c->sp_pending + 1, sizeof c->sp_pending[0] * (size_t)--c->sp_npending);
        return;
    }
    if ((q = strstr(line, "setpci")) && (q == line || !isalnum((unsigned char)q[-1])) && q[6] == ' ' &&
        !strstr(line, "not found")) {
        sp_command(c, q + 7);
        if (strstr(q, "; done") || strstr(q, ";done"))
            c->sp_for_n = 0; /* a loop on one line */
        return;
    }
    if (sp_verbose(c, p))
        return;
    char b[16];
    if (strstr(p, "not found") && ci_find(p, "capability 000d") && dp_find_busid(p, b, sizeof b) == 0) {
        /* "setpci: 0000:00:01.0: Instance #0 of Extended capability 000d not found - ..." */
        dr_setpci r;
        memset(&r, 0, sizeof r);
        snprintf(r.busid, sizeof r.busid, "%s", b);
        r.acs = 1;
        r.cap_off = -1;
        r.value = -1;
        sp_add(c, &r);
        return;
    }
    if (c->sp_loop && *p && sp_loop_value(c, p))
        return;
    if (c->sp_loop && *p) {
        /* a loop's "02:08.0: 001d" or "0000:02:08.0 001d" */
        char slot[24], val[16], extra;
        int n = sscanf(p, "%23s %15s %c", slot, val, &extra);
        size_t sl = strlen(slot);
        if (n == 2 && sl && slot[sl - 1] == ':')
            slot[sl - 1] = '\0';
        size_t vd = strspn(val, "0123456789abcdefABCDEF");
        dr_setpci r = c->sp_loopreg;
        if (n == 2 && sp_slot(slot, r.busid, sizeof r.busid) == 0 && vd == (size_t)r.width * 2 && !val[vd]) {
            r.value = (long)strtoul(val, NULL, 16);
            sp_add(c, &r);
        } else {
            c->sp_loop = 0;
        }
    }
    if (*p)
        c->sp_npending = 0;
}

/* ------------------------------------------------------------ CUDA samples */

static void p_cuda_samples(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p;
    /* p2pBandwidthLatencyTest */
    if ((p = strstr(line, "Device: ")) && strstr(line, "pciBusID:")) {
        long idx = strtol(p + 8, NULL, 10);
        const char *n1 = strchr(p, ',');
        const char *n2 = n1 ? strstr(n1, ", pciBusID:") : NULL;
        if (!n1 || !n2 || idx < 0 || idx >= DR_MAX_GPUS)
            return;
        char name[96];
        trim_copy(name, sizeof name, n1 + 1, n2);
        unsigned bus = 0, dev = 0, dom = 0;
        const char *q = strstr(line, "pciBusID:");
        sscanf(q + 9, " %x", &bus);
        if ((q = strstr(line, "pciDeviceID:")))
            sscanf(q + 12, " %x", &dev);
        if ((q = strstr(line, "pciDomainID:")))
            sscanf(q + 12, " %x", &dom);
        char b[16];
        snprintf(b, sizeof b, "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff, dev & 0x1f);
        rec_get(c, "p2pbw", DR_NS_CUDA, (int)idx, b, name);
        kind(c, DR_K_P2PBW);
        return;
    }
    if ((p = strstr(line, "Device=")) && strstr(line, "Access Peer Device=")) {
        long a = strtol(p + 7, NULL, 10);
        const char *q = strstr(line, "Peer Device=");
        long b = strtol(q + 12, NULL, 10);
        int can = strstr(line, "CANNOT") == NULL && strstr(line, " CAN ") != NULL;
        pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, (int)a, (int)b, can, 0, 0, NULL, NULL);
        kind(c, DR_K_P2PBW);
        return;
    }
    /* simpleP2P */
    if ((p = strstr(line, "Peer access from ")) && strstr(line, "(GPU")) {
        const char *g1 = strstr(p, "(GPU");
        const char *g2 = g1 ? strstr(g1 + 4, "(GPU") : NULL;
        const char *res = strrchr(line, ':');
        if (!g1 || !g2 || !res)
            return;
        long a = strtol(g1 + 4, NULL, 10), b = strtol(g2 + 4, NULL, 10);
        char n1[96], n2[96];
        trim_copy(n1, sizeof n1, p + 17, g1);
        const char *arrow = strstr(g1, "->");
        trim_copy(n2, sizeof n2, arrow ? arrow + 2 : g1, g2);
        rec_get(c, "simplep2p", DR_NS_CUDA, (int)a, NULL, n1);
        rec_get(c, "simplep2p", DR_NS_CUDA, (int)b, NULL, n2);
        const char *r = skip_ws(res + 1);
        if (!strncmp(r, "Yes", 3) || !strncmp(r, "No", 2))
            pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, (int)a, (int)b, r[0] == 'Y', 0, 0, NULL, NULL);
        kind(c, DR_K_SIMPLEP2P);
        return;
    }
    if ((p = strstr(line, "Enabling peer access between GPU"))) {
        c->sp_a = atoi(p + 32);
        const char *q = strstr(p + 32, "GPU");
        c->sp_b = q ? atoi(q + 3) : -1;
        kind(c, DR_K_SIMPLEP2P);
        return;
    }
    if (strstr(line, "Verification error @ element")) {
        if (c->sp_errs++ == 0)
            ev(c, &c->sp_ev);
        kind(c, DR_K_SIMPLEP2P);
        return;
    }
    if (strstr(line, "Test failed!") || strstr(line, "Test FAILED")) {
        setn(c, &s->simplep2p_failed, 1);
        return;
    }
    if (strstr(line, "Test passed") || strstr(line, "Test PASSED")) {
        setn(c, &s->simplep2p_passed, 1);
        return;
    }
    if (strstr(line, "Peer-to-Peer access capability are required") ||
        strstr(line, "Peer to Peer access is not available")) {
        setn(c, &s->p2p_unavailable, 1);
        kind(c, DR_K_SIMPLEP2P);
        return;
    }
}

static void sp_close(dp_ctx *c)
{
    dr_sys *s = &c->m->sys;
    if (c->sp_errs > 0) {
        char text[DR_EV_TEXT];
        snprintf(text, sizeof text, "%.150s (and %d more verification errors)", c->sp_ev.text, c->sp_errs - 1);
        snprintf(c->sp_ev.text, sizeof c->sp_ev.text, "%s", text);
        if (c->sp_a >= 0 && c->sp_b >= 0) {
            pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_a, c->sp_b, 1, 0, 0, NULL, &c->sp_ev);
            pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_b, c->sp_a, 1, 0, 0, NULL, &c->sp_ev);
        } else {
            /* no pair named: the first two P2P GPUs, unknown which */
            pobs_add(c, DR_OBS_CORRUPT, DR_NS_NONE, 0, 1, 1, 0, 0, NULL, &c->sp_ev);
        }
    } else if (s->simplep2p_passed.v == 1 && c->sp_a >= 0 && c->sp_b >= 0) {
        pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_a, c->sp_b, 0, 0, 0, NULL, &s->simplep2p_passed.ev);
        pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, c->sp_b, c->sp_a, 0, 0, 0, NULL, &s->simplep2p_passed.ev);
    }
}

/* PyTorch: "torch.cuda.can_device_access_peer(0, 1)" and its True/False (on
 * the same line, or the next). */
static void p_torch(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "can_device_access_peer(");
    int call = p != NULL;
    if (call) {
        int a = -1, b = -1;
        c->torch_a = c->torch_b = -1;
        if (sscanf(p + 23, " %d , %d", &a, &b) == 2 && a >= 0 && b >= 0) {
            c->torch_a = a;
            c->torch_b = b;
        }
        p = strchr(p, ')');
        line = p ? p + 1 : "";
    }
    if (c->torch_a < 0)
        return;
    const char *t = strstr(line, "True"), *f = strstr(line, "False");
    if (t || f) {
        pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, c->torch_a, c->torch_b, t && (!f || t < f), 0, 0, NULL, NULL);
        kind(c, DR_K_CUDAERR);
        c->torch_a = c->torch_b = -1;
    } else if (!call && *skip_ws(line)) {
        c->torch_a = c->torch_b = -1; /* the answer is not on the next line */
    }
}

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
static void nc_close_run(dp_ctx *c)
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
    nc_close_run(c);
    c->nc_run = 1;
    c->nc_off = c->nc_env_off || c->nc_cmd_off;
    c->nc_cmd_off = 0;
    c->nc_bus.avg = c->nc_bus.peak = -1;
    c->nc_bus.ngpus = 0;
    c->nc_bus.dev[0] = c->nc_bus.dev[1] = -1;
    ev(c, &c->nc_bus.ev);
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

static void p_nccl(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p;
    if ((p = strstr(line, "NCCL_P2P_DISABLE")))
        nc_p2p_env(c, line, p);
    if (line[0] == '#' && strstr(line, "nThread ") && strstr(line, "nGpus ")) {
        nc_open_run(c);
        kind(c, DR_K_NCCL);
        return;
    }
    if ((p = strstr(line, "# Avg bus bandwidth")) && (p = strchr(p, ':'))) {
        char *end = NULL;
        double v = strtod(p + 1, &end);
        if (c->nc_run && end != p + 1 && isfinite(v) && v > 0) {
            c->nc_bus.avg = v;
            ev(c, &c->nc_bus.ev);
        }
        nc_close_run(c);
        kind(c, DR_K_NCCL);
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
                rec_get(c, "nccl", DR_NS_CUDA, dev, bb, NULL);
            }
        }
        kind(c, DR_K_NCCL);
        return;
    }
    /* NCCL 1.x tests: "#   Rank  0 uses device  0 [0x05] Tesla M40 24GB", also with its "#" lost
     * in a Markdown paste */
    if ((p = strstr(line, "Rank ")) && strstr(line, " uses device ") && strchr(line, '[')) {
        const char *q = skip_ws(line);
        if (*q == '#')
            q = skip_ws(q + 1);
        int rank = -1, dev = -1, n = 0;
        if (sscanf(q, "Rank %d uses device %d%n", &rank, &dev, &n) == 2 && dev >= 0 && dev < DR_MAX_GPUS) {
            const char *lb = strchr(q + n, '['), *rb = lb ? strchr(lb, ']') : NULL;
            char b[16] = "", name[96] = "";
            unsigned bus = 0;
            if (lb && rb && sscanf(lb + 1, "0x%x", &bus) == 1)
                snprintf(b, sizeof b, "0000:%02x:00.0", bus & 0xff);
            if (rb)
                trim_copy(name, sizeof name, rb + 1, rb + strlen(rb));
            rec_get(c, "nccl", DR_NS_CUDA, dev, b[0] ? b : NULL, name[0] ? name : NULL);
            if (rank >= 0 && rank < MAX_RANKS)
                c->rank_dev[rank] = dev;
            kind(c, DR_K_NCCL);
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
            trim_copy(inner, sizeof inner, lb + 1, rb);
            unsigned dom = 0, bus = 0, d = 0;
            if (!strncmp(inner, "0x", 2) && sscanf(inner, "%x", &bus) == 1)
                snprintf(b, sizeof b, "0000:%02x:00.0", bus & 0xff);
            else if (sscanf(inner, "%x:%x:%x", &dom, &bus, &d) == 3)
                snprintf(b, sizeof b, "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff, d & 0x1f);
            trim_copy(name, sizeof name, rb + 1, rb + strlen(rb));
            rec_get(c, "nccl", DR_NS_CUDA, dev, b, name);
            if (rank >= 0 && rank < MAX_RANKS)
                c->rank_dev[rank] = dev;
            if (c->nc_run && rank >= 0 && rank < 2)
                c->nc_bus.dev[rank] = dev;
            c->nc_bus.ngpus += c->nc_run;
        }
        kind(c, DR_K_NCCL);
        return;
    }
    if ((p = strstr(line, "Out of bounds values"))) {
        if (strstr(p, "FAILED"))
            setn(c, &s->nccl_wrong, 1);
        else if (strstr(p, "OK"))
            setn(c, &s->nccl_ok, 1);
        kind(c, DR_K_NCCL);
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
        kind(c, DR_K_NCCL);
        return;
    }
    if (c->nt_nwrong > 0 && isdigit((unsigned char)*skip_ws(line))) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", line);
        char *tok[32];
        int nt = pv_tokenize(buf, tok, 32);
        for (int i = 0; i < c->nt_nwrong; i++) {
            long w;
            int at = c->nt_wrong[i];
            if (at >= 0 && at < nt && is_int(tok[at], &w) && w > 0)
                setn(c, &s->nccl_wrong, 1);
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
    pobs_add(c, DR_OBS_NCCL, DR_NS_CUDA, a, b, c->nc_run ? c->nc_off : (c->nc_env_off || c->nc_cmd_off), 0, 0, cls,
             NULL);
    kind(c, DR_K_NCCL);
}

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
static void bus_peak(dp_ctx *c, int idx, double v, int ngpus, const int *dev, const dr_ev *e)
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
    if ((p = strstr(line, "P2P on : ")) && sscanf(skip_ws(line), "GPU%d<->GPU%d", &a, &b) == 2) {
        double lim = gbps_per_direction(p);
        const char *type = !strncmp(p + 9, "NVLink", 6) ? "nvlink" : "pcie";
        if (lim > 0) {
            pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, a, b, 0, lim, -1, type, NULL);
            pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, b, a, 0, lim, -1, type, NULL);
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
    ev(c, &e);
    for (int k = 0; k < 2; k++) {
        double t, v;
        if (sscanf(part[k], "%lf %lf", &t, &v) == 2)
            bus_peak(c, k, v, c->vt_ndev, c->vt_dev, &e);
    }
    return 1;
}

static void p_verify_text(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p;
    if (strstr(line, "p2p-verify") && strstr(line, "GPU peer-to-peer verification")) {
        c->vt_on = 1;
        kind(c, DR_K_VERIFY);
        return;
    }
    if ((p = strstr(line, "== VERDICT:"))) {
        const char *e = strstr(p, "(exit ");
        if (e) {
            setn_force(c, &s->verify_status, atoi(e + 6));
            ev(c, &s->verify_ev);
            kind(c, DR_K_VERIFY);
        }
        return;
    }
    if (strstr(line, "self-test:") && strstr(line, "injected")) {
        setn(c, &s->selftest, 1);
        return;
    }
    if ((p = strstr(line, "CORRUPTION GPU")) && strstr(p, "->GPU")) {
        int a = atoi(p + 14);
        const char *q = strstr(p, "->GPU");
        pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, atoi(q + 5), 1, 0, 0, NULL, NULL);
        kind(c, DR_K_VERIFY);
        return;
    }
    if (!c->vt_on || vt_more(c, line))
        return;
    p = skip_ws(line);
    if (!strncmp(p, "GPU", 3) && isdigit((unsigned char)p[3]) && strstr(p, "->GPU")) {
        int a = atoi(p + 3);
        const char *q = strstr(p, "->GPU");
        int b = atoi(q + 5);
        size_t l = strlen(p);
        if (l >= 3 && !strcmp(p + l - 3, " OK"))
            pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, b, 0, 0, 0, NULL, NULL);
        else if (strstr(p, "CORRUPT"))
            pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, b, 1, 0, 0, NULL, NULL);
        return;
    }
    /* topology rows: "0    NVIDIA H200    0000:00:06.0  256 GiB ..." */
    long idx;
    char buf[256], *tok[4];
    snprintf(buf, sizeof buf, "%s", p);
    char b[16];
    if (pv_tokenize(buf, tok, 1) == 1 && is_int(tok[0], &idx) && idx < DR_MAX_GPUS &&
        dp_find_busid(line, b, sizeof b) == 0) {
        const char *nb = skip_ws(p + strlen(tok[0]));
        const char *be = strstr(p, b);
        if (!be) {
            /* busid printed in another case: find it by its domain start */
            be = strchr(nb, ':');
            while (be && be > nb && be[-1] != ' ')
                be--;
        }
        char name[96];
        trim_copy(name, sizeof name, nb, be && be > nb ? be : nb + strlen(nb));
        int r = rec_get(c, "verify", DR_NS_CUDA, (int)idx, b, name);
        const char *gi = be ? strstr(be, "GiB") : NULL;
        if (r >= 0 && gi) {
            const char *q = gi;
            while (q > be && q[-1] == ' ')
                q--;
            while (q > be && (isdigit((unsigned char)q[-1]) || q[-1] == '.'))
                q--;
            setn(c, &c->m->recs[r].bar1_mib, (long long)llround(atof(q) * 1024));
        }
    }
}

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
                evt(c, &e, text);
                pobs_add(c, DR_OBS_BW, DR_NS_CUDA, ids[a], ids[b], mx[k].kind, x, y, "verify", &e);
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
                int topo = !mx[k].mode && topo_cell(cell), cap = mx[k].mode && p2p_cell(cell);
                if (a == b || ids[a] < 0 || ids[b] < 0 || (!topo && !cap))
                    continue;
                dr_ev e;
                snprintf(text, sizeof text, "nvidia_smi.%s[GPU%d][GPU%d] = %s", mx[k].key, ids[a], ids[b], cell);
                evt(c, &e, text);
                pobs_add(c, topo ? DR_OBS_TOPO : DR_OBS_P2PCAP, DR_NS_CUDA, ids[a], ids[b], mx[k].mode, 0, 0, cell, &e);
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
        evt(c, &e, text);
        pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, a, b, 0, lim, -1, type, &e);
        pobs_add(c, DR_OBS_LIMIT, DR_NS_CUDA, b, a, 0, lim, -1, type, &e);
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
        evt(c, &e, text);
        bus_peak(c, idx, peak, ng, dev, &e);
        for (int t = dj_at(d, dj_get(d, x, "transports"), 0); t >= 0; t = d->nodes[t].next) {
            char via[64], cls[16];
            dj_str(d, dj_get(d, t, "via"), via, sizeof via);
            pv_nccl_transport_class(via, cls, sizeof cls);
            snprintf(text, sizeof text, "nccl.runs[%s].transports: GPU%d->GPU%d via %s", p2p,
                     (int)dj_num(d, dj_get(d, t, "src_gpu"), -1), (int)dj_num(d, dj_get(d, t, "dst_gpu"), -1), via);
            evt(c, &e, text);
            pobs_add(c, DR_OBS_NCCL, DR_NS_CUDA, (int)dj_num(d, dj_get(d, t, "src_gpu"), -1),
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
        evt(c, &e, text);
        pobs_add(c, DR_OBS_HAZARD, DR_NS_CUDA, a, b, 1, 0, 0, test, &e);
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
    kind(c, DR_K_VERIFY);
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
        int r = rec_get(c, "verify", DR_NS_CUDA, idx, b, name);
        if (r < 0)
            continue;
        dr_grec *gr = &m->recs[r];
        snprintf(text, sizeof text, "gpus[%d]: %s %s", i, name, bus);
        evt(c, &e, text);
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
            evt(c, &e, text);
            pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, ids[a], ids[b], v, 0, 0, NULL, &e);
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
        evt(c, &e, text);
        pobs_add(c, DR_OBS_CORRUPT, DR_NS_CUDA, a, b, stt[0] == 'c', 0, 0, NULL, &e);
    }
    js_hazards(c, d);
    int vd = dj_get(d, 0, "verdict");
    double code = dj_num(d, dj_get(d, vd, "exit_code"), -1);
    if (code >= 0) {
        char stat[32];
        dj_str(d, dj_get(d, vd, "status"), stat, sizeof stat);
        snprintf(text, sizeof text, "verdict: %s (exit %d)", stat, (int)code);
        evt(c, &e, text);
        s->verify_status.v = -1;
        dr_set(&s->verify_status, (long long)code, &e);
        s->verify_ev = e;
    }
    char drv[24];
    dj_str(d, dj_get(d, 0, "driver_version"), drv, sizeof drv);
    if (drv[0] && !s->smi_driver_version[0]) {
        snprintf(s->smi_driver_version, sizeof s->smi_driver_version, "%s", drv);
        evt(c, &s->smi_driver_version_ev, "driver_version (p2p-verify --json)");
    }
}

static void js_close(dp_ctx *c)
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

static void js_line(dp_ctx *c, const char *line)
{
    if (c->ln == 1 || (!c->js_on && c->js_len == 0 && c->m->files[c->fi].lines <= 1)) {
        if (*skip_ws(line) == '{')
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

/* ------------------------------------------------------------ lspci */

static int lspci_header(const char *line, char *busid, char *cls, size_t clen, const char **desc)
{
    if (isspace((unsigned char)line[0]))
        return 0;
    const char *p = line;
    /* optional domain */
    const char *sp = strchr(p, ' ');
    if (!sp || sp - p > 12 || sp - p < 7)
        return 0;
    char addr[16];
    trim_copy(addr, sizeof addr, p, sp);
    for (const char *q = addr; *q; q++)
        if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
            return 0;
    if (pv_norm_busid(addr, busid, 16) != 0)
        return 0;
    const char *cb = sp + 1;
    const char *ce = strstr(cb, ": ");
    if (!ce)
        return 0;
    trim_copy(cls, clen, cb, ce);
    *desc = ce + 2;
    return 1;
}

static void p_lspci(dp_ctx *c, const char *line)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    char busid[16], cls[96];
    const char *desc;
    if (lspci_header(line, busid, cls, sizeof cls, &desc)) {
        c->pci_kind = 0;
        c->pci_idx = -1;
        c->pci_mem = 0;
        c->pci_bar1_reg = -1;
        c->pci_in_rebar = 0;
        int nv = strstr(desc, "NVIDIA") != NULL || strstr(desc, "[10de:") != NULL;
        if (nv && (strstr(cls, "VGA compatible controller") || strstr(cls, "3D controller") ||
                   strstr(cls, "Display controller"))) {
            char name[96];
            const char *e = strstr(desc, " (rev");
            trim_copy(name, sizeof name, desc, e ? e : desc + strlen(desc));
            c->pci_idx = rec_get(c, "lspci", DR_NS_NONE, -1, busid, name);
            c->pci_kind = c->pci_idx >= 0 ? 1 : 0;
            kind(c, DR_K_LSPCI);
        } else if (strstr(cls, "PCI bridge")) {
            c->pci_idx = dr_bridge_get(m, busid);
            if (c->pci_idx >= 0) {
                dr_bridge *br = &m->bridges[c->pci_idx];
                trim_copy(br->name, sizeof br->name, desc, desc + strlen(desc));
                c->pci_kind = 2;
            }
            kind(c, DR_K_LSPCI);
        } else {
            c->pci_kind = 3;
        }
        return;
    }
    const char *p = skip_ws(line);
    if (p == line && (!strncmp(p, "VGA compatible controller: NVIDIA", 33) ||
                      !strncmp(p, "3D controller: NVIDIA", 21))) {
        /* a block pasted without its address: facts only */
        c->pci_kind = 1;
        c->pci_idx = rec_anon(c, "lspci");
        c->pci_mem = 0;
        c->pci_bar1_reg = -1;
        c->pci_in_rebar = 0;
        if (c->pci_idx < 0)
            c->pci_kind = 0;
        kind(c, DR_K_LSPCI);
        return;
    }
    if (p == line && *p)
        return; /* not part of a block */
    const char *q;
    if ((q = strstr(p, "ACSCtl:"))) {
        int rr = strstr(q, "ReqRedir+") != NULL, cr = strstr(q, "CmpltRedir+") != NULL;
        if (rr || cr)
            setn(c, &s->acs_redir_any, 1);
        if (c->pci_kind == 2) {
            dr_bridge *br = &m->bridges[c->pci_idx];
            br->acs_seen = 1;
            br->req_redir = rr;
            br->cmplt_redir = cr;
            br->src_valid = strstr(q, "SrcValid+") != NULL;
            ev(c, &br->acs_ev);
        } else if (c->pci_kind == 0 && (rr || cr)) {
            setn(c, &s->acs_unknown_ctx, 1);
        }
        kind(c, DR_K_LSPCIV);
        return;
    }
    if (strstr(p, "Capabilities: <access denied>")) {
        setn(c, &s->lspci_denied, 1);
        return;
    }
    if (c->pci_kind == 2) {
        dr_bridge *br = &m->bridges[c->pci_idx];
        if ((q = strstr(p, "Bus: primary="))) {
            const char *se = strstr(q, "secondary="), *su = strstr(q, "subordinate=");
            if (se)
                br->sec = (int)strtol(se + 10, NULL, 16);
            if (su)
                br->sub = (int)strtol(su + 12, NULL, 16);
        } else if (strstr(p, "Express") && strstr(p, "Root Port")) {
            br->type = 1;
        } else if (strstr(p, "Express") && strstr(p, "Downstream Port")) {
            br->type = 2;
        } else if (strstr(p, "Express") && strstr(p, "Upstream Port")) {
            br->type = 3;
        } else if ((q = strstr(p, "Capabilities: [")) && strstr(q, "Access Control Services")) {
            br->acs_cap = (int)strtol(q + 15, NULL, 16);
        }
        return;
    }
    if (c->pci_kind != 1)
        return;
    dr_grec *g = &m->recs[c->pci_idx];
    if ((!strncmp(p, "Region ", 7) && strstr(p, "Memory at")) || !strncmp(p, "Memory at ", 10)) {
        /* lspci -vv "Region 1: Memory at ...", lspci -v "Memory at ..." */
        int reg = !strncmp(p, "Region ", 7) ? atoi(p + 7) : c->pci_mem;
        if (++c->pci_mem == 2) {
            c->pci_bar1_reg = reg;
            if (strstr(p, "<unassigned>") || strstr(p, "<ignored>") || strstr(p, "[disabled]"))
                setn(c, &g->bar1_unassigned, 1);
            const char *sz = strstr(p, "[size=");
            if (sz) {
                long long mib = parse_mib(sz + 6);
                if (mib > 0)
                    setn(c, &g->bar1_mib, mib);
            }
        }
        kind(c, DR_K_LSPCIV);
        return;
    }
    if (strstr(p, "Capabilities:")) {
        c->pci_in_rebar = strstr(p, "Resizable BAR") != NULL;
        kind(c, DR_K_LSPCIV);
        return;
    }
    if (c->pci_in_rebar && !strncmp(p, "BAR ", 4) && (q = strstr(p, "current size:"))) {
        int bar = atoi(p + 4);
        if (bar == (c->pci_bar1_reg >= 0 ? c->pci_bar1_reg : 1)) {
            long long cur = parse_mib(q + 13), max = -1;
            const char *sup = strstr(q, "supported:");
            if (sup) {
                char buf[512], *tok[32];
                snprintf(buf, sizeof buf, "%s", sup + 10);
                int nt = pv_tokenize(buf, tok, 32);
                for (int i = 0; i < nt; i++) {
                    long long v = parse_mib(tok[i]);
                    if (v > max)
                        max = v;
                }
            }
            if (cur > 0)
                setn(c, &g->rebar_cur_mib, cur);
            if (max > 0)
                setn(c, &g->rebar_max_mib, max);
        }
        return;
    }
    if ((q = strstr(p, "LnkCap:")) && strstr(q, "Speed")) {
        const char *sp = strstr(q, "Speed "), *w = strstr(q, "Width x");
        if (sp && gts_to_gen(atof(sp + 6)) > 0)
            setn(c, &g->gen_dev_max, gts_to_gen(atof(sp + 6)));
        if (w)
            setn(c, &g->width_max, atoi(w + 7));
        return;
    }
    if ((q = strstr(p, "LnkSta:")) && strstr(q, "Speed")) {
        const char *sp = strstr(q, "Speed "), *w = strstr(q, "Width x");
        if (sp && gts_to_gen(atof(sp + 6)) > 0)
            setn(c, &g->gen_cur, gts_to_gen(atof(sp + 6)));
        if (w) {
            setn(c, &g->width_cur, atoi(w + 7));
            const char *after = w + 7;
            while (isdigit((unsigned char)*after))
                after++;
            if (!strncmp(skip_ws(after), "(downgraded)", 12))
                setn(c, &g->width_downgraded, 1);
        }
        if (sp && strstr(sp, "(downgraded)") && (!w || strstr(sp, "(downgraded)") < w))
            setn(c, &g->speed_downgraded, 1);
        return;
    }
    if ((q = strstr(p, "Kernel driver in use:"))) {
        trim_copy(g->driver_in_use, sizeof g->driver_in_use, q + 21, q + strlen(q));
        if (!strcmp(g->driver_in_use, "nouveau"))
            setn(c, &s->nouveau, 1);
        return;
    }
    if ((q = strstr(p, "NUMA node:"))) {
        setn(c, &g->numa, atoi(q + 10));
        return;
    }
}

/* ------------------------------------------------------------ lspci -t */

/* "[0000:40]" (or "[40]", lspci before domains): a tree's root at p, its
 * domain and bus; the length, 0 when none. */
static int lt_root_at(const char *p, int *dom, int *bus)
{
    unsigned d = 0, b;
    int n = 0;
    if (sscanf(p, "[%4x:%2x]%n", &d, &b, &n) == 2 && n == 9) {
        *dom = (int)d;
        *bus = (int)b;
        return n;
    }
    if (sscanf(p, "[%2x]%n", &b, &n) == 1 && n == 4) {
        *dom = 0;
        *bus = (int)b;
        return n;
    }
    return 0;
}

/* The devices after a connector ("-+-", "----", "--\-") from k are on bus. */
static void lt_children(dp_ctx *c, const char *line, size_t k, int bus)
{
    k += strspn(line + k, "-+\\");
    if (isxdigit((unsigned char)line[k]) && k < sizeof c->lt_bus / sizeof c->lt_bus[0])
        c->lt_bus[k] = (short)bus;
}

/* An NVIDIA GPU by its lspci name (function 0, not its audio, USB or a switch). */
static int lt_gpu_name(const char *name, int fn)
{
    static const char *const not_gpu[] = {"Audio", "USB", "Serial", "UCSI", "NVSwitch", "Bridge", "ConnectX",
                                          "BlueField", "Ethernet", "Network"};
    if (fn != 0 || !(strstr(name, "NVIDIA") || strstr(name, "[10de:")))
        return 0;
    for (size_t i = 0; i < sizeof not_gpu / sizeof not_gpu[0]; i++)
        if (strstr(name, not_gpu[i]))
            return 0;
    return 1;
}

/* A device "dd.f" at column i of a tree line: a bridge with its bus range
 * (its children's bus), or a device with its name.  Returns where to go on. */
static size_t lt_device(dp_ctx *c, const char *line, size_t i)
{
    int dev = hexval(line[i]) * 16 + hexval(line[i + 1]), fn = hexval(line[i + 3]);
    int bus = i < sizeof c->lt_bus / sizeof c->lt_bus[0] ? c->lt_bus[i] : -1;
    char b[16] = "";
    if (bus >= 0 && dev <= 0x1f && fn <= 7)
        snprintf(b, sizeof b, "%04x:%02x:%02x.%x", c->lt_dom, bus, dev, fn);
    size_t j = i + 4;
    unsigned sec, sub;
    int n = 0;
    if (line[j] == '-' && line[j + 1] == '[' &&
        (sscanf(line + j + 1, "[%2x-%2x]%n", &sec, &sub, &n) == 2 || (sscanf(line + j + 1, "[%2x]%n", &sec, &n) == 1 && (sub = sec, 1)))) {
        int k = b[0] ? dr_bridge_get(c->m, b) : -1;
        if (k >= 0) {
            dr_bridge *br = &c->m->bridges[k];
            if (br->sec < 0) {
                br->sec = (int)sec;
                br->sub = (int)sub;
            }
            if (br->type == 0 && bus == c->lt_root)
                br->type = 1; /* on the root bus: a root port */
        }
        lt_children(c, line, j + 1 + (size_t)n, (int)sec);
        return j + (size_t)n;
    }
    const char *name = skip_ws(line + j);
    if (b[0] && lt_gpu_name(name, fn))
        rec_get(c, "lspci", DR_NS_NONE, -1, b, name);
    return strlen(line) - 1;
}

/* lspci -t (-v, -nn): "-[0000:00]-+-01.1-[01-05]----00.0-[02-05]--+-08.0-[03]----00.0  NVIDIA ...":
 * the bridges with their bus ranges (which GPUs share a switch) and the GPUs.
 * 1 when the line was part of a tree. */
static int p_lstree(dp_ctx *c, const char *line)
{
    size_t lead = strspn(line, " -+\\|");
    int dom, bus, n = lt_root_at(line + lead, &dom, &bus);
    if (n > 0 && line[lead + (size_t)n] == '-') {
        c->lt_on = 1;
        c->lt_dom = dom;
        c->lt_root = bus;
        lt_children(c, line, lead + (size_t)n, bus);
        kind(c, DR_K_LSPCIT);
    } else if (!c->lt_on || !line[0]) {
        c->lt_on = 0; /* (a blank line ends it) */
        return 0;
    } else if (line[0] != ' ' && line[0] != '|') {
        return 0; /* the tail of a wrapped name, or another output: the tree may go on */
    }
    int found = 0;
    for (size_t i = lead > 0 ? lead : 1; line[i]; i++)
        if (line[i - 1] == '-' && isxdigit((unsigned char)line[i]) && isxdigit((unsigned char)line[i + 1]) &&
            line[i + 2] == '.' && isxdigit((unsigned char)line[i + 3]) &&
            (line[i + 4] == '-' || line[i + 4] == ' ' || !line[i + 4])) {
            i = lt_device(c, line, i);
            found = 1;
        }
    if (!found && line[strspn(line, " |")]) {
        c->lt_on = 0; /* no device and not the tree's drawing: another output */
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ driver */

dp_ctx *dp_begin(dr_model *m, int fi)
{
    dp_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->m = m;
    c->fi = fi;
    c->fname = m->files[fi].name;
    c->q_rec = c->t_rec = c->nv_rec = c->sp_a = c->sp_b = c->sf_rec = c->gl_idx = c->torch_a = c->torch_b = -1;
    for (int i = 0; i < MAX_RANKS; i++)
        c->rank_dev[i] = -1;
    c->hint_cmdline = strstr(c->fname, "cmdline") != NULL;
    for (size_t i = 0; i < sizeof c->lt_bus / sizeof c->lt_bus[0]; i++)
        c->lt_bus[i] = -1;
    c->nc_busbw_col = -1;
    return c;
}

/* A Markdown quote ("> " before a pasted line): the line without it. */
static const char *unquote(const char *line)
{
    const char *p = line;
    while (*p == ' ')
        p++;
    if (*p != '>')
        return line;
    p++;
    return *p == ' ' ? p + 1 : p;
}

/* Where the test outputs read so far have got to (dp_end judges them). */
static void cut_track(dp_ctx *c, const char *line)
{
    const char *p = skip_ws(line);
    if (!*p)
        return;
    ev(c, &c->cut_last);
    if (strstr(line, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]")) {
        c->cut_p2pbw = 1;
        snprintf(c->cut_where, sizeof c->cut_where, "its device list");
    } else if (c->cut_p2pbw == 1 && strstr(line, "NOTE: The CUDA Samples are not meant for performance")) {
        c->cut_p2pbw = 2;
    } else if (c->cut_p2pbw == 1 && strstr(line, "P2P Connectivity Matrix")) {
        c->cut_mx = 0; /* no copy yet: a paste that ends here is no sign of a hang */
    } else if (c->cut_p2pbw == 1 && (strstr(line, "Matrix (GB/s)") || strstr(line, "Matrix (us)"))) {
        /* the copies are measured: a test that stops in here hung or died */
        snprintf(c->cut_where, sizeof c->cut_where, "%.60s", p);
        c->cut_mx = 1;
        c->cut_mx_ncol = c->cut_mx_rows = 0;
    } else if (c->cut_p2pbw == 1 && c->cut_mx && !strncmp(p, "D\\D", 3)) {
        for (const char *q = p + 3; *q; q++)
            if (isdigit((unsigned char)*q) && (q[-1] == ' ' || q[-1] == '\t'))
                c->cut_mx_ncol++;
    } else if (c->cut_p2pbw == 1 && c->cut_mx && isdigit((unsigned char)*p)) {
        c->cut_mx_rows++;
    }
    if (strstr(line, "[simpleP2P]") && strstr(line, "Starting")) {
        c->cut_sp = 1;
    } else if (c->cut_sp == 1 && (strstr(line, "Test passed") || strstr(line, "Test PASSED") ||
                                  strstr(line, "Test failed") || strstr(line, "Test FAILED") ||
                                  strstr(line, "Peer-to-Peer access capability are required") ||
                                  strstr(line, "Peer to Peer access is not available") ||
                                  strstr(line, "Two or more GPUs") || strstr(line, "Waiving"))) {
        c->cut_sp = 2;
    }
    /* nccl-tests' (or NCCL 1.x tests') column header, its rows, its end */
    if (strstr(line, "busbw") && (strstr(line, "size") || strstr(line, "bytes")) && strstr(line, "algbw")) {
        if (c->cut_nc != 1 || c->cut_nc_rows > 0)
            c->cut_nc_rows = 0;
        c->cut_nc = 1;
    } else if (c->cut_nc == 1 && isdigit((unsigned char)*p)) {
        c->cut_nc_rows++;
    } else if (c->cut_nc == 1 && (strstr(line, "Avg bus bandwidth") || strstr(line, "Out of bounds"))) {
        c->cut_nc = 2;
    }
}

/* dp_end: a test output begun and not ended becomes a cut (dr_sys.cut). */
static void cut_close(dp_ctx *c)
{
    dr_sys *s = &c->m->sys;
    const char *test = NULL, *where = NULL;
    if (c->cut_p2pbw == 1 && c->cut_mx && c->cut_mx_rows < (c->cut_mx_ncol > 0 ? c->cut_mx_ncol : 1)) {
        /* it ends inside a matrix (a paste that ends after a whole one
           cannot be told from a cut one: not judged) */
        test = "p2pBandwidthLatencyTest";
        where = c->cut_where;
    } else if (c->cut_sp == 1) {
        test = "simpleP2P";
        where = "before its verdict (Test passed / failed)";
    } else if (c->cut_nc == 1 && c->cut_nc_rows == 0) {
        test = "the NCCL test";
        where = "its column header, before the first result";
    }
    if (!test || s->ncut >= 4)
        return;
    snprintf(s->cut[s->ncut].test, sizeof s->cut[s->ncut].test, "%s", test);
    snprintf(s->cut[s->ncut].where, sizeof s->cut[s->ncut].where, "%s", where);
    s->cut[s->ncut].ev = c->cut_last;
    s->ncut++;
}

/* A CUDA program's command line: CUDA_VISIBLE_DEVICES=0,2 (numbers; UUIDs
 * or MIG names leave the numbering unknown) holds for the run it starts, an
 * exported one until another; a run started without it numbers every GPU. */
static void cvd_track(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "CUDA_VISIBLE_DEVICES=");
    if (!p) {
        /* a command line (not the program's own banner or log lines) */
        static const char *const progs[] = {"_perf ", "_perf\t", "p2pBandwidthLatencyTest", "simpleP2P",
                                            "nvbandwidth", NULL};
        if (c->ncvd == 0 || c->cvd_export || *skip_ws(line) == '[' || strstr(line, "Rank") ||
            strstr(line, "nThread") || strstr(line, "NCCL INFO") || strstr(line, "Version"))
            return;
        for (int i = 0; progs[i]; i++)
            if (strstr(line, progs[i]))
                c->ncvd = 0;
        return;
    }
    c->cvd_export = strstr(line, "export ") && strstr(line, "export ") < p;
    p += strlen("CUDA_VISIBLE_DEVICES=");
    if (*p == '"' || *p == '\'')
        p++;
    int n = 0;
    while (isdigit((unsigned char)*p) && n < DR_MAX_GPUS) {
        char *end;
        long v = strtol(p, &end, 10);
        if (v < 0 || v >= DR_MAX_GPUS)
            break;
        c->cvd[n++] = (int)v;
        p = end;
        if (*p != ',')
            break;
        p++;
    }
    /* a whole list of numbers, else unknown */
    c->ncvd = (n > 0 && (!*p || isspace((unsigned char)*p) || *p == '"' || *p == '\'' || *p == ';')) ? n : 0;
}

void dp_line(dp_ctx *c, const char *line, long lineno)
{
    c->ln = lineno;
    line = unquote(line);
    c->line = line;
    cvd_track(c, line);
    cut_track(c, line);
    js_line(c, line);
    if (c->js_on)
        return;
    const char *tp = strstr(line, "topo -p2p");
    if (tp || (tp = strstr(line, "topo --p2p"))) {
        const char *mode = skip_ws(strchr(tp + 5, ' ') ? strchr(tp + 5, ' ') : tp + strlen(tp));
        c->p2p_ctx = !strncmp(mode, "rw", 2) ? 'x' : (strchr("rwpna", *mode) && *mode ? *mode : '?');
    } else if (strstr(line, "topo -m") || strstr(line, "topo --matrix")) {
        c->p2p_ctx = 0;
    }
    int t = title_of(line);
    if (t != T_NONE) {
        c->title = t;
        c->mx_style = 0;
        return;
    }
    if (p_nvbw(c, line) || p_lstree(c, line))
        return;
    p_setpci(c, line);
    if (p_matrix(c, line))
        return;
    p_smiq(c, line);
    p_smi(c, line);
    p_csv(c, line);
    p_nvlink(c, line);
    p_lspci(c, line);
    p_dmesg(c, line);
    p_cmdline(c, line);
    p_modopts(c, line);
    p_params(c, line);
    p_version(c, line);
    p_gpulist(c, line);
    p_modinfo(c, line);
    p_userspace(c, line);
    p_collect(c, line);
    p_cuda_samples(c, line);
    p_torch(c, line);
    p_nccl(c, line);
    p_verify_text(c, line);
}

void dp_end(dp_ctx *c)
{
    if (!c)
        return;
    js_close(c);
    mi_close(c);
    sp_close(c);
    nc_close_run(c);
    cut_close(c);
    bw_emit(c);
    nvb_emit(c);
    if (c->mx_short)
        dr_note(c->m, "%s: %d matrix row%s cut or wrapped (fewer values than the header, or a value without the "
                      "decimals the tools print): the cut value%s not read",
                c->fname, c->mx_short, c->mx_short == 1 ? "" : "s", c->mx_short == 1 ? " was" : "s were");
    if (c->mx_bad)
        dr_note(c->m, "%s: %d matrix value%s not a number p2p-doctor reads (e.g. '%s': decimal commas, "
                      "thousands separators): not read", c->fname, c->mx_bad, c->mx_bad == 1 ? " is" : "s are",
                c->mx_bad_tok);
    free(c->bw);
    free(c->nvb);
    free(c);
}

size_t dp_clean_line(char *s, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == 0x1b) { /* ESC [ ... final */
            if (i + 1 < len && s[i + 1] == '[') {
                i += 2;
                while (i < len && !((unsigned char)s[i] >= '@' && (unsigned char)s[i] <= '~'))
                    i++;
            }
            continue;
        }
        if (ch == '\t')
            ch = ' ';
        else if (ch < 0x20 || ch == 0x7f)
            ch = ' ';
        s[o++] = (char)ch;
    }
    while (o > 0 && s[o - 1] == ' ')
        o--;
    s[o] = '\0';
    return o;
}

int dp_parse_text(dr_model *m, const char *name, const char *text)
{
    if (m->nfiles >= DR_MAX_FILES)
        return -1;
    int fi = m->nfiles++;
    dr_file *f = &m->files[fi];
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof f->name, "%s", name);
    snprintf(f->status, sizeof f->status, "read");
    f->ngpus = -1;
    dp_ctx *c = dp_begin(m, fi);
    if (!c)
        return -1;
    char *line = malloc(DP_LINE_MAX);
    if (!line) {
        dp_end(c);
        return -1;
    }
    const char *p = text;
    long ln = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        size_t k = l < DP_LINE_MAX - 1 ? l : DP_LINE_MAX - 1;
        memcpy(line, p, k);
        dp_clean_line(line, k);
        f->lines++;
        dp_line(c, line, ++ln);
        p += l;
        if (*p == '\n')
            p++;
    }
    f->bytes = (long long)strlen(text);
    free(line);
    dp_end(c);
    return fi;
}
