// kernels.cu - device kernels of p2p-verify (fill, copy, check, delay).
#include <climits>
#include <cstdint>

#include "kernels.h"
#include "pattern.h"

namespace {

const int kThreads = 256;

int grid_for(size_t work)
{
    int dev = 0, sms = 80;
    if (cudaGetDevice(&dev) == cudaSuccess)
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    size_t want = (work + kThreads - 1) / kThreads;
    size_t cap = (size_t)sms * 16;
    if (want > cap)
        want = cap;
    if (want < 1)
        want = 1;
    return (int)want;
}

__global__ void k_fill(uint8_t *base, size_t off, size_t len, uint64_t seed)
{
    if (len == 0)
        return;
    size_t w0 = off / 16, w1 = (off + len - 1) / 16;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t w = w0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; w <= w1; w += stride) {
        uint4 v = reinterpret_cast<uint4 *>(base)[w];
        uint8_t *b = reinterpret_cast<uint8_t *>(&v);
#pragma unroll
        for (int i = 0; i < 16; i++) {
            size_t p = w * 16 + i;
            if (p >= off && p < off + len)
                b[i] = pv_pattern_byte(seed, p - off);
        }
        reinterpret_cast<uint4 *>(base)[w] = v;
    }
}

__device__ __forceinline__ bool in_skip(size_t k, size_t lo, size_t hi) { return k >= lo && k < hi; }

__global__ void k_copy(uint8_t *dst, const uint8_t *src, size_t len, size_t skip_lo, size_t skip_hi)
{
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > len)
        head = len;
    size_t nwords = (len - head) / 16;
    size_t tail = head + nwords * 16;
    for (size_t k = tid; k < head; k += stride)
        if (!in_skip(k, skip_lo, skip_hi))
            dst[k] = src[k];
    for (size_t k = tail + tid; k < len; k += stride)
        if (!in_skip(k, skip_lo, skip_hi))
            dst[k] = src[k];
    uint4 *d = reinterpret_cast<uint4 *>(dst + head);
    const uint8_t *s = src + head;
    unsigned mis = (unsigned)((uintptr_t)s & 7);
    const uint64_t *sa = reinterpret_cast<const uint64_t *>((uintptr_t)s & ~(uintptr_t)7);
    bool s16 = ((uintptr_t)s & 15) == 0;
    for (size_t w = tid; w < nwords; w += stride) {
        size_t k0 = head + w * 16;
        if (skip_hi > skip_lo && k0 < skip_hi && k0 + 16 > skip_lo) {
            /* word touches the skipped chunk: byte by byte */
            for (int i = 0; i < 16; i++)
                if (!in_skip(k0 + i, skip_lo, skip_hi))
                    dst[k0 + i] = src[k0 + i];
            continue;
        }
        uint4 v;
        if (s16) {
            v = reinterpret_cast<const uint4 *>(s)[w];
        } else {
            uint64_t x0 = sa[2 * w], x1 = sa[2 * w + 1];
            uint64_t lo, hi;
            if (mis == 0) {
                lo = x0;
                hi = x1;
            } else {
                uint64_t x2 = sa[2 * w + 2];
                unsigned sh = mis * 8;
                lo = (x0 >> sh) | (x1 << (64 - sh));
                hi = (x1 >> sh) | (x2 << (64 - sh));
            }
            v.x = (unsigned)lo;
            v.y = (unsigned)(lo >> 32);
            v.z = (unsigned)hi;
            v.w = (unsigned)(hi >> 32);
        }
        d[w] = v;
    }
}

__global__ void k_check(const uint8_t *base, size_t lo, size_t hi, size_t off, size_t len, uint64_t seed,
                        pv_dev_check *res)
{
    if (hi <= lo)
        return;
    size_t w0 = lo / 16, w1 = (hi - 1) / 16;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    long long first = LLONG_MAX;
    unsigned long long nbad = 0;
    for (size_t w = w0 + blockIdx.x * (size_t)blockDim.x + threadIdx.x; w <= w1; w += stride) {
        uint4 v = reinterpret_cast<const uint4 *>(base)[w];
        const uint8_t *b = reinterpret_cast<const uint8_t *>(&v);
#pragma unroll
        for (int i = 0; i < 16; i++) {
            size_t p = w * 16 + i;
            if (p < lo || p >= hi)
                continue;
            uint8_t e = (p >= off && p < off + len) ? pv_pattern_byte(seed, p - off) : (uint8_t)PV_POISON_BYTE;
            if (b[i] != e) {
                long long rel = (long long)p - (long long)off;
                if (rel < first)
                    first = rel;
                nbad++;
            }
        }
    }
    if (nbad) {
        atomicMin(&res->first_bad, first);
        atomicAdd(&res->nbad, nbad);
    }
}

