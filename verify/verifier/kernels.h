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

#ifdef __cplusplus
}
#endif

#endif
