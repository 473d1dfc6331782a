/* dp_nvbw.c - p2p-doctor's reader of nvbandwidth's text output (pure C).  See
 * dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sysparse.h"

/* ------------------------------------------------------------ nvbandwidth */

enum { NVB_NONE = 0, NVB_H2D, NVB_D2H, NVB_D2D_WRITE, NVB_D2D_READ, NVB_OTHER };

/* nvbandwidth's figures: P2P copies per ordered pair (data from a to b), and
 * each GPU's copies to and from host memory, GB/s (NAN unknown). */
struct nvb_data {
    double d2d[DR_MAX_GPUS][DR_MAX_GPUS];
    double h2d[DR_MAX_GPUS], d2h[DR_MAX_GPUS];
    dr_ev ev; /* the first row of P2P figures */
};

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
        dp_trim_copy(name, sizeof name, end + 1, lp);
    } else if (c->nvb_on && !lp && *dp_skip_ws(end + 1) && *dp_skip_ws(end + 1) != '"') {
        dp_trim_copy(name, sizeof name, end + 1, p + l);
    } else {
        return 0;
    }
    dp_rec_get(c, "nvbw", DR_NS_CUDA, (int)idx, b, name);
    if (idx + 1 > c->nvb_ndev)
        c->nvb_ndev = (int)idx + 1;
    dp_kind(c, DR_K_NVBW);
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
                    dp_pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, a, b, 0, 0, 0, NULL, NULL);
    dp_kind(c, DR_K_NVBW);
    return 1;
}

/* One row of an nvbandwidth matrix: "0     N/A    392.21    391.85". */
static void nvb_row(dp_ctx *c, char **tok, int nt)
{
    long row;
    struct nvb_data *d = nvb_data(c);
    if (!d || !dp_is_int(tok[0], &row) || row >= DR_MAX_GPUS)
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
            dp_ev(c, &d->ev);
    }
}

/* nvbandwidth's text output; 1 when the line was one of its matrix. */
int dp_nvbw(dp_ctx *c, const char *line)
{
    const char *p = dp_skip_ws(line);
    if (!strncmp(p, "nvbandwidth Version:", 20)) {
        c->nvb_on = 1;
        dp_kind(c, DR_K_NVBW);
        return 1;
    }
    size_t l = strlen(p);
    if (!strncmp(p, "Running ", 8) && l > 9 && p[l - 1] == '.' && strspn(p + 8, "abcdefghijklmnopqrstuvwxyz_0123456789") == l - 9) {
        char name[64];
        dp_trim_copy(name, sizeof name, p + 8, p + l - 1);
        c->nvb_test = nvb_test_of(name);
        c->nvb_state = 0;
        dp_kind(c, DR_K_NVBW);
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
        for (int k = 0; k < nt && dp_is_int(tok[k], &v) && v == c->nvb_ncol && v < DR_MAX_GPUS; k++)
            c->nvb_cols[c->nvb_ncol++] = (int)v;
        c->nvb_state = nt > 0 && c->nvb_ncol == nt ? 2 : 0;
        if (c->nvb_state == 2)
            for (int k = 0; k < c->nvb_ncol; k++) /* the GPUs, where the device list is not there */
                dp_rec_get(c, "nvbw", DR_NS_CUDA, c->nvb_cols[k], NULL, NULL);
        return c->nvb_state == 2;
    }
    if (nt < 2 || !dp_is_int(tok[0], &v)) {
        c->nvb_state = 0; /* the matrix ends */
        return 0;
    }
    nvb_row(c, tok, nt);
    dp_kind(c, DR_K_NVBW);
    return 1;
}

/* At the end of the file: nvbandwidth's P2P copies, each beside the host
 * path of its two GPUs (the slowest of their copies to and from host memory:
 * what copies staged through host memory would be limited by). */
void dp_nvb_emit(dp_ctx *c)
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
            dp_pobs_add(c, DR_OBS_BW, DR_NS_CUDA, a, b, DR_BW_UNI, on, host, "nvbw", &e);
        }
    dp_kind(c, DR_K_NVBW);
}
