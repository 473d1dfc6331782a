/* report.c - human-readable and JSON reports (pure C). */
#include "report.h"

#include <math.h>
#include <string.h>

#include "bar1room.h"
#include "fmt.h"
#include "hzcheck.h"
#include "json.h"
#include "linklimits.h"
#include "ncclparse.h"
#include "options.h"

int pv_pair_gpus(const pv_results *r, int *ids)
{
    int seen[PV_MAX_GPUS] = {0};
    for (int k = 0; k < r->npairs; k++) {
        seen[r->pair_src[k]] = 1;
        seen[r->pair_dst[k]] = 1;
    }
    int n = 0;
    for (int i = 0; i < PV_MAX_GPUS; i++)
        if (seen[i])
            ids[n++] = i;
    return n;
}

void pv_format_corruption(const pv_int_result *t, char *buf, size_t len)
{
    char where[64];
    if (t->first_bad < 0)
        snprintf(where, sizeof where, "-0x%llx (guard before the destination)",
                 (unsigned long long)(-t->first_bad));
    else if ((unsigned long long)t->first_bad >= t->len)
        snprintf(where, sizeof where, "0x%llx (guard after the destination)", (unsigned long long)t->first_bad);
    else
        snprintf(where, sizeof where, "0x%llx", (unsigned long long)t->first_bad);
    snprintf(buf, len,
             "CORRUPTION GPU%d->GPU%d %s size=%llu first bad offset %s: expected 0x%02x found 0x%02x "
             "(src+%llu dst+%llu len=%llu, %llu bad byte%s%s)",
             t->src, t->dst, pv_method_name(t->method), t->size, where, t->expected, t->found, t->src_off,
             t->dst_off, t->len, t->nbad, t->nbad == 1 ? "" : "s", t->host_confirmed ? ", confirmed on host" : "");
}

static const char *yesno(int v)
{
    return v == 1 ? "yes" : (v == 0 ? "NO" : "?");
}

static void pcie_str(int gen, int width, char *buf, size_t len)
{
    if (gen > 0 && width > 0)
        snprintf(buf, len, "gen%d x%d", gen, width);
    else if (gen > 0)
        snprintf(buf, len, "gen%d x?", gen);
    else
        snprintf(buf, len, "?");
}

static void section_topology(FILE *f, const pv_results *r, const int *ids, int n)
{
    fprintf(f, "\n== Topology ==\n");
    fprintf(f, "%-4s %-26s %-13s %-9s %-9s %-9s %s\n", "GPU", "name", "PCI bus id", "BAR1", "PCIe now",
            "PCIe max", "NVLink");
    for (int g = 0; g < r->ngpus; g++) {
        const pv_gpu *d = &r->gpu[g];
        char bar[32], now[32], mx[32], nvl[48];
        if (d->bar1_bytes > 0)
            pv_fmt_size((unsigned long long)d->bar1_bytes, bar, sizeof bar);
        else
            snprintf(bar, sizeof bar, "?");
        pcie_str(d->gen_cur, d->width_cur, now, sizeof now);
        pcie_str(d->gen_max, d->width_max, mx, sizeof mx);
        char ver[8];
        if (d->nvlink_active > 0 && pv_nvml_nvlink_version(d->nvlink_version, ver, sizeof ver))
            snprintf(nvl, sizeof nvl, "%d links active (NVLink %s)", d->nvlink_active, ver);
        else if (d->nvlink_active > 0)
            snprintf(nvl, sizeof nvl, "%d links active", d->nvlink_active);
        else if (d->nvlink_active == 0)
            snprintf(nvl, sizeof nvl, "none");
        else
            snprintf(nvl, sizeof nvl, "?");
        fprintf(f, "%-4d %-26.26s %-13s %-9s %-9s %-9s %s\n", g, d->name, d->bus_id, bar, now, mx, nvl);
    }
    fprintf(f, "(PCIe max = what the link can train to, GPU and its port; 'now' may be lower at idle.\n"
               " BAR1 from %s; link data from %s.)\n",
            r->ngpus > 0 && r->gpu[0].bar1_src[0] ? r->gpu[0].bar1_src : "-",
            r->ngpus > 0 && r->gpu[0].link_src[0] ? r->gpu[0].link_src : "-");
    fprintf(f, "Limits used for %% of limit (per direction; bidirectional = 2x):\n");
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            int i = ids[a], j = ids[b];
            fprintf(f, "  GPU%d<->GPU%d  P2P on : %s\n", i, j, r->link[i][j].desc);
            fprintf(f, "  %*s  P2P off: %s\n", (int)(strlen("GPU<->GPU") + (i > 9) + (j > 9) + 2), "",
                    r->pcie[i][j].desc);
        }
    if (r->smi_topo_ok) {
        fprintf(f, "nvidia-smi topo -m (GPU block, nvidia-smi's own GPU numbering mapped to CUDA's):\n");
        pv_fmt_str_matrix(f, "D\\D", n, ids, &r->smi_topo[0][0][0], PV_MAX_GPUS, sizeof r->smi_topo[0][0], 6);
    }
}

static void section_access(FILE *f, const pv_results *r, const int *ids, int n)
{
    fprintf(f, "\n== Peer access ==\n");
    fprintf(f, "cudaDeviceCanAccessPeer (row = GPU that accesses, column = peer):\n");
    char cells[PV_MAX_GPUS][PV_MAX_GPUS][8];
    for (int a = 0; a < PV_MAX_GPUS; a++)
        for (int b = 0; b < PV_MAX_GPUS; b++)
            snprintf(cells[a][b], 8, "%s", a == b ? "-" : yesno(r->can_access[a][b]));
    pv_fmt_str_matrix(f, "D\\D", n, ids, &cells[0][0][0], PV_MAX_GPUS, 8, 5);
    if (r->smi_ok) {
        fprintf(f, "nvidia-smi topo -p2p r (reads):\n");
        pv_fmt_str_matrix(f, "D\\D", n, ids, &r->smi_p2p_r[0][0][0], PV_MAX_GPUS, 8, 5);
        fprintf(f, "nvidia-smi topo -p2p w (writes):\n");
        pv_fmt_str_matrix(f, "D\\D", n, ids, &r->smi_p2p_w[0][0][0], PV_MAX_GPUS, 8, 5);
    } else {
        fprintf(f, "nvidia-smi topo -p2p: %s\n", r->smi_note[0] ? r->smi_note : "not available");
    }
}

