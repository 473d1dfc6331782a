/* hazards.c - the hazard tests: for every selected ordered pair (peer i,
 * owner j) decide which tests can run (hzcheck.c's gate), run them, time
 * them; the shared check and error helpers. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "hazards.h"
#include "pattern.h"
#include "report.h"

int pv_hz_fail_cuda(pv_hz_ctx *cx, pv_hz_result *t, cudaError_t e, const char *what, const char *file, int line)
{
    if (t) {
        t->status = PV_HZS_ERROR;
        snprintf(t->note, sizeof t->note, "%.120s: %s", what, cudaGetErrorName(e));
    }
    return pv_cuda_fail(cx->r, e, what, file, line);
}

uint64_t pv_hz_seed(const pv_hz_ctx *cx, int test, int i, int j, int round, int which)
{
    return pv_test_seed(cx->seed, i, j, 16 + test, which, round, 0);
}

int pv_hz_check(pv_hz_ctx *cx, pv_hz_result *t, int g, const uint8_t *base, size_t len, uint64_t seed,
                unsigned shift, uint64_t alt, int use_alt, const char *what, int round, unsigned long long *nbad)
{
    pv_hz_dev h;
    HZ_CK(cx, t, cudaSetDevice(g));
    HZ_CK(cx, t, pv_k_hz_reset(cx->res[g], cx->s[g]));
    HZ_CK(cx, t, pv_k_hz_check(base, len, seed, shift, alt, use_alt, cx->res[g], cx->s[g]));
    HZ_CK(cx, t, cudaMemcpyAsync(&h, cx->res[g], sizeof h, cudaMemcpyDeviceToHost, cx->s[g]));
    HZ_CK(cx, t, cudaStreamSynchronize(cx->s[g]));
    t->checked += len;
    if (nbad)
        *nbad = h.nbad;
    if (h.nbad && t->nbad == 0) {
        t->status = PV_HZS_FAIL;
        t->nbad = h.nbad;
        t->nalt = h.nalt;
        t->first_bad = (long long)(h.first_key >> 8);
        t->found = h.first_key & 0xffu;
        t->expected = pv_hz_byte(seed, (uint64_t)t->first_bad, shift);
        t->round = round;
        snprintf(t->what, sizeof t->what, "%s", what);
    }
    return 0;
}

/* What the gate needs to know about test `test` on the pair (peer i, owner j). */
static int gate_input(pv_hz_ctx *cx, int test, int i, int j, const int *vmm, const int *comp, pv_hz_gate_in *g)
{
    pv_results *r = cx->r;
    memset(g, 0, sizeof(*g));
    g->peer = i;
    g->owner = j;
    g->can_access = r->can_access[i][j];
    g->native_atomics = r->native_atomics[i][j];
    g->drv_ok = cx->drv.ok;
    g->vmm_supported = vmm[j];
    g->comp_supported = comp[j];
    g->managed_opt_in = cx->o->managed;
    g->concurrent_managed = -1;
    if (test != PV_HZ_MANAGED || !cx->o->managed)
        return 0;
    int ci = 0, cj = 0;
    PV_CK(r, cudaDeviceGetAttribute(&ci, cudaDevAttrConcurrentManagedAccess, i));
    PV_CK(r, cudaDeviceGetAttribute(&cj, cudaDevAttrConcurrentManagedAccess, j));
    g->concurrent_managed = ci == 1 && cj == 1;
    size_t fi = 0, fj = 0, total = 0;
    PV_CK(r, cudaSetDevice(i));
    PV_CK(r, cudaMemGetInfo(&fi, &total));
    PV_CK(r, cudaSetDevice(j));
    PV_CK(r, cudaMemGetInfo(&fj, &total));
    g->free_min = fi < fj ? fi : fj;
    g->free_gpu = fi < fj ? i : j;
    g->need = pv_hz_managed_need();
    return 0;
}

