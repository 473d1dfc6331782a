/* log.h - p2p-verify's verbose log (--verbose, on stderr) and its clock.
 * Plain C, no CUDA: every unit that logs uses this, and it uses none of them. */
#ifndef P2PV_LOG_H
#define P2PV_LOG_H

extern int pv_verbose;

/* Set the verbosity and start the clock that pv_log and pv_elapsed_s count from. */
void pv_log_start(int verbose);
/* One line "[p2p-verify  T.TTs] ..." on stderr where verbose; nothing otherwise. */
void pv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Seconds of a monotonic clock. */
double pv_now_s(void);
/* Seconds since pv_log_start. */
double pv_elapsed_s(void);

#endif