static void section_integrity(FILE *f, const pv_results *r)
{
    fprintf(f, "\n== Integrity ==\n");
    if (!r->integrity_ran) {
        fprintf(f, "skipped (--no-integrity)\n");
        return;
    }
    fprintf(f, "pattern: seeded 64-bit hash of the byte offset (never 0x00), seed 0x%llx; destination poisoned\n"
               "with 0x00 first, every byte compared on the destination GPU plus 4 KiB guards on both sides;\n"
               "a failing region is re-read and re-checked on the host.\n",
            r->seed);
    fprintf(f, "sizes:");
    for (int s = 0; s < r->nsizes; s++) {
        char b[32];
        pv_fmt_size(r->sizes[s], b, sizeof b);
        fprintf(f, "%s %s", s ? "," : "", b);
    }
    fprintf(f, "; offsets (src+0 dst+0 len), (src+1 dst+3 len-1), (src+4093 dst+4 len+1); %d iteration%s\n",
            r->iters, r->iters == 1 ? "" : "s");
    if (r->self_test)
        fprintf(f, "SELF-TEST %s: corruption is injected after each copy of the largest size, before the check\n",
                pv_self_test_name(r->self_test));
    fprintf(f, "  %-12s %-30s %6s %14s  %s\n", "pair", "method", "copies", "bytes checked", "result");
    for (int k = 0; k < r->npairs; k++) {
        int i = r->pair_src[k], j = r->pair_dst[k];
        for (int m = 0; m < PV_M_COUNT; m++) {
            int copies = 0, bad = 0, skipped = 0, errs = 0;
            unsigned long long bytes = 0;
            const char *note = "";
            for (int t = 0; t < r->nint; t++) {
                const pv_int_result *x = &r->ints[t];
                if (x->src != i || x->dst != j || x->method != m)
                    continue;
                if (x->status == PV_INT_SKIPPED) {
                    skipped++;
                    note = x->note;
                    continue;
                }
                if (x->status == PV_INT_ERROR) {
                    errs++;
                    note = x->note;
                    continue;
                }
                copies++;
                bytes += x->len;
                if (x->status == PV_INT_CORRUPT)
                    bad++;
            }
            if (copies + skipped + errs == 0)
                continue;
            char pair[32], meth[48], by[32], res[200];
            snprintf(pair, sizeof pair, "GPU%d->GPU%d", i, j);
            if (m == PV_M_CE)
                snprintf(meth, sizeof meth, "cudaMemcpyPeerAsync (CE)");
            else if (m == PV_M_SM_STORE)
                snprintf(meth, sizeof meth, "sm-store (kernel on GPU%d)", i);
            else
                snprintf(meth, sizeof meth, "sm-load (kernel on GPU%d)", j);
            pv_fmt_bytes(bytes, by, sizeof by);
            if (errs)
                snprintf(res, sizeof res, "ERROR (%d): %s", errs, note);
            else if (bad)
                snprintf(res, sizeof res, "CORRUPT (%d of %d copies)", bad, copies);
            else if (skipped && !copies)
                snprintf(res, sizeof res, "SKIP: %s", note);
            else
                snprintf(res, sizeof res, "OK");
            fprintf(f, "  %-12s %-30s %6d %14s  %s\n", pair, meth, copies, by, res);
        }
    }
    int shown = 0, total = 0;
    for (int t = 0; t < r->nint; t++) {
        const pv_int_result *x = &r->ints[t];
        if (x->status != PV_INT_CORRUPT)
            continue;
        total++;
        if (shown >= 32)
            continue;
        char line[512];
        pv_format_corruption(x, line, sizeof line);
        fprintf(f, "%s\n", line);
        if (x->injected)
            fprintf(f, "    ^ self-test: %s injected at offset 0x%llx (%llu byte%s) - %s\n",
                    pv_self_test_name(r->self_test), (unsigned long long)x->inject_off, x->inject_len,
                    x->inject_len == 1 ? "" : "s",
                    x->first_bad == x->inject_off ? "caught at exactly that offset" : "caught");
        shown++;
    }
    if (total > shown)
        fprintf(f, "... %d more CORRUPTION results in the JSON output\n", total - shown);
    for (int t = 0; t < r->nint; t++) {
        const pv_int_result *x = &r->ints[t];
        if (x->injected && x->status != PV_INT_CORRUPT)
            fprintf(f, "SELF-TEST MISSED: GPU%d->GPU%d %s size=%llu: %s injected at 0x%llx was NOT detected\n",
                    x->src, x->dst, pv_method_name(x->method), x->size, pv_self_test_name(r->self_test),
                    (unsigned long long)x->inject_off);
    }
}

