/* linklimits.c - PCIe / NVLink theoretical limits (pure C). */
#include "linklimits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double pv_pcie_gts(int gen)
{
    switch (gen) {
    case 1: return 2.5;
    case 2: return 5.0;
    case 3: return 8.0;
    case 4: return 16.0;
    case 5: return 32.0;
    case 6: return 64.0;
    default: return 0.0;
    }
}

double pv_pcie_gbps(int gen, int width)
{
    double gts = pv_pcie_gts(gen);
    if (gts <= 0.0 || width <= 0 || width > 32)
        return 0.0;
    double enc = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
    return gts * (double)width * enc / 8.0;
}

int pv_pcie_gen_from_speed(const char *s)
{
    if (!s)
        return 0;
    while (*s == ' ' || *s == '\t')
        s++;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s)
        return 0;
    while (*end == ' ')
        end++;
    if (strncmp(end, "GT/s", 4) != 0)
        return 0;
    if (v > 2.0 && v < 3.0) return 1;
    if (v > 4.5 && v < 5.5) return 2;
    if (v > 7.5 && v < 8.5) return 3;
    if (v > 15.5 && v < 16.5) return 4;
    if (v > 31.5 && v < 32.5) return 5;
    if (v > 63.5 && v < 64.5) return 6;
    return 0;
}

double pv_nvlink_per_link_gbps(int major, int minor, int *gen)
{
    int g = 0;
    double bw = 0.0;
    if (major == 6 && minor == 0) { g = 1; bw = 20.0; }        /* P100 */
    else if (major == 7 && minor <= 2) { g = 2; bw = 25.0; }   /* V100 */
    else if (major == 7 && minor == 5) { g = 2; bw = 25.0; }   /* Turing bridge */
    else if (major == 8 && minor == 0) { g = 3; bw = 25.0; }   /* A100 */
    else if (major == 8 && minor == 6) { g = 3; bw = 14.0625; }/* GA102 bridge (RTX 3090, A40) */
    else if (major == 9 && minor == 0) { g = 4; bw = 25.0; }   /* H100/H200 */
    else if (major == 10) { g = 5; bw = 50.0; }                /* B200 */
    if (gen)
        *gen = g;
    return bw;
}

int pv_nvml_nvlink_version(int raw, char *buf, size_t len)
{
    static const char *names[] = {"?", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0"};
    if (raw < 1 || raw > 7) {
        snprintf(buf, len, "?");
        return 0;
    }
    snprintf(buf, len, "%s", names[raw]);
    return raw;
}

static void gen_width_of(const pv_gpu *g, int *gen, int *width)
{
    *gen = g->gen_max > 0 ? g->gen_max : g->gen_cur;
    *width = g->width_max > 0 ? g->width_max : g->width_cur;
}

void pv_link_pcie(pv_link *l, const pv_gpu *a, const pv_gpu *b)
{
    memset(l, 0, sizeof(*l));
    int ga, wa, gb, wb;
    gen_width_of(a, &ga, &wa);
    gen_width_of(b, &gb, &wb);
    if (ga <= 0 || wa <= 0 || gb <= 0 || wb <= 0) {
        l->type = PV_LINK_UNKNOWN;
        snprintf(l->desc, sizeof l->desc, "PCIe link speed/width unknown: no limit");
        return;
    }
    int g = ga < gb ? ga : gb;
    int w = wa < wb ? wa : wb;
    l->type = PV_LINK_PCIE;
    l->gen = g;
    l->width = w;
    l->gbps = pv_pcie_gbps(g, w);
    snprintf(l->desc, sizeof l->desc,
             "PCIe gen%d x%d = %.1f GB/s per direction (%.1f GT/s x%d, %s; slower of the two GPU links)",
             g, w, l->gbps, pv_pcie_gts(g), w, g <= 2 ? "8b/10b" : "128b/130b");
}

void pv_link_nvlink(pv_link *l, const pv_gpu *a, const pv_gpu *b, int nlinks, const char *src)
{
    memset(l, 0, sizeof(*l));
    int gen = 0, genb = 0;
    double pa = pv_nvlink_per_link_gbps(a->cc_major, a->cc_minor, &gen);
    double pb = pv_nvlink_per_link_gbps(b->cc_major, b->cc_minor, &genb);
    double per = pa < pb ? pa : pb;
    if (gen > genb)
        gen = genb;
    l->type = PV_LINK_NVLINK;
    l->nlinks = nlinks;
    l->per_link = per;
    l->gbps = per * (double)nlinks;
    if (per > 0.0)
        snprintf(l->desc, sizeof l->desc,
                 "NVLink%d x%d links x %.4g GB/s = %.1f GB/s per direction (links from %s)",
                 gen, nlinks, per, l->gbps, src ? src : "?");
    else
        snprintf(l->desc, sizeof l->desc,
                 "NVLink x%d links, per-link rate unknown for sm_%d%d: no limit (links from %s)",
                 nlinks, a->cc_major, a->cc_minor, src ? src : "?");
}
