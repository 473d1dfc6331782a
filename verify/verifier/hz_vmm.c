/* hz_vmm.c - the hazard tests on memory the driver API maps (cuMemCreate,
 * cuMemMap, cuMemSetAccess): compressible memory shared with the peer, and
 * stale data after a remap at the same virtual address. */
#define _GNU_SOURCE
#include <string.h>

#include "hazards.h"
#include "pattern.h"

#define COMP_BYTES (4ull << 20)
#define COMP_SHIFT 9 /* runs of 512 equal bytes: data that compresses */
#define STALE_BYTES (2ull << 20)
#define STALE_ROUNDS 4 /* two with B likely on A's pages, two with B on others */

static void vmm_prop(CUmemAllocationProp *p, int dev, int compressible)
{
    memset(p, 0, sizeof(*p));
    p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p->location.id = dev;
    if (compressible)
        p->allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
}

/* A driver API call failed: t gets status st and the call in its note. */
static void drv_fail(pv_hz_ctx *cx, pv_hz_result *t, int st, const char *what, CUresult e)
{
    char name[64];
    t->status = st;
    snprintf(t->note, sizeof t->note, "%s: %s", what, pv_cudrv_errname(&cx->drv, e, name, sizeof name));
}

/* Map h at va for the owner j and the peer i; 0, or 1 with t REFUSED. */
static int map_both(pv_hz_ctx *cx, pv_hz_result *t, CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h,
                    int i, int j)
{
    const pv_cudrv *d = &cx->drv;
    char what[96];
    CUresult e = d->MemMap(va, size, 0, h, 0);
    if (e != CUDA_SUCCESS) {
        drv_fail(cx, t, PV_HZS_REFUSED, "cuMemMap on the owner", e);
        return 1;
    }
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    int dev[2] = {j, i};
    for (int k = 0; k < 2; k++) {
        acc.location.id = dev[k];
        e = d->MemSetAccess(va, size, &acc, 1);
        if (e != CUDA_SUCCESS) {
            snprintf(what, sizeof what, "cuMemSetAccess for the %s GPU%d", k ? "peer" : "owner", dev[k]);
            drv_fail(cx, t, PV_HZS_REFUSED, what, e);
            d->MemUnmap(va, size);
            return 1;
        }
    }
    return 0;
}

static size_t round_up(size_t v, size_t g)
{
    return g ? (v + g - 1) / g * g : v;
}

