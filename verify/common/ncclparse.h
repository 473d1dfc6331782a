/* ncclparse.h - parse NCCL_DEBUG=INFO transport lines and the NCCL child's
 * result protocol (pure C). */
#ifndef P2PV_NCCLPARSE_H
#define P2PV_NCCLPARSE_H

#include "results.h"

/* One "... NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer" line.
 * Returns 1 and fills c when the line names a transport, else 0.
 * Accepts the older "Channel 00 : 0[1a000] -> 1[1b000] via ..." form and
 * "[send]"/"[receive]" markers. */
int pv_nccl_parse_line(const char *line, pv_nccl_conn *c);
/* Parse a whole debug log into run->conn (deduplicated).  Returns count. */
int pv_nccl_parse_log(const char *text, pv_nccl_run *run);
/* Transport class: "P2P", "SHM", "NET", "NVLS", "COLLNET" ... (prefix up to '/'). */
void pv_nccl_transport_class(const char *transport, char *out, size_t outlen);

/* Child protocol, one record per line on the child's stdout:
 *   VERSION <code>
 *   SIZE <bytes> <time_us> <algbw> <busbw> <nbad> <first_bad> <expected> <found>
 *   ERROR <text>
 *   DONE
 * Returns 0 when DONE was seen and there is no ERROR; version may be NULL. */
int pv_nccl_parse_child(const char *text, pv_nccl_run *run, int *version);

#endif
