/* dparse_int.h - p2p-doctor's parsers, inside: the context of one file
 * (dp_ctx), the helpers every reader shares, and the readers that dparse.c's
 * dp_line hands each line to.  Private to dparse.c and the dp_*.c readers.
 *
 * Where a reader lives: one file per kind of output (dp_smi.c nvidia-smi,
 * dp_lspci.c lspci, dp_nccl.c NCCL, ...); its state is fields of dp_ctx;
 * what is left at the end of the file is closed in dp_end.  A new reader is
 * called from dp_line (dparse.c) and declared here. */
#ifndef P2PD_DPARSE_INT_H
#define P2PD_DPARSE_INT_H

#include <stddef.h>

#include "dmodel.h"
#include "dparse.h"

#define Q_DEPTH 12
#define MAX_RANKS 256

/* the title of the matrix that follows (dp_matrix.c) */
enum { T_NONE = 0, T_ACCESS01, T_UNI_ON, T_UNI_OFF, T_BI_ON, T_BI_OFF, T_LAT_ON, T_LAT_OFF, T_IGNORE };

struct nvb_data; /* nvbandwidth's figures (dp_nvbw.c) */

struct dp_ctx {
    dr_model *m;
    int fi;
    const char *fname;
    long ln;
    const char *line;
    /* CUDA_VISIBLE_DEVICES of the run being read: its index i is CUDA's cvd[i] */
    int cvd[DR_MAX_GPUS], ncvd, cvd_export;
    /* nvidia-smi -q */
    int q_rec, q_blocks, q_full;
    int q_depth, q_ind[Q_DEPTH];
    char q_hdr[Q_DEPTH][48];
    /* nvidia-smi table */
    int t_rec;
    /* matrices */
    int mx_style; /* 0 none, 1 "GPU0 GPU1" header (nvidia-smi), 2 "D\D 0 1" (CUDA) */
    int mx_ncol, mx_cols[DR_MAX_GPUS], mx_numa, mx_title, mx_rows;
    int title;
    double *bw; /* [3][2][N][N] */
    dr_ev bw_ev[3][2];
    /* lspci */
    int pci_kind, pci_idx, pci_mem, pci_bar1_reg, pci_in_rebar;
    /* nvlink -s */
    int nv_rec, nv_seen, nv_active;
    /* simpleP2P */
    int sp_a, sp_b, sp_errs;
    dr_ev sp_ev;
    /* NCCL */
    int rank_dev[MAX_RANKS];
    int nt_wrong[4], nt_nwrong;
    /* API mismatch block */
    int api_left, api_nv;
    char api_v[2][24];
    /* modinfo block */
    int mi_on, mi_signed;
    dr_ev mi_ev;
    /* nvidia-smi --query-gpu csv */
    int csv_on, csv_idx, csv_name, csv_bus, csv_mem, csv_gen, csv_genmax, csv_w, csv_wmax, csv_disp;
    /* JSON (p2p-verify --json) */
    char *js;
    size_t js_len, js_cap;
    int js_on, js_over;
    /* p2p-verify text */
    int vt_on;
    /* deviceQuery, /proc/driver/nvidia/gpus */
    char gl_name[96];
    int gl_idx;
    /* the file is named as a command line (cmdline.txt): every line is one */
    int hint_cmdline;
    /* a "topo -p2p <mode>" command line was seen: the next GPU matrix is
     * one, of that mode (r, w, x for rw, p, n for NVLink, a for atomics, ?) */
    int p2p_ctx, mx_p2pmode;
    /* the line before was "cat /proc/cmdline" */
    int cmdline_next;
    /* torch.cuda.can_device_access_peer(a, b) without its answer yet */
    int torch_a, torch_b;
    /* sysfs (collect) */
    int sf_rec;
    char sf_busid[16];
    /* matrix rows shorter than their header (cut or wrapped: the last value is
     * not read), values that are no numbers ("41,47": not read) */
    int mx_short, mx_bad;
    char mx_bad_tok[24];
    /* nvbandwidth: the test of the last "Running <test>." line, where in its
     * matrix (0 none, 1 title seen, 2 in it), the columns, the figures */
    int nvb_test, nvb_state, nvb_ncol, nvb_cols[DR_MAX_GPUS];
    int nvb_on, nvb_ndev; /* its "nvbandwidth Version:" line seen; GPUs it listed */
    struct nvb_data *nvb;
    /* setpci: reads whose value is on a following line, and the register of a
     * loop over devices ("for d in ...; do echo $d; setpci -s $d REG; done") */
    dr_setpci sp_pending[4];
    int sp_npending, sp_loop;
    dr_setpci sp_loopreg;
    /* the loop's devices are PLX switch ports ("for d in $(lspci | grep -i
     * plx ...)"): its values print without their addresses */
    int sp_plx;
    char sp_for_var[24], sp_for_bdf[16][16]; /* a shell loop's variable and its list of devices */
    int sp_for_n;
    /* lspci -t: the bus of the devices that start at each column, the domain
     * and root bus of the tree being read */
    short lt_bus[256];
    int lt_on, lt_dom, lt_root;
    /* NCCL runs: NCCL_P2P_DISABLE=1 exported, or on the next run's command
     * line; the open run (nccl-tests) and its bus bandwidth */
    int nc_env_off, nc_cmd_off, nc_run, nc_off, nc_busbw_col;
    dr_busbw nc_bus;
    /* p2p-verify text: its NCCL table and the GPUs of its NCCL runs */
    int vt_nccl, vt_ndev, vt_dev[2];
    /* test outputs and whether they reached their end: 0 not seen, 1 begun,
     * 2 ended; nccl-tests: its column header, its result rows */
    int cut_p2pbw, cut_sp, cut_nc, cut_nc_rows;
    int cut_mx, cut_mx_ncol, cut_mx_rows; /* p2pBandwidthLatencyTest: in a matrix, its columns, its rows */
    char cut_where[64]; /* where the begun output was last: "its first bandwidth matrix" */
    dr_ev cut_last;     /* the last non-empty line */
};


