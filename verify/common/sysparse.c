/* sysparse.c - nvidia-smi / sysfs / procfs text parsers (pure C). */
#define _POSIX_C_SOURCE 200809L
#include "sysparse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pv_strip_ansi(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (*r == 0x1b) {
            r++;
            if (*r == '[') {
                r++;
                while (*r && !(*r >= '@' && *r <= '~'))
                    r++;
                if (*r)
                    r++;
            }
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

int pv_tokenize(char *line, char **tok, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        tok[n++] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p)
            *p++ = '\0';
    }
    return n;
}

static int gpu_token(const char *t)
{
    if (strncmp(t, "GPU", 3) != 0 || !isdigit((unsigned char)t[3]))
        return -1;
    char *end = NULL;
    long v = strtol(t + 3, &end, 10);
    if (*end || v < 0 || v > 1024)
        return -1;
    return (int)v;
}

int pv_parse_smi_matrix(const char *text, int maxn, char *cells, size_t cellsz)
{
    if (!text)
        return 0;
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    if (!buf)
        return 0;
    memcpy(buf, text, len + 1);
    pv_strip_ansi(buf);
    int n = 0;
    int rows_seen = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tok[64];
        int nt = pv_tokenize(line, tok, 64);
        if (nt == 0)
            continue;
        if (n == 0) {
            /* header: GPU0 GPU1 ... */
            if (gpu_token(tok[0]) != 0)
                continue;
            int k = 0;
            while (k < nt && gpu_token(tok[k]) == k)
                k++;
            if (k < 1)
                continue;
            n = k > maxn ? maxn : k;
            continue;
        }
        int row = gpu_token(tok[0]);
        if (row < 0 || row >= n) {
            if (rows_seen >= n)
                break; /* legend or NIC rows after the matrix */
            continue;
        }
        if (nt < 1 + n)
            continue;
        for (int c = 0; c < n; c++)
            snprintf(cells + ((size_t)row * (size_t)maxn + (size_t)c) * cellsz, cellsz, "%s", tok[1 + c]);
        rows_seen++;
    }
    free(buf);
    return rows_seen >= n ? n : 0;
}

int pv_smi_nvlinks(const char *cell)
{
    if (!cell || strncmp(cell, "NV", 2) != 0 || !isdigit((unsigned char)cell[2]))
        return 0;
    char *end = NULL;
    long v = strtol(cell + 2, &end, 10);
    if (*end || v <= 0 || v > 64)
        return 0;
    return (int)v;
}

int pv_norm_busid(const char *in, char *out, size_t outlen)
{
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (!in)
        return -1;
    while (*in == ' ')
        in++;
    int colons = 0;
    for (const char *p = in; *p && *p != '\n'; p++)
        if (*p == ':')
            colons++;
    if (colons == 2) {
        if (sscanf(in, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
            return -1;
    } else if (colons == 1) {
        if (sscanf(in, "%x:%x.%x", &bus, &dev, &fn) != 3)
            return -1;
    } else {
        return -1;
    }
    if (bus > 0xff || dev > 0x1f || fn > 7 || dom > 0xffff)
        return -1;
    snprintf(out, outlen, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    return 0;
}

int pv_next_line(const char **p, char *line, size_t cap, int *cut)
{
    if (!**p)
        return 0;
    const char *nl = strchr(*p, '\n');
    size_t l = nl ? (size_t)(nl - *p) : strlen(*p);
    if (cut)
        *cut = l >= cap;
    if (l >= cap)
        l = cap - 1;
    memcpy(line, *p, l);
    line[l] = '\0';
    *p = nl ? nl + 1 : *p + strlen(*p);
    return 1;
}

int pv_parse_smi_index_csv(const char *text, int maxn, char busids[][32])
{
    int count = 0;
    if (!text)
        return 0;
    const char *p = text;
    char line[256];
    int cut;
    while (pv_next_line(&p, line, sizeof line, &cut)) {
        if (!cut) {
            char *comma = strchr(line, ',');
            if (comma) {
                *comma = '\0';
                char *end = NULL;
                long idx = strtol(line, &end, 10);
                if (end != line && idx >= 0 && idx < maxn) {
                    char nb[32];
                    if (pv_norm_busid(comma + 1, nb, sizeof nb) == 0) {
                        snprintf(busids[idx], 32, "%s", nb);
                        if (idx + 1 > count)
                            count = (int)idx + 1;
                    }
                }
            }
        }
    }
    return count;
}

long long pv_parse_sysfs_bar(const char *text, int bar)
{
    if (!text || bar < 0)
        return -1;
    const char *p = text;
    for (int i = 0; i < bar; i++) {
        p = strchr(p, '\n');
        if (!p)
            return -1;
        p++;
    }
    unsigned long long start = 0, end = 0, flags = 0;
    if (sscanf(p, "%llx %llx %llx", &start, &end, &flags) != 3)
        return -1;
    if (start == 0 && end == 0)
        return -1;
    if (end < start)
        return -1;
    return (long long)(end - start + 1);
}

long long pv_parse_sysfs_bar1(const char *text)
{
    if (!text)
        return -1;
    const char *p = text;
    int mem_bars = 0;
    for (int line = 0; line < 6 && p && *p; line++) {
        unsigned long long start = 0, end = 0, flags = 0;
        if (sscanf(p, "%llx %llx %llx", &start, &end, &flags) == 3 && end > start && (flags & 0x200)) {
            if (++mem_bars == 2)
                return (long long)(end - start + 1);
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

int pv_parse_proc_driver_version(const char *text, char *out, size_t outlen)
{
    /* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." */
    if (!text)
        return -1;
    const char *p = strstr(text, "NVRM version:");
    if (!p)
        return -1;
    const char *eol = strchr(p, '\n');
    if (!eol)
        eol = p + strlen(p);
    /* find the first token that looks like N.N or N.N.N */
    const char *q = p + 13;
    while (q < eol) {
        while (q < eol && isspace((unsigned char)*q))
            q++;
        const char *s = q;
        while (q < eol && !isspace((unsigned char)*q))
            q++;
        size_t l = (size_t)(q - s);
        if (l > 0 && l < outlen && isdigit((unsigned char)s[0])) {
            int dots = 0, ok = 1;
            for (size_t i = 0; i < l; i++) {
                if (s[i] == '.')
                    dots++;
                else if (!isdigit((unsigned char)s[i]))
                    ok = 0;
            }
            if (ok && dots >= 1) {
                memcpy(out, s, l);
                out[l] = '\0';
                return 0;
            }
        }
    }
    return -1;
}

int pv_parse_params_regdwords(const char *text, char *out, size_t outlen)
{
    const char *p = text;
    char line[1024];
    while (p && pv_next_line(&p, line, sizeof line, NULL)) {
        if (strncmp(line, "RegistryDwords:", 15) != 0)
            continue;
        const char *v = line + 15;
        while (*v == ' ' || *v == '"')
            v++;
        size_t l = strcspn(v, "\"");
        if (l >= outlen)
            l = outlen - 1;
        memcpy(out, v, l);
        out[l] = '\0';
        return 0;
    }
    return -1;
}

long pv_regdword(const char *dwords, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = dwords; p && *p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
        while (*p == ' ')
            p++;
        if (!strncmp(p, key, kl) && p[kl] == '=')
            return strtol(p + kl + 1, NULL, 0);
    }
    return -1;
}