int pv_hz_compressible(pv_hz_ctx *cx, int i, int j, pv_hz_result *t)
{
    const pv_cudrv *d = &cx->drv;
    CUmemAllocationProp prop, got;
    size_t gran = 0;
    vmm_prop(&prop, j, 1);
    HZ_CK(cx, t, cudaSetDevice(j));
    CUresult e = d->MemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (e != CUDA_SUCCESS) {
        drv_fail(cx, t, PV_HZS_NA, "cuMemGetAllocationGranularity (compressible)", e);
        return 0;
    }
    size_t size = round_up(COMP_BYTES, gran);
    CUmemGenericAllocationHandle h = 0;
    e = d->MemCreate(&h, size, &prop, 0);
    if (e != CUDA_SUCCESS) {
        drv_fail(cx, t, PV_HZS_NA, "cuMemCreate with CU_MEM_ALLOCATION_COMP_GENERIC", e);
        return 0;
    }
    memset(&got, 0, sizeof got);
    if (d->MemGetAllocationPropertiesFromHandle(&got, h) == CUDA_SUCCESS &&
        got.allocFlags.compressionType != CU_MEM_ALLOCATION_COMP_GENERIC) {
        t->status = PV_HZS_NA;
        snprintf(t->note, sizeof t->note, "the driver gave GPU%d no compressible memory (cuMemCreate returned an "
                                          "uncompressed allocation)", j);
        d->MemRelease(h);
        return 0;
    }
    CUdeviceptr va = 0;
    e = d->MemAddressReserve(&va, size, gran, 0, 0);
    if (e != CUDA_SUCCESS) {
        drv_fail(cx, t, PV_HZS_ERROR, "cuMemAddressReserve", e);
        d->MemRelease(h);
        return 0;
    }
    int rc = 0;
    if (map_both(cx, t, va, size, h, i, j))
        goto out_free;

    uint8_t *p = (uint8_t *)(uintptr_t)va;
    uint64_t s1 = pv_hz_seed(cx, PV_HZ_COMPRESSIBLE, i, j, 0, 0), s2 = pv_hz_seed(cx, PV_HZ_COMPRESSIBLE, i, j, 0, 1);
    uint64_t sg = pv_hz_seed(cx, PV_HZ_COMPRESSIBLE, i, j, 0, 2);
    pv_pattern_fill(cx->guard, PV_HZ_GUARD_BYTES, sg, 0);
    char what[48];
    t->ran = 1;
    t->rounds = 1;
#define CK_OUT(call)                                                                  \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            rc = pv_hz_fail_cuda(cx, t, e_, #call, __FILE__, __LINE__);               \
            goto out_unmap;                                                           \
        }                                                                             \
    } while (0)
    /* 1. the owner writes (compressed where the GPU compresses), the peer reads */
    CK_OUT(cudaSetDevice(j));
    CK_OUT(pv_k_hz_fill(p, size, s1, COMP_SHIFT, cx->s[j]));
    CK_OUT(cudaStreamSynchronize(cx->s[j]));
    snprintf(what, sizeof what, "GPU%d (peer) reading the owner's data", i);
    if (pv_hz_check(cx, t, i, p, size, s1, COMP_SHIFT, 0, 0, what, 1, NULL))
        goto out_rc;
    /* 2. the peer writes; both read */
    CK_OUT(cudaSetDevice(i));
    CK_OUT(pv_k_hz_fill(p, size, s2, COMP_SHIFT, cx->s[i]));
    CK_OUT(cudaStreamSynchronize(cx->s[i]));
    if (cx->inject) {
        CK_OUT(cudaSetDevice(j));
        CK_OUT(pv_k_flip(p + size / 2, 0x10, cx->s[j]));
        CK_OUT(cudaStreamSynchronize(cx->s[j]));
        t->injected = 1;
    }
    snprintf(what, sizeof what, "GPU%d (owner) reading the peer's data", j);
    if (pv_hz_check(cx, t, j, p, size, s2, COMP_SHIFT, 0, 0, what, 1, NULL))
        goto out_rc;
    snprintf(what, sizeof what, "GPU%d (peer) reading its own data", i);
    if (pv_hz_check(cx, t, i, p, size, s2, COMP_SHIFT, 0, 0, what, 1, NULL))
        goto out_rc;
#undef CK_OUT
    /* 3. nothing landed in host RAM (as far as the guard shows) */
    long long fb = -1;
    unsigned ge = 0, gf = 0;
    t->guard_bad = pv_pattern_check(cx->guard, PV_HZ_GUARD_BYTES, sg, 0, &fb, &ge, &gf);
    t->guard_first = fb;
    t->status = (t->nbad || t->guard_bad) ? PV_HZS_FAIL : PV_HZS_PASS;
    if (t->guard_bad && !t->nbad)
        snprintf(t->what, sizeof t->what, "host guard");
    goto out_unmap;
out_rc:
    rc = -1;
out_unmap:
    d->MemUnmap(va, size);
out_free:
    d->MemAddressFree(va, size);
    d->MemRelease(h);
    return rc;
}

int pv_hz_stale(pv_hz_ctx *cx, int i, int j, pv_hz_result *t)
{
    const pv_cudrv *d = &cx->drv;
    CUmemAllocationProp prop;
    size_t gran = 0;
    vmm_prop(&prop, j, 0);
    HZ_CK(cx, t, cudaSetDevice(j));
    CUresult e = d->MemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (e != CUDA_SUCCESS) {
        drv_fail(cx, t, PV_HZS_ERROR, "cuMemGetAllocationGranularity", e);
        return 0;
    }
    size_t size = round_up(STALE_BYTES, gran);
    CUdeviceptr va = 0;
    e = d->MemAddressReserve(&va, size, gran, 0, 0);
    if (e != CUDA_SUCCESS) {
        drv_fail(cx, t, PV_HZS_ERROR, "cuMemAddressReserve", e);
        return 0;
    }
    uint8_t *p = (uint8_t *)(uintptr_t)va;
    int rc = 0, mapped = 0;
    CUmemGenericAllocationHandle a = 0, b = 0;
    char what[48];
#define CK_OUT(call)                                                                  \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            rc = pv_hz_fail_cuda(cx, t, e_, #call, __FILE__, __LINE__);               \
            goto out;                                                                 \
        }                                                                             \
    } while (0)
