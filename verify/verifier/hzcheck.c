/* hzcheck.c - the hazard tests' pure logic (see hzcheck.h). */
#include "hzcheck.h"

#include <stdio.h>
#include <string.h>

#include "options.h"

const char *pv_hz_name(int test)
{
    switch (test) {
    case PV_HZ_COMPRESSIBLE: return "compressible";
    case PV_HZ_ATOMICS: return "atomics";
    case PV_HZ_ORDERING: return "ordering";
    case PV_HZ_STALE: return "stale";
    case PV_HZ_MANAGED: return "managed";
    default: return "?";
    }
}

const char *pv_hz_status_name(int status)
{
    switch (status) {
    case PV_HZS_PASS: return "pass";
    case PV_HZS_FAIL: return "fail";
    case PV_HZS_REFUSED: return "refused";
    case PV_HZS_NA: return "not_applicable";
    case PV_HZS_SKIPPED: return "skipped";
    case PV_HZS_ERROR: return "error";
    default: return "not_run";
    }
}

int pv_self_test_hazard(int mode)
{
    switch (mode) {
    case PV_ST_COMP_CORRUPT: return PV_HZ_COMPRESSIBLE;
    case PV_ST_LOST_UPDATE: return PV_HZ_ATOMICS;
    case PV_ST_FLAG_BEFORE_DATA: return PV_HZ_ORDERING;
    case PV_ST_STALE: return PV_HZ_STALE;
    case PV_ST_MANAGED_CORRUPT: return PV_HZ_MANAGED;
    default: return -1;
    }
}

const char *pv_hz_inject_desc(int mode)
{
    switch (mode) {
    case PV_ST_COMP_CORRUPT: return "one byte of the compressible allocation flipped after the peer's write, before the checks";
    case PV_ST_LOST_UPDATE: return "one of the peer's updates taken off a counter before the check";
    case PV_ST_FLAG_BEFORE_DATA: return "the writer set the flag before it wrote the data";
    case PV_ST_STALE: return "allocation B filled with A's data";
    case PV_ST_MANAGED_CORRUPT: return "one byte flipped after the write, before the check";
    default: return "nothing";
    }
}

int pv_hz_gate(int test, const pv_hz_gate_in *g, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = '\0';
    if (test == PV_HZ_MANAGED && !g->managed_opt_in) {
        snprintf(why, whylen, "opt-in: --managed");
        return PV_HZS_SKIPPED;
    }
    if (g->can_access != 1) {
        snprintf(why, whylen, "GPU%d cannot access GPU%d (no peer access)", g->peer, g->owner);
        return PV_HZS_SKIPPED;
    }
    switch (test) {
    case PV_HZ_COMPRESSIBLE:
    case PV_HZ_STALE:
        if (!g->drv_ok) {
            snprintf(why, whylen, "the CUDA driver API's cuMem* entry points are not available");
            return PV_HZS_NA;
        }
        if (g->vmm_supported != 1) {
            snprintf(why, whylen, "GPU%d has no virtual memory management (cuMemCreate/cuMemMap)", g->owner);
            return PV_HZS_NA;
        }
        if (test == PV_HZ_COMPRESSIBLE && g->comp_supported != 1) {
            snprintf(why, whylen, "GPU%d lacks generic compression (CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED = %d)",
                     g->owner, g->comp_supported);
            return PV_HZS_NA;
        }
        return PV_HZS_NOT_RUN;
    case PV_HZ_ATOMICS:
        if (g->native_atomics != 1) {
            snprintf(why, whylen, "the driver reports no native peer atomics");
            return PV_HZS_NA;
        }
        return PV_HZS_NOT_RUN;
    case PV_HZ_MANAGED: {
        if (g->concurrent_managed != 1) {
            snprintf(why, whylen, "GPU%d and GPU%d do not both have concurrent managed access "
                                  "(cudaDevAttrConcurrentManagedAccess)", g->peer, g->owner);
            return PV_HZS_NA;
        }
        if (g->free_min < g->need) {
            char fr[32], nd[32];
            pv_fmt_bytes(g->free_min, fr, sizeof fr);
            pv_fmt_bytes(g->need, nd, sizeof nd);
            snprintf(why, whylen, "too little free GPU memory: GPU%d has %s free, the test needs %s on each GPU",
                     g->free_gpu, fr, nd);
            return PV_HZS_SKIPPED;
        }
        return PV_HZS_NOT_RUN;
    }
    default:
        return PV_HZS_NOT_RUN;
    }
}

unsigned long long pv_atomic_per_counter(unsigned long long threads, int iters, int ncounters)
{
    if (ncounters <= 0 || iters <= 0 || iters % ncounters)
        return 0;
    return threads * (unsigned long long)(iters / ncounters);
}

