/* hz_managed.c - the managed-memory hazard test (opt-in: --managed): one
 * cudaMallocManaged allocation, prefetched to the owner then to the peer,
 * each GPU named accessed-by the other, written and read by kernels on both. */
#define _GNU_SOURCE
#include <string.h>

#include "hazards.h"

#define MAN_BYTES (4ull << 20)
#define MAN_MARGIN (64ull << 20) /* free memory asked for beyond the allocation, on each GPU */

unsigned long long pv_hz_managed_need(void)
{
    return MAN_BYTES + MAN_MARGIN;
}

static cudaError_t prefetch(const void *p, size_t n, int dev, cudaStream_t s)
{
#if CUDART_VERSION >= 13000
    struct cudaMemLocation loc = {cudaMemLocationTypeDevice, dev};
    return cudaMemPrefetchAsync(p, n, loc, 0, s);
#else
    return cudaMemPrefetchAsync(p, n, dev, s);
#endif
}

static cudaError_t accessed_by(const void *p, size_t n, int dev)
{
#if CUDART_VERSION >= 13000
    struct cudaMemLocation loc = {cudaMemLocationTypeDevice, dev};
    return cudaMemAdvise(p, n, cudaMemAdviseSetAccessedBy, loc);
#else
    return cudaMemAdvise(p, n, cudaMemAdviseSetAccessedBy, dev);
#endif
}

int pv_hz_managed(pv_hz_ctx *cx, int i, int j, pv_hz_result *t)
{
    uint8_t *p = NULL;
    uint64_t s1 = pv_hz_seed(cx, PV_HZ_MANAGED, i, j, 0, 0), s2 = pv_hz_seed(cx, PV_HZ_MANAGED, i, j, 0, 1);
    char what[48];
    HZ_CK(cx, t, cudaSetDevice(j));
    HZ_CK(cx, t, cudaMallocManaged((void **)&p, MAN_BYTES, cudaMemAttachGlobal));
    t->ran = 1;
    t->rounds = 1;
    /* 1. resident on the owner, accessed by the peer: the peer writes, the owner reads */
    HZ_CK(cx, t, prefetch(p, MAN_BYTES, j, cx->s[j]));
    HZ_CK(cx, t, cudaStreamSynchronize(cx->s[j]));
    HZ_CK(cx, t, accessed_by(p, MAN_BYTES, i));
    HZ_CK(cx, t, cudaSetDevice(i));
    HZ_CK(cx, t, pv_k_hz_fill(p, MAN_BYTES, s1, 0, cx->s[i]));
    HZ_CK(cx, t, cudaStreamSynchronize(cx->s[i]));
    if (cx->inject) {
        HZ_CK(cx, t, cudaSetDevice(j));
        HZ_CK(cx, t, pv_k_flip(p + MAN_BYTES / 2, 0x10, cx->s[j]));
        HZ_CK(cx, t, cudaStreamSynchronize(cx->s[j]));
        t->injected = 1;
    }
    snprintf(what, sizeof what, "GPU%d (owner) reading the peer's data", j);
    if (pv_hz_check(cx, t, j, p, MAN_BYTES, s1, 0, 0, 0, what, 1, NULL))
        return -1;
    /* 2. prefetched to the peer, accessed by the owner: the owner reads, writes; the peer reads */
    HZ_CK(cx, t, cudaSetDevice(i));
    HZ_CK(cx, t, prefetch(p, MAN_BYTES, i, cx->s[i]));
    HZ_CK(cx, t, cudaStreamSynchronize(cx->s[i]));
    HZ_CK(cx, t, accessed_by(p, MAN_BYTES, j));
    snprintf(what, sizeof what, "GPU%d reading after the prefetch to GPU%d", j, i);
    if (pv_hz_check(cx, t, j, p, MAN_BYTES, s1, 0, 0, 0, what, 1, NULL))
        return -1;
    HZ_CK(cx, t, cudaSetDevice(j));
    HZ_CK(cx, t, pv_k_hz_fill(p, MAN_BYTES, s2, 0, cx->s[j]));
    HZ_CK(cx, t, cudaStreamSynchronize(cx->s[j]));
    snprintf(what, sizeof what, "GPU%d (peer) reading the owner's data", i);
    if (pv_hz_check(cx, t, i, p, MAN_BYTES, s2, 0, 0, 0, what, 1, NULL))
        return -1;
    HZ_CK(cx, t, cudaFree(p));
    t->status = t->nbad ? PV_HZS_FAIL : PV_HZS_PASS;
    return 0;
}