static void section_hazards(FILE *f, const pv_results *r)
{
    fprintf(f, "\n== Hazard tests ==\n");
    if (!r->hazards_ran) {
        if (r->cuda_error)
            fprintf(f, "not run (after a CUDA error)\n");
        else
            fprintf(f, "skipped (--no-hazards%s)\n", r->self_test && pv_self_test_hazard(r->self_test) < 0
                                                       ? ", implied by --self-test" : "");
        return;
    }
    fprintf(f, "GPUi->GPUj: GPU i is the peer, GPU j owns the memory; every byte (word, counter) is checked.\n"
               "  compressible: cuMemCreate with CU_MEM_ALLOCATION_COMP_GENERIC on the owner, cuMemMap, cuMemSetAccess\n"
               "    for the peer; the owner writes and the peer reads, the peer writes and both read; a host guard\n"
               "    (cudaHostAlloc) must stay unchanged. A CUDA error mapping it is 'refused' (no failure).\n"
               "  atomics: atomicAdd_system from both GPUs at once on counters in the owner's memory, where\n"
               "    cudaDevP2PAttrNativeAtomicSupported says 1; every counter must be exact.\n"
               "  ordering: the peer writes a block into the owner's memory, __threadfence_system(), then a flag\n"
               "    in pinned host memory; a kernel on the owner waits for the flag, then reads the block.\n"
               "  stale: allocation A mapped at a VA and read by the peer, unmapped and released, B mapped at the\n"
               "    same VA: the peer must read B's data, never A's.\n"
               "  managed: cudaMallocManaged, prefetched to the owner then the peer, read and written by kernels\n"
               "    on both (opt-in: --managed).\n");
    int hz_self = pv_self_test_hazard(r->self_test);
    if (hz_self >= 0)
        fprintf(f, "SELF-TEST %s: %s (%s test)\n", pv_self_test_name(r->self_test),
                pv_hz_inject_desc(r->self_test), pv_hz_name(hz_self));
    fprintf(f, "  %-12s %-13s %s\n", "pair", "test", "result");
    for (int k = 0; k < r->npairs; k++)
        for (int t = 0; t < PV_HZ_COUNT; t++) {
            const pv_hz_result *x = &r->hz[k][t];
            char pair[32], d[480];
            snprintf(pair, sizeof pair, "GPU%d->GPU%d", r->pair_src[k], r->pair_dst[k]);
            pv_hz_describe(x, d, sizeof d);
            fprintf(f, "  %-12s %-13s %s\n", pair, pv_hz_name(t), d);
            if (x->injected && x->status == PV_HZS_FAIL)
                fprintf(f, "    ^ self-test: %s injected (%s) - caught\n", pv_self_test_name(r->self_test),
                        pv_hz_inject_desc(r->self_test));
            else if (x->injected)
                fprintf(f, "SELF-TEST MISSED: %s %s: %s injected was NOT detected\n", pair, pv_hz_name(t),
                        pv_self_test_name(r->self_test));
        }
}

static void perf_block(FILE *f, const char *title, const int *ids, int n,
                       const double v[PV_MAX_GPUS][PV_MAX_GPUS], int decimals,
                       const pv_link lim[PV_MAX_GPUS][PV_MAX_GPUS], double factor, const char *limname)
{
    fprintf(f, "%s\n", title);
    pv_fmt_num_matrix(f, "D\\D", n, ids, v, decimals, 9, 0);
    if (lim) {
        fprintf(f, "  %% of %s\n", limname);
        pv_fmt_pct_matrix(f, "D\\D", n, ids, v, lim, factor, 9);
    }
}

static void section_perf(FILE *f, const pv_results *r, const int *ids, int n)
{
    fprintf(f, "\n== Bandwidth and latency ==\n");
    if (!r->perf_ran) {
        fprintf(f, "skipped (--no-perf%s)\n", r->self_test ? ", implied by --self-test" : "");
        return;
    }
    fprintf(f,
            "Measured like NVIDIA's p2pBandwidthLatencyTest: cudaMemcpyPeerAsync on the source GPU's stream,\n"
            "%llu B x %d copies per sample queued behind a spinning kernel, CUDA events, GB/s = 1e9 B/s;\n"
            "bidirectional: both directions at once on two streams, bytes of both counted; latency: %d copies\n"
            "of 16 B, GPU time per copy. Median of %d sample%s after one warm-up. P2P=Disabled: peer access\n"
            "off, the driver stages the copy through host memory. Diagonal: local copy (read+write counted).\n",
            r->perf_bytes, r->perf_repeat, r->lat_repeat, r->perf_reps, r->perf_reps == 1 ? "" : "s");
    if (r->perf_peer_off)
        fprintf(f, "--perf-peer-off: the P2P=Enabled matrices below were measured with peer access OFF (host\n"
                   "staging), a stand-in for P2P that takes the host path; they are not P2P figures.\n");
    perf_block(f, "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", ids, n, r->uni_on, 2, r->link,
               1.0, "link limit per direction (P2P path)");
    perf_block(f, "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", ids, n, r->uni_off, 2, r->pcie, 1.0,
               "PCIe limit per direction");
    perf_block(f, "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", ids, n, r->bi_on, 2, r->link, 2.0,
               "2x link limit per direction (P2P path)");
    perf_block(f, "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)", ids, n, r->bi_off, 2, r->pcie, 2.0,
               "2x PCIe limit per direction");
    perf_block(f, "P2P=Enabled Latency (P2P Writes) Matrix (us)", ids, n, r->lat_on, 2, NULL, 0, NULL);
    perf_block(f, "P2P=Disabled Latency Matrix (us)", ids, n, r->lat_off, 2, NULL, 0, NULL);
}

static void transports_line(FILE *f, const pv_results *r, const pv_nccl_run *run)
{
    /* group (src dev, dst dev, transport) -> number of channels */
    int printed = 0;
    int done[PV_NCCL_MAX_CONN] = {0};
    for (int k = 0; k < run->nconn; k++) {
        if (done[k])
            continue;
        const pv_nccl_conn *c = &run->conn[k];
        int cnt = 0;
        for (int q = k; q < run->nconn; q++) {
            const pv_nccl_conn *d = &run->conn[q];
            if (!done[q] && d->src_rank == c->src_rank && d->dst_rank == c->dst_rank &&
                strcmp(d->transport, c->transport) == 0) {
                done[q] = 1;
                cnt++;
            }
        }
        int a = (c->src_rank >= 0 && c->src_rank < r->nccl.ngpus) ? r->nccl.devs[c->src_rank] : -1;
        int b = (c->dst_rank >= 0 && c->dst_rank < r->nccl.ngpus) ? r->nccl.devs[c->dst_rank] : -1;
        fprintf(f, "    GPU%d->GPU%d via %s (%d channel connection%s)\n", a, b, c->transport, cnt,
                cnt == 1 ? "" : "s");
        printed++;
    }
    if (!printed)
        fprintf(f, "    (no 'Channel NN : a[x] -> b[y] via ...' lines found in NCCL's INFO log)\n");
}

