/* dp_util.c - p2p-doctor's parsers: the helpers every reader shares (text,
 * evidence, GPU records, pair observations) and the public text helpers of
 * dparse.h (pure C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysparse.h"

/* ------------------------------------------------------------ helpers */

static int ci_starts(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (tolower((unsigned char)*s) != tolower((unsigned char)*prefix))
            return 0;
    return 1;
}

const char *dp_ci_find(const char *hay, const char *needle)
{
    if (!*needle)
        return hay;
    for (; *hay; hay++)
        if (tolower((unsigned char)*hay) == tolower((unsigned char)*needle) && ci_starts(hay, needle))
            return hay;
    return NULL;
}

const char *dp_skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

void dp_trim_copy(char *out, size_t outlen, const char *b, const char *e)
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

int dp_is_int(const char *s, long *v)
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

void dp_ev(dp_ctx *c, dr_ev *e)
{
    dr_ev_make(e, c->fname, c->ln, c->line);
}

void dp_evt(dp_ctx *c, dr_ev *e, const char *text)
{
    dr_ev_make(e, c->fname, c->ln, text);
}

void dp_setn(dp_ctx *c, dr_num *n, long long v)
{
    dr_ev e;
    dp_ev(c, &e);
    dr_set(n, v, &e);
}

/* Overwrite: the later line of the same output is the newer state. */
void dp_setn_force(dp_ctx *c, dr_num *n, long long v)
{
    n->v = -1;
    dp_setn(c, n, v);
}

int dp_hexval(int ch)
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
        if (dp_hexval(p[0]) < 0 || dp_hexval(p[1]) < 0 || p[2] != ':' || dp_hexval(p[3]) < 0 || dp_hexval(p[4]) < 0 ||
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
            while (k > 0 && dp_hexval(s[k - 1]) >= 0 && digits < 8) {
                k--;
                digits++;
            }
            if (digits >= 1 && (k == 0 || !isalnum((unsigned char)s[k - 1]) || s[k - 1] == ':')) {
                for (size_t t = k; t < i - 1; t++)
                    dom = dom * 16 + (unsigned)dp_hexval(s[t]);
            }
        }
        unsigned bus = (unsigned)(dp_hexval(p[0]) * 16 + dp_hexval(p[1]));
        unsigned dev = (unsigned)(dp_hexval(p[3]) * 16 + dp_hexval(p[4]));
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

int dp_find_versions(const char *s, char out[][24], int max)
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
    if (!s || dp_find_versions(s, v, 1) < 1)
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
        dp_trim_copy(buf, sizeof buf, b + 1, e);
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
long long dp_parse_mib(const char *s)
{
    s = dp_skip_ws(s);
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    end = (char *)dp_skip_ws(end);
    if (!isalpha((unsigned char)*end))
        return -1;
    return size_to_mib(v, end);
}

int dp_gts_to_gen(double gts)
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
int dp_rec_get(dp_ctx *c, const char *src, int ns, int index, const char *busid, const char *name)
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

int dp_rec_anon(dp_ctx *c, const char *src)
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

void dp_pobs_add(dp_ctx *c, int kind, int ns, int a, int b, int val, double x, double y, const char *text,
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
        dp_ev(c, &o->ev);
}

void dp_kind(dp_ctx *c, unsigned k)
{
    c->m->files[c->fi].kinds |= k;
}