__global__ void k_reset(pv_dev_check *res)
{
    res->first_bad = LLONG_MAX;
    res->nbad = 0;
}

__global__ void k_flip(uint8_t *p, uint8_t mask) { p[0] ^= mask; }

__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_delay(volatile int *flag, unsigned long long timeout_ns)
{
    unsigned long long t0 = globaltimer();
    while (*flag == 0) {
        if (globaltimer() - t0 > timeout_ns)
            break;
    }
}

__device__ __forceinline__ float nccl_value(size_t k, int mul) { return (float)((k % 251) + 1) * (float)mul; }

__global__ void k_fill_float(float *p, size_t count, int rank)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < count; k += stride)
        p[k] = nccl_value(k, rank + 1);
}

__global__ void k_check_float(const float *p, size_t count, int nranks, pv_dev_check *res)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    int mul = nranks * (nranks + 1) / 2;
    long long first = LLONG_MAX;
    unsigned long long nbad = 0;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < count; k += stride) {
        if (p[k] != nccl_value(k, mul)) {
            if ((long long)k < first)
                first = (long long)k;
            nbad++;
        }
    }
    if (nbad) {
        atomicMin(&res->first_bad, first);
        atomicAdd(&res->nbad, nbad);
    }
}

__global__ void k_hz_reset(pv_hz_dev *res)
{
    res->first_key = ~0ull;
    res->nbad = 0;
    res->nalt = 0;
    res->timed_out = 0;
    res->pad = 0;
}

__global__ void k_hz_fill(uint8_t *base, size_t len, uint64_t seed, unsigned shift)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t w = blockIdx.x * (size_t)blockDim.x + threadIdx.x; w < len / 16; w += stride) {
        uint4 v;
        uint8_t *b = reinterpret_cast<uint8_t *>(&v);
#pragma unroll
        for (int i = 0; i < 16; i++)
            b[i] = pv_hz_byte(seed, w * 16 + i, shift);
        reinterpret_cast<uint4 *>(base)[w] = v;
    }
}

__global__ void k_hz_check(const uint8_t *base, size_t len, uint64_t seed, unsigned shift, uint64_t alt, int use_alt,
                           pv_hz_dev *res)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long first = ~0ull, nbad = 0, nalt = 0;
    for (size_t w = blockIdx.x * (size_t)blockDim.x + threadIdx.x; w < len / 16; w += stride) {
        uint4 v = reinterpret_cast<const uint4 *>(base)[w];
        const uint8_t *b = reinterpret_cast<const uint8_t *>(&v);
#pragma unroll
        for (int i = 0; i < 16; i++) {
            size_t p = w * 16 + i;
            if (b[i] != pv_hz_byte(seed, p, shift)) {
                unsigned long long key = ((unsigned long long)p << 8) | b[i];
                if (key < first)
                    first = key;
                nbad++;
                if (use_alt && b[i] == pv_hz_byte(alt, p, shift))
                    nalt++;
            }
        }
    }
    if (nbad) {
        atomicMin(&res->first_key, first);
        atomicAdd(&res->nbad, nbad);
        atomicAdd(&res->nalt, nalt);
    }
}

__global__ void k_atomic_add(unsigned long long *ctr, int n, unsigned long long inc, int iters)
{
    unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    for (int i = 0; i < iters; i++)
        atomicAdd_system(&ctr[(t + (unsigned long long)i) % (unsigned long long)n], inc);
}

__global__ void k_order_write(uint32_t *data, size_t nwords, unsigned int *done, volatile int *flag, volatile int *ack,
                              int round, uint64_t seed, int inject, unsigned long long timeout_ns)
{
    if (inject) {
        /* self-test flag-before-data: the flag first, the data once the reader has read */
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            __threadfence_system();
            *flag = round;
        }
        if (threadIdx.x == 0) {
            unsigned long long t0 = globaltimer();
            while (*ack != round && globaltimer() - t0 < timeout_ns)
                ;
        }
        __syncthreads();
    }
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < nwords; k += stride)
        data[k] = pv_order_word(seed, round, k);
    if (inject)
        return;
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int prev = atomicAdd(done, 1u);
        if (prev == gridDim.x - 1) {
            /* the last block: every block's data is fenced before its count */
            __threadfence_system();
            *flag = round;
        }
    }
}

