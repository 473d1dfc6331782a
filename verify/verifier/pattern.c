/* pattern.c - host-side fill/check of the integrity pattern (pure C). */
#include "pattern.h"

void pv_pattern_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t k0)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pv_pattern_byte(seed, k0 + i);
}

uint64_t pv_pattern_check(const uint8_t *buf, size_t len, uint64_t seed, uint64_t k0,
                          long long *first_bad, unsigned *expected, unsigned *found)
{
    uint64_t nbad = 0;
    *first_bad = -1;
    for (size_t i = 0; i < len; i++) {
        uint8_t e = pv_pattern_byte(seed, k0 + i);
        if (buf[i] != e) {
            if (nbad == 0) {
                *first_bad = (long long)i;
                if (expected)
                    *expected = e;
                if (found)
                    *found = buf[i];
            }
            nbad++;
        }
    }
    return nbad;
}