unsigned long long pv_atomic_check(const unsigned long long *counts, int ncounters, unsigned long long per,
                                   pv_hz_result *t)
{
    t->nbad = 0;
    t->nalt = 0;
    t->first_bad = -1;
    t->checked = 2ull * per * (unsigned long long)ncounters;
    unsigned long long want = (per & 0xffffffffull) | (per << 32);
    for (int c = 0; c < ncounters; c++) {
        unsigned long long peer = counts[c] & 0xffffffffull, owner = counts[c] >> 32;
        if (counts[c] == want)
            continue;
        if (t->nbad == 0) {
            t->first_bad = c;
            t->expected = want;
            t->found = counts[c];
        }
        t->nbad++;
        t->nalt += (peer < per ? per - peer : 0) + (owner < per ? per - owner : 0);
    }
    t->status = t->nbad ? PV_HZS_FAIL : PV_HZS_PASS;
    return t->nbad;
}

static void describe_fail(const pv_hz_result *t, char *buf, size_t len)
{
    switch (t->test) {
    case PV_HZ_ATOMICS: {
        unsigned long long per = t->expected & 0xffffffffull;
        snprintf(buf, len,
                 "FAIL: %llu update%s lost: counter %lld holds %llu of GPU%d's (peer) and %llu of GPU%d's (owner) "
                 "%llu updates each (%llu wrong counter%s)",
                 t->nalt, t->nalt == 1 ? "" : "s", t->first_bad, t->found & 0xffffffffull, t->src, t->found >> 32,
                 t->dst, per, t->nbad, t->nbad == 1 ? "" : "s");
        return;
    }
    case PV_HZ_ORDERING:
        snprintf(buf, len,
                 "FAIL: round %d: the reader on GPU%d saw the flag before the data: word %lld expected 0x%08llx "
                 "found 0x%08llx (%llu stale word%s)",
                 t->round, t->dst, t->first_bad, t->expected, t->found, t->nbad, t->nbad == 1 ? "" : "s");
        return;
    case PV_HZ_STALE:
        snprintf(buf, len,
                 "FAIL: round %d: after the remap, %s saw %s: 0x%02llx at offset 0x%llx, expected 0x%02llx "
                 "(%llu bad byte%s, %llu of them A's)",
                 t->round, t->what[0] ? t->what : "the peer",
                 t->nalt == t->nbad ? "A's data (the old allocation)" : "wrong data", t->found,
                 (unsigned long long)t->first_bad, t->expected, t->nbad, t->nbad == 1 ? "" : "s", t->nalt);
        return;
    default:
        if (t->guard_bad && !t->nbad) {
            snprintf(buf, len, "FAIL: the host guard changed: %llu byte%s, the first at offset 0x%llx (a write "
                               "landed in host RAM)",
                     t->guard_bad, t->guard_bad == 1 ? "" : "s", (unsigned long long)t->guard_first);
            return;
        }
        snprintf(buf, len, "FAIL: %s saw 0x%02llx at offset 0x%llx, expected 0x%02llx (%llu bad byte%s%s)",
                 t->what[0] ? t->what : "a GPU reading", t->found, (unsigned long long)t->first_bad, t->expected,
                 t->nbad, t->nbad == 1 ? "" : "s", t->guard_bad ? "; the host guard changed too" : "");
    }
}

void pv_hz_describe(const pv_hz_result *t, char *buf, size_t len)
{
    char by[32], tail[48];
    pv_fmt_bytes(t->checked, by, sizeof by);
    snprintf(tail, sizeof tail, " (%.2f s)", t->seconds);
    switch (t->status) {
    case PV_HZS_PASS:
        switch (t->test) {
        case PV_HZ_COMPRESSIBLE:
            snprintf(buf, len, "PASS: %s checked (owner wrote, peer read; peer wrote, both read), host guard intact%s",
                     by, tail);
            break;
        case PV_HZ_ATOMICS:
            snprintf(buf, len, "PASS: %llu updates from both GPUs at once, none lost%s", t->checked, tail);
            break;
        case PV_HZ_ORDERING:
            snprintf(buf, len, "PASS: %d rounds, %s checked after the flag, never stale%s", t->rounds, by, tail);
            break;
        case PV_HZ_STALE:
            snprintf(buf, len, "PASS: %d remap%s at the same VA, the peer read B's data every time (%s checked)%s",
                     t->rounds, t->rounds == 1 ? "" : "s", by, tail);
            break;
        default:
            snprintf(buf, len, "PASS: %s checked on both GPUs, after each prefetch%s", by, tail);
        }
        return;
    case PV_HZS_FAIL: {
        char f[400];
        describe_fail(t, f, sizeof f);
        snprintf(buf, len, "%s%s", f, t->ran ? tail : " (checker only)");
        return;
    }
    case PV_HZS_REFUSED:
        snprintf(buf, len, "refused: %s (CUDA refused it: a safe outcome, no failure)", t->note);
        return;
    case PV_HZS_NA:
        snprintf(buf, len, "not applicable (%s)", t->note);
        return;
    case PV_HZS_SKIPPED:
        snprintf(buf, len, "skipped (%s)", t->note);
        return;
    case PV_HZS_ERROR:
        snprintf(buf, len, "ERROR: %s", t->note);
        return;
    default:
        snprintf(buf, len, "not run%s%s%s", t->note[0] ? " (" : "", t->note, t->note[0] ? ")" : "");
    }
}