__global__ void k_order_read(const uint32_t *data, size_t nwords, volatile int *flag, volatile int *ack, int round,
                             uint64_t seed, unsigned long long timeout_ns, pv_hz_dev *res)
{
    __shared__ int seen;
    if (threadIdx.x == 0) {
        unsigned long long t0 = globaltimer();
        seen = 1;
        while (*flag != round) {
            if (globaltimer() - t0 > timeout_ns) {
                seen = 0;
                break;
            }
        }
        __threadfence_system();
    }
    __syncthreads();
    if (seen) {
        const volatile uint32_t *vd = data;
        unsigned long long first = ~0ull, nbad = 0;
        for (size_t k = threadIdx.x; k < nwords; k += blockDim.x) {
            uint32_t v = vd[k];
            if (v != pv_order_word(seed, round, k)) {
                unsigned long long key = ((unsigned long long)k << 32) | v;
                if (key < first)
                    first = key;
                nbad++;
            }
        }
        if (nbad) {
            atomicMin(&res->first_key, first);
            atomicAdd(&res->nbad, nbad);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (!seen)
            res->timed_out = 1;
        __threadfence_system();
        *ack = round;
    }
}

} // namespace

extern "C" cudaError_t pv_k_fill(uint8_t *base, size_t off, size_t len, uint64_t seed, cudaStream_t s)
{
    k_fill<<<grid_for(len / 16 + 2), kThreads, 0, s>>>(base, off, len, seed);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_copy(uint8_t *dst, const uint8_t *src, size_t len, size_t skip_lo, size_t skip_hi,
                                 cudaStream_t s)
{
    k_copy<<<grid_for(len / 16 + 16), kThreads, 0, s>>>(dst, src, len, skip_lo, skip_hi);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_check(const uint8_t *base, size_t lo, size_t hi, size_t off, size_t len,
                                  uint64_t seed, pv_dev_check *res, cudaStream_t s)
{
    k_check<<<grid_for((hi - lo) / 16 + 2), kThreads, 0, s>>>(base, lo, hi, off, len, seed, res);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_reset_check(pv_dev_check *res, cudaStream_t s)
{
    k_reset<<<1, 1, 0, s>>>(res);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_flip(uint8_t *p, uint8_t mask, cudaStream_t s)
{
    k_flip<<<1, 1, 0, s>>>(p, mask);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_delay(volatile int *flag, unsigned long long timeout_ns, cudaStream_t s)
{
    k_delay<<<1, 1, 0, s>>>(flag, timeout_ns);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_fill_float(float *p, size_t count, int rank, cudaStream_t s)
{
    k_fill_float<<<grid_for(count), kThreads, 0, s>>>(p, count, rank);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_check_float(const float *p, size_t count, int nranks, pv_dev_check *res,
                                        cudaStream_t s)
{
    k_check_float<<<grid_for(count), kThreads, 0, s>>>(p, count, nranks, res);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_hz_reset(pv_hz_dev *res, cudaStream_t s)
{
    k_hz_reset<<<1, 1, 0, s>>>(res);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_hz_fill(uint8_t *base, size_t len, uint64_t seed, unsigned shift, cudaStream_t s)
{
    k_hz_fill<<<grid_for(len / 16 + 1), kThreads, 0, s>>>(base, len, seed, shift);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_hz_check(const uint8_t *base, size_t len, uint64_t seed, unsigned shift, uint64_t alt,
                                     int use_alt, pv_hz_dev *res, cudaStream_t s)
{
    k_hz_check<<<grid_for(len / 16 + 1), kThreads, 0, s>>>(base, len, seed, shift, alt, use_alt, res);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_atomic_add(unsigned long long *ctr, int n, unsigned long long inc, int iters, int blocks,
                                       int threads, cudaStream_t s)
{
    k_atomic_add<<<blocks, threads, 0, s>>>(ctr, n, inc, iters);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_order_write(uint32_t *data, size_t nwords, unsigned int *done, volatile int *flag,
                                        volatile int *ack, int round, uint64_t seed, int inject,
                                        unsigned long long timeout_ns, int blocks, cudaStream_t s)
{
    k_order_write<<<blocks, kThreads, 0, s>>>(data, nwords, done, flag, ack, round, seed, inject, timeout_ns);
    return cudaGetLastError();
}

extern "C" cudaError_t pv_k_order_read(const uint32_t *data, size_t nwords, volatile int *flag, volatile int *ack,
                                       int round, uint64_t seed, unsigned long long timeout_ns, pv_hz_dev *res,
                                       cudaStream_t s)
{
    k_order_read<<<1, 1024, 0, s>>>(data, nwords, flag, ack, round, seed, timeout_ns, res);
    return cudaGetLastError();
}