static void section_nccl(FILE *f, const pv_results *r)
{
    const pv_nccl *nc = &r->nccl;
    fprintf(f, "\n== NCCL all-reduce ==\n");
    if (nc->state == PV_NCCL_NOT_RUN) {
        fprintf(f, "not run (%s)\n", nc->reason[0] ? nc->reason : "--no-nccl");
        return;
    }
    if (nc->state == PV_NCCL_SKIP) {
        fprintf(f, "SKIP: %s\n", nc->reason);
        return;
    }
    fprintf(f, "NCCL %d.%d.%d (%s); ncclCommInitAll over GPUs", nc->version / 10000, (nc->version / 100) % 100,
            nc->version % 100, nc->lib);
    for (int k = 0; k < nc->ngpus; k++)
        fprintf(f, "%s%d", k ? "," : " ", nc->devs[k]);
    fprintf(f, "; float sum, out-of-place;\n%d warm-up + %d timed iterations per size, host timer (as nccl-tests);"
               " busbw = algbw * 2(n-1)/n.\nEach phase runs in its own child process (NCCL reads its"
               " environment once); NCCL_NVLS_ENABLE=0.\n",
            nc->warmup, nc->iters);
    fprintf(f, "  %10s | %-33s | %-33s\n", "", "P2P allowed", "NCCL_P2P_DISABLE=1");
    fprintf(f, "  %10s | %10s %10s %11s | %10s %10s %11s\n", "size", "time(us)", "busbw", "result", "time(us)",
            "busbw", "result");
    int ns = nc->run[0].nsizes > nc->run[1].nsizes ? nc->run[0].nsizes : nc->run[1].nsizes;
    for (int s = 0; s < ns; s++) {
        unsigned long long bytes = s < nc->run[0].nsizes ? nc->run[0].bytes[s] : nc->run[1].bytes[s];
        char sz[32];
        pv_fmt_size(bytes, sz, sizeof sz);
        fprintf(f, "  %10s |", sz);
        for (int p = 0; p < 2; p++) {
            const pv_nccl_run *run = &nc->run[p];
            if (s < run->nsizes)
                fprintf(f, " %10.1f %10.2f %11s %s", run->time_us[s], run->busbw[s],
                        run->nbad[s] ? "WRONG" : "correct", p == 0 ? "|" : "");
            else
                fprintf(f, " %10s %10s %11s %s", "-", "-", "-", p == 0 ? "|" : "");
        }
        fputc('\n', f);
    }
    fprintf(f, "  (busbw in GB/s)\n");
    for (int p = 0; p < 2; p++) {
        const pv_nccl_run *run = &nc->run[p];
        fprintf(f, "  transports chosen by NCCL (%s):\n", p == 0 ? "P2P allowed" : "NCCL_P2P_DISABLE=1");
        if (!run->ran)
            fprintf(f, "    not run\n");
        else
            transports_line(f, r, run);
        if (run->ran && !run->ok)
            fprintf(f, "  ERROR (%s): %s\n", p == 0 ? "P2P allowed" : "NCCL_P2P_DISABLE=1", run->error);
    }
}

/* --resident and --peer-cap, when asked for */
static void section_room(FILE *f, const pv_results *r)
{
    const pv_resident *x = &r->resident;
    if (!x->asked && !r->peer_cap_ran)
        return;
    fprintf(f, "\n== Memory held and the legacy peer-access cap ==\n");
    if (x->asked) {
        fprintf(f, "--resident %s: held on each GPU before any test allocated its buffers%s\n", x->request,
                x->ok ? "" : " (not all of it)");
        for (int g = 0; g < r->ngpus; g++) {
            if (!x->held[g] && !x->free_before[g])
                continue;
            char held[32], fr[32], b1[32] = "?";
            pv_fmt_bytes(x->held[g], held, sizeof held);
            pv_fmt_bytes(x->free_before[g], fr, sizeof fr);
            if (r->gpu[g].bar1_bytes > 0)
                pv_fmt_bytes((unsigned long long)r->gpu[g].bar1_bytes, b1, sizeof b1);
            fprintf(f, "  GPU%d: %s held of %s free (BAR1 %s)%s\n", g, held, fr, b1,
                    r->gpu[g].bar1_bytes > 0 && x->held[g] >= (unsigned long long)r->gpu[g].bar1_bytes
                        ? ": at least BAR1's size, as the forks' RESIDENT_GB check"
                        : "");
        }
        if (x->error[0])
            fprintf(f, "  ERROR: %s\n", x->error);
    }
    if (r->peer_cap_ran) {
        fprintf(f, "--peer-cap: each GPU's memory taken in 1 GiB steps while the other GPUs of the run had peer "
                   "access to it (cudaDeviceEnablePeerAccess: CUDA maps every new allocation for them)\n");
        for (int k = 0; k < r->npeer_cap; k++) {
            char d[400];
            pv_peer_cap_describe(&r->peer_cap[k], r->gpu[r->peer_cap[k].owner].bar1_bytes, d, sizeof d);
            fprintf(f, "  %s (%.1f s)\n", d, r->peer_cap[k].seconds);
        }
    }
}

void pv_report_human(FILE *f, const pv_results *r, const pv_verdict *v)
{
    int ids[PV_MAX_GPUS];
    int n = pv_pair_gpus(r, ids);
    fprintf(f, "p2p-verify %s - GPU peer-to-peer verification (%s, host %s)\n", PV_VERSION, r->date, r->hostname);
    fprintf(f, "driver %s, CUDA driver API %d.%d, CUDA runtime %d.%d, %d GPU%s visible\n",
            r->driver_version[0] ? r->driver_version : "?", r->cuda_driver_api / 1000,
            (r->cuda_driver_api % 1000) / 10, r->cuda_runtime / 1000, (r->cuda_runtime % 1000) / 10, r->ngpus,
            r->ngpus == 1 ? "" : "s");
    if (r->ngpus >= 1) {
        if (n == 0) {
            for (int g = 0; g < r->ngpus; g++)
                ids[g] = g;
            n = r->ngpus;
        }
        section_topology(f, r, ids, n);
    }
    if (r->ngpus >= 2) {
        section_access(f, r, ids, n);
        section_integrity(f, r);
        section_hazards(f, r);
        section_perf(f, r, ids, n);
        section_nccl(f, r);
        section_room(f, r);
    }
    fprintf(f, "\n== VERDICT: %s (exit %d) ==\n", v->label, v->code);
    for (int k = 0; k < v->nreasons; k++)
        fprintf(f, "  - %s\n", v->reasons[k]);
    fprintf(f, "elapsed %.1f s\n", r->elapsed_s);
    fflush(f);
}

