/* linklimits.h - theoretical link limits (pure C). The name is not limits.h:
 * that would hide <limits.h> from a unit whose include path holds common/. */
#ifndef P2PV_LINKLIMITS_H
#define P2PV_LINKLIMITS_H

#include <stddef.h>

#include "results.h"

/* Per-direction raw bandwidth of one PCIe link in GB/s (1e9 B/s):
 * GT/s x lanes x encoding / 8.  gen1/2: 8b/10b; gen3..gen6: 128b/130b.
 * (gen6 really uses FLIT mode; 128b/130b is used here as the approximation.)
 * Returns 0 for an unknown generation or width. */
double pv_pcie_gbps(int gen, int width);
double pv_pcie_gts(int gen);
/* "16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s" -> generation, 0 if unknown. */
int pv_pcie_gen_from_speed(const char *s);
/* NVLink GB/s per link per direction for a GPU of compute capability major.minor;
 * 0 if the part has no NVLink we know. */
double pv_nvlink_per_link_gbps(int cc_major, int cc_minor, int *nvlink_gen);
/* NVML's nvmlNvlinkVersion_t value (1..7) as the NVLink version: 6 -> "4.0".
 * Returns 0 and writes "?" for values it does not know. */
int pv_nvml_nvlink_version(int raw, char *buf, size_t len);
/* Fill l with a PCIe limit (min of both GPUs' links). */
void pv_link_pcie(pv_link *l, const pv_gpu *a, const pv_gpu *b);
/* Fill l with an NVLink limit for nlinks links between a and b. */
void pv_link_nvlink(pv_link *l, const pv_gpu *a, const pv_gpu *b, int nlinks, const char *src);

#endif
