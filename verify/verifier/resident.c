/* resident.c - --resident (hold memory on every GPU while the tests run, so
 * that their buffers come after it: the forks' RESIDENT_GB check for GPUs
 * whose BAR1 is smaller than VRAM) and --peer-cap (how much of an owner's
 * memory the legacy peer-access route can map, and whether the owner works
 * again once that memory is freed). The plain-C half is bar1room.c. */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "bar1room.h"
#include "host.h"
#include "report.h"

static void *g_held[PV_MAX_GPUS][PV_ROOM_MAX_CHUNKS];
static int g_nheld[PV_MAX_GPUS];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Allocates up to `want` bytes on the current GPU into chunks[*n...]: 1 GiB
 * steps, then 64 MiB ones for the rest. Stops at the first failed
 * allocation and returns its error (cudaSuccess when all of `want` was
 * taken); *got is what was taken. */
static cudaError_t take(void **chunks, int *n, unsigned long long want, unsigned long long *got)
{
    *got = 0;
    while (*got < want && *n < PV_ROOM_MAX_CHUNKS) {
        unsigned long long left = want - *got;
        unsigned long long step = left >= PV_ROOM_CHUNK ? PV_ROOM_CHUNK
                                  : left >= PV_ROOM_SMALL_CHUNK ? PV_ROOM_SMALL_CHUNK : left;
        void *p = NULL;
        cudaError_t e = cudaMalloc(&p, step);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return e;
        }
        chunks[(*n)++] = p;
        *got += step;
    }
    return cudaSuccess;
}

static void give_back(int g, void **chunks, int *n)
{
    if (*n == 0)
        return;
    (void)cudaSetDevice(g);
    for (int k = 0; k < *n; k++)
        (void)cudaFree(chunks[k]);
    *n = 0;
    (void)cudaGetLastError();
}

int pv_resident_hold(pv_results *r, const pv_options *o, char *err, size_t errlen)
{
    pv_resident *x = &r->resident;
    int ids[PV_MAX_GPUS];
    int n = pv_pair_gpus(r, ids);
    x->asked = 1;
    snprintf(x->request, sizeof x->request, "%s", o->resident_arg);
    for (int a = 0; a < n; a++) {
        int g = ids[a];
        size_t fr = 0, tot = 0;
        unsigned long long target = 0, got = 0;
        PV_CK(r, cudaSetDevice(g));
        PV_CK(r, cudaMemGetInfo(&fr, &tot));
        x->free_before[g] = fr;
        x->total[g] = tot;
        if (pv_resident_target(o->resident_bytes, o->resident_pct, fr, g, &target, err, errlen) != 0) {
            snprintf(x->error, sizeof x->error, "%s", err);
            pv_resident_release(r);
            return 1;
        }
        cudaError_t e = take(g_held[g], &g_nheld[g], target, &got);
        x->held[g] = got;
        if (e != cudaSuccess || got < target) {
            char tb[32], gb[32];
            pv_fmt_bytes(target, tb, sizeof tb);
            pv_fmt_bytes(got, gb, sizeof gb);
            snprintf(x->error, sizeof x->error, "GPU%d: holding %s stopped at %s: %s", g, tb, gb,
                     e != cudaSuccess ? cudaGetErrorName(e) : "too many chunks");
            pv_resident_release(r);
            return pv_cuda_fail(r, e != cudaSuccess ? e : cudaErrorMemoryAllocation, "--resident: cudaMalloc",
                                __FILE__, __LINE__);
        }
        pv_log("--resident: GPU%d holds %llu bytes of %llu free", g, got, (unsigned long long)fr);
    }
    x->ok = 1;
    return 0;
}

void pv_resident_release(pv_results *r)
{
    (void)r;
    for (int g = 0; g < PV_MAX_GPUS; g++)
        give_back(g, g_held[g], &g_nheld[g]);
}

/* After the owner's memory was taken and freed: a new allocation on the
 * owner, filled there, copied to the peer and read back on the host. 1 when
 * every byte is right; 0 with the reason in c->note. */