/* ---------------------------------------------------------------- JSON */

static void json_matrix(pv_json *j, const char *key, const int *ids, int n,
                        const double v[PV_MAX_GPUS][PV_MAX_GPUS], int decimals)
{
    pvj_arr(j, key);
    for (int a = 0; a < n; a++) {
        pvj_arr(j, NULL);
        for (int b = 0; b < n; b++)
            pvj_num(j, NULL, v[ids[a]][ids[b]], decimals);
        pvj_end_arr(j);
    }
    pvj_end_arr(j);
}

static void json_pct(pv_json *j, const char *key, const int *ids, int n, const double v[PV_MAX_GPUS][PV_MAX_GPUS],
                     const pv_link lim[PV_MAX_GPUS][PV_MAX_GPUS], double factor)
{
    pvj_arr(j, key);
    for (int a = 0; a < n; a++) {
        pvj_arr(j, NULL);
        for (int b = 0; b < n; b++) {
            double l = lim[ids[a]][ids[b]].gbps * factor;
            double x = v[ids[a]][ids[b]];
            if (a == b || l <= 0.0 || isnan(x))
                pvj_null(j, NULL);
            else
                pvj_num(j, NULL, 100.0 * x / l, 2);
        }
        pvj_end_arr(j);
    }
    pvj_end_arr(j);
}

/* json_bool_matrix: true/false per ordered pair; null on the diagonal and where unknown (< 0). */
static void json_bool_matrix(pv_json *j, const char *key, const int *ids, int n, const int v[PV_MAX_GPUS][PV_MAX_GPUS])
{
    pvj_arr(j, key);
    for (int a = 0; a < n; a++) {
        pvj_arr(j, NULL);
        for (int b = 0; b < n; b++) {
            int x = v[ids[a]][ids[b]];
            if (a == b || x < 0)
                pvj_null(j, NULL);
            else
                pvj_bool(j, NULL, x);
        }
        pvj_end_arr(j);
    }
    pvj_end_arr(j);
}

static void json_str_matrix(pv_json *j, const char *key, const int *ids, int n, const char *cells, size_t cellsz)
{
    pvj_arr(j, key);
    for (int a = 0; a < n; a++) {
        pvj_arr(j, NULL);
        for (int b = 0; b < n; b++)
            pvj_str(j, NULL, cells + ((size_t)ids[a] * PV_MAX_GPUS + (size_t)ids[b]) * cellsz);
        pvj_end_arr(j);
    }
    pvj_end_arr(j);
}

static const char *link_type(int t)
{
    return t == PV_LINK_PCIE ? "pcie" : (t == PV_LINK_NVLINK ? "nvlink" : "unknown");
}

static void json_link(pv_json *j, const char *key, const pv_link *l)
{
    pvj_obj(j, key);
    pvj_str(j, "type", link_type(l->type));
    if (l->gbps > 0)
        pvj_num(j, "limit_gbps_per_direction", l->gbps, 3);
    else
        pvj_null(j, "limit_gbps_per_direction");
    if (l->type == PV_LINK_PCIE) {
        pvj_int(j, "gen", l->gen);
        pvj_int(j, "width", l->width);
    } else if (l->type == PV_LINK_NVLINK) {
        pvj_int(j, "links", l->nlinks);
        pvj_num(j, "gbps_per_link_per_direction", l->per_link, 4);
    }
    pvj_str(j, "description", l->desc);
    pvj_end_obj(j);
}

static const char *int_status(int s)
{
    switch (s) {
    case PV_INT_OK: return "ok";
    case PV_INT_CORRUPT: return "corrupt";
    case PV_INT_SKIPPED: return "skipped";
    default: return "error";
    }
}

