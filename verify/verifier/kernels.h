/* kernels.h - C interface to the device kernels in kernels.cu. */
#ifndef P2PV_KERNELS_H
#define P2PV_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    long long first_bad;      /* LLONG_MAX when all good; relative to the checked region's start */
    unsigned long long nbad;
} pv_dev_check;

/* A hazard test's check on the GPU: the lowest bad position with the value
 * found there packed in one key (bytes: (offset << 8) | byte; the ordering
 * test's words: (index << 32) | word), ~0 when all good. */
typedef struct {
    unsigned long long first_key;
    unsigned long long nbad;
    unsigned long long nalt;  /* bad bytes that hold the alternative pattern (stale: A's data) */
    unsigned int timed_out;   /* ordering: the reader never saw the flag */
    unsigned int pad;
} pv_hz_dev;

#ifdef __cplusplus
extern "C" {
#endif

/* base[off .. off+len) = pattern(seed, 0 .. len) */
cudaError_t pv_k_fill(uint8_t *base, size_t off, size_t len, uint64_t seed, cudaStream_t s);
/* SM copy of len bytes src -> dst (any alignment; either may be peer memory),
 * leaving dst bytes [skip_lo, skip_hi) untouched. */
cudaError_t pv_k_copy(uint8_t *dst, const uint8_t *src, size_t len, size_t skip_lo, size_t skip_hi,
                      cudaStream_t s);
/* Check base[lo .. hi): bytes inside [off, off+len) must be pattern(seed, p-off),
 * the others PV_POISON_BYTE.  res must be reset (first_bad = LLONG_MAX, nbad = 0). */
cudaError_t pv_k_check(const uint8_t *base, size_t lo, size_t hi, size_t off, size_t len, uint64_t seed,
                       pv_dev_check *res, cudaStream_t s);
cudaError_t pv_k_reset_check(pv_dev_check *res, cudaStream_t s);
cudaError_t pv_k_flip(uint8_t *p, uint8_t mask, cudaStream_t s);
/* Spin until *flag != 0 or timeout_ns passed (stream gate for timing). */
cudaError_t pv_k_delay(volatile int *flag, unsigned long long timeout_ns, cudaStream_t s);
/* NCCL data: p[k] = ((k % 251) + 1) * (rank + 1) */
cudaError_t pv_k_fill_float(float *p, size_t count, int rank, cudaStream_t s);
/* Check p[k] == ((k % 251) + 1) * nranks*(nranks+1)/2 */
cudaError_t pv_k_check_float(const float *p, size_t count, int nranks, pv_dev_check *res, cudaStream_t s);

/* ---- hazard tests (len a multiple of 16, base 16-byte aligned) ---- */
cudaError_t pv_k_hz_reset(pv_hz_dev *res, cudaStream_t s);
/* base[k] = pv_hz_byte(seed, k, shift) for k < len */
cudaError_t pv_k_hz_fill(uint8_t *base, size_t len, uint64_t seed, unsigned shift, cudaStream_t s);
/* Count the bytes of base[0 .. len) that are not pv_hz_byte(seed, k, shift);
 * with use_alt, also those of them that are pv_hz_byte(alt, k, shift). */
cudaError_t pv_k_hz_check(const uint8_t *base, size_t len, uint64_t seed, unsigned shift, uint64_t alt, int use_alt,
                          pv_hz_dev *res, cudaStream_t s);
/* Every thread of blocks x threads adds inc to ctr[(thread + i) % n] for
 * i < iters, with atomicAdd_system. */
cudaError_t pv_k_atomic_add(unsigned long long *ctr, int n, unsigned long long inc, int iters, int blocks, int threads,
                            cudaStream_t s);
/* The ordering test's writer: data[k] = pv_order_word(seed, round, k), then
 * __threadfence_system() and, once every block is done (done counts them;
 * zero it first), *flag = round.  inject: *flag = round first, then wait
 * until *ack == round (the reader has read) before writing the data. */
cudaError_t pv_k_order_write(uint32_t *data, size_t nwords, unsigned int *done, volatile int *flag,
                             volatile int *ack, int round, uint64_t seed, int inject, unsigned long long timeout_ns,
                             int blocks, cudaStream_t s);
/* Its reader (one block): wait for *flag == round (timeout: res->timed_out),
 * then check every word; then *ack = round. */
cudaError_t pv_k_order_read(const uint32_t *data, size_t nwords, volatile int *flag, volatile int *ack, int round,
                            uint64_t seed, unsigned long long timeout_ns, pv_hz_dev *res, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