static int recovered(pv_results *r, pv_peer_cap *c, int peer)
{
    const size_t len = 64u << 20;
    int owner = c->owner, ok = 0;
    unsigned char *src = NULL, *dst = NULL, *host = NULL;
    cudaError_t e;
    if ((e = cudaSetDevice(owner)) != cudaSuccess || (e = cudaMalloc((void **)&src, len)) != cudaSuccess ||
        (e = cudaMemset(src, 0xa5, len)) != cudaSuccess || (e = cudaDeviceSynchronize()) != cudaSuccess) {
        snprintf(c->note, sizeof c->note, "a new 64 MiB allocation on GPU%d failed: %s", owner, cudaGetErrorName(e));
        goto out;
    }
    if ((e = cudaSetDevice(peer)) != cudaSuccess || (e = cudaMalloc((void **)&dst, len)) != cudaSuccess ||
        (e = cudaMemcpyPeer(dst, peer, src, owner, len)) != cudaSuccess ||
        (e = cudaDeviceSynchronize()) != cudaSuccess) {
        snprintf(c->note, sizeof c->note, "the peer copy GPU%d -> GPU%d failed: %s", owner, peer, cudaGetErrorName(e));
        goto out;
    }
    if ((e = cudaMallocHost((void **)&host, len)) != cudaSuccess ||
        (e = cudaMemcpy(host, dst, len, cudaMemcpyDeviceToHost)) != cudaSuccess) {
        snprintf(c->note, sizeof c->note, "reading the copy back failed: %s", cudaGetErrorName(e));
        goto out;
    }
    if (r->self_test == PV_ST_CAP_CORRUPT) {
        host[len / 2] ^= 0x01;
        c->injected = 1;
    }
    size_t bad = 0;
    for (size_t k = 0; k < len; k++)
        bad += host[k] != 0xa5;
    if (bad) {
        snprintf(c->note, sizeof c->note, "the peer copy GPU%d -> GPU%d delivered %zu wrong bytes of 64 MiB", owner,
                 peer, bad);
        goto out;
    }
    ok = 1;
out:
    (void)cudaGetLastError();
    if (host)
        (void)cudaFreeHost(host);
    if (dst) {
        (void)cudaSetDevice(peer);
        (void)cudaFree(dst);
    }
    if (src) {
        (void)cudaSetDevice(owner);
        (void)cudaFree(src);
    }
    (void)cudaGetLastError();
    return ok;
}

/* One owner: every GPU of the run that can reach it gets peer access
 * (which makes CUDA map each new allocation of the owner for them), then
 * the owner's memory is taken until an allocation fails or the limit. */
static int cap_one(pv_results *r, int owner, const int *ids, int n, pv_peer_cap *c)
{
    static void *chunks[PV_ROOM_MAX_CHUNKS];
    int nchunks = 0;
    size_t fr = 0, tot = 0;
    double t0 = now_s();
    memset(c, 0, sizeof(*c));
    c->owner = owner;
    for (int a = 0; a < n; a++) {
        int i = ids[a];
        if (i == owner || r->can_access[i][owner] != 1)
            continue;
        if (pv_enable_peer(r, i, owner)) {
            c->status = PV_CAP_ERROR;
            snprintf(c->note, sizeof c->note, "cudaDeviceEnablePeerAccess(GPU%d -> GPU%d) failed", i, owner);
            return -1;
        }
        c->peers[c->npeers++] = i;
    }
    if (c->npeers == 0) {
        snprintf(c->note, sizeof c->note, "no GPU of this run has peer access to it");
        return 0;
    }
    PV_CK(r, cudaSetDevice(owner));
    PV_CK(r, cudaMemGetInfo(&fr, &tot));
    c->limit = pv_peer_cap_limit(fr);
    cudaError_t e = take(chunks, &nchunks, c->limit, &c->mapped);
    snprintf(c->stopped_by, sizeof c->stopped_by, "%s", e == cudaSuccess ? "limit" : cudaGetErrorName(e));
    give_back(owner, chunks, &nchunks);
    int ok = recovered(r, c, c->peers[0]);
    c->status = pv_peer_cap_status(e == cudaSuccess && c->mapped >= c->limit, ok, 0);
    c->recovered = ok;
    c->seconds = now_s() - t0;
    return 0;
}

int pv_run_peer_cap(pv_results *r, const pv_options *o)
{
    int ids[PV_MAX_GPUS];
    int n = pv_pair_gpus(r, ids);
    (void)o;
    r->peer_cap_ran = 1;
    r->npeer_cap = 0;
    for (int a = 0; a < n; a++) {
        pv_peer_cap *c = &r->peer_cap[r->npeer_cap++];
        int rc = cap_one(r, ids[a], ids, n, c);
        if (rc != 0 && c->status == PV_CAP_NOT_RUN) {
            c->status = PV_CAP_ERROR;
            snprintf(c->note, sizeof c->note, "%.190s", r->cuda_error_msg);
        }
        char line[400];
        pv_peer_cap_describe(c, r->gpu[c->owner].bar1_bytes, line, sizeof line);
        pv_log("--peer-cap: %s", line);
        if (rc != 0)
            return -1;
    }
    return 0;
}
