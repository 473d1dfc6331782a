/* dparse.c - p2p-doctor's parsers (pure C).  See dparse.h.
 *
 * One context per file; dp_line hands each line to every reader (the dp_*.c
 * files, one per kind of output; dparse_int.h lists them).  Each reader
 * returns quickly unless the line has its marker. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ dispatcher */

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
    const char *p = dp_skip_ws(line);
    if (!*p)
        return;
    dp_ev(c, &c->cut_last);
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
        if (c->ncvd == 0 || c->cvd_export || *dp_skip_ws(line) == '[' || strstr(line, "Rank") ||
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
    dp_js_line(c, line);
    if (c->js_on)
        return;
    const char *tp = strstr(line, "topo -p2p");
    if (tp || (tp = strstr(line, "topo --p2p"))) {
        const char *mode = dp_skip_ws(strchr(tp + 5, ' ') ? strchr(tp + 5, ' ') : tp + strlen(tp));
        c->p2p_ctx = !strncmp(mode, "rw", 2) ? 'x' : (strchr("rwpna", *mode) && *mode ? *mode : '?');
    } else if (strstr(line, "topo -m") || strstr(line, "topo --matrix")) {
        c->p2p_ctx = 0;
    }
    int t = dp_title_of(line);
    if (t != T_NONE) {
        c->title = t;
        c->mx_style = 0;
        return;
    }
    if (dp_nvbw(c, line) || dp_lstree(c, line))
        return;
    dp_setpci(c, line);
    if (dp_matrix(c, line))
        return;
    dp_smiq(c, line);
    dp_smi(c, line);
    dp_csv(c, line);
    dp_nvlink(c, line);
    dp_lspci(c, line);
    dp_dmesg(c, line);
    dp_cmdline(c, line);
    dp_modopts(c, line);
    dp_params(c, line);
    dp_version(c, line);
    dp_gpulist(c, line);
    dp_modinfo(c, line);
    dp_userspace(c, line);
    dp_collect(c, line);
    dp_cuda_samples(c, line);
    dp_torch(c, line);
    dp_nccl(c, line);
    dp_verify_text(c, line);
}

void dp_end(dp_ctx *c)
{
    if (!c)
        return;
    dp_js_close(c);
    dp_mi_close(c);
    dp_sp_close(c);
    dp_nc_close_run(c);
    cut_close(c);
    dp_bw_emit(c);
    dp_nvb_emit(c);
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
