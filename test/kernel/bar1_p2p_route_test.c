/*
 * Host test of bar1P2PRoute() (bar1_p2p_window.h of p2p-0014): the route of
 * a GPU pair (NVLink, static BAR1, BAR1 window, none) and its hazard gates.
 *
 *   bar1_p2p_route_test           checks every claim below over every pair
 *                                 of GPU kinds, keys set and unset, NVLink or
 *                                 not; prints "N checks, 0 failed"
 *   bar1_p2p_route_test --table   the truth table of pairs of two GPUs of one
 *                                 kind (test/fixtures/route-table.txt)
 *   bar1_p2p_route_test --docs    the table of docs/bar1-windows.md (keys
 *                                 set, no NVLink, Ada, Hopper, Blackwell)
 *
 * Each claim is one that a patch header of the series makes; the comment at
 * each check names the patch.
 */
#include <stdio.h>
#include <string.h>

#include "gpu/bus/bar1_p2p_window.h"

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

static unsigned checks, failures;

/* Failures per claim (source line), for the summary at the end. */
#define MAX_LINES 1024
static unsigned lineFailures[MAX_LINES];
static const char *lineClaim[MAX_LINES];

#define CHECK(cond, row)                                                       \
    do {                                                                       \
        checks++;                                                              \
        if (!(cond)) {                                                         \
            failures++;                                                        \
            if (__LINE__ < MAX_LINES) {                                        \
                lineFailures[__LINE__]++;                                      \
                lineClaim[__LINE__] = #cond;                                   \
            }                                                                  \
            if (failures <= 10)                                                \
                printf("FAIL line %d: %s: %s\n", __LINE__, #cond, row);       \
        }                                                                      \
    } while (0)

struct arch { NvU32 id; const char *name; };

static const struct arch archs[] = {
    { 0x0140U, "Volta" },
    { BAR1_P2P_ARCH_TURING, "Turing" },
    { BAR1_P2P_ARCH_AMPERE, "Ampere" },
    { BAR1_P2P_ARCH_ADA, "Ada" },
    { BAR1_P2P_ARCH_HOPPER, "Hopper" },
    { BAR1_P2P_ARCH_BLACKWELL_GB2XX, "Blackwell" },
};

/* BAR1 against VRAM: the GPU kinds that matter. */
struct bar { const char *name; NvU64 bar1; NvU64 fb; NvBool force64k; };

static const struct bar bars[] = {
    { "BAR1>VRAM", 32 * GIB, 24 * GIB, NV_FALSE },   /* RTX 4090 with Resizable BAR */
    { "BAR1=VRAM", 32 * GIB, 32 * GIB, NV_FALSE },   /* RTX 5090, 16 GB 5060 Ti / 5070 Ti */
    { "BAR1<VRAM", 32 * GIB, 48 * GIB, NV_FALSE },   /* 48 GB RTX 4090 D */
    { "BAR1=256M", 256 * MIB, 24 * GIB, NV_TRUE },   /* no Resizable BAR: 64 KiB BAR1 pages */
};

#define N_ARCHS (sizeof(archs) / sizeof(archs[0]))
#define N_BARS  (sizeof(bars) / sizeof(bars[0]))

static const char *route_name(NvU32 r)
{
    switch (r) {
    case BAR1_P2P_ROUTE_NVLINK: return "nvlink";
    case BAR1_P2P_ROUTE_STATIC: return "static";
    case BAR1_P2P_ROUTE_WINDOW: return "window";
    case BAR1_P2P_ROUTE_NONE:   return "none";
    default:                    return "?";
    }
}

static const char *reason_name(NvU32 r)
{
    switch (r) {
    case BAR1_P2P_REASON_NONE:           return "-";
    case BAR1_P2P_REASON_NOT_SELECTED:   return "not-selected";
    case BAR1_P2P_REASON_MIXED:          return "mixed";
    case BAR1_P2P_REASON_ARCH:           return "arch";
    case BAR1_P2P_REASON_BAR1_COVERS_FB: return "bar1-covers-vram";
    case BAR1_P2P_REASON_64K_PAGES:      return "64k-pages";
    default:                             return "?";
    }
}

static const char *yesno(NvBool b) { return b ? "yes" : "no"; }

static BAR1_P2P_GPU gpu_of(unsigned a, unsigned b, NvBool st)
{
    BAR1_P2P_GPU g;
    memset(&g, 0, sizeof(g));
    g.arch = archs[a].id;
    g.staticBar1 = st;
    g.bar1Size = bars[b].bar1;
    g.fbSize = bars[b].fb;
    g.bar1Force64K = bars[b].force64k;
    return g;
}

static int is_pre_hopper(NvU32 arch)
{
    return arch == BAR1_P2P_ARCH_TURING || arch == BAR1_P2P_ARCH_AMPERE ||
           arch == BAR1_P2P_ARCH_ADA;
}

static int is_blackwell(NvU32 arch)
{
    return arch == BAR1_P2P_ARCH_BLACKWELL_GB1XX || arch == BAR1_P2P_ARCH_BLACKWELL_GB2XX;
}

/* Every claim, for one pair. */
static void check_pair(const BAR1_P2P_GPU *g0, const BAR1_P2P_GPU *g1, NvBool keys,
                       NvBool nvlink, const char *row)
{
    BAR1_P2P_DECISION d, e;
    int bar1Route, preHopper;

    memset(&d, 0xa5, sizeof(d));
    bar1P2PRoute(g0, g1, keys, nvlink, &d);
    bar1Route = (d.route == BAR1_P2P_ROUTE_STATIC) || (d.route == BAR1_P2P_ROUTE_WINDOW);
    preHopper = is_pre_hopper(g0->arch) || is_pre_hopper(g1->arch);

    /* one decision for a pair, whichever GPU asks (p2p_caps.c asks both ways) */
    bar1P2PRoute(g1, g0, keys, nvlink, &e);
    CHECK(memcmp(&d, &e, sizeof(d)) == 0, row);

    CHECK(d.route <= BAR1_P2P_ROUTE_NONE, row);
    /* a refusal says why, a route has no reason */
    CHECK((d.route == BAR1_P2P_ROUTE_NONE) == (d.reason != BAR1_P2P_REASON_NONE), row);

    /* NVLink pairs keep upstream's behaviour (the series' NVLink claims) */
    if (nvlink) {
        CHECK(d.route == BAR1_P2P_ROUTE_NVLINK, row);
        CHECK(d.managedPeer && d.atomics && !d.peerKindPlain && !d.peerUncached, row);
        return;
    }
    CHECK(d.route != BAR1_P2P_ROUTE_NVLINK, row);

    /* upstream's condition: both GPUs with static BAR1 are BAR1 P2P peers */
    CHECK((d.route == BAR1_P2P_ROUTE_STATIC) == (g0->staticBar1 && g1->staticBar1), row);

    /* p2p-0007/p2p-0014: a pair of one GPU with static BAR1 and one without
     * is refused */
    if (g0->staticBar1 != g1->staticBar1)
        CHECK(d.route == BAR1_P2P_ROUTE_NONE && d.reason == BAR1_P2P_REASON_MIXED, row);

    /* series: inert unless the keys select BAR1 P2P: without them no window,
     * and nothing opens that upstream keeps shut */
    if (!keys)
        CHECK(d.route != BAR1_P2P_ROUTE_WINDOW, row);

    /* p2p-0014: windows only where BAR1 is smaller than VRAM, on both GPUs,
     * neither with static BAR1, with 2 MB BAR1 pages */
    if (d.route == BAR1_P2P_ROUTE_WINDOW) {
        CHECK(keys, row);
        CHECK(!g0->staticBar1 && !g1->staticBar1, row);
        CHECK(g0->bar1Size < g0->fbSize && g1->bar1Size < g1->fbSize, row);
        CHECK(!g0->bar1Force64K && !g1->bar1Force64K, row);
        CHECK(g0->bar1Size > 256 * MIB && g1->bar1Size > 256 * MIB, row);
        /* issue 49, defect 1: only GPUs whose managed memory p2p-0010 keeps
         * off BAR1 (Turing, Ampere, Ada): Hopper and Blackwell would get the
         * empty DMA window (NV_U64_MAX) as UVM's peer base */
        CHECK(is_pre_hopper(g0->arch) && is_pre_hopper(g1->arch), row);
        CHECK(!d.managedPeer, row);
    }

    /* a GPU without static BAR1 whose BAR1 covers VRAM: static BAR1 is its
     * route (install --force-static-bar1), never a window */
    if (keys && !g0->staticBar1 && !g1->staticBar1 &&
        is_pre_hopper(g0->arch) && is_pre_hopper(g1->arch) &&
        (g0->bar1Size >= g0->fbSize || g1->bar1Size >= g1->fbSize))
        CHECK(d.route == BAR1_P2P_ROUTE_NONE && d.reason == BAR1_P2P_REASON_BAR1_COVERS_FB, row);

    /* Hopper, Blackwell (and older than Turing) without static BAR1 with the
     * keys: refused for their architecture */
    if (keys && !g0->staticBar1 && !g1->staticBar1 &&
        (!is_pre_hopper(g0->arch) || !is_pre_hopper(g1->arch)))
        CHECK(d.route == BAR1_P2P_ROUTE_NONE && d.reason == BAR1_P2P_REASON_ARCH, row);

    /* p2p-0010: managed memory not over BAR1 where a GPU is pre-Hopper;
     * Hopper and Blackwell BAR1 pairs keep upstream's */
    if (bar1Route)
        CHECK(d.managedPeer == !preHopper, row);

    /* p2p-0009 and p2p-0011: GMMU v2 (pre-Hopper) BAR1 peers take the
     * uncompressed kind and volatile PTEs; others unchanged */
    if (bar1Route) {
        CHECK(d.peerKindPlain == preHopper, row);
        CHECK(d.peerUncached == preHopper, row);
    }

    /* p2p-0012: peer atomics on BAR1 only between Blackwell GPUs */
    if (bar1Route)
        CHECK(d.atomics == (is_blackwell(g0->arch) && is_blackwell(g1->arch)), row);

    /* the log text of a refusal names it */
    if (d.route == BAR1_P2P_ROUTE_NONE)
        CHECK(strcmp(bar1P2PReasonText(d.reason), "no reason") != 0, row);
}

static void print_row(unsigned a, unsigned b, NvBool st, NvBool keys, NvBool nvlink)
{
    BAR1_P2P_GPU g = gpu_of(a, b, st);
    BAR1_P2P_DECISION d;

    bar1P2PRoute(&g, &g, keys, nvlink, &d);
    printf("%-9s %-9s %-6s %-4s %-6s | %-6s %-16s %-7s %-9s %-8s %s\n", archs[a].name,
           bars[b].name, st ? "static" : "none", yesno(keys), yesno(nvlink), route_name(d.route),
           reason_name(d.reason), yesno(d.managedPeer), yesno(d.peerKindPlain), yesno(d.peerUncached),
           yesno(d.atomics));
}

static void table(void)
{
    unsigned a, b, s, k, n;

    printf("%-9s %-9s %-6s %-4s %-6s | %-6s %-16s %-7s %-9s %-8s %s\n", "arch", "bar1",
           "static", "keys", "nvlink", "route", "reason", "managed", "kindplain", "uncached",
           "atomics");
    for (a = 0; a < N_ARCHS; a++)
        for (b = 0; b < N_BARS; b++)
            for (s = 0; s < 2; s++)
                for (k = 0; k < 2; k++)
                    for (n = 0; n < 2; n++)
                        print_row(a, b, s == 0, k == 1, n == 1);
}

static void docs(void)
{
    static const unsigned shown[] = { 3, 4, 5 };   /* Ada, Hopper, Blackwell */
    unsigned i, b, s;

    printf("| GPUs of the pair | BAR1 | static BAR1 | route | managed memory peer to peer | atomics |\n");
    printf("|---|---|---|---|---|---|\n");
    for (i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
        for (b = 0; b < N_BARS; b++)
            for (s = 0; s < 2; s++) {
                BAR1_P2P_GPU g = gpu_of(shown[i], b, s == 0);
                BAR1_P2P_DECISION d;
                bar1P2PRoute(&g, &g, NV_TRUE, NV_FALSE, &d);
                printf("| %s | %s | %s | %s%s%s%s | %s | %s |\n", archs[shown[i]].name,
                       bars[b].name, yesno(s == 0), route_name(d.route),
                       d.route == BAR1_P2P_ROUTE_NONE ? " (" : "",
                       d.route == BAR1_P2P_ROUTE_NONE ? reason_name(d.reason) : "",
                       d.route == BAR1_P2P_ROUTE_NONE ? ")" : "",
                       d.route == BAR1_P2P_ROUTE_NONE ? "-" : yesno(d.managedPeer),
                       d.route == BAR1_P2P_ROUTE_NONE ? "-" : yesno(d.atomics));
            }
}

int main(int argc, char **argv)
{
    unsigned a0, b0, s0, a1, b1, s1, k, n;
    char row[160];

    if (argc > 1 && strcmp(argv[1], "--table") == 0) {
        table();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--docs") == 0) {
        docs();
        return 0;
    }

    for (a0 = 0; a0 < N_ARCHS; a0++)
     for (b0 = 0; b0 < N_BARS; b0++)
      for (s0 = 0; s0 < 2; s0++)
       for (a1 = 0; a1 < N_ARCHS; a1++)
        for (b1 = 0; b1 < N_BARS; b1++)
         for (s1 = 0; s1 < 2; s1++)
          for (k = 0; k < 2; k++)
           for (n = 0; n < 2; n++) {
               BAR1_P2P_GPU g0 = gpu_of(a0, b0, s0 == 0);
               BAR1_P2P_GPU g1 = gpu_of(a1, b1, s1 == 0);
               snprintf(row, sizeof(row), "%s %s %s + %s %s %s, keys %s, nvlink %s",
                        archs[a0].name, bars[b0].name, s0 == 0 ? "static" : "no-static",
                        archs[a1].name, bars[b1].name, s1 == 0 ? "static" : "no-static",
                        yesno(k == 1), yesno(n == 1));
               check_pair(&g0, &g1, k == 1, n == 1, row);
           }

    for (k = 0; k < MAX_LINES; k++)
        if (lineFailures[k] != 0)
            printf("claim of line %u broken for %u pairs: %s\n", k, lineFailures[k], lineClaim[k]);
    printf("%u checks, %u failed\n", checks, failures);
    return failures ? 1 : 0;
}
