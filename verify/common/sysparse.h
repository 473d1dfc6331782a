/* sysparse.h - parsers for nvidia-smi output, sysfs files and driver version
 * strings (pure C, unit tested against fixtures). */
#ifndef P2PV_SYSPARSE_H
#define P2PV_SYSPARSE_H

#include <stddef.h>

/* Line reader for the parsers: copies the line at *p (without its '\n') into
 * line, cut to cap - 1 bytes, and moves *p past it.  Returns 0 at the end of
 * the text, else 1; *cut (if not NULL) says whether the line was cut. */
int pv_next_line(const char **p, char *line, size_t cap, int *cut);

/* Split line in place into at most max whitespace-separated tokens; returns
 * how many. */
int pv_tokenize(char *line, char **tok, int max);

/* Parse an nvidia-smi GPU matrix ("topo -m", "topo -p2p r|w"): a header line
 * whose tokens start "GPU0 GPU1 ...", then one row per GPU.  ANSI escapes are
 * ignored.  cells is row-major [maxn][maxn][cellsz].  Returns the number of
 * GPUs found (0 if none). */
int pv_parse_smi_matrix(const char *text, int maxn, char *cells, size_t cellsz);
/* Number of NVLinks in a topo -m cell: "NV18" -> 18, anything else -> 0. */
int pv_smi_nvlinks(const char *cell);
/* "00000000:18:00.0", "0000:18:00.0", "18:00.0" -> "0000:18:00.0" (lower case).
 * 0 on success. */
int pv_norm_busid(const char *in, char *out, size_t outlen);
/* Parse "index, pci.bus_id" csv lines of nvidia-smi --query-gpu.  busids is
 * [maxn][32]; returns count.  Entry i holds the bus id of nvidia-smi index i. */
int pv_parse_smi_index_csv(const char *text, int maxn, char busids[][32]);
/* Size of BAR n from a sysfs "resource" file (lines "start end flags").
 * Returns -1 if absent/unassigned. */
long long pv_parse_sysfs_bar(const char *text, int bar);
/* Size of NVIDIA's "BAR1" (the VRAM aperture P2P uses) from a sysfs
 * "resource" file: the second memory BAR.  With a 32-bit BAR0 that is
 * resource line 1; with a 64-bit BAR0 (seen on H200 in a VM) line 2.
 * Returns -1 if not found. */
long long pv_parse_sysfs_bar1(const char *text);
/* Driver version from /proc/driver/nvidia/version. 0 on success. */
int pv_parse_proc_driver_version(const char *text, char *out, size_t outlen);
/* The RegistryDwords string of /proc/driver/nvidia/params ("A=1;B=2", quotes
 * dropped).  0 on success. */
int pv_parse_params_regdwords(const char *text, char *out, size_t outlen);
/* The value of key in a RegistryDwords string ("RMForceP2PType=2;..."), -1
 * when it is not there. */
long pv_regdword(const char *dwords, const char *key);
/* Strip ANSI escape sequences in place. */
void pv_strip_ansi(char *s);

#endif