/* hazards: one object per selected ordered pair and test, and counts per status */
static void json_hazards(pv_json *j, const pv_results *r)
{
    pvj_obj(j, "hazards");
    pvj_bool(j, "ran", r->hazards_ran);
    pvj_bool(j, "managed_opt_in", r->managed);
    int hz_self = pv_self_test_hazard(r->self_test);
    pvj_str(j, "self_test", hz_self >= 0 ? pv_self_test_name(r->self_test) : NULL);
    pvj_arr(j, "tests");
    for (int t = 0; t < PV_HZ_COUNT; t++)
        pvj_str(j, NULL, pv_hz_name(t));
    pvj_end_arr(j);
    static const int order[] = {PV_HZS_PASS, PV_HZS_FAIL, PV_HZS_REFUSED, PV_HZS_NA, PV_HZS_SKIPPED, PV_HZS_ERROR};
    pvj_obj(j, "counts");
    for (size_t s = 0; s < sizeof order / sizeof order[0]; s++) {
        int c = 0;
        for (int k = 0; r->hazards_ran && k < r->npairs; k++)
            for (int t = 0; t < PV_HZ_COUNT; t++)
                c += r->hz[k][t].status == order[s];
        pvj_int(j, pv_hz_status_name(order[s]), c);
    }
    pvj_end_obj(j);
    pvj_arr(j, "results");
    for (int k = 0; r->hazards_ran && k < r->npairs; k++)
        for (int t = 0; t < PV_HZ_COUNT; t++) {
            const pv_hz_result *x = &r->hz[k][t];
            char d[480];
            pv_hz_describe(x, d, sizeof d);
            pvj_obj(j, NULL);
            pvj_int(j, "src", r->pair_src[k]);
            pvj_int(j, "dst", r->pair_dst[k]);
            pvj_str(j, "test", pv_hz_name(t));
            pvj_str(j, "status", pv_hz_status_name(x->status));
            pvj_str(j, "result", d);
            pvj_bool(j, "ran", x->ran);
            pvj_uint(j, "checked", x->checked);
            pvj_str(j, "checked_unit", t == PV_HZ_ATOMICS ? "updates" : "bytes");
            if (x->rounds)
                pvj_int(j, "rounds", x->rounds);
            pvj_num(j, "seconds", x->seconds, 3);
            if (x->status == PV_HZS_FAIL) {
                pvj_str(j, "step", x->what[0] ? x->what : NULL);
                pvj_uint(j, "bad", x->nbad);
                pvj_int(j, "first_bad", x->first_bad);
                pvj_uint(j, "expected", x->expected);
                pvj_uint(j, "found", x->found);
                if (t == PV_HZ_ATOMICS)
                    pvj_uint(j, "updates_lost", x->nalt);
                if (t == PV_HZ_STALE)
                    pvj_uint(j, "bad_bytes_of_a", x->nalt);
                if (t == PV_HZ_ORDERING || t == PV_HZ_STALE)
                    pvj_int(j, "round", x->round);
                if (t == PV_HZ_COMPRESSIBLE) {
                    pvj_uint(j, "guard_bad", x->guard_bad);
                    pvj_int(j, "guard_first_bad", x->guard_first);
                }
            }
            if (x->injected)
                pvj_bool(j, "injected", 1);
            if (x->note[0])
                pvj_str(j, "note", x->note);
            pvj_end_obj(j);
        }
    pvj_end_arr(j);
    pvj_end_obj(j);
}

/* "resident" (null unless --resident) and "peer_cap" (null unless --peer-cap) */
static void json_room(pv_json *j, const pv_results *r)
{
    const pv_resident *x = &r->resident;
    if (!x->asked) {
        pvj_null(j, "resident");
    } else {
        pvj_obj(j, "resident");
        pvj_str(j, "request", x->request);
        pvj_bool(j, "ok", x->ok);
        pvj_str(j, "error", x->error[0] ? x->error : NULL);
        pvj_arr(j, "gpus");
        for (int g = 0; g < r->ngpus; g++) {
            if (!x->held[g] && !x->free_before[g])
                continue;
            pvj_obj(j, NULL);
            pvj_int(j, "gpu", g);
            pvj_uint(j, "held_bytes", x->held[g]);
            pvj_uint(j, "free_before_bytes", x->free_before[g]);
            pvj_uint(j, "total_bytes", x->total[g]);
            if (r->gpu[g].bar1_bytes > 0)
                pvj_bool(j, "held_at_least_bar1", x->held[g] >= (unsigned long long)r->gpu[g].bar1_bytes);
            else
                pvj_null(j, "held_at_least_bar1");
            pvj_end_obj(j);
        }
        pvj_end_arr(j);
        pvj_end_obj(j);
    }
    if (!r->peer_cap_ran) {
        pvj_null(j, "peer_cap");
        return;
    }
    pvj_arr(j, "peer_cap");
    for (int k = 0; k < r->npeer_cap; k++) {
        const pv_peer_cap *c = &r->peer_cap[k];
        pvj_obj(j, NULL);
        pvj_int(j, "owner", c->owner);
        pvj_arr(j, "peers");
        for (int p = 0; p < c->npeers; p++)
            pvj_int(j, NULL, c->peers[p]);
        pvj_end_arr(j);
        pvj_str(j, "status", pv_peer_cap_status_name(c->status));
        pvj_uint(j, "mapped_bytes", c->mapped);
        pvj_uint(j, "limit_bytes", c->limit);
        pvj_str(j, "stopped_by", c->stopped_by[0] ? c->stopped_by : NULL);
        pvj_bool(j, "recovered", c->recovered);
        pvj_str(j, "note", c->note[0] ? c->note : NULL);
        pvj_num(j, "seconds", c->seconds, 2);
        pvj_end_obj(j);
    }
    pvj_end_arr(j);
}