static int run_test(pv_hz_ctx *cx, int test, int i, int j, pv_hz_result *t)
{
    switch (test) {
    case PV_HZ_COMPRESSIBLE: return pv_hz_compressible(cx, i, j, t);
    case PV_HZ_ATOMICS: return pv_hz_atomics(cx, i, j, t);
    case PV_HZ_ORDERING: return pv_hz_ordering(cx, i, j, t);
    case PV_HZ_STALE: return pv_hz_stale(cx, i, j, t);
    default: return pv_hz_managed(cx, i, j, t);
    }
}

int pv_run_hazards(pv_results *r, const pv_options *o)
{
    pv_hz_ctx cx;
    memset(&cx, 0, sizeof cx);
    cx.r = r;
    cx.o = o;
    cx.seed = pv_mix64(o->seed ^ 0x48415a4152445321ull); /* "HAZARDS!" */
    pv_cudrv_load(&cx.drv);
    if (!cx.drv.ok)
        pv_log("hazards: %s", cx.drv.err);
    r->hazards_ran = 1;

    int ids[PV_MAX_GPUS], vmm[PV_MAX_GPUS], comp[PV_MAX_GPUS];
    int n = pv_pair_gpus(r, ids);
    for (int g = 0; g < PV_MAX_GPUS; g++)
        vmm[g] = comp[g] = -1;
    for (int a = 0; a < n; a++) {
        int g = ids[a];
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaStreamCreateWithFlags(&cx.s[g], cudaStreamNonBlocking));
        PV_CK(r, cudaMalloc((void **)&cx.res[g], sizeof(pv_hz_dev)));
        if (cx.drv.ok) {
            vmm[g] = pv_cudrv_attr(&cx.drv, g, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
            comp[g] = pv_cudrv_attr(&cx.drv, g, CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED);
        }
        pv_log("hazards: GPU%d virtual memory management %d, generic compression %d", g, vmm[g], comp[g]);
    }
    PV_CK(r, cudaHostAlloc((void **)&cx.guard, PV_HZ_GUARD_BYTES, cudaHostAllocPortable));
    int *words = NULL;
    PV_CK(r, cudaHostAlloc((void **)&words, 2 * sizeof(int), cudaHostAllocPortable | cudaHostAllocMapped));
    cx.flag = words;
    cx.ack = words + 1;
    PV_CK(r, cudaHostGetDevicePointer((void **)&cx.flag_dev, words, 0));
    cx.ack_dev = cx.flag_dev + 1;

    int hz_self = pv_self_test_hazard(o->self_test);
    for (int k = 0; k < r->npairs; k++) {
        int i = r->pair_src[k], j = r->pair_dst[k];
        for (int test = 0; test < PV_HZ_COUNT; test++) {
            pv_hz_result *t = &r->hz[k][test];
            memset(t, 0, sizeof(*t));
            t->src = i;
            t->dst = j;
            t->test = test;
            t->first_bad = t->guard_first = -1;
            pv_hz_gate_in g;
            if (gate_input(&cx, test, i, j, vmm, comp, &g) != 0)
                return -1;
            double t0 = pv_now_s();
            int st = pv_hz_gate(test, &g, t->note, sizeof t->note);
            cx.inject = hz_self == test;
            int rc = 0;
            if (st != PV_HZS_NOT_RUN) {
                t->status = st;
                if (test == PV_HZ_ATOMICS && st == PV_HZS_NA && cx.inject)
                    pv_hz_atomics_checker_only(t);
            } else {
                t->note[0] = '\0';
                rc = run_test(&cx, test, i, j, t);
            }
            t->seconds = pv_now_s() - t0;
            char d[480];
            pv_hz_describe(t, d, sizeof d);
            pv_log("hazard %s GPU%d->GPU%d: %s", pv_hz_name(test), i, j, d);
            if (rc != 0)
                return -1;
        }
    }

    for (int a = 0; a < n; a++) {
        int g = ids[a];
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaFree(cx.res[g]));
        PV_CK(r, cudaStreamDestroy(cx.s[g]));
    }
    PV_CK(r, cudaFreeHost(cx.guard));
    PV_CK(r, cudaFreeHost(words));
    return 0;
}
