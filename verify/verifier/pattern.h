/* pattern.h - the integrity pattern shared by host C code and CUDA kernels.
 *
 * Every byte of a test copy is a function of (seed, k) where k is the byte
 * offset inside the copied region: byte k = byte (k mod 8) of a 64-bit
 * splitmix-style hash of (seed, k / 8).  A zero hash byte is replaced by 0x5a,
 * so the pattern never contains 0x00: the destination is poisoned with zeros
 * before each copy, hence an unwritten (dropped) or zeroed chunk always fails
 * at exactly its first byte.
 */
#ifndef P2PV_PATTERN_H
#define P2PV_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define PV_HD static __host__ __device__ __forceinline__
#else
#define PV_HD static inline
#endif

#define PV_POISON_BYTE 0x00u
#define PV_ZERO_SUBST 0x5au

PV_HD uint64_t pv_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

PV_HD uint8_t pv_pattern_byte(uint64_t seed, uint64_t k)
{
    uint64_t h = pv_mix64(seed ^ ((k >> 3) * 0xd6e8feb86659fd93ull));
    uint8_t b = (uint8_t)(h >> ((k & 7u) * 8u));
    return b ? b : (uint8_t)PV_ZERO_SUBST;
}

/* Seed of one test: distinct per (base seed, pair, method, size, case, iteration). */
PV_HD uint64_t pv_test_seed(uint64_t base, int src, int dst, int method, int size_idx,
                            int case_idx, int iter)
{
    uint64_t s = pv_mix64(base);
    s = pv_mix64(s ^ ((uint64_t)(unsigned)src << 48) ^ ((uint64_t)(unsigned)dst << 32) ^
                 ((uint64_t)(unsigned)method << 24) ^ ((uint64_t)(unsigned)size_idx << 16) ^
                 ((uint64_t)(unsigned)case_idx << 8) ^ (uint64_t)(unsigned)iter);
    return s;
}

/* Hazard tests' data: byte k of a region = pattern byte k >> shift, so
 * shift 0 is the integrity pattern and shift 9 runs of 512 equal bytes
 * (data that generic compression can compress). */
PV_HD uint8_t pv_hz_byte(uint64_t seed, uint64_t k, unsigned shift)
{
    return pv_pattern_byte(seed, k >> shift);
}

/* The ordering test's word k of round r (1..255): its low byte is r, so the
 * words of two rounds always differ and none is 0 (the poison). */
PV_HD uint32_t pv_order_word(uint64_t seed, int round, uint64_t k)
{
    uint32_t h = (uint32_t)(pv_mix64(seed ^ ((uint64_t)(unsigned)round << 40) ^ (k * 0x9e3779b97f4a7c15ull)) >> 16);
    return (h & 0xffffff00u) | ((uint32_t)round & 0xffu);
}

/* Host helpers (pattern.c). */
#ifndef __CUDACC__
void pv_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t k0);
/* Returns the number of bad bytes in buf[0..len) against the pattern starting
 * at offset k0; *first_bad is set to the offset (relative to buf) of the first
 * one, or -1 when all bytes match. */
uint64_t pv_pattern_check(const uint8_t *buf, size_t len, uint64_t seed, uint64_t k0,
                          long long *first_bad, unsigned *expected, unsigned *found);
#endif

#endif