#define DRV_OUT(call, what, st)                                                       \
    do {                                                                              \
        CUresult c_ = (call);                                                         \
        if (c_ != CUDA_SUCCESS) {                                                     \
            drv_fail(cx, t, (st), (what), c_);                                        \
            goto out;                                                                 \
        }                                                                             \
    } while (0)
    for (int round = 1; round <= STALE_ROUNDS; round++) {
        uint64_t sa = pv_hz_seed(cx, PV_HZ_STALE, i, j, round, 0), sb = pv_hz_seed(cx, PV_HZ_STALE, i, j, round, 1);
        /* A at va, written by the owner, read by the peer (its mappings and caches warm) */
        DRV_OUT(d->MemCreate(&a, size, &prop, 0), "cuMemCreate (A)", PV_HZS_ERROR);
        if (map_both(cx, t, va, size, a, i, j))
            goto out;
        mapped = 1;
        CK_OUT(cudaSetDevice(j));
        CK_OUT(pv_k_hz_fill(p, size, sa, 0, cx->s[j]));
        CK_OUT(cudaStreamSynchronize(cx->s[j]));
        t->ran = 1;
        snprintf(what, sizeof what, "GPU%d (peer) reading A", i);
        if (pv_hz_check(cx, t, i, p, size, sa, 0, 0, 0, what, round, NULL)) {
            rc = -1;
            goto out;
        }
        /* A unmapped and released, B mapped at the same va.  Odd rounds create B
           after A's release, so B likely gets A's pages again: what the peer
           cached of them must not be read back.  Even rounds create B while A
           still holds its pages (B gets others, A's data stays in A's): a stale
           mapping of A would read A's data. */
        int reuse = round % 2 == 1;
        if (!reuse)
            DRV_OUT(d->MemCreate(&b, size, &prop, 0), "cuMemCreate (B)", PV_HZS_ERROR);
        DRV_OUT(d->MemUnmap(va, size), "cuMemUnmap (A)", PV_HZS_ERROR);
        mapped = 0;
        d->MemRelease(a);
        a = 0;
        if (reuse)
            DRV_OUT(d->MemCreate(&b, size, &prop, 0), "cuMemCreate (B)", PV_HZS_ERROR);
        if (map_both(cx, t, va, size, b, i, j))
            goto out;
        mapped = 1;
        CK_OUT(cudaSetDevice(j));
        /* self-test stale: B gets A's data, as a stale mapping would show it */
        CK_OUT(pv_k_hz_fill(p, size, cx->inject && round == 1 ? sa : sb, 0, cx->s[j]));
        CK_OUT(cudaStreamSynchronize(cx->s[j]));
        if (cx->inject && round == 1)
            t->injected = 1;
        snprintf(what, sizeof what, "GPU%d (peer) reading B", i);
        if (pv_hz_check(cx, t, i, p, size, sb, 0, sa, 1, what, round, NULL)) {
            rc = -1;
            goto out;
        }
        DRV_OUT(d->MemUnmap(va, size), "cuMemUnmap (B)", PV_HZS_ERROR);
        mapped = 0;
        d->MemRelease(b);
        b = 0;
        t->rounds = round;
    }
#undef CK_OUT
#undef DRV_OUT
    t->status = t->nbad ? PV_HZS_FAIL : PV_HZS_PASS;
out:
    if (mapped)
        d->MemUnmap(va, size);
    if (a)
        d->MemRelease(a);
    if (b)
        d->MemRelease(b);
    d->MemAddressFree(va, size);
    return rc;
}
