/* bar1room.c - the plain-C half of --resident and --peer-cap. */
#include <stdio.h>
#include <string.h>

#include "bar1room.h"
#include "options.h"

int pv_resident_target(unsigned long long bytes, int pct, unsigned long long free_bytes, int gpu,
                       unsigned long long *target, char *err, size_t errlen)
{
    unsigned long long t = pct > 0 ? free_bytes * (unsigned long long)pct / 100ull : bytes;
    t &= ~((2ull << 20) - 1);
    *target = t;
    if (free_bytes < PV_RESIDENT_KEEP || t > free_bytes - PV_RESIDENT_KEEP) {
        char fb[32], tb[32], mb[32];
        pv_fmt_bytes(free_bytes, fb, sizeof fb);
        pv_fmt_bytes(t, tb, sizeof tb);
        pv_fmt_bytes(free_bytes > PV_RESIDENT_KEEP ? free_bytes - PV_RESIDENT_KEEP : 0, mb, sizeof mb);
        if (err && errlen)
            snprintf(err, errlen,
                     "--resident: GPU%d has %s free, so it can hold at most %s (2 GiB stay free for the tests), "
                     "not %s",
                     gpu, fb, mb, tb);
        return -1;
    }
    return 0;
}

unsigned long long pv_peer_cap_limit(unsigned long long free_bytes)
{
    return free_bytes > PV_RESIDENT_KEEP ? free_bytes - PV_RESIDENT_KEEP : 0;
}

int pv_peer_cap_status(int reached_limit, int recovered, int cuda_error)
{
    if (cuda_error)
        return PV_CAP_ERROR;
    if (!recovered)
        return PV_CAP_FAIL;
    return reached_limit ? PV_CAP_NO_CAP : PV_CAP_CAPPED;
}

const char *pv_peer_cap_status_name(int status)
{
    switch (status) {
    case PV_CAP_NO_CAP: return "no-cap";
    case PV_CAP_CAPPED: return "capped";
    case PV_CAP_FAIL: return "fail";
    case PV_CAP_ERROR: return "error";
    default: return "not-run";
    }
}

void pv_peer_cap_describe(const pv_peer_cap *c, long long bar1, char *buf, size_t len)
{
    char peers[64] = "", mapped[32], lim[32], b1[48] = "";
    for (int k = 0; k < c->npeers; k++)
        snprintf(peers + strlen(peers), sizeof peers - strlen(peers), "%s%d", k ? "," : "", c->peers[k]);
    pv_fmt_bytes(c->mapped, mapped, sizeof mapped);
    pv_fmt_bytes(c->limit, lim, sizeof lim);
    if (bar1 > 0) {
        char b[32];
        pv_fmt_bytes((unsigned long long)bar1, b, sizeof b);
        snprintf(b1, sizeof b1, " (BAR1 %s)", b);
    }
    switch (c->status) {
    case PV_CAP_NO_CAP:
        snprintf(buf, len, "GPU%d's memory mapped by GPU%s %s: %s, all it had free less 2 GiB%s: no cap below that; "
                 "freed and mapped again: data correct",
                 c->owner, c->npeers == 1 ? "" : "s", peers, mapped, b1);
        break;
    case PV_CAP_CAPPED:
        snprintf(buf, len, "GPU%d's memory mapped by GPU%s %s: %s of %s tried, then %s%s: capped; freed and mapped "
                 "again: data correct",
                 c->owner, c->npeers == 1 ? "" : "s", peers, mapped, lim, c->stopped_by, b1);
        break;
    case PV_CAP_FAIL:
        snprintf(buf, len, "GPU%d's memory mapped by GPU%s %s: %s, then %s%s; after freeing it: %s", c->owner,
                 c->npeers == 1 ? "" : "s", peers, mapped, c->stopped_by, b1, c->note);
        break;
    case PV_CAP_ERROR:
        snprintf(buf, len, "GPU%d: not measured: %s", c->owner, c->note);
        break;
    default:
        snprintf(buf, len, "GPU%d: not measured%s%s", c->owner, c->note[0] ? ": " : "", c->note);
    }
}