int pv_report_json(FILE *f, const pv_results *r, const pv_verdict *v)
{
    pv_json j;
    pvj_init(&j, f);
    int ids[PV_MAX_GPUS];
    int n = pv_pair_gpus(r, ids);
    char buf[64];

    pvj_obj(&j, NULL);
    pvj_str(&j, "tool", "p2p-verify");
    pvj_str(&j, "version", PV_VERSION);
    pvj_int(&j, "schema", 1);
    pvj_str(&j, "date", r->date);
    pvj_str(&j, "host", r->hostname);
    pvj_str(&j, "command", r->argv_line);
    pvj_str(&j, "driver_version", r->driver_version[0] ? r->driver_version : NULL);
    snprintf(buf, sizeof buf, "%d.%d", r->cuda_driver_api / 1000, (r->cuda_driver_api % 1000) / 10);
    pvj_str(&j, "cuda_driver_api", r->cuda_driver_api ? buf : NULL);
    snprintf(buf, sizeof buf, "%d.%d", r->cuda_runtime / 1000, (r->cuda_runtime % 1000) / 10);
    pvj_str(&j, "cuda_runtime", r->cuda_runtime ? buf : NULL);

    pvj_arr(&j, "gpus");
    for (int g = 0; g < r->ngpus; g++) {
        const pv_gpu *d = &r->gpu[g];
        pvj_obj(&j, NULL);
        pvj_int(&j, "index", g);
        pvj_str(&j, "name", d->name);
        pvj_str(&j, "pci_bus_id", d->bus_id);
        snprintf(buf, sizeof buf, "%d.%d", d->cc_major, d->cc_minor);
        pvj_str(&j, "compute_capability", buf);
        pvj_uint(&j, "memory_bytes", d->mem_bytes);
        if (d->bar1_bytes > 0)
            pvj_int(&j, "bar1_bytes", d->bar1_bytes);
        else
            pvj_null(&j, "bar1_bytes");
        pvj_str(&j, "bar1_source", d->bar1_src[0] ? d->bar1_src : NULL);
        pvj_obj(&j, "pcie");
        if (d->gen_cur) pvj_int(&j, "gen_current", d->gen_cur); else pvj_null(&j, "gen_current");
        if (d->width_cur) pvj_int(&j, "width_current", d->width_cur); else pvj_null(&j, "width_current");
        if (d->gen_max) pvj_int(&j, "gen_max", d->gen_max); else pvj_null(&j, "gen_max");
        if (d->width_max) pvj_int(&j, "width_max", d->width_max); else pvj_null(&j, "width_max");
        pvj_str(&j, "source", d->link_src[0] ? d->link_src : NULL);
        pvj_end_obj(&j);
        if (d->nvlink_active >= 0) pvj_int(&j, "nvlink_active_links", d->nvlink_active);
        else pvj_null(&j, "nvlink_active_links");
        char ver[8];
        if (pv_nvml_nvlink_version(d->nvlink_version, ver, sizeof ver)) pvj_str(&j, "nvlink_version", ver);
        else pvj_null(&j, "nvlink_version");
        if (d->smi_index >= 0) pvj_int(&j, "nvidia_smi_index", d->smi_index);
        else pvj_null(&j, "nvidia_smi_index");
        pvj_end_obj(&j);
    }
    pvj_end_arr(&j);

    pvj_arr(&j, "matrix_gpus");
    for (int a = 0; a < n; a++)
        pvj_int(&j, NULL, ids[a]);
    pvj_end_arr(&j);

    json_bool_matrix(&j, "can_access_peer", ids, n, r->can_access);
    json_bool_matrix(&j, "native_atomics", ids, n, r->native_atomics);

    pvj_obj(&j, "nvidia_smi");
    pvj_bool(&j, "p2p_available", r->smi_ok);
    pvj_str(&j, "note", r->smi_note[0] ? r->smi_note : NULL);
    if (r->smi_ok) {
        json_str_matrix(&j, "p2p_read", ids, n, &r->smi_p2p_r[0][0][0], sizeof r->smi_p2p_r[0][0]);
        json_str_matrix(&j, "p2p_write", ids, n, &r->smi_p2p_w[0][0][0], sizeof r->smi_p2p_w[0][0]);
    }
    if (r->smi_topo_ok)
        json_str_matrix(&j, "topo", ids, n, &r->smi_topo[0][0][0], sizeof r->smi_topo[0][0]);
    pvj_end_obj(&j);

    pvj_arr(&j, "links");
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            pvj_obj(&j, NULL);
            pvj_int(&j, "gpu_a", ids[a]);
            pvj_int(&j, "gpu_b", ids[b]);
            json_link(&j, "p2p_path", &r->link[ids[a]][ids[b]]);
            json_link(&j, "pcie_path", &r->pcie[ids[a]][ids[b]]);
            pvj_end_obj(&j);
        }
    pvj_end_arr(&j);

    pvj_arr(&j, "pairs");
    for (int k = 0; k < r->npairs; k++) {
        pvj_arr(&j, NULL);
        pvj_int(&j, NULL, r->pair_src[k]);
        pvj_int(&j, NULL, r->pair_dst[k]);
        pvj_end_arr(&j);
    }
    pvj_end_arr(&j);

    /* integrity */
    pvj_obj(&j, "integrity");
    pvj_bool(&j, "ran", r->integrity_ran);
    snprintf(buf, sizeof buf, "0x%llx", r->seed);
    pvj_str(&j, "seed", buf);
    pvj_str(&j, "self_test", r->self_test ? pv_self_test_name(r->self_test) : NULL);
    pvj_bool(&j, "perf_peer_access_off", r->perf_peer_off);
    pvj_arr(&j, "sizes");
    for (int s = 0; s < r->nsizes; s++)
        pvj_uint(&j, NULL, r->sizes[s]);
    pvj_end_arr(&j);
    pvj_int(&j, "iterations", r->iters);
    int nok = 0, nbad = 0, nskip = 0, nerr = 0;
    for (int t = 0; t < r->nint; t++) {
        switch (r->ints[t].status) {
        case PV_INT_OK: nok++; break;
        case PV_INT_CORRUPT: nbad++; break;
        case PV_INT_SKIPPED: nskip++; break;
        default: nerr++;
        }
    }
    pvj_int(&j, "copies_ok", nok);
    pvj_int(&j, "copies_corrupt", nbad);
    pvj_int(&j, "copies_skipped", nskip);
    pvj_int(&j, "copies_error", nerr);
    pvj_arr(&j, "results");
    for (int t = 0; t < r->nint; t++) {
        const pv_int_result *x = &r->ints[t];
        pvj_obj(&j, NULL);
        pvj_int(&j, "src", x->src);
        pvj_int(&j, "dst", x->dst);
        pvj_str(&j, "method", pv_method_name(x->method));
        pvj_uint(&j, "size", x->size);
        pvj_uint(&j, "src_offset", x->src_off);
        pvj_uint(&j, "dst_offset", x->dst_off);
        pvj_uint(&j, "length", x->len);
        pvj_int(&j, "iteration", x->iter);
        pvj_str(&j, "status", int_status(x->status));
        if (x->status == PV_INT_CORRUPT) {
            pvj_int(&j, "first_bad_offset", x->first_bad);
            pvj_int(&j, "expected", x->expected);
            pvj_int(&j, "found", x->found);
            pvj_uint(&j, "bad_bytes", x->nbad);
            pvj_bool(&j, "host_confirmed", x->host_confirmed);
        }
        if (x->injected) {
            pvj_int(&j, "injected_offset", x->inject_off);
            pvj_uint(&j, "injected_length", x->inject_len);
        }
        if (x->note[0])
            pvj_str(&j, "note", x->note);
        pvj_end_obj(&j);
    }
    pvj_end_arr(&j);
    pvj_end_obj(&j);

    json_hazards(&j, r);
    json_room(&j, r);

    /* performance */
    pvj_obj(&j, "performance");
    pvj_bool(&j, "ran", r->perf_ran);
    if (r->perf_ran) {
        pvj_str(&j, "method", "p2pBandwidthLatencyTest: cudaMemcpyPeerAsync on the source GPU stream behind a "
                              "blocking kernel, CUDA events; P2P off = peer access disabled (staged via host)");
        pvj_uint(&j, "bytes_per_copy", r->perf_bytes);
        pvj_int(&j, "copies_per_sample", r->perf_repeat);
        pvj_int(&j, "latency_copies_per_sample", r->lat_repeat);
        pvj_int(&j, "samples_median_of", r->perf_reps);
        pvj_str(&j, "unit_bandwidth", "GB/s (1e9 B/s)");
        pvj_str(&j, "unit_latency", "us");
        json_matrix(&j, "unidirectional_p2p_on", ids, n, r->uni_on, 3);
        json_matrix(&j, "unidirectional_p2p_off", ids, n, r->uni_off, 3);
        json_matrix(&j, "bidirectional_p2p_on", ids, n, r->bi_on, 3);
        json_matrix(&j, "bidirectional_p2p_off", ids, n, r->bi_off, 3);
        json_matrix(&j, "latency_us_p2p_on", ids, n, r->lat_on, 3);
        json_matrix(&j, "latency_us_p2p_off", ids, n, r->lat_off, 3);
        json_pct(&j, "unidirectional_p2p_on_pct_of_limit", ids, n, r->uni_on, r->link, 1.0);
        json_pct(&j, "unidirectional_p2p_off_pct_of_pcie_limit", ids, n, r->uni_off, r->pcie, 1.0);
        json_pct(&j, "bidirectional_p2p_on_pct_of_limit", ids, n, r->bi_on, r->link, 2.0);
        json_pct(&j, "bidirectional_p2p_off_pct_of_pcie_limit", ids, n, r->bi_off, r->pcie, 2.0);
    }
    pvj_end_obj(&j);

    /* NCCL */
    const pv_nccl *nc = &r->nccl;
    pvj_obj(&j, "nccl");
    pvj_str(&j, "status", nc->state == PV_NCCL_RAN ? "ran" : (nc->state == PV_NCCL_SKIP ? "skip" : "not_run"));
    pvj_str(&j, "reason", nc->reason[0] ? nc->reason : NULL);
    if (nc->state == PV_NCCL_RAN) {
        snprintf(buf, sizeof buf, "%d.%d.%d", nc->version / 10000, (nc->version / 100) % 100, nc->version % 100);
        pvj_str(&j, "version", nc->version ? buf : NULL);
        pvj_str(&j, "library", nc->lib);
        pvj_arr(&j, "gpus");
        for (int k = 0; k < nc->ngpus; k++)
            pvj_int(&j, NULL, nc->devs[k]);
        pvj_end_arr(&j);
        pvj_int(&j, "warmup_iters", nc->warmup);
        pvj_int(&j, "iters", nc->iters);
        pvj_str(&j, "busbw_formula", "algbw * 2*(n-1)/n");
        pvj_arr(&j, "runs");
        for (int p = 0; p < 2; p++) {
            const pv_nccl_run *run = &nc->run[p];
            pvj_obj(&j, NULL);
            pvj_str(&j, "p2p", p == 0 ? "allowed" : "disabled (NCCL_P2P_DISABLE=1)");
            pvj_bool(&j, "ran", run->ran);
            pvj_bool(&j, "ok", run->ok);
            pvj_str(&j, "error", run->error[0] ? run->error : NULL);
            pvj_num(&j, "wall_s", run->wall_s, 3);
            pvj_arr(&j, "sizes");
            for (int s = 0; s < run->nsizes; s++) {
                pvj_obj(&j, NULL);
                pvj_uint(&j, "bytes", run->bytes[s]);
                pvj_num(&j, "time_us", run->time_us[s], 2);
                pvj_num(&j, "algbw_gbps", run->algbw[s], 3);
                pvj_num(&j, "busbw_gbps", run->busbw[s], 3);
                pvj_bool(&j, "correct", run->nbad[s] == 0);
                if (run->nbad[s]) {
                    pvj_uint(&j, "bad_elements", run->nbad[s]);
                    pvj_int(&j, "first_bad_element", run->first_bad[s]);
                    pvj_num(&j, "expected", run->expected[s], 3);
                    pvj_num(&j, "found", run->found[s], 3);
                }
                pvj_end_obj(&j);
            }
            pvj_end_arr(&j);
            pvj_arr(&j, "transports");
            for (int k = 0; k < run->nconn; k++) {
                const pv_nccl_conn *c = &run->conn[k];
                pvj_obj(&j, NULL);
                pvj_int(&j, "channel", c->channel);
                pvj_int(&j, "src_rank", c->src_rank);
                pvj_int(&j, "dst_rank", c->dst_rank);
                pvj_int(&j, "src_gpu", c->src_rank >= 0 && c->src_rank < nc->ngpus ? nc->devs[c->src_rank] : -1);
                pvj_int(&j, "dst_gpu", c->dst_rank >= 0 && c->dst_rank < nc->ngpus ? nc->devs[c->dst_rank] : -1);
                pvj_str(&j, "via", c->transport);
                pvj_end_obj(&j);
            }
            pvj_end_arr(&j);
            pvj_end_obj(&j);
        }
        pvj_end_arr(&j);
    }
    pvj_end_obj(&j);

    pvj_obj(&j, "verdict");
    pvj_int(&j, "exit_code", v->code);
    pvj_str(&j, "status", v->label);
    pvj_arr(&j, "reasons");
    for (int k = 0; k < v->nreasons; k++)
        pvj_str(&j, NULL, v->reasons[k]);
    pvj_end_arr(&j);
    pvj_end_obj(&j);
    pvj_str(&j, "cuda_error", r->cuda_error ? r->cuda_error_msg : NULL);
    pvj_num(&j, "elapsed_s", r->elapsed_s, 3);
    pvj_end_obj(&j);
    return pvj_finish(&j);
}