/* ---- dp_util.c: helpers */

/* Case-insensitive prefix test and search. */
const char *dp_ci_find(const char *hay, const char *needle);
const char *dp_skip_ws(const char *p);
/* [b, e) without surrounding blanks into out (cut to outlen). */
void dp_trim_copy(char *out, size_t outlen, const char *b, const char *e);
/* A whole decimal number (no sign). */
int dp_is_int(const char *s, long *v);
/* The evidence of the current line (its file, number, text), or of text. */
void dp_ev(dp_ctx *c, dr_ev *e);
void dp_evt(dp_ctx *c, dr_ev *e, const char *text);
/* Set a fact (the first value stays), or overwrite it (a later line of the
 * same output is the newer state), with the current line as evidence. */
void dp_setn(dp_ctx *c, dr_num *n, long long v);
void dp_setn_force(dp_ctx *c, dr_num *n, long long v);
int dp_hexval(int ch);
/* Driver version tokens in s (at most max). */
int dp_find_versions(const char *s, char out[][24], int max);
/* "24564 MiB", "32G", "256MB", "16 GiB" -> MiB; -1 if none. */
long long dp_parse_mib(const char *s);
/* PCIe generation of a rate in GT/s. */
int dp_gts_to_gen(double gts);
/* The record of a GPU in this file (found or new); -1 when full. */
int dp_rec_get(dp_ctx *c, const char *src, int ns, int index, const char *busid, const char *name);
/* A record of a GPU that is not identified (an excerpt). */
int dp_rec_anon(dp_ctx *c, const char *src);
/* An observation of the pair a -> b (e NULL: the current line). */
void dp_pobs_add(dp_ctx *c, int kind, int ns, int a, int b, int val, double x, double y, const char *text,
                 const dr_ev *e);
/* The file holds an output of kind k (DR_K_*). */
void dp_kind(dp_ctx *c, unsigned k);

/* ---- the readers, one call per line from dp_line; *_close and *_emit from dp_end */

/* dp_options.c */
void dp_modopts(dp_ctx *c, const char *line);
void dp_params(dp_ctx *c, const char *line);
void dp_cmdline(dp_ctx *c, const char *line);
/* dp_dmesg.c */
void dp_dmesg(dp_ctx *c, const char *line);
/* dp_driver.c */
void dp_gpulist(dp_ctx *c, const char *line);
void dp_version(dp_ctx *c, const char *line);
void dp_mi_close(dp_ctx *c);
void dp_modinfo(dp_ctx *c, const char *line);
void dp_userspace(dp_ctx *c, const char *line);
void dp_collect(dp_ctx *c, const char *line);
/* dp_smi.c */
void dp_smiq(dp_ctx *c, const char *line);
void dp_smi(dp_ctx *c, const char *line);
void dp_csv(dp_ctx *c, const char *line);
void dp_nvlink(dp_ctx *c, const char *line);
/* dp_matrix.c; its cells' words are p2p-verify --json's too */
int dp_topo_cell(const char *t);
int dp_p2p_cell(const char *t);
int dp_title_of(const char *line);
int dp_matrix(dp_ctx *c, const char *line);
void dp_bw_emit(dp_ctx *c);
/* dp_nvbw.c */
int dp_nvbw(dp_ctx *c, const char *line);
void dp_nvb_emit(dp_ctx *c);
/* dp_setpci.c */
void dp_setpci(dp_ctx *c, const char *line);
/* dp_cuda.c (dp_sp_close: simpleP2P's verdict) */
void dp_cuda_samples(dp_ctx *c, const char *line);
void dp_sp_close(dp_ctx *c);
void dp_torch(dp_ctx *c, const char *line);
/* dp_nccl.c */
void dp_nc_close_run(dp_ctx *c);
void dp_nccl(dp_ctx *c, const char *line);
/* dp_verify.c; dp_bus_peak is p2p-verify --json's too */
void dp_bus_peak(dp_ctx *c, int idx, double v, int ngpus, const int *dev, const dr_ev *e);
void dp_verify_text(dp_ctx *c, const char *line);
/* dp_verify_json.c */
void dp_js_close(dp_ctx *c);
void dp_js_line(dp_ctx *c, const char *line);
/* dp_lspci.c */
void dp_lspci(dp_ctx *c, const char *line);
int dp_lstree(dp_ctx *c, const char *line);

#endif
