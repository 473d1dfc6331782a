/* bar1room.h - the plain-C half of --resident and --peer-cap (resident.c
 * does the CUDA calls): targets, verdicts and the words for them. */
#ifndef P2PV_BAR1ROOM_H
#define P2PV_BAR1ROOM_H

#include <stddef.h>
#include "results.h"

/* What every GPU keeps free for the tests (and NCCL) under --resident and
 * --peer-cap. */
#define PV_RESIDENT_KEEP (2ull << 30)
/* The steps in which --resident and --peer-cap allocate. */
#define PV_ROOM_CHUNK (1ull << 30)
#define PV_ROOM_SMALL_CHUNK (64ull << 20)
/* Chunks one GPU can hold: 1 TiB in 1 GiB steps, then small ones. */
#define PV_ROOM_MAX_CHUNKS 1100

/* The bytes --resident holds on a GPU with free_bytes free: bytes, or pct
 * percent of free_bytes, rounded down to 2 MiB.  0 on success; -1 when that
 * leaves less than PV_RESIDENT_KEEP free (message in err, naming gpu). */
int pv_resident_target(unsigned long long bytes, int pct, unsigned long long free_bytes, int gpu,
                       unsigned long long *target, char *err, size_t errlen);

/* The bytes --peer-cap may take on a GPU with free_bytes free (0 when there
 * is no room beyond PV_RESIDENT_KEEP). */
unsigned long long pv_peer_cap_limit(unsigned long long free_bytes);

/* The status of one owner's cap measurement: stopped at the limit (no cap
 * below it) or by a failed allocation (capped); FAIL when it did not recover
 * afterwards, ERROR when a CUDA call other than the allocations failed. */
int pv_peer_cap_status(int reached_limit, int recovered, int cuda_error);

/* One line on a cap measurement, e.g. "GPU0's memory mapped by GPUs 1,2:
 * 31.8 GiB, then cudaErrorMemoryAllocation (BAR1 32.0 GiB): capped; freed
 * and mapped again: data correct". bar1 < 0: unknown. */
void pv_peer_cap_describe(const pv_peer_cap *c, long long bar1, char *buf, size_t len);
const char *pv_peer_cap_status_name(int status);

#endif
