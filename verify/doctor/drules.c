/* drules.c - p2p-doctor's rules (pure C).  See drules.h.
 *
 * Principles: an observation of the pair itself (CUDA's peer access, a
 * verification, the bandwidth with P2P on and off) outranks anything
 * inferred from the configuration; a finding is "certain" only when an
 * output shows it directly; where the outputs cannot show why a pair has no
 * P2P, the answer is insufficient-data with what to collect. */
#define _POSIX_C_SOURCE 200809L
#include "drules.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dparse.h"
#include "linklimits.h"
#include "sysparse.h"

const char *const dr_finding_ids[] = {
    "iommu-translated", "acs-redirect", "rebar-off", "bar1-unassigned", "bar1-smaller-than-vram",
    "bar1-as-large-as-vram", "static-bar1-missing", "static-bar1-peer-map-failed", "display-attached", "nvlink-bridged", "cross-root-complex", "link-degraded",
    "userspace-mismatch", "stock-module-loaded", "p2p-module-upgraded-not-loaded", "p2p-options-missing",
    "regkeys-wrong-generation",
    "chipset-not-supported", "mixed-gpu-models", "secure-boot-unsigned", "p2p-data-corruption",
    "insufficient-data", "driver-not-loaded", "gpu-init-failed", "nouveau-loaded", "virtual-machine",
    "p2p-slower-than-host", "p2p-latency-high", "nvlink-keep-failed", "test-output-cut",
    "verify-compressible-corrupt", "verify-atomics-lost", "verify-ordering", "verify-stale", "verify-managed", NULL};

/* p2p-verify's hazard tests (its --json "hazards"): a failed one is a finding
 * of its own, a symptom like p2p-data-corruption (no cause of missing P2P). */
#define DR_NHAZ 5
static const struct {
    const char *test, *id, *summary, *fix;
} k_hazard[DR_NHAZ] = {
    {"compressible", "verify-compressible-corrupt",
     "p2p-verify's compressible-memory test failed: memory allocated with CU_MEM_ALLOCATION_COMP_GENERIC and shared "
     "with the peer (cuMemSetAccess) held wrong data, or a write landed in host RAM",
     "keep compressible allocations away from P2P between these GPUs (allocate peer buffers without "
     "CU_MEM_ALLOCATION_COMP_GENERIC), or NCCL_P2P_DISABLE=1; please report it with the bundle of build.sh doctor "
     "--collect"},
    {"atomics", "verify-atomics-lost",
     "p2p-verify's atomics test failed: the driver reports native peer atomics, yet atomicAdd from both GPUs on the "
     "same counters lost updates",
     "do not use peer atomics between these GPUs (programs that do: NCCL_P2P_DISABLE=1, or no P2P); please report "
     "it with the bundle of build.sh doctor --collect"},
    {"ordering", "verify-ordering",
     "p2p-verify's ordering test failed: a kernel saw a flag in host memory before the data that the peer wrote "
     "ahead of it (with __threadfence_system() between)",
     "peer writes can arrive after a later flag: anything that hands data between GPUs through flags (NCCL among "
     "them) may read stale data; NCCL_P2P_DISABLE=1 until it is fixed; please report it with the bundle of build.sh "
     "doctor --collect"},
    {"stale", "verify-stale",
     "p2p-verify's stale-mapping test failed: after memory was unmapped and other memory mapped at the same address, "
     "the peer read wrong (or the old) data",
     "a peer keeps stale mappings: allocators that free and reuse memory (every framework's) can hand wrong data "
     "over P2P; NCCL_P2P_DISABLE=1 until it is fixed; please report it with the bundle of build.sh doctor --collect"},
    {"managed", "verify-managed",
     "p2p-verify's managed-memory test failed: memory from cudaMallocManaged, used by both GPUs, held wrong data",
     "do not share managed memory (cudaMallocManaged) between these GPUs with P2P on this driver; please report it "
     "with the bundle of build.sh doctor --collect"},
};

static int hazard_index(const char *test)
{
    for (int k = 0; k < DR_NHAZ; k++)
        if (!strcmp(k_hazard[k].test, test))
            return k;
    return -1;
}

static int is_hazard_id(const char *id)
{
    for (int k = 0; k < DR_NHAZ; k++)
        if (!strcmp(k_hazard[k].id, id))
            return 1;
    return 0;
}

const char *dr_verdict_name(int v)
{
    switch (v) {
    case DR_V_BAR1: return "p2p-bar1";
    case DR_V_NVLINK: return "p2p-nvlink";
    case DR_V_P2P: return "p2p";
    case DR_V_HOST: return "host-staged";
    case DR_V_NONE: return "not-possible";
    default: return "unknown";
    }
}

const char *dr_sev_name(int s)
{
    return s == DR_SEV_BLOCKS ? "blocks" : (s == DR_SEV_DEGRADES ? "degrades" : "info");
}

const char *dr_cert_name(int c)
{
    return c == DR_CERT_CERTAIN ? "certain" : (c == DR_CERT_LIKELY ? "likely" : "possible");
}

/* ------------------------------------------------------------ merging */

static int gpu_by_busid(dr_model *m, const char *b)
{
    for (int g = 0; g < m->ngpus; g++)
        if (m->gpus[g].busid[0] && !strcmp(m->gpus[g].busid, b))
            return g;
    return -1;
}

/* A record's index in its namespace among all GPUs: CUDA's through the
 * run's CUDA_VISIBLE_DEVICES where that was read. */
static int rec_index(const dr_grec *r)
{
    return r->ns == DR_NS_CUDA && r->cuda_abs >= 0 ? r->cuda_abs : r->index;
}

static int gpu_by_index(dr_model *m, int ns, int idx)
{
    for (int g = 0; g < m->ngpus; g++) {
        if (ns == DR_NS_SMI && m->gpus[g].smi_index == idx)
            return g;
        if (ns == DR_NS_CUDA && m->gpus[g].cuda_index == idx)
            return g;
    }
    return -1;
}

static int gpu_new(dr_model *m)
{
    if (m->ngpus >= DR_MAX_GPUS) {
        m->truncated_recs++;
        return -1;
    }
    int g = m->ngpus++;
    dr_gpu *x = &m->gpus[g];
    memset(x, 0, sizeof(*x));
    x->smi_index = x->cuda_index = -1;
    dr_num *n[] = {&x->vram_mib, &x->bar1_mib, &x->bar1_used_mib, &x->rebar_cur_mib, &x->rebar_max_mib,
                   &x->bar1_unassigned, &x->gen_cur, &x->gen_max, &x->gen_host_max, &x->gen_dev_max,
                   &x->width_cur, &x->width_max, &x->width_downgraded, &x->speed_downgraded, &x->display,
                   &x->boot_vga, &x->nvlinks, &x->numa, &x->virt_passthrough};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
        n[i]->v = -1;
    return g;
}

static int is_generic_name(const char *name)
{
    /* lspci without pci.ids: "NVIDIA Corporation Device 2684" */
    return !name[0] || strstr(name, "Device ") != NULL;
}

/* Same model, or a name unknown. */
static int same_model(const char *a, const char *b)
{
    if (is_generic_name(a) || is_generic_name(b))
        return 1;
    char ka[96], kb[96];
    dp_model_key(a, ka, sizeof ka);
    dp_model_key(b, kb, sizeof kb);
    size_t la = strlen(ka), lb = strlen(kb);
    int ta = la > 3 && !strcmp(ka + la - 3, "..."), tb = lb > 3 && !strcmp(kb + lb - 3, "...");
    if (ta)
        la -= 3;
    if (tb)
        lb -= 3;
    if (ta || tb) {
        size_t l = la < lb ? la : lb;
        return strncmp(ka, kb, l) == 0;
    }
    return strcmp(ka, kb) == 0;
}

static void gpu_take(dr_model *m, int g, const dr_grec *r)
{
    dr_gpu *x = &m->gpus[g];
    x->nrecs++;
    if (r->busid[0] && !x->busid[0])
        snprintf(x->busid, sizeof x->busid, "%s", r->busid);
    if (r->index >= 0 && r->ns == DR_NS_SMI && x->smi_index < 0)
        x->smi_index = r->index;
    if (r->index >= 0 && r->ns == DR_NS_CUDA) {
        int ci = rec_index(r), abs = r->cuda_abs >= 0;
        if (x->cuda_index < 0 || (abs && !x->cuda_abs)) {
            x->cuda_index = ci;
            x->cuda_abs = abs;
        } else if (x->cuda_index != ci && (r->busid[0] || abs) && !(x->cuda_abs && !abs)) {
            x->cuda_renumbered = 1;
        }
    }
    if (r->name[0] && !is_generic_name(r->name)) {
        /* names from nvidia-smi and CUDA before lspci's chip names */
        int lspci = !strcmp(r->src, "lspci");
        if (!x->name[0] || (is_generic_name(x->name)) || (strchr(x->name, '[') && !lspci)) {
            snprintf(x->name, sizeof x->name, "%s", r->name);
        } else {
            char k1[96], k2[96];
            dp_model_key(x->name, k1, sizeof k1);
            dp_model_key(r->name, k2, sizeof k2);
            size_t l1 = strlen(k1), l2 = strlen(k2);
            int trunc = (l1 > 3 && !strcmp(k1 + l1 - 3, "...")) || (l2 > 3 && !strcmp(k2 + l2 - 3, "..."));
            if (strcmp(k1, k2) != 0 && !trunc)
                x->name_conflict = 1;
        }
    }
#define TAKE(f)                                                                                                \
    do {                                                                                                       \
        if (x->f.v < 0 && r->f.v >= 0)                                                                         \
            x->f = r->f;                                                                                       \
    } while (0)
    TAKE(vram_mib);
    TAKE(bar1_mib);
    TAKE(bar1_used_mib);
    TAKE(rebar_cur_mib);
    TAKE(rebar_max_mib);
    TAKE(bar1_unassigned);
    TAKE(gen_cur);
    TAKE(gen_max);
    TAKE(gen_host_max);
    TAKE(gen_dev_max);
    TAKE(width_cur);
    TAKE(width_max);
    TAKE(width_downgraded);
    TAKE(speed_downgraded);
    TAKE(boot_vga);
    TAKE(nvlinks);
    TAKE(numa);
    TAKE(virt_passthrough);
#undef TAKE
    if (r->display.v == 1 || (x->display.v < 0 && r->display.v >= 0))
        x->display = r->display;
}

static int cmp_busid(const void *a, const void *b)
{
    const dr_gpu *x = *(dr_gpu *const *)a, *y = *(dr_gpu *const *)b;
    return strcmp(x->busid, y->busid);
}

/* nvidia-smi numbers GPUs in PCI order: with every GPU's address known and
 * as many nvidia-smi indices as GPUs, the missing indices follow from the
 * order, provided the known ones agree with it. */
static void smi_order(dr_model *m, int max_smi)
{
    if (max_smi < 0) {
        /* no nvidia-smi numbers at all: sysfs lists every NVIDIA GPU, so
         * nvidia-smi's would be the PCI order */
        int sysfs = 0;
        for (int r = 0; r < m->nrecs; r++)
            if (!strcmp(m->recs[r].src, "sysfs"))
                sysfs = 1;
        for (int g = 0; g < m->ngpus; g++)
            if (m->gpus[g].cuda_index >= 0)
                sysfs = 0;
        if (sysfs)
            max_smi = m->ngpus - 1;
    }
    if (m->ngpus == 0 || max_smi + 1 != m->ngpus)
        return;
    dr_gpu *v[DR_MAX_GPUS];
    for (int g = 0; g < m->ngpus; g++) {
        if (!m->gpus[g].busid[0])
            return;
        v[g] = &m->gpus[g];
    }
    qsort(v, (size_t)m->ngpus, sizeof v[0], cmp_busid);
    for (int i = 0; i < m->ngpus; i++)
        if (v[i]->smi_index >= 0 && v[i]->smi_index != i)
            return; /* another order (CUDA_VISIBLE_DEVICES, a partial list): no guessing */
    for (int i = 0; i < m->ngpus; i++)
        v[i]->smi_index = i;
}

/* CUDA's numbers (among all GPUs) of the GPUs known by address follow their
 * PCI order, as nvidia-smi's do. */
static int cuda_in_pci_order(const dr_model *m)
{
    for (int g = 0; g < m->ngpus; g++)
        for (int h = 0; h < m->ngpus; h++) {
            const dr_gpu *a = &m->gpus[g], *b = &m->gpus[h];
            if (!a->busid[0] || !b->busid[0] || !a->cuda_abs || !b->cuda_abs || a->cuda_index < 0 ||
                b->cuda_index < 0)
                continue;
            if ((a->cuda_index < b->cuda_index) != (strcmp(a->busid, b->busid) < 0) && g != h)
                return 0;
        }
    return 1;
}

/* GPUs that a CUDA program's device list names by bus address, without an
 * nvidia-smi number: a number alone (topo -m, nvidia-smi -L) may be any of
 * them (the PCI order places it only when every address is known,
 * smi_order). (An address from a kernel log alone does not count: it names
 * one GPU of many, and the numbered list stays the machine's.) */
static int smi_ambiguous(const dr_model *m)
{
    for (int g = 0; g < m->ngpus; g++)
        if (m->gpus[g].busid[0] && m->gpus[g].smi_index < 0 && m->gpus[g].cuda_index >= 0 &&
            !(m->gpus[g].cuda_abs && cuda_in_pci_order(m)))
            return 1;
    return 0;
}

static void unplaced(dr_model *m, const dr_grec *x)
{
    if (x->index + 1 > m->smi_unplaced)
        m->smi_unplaced = x->index + 1;
    if (!strstr(m->smi_unplaced_files, x->file)) {
        size_t l = strlen(m->smi_unplaced_files);
        snprintf(m->smi_unplaced_files + l, sizeof m->smi_unplaced_files - l, "%s%.40s", l ? ", " : "", x->file);
    }
}

/* The GPUs in nvidia-smi's order where it is known (those without a number
 * after, in the order they were found), the records following them. */
static void gpu_sort(dr_model *m)
{
    int order[DR_MAX_GPUS], where[DR_MAX_GPUS], n = 0;
    for (int i = 0; i < DR_MAX_GPUS; i++)
        for (int g = 0; g < m->ngpus; g++)
            if (m->gpus[g].smi_index == i)
                order[n++] = g;
    for (int g = 0; g < m->ngpus; g++)
        if (m->gpus[g].smi_index < 0 || m->gpus[g].smi_index >= DR_MAX_GPUS)
            order[n++] = g;
    dr_gpu *tmp = n == m->ngpus ? malloc(sizeof(dr_gpu) * (size_t)n) : NULL;
    if (!tmp)
        return; /* one nvidia-smi number on two GPUs (or no memory): left as found */
    for (int i = 0; i < n; i++) {
        tmp[i] = m->gpus[order[i]];
        where[order[i]] = i;
    }
    memcpy(m->gpus, tmp, sizeof(dr_gpu) * (size_t)n);
    free(tmp);
    for (int r = 0; r < m->nrecs; r++)
        if (m->rec_gpu[r] >= 0)
            m->rec_gpu[r] = where[m->rec_gpu[r]];
}

void dr_unify(dr_model *m)
{
    m->smi_unplaced = 0;
    m->smi_unplaced_files[0] = 0;
    m->ngpus = 0;
    int max_smi = -1;
    /* 1: records with a PCI address */
    for (int r = 0; r < m->nrecs; r++) {
        dr_grec *x = &m->recs[r];
        m->rec_gpu[r] = -1;
        if (x->anon || !x->busid[0])
            continue;
        int g = gpu_by_busid(m, x->busid);
        if (g < 0 && x->index >= 0)
            g = gpu_by_index(m, x->ns, rec_index(x));
        if (g >= 0 && m->gpus[g].busid[0] && strcmp(m->gpus[g].busid, x->busid) != 0)
            g = -1; /* same index, other address: other numbering */
        if (g < 0)
            g = gpu_new(m);
        if (g < 0)
            continue;
        m->rec_gpu[r] = g;
        gpu_take(m, g, x);
    }
    for (int r = 0; r < m->nrecs; r++)
        if (!m->recs[r].anon && !m->recs[r].busid[0] && m->recs[r].ns == DR_NS_SMI &&
            m->recs[r].index > max_smi)
            max_smi = m->recs[r].index;
    smi_order(m, max_smi);
    /* 2: records with an index only: same namespace first */
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < m->nrecs; r++) {
            dr_grec *x = &m->recs[r];
            if (x->anon || x->busid[0] || x->index < 0 || m->rec_gpu[r] >= 0)
                continue;
            int g = gpu_by_index(m, x->ns, rec_index(x));
            if (g < 0 && pass == 1 && x->ns == DR_NS_SMI) {
                /* a GPU known by address whose CUDA number is among all GPUs
                   (CUDA_VISIBLE_DEVICES read): nvidia-smi's number is taken as
                   equal where CUDA's order of the known GPUs is the PCI order */
                int h = gpu_by_index(m, DR_NS_CUDA, x->index);
                if (h >= 0 && m->gpus[h].cuda_abs && m->gpus[h].smi_index < 0 && m->gpus[h].busid[0] &&
                    same_model(m->gpus[h].name, x->name) && cuda_in_pci_order(m)) {
                    m->gpus[h].assumed_index = 1;
                    m->rec_gpu[r] = h;
                    gpu_take(m, h, x);
                    continue;
                }
            }
            if (g < 0 && pass == 1 && x->ns == DR_NS_SMI && smi_ambiguous(m)) {
                /* nvidia-smi's number of one of the GPUs known by address,
                   but which one cannot be told: not a GPU of its own */
                unplaced(m, x);
                continue;
            }
            if (g < 0 && pass == 1) {
                /* the other numbering, assumed equal (CUDA_DEVICE_ORDER) */
                int other = x->ns == DR_NS_SMI ? DR_NS_CUDA : DR_NS_SMI;
                g = gpu_by_index(m, other, x->index);
                /* only onto a GPU whose address is unknown (else its nvidia-smi
                 * index follows from the PCI order, or cannot be told) and of
                 * the same model */
                if (g >= 0 && ((x->ns == DR_NS_SMI && m->gpus[g].smi_index >= 0) ||
                               (x->ns == DR_NS_CUDA && m->gpus[g].cuda_index >= 0) || m->gpus[g].busid[0] ||
                               !same_model(m->gpus[g].name, x->name)))
                    g = -1;
                if (g >= 0)
                    m->gpus[g].assumed_index = 1;
                if (g < 0)
                    g = gpu_new(m);
            }
            if (g < 0)
                continue;
            m->rec_gpu[r] = g;
            gpu_take(m, g, x);
        }
    gpu_sort(m);
    /* one CUDA number on two GPUs: runs over different GPUs */
    for (int g = 0; g < m->ngpus; g++)
        for (int h = g + 1; h < m->ngpus; h++)
            if (m->gpus[g].cuda_index >= 0 && m->gpus[g].cuda_index == m->gpus[h].cuda_index)
                m->gpus[g].cuda_renumbered = m->gpus[h].cuda_renumbered = 1;
}

/* add_label LIST CAP LABEL: "a, b" lists of GPU or pair labels for notes;
 * ", ..." once when the next one does not fit. */
static void add_label(char *list, size_t cap, const char *label)
{
    size_t l = strlen(list);
    if (l + strlen(label) + 8 < cap)
        snprintf(list + l, cap - l, "%s%s", l ? ", " : "", label);
    else if (l + 5 < cap && (l < 3 || strcmp(list + l - 3, "...") != 0))
        snprintf(list + l, cap - l, ", ...");
}

/* GPU of an index in a namespace; the other numbering is tried (assumed). */
static int map_index(dr_model *m, int ns, int idx)
{
    int g = gpu_by_index(m, ns, idx);
    if (g < 0 && !(ns == DR_NS_SMI && m->smi_unplaced))
        g = gpu_by_index(m, ns == DR_NS_SMI ? DR_NS_CUDA : DR_NS_SMI, idx);
    return g;
}

/* GPU of an index as the output at E numbers it: each run of a CUDA program
 * numbers the GPUs it sees from 0 (CUDA_VISIBLE_DEVICES), so the device list
 * of that run (the last one above E in E's file that lists the index with a
 * bus address) decides; without one, the machine-wide numbering. */
static int map_index_at(dr_model *m, int ns, int idx, const dr_ev *e)
{
    int best = -1;
    for (int r = 0; e && e->line > 0 && r < m->nrecs; r++) {
        const dr_grec *x = &m->recs[r];
        if (x->anon || x->ns != ns || x->index != idx || (!x->busid[0] && x->cuda_abs < 0) || m->rec_gpu[r] < 0 ||
            x->line > e->line || strcmp(x->file, e->file) != 0)
            continue;
        if (best < 0 || x->line >= m->recs[best].line)
            best = r;
    }
    return best >= 0 ? m->rec_gpu[best] : map_index(m, ns, idx);
}

void dr_gpu_label(const dr_model *m, int g, char *out, size_t outlen)
{
    if (g < 0 || g >= m->ngpus) {
        snprintf(out, outlen, "a GPU");
        return;
    }
    const dr_gpu *x = &m->gpus[g];
    int smi_any = m->smi_unplaced > 0;
    for (int i = 0; i < m->ngpus; i++)
        if (m->gpus[i].smi_index >= 0)
            smi_any = 1;
    if (x->smi_index >= 0)
        snprintf(out, outlen, "GPU%d", x->smi_index);
    else if (x->cuda_index >= 0 && !x->cuda_renumbered)
        snprintf(out, outlen, smi_any ? "cuda%d" : "GPU%d", x->cuda_index);
    else if (x->busid[0])
        snprintf(out, outlen, "GPU %s", strncmp(x->busid, "0000:", 5) ? x->busid : x->busid + 5);
    else
        snprintf(out, outlen, "GPU?%d", g);
}

/* ------------------------------------------------------------ findings */

static dr_finding *finding(dr_diag *d, const char *id, int scope, int a, int b, int sev, int cert)
{
    for (int i = 0; i < d->nf; i++) {
        dr_finding *f = &d->f[i];
        if (!strcmp(f->id, id) && f->scope == scope && f->a == a && f->b == b) {
            if (cert > f->certainty)
                f->certainty = cert;
            if (sev > f->severity)
                f->severity = sev;
            return f;
        }
    }
    if (d->nf >= DR_MAX_FINDINGS)
        return NULL;
    dr_finding *f = &d->f[d->nf++];
    memset(f, 0, sizeof(*f));
    f->id = id;
    f->scope = scope;
    f->a = a;
    f->b = b;
    f->severity = sev;
    f->certainty = cert;
    return f;
}

static void f_ev(dr_finding *f, const dr_ev *e)
{
    if (!f || !e || e->line == 0)
        return;
    for (int i = 0; i < f->nev; i++)
        if (f->ev[i].line == e->line && !strcmp(f->ev[i].file, e->file))
            return;
    if (f->nev < DR_FIND_EV)
        f->ev[f->nev++] = *e;
}

static void f_text(char *dst, size_t cap, const char *fmt, ...)
{
    if (dst[0])
        return; /* the first wording stays */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

#define SUMMARY(f, ...) f_text((f)->summary, sizeof (f)->summary, __VA_ARGS__)
#define FIX(f, ...) f_text((f)->fix, sizeof (f)->fix, __VA_ARGS__)

static int has_finding(const dr_diag *d, const char *id)
{
    for (int i = 0; i < d->nf; i++)
        if (!strcmp(d->f[i].id, id))
            return 1;
    return 0;
}

/* ------------------------------------------------------------ pair observations */

typedef struct {
    int access;      /* -1 unknown, 0 no, 1 yes */
    int access_src;  /* 4 CUDA/verify, 3 p2pcap, 2 nccl, 1 bandwidth */
    dr_ev access_ev;
    char topo[24];
    dr_ev topo_ev;
    char p2pcap[24];
    dr_ev p2pcap_ev;
    int corrupt;     /* -1 unknown, 0 intact, 1 corrupt */
    dr_ev corrupt_ev;
    double bw_on, bw_off; /* best of uni/bi, GB/s; -1 */
    int bw_kind;
    int bw_hostpath; /* bw_off is nvbandwidth's host path, not a staged copy */
    dr_ev bw_ev;
    double lat_on, lat_off; /* latency with P2P on and off, us; -1 */
    dr_ev lat_ev;
    double limit; /* p2p-verify's limit of the P2P path, GB/s per direction; -1 */
    char limit_type[24];
    unsigned cap_ok; /* topo -p2p modes that report OK: 1 r, 2 w */
    int cap_bad;     /* a topo -p2p mode that reports anything else */
    int nccl_shm;    /* NCCL chose SHM (not P2P) with P2P allowed */
    unsigned hazard; /* p2p-verify hazard tests that failed (bit k: k_hazard[k]) */
    dr_ev hazard_ev[DR_NHAZ];
} pobs_sum;

typedef struct {
    dr_model *m;
    dr_diag *d;
    const dr_opts *o;
    pobs_sum *ps; /* [DR_MAX_GPUS][DR_MAX_GPUS] */
    int corrupt_unpaired;
    dr_ev corrupt_unpaired_ev;
    int new_keys; /* the module (or tag) numbers RMForceP2PType the 575 way: 1, 0 older, -1 unknown */
    int unexplained; /* a pair's state, or why P2P fails, cannot be told (exit 31) */
    int hazard_any;  /* a p2p-verify hazard test failed on some pair */
    char node_unmeasured[96]; /* pairs on a topo NODE path whose P2P nobody measured */
} ctx;

#define PS(c, a, b) (&(c)->ps[(size_t)(a) * DR_MAX_GPUS + (size_t)(b)])

static void set_access(pobs_sum *s, int v, int src, const dr_ev *e)
{
    if (src < s->access_src)
        return;
    if (src == s->access_src && s->access == 0 && v == 1)
        return; /* a "no" of the same kind of output stays */
    s->access = v;
    s->access_src = src;
    s->access_ev = *e;
}

/* A bandwidth or latency observation of a pair.  P2P clearly slower than
 * host staging (below 0.8 of it, the symptom's bound) means peer copies do
 * happen: a pair without peer access falls back to the very staged copy that
 * P2P=Disabled measures, so it cannot be much slower than itself; about as
 * fast means none do, unless another output says there is peer access.
 * nvbandwidth measures a pair only after CUDA enabled peer access between
 * them (its host path is no staged copy). */
static void sum_bw(pobs_sum *s, const dr_pobs *o)
{
    int hostpath = !strcmp(o->text, "nvbw");
    if (o->val == DR_BW_LAT) {
        if (o->x > 0 && (s->lat_on < 0 || o->x < s->lat_on)) {
            s->lat_on = o->x;
            s->lat_off = o->y;
            s->lat_ev = o->ev;
        }
        if (o->x > 0 && o->y > 0 && s->access_src <= 1 && o->x < 0.6 * o->y)
            set_access(s, 1, 1, &o->ev);
        return;
    }
    /* unidirectional figures first (they are what people compare), the best of them */
    int uni = o->val == DR_BW_UNI, had_uni = s->bw_kind == DR_BW_UNI;
    if ((uni && (!had_uni || o->x > s->bw_on)) || (!uni && !had_uni && o->x > s->bw_on)) {
        s->bw_on = o->x;
        s->bw_off = o->y;
        s->bw_kind = o->val;
        s->bw_hostpath = hostpath;
        s->bw_ev = o->ev;
    }
    if (hostpath && o->x > 0)
        set_access(s, 1, 4, &o->ev);
    if (o->x <= 0 || o->y <= 0 || hostpath)
        return;
    if (o->x > 1.3 * o->y || o->x < 0.8 * o->y)
        set_access(s, 1, 1, &o->ev);
    else if (o->x < 1.1 * o->y && s->access_src < 1)
        set_access(s, 0, 1, &o->ev);
}

static void summarize_pobs(ctx *c)
{
    dr_model *m = c->m;
    for (int a = 0; a < DR_MAX_GPUS; a++)
        for (int b = 0; b < DR_MAX_GPUS; b++) {
            pobs_sum *s = PS(c, a, b);
            memset(s, 0, sizeof(*s));
            s->access = s->corrupt = -1;
            s->bw_on = s->bw_off = s->lat_on = s->lat_off = s->limit = -1;
        }
    for (int i = 0; i < m->npobs; i++) {
        dr_pobs *o = &m->pobs[i];
        if (o->ns == DR_NS_NONE) {
            if (o->kind == DR_OBS_CORRUPT && o->val == 1 && m->sys.selftest.v != 1) {
                c->corrupt_unpaired = 1;
                c->corrupt_unpaired_ev = o->ev;
            }
            continue;
        }
        int a = map_index_at(m, o->ns, o->a, &o->ev), b = map_index_at(m, o->ns, o->b, &o->ev);
        if (a < 0 || b < 0 || a == b)
            continue;
        pobs_sum *s = PS(c, a, b);
        switch (o->kind) {
        case DR_OBS_ACCESS:
            set_access(s, o->val, 4, &o->ev);
            break;
        case DR_OBS_P2PCAP:
            if (!s->p2pcap[0] || strcmp(o->text, "OK") != 0) {
                snprintf(s->p2pcap, sizeof s->p2pcap, "%s", o->text);
                s->p2pcap_ev = o->ev;
            }
            if (!strcmp(o->text, "OK")) {
                set_access(s, 1, 3, &o->ev);
                s->cap_ok |= (o->val == 'r' || o->val == 'x' ? 1u : 0u) | (o->val == 'w' || o->val == 'x' ? 2u : 0u);
            } else {
                s->cap_bad = 1;
                if (strcmp(o->text, "U") != 0)
                    set_access(s, 0, 3, &o->ev);
            }
            break;
        case DR_OBS_TOPO:
            snprintf(s->topo, sizeof s->topo, "%s", o->text);
            s->topo_ev = o->ev;
            break;
        case DR_OBS_NCCL:
            if (!strcmp(o->text, "P2P") && !o->val)
                set_access(s, 1, 2, &o->ev);
            else if (!strcmp(o->text, "SHM") && !o->val)
                s->nccl_shm = 1;
            break;
        case DR_OBS_BW:
            sum_bw(s, o);
            break;
        case DR_OBS_LIMIT:
            s->limit = o->x;
            snprintf(s->limit_type, sizeof s->limit_type, "%s", o->text);
            break;
        case DR_OBS_HAZARD: {
            int k = hazard_index(o->text);
            if (m->sys.selftest.v == 1 || k < 0 || (s->hazard & (1u << k)))
                break;
            s->hazard |= 1u << k;
            s->hazard_ev[k] = o->ev;
            c->hazard_any = 1;
            break;
        }
        case DR_OBS_CORRUPT:
            if (m->sys.selftest.v == 1)
                break; /* p2p-verify --self-test: corruption was injected */
            if (o->val == 1 || s->corrupt < 0) {
                if (s->corrupt != 1) {
                    s->corrupt = o->val;
                    s->corrupt_ev = o->ev;
                }
            }
            break;
        }
    }
}

/* Every pair of GPU g observed with P2P and intact data (and at least one). */
static int pair_observed_ok(ctx *c, int a, int b);
static unsigned kinds_read(dr_model *m);

static int gpu_observed_ok(ctx *c, int g)
{
    int n = 0;
    for (int h = 0; h < c->m->ngpus; h++) {
        if (h == g)
            continue;
        pobs_sum *s1 = PS(c, g, h), *s2 = PS(c, h, g);
        if (s1->access == 0 || s2->access == 0 || s1->corrupt == 1 || s2->corrupt == 1)
            return 0;
        if (pair_observed_ok(c, g, h))
            n++;
    }
    return n > 0;
}

/* A failure in use (CUDA error in a P2P test) of this pair: 1, or -1 when
 * the failing pair is not named. */
static int pair_error(ctx *c, int a, int b)
{
    dr_sys *s = &c->m->sys;
    if (s->p2p_error.v != 1)
        return 0;
    if (s->p2p_error_a < 0)
        return -1;
    int x = map_index_at(c->m, DR_NS_CUDA, s->p2p_error_a, &s->p2p_error.ev),
        y = map_index_at(c->m, DR_NS_CUDA, s->p2p_error_b, &s->p2p_error.ev);
    return (x == a && y == b) || (x == b && y == a);
}

/* P2P slower than copies staged through host memory in this direction, with
 * peer copies known to happen: a symptom.  nvbandwidth's host path bounds
 * what staging could reach, so there P2P must be below half of it. */
static int dir_slow(const pobs_sum *s)
{
    double f = s->bw_hostpath ? 0.5 : 0.8;
    return s->access != 0 && s->bw_on > 0 && s->bw_off > 0 && s->bw_on < f * s->bw_off;
}

static int pair_slow(ctx *c, int a, int b)
{
    return dir_slow(PS(c, a, b)) || dir_slow(PS(c, b, a));
}

/* Peer access reported (not only inferred from timings), yet P2P's latency is
 * that of a round trip through host memory (0.6 of it or more), or above
 * 10 us: no direct path (direct PCIe or NVLink writes take a few us). */
static int dir_lat_high(const pobs_sum *s)
{
    return s->access == 1 && s->access_src >= 2 && s->lat_on > 0 &&
           ((s->lat_off > 0 && s->lat_on >= 0.6 * s->lat_off) || s->lat_on > 10);
}

static int pair_lat_high(ctx *c, int a, int b)
{
    return dir_lat_high(PS(c, a, b)) || dir_lat_high(PS(c, b, a));
}

static int pair_symptom(ctx *c, int a, int b)
{
    return pair_slow(c, a, b) || pair_lat_high(c, a, b);
}

/* Seen working: CUDA, NCCL or a bandwidth test moved data peer to peer (the
 * driver's own claim, topo -p2p OK, is not enough), nothing failed, and it
 * was not much slower than host staging. */
static int pair_observed_ok(ctx *c, int a, int b)
{
    pobs_sum *s1 = PS(c, a, b), *s2 = PS(c, b, a);
    int seen = (s1->access == 1 && s1->access_src != 3) || (s2->access == 1 && s2->access_src != 3);
    return seen && s1->access != 0 && s2->access != 0 && s1->corrupt != 1 && s2->corrupt != 1 &&
           pair_error(c, a, b) == 0 && !pair_symptom(c, a, b);
}

/* Every observed pair works and none fails (and some pair was observed). */
static int all_observed_ok(ctx *c)
{
    int n = 0;
    if (c->corrupt_unpaired || c->m->sys.nccl_wrong.v == 1 || c->m->sys.p2p_error.v == 1)
        return 0;
    for (int a = 0; a < c->m->ngpus; a++)
        for (int b = 0; b < c->m->ngpus; b++) {
            if (a == b)
                continue;
            pobs_sum *s = PS(c, a, b);
            if (s->access == 0 || s->corrupt == 1)
                return 0;
            if (pair_observed_ok(c, a, b))
                n++;
        }
    return n > 0;
}

/* A failure seen in use: no peer access, wrong data, CUDA errors, or P2P
 * slower than host staging (or without a direct path's latency). */
static int any_observed_fail(ctx *c)
{
    if (c->corrupt_unpaired || c->m->sys.nccl_wrong.v == 1 || c->m->sys.p2p_unavailable.v == 1 ||
        c->m->sys.simplep2p_failed.v == 1 || c->m->sys.p2p_error.v == 1)
        return 1;
    for (int a = 0; a < c->m->ngpus; a++)
        for (int b = 0; b < c->m->ngpus; b++)
            if (a != b && (PS(c, a, b)->access == 0 || PS(c, a, b)->corrupt == 1 || pair_symptom(c, a, b)))
                return 1;
    return 0;
}

/* ------------------------------------------------------------ module and keys */

static void module_facts(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    dr_diag *d = c->d;
    const char *v = NULL, *src = NULL;
    if (s->module_version[0]) {
        v = s->module_version;
        src = "/proc/driver/nvidia/version";
    } else if (s->loaded_version[0]) {
        v = s->loaded_version;
        src = "kernel log";
    } else if (s->smi_driver_version[0]) {
        v = s->smi_driver_version;
        src = "nvidia-smi";
    } else if (s->api_module[0]) {
        v = s->api_module;
        src = "kernel log (API mismatch)";
    }
    if (v) {
        snprintf(d->module_version, sizeof d->module_version, "%s", v);
        d->module_version_src = src;
    }
    const char *gen = c->o->preinstall && c->o->tag[0] ? c->o->tag : v;
    c->new_keys = gen ? (dp_vercmp(gen, "575") >= 0 ? 1 : 0) : -1;
    d->ours = -1;
    if (s->p2p_state_seen.v == 1) {
        if (!s->p2p_installed[0])
            d->ours = 0;
        else if (s->loaded_srcversion[0] && s->p2p_srcversion[0])
            d->ours = strcmp(s->loaded_srcversion, s->p2p_srcversion) == 0;
        else if (v)
            d->ours = dp_vercmp(v, s->p2p_installed) == 0;
    }
    /* nvidia-p2p-dkms moved to another version while the open module of the
     * old one stays loaded (no reboot since): dpkg shows our package at a
     * version other than the loaded open module's, and no other package of
     * NVIDIA kernel modules (Debian's nvidia-kernel-dkms, Ubuntu's
     * linux-modules-nvidia-*) that could have brought that module */
    d->p2p_pending[0] = '\0';
    if (!c->o->preinstall && d->ours == 0 && s->module_open.v == 1 && s->modinfo_proprietary.v != 1 && v &&
        s->p2p_deb.v == 1 && s->p2p_deb_version[0] && dp_vercmp(v, s->p2p_deb_version) != 0 &&
        s->other_kmod_packages.v == 0)
        snprintf(d->p2p_pending, sizeof d->p2p_pending, "%s", s->p2p_deb_version);
}

static long long key_val(const dr_regkeys *k, const char *name)
{
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->key[i], name))
            return k->val[i];
    return -1;
}

/* The keys that select BAR1 P2P, for the generation. */
static int keys_complete(const dr_regkeys *k, int new_keys, char *why, size_t whylen)
{
    long long force = key_val(k, "ForceP2P"), type = key_val(k, "RMForceP2PType");
    long long pcie = key_val(k, "RMPcieP2PType"), sb = key_val(k, "RMForceStaticBar1");
    why[0] = '\0';
    if (force < 0)
        snprintf(why, whylen, "ForceP2P is not set");
    else if (type < 0)
        snprintf(why, whylen, "RMForceP2PType is not set");
    else if (new_keys == 1 && pcie < 0)
        snprintf(why, whylen, "RMPcieP2PType is not set (575 and later need it for BAR1 P2P)");
    else if (new_keys == 1 && sb < 0)
        snprintf(why, whylen, "RMForceStaticBar1 is not set (its default is off from 575)");
    return why[0] == '\0';
}

static void rule_keys(ctx *c)
{
    dr_sys *s = &c->m->sys;
    dr_diag *d = c->d;
    const dr_regkeys *sets[2] = {&s->applied, &s->configured};
    const char *where[2] = {"in effect (/proc/driver/nvidia/params)", "configured (modprobe options)"};
    char ver[64];
    if (c->o->preinstall && c->o->tag[0])
        snprintf(ver, sizeof ver, "driver %s (to be installed)", c->o->tag);
    else
        snprintf(ver, sizeof ver, "driver %s", d->module_version[0] ? d->module_version : "?");
    for (int i = 0; i < 2; i++) {
        const dr_regkeys *k = sets[i];
        if (!k->present)
            continue;
        long long type = key_val(k, "RMForceP2PType"), pcie = key_val(k, "RMPcieP2PType");
        const char *bad = NULL;
        char buf[200];
        if (c->new_keys == 1 && type == 2)
            bad = "RMForceP2PType=2 meant BAR1 P2P before 575; from 575 on it selects NVLink, so PCIe peers "
                  "get no BAR1 P2P";
        else if (c->new_keys == 1 && type >= 3)
            bad = "RMForceP2PType=3 selects C2C from 575 on";
        else if (c->new_keys == 0 && type == 1)
            bad = "RMForceP2PType=1 selects the mailbox protocol before 575 (GeForce cards have none); "
                  "BAR1 P2P is 2 in this generation";
        else if (c->new_keys == 0 && pcie >= 0)
            bad = "RMPcieP2PType exists only from 575 on; this driver ignores it";
        else if (c->new_keys < 0 && pcie >= 0 && type == 2) {
            snprintf(buf, sizeof buf,
                     "RMPcieP2PType (575 and later) is set together with RMForceP2PType=2 (BAR1 only before 575, "
                     "NVLink from 575)");
            bad = buf;
        }
        if (!bad)
            continue;
        dr_finding *f = finding(d, "regkeys-wrong-generation", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
                                c->new_keys >= 0 ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
        if (!f)
            return;
        SUMMARY(f, "registry keys %s are of another driver generation for %s: %s", where[i], ver, bad);
        FIX(f, "use the keys of the driver's own generation: before 575 \"ForceP2P=0x11;RMForceP2PType=2\"; from "
               "575 on \"ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=1;RMForceStaticBar1=2\" (build.sh writes "
               "the family's own /etc/modprobe.d/nvidia-p2p.conf; the nvidia-p2p-dkms package ships "
               "/usr/lib/modprobe.d/nvidia-p2p.conf, which an /etc/modprobe.d/nvidia-p2p.conf overrides); then "
               "update-initramfs -u and reboot");
        f_ev(f, &k->ev);
    }
}

static void rule_options(ctx *c)
{
    dr_sys *s = &c->m->sys;
    dr_diag *d = c->d;
    if (c->o->preinstall || has_finding(d, "regkeys-wrong-generation"))
        return;
    char why[160];
    /* configured but not in effect */
    if (s->configured.present && s->applied.present && keys_complete(&s->configured, c->new_keys, why, sizeof why) &&
        !keys_complete(&s->applied, c->new_keys, why, sizeof why)) {
        dr_finding *f = finding(d, "p2p-options-missing", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "the P2P registry keys are configured but not in effect in the loaded module (%s): the "
                       "module was loaded before the options were written, or from an initramfs without them",
                    why);
            FIX(f, "sudo update-initramfs -u (dracut -f on Fedora), then reboot; "
                   "/proc/driver/nvidia/params must then show them under RegistryDwords");
            f_ev(f, &s->configured.ev);
            f_ev(f, &s->applied.ev);
        }
        return;
    }
    if (d->ours != 1)
        return; /* the forks set P2P in code: keys are ours only */
    const dr_regkeys *k = s->applied.present ? &s->applied : (s->configured.present ? &s->configured : NULL);
    if (k && keys_complete(k, c->new_keys, why, sizeof why))
        return;
    if (!k && !(s->p2p_state_seen.v == 1))
        return;
    dr_finding *f = finding(d, "p2p-options-missing", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
                            s->applied.present ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
    if (!f)
        return;
    SUMMARY(f, "the nvidia-p2p modules are loaded without the registry keys that select BAR1 P2P (%s); without "
               "them they behave like the stock driver",
            k ? why : "no NVreg_RegistryDwords found");
    FIX(f, "restore /etc/modprobe.d/nvidia-p2p.conf (sudo build.sh install <tag> writes it; with the "
           "nvidia-p2p-dkms package: /usr/lib/modprobe.d/nvidia-p2p.conf, or the copy in /etc/modprobe.d that "
           "overrides it), sudo update-initramfs -u, reboot");
    if (k)
        f_ev(f, &k->ev);
    f_ev(f, &s->p2p_installed_ev);
}

static void rule_module(ctx *c)
{
    dr_sys *s = &c->m->sys;
    dr_diag *d = c->d;
    dr_finding *f;
    if (s->module_rejected.v == 1) {
        f = finding(d, "secure-boot-unsigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "the kernel refused to load an unsigned (or wrongly signed) module: Secure Boot (kernel "
                       "lockdown) requires signatures by an enrolled key");
            f_ev(f, &s->module_rejected.ev);
            f_ev(f, &s->secure_boot.ev);
        }
    } else if (s->secure_boot.v == 1 && (s->modinfo_signed.v == 0 || s->insert_eperm.v == 1) &&
               s->unsigned_loaded.v != 1) {
        f = finding(d, "secure-boot-unsigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_LIKELY);
        if (f) {
            SUMMARY(f, "Secure Boot is enabled and the nvidia module %s", s->insert_eperm.v == 1
                                                                             ? "was refused (Operation not permitted)"
                                                                             : "is not signed: it will not load");
            f_ev(f, &s->secure_boot.ev);
            f_ev(f, &s->modinfo_signed.ev);
            f_ev(f, &s->insert_eperm.ev);
        }
    }
    if ((f = NULL, has_finding(d, "secure-boot-unsigned"))) {
        f = finding(d, "secure-boot-unsigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
        FIX(f, "sign the modules with an enrolled key: sudo build.sh install <tag> signs them (DKMS's key, or "
               "--sign-key/--sign-cert), then sudo mokutil --import /var/lib/dkms/mok.pub, reboot and enroll "
               "it in MOK Manager; or turn Secure Boot off");
    }
    if (s->driver_not_loaded.v == 1 && !c->o->preinstall) {
        f = finding(d, "driver-not-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "nvidia-smi cannot talk to the NVIDIA kernel module: it is not loaded (or failed to load)");
            FIX(f, "sudo modprobe nvidia and read its error (dmesg | grep -i nvrm); build.sh doctor names the cause "
                   "when the kernel log shows it");
            f_ev(f, &s->driver_not_loaded.ev);
        }
    }
    if (s->no_gpu_found.v == 1 && c->m->ngpus > 0 && s->init_failed.v != 1) {
        f = finding(d, "gpu-init-failed", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_LIKELY);
        if (f) {
            SUMMARY(f, "the driver found no usable GPU, although the outputs list %d", c->m->ngpus);
            FIX(f, "read the NVRM lines of dmesg (BAR assignment, RmInitAdapter, nouveau bound to the GPUs)");
            f_ev(f, &s->no_gpu_found.ev);
        }
    }
    if (s->init_failed.v == 1 || s->fell_off_bus.v == 1) {
        f = finding(d, "gpu-init-failed", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "a GPU failed in the driver (%s): it cannot take part in P2P",
                    s->fell_off_bus.v == 1 ? "it fell off the bus (Xid 79)" : "RmInitAdapter failed");
            FIX(f, "read the NVRM lines around it in dmesg; check power and seating, risers, and that BAR1 got "
                   "address space (bar1-unassigned)");
            f_ev(f, &s->init_failed.ev);
            f_ev(f, &s->fell_off_bus.ev);
        }
    }
    if (s->nouveau.v == 1) {
        f = finding(d, "nouveau-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "nouveau drives an NVIDIA GPU: the nvidia module cannot bind it");
            FIX(f, "blacklist nouveau (echo 'blacklist nouveau' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf), "
                   "sudo update-initramfs -u, reboot");
            f_ev(f, &s->nouveau.ev);
        }
    }
    /* userspace */
    if (s->api_mismatch.v == 1 || s->nvml_mismatch.v == 1) {
        f = finding(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            if (s->api_client[0])
                SUMMARY(f, "the userspace driver (%s) and the kernel module (%s) are different versions",
                        s->api_client, s->api_module);
            else
                SUMMARY(f, "the userspace driver (NVML%s%s) and the kernel module%s%s are different versions",
                        s->nuserspace ? " " : "", s->nuserspace ? s->userspace_versions[0] : "",
                        d->module_version[0] ? " " : "", d->module_version);
            f_ev(f, &s->api_mismatch.ev);
            f_ev(f, &s->nvml_mismatch.ev);
            f_ev(f, &s->userspace_ev);
        }
    } else if (d->module_version[0] && s->nuserspace > 0 && !c->o->preinstall) {
        for (int i = 0; i < s->nuserspace; i++) {
            char *u = s->userspace_versions[i];
            /* NVML prints "570.124": a prefix of the module's version matches */
            size_t ul = strlen(u);
            if (!strncmp(u, d->module_version, ul) &&
                (d->module_version[ul] == '\0' || d->module_version[ul] == '.'))
                continue;
            f = finding(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
            if (f) {
                SUMMARY(f, "userspace driver libraries %s beside kernel module %s", u, d->module_version);
                f_ev(f, &s->userspace_ev);
                f_ev(f, &s->module_version_ev);
            }
            break;
        }
    } else if (s->cuda_driver_mismatch.v == 1) {
        f = finding(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_LIKELY);
        if (f) {
            SUMMARY(f, "CUDA reports an unsupported display driver / CUDA driver combination");
            f_ev(f, &s->cuda_driver_mismatch.ev);
        }
    }
    if (has_finding(d, "userspace-mismatch") && d->p2p_pending[0]) {
        f = finding(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
        FIX(f, "reboot (or unload and reload the nvidia modules): nvidia-p2p-dkms %s is installed but %s is still "
               "loaded (p2p-module-upgraded-not-loaded)",
            d->p2p_pending, d->module_version);
    } else if (has_finding(d, "userspace-mismatch")) {
        f = finding(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
        FIX(f, "install the userspace driver of exactly the kernel module's version (NVIDIA's .run of %s with "
               "--no-kernel-modules; build.sh install does both), or build the modules of the userspace's version",
            s->api_module[0] ? s->api_module : (d->module_version[0] ? d->module_version : "that version"));
    }
    /* the loaded module */
    if (c->o->preinstall)
        return;
    const char *why = NULL;
    dr_ev *e1 = NULL, *e2 = NULL;
    if (s->module_open.v == 0) {
        why = "the loaded nvidia module is NVIDIA's proprietary one; the P2P patches exist for the open modules "
              "only";
        e1 = &s->module_open.ev;
    } else if (s->modinfo_proprietary.v == 1) {
        why = "modinfo shows the proprietary nvidia module (license NVIDIA); the P2P patches exist for the open "
              "modules only";
        e1 = &s->modinfo_proprietary.ev;
    } else if (d->p2p_pending[0]) {
        /* ours at another version, not loaded yet: not another driver */
        f = finding(d, "p2p-module-upgraded-not-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "nvidia-p2p-dkms was %s to %s; the open module %s is still loaded (no other NVIDIA kernel "
                       "module package is installed)",
                    dp_vercmp(d->p2p_pending, d->module_version) > 0 ? "upgraded" : "downgraded", d->p2p_pending,
                    d->module_version);
            FIX(f, "reboot (or unload and reload the modules: sudo modprobe -r nvidia_drm nvidia_modeset nvidia_uvm "
                   "nvidia && sudo modprobe nvidia); /proc/driver/nvidia/version then shows %s",
                d->p2p_pending);
            f_ev(f, &s->p2p_deb.ev);
            f_ev(f, &s->other_kmod_packages.ev);
            f_ev(f, &s->module_version_ev);
            f_ev(f, &s->loaded_version_ev);
        }
    } else if (d->ours == 0 && s->p2p_installed[0]) {
        why = "the loaded nvidia module is not the one nvidia-p2p installed";
        e1 = &s->p2p_installed_ev;
        e2 = &s->module_version_ev;
    }
    if (why) {
        f = finding(d, "stock-module-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "%s", why);
            if (s->other_kmod_packages.v == 1)
                FIX(f, "remove the other driver's kernel modules (installed: sudo apt-get purge %s), then sudo "
                       "build.sh install <tag> (or apt install nvidia-p2p-dkms), sudo update-initramfs -u and "
                       "reboot; lsmod and /proc/driver/nvidia/version then show the open module of that tag",
                    s->other_kmod_names);
            else
                FIX(f, "remove the other driver's kernel modules (its package, DKMS module or .run), then sudo "
                       "build.sh install <tag>, sudo update-initramfs -u and reboot; lsmod and "
                       "/proc/driver/nvidia/version then show the open module of that tag");
            f_ev(f, e1);
            f_ev(f, e2);
            f_ev(f, &s->other_kmod_packages.ev);
        }
    }
}

/* ------------------------------------------------------------ IOMMU */

static int busid_is_gpu(dr_model *m, const char *b, int *g)
{
    for (int i = 0; i < m->ngpus; i++)
        if (m->gpus[i].busid[0] && !strcmp(m->gpus[i].busid, b)) {
            if (g)
                *g = i;
            return 1;
        }
    /* same bus and device, another function (the GPU's audio): not the GPU */
    return 0;
}

static int gpu_addresses_known(dr_model *m)
{
    if (m->ngpus == 0)
        return 0;
    for (int g = 0; g < m->ngpus; g++)
        if (!m->gpus[g].busid[0])
            return 0;
    return 1;
}

/* Whether the IOMMU translates the GPUs' DMA: 1 (and what shows it), 0
 * (passthrough or off), -1 unknown. */
static int iommu_mode(ctx *c, dr_ev **me)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    int translated = -1;
    for (int i = 0; i < s->ngroup_type; i++)
        if (busid_is_gpu(m, s->group_type[i].busid, NULL) || !gpu_addresses_known(m)) {
            translated = (int)s->group_type[i].type;
            *me = &s->group_type[i].ev;
            if (translated)
                return 1;
        }
    if (translated >= 0)
        return translated;
    if (s->iommu_off.v == 1 || s->cmd_iommu_pt.v == 1 || s->iommu_translated.v == 0)
        return 0;
    if (s->iommu_translated.v == 1 && (s->iommu_present.v == 1 || s->cmd_iommu_on.v == 1)) {
        /* the default domain type is printed without IOMMU hardware too */
        *me = &s->iommu_translated.ev;
        return 1;
    }
    if (s->cmd_iommu_on.v == 1) {
        *me = &s->cmd_iommu_on.ev;
        return 1;
    }
    return -1;
}

static void rule_iommu(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    dr_diag *d = c->d;
    int gpu_fault = 0, other_fault = 0, unknown_fault = 0;
    dr_ev *fe = NULL;
    for (int i = 0; i < s->nfault_dev; i++) {
        if (busid_is_gpu(m, s->fault_dev[i], NULL)) {
            gpu_fault = 1;
            fe = &s->fault_dev_ev[i];
        } else if (gpu_addresses_known(m)) {
            other_fault = 1;
        } else {
            unknown_fault = 1;
            if (!fe)
                fe = &s->fault_dev_ev[i];
        }
    }
    if (s->iommu_fault.v > 0 && s->nfault_dev == 0) {
        unknown_fault = 1;
        fe = &s->iommu_fault.ev;
    }
    dr_ev *me = NULL;
    int translated = iommu_mode(c, &me);
    int faults = gpu_fault || unknown_fault;
    if (!faults && translated != 1) {
        if (other_fault)
            dr_note(m, "IOMMU faults in the kernel log name other devices than the GPUs: not counted against P2P");
        return;
    }
    if (!faults && all_observed_ok(c)) {
        dr_note(m, "the IOMMU translates DMA, and every observed GPU pair has working P2P anyway");
        return;
    }
    int cert = gpu_fault ? DR_CERT_CERTAIN
                         : ((unknown_fault || (translated == 1 && any_observed_fail(c))) ? DR_CERT_LIKELY
                                                                                         : DR_CERT_POSSIBLE);
    if (translated == 1 && !faults && (me == &s->cmd_iommu_on.ev || me == &s->iommu_translated.ev) &&
        !any_observed_fail(c))
        cert = DR_CERT_POSSIBLE;
    dr_finding *f = finding(d, "iommu-translated", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, cert);
    if (!f)
        return;
    if (faults)
        SUMMARY(f, "the IOMMU translates DMA and faulted on %s: peer writes into a GPU's BAR1 are blocked or land "
                   "in the wrong place (zeroed or NaN data, hangs)",
                gpu_fault ? "a GPU's accesses" : "device accesses");
    else
        SUMMARY(f, "the IOMMU translates DMA (not passthrough): BAR1 peer traffic then goes through the IOMMU, "
                   "which the P2P forks do not support (this series uses the peer's DMA address, untested there)");
    FIX(f, "boot with iommu=pt (add it to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, sudo update-grub, "
           "reboot), or turn the IOMMU (VT-d / AMD-Vi) off in the firmware");
    f_ev(f, fe);
    f_ev(f, me);
    f_ev(f, &s->iommu_fault.ev);
}

/* ------------------------------------------------------------ PCIe: ACS, links, topology */

static int bus_of(const char *busid, int *dom)
{
    unsigned d, b;
    if (sscanf(busid, "%x:%x", &d, &b) != 2)
        return -1;
    if (dom)
        *dom = (int)d;
    return (int)b;
}

static int bridge_above(const dr_bridge *br, const char *busid)
{
    int dg, db;
    int bus = bus_of(busid, &dg);
    if (bus < 0 || br->sec < 0 || br->sub < 0 || bus_of(br->busid, &db) < 0 || db != dg)
        return 0;
    return bus >= br->sec && bus <= br->sub;
}

/* The ACS control register's value in a setpci access of bridge br: -1 when
 * the device has no ACS capability, -2 when the access is not known to be
 * that register (a raw offset counts where lspci gave the capability's). */
static long acs_ctl(const dr_setpci *r, const dr_bridge *br)
{
    if (r->value < 0)
        return r->acs ? -1 : -2;
    int rel = r->acs ? r->reg : (br->acs_cap > 0 ? r->reg - br->acs_cap : -1);
    if (rel == 6 && r->width <= 2)
        return r->value;
    if (rel == 4 && r->width == 4)
        return r->value >> 16;
    return -2;
}

/* setpci's readings and writes of ACS control, onto the bridges, in the order
 * read: a write sets the state; a reading that disagrees with an earlier one
 * (lspci's ACSCtl, another paste) keeps the redirect and marks the conflict. */
static void apply_setpci(ctx *c)
{
    dr_model *m = c->m;
    for (int i = 0; i < m->nsetpci; i++) {
        dr_setpci *r = &m->setpci[i];
        int k = busid_is_gpu(m, r->busid, NULL) ? -1 : dr_bridge_get(m, r->busid);
        if (k < 0)
            continue;
        dr_bridge *br = &m->bridges[k];
        if (r->cap_off > 0 && br->acs_cap < 0)
            br->acs_cap = r->cap_off; /* setpci -v printed where the capability is */
        long ctl = acs_ctl(r, br);
        if (ctl == -2) {
            dr_note(m, "%s:%ld: setpci register 0x%x of %s is not known to be ACS control (lspci -vvv of that bridge "
                       "gives its ACS offset): not read",
                    r->ev.file, r->ev.line, r->reg, r->busid);
            continue;
        }
        int rr = ctl > 0 && (ctl & 4), cr = ctl > 0 && (ctl & 8);
        if (br->acs_seen && !r->write && (rr != br->req_redir || cr != br->cmplt_redir)) {
            br->acs_conflict = 1;
            rr |= br->req_redir;
            cr |= br->cmplt_redir;
        } else if (r->write) {
            br->acs_conflict = 0;
        }
        br->acs_seen = 1;
        br->req_redir = rr;
        br->cmplt_redir = cr;
        br->acs_ev = r->ev;
    }
}

static void rule_acs(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int ranges = 0;
    for (int i = 0; i < m->nbridges; i++)
        if (m->bridges[i].sec >= 0)
            ranges++;
    int computable = ranges > 0 && gpu_addresses_known(m);
    int found = 0;
    dr_ev *me = NULL;
    /* A root port's redirect sends peer requests into the root complex's
     * translation agent (the IOMMU) instead of across to the other root
     * port: harmless with the IOMMU off or in passthrough, a possible cause
     * where it translates or its mode is not known (field report 89). */
    int rp_counts = iommu_mode(c, &me) != 0;
    if (computable) {
        for (int a = 0; a < m->ngpus; a++)
            for (int b = a + 1; b < m->ngpus; b++) {
                if (pair_observed_ok(c, a, b))
                    continue;
                int sw = 0; /* a switch port's finding for the pair: its root ports are not named */
                for (int pass = 0; pass < 2; pass++)
                    for (int i = 0; i < m->nbridges; i++) {
                        dr_bridge *br = &m->bridges[i];
                        int ua = bridge_above(br, m->gpus[a].busid), ub = bridge_above(br, m->gpus[b].busid);
                        if (ua == ub || (br->type == 1) != pass || !(br->req_redir || br->cmplt_redir))
                            continue; /* not between them, not this pass's kind of port, or no redirect */
                        if (pass == 1 && (sw || !rp_counts))
                            continue; /* the pair's switch port is named; or the IOMMU off or in passthrough */
                        dr_finding *f = finding(d, "acs-redirect", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                                br->acs_conflict || pass == 1 ? DR_CERT_POSSIBLE : DR_CERT_LIKELY);
                        if (!f)
                            return;
                        const char *flags = br->req_redir && br->cmplt_redir ? "ReqRedir/CmpltRedir"
                                            : br->req_redir                  ? "ReqRedir"
                                                                             : "CmpltRedir";
                        const char *reread = br->acs_conflict ? " (lspci and setpci read its ACS control "
                                                                "differently: read it again)"
                                                              : "";
                        if (pass == 0) {
                            SUMMARY(f, "PCIe switch port %s between the two GPUs has ACS %s on: peer requests are "
                                       "sent up to the root complex instead of across the switch%s",
                                    br->busid, flags, reread);
                            FIX(f, "disable ACS on the switch ports (a firmware option on some boards; otherwise as "
                                   "root after each boot: setpci -s <port> ECAP_ACS+0x6.w=0000 for each port named "
                                   "here); with an IOMMU on, use iommu=pt");
                            sw = 1;
                        } else {
                            SUMMARY(f, "root port %s above GPU%d has ACS %s on: peer requests to the other "
                                       "GPU's root port are sent to the root complex's IOMMU, which blocks or "
                                       "misroutes them unless it is off or in passthrough%s",
                                    br->busid, ua ? a : b, flags, reread);
                            FIX(f, "boot with iommu=pt (or the IOMMU off); or disable ACS on the root ports above "
                                   "the GPUs (as root after each boot: setpci -s <port> ECAP_ACS+0x6.w=0000 for each "
                                   "port named here, or pci=noacs)");
                            f_ev(f, me);
                        }
                        f_ev(f, &br->acs_ev);
                        found = 1;
                    }
            }
    }
    if (found)
        return;
    int switch_redir = m->sys.acs_unknown_ctx.v == 1;
    for (int i = 0; i < m->nbridges; i++)
        if (m->bridges[i].type != 1 && (m->bridges[i].req_redir || m->bridges[i].cmplt_redir))
            switch_redir = 1;
    if (!computable && switch_redir && !all_observed_ok(c)) {
        dr_finding *f = finding(d, "acs-redirect", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
        if (!f)
            return;
        SUMMARY(f, "a PCIe bridge has ACS redirection on; whether it lies between the GPUs cannot be told without "
                   "the bus ranges (the whole sudo lspci -vvv, or lspci -tv) and the GPUs' addresses");
        FIX(f, "collect sudo lspci -vvv (build.sh doctor --collect) to see which ports are between the GPUs; "
               "disable ACS on those");
        for (int i = 0; i < m->nbridges; i++)
            if (m->bridges[i].req_redir || m->bridges[i].cmplt_redir)
                f_ev(f, &m->bridges[i].acs_ev);
        f_ev(f, &m->sys.acs_unknown_ctx.ev);
    }
}

/* PCIe generation the GPU itself supports, by its name (0 unknown). */
static int native_gen(const char *name)
{
    char k[96];
    dp_model_key(name, k, sizeof k);
    const char *p = strstr(k, "rtx ");
    if (p) {
        int num = atoi(p + 4);
        if (num >= 5000 && num < 6000)
            return 5;
        if (num >= 3000 && num < 5000)
            return 4;
    }
    if (strstr(k, "a6000") || strstr(k, "a5000") || strstr(k, "a100") || strstr(k, "ada"))
        return 4;
    if (strstr(k, "h100") || strstr(k, "h200") || strstr(k, "blackwell") || strstr(k, "b200"))
        return 5;
    return 0;
}

static void rule_links(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    char lab[48];
    for (int g = 0; g < m->ngpus; g++) {
        dr_gpu *x = &m->gpus[g];
        dr_gpu_label(m, g, lab, sizeof lab);
        dr_finding *f = NULL;
        if ((x->width_cur.v > 0 && x->width_max.v > 0 && x->width_cur.v < x->width_max.v) ||
            x->width_downgraded.v == 1) {
            f = finding(d, "link-degraded", DR_SCOPE_GPU, g, -1, DR_SEV_DEGRADES, DR_CERT_CERTAIN);
            if (f) {
                SUMMARY(f, "%s's PCIe link runs at x%lld of x%lld lanes: P2P bandwidth is cut in proportion", lab,
                        x->width_cur.v, x->width_max.v > 0 ? x->width_max.v : 16);
                f_ev(f, &x->width_cur.ev);
                f_ev(f, &x->width_downgraded.ev);
            }
        } else if (x->gen_host_max.v > 0 && x->gen_dev_max.v > 0 && x->gen_host_max.v < x->gen_dev_max.v) {
            f = finding(d, "link-degraded", DR_SCOPE_GPU, g, -1, DR_SEV_DEGRADES, DR_CERT_LIKELY);
            if (f) {
                SUMMARY(f, "%s's slot allows PCIe gen%lld, the GPU gen%lld: P2P bandwidth is limited by the slot", lab,
                        x->gen_host_max.v, x->gen_dev_max.v);
                f_ev(f, &x->gen_host_max.ev);
            }
        } else {
            int ng = native_gen(x->name);
            long long mx = x->gen_max.v;
            if (ng > 0 && mx > 0 && mx < ng) {
                f = finding(d, "link-degraded", DR_SCOPE_GPU, g, -1, DR_SEV_DEGRADES, DR_CERT_LIKELY);
                if (f) {
                    SUMMARY(f, "%s's link can train to PCIe gen%lld at most; the GPU supports gen%d (slot, riser or "
                               "firmware setting)",
                            lab, mx, ng);
                    f_ev(f, &x->gen_max.ev);
                }
            }
        }
        if (f)
            FIX(f, "use a slot wired x16 at the GPU's generation (the board manual's lane map), without risers or "
                   "bifurcation; check the firmware's PCIe speed setting (not forced to a lower gen)");
    }
}

/* A measurement of the pair's P2P against the path through host memory:
 * a bandwidth test with and without P2P, or a two-GPU NCCL all-reduce with
 * and without. */
static int pair_measured(ctx *c, int a, int b)
{
    const pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
    if ((s->bw_on > 0 && s->bw_off > 0) || (r->bw_on > 0 && r->bw_off > 0))
        return 1;
    const dr_busbw *on = &c->m->sys.nccl_bus[0], *off = &c->m->sys.nccl_bus[1];
    if (on->ngpus != 2 || off->ngpus != 2 || (on->avg <= 0 && on->peak <= 0) || (off->avg <= 0 && off->peak <= 0))
        return 0;
    int x = map_index_at(c->m, DR_NS_CUDA, on->dev[0], &on->ev), y = map_index_at(c->m, DR_NS_CUDA, on->dev[1], &on->ev);
    return (x == a && y == b) || (x == b && y == a);
}

/* A path between host bridges of one CPU (topo NODE), P2P possible on it,
 * and nothing measured: P2P there is slower than host memory on many CPUs
 * (NVIDIA/nccl#428: the NCCL maintainer's answer for a two-socket Intel box),
 * and fine on others, so the path alone is no finding; what would tell is
 * collected (rule_insufficient), and where it was measured the symptoms
 * judge it. */
static void node_unmeasured(ctx *c, int a, int b)
{
    char la[48], lb[48], pair[48];
    dr_gpu_label(c->m, a, la, sizeof la);
    dr_gpu_label(c->m, b, lb, sizeof lb);
    snprintf(pair, sizeof pair, "%.20s-%.20s", la, lb);
    add_label(c->node_unmeasured, sizeof c->node_unmeasured, pair);
}

static void rule_topology(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
            const char *topo = s->topo[0] ? s->topo : r->topo;
            const dr_ev *te = s->topo[0] ? &s->topo_ev : &r->topo_ev;
            /* chipset: CNS in topo -p2p */
            for (int k = 0; k < 2; k++) {
                pobs_sum *q = k ? r : s;
                if (!strcmp(q->p2pcap, "CNS")) {
                    dr_finding *f = finding(d, "chipset-not-supported", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                            DR_CERT_CERTAIN);
                    if (f) {
                        SUMMARY(f, "nvidia-smi topo -p2p reports CNS (chipset not supported): the driver's chipset "
                                   "allow-list refuses P2P here");
                        FIX(f, "ForceP2P=0x11 in NVreg_RegistryDwords overrides the chipset check (build.sh install "
                               "writes it); if it is in effect and CNS stays, the loaded module is not the patched one");
                        f_ev(f, &q->p2pcap_ev);
                    }
                }
            }
            if (!strcmp(topo, "NODE") && s->access != 0 && r->access != 0 && !pair_measured(c, a, b))
                node_unmeasured(c, a, b);
            if (pair_observed_ok(c, a, b))
                continue;
            int sys = !strcmp(topo, "SYS") || !strcmp(topo, "QPI");
            int tns = !strcmp(s->p2pcap, "TNS") || !strcmp(r->p2pcap, "TNS");
            int numa = m->gpus[a].numa.v >= 0 && m->gpus[b].numa.v >= 0 && m->gpus[a].numa.v != m->gpus[b].numa.v;
            if (sys || tns || (numa && !topo[0])) {
                dr_finding *f = finding(d, "cross-root-complex", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                        sys && s->access == 0 ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
                if (!f)
                    continue;
                SUMMARY(f, "the path between the two GPUs crosses the CPU interconnect (%s): PCIe P2P is not "
                           "supported across CPU sockets / root complexes on most platforms",
                        sys ? "topo SYS" : (tns ? "topo -p2p TNS" : "different NUMA nodes"));
                FIX(f, "put the GPUs that exchange data under the same CPU socket (or the same PCIe switch); use P2P "
                       "within each group");
                if (sys)
                    f_ev(f, te);
                if (tns)
                    f_ev(f, !strcmp(s->p2pcap, "TNS") ? &s->p2pcap_ev : &r->p2pcap_ev);
                if (numa) {
                    f_ev(f, &m->gpus[a].numa.ev);
                    f_ev(f, &m->gpus[b].numa.ev);
                }
            }
        }
}

static int pair_nvlink(ctx *c, int a, int b)
{
    pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
    const char *t = s->topo[0] ? s->topo : r->topo;
    if (t[0])
        return t[0] == 'N' && t[1] == 'V';
    /* no topo: nvlink -s on a two-GPU machine */
    if (c->m->ngpus == 2 && c->m->gpus[a].nvlinks.v > 0 && c->m->gpus[b].nvlinks.v > 0)
        return 1;
    return 0;
}

/* Options that force PCIe (BAR1) P2P for every pair: 1, none: 0, unknown -1. */
static int forced_pcie(ctx *c)
{
    dr_sys *s = &c->m->sys;
    const dr_regkeys *k = s->applied.present ? &s->applied : (s->configured.present ? &s->configured : NULL);
    if (!k)
        return -1;
    long long t = key_val(k, "RMForceP2PType");
    if (t < 0)
        return 0;
    if (c->new_keys == 1)
        return t == 1;
    /* before 575: 2 forces PCIe unless this series' p2p-0006 key keeps NVLink */
    if (c->new_keys == 0)
        return t == 2 && key_val(k, "RMBar1P2PKeepNvlink") != 1;
    return -1;
}

static void rule_nvlink(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int forced = forced_pcie(c);
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            if (!pair_nvlink(c, a, b))
                continue;
            pobs_sum *s = PS(c, a, b);
            double on = s->bw_on;
            int slow = on > 0 && ((s->bw_kind == DR_BW_UNI && on < 35) || (s->bw_kind == DR_BW_BI && on < 70));
            int fast = on > 0 && !slow;
            if (fast && forced != 1)
                continue;
            /* options known not to force PCIe (575+: RMForceP2PType=0; before 575:
               RMBar1P2PKeepNvlink=1): nothing to say unless slow */
            if (!slow && forced == 0)
                continue;
            int cert = forced == 1 || slow ? (forced == 1 ? DR_CERT_CERTAIN : DR_CERT_LIKELY) : DR_CERT_POSSIBLE;
            dr_finding *f = finding(d, "nvlink-bridged", DR_SCOPE_PAIR, a, b, DR_SEV_DEGRADES, cert);
            if (!f)
                continue;
            if (forced == 1)
                SUMMARY(f, "this pair has an NVLink bridge, but RMForceP2PType forces PCIe (BAR1) P2P for every "
                           "pair: NVLink (about 56 GB/s per direction on RTX 3090) goes unused");
            else if (slow)
                SUMMARY(f, "this pair has an NVLink bridge, but its P2P bandwidth (%.1f GB/s) is PCIe's: the driver "
                           "does not use NVLink for it",
                        on);
            else
                SUMMARY(f, "this pair has an NVLink bridge; BAR1 P2P options (and the P2P forks) force PCIe for every "
                           "pair, which leaves NVLink unused");
            if (c->new_keys == 1)
                FIX(f, "575 and later: RMForceP2PType=0 in NVreg_RegistryDwords (build.sh install --nvlink keep, the "
                       "default there) gives this pair NVLink and every pair without a bridge BAR1 P2P; then "
                       "update-initramfs -u and reboot");
            else
                FIX(f, "before 575 BAR1 P2P (RMForceP2PType=2) turns NVLink off for every pair; the modules of "
                       "build.sh (patch p2p-0006) add RMBar1P2PKeepNvlink=1 to NVreg_RegistryDwords (build.sh install "
                       "--nvlink keep, the default), which gives this pair NVLink and every pair without a bridge "
                       "BAR1 P2P; then update-initramfs -u and reboot. Stock or fork modules have no such key: "
                       "without RMForceP2PType they pick NVLink where a bridge exists but pairs without one lose "
                       "BAR1 P2P");
            f_ev(f, s->topo[0] ? &s->topo_ev : &PS(c, b, a)->topo_ev);
            f_ev(f, &m->gpus[a].nvlinks.ev);
            if (slow)
                f_ev(f, &s->bw_ev);
            if (forced == 1)
                f_ev(f, m->sys.applied.present ? &m->sys.applied.ev : &m->sys.configured.ev);
        }
}

/* ------------------------------------------------------------ BAR1, display, models */

/* The BAR1 checks of one GPU: a merged one (g >= 0), or a record without
 * identity (an excerpt of nvidia-smi -q), reported machine-wide. */
typedef struct {
    int g;
    char label[96];
    const char *busid;
    const dr_num *unassigned, *bar1, *vram, *rmax;
} bar1_view;

/* The driver version that matters: the tag about to be installed, or the
 * loaded module's; NULL when neither is known. */
static const char *driver_version(ctx *c)
{
    const char *v = c->o->preinstall && c->o->tag[0] ? c->o->tag : c->d->module_version;
    return v && v[0] ? v : NULL;
}

/* BAR1 holds VRAM, but with less than 1 GiB to spare (16 GiB RTX 5060 Ti /
 * 5070 Ti, 32 GiB RTX 5090; nvidia-smi's VRAM is a little below the FB size):
 * from 565 on RM's static BAR1 check counts all of FB plus reservations and
 * refuses it (docs/how-it-works.md, Mixed boxes), so BAR1 P2P has no static mapping for it
 * unless RMForceStaticBar1=1 is set for that GPU. */
static void bar1_as_large_as_vram(ctx *c, const bar1_view *x, long long bar1, long long vram)
{
    const char *v = driver_version(c);
    if (bar1 - vram >= 1024 || (v && dp_vercmp(v, "565") < 0))
        return;
    if (x->g >= 0 && gpu_observed_ok(c, x->g))
        return;
    dr_finding *f = finding(c->d, "bar1-as-large-as-vram", x->g >= 0 ? DR_SCOPE_GPU : DR_SCOPE_MACHINE, x->g, -1,
                            DR_SEV_BLOCKS, v ? DR_CERT_LIKELY : DR_CERT_POSSIBLE);
    if (!f)
        return;
    SUMMARY(f, "%s's BAR1 (%lld MiB) is about as large as its VRAM (%lld MiB): %s RM maps VRAM statically into BAR1 "
               "(what BAR1 P2P needs) only when BAR1 also holds its reservations, so this GPU gets no static "
               "mapping and no BAR1 P2P",
            x->label, bar1, vram, v ? "in this driver" : "from driver 565 on");
    FIX(f, "opt in for this GPU: build.sh install <tag> --force-static-bar1 %s (RMForceStaticBar1=1 for it alone; "
           "refused for a display GPU; docs/how-it-works.md, Mixed boxes), or, for a GPU that drivers 535-560 support (not RTX "
           "50), one of those, whose check fits it",
        x->busid[0] ? x->busid : "<its PCI address>");
    f_ev(f, &x->bar1->ev);
    f_ev(f, &x->vram->ev);
}

/* BAR1 at its largest and below VRAM (48 GB RTX 4090 D with 32 GiB): no
 * static BAR1. With this project's modules from 580.65.06 on (p2p-0014) its
 * pairs with GPUs that lack static BAR1 too take a BAR1 window per shared
 * allocation; before that (p2p-0007), and with other modules, it has no BAR1
 * P2P. Says which route applies, with the window limits. */
static void bar1_smaller_than_vram(ctx *c, const bar1_view *x, long long bar1, long long vram, long long rmax)
{
    const char *v = driver_version(c);
    int ours = (c->o->preinstall && c->o->tag[0]) || c->d->ours == 1;
    int windows = v && ours && dp_vercmp(v, "580.65.06") >= 0;
    int scope = x->g >= 0 ? DR_SCOPE_GPU : DR_SCOPE_MACHINE;
    long long budget = bar1 > 64 ? bar1 - 64 : 0;
    dr_finding *f = finding(c->d, "bar1-smaller-than-vram", scope, x->g, -1, windows ? DR_SEV_DEGRADES : DR_SEV_BLOCKS,
                            rmax > 0 ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
    if (!f)
        return;
    if (windows) {
        SUMMARY(f, "%s's BAR1 (%lld MiB) is smaller than its VRAM (%lld MiB)%s: no static BAR1 mapping, so its pairs "
                   "take BAR1 windows (p2p-0014), one per allocation a peer maps: at most %lld MiB of its memory is "
                   "shared with peers at a time, and no single allocation above that",
                x->label, bar1, vram, rmax > 0 ? " and already at the largest size it offers" : "", budget);
        FIX(f, "pair it only with GPUs that lack static BAR1 too (mixed pairs get no P2P); share through cuMem "
               "(NCCL, PyTorch 2.8+), not cudaDeviceEnablePeerAccess (maps every allocation: stops near %lld MiB); "
               "NCCL_LOCAL_REGISTER=0 NCCL_GRAPH_REGISTER=0, NCCL_P2P_LEVEL=SYS across host bridges; refusals "
               "are logged as \"BAR1 P2P window:\" (docs/bar1-windows.md)",
            budget);
    } else {
        SUMMARY(f, "%s's BAR1 (%lld MiB) is smaller than its VRAM (%lld MiB)%s: the static BAR1 mapping BAR1 P2P "
                   "needs is impossible for it",
                x->label, bar1, vram, rmax > 0 ? " and already at the largest size it offers" : "");
        FIX(f, "%s", v && ours
                         ? "this driver (before 580.65.06) reports no P2P for this GPU's pairs (patch p2p-0007): "
                           "build.sh install of a tag from 580.65.06 on gives them BAR1 windows (p2p-0014, "
                           "docs/bar1-windows.md), or pair GPUs whose BAR1 covers VRAM"
                         : "this project's modules from 580.65.06 on give its pairs BAR1 windows, one per shared "
                           "allocation (p2p-0014, docs/bar1-windows.md); older ones (p2p-0007) report no P2P for its "
                           "pairs; with other modules leave it out of P2P (CUDA_VISIBLE_DEVICES)");
    }
    f_ev(f, &x->bar1->ev);
    f_ev(f, &x->vram->ev);
    f_ev(f, &x->rmax->ev);
}

static void bar1_one(ctx *c, const bar1_view *x)
{
    dr_sys *s = &c->m->sys;
    dr_diag *d = c->d;
    int scope = x->g >= 0 ? DR_SCOPE_GPU : DR_SCOPE_MACHINE;
    const char *lab = x->label;
    dr_finding *f;
    int unassigned = x->unassigned->v == 1;
    const dr_ev *ue = &x->unassigned->ev;
    for (int i = 0; i < s->nbar1_invalid; i++)
        if (x->busid[0] && !strcmp(s->bar1_invalid[i].busid, x->busid)) {
            unassigned = 1;
            ue = &s->bar1_invalid[i].ev;
        }
    for (int i = 0; i < s->nnospace; i++)
        if (x->busid[0] && !strcmp(s->nospace[i].busid, x->busid) && s->nospace[i].bar == 1) {
            unassigned = 1;
            ue = &s->nospace[i].ev;
        }
    if (unassigned) {
        f = finding(d, "bar1-unassigned", scope, x->g, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "%s's BAR1 got no address space: the firmware (or the kernel) found no MMIO window large "
                       "enough for it",
                    lab);
            f_ev(f, ue);
        }
        return;
    }
    long long bar1 = x->bar1->v, vram = x->vram->v, rmax = x->rmax->v;
    if (bar1 > 0 && vram > 0 && bar1 >= vram) {
        bar1_as_large_as_vram(c, x, bar1, vram);
        return;
    }
    if (bar1 <= 0)
        return;
    if (bar1 <= 256 || (rmax > bar1 && (vram <= 0 || bar1 < vram))) {
        f = finding(d, "rebar-off", scope, x->g, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (!f)
            return;
        if (rmax > 0 && rmax <= 256)
            SUMMARY(f, "%s's BAR1 is %lld MiB and its VBIOS offers no larger size: the card's firmware lacks "
                       "Resizable BAR",
                    lab, bar1);
        else
            SUMMARY(f, "%s's BAR1 is %lld MiB%s: Resizable BAR is not in effect, so BAR1 cannot map VRAM", lab, bar1,
                    vram > 0 ? " (less than its VRAM)" : "");
        FIX(f, "%s", rmax > 0 && rmax <= 256
                         ? "update the GPU's VBIOS to one with Resizable BAR (the board maker's tool), then enable "
                           "Resizable BAR and Above 4G decoding in the firmware"
                         : "enable Above 4G decoding and Resizable BAR in the firmware (CSM off); "
                           "NVreg_EnableResizableBar=1 lets the driver resize BAR1 where the firmware allows it");
        f_ev(f, &x->bar1->ev);
        f_ev(f, &x->rmax->ev);
        f_ev(f, &s->rebar_failed.ev);
        f_ev(f, &s->rebar_option_applied.ev);
    } else if (vram > 0) {
        bar1_smaller_than_vram(c, x, bar1, vram, rmax);
    }
}

static void rule_bar1(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    dr_diag *d = c->d;
    dr_finding *f;
    for (int g = 0; g < m->ngpus; g++) {
        dr_gpu *x = &m->gpus[g];
        bar1_view v = {g, "", x->busid, &x->bar1_unassigned, &x->bar1_mib, &x->vram_mib, &x->rebar_max_mib};
        dr_gpu_label(m, g, v.label, sizeof v.label);
        bar1_one(c, &v);
    }
    for (int r = 0; r < m->nrecs; r++) {
        dr_grec *x = &m->recs[r];
        if (!x->anon)
            continue;
        bar1_view v = {-1, "", "", &x->bar1_unassigned, &x->bar1_mib, &x->vram_mib, &x->rebar_max_mib};
        snprintf(v.label, sizeof v.label, "a GPU of %s (not identified)", x->file);
        bar1_one(c, &v);
    }
    /* machine-level BAR facts no GPU could be tied to */
    int tied = has_finding(d, "bar1-unassigned");
    if (!tied && (s->nnospace > 0 || s->nbar1_invalid > 0 ||
                  (s->rebar_failed.v == 1 && strstr(s->rebar_failed.ev.text, "No address space")))) {
        int gpu_dev = 0;
        dr_ev *e = s->nbar1_invalid ? &s->bar1_invalid[0].ev : (s->nnospace ? &s->nospace[0].ev : &s->rebar_failed.ev);
        for (int i = 0; i < s->nnospace; i++) {
            int g;
            if (busid_is_gpu(m, s->nospace[i].busid, &g))
                gpu_dev = 1;
        }
        if (s->nbar1_invalid > 0 || s->rebar_failed.v == 1 || gpu_dev || !gpu_addresses_known(m)) {
            f = finding(d, "bar1-unassigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
                        s->nbar1_invalid > 0 ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
            if (f) {
                SUMMARY(f, "a GPU's BAR1 got no (or too little) address space: the kernel log shows the assignment "
                           "failing");
                f_ev(f, e);
                for (int i = 0; i < s->nnospace; i++)
                    f_ev(f, &s->nospace[i].ev);
            }
        }
    }
    if (has_finding(d, "bar1-unassigned")) {
        for (int i = 0; i < d->nf; i++)
            if (!strcmp(d->f[i].id, "bar1-unassigned"))
                FIX(&d->f[i], "enable Above 4G decoding (and Resizable BAR) in the firmware; if it is on, the "
                               "firmware's 64-bit MMIO window is too small (raise its MMIO high size), or boot with "
                               "pci=realloc; a GPU in a slot wired to the chipset may get only a small window: use a "
                               "CPU slot");
    }
    /* static BAR1 */
    if (s->static_bar1_error.v == 1) {
        f = finding(d, "static-bar1-missing", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "the driver could not map VRAM statically into BAR1; BAR1 P2P needs that mapping");
            FIX(f, "check that BAR1 covers VRAM (rebar-off, bar1-smaller-than-vram) and that no display uses the GPU "
                   "(display-attached); the kernel log line names the GPU");
            f_ev(f, &s->static_bar1_error.ev);
        }
    }
    /* the static mapping exists, but RM refused to IOMMU-map it for a peer */
    if (s->peer_map_unaligned.v == 1 || s->peer_map_failed.v == 1) {
        char pair[48] = "a GPU pair";
        if (s->peer_map_from >= 0)
            snprintf(pair, sizeof pair, "the pair GPU%d -> GPU%d (RM's numbering)", s->peer_map_from, s->peer_map_to);
        f = finding(d, "static-bar1-peer-map-failed", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            if (s->peer_map_unaligned.v == 1)
                SUMMARY(f, "the driver refused the peer mapping of %s: the peer's static BAR1 starts at DMA address "
                           "%s, not on the 512 MiB boundary RM requires (_kbusCreateStaticBar1IOMMUMapping), so that "
                           "pair gets no P2P; something RM mapped into BAR1 first (a console or display framebuffer) "
                           "pushed the static mapping up",
                        pair, s->peer_map_addr[0] ? s->peer_map_addr : "?");
            else
                SUMMARY(f, "the driver could not IOMMU-map one GPU's static BAR1 for its peer (%s): that pair gets no "
                           "P2P",
                        pair);
            FIX(f, "%s", s->peer_map_unaligned.v == 1
                             ? "use GPUs that drive no display or console for P2P (display-attached); this project's "
                               "modules place the static mapping on a 512 MiB boundary above a console (p2p-0008 in "
                               "535, 570 and 575; upstream from 580), older fork drivers do not: install one of those tags"
                             : "check the IOMMU (iommu-translated; iommu=pt) and the kernel log around this line");
            f_ev(f, &s->peer_map_unaligned.ev);
            f_ev(f, &s->peer_map_failed.ev);
        }
    }
}

/* Where the driver puts the static BAR1 mapping of a GPU whose console stays in
 * BAR1 (docs/how-it-works.md, Mixed boxes, from the source): above the console, off RM's 512 MiB
 * peer-mapping alignment (upstream 535 and 570-575: 1), or where it works (545-565,
 * 580 and later, and 535 and 570-575 with this project's p2p-0008: 0); -1 when the
 * driver version is unknown. */
static int display_placement(ctx *c)
{
    const char *v = driver_version(c);
    if (!v)
        return -1;
    /* 535 and 570-575 with this project's modules (loaded, or the tag about to be
       installed): p2p-0008 places the mapping 512 MiB aligned */
    if ((dp_vercmp(v, "535") >= 0 && dp_vercmp(v, "545") < 0) ||
        (dp_vercmp(v, "570") >= 0 && dp_vercmp(v, "580") < 0))
        return (c->o->preinstall && c->o->tag[0]) || c->d->ours == 1 ? 0 : 1;
    if (dp_vercmp(v, "545") >= 0)
        return 0;
    return -1;
}

static void rule_display(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    char lab[48];
    for (int i = 0; i < m->sys.nconsole; i++) {
        int g;
        if (busid_is_gpu(m, m->sys.console[i].busid, &g) && m->gpus[g].boot_vga.v < 0) {
            m->gpus[g].boot_vga.v = 1;
            m->gpus[g].boot_vga.ev = m->sys.console[i].ev;
        }
    }
    for (int g = 0; g < m->ngpus; g++) {
        dr_gpu *x = &m->gpus[g];
        if (x->display.v != 1 && !(x->display.v < 0 && x->boot_vga.v == 1 && m->ngpus > 1))
            continue;
        if (gpu_observed_ok(c, g))
            continue;
        dr_gpu_label(m, g, lab, sizeof lab);
        int fails = 0;
        for (int h = 0; h < m->ngpus; h++)
            if (h != g && (PS(c, g, h)->access == 0 || PS(c, h, g)->access == 0 || PS(c, g, h)->corrupt == 1))
                fails = 1;
        int placed = display_placement(c);
        int cert = fails || placed == 1 || has_finding(d, "static-bar1-missing") ? DR_CERT_LIKELY : DR_CERT_POSSIBLE;
        dr_finding *f = finding(d, "display-attached", DR_SCOPE_GPU, g, -1, DR_SEV_BLOCKS, cert);
        if (!f)
            continue;
        const char *what = x->display.v == 1 ? "drives a display" : "is the boot (console) GPU";
        if (placed == 1)
            SUMMARY(f, "%s %s: in drivers 535 and 570-575 without build.sh's modules (patch p2p-0008), RM keeps "
                       "the console at the bottom of BAR1 and puts the static BAR1 mapping above it, off the 512 MiB "
                       "alignment its peer mapping needs, so BAR1 P2P with this GPU likely fails (docs/how-it-works.md, Mixed "
                       "boxes)",
                    lab, what);
        else if (placed == 0)
            SUMMARY(f, "%s %s: drivers 545-565 and 580+ (and 535, 570-575 with build.sh's patch p2p-0008) place the "
                       "static BAR1 mapping so that BAR1 P2P can work beside the console, but BAR1 must hold the "
                       "console's reservation too; check this GPU's pairs with build.sh verify",
                    lab, what);
        else
            SUMMARY(f, "%s %s: BAR1 must then also hold the console's reservation, and in drivers 535 and 570-575 "
                       "without build.sh's patch p2p-0008 the static BAR1 mapping BAR1 P2P needs sits where RM's "
                       "peer mapping refuses it (wrong data or no P2P with this GPU)",
                    lab, what);
        FIX(f, "connect the displays to another GPU or the onboard graphics and leave this GPU headless (no X/Wayland "
               "session on it), then reload the driver or reboot");
        f_ev(f, x->display.v == 1 ? &x->display.ev : &x->boot_vga.ev);
    }
}

static void rule_models(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            const char *na = m->gpus[a].name, *nb = m->gpus[b].name;
            if (same_model(na, nb))
                continue;
            if (pair_observed_ok(c, a, b))
                continue;
            pobs_sum *s = PS(c, a, b);
            int observed_no = s->access == 0 && s->access_src >= 4;
            dr_finding *f = finding(d, "mixed-gpu-models", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                    observed_no ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
            if (!f)
                continue;
            SUMMARY(f, "%s and %s are different models: CUDA enables peer access only between GPUs of one model "
                       "(and the BAR1 of many smaller cards cannot cover their VRAM)",
                    na, nb);
            FIX(f, "use P2P within each group of identical GPUs (CUDA_VISIBLE_DEVICES per job); pairs of different "
                   "models copy through host memory");
            if (observed_no)
                f_ev(f, &s->access_ev);
        }
}

static void rule_vm(ctx *c)
{
    dr_model *m = c->m;
    int pt = 0;
    dr_ev *e = &m->sys.vm_guest.ev;
    for (int g = 0; g < m->ngpus; g++)
        if (m->gpus[g].virt_passthrough.v == 1) {
            pt = 1;
            e = &m->gpus[g].virt_passthrough.ev;
        }
    if ((m->sys.vm_guest.v != 1 && !pt) || m->ngpus == 0)
        return;
    if (all_observed_ok(c))
        return;
    dr_finding *f = finding(c->d, "virtual-machine", DR_SCOPE_MACHINE, -1, -1, DR_SEV_INFO, DR_CERT_LIKELY);
    if (!f)
        return;
    SUMMARY(f, "this is a virtual machine with passed-through GPUs: P2P between them also depends on the host (its "
               "IOMMU, ACS, and the guest's PCIe topology)");
    FIX(f, "on the host: iommu=pt, the GPUs under one switch or root port, ACS off where allowed; in the guest a "
           "PCIe topology that places the GPUs under one root port (q35 with pcie-root-port)");
    f_ev(f, e);
}

static void rule_corruption(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    dr_diag *d = c->d;
    if (s->selftest.v == 1) {
        dr_note(m, "p2p-verify --self-test injected corruption on purpose: its CORRUPTION lines are not counted");
        return;
    }
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            if (a == b)
                continue;
            pobs_sum *p = PS(c, a, b);
            if (p->corrupt != 1)
                continue;
            int lo = a < b ? a : b, hi = a < b ? b : a;
            dr_finding *f = finding(d, "p2p-data-corruption", DR_SCOPE_PAIR, lo, hi, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
            if (f) {
                SUMMARY(f, "peer copies between these GPUs delivered wrong data");
                f_ev(f, &p->corrupt_ev);
            }
        }
    dr_finding *f = NULL;
    if (c->corrupt_unpaired) {
        f = finding(d, "p2p-data-corruption", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "a P2P test found wrong data (the GPU pair is not named in the output)");
            f_ev(f, &c->corrupt_unpaired_ev);
        }
    }
    if (s->nccl_wrong.v == 1) {
        f = finding(d, "p2p-data-corruption", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "NCCL's collective results were wrong (nccl-tests #wrong or out-of-bounds values)");
            f_ev(f, &s->nccl_wrong.ev);
        }
    }
    if (s->verify_status.v == 21 && !c->hazard_any) { /* (a failed hazard test has its own finding) */
        f = finding(d, "p2p-data-corruption", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "p2p-verify found corrupted peer copies (verdict CORRUPTION)");
            f_ev(f, &s->verify_ev);
        }
    }
    for (int i = 0; i < d->nf; i++)
        if (!strcmp(d->f[i].id, "p2p-data-corruption"))
            FIX(&d->f[i], "do not use P2P here until the cause is fixed (NCCL_P2P_DISABLE=1 meanwhile); the usual "
                           "causes are an IOMMU translating peer writes (iommu=pt), a display on the GPU, and ACS "
                           "redirection; rerun build.sh verify after each change");
}

/* p2p-verify's hazard tests that failed: one finding per test and pair. */
static void rule_hazards(ctx *c)
{
    dr_model *m = c->m;
    if (!c->hazard_any)
        return;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            pobs_sum *p = a == b ? NULL : PS(c, a, b);
            for (int k = 0; p && k < DR_NHAZ; k++) {
                if (!(p->hazard & (1u << k)))
                    continue;
                int lo = a < b ? a : b, hi = a < b ? b : a;
                dr_finding *f = finding(c->d, k_hazard[k].id, DR_SCOPE_PAIR, lo, hi, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
                if (!f)
                    continue;
                SUMMARY(f, "%s", k_hazard[k].summary);
                FIX(f, "%s", k_hazard[k].fix);
                f_ev(f, &p->hazard_ev[k]);
            }
        }
}

/* ------------------------------------------------------------ verdicts */

static int finding_applies(const dr_finding *f, int a, int b)
{
    if (f->severity != DR_SEV_BLOCKS || !strcmp(f->id, "insufficient-data") || f->certainty < DR_CERT_LIKELY)
        return 0;
    if (f->scope == DR_SCOPE_MACHINE)
        return 1;
    if (f->scope == DR_SCOPE_GPU)
        return f->a == a || f->a == b;
    return (f->a == a && f->b == b) || (f->a == b && f->b == a);
}

/* Findings that explain no P2P (corruption is a symptom, not a cause). */
static int is_cause(const dr_finding *f)
{
    return strcmp(f->id, "p2p-data-corruption") != 0 && strcmp(f->id, "insufficient-data") != 0 &&
           !is_hazard_id(f->id);
}

static void pair_causes(ctx *c, dr_pairv *v)
{
    dr_diag *d = c->d;
    for (int i = 0; i < d->nf && v->ncauses < 8; i++) {
        if (!finding_applies(&d->f[i], v->a, v->b) || !is_cause(&d->f[i]))
            continue;
        int dup = 0;
        for (int k = 0; k < v->ncauses; k++)
            if (!strcmp(v->causes[k], d->f[i].id))
                dup = 1;
        if (!dup)
            v->causes[v->ncauses++] = d->f[i].id;
    }
}

/* What a pair with P2P shows of a symptom, after its why. */
static void why_symptom(dr_pairv *v, const pobs_sum *s, const pobs_sum *r)
{
    size_t l = strlen(v->why);
    if (dir_slow(s)) {
        snprintf(v->why + l, sizeof v->why - l, "; but P2P (%.1f GB/s) is slower than %s (%.1f)", s->bw_on,
                 s->bw_hostpath ? "the host path" : "host staging", s->bw_off);
        v->ev = s->bw_ev;
    } else if (dir_lat_high(s)) {
        snprintf(v->why + l, sizeof v->why - l, "; but P2P's latency (%.1f us) is not a direct path's", s->lat_on);
        v->ev = s->lat_ev;
    } else {
        snprintf(v->why + l, sizeof v->why - l, "; but P2P the other way is %s", dir_slow(r) ? "slower than host staging"
                                                                                   : "no direct path (latency)");
    }
}

static void verdicts(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int n = m->ngpus;
    d->npairs = 0;
    if (n < 2)
        return;
    d->pairs = calloc((size_t)n * (size_t)(n - 1), sizeof(dr_pairv));
    if (!d->pairs)
        return;
    int forced = forced_pcie(c);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (a == b)
                continue;
            dr_pairv *v = &d->pairs[d->npairs++];
            v->a = a;
            v->b = b;
            pobs_sum *s = PS(c, a, b);
            int nv = pair_nvlink(c, a, b);
            int topo_known = s->topo[0] || PS(c, b, a)->topo[0];
            pair_causes(c, v);
            int err = pair_error(c, a, b);
            if (s->corrupt == 1) {
                v->verdict = DR_V_NONE;
                v->basis = DR_BASIS_OBSERVED;
                v->ev = s->corrupt_ev;
                snprintf(v->why, sizeof v->why, "peer copies delivered wrong data: P2P must not be used");
            } else if (s->hazard) {
                v->verdict = DR_V_NONE;
                v->basis = DR_BASIS_OBSERVED;
                char tests[80] = "";
                for (int k = 0; k < DR_NHAZ; k++)
                    if (s->hazard & (1u << k)) {
                        if (!tests[0])
                            v->ev = s->hazard_ev[k];
                        size_t l = strlen(tests);
                        snprintf(tests + l, sizeof tests - l, "%s%s", l ? ", " : "", k_hazard[k].test);
                    }
                snprintf(v->why, sizeof v->why, "p2p-verify's hazard test%s failed (%s): P2P must not be used as it is",
                         strchr(tests, ',') ? "s" : "", tests);
            } else if (err == 1 || (err == -1 && n == 2)) {
                v->verdict = DR_V_NONE;
                v->basis = DR_BASIS_OBSERVED;
                v->ev = m->sys.p2p_error.ev;
                snprintf(v->why, sizeof v->why, "P2P is offered but fails in use (a CUDA error in a P2P test)");
            } else if (s->access == 1 && s->access_src == 3 && v->ncauses > 0) {
                v->verdict = DR_V_HOST;
                v->basis = DR_BASIS_INFERRED;
                v->ev = s->access_ev;
                snprintf(v->why, sizeof v->why,
                         "nvidia-smi topo -p2p reports OK (the driver's view), but the findings stop P2P for CUDA");
            } else if (s->access == 1) {
                v->basis = DR_BASIS_OBSERVED;
                v->ev = s->access_ev;
                if (nv && forced != 1 && !(s->bw_on > 0 && s->bw_on < 35 && s->bw_kind == DR_BW_UNI))
                    v->verdict = DR_V_NVLINK;
                else if (topo_known || forced == 1 || (m->gpus[a].nvlinks.v == 0 && m->gpus[b].nvlinks.v >= 0))
                    v->verdict = DR_V_BAR1;
                else
                    v->verdict = DR_V_P2P;
                snprintf(v->why, sizeof v->why, "%s%s",
                         s->access_src == 4   ? "peer access reported by CUDA"
                         : s->access_src == 3 ? "nvidia-smi topo -p2p reports OK (the driver's view, not a test)"
                         : s->access_src == 2 ? "NCCL uses P2P between them"
                                              : "P2P bandwidth/latency beats host staging",
                         s->corrupt == 0 ? "; data checked intact" : "; data integrity not checked");
                if (!pair_symptom(c, a, b))
                    v->ncauses = 0; /* it works: the findings are not its causes */
                else
                    why_symptom(v, s, PS(c, b, a));
                if (s->nccl_shm) {
                    size_t l = strlen(v->why);
                    snprintf(v->why + l, sizeof v->why - l, "; NCCL used SHM, not P2P, here with P2P allowed");
                }
            } else if (s->access == 0) {
                v->verdict = DR_V_HOST;
                v->basis = DR_BASIS_OBSERVED;
                v->ev = s->access_ev;
                snprintf(v->why, sizeof v->why, "%s", s->access_src == 4   ? "CUDA reports no peer access"
                                                      : s->access_src == 3 ? "nvidia-smi topo -p2p reports no P2P"
                                                                           : "P2P=Enabled is no faster than host staging");
            } else if (v->ncauses > 0) {
                v->verdict = DR_V_HOST;
                v->basis = DR_BASIS_INFERRED;
                snprintf(v->why, sizeof v->why, "expected from the findings (no test of this pair was read)");
            } else {
                v->verdict = DR_V_UNKNOWN;
                v->basis = DR_BASIS_NONE;
                snprintf(v->why, sizeof v->why, "no output shows whether this pair has P2P");
            }
        }
}

/* ------------------------------------------------------------ symptoms */

/* Compute capability by the GPU's name, for NVLink's per-link rate (the
 * figures of linklimits.c); 0 when the name does not tell. */
static int cc_of_name(const char *name, int *minor)
{
    static const struct {
        const char *key;
        int major, minor;
    } cc[] = {{"h100", 9, 0}, {"h200", 9, 0}, {"h800", 9, 0}, {"gh200", 9, 0}, {"a100", 8, 0}, {"a800", 8, 0},
              {"a30", 8, 0},  {"rtx 30", 8, 6}, {"a40", 8, 6},  {"a6000", 8, 6}, {"a5000", 8, 6}, {"a4000", 8, 6},
              {"v100", 7, 0}, {"b200", 10, 0}, {"b100", 10, 0}, {"gb200", 10, 0}};
    char k[96];
    dp_model_key(name, k, sizeof k);
    for (size_t i = 0; i < sizeof cc / sizeof cc[0]; i++)
        if (strstr(k, cc[i].key)) {
            *minor = cc[i].minor;
            return cc[i].major;
        }
    return 0;
}

static void gpu_as_pv(const dr_gpu *x, pv_gpu *g)
{
    memset(g, 0, sizeof(*g));
    g->gen_max = (int)(x->gen_max.v > 0 ? x->gen_max.v : (x->gen_dev_max.v > 0 ? x->gen_dev_max.v : 0));
    g->width_max = (int)(x->width_max.v > 0 ? x->width_max.v : 0);
    g->gen_cur = (int)(x->gen_cur.v > 0 ? x->gen_cur.v : 0);
    g->width_cur = (int)(x->width_cur.v > 0 ? x->width_cur.v : 0);
    g->cc_major = cc_of_name(x->name, &g->cc_minor);
}

/* The limit of the link P2P between a and b uses, as p2p-verify computes it
 * (linklimits.c; GB/s per direction): its own figure where its output was read,
 * else NVLink's links x the generation's per-link rate, else the slower of
 * the two PCIe links; -1 unknown.  desc names it. */
static double pair_limit(ctx *c, int a, int b, char *desc, size_t dlen)
{
    pobs_sum *s = PS(c, a, b), *r = PS(c, b, a);
    pv_gpu ga, gb;
    pv_link l;
    if (s->limit > 0) {
        snprintf(desc, dlen, "p2p-verify's figure for its %s path", s->limit_type);
        return s->limit;
    }
    gpu_as_pv(&c->m->gpus[a], &ga);
    gpu_as_pv(&c->m->gpus[b], &gb);
    int nl = pv_smi_nvlinks(s->topo[0] ? s->topo : r->topo);
    if (nl > 0) {
        pv_link_nvlink(&l, &ga, &gb, nl, "topo -m");
        snprintf(desc, dlen, l.gbps > 0 ? "NVLink x%d, as p2p-verify computes it"
                                         : "NVLink x%d, whose per-link rate for these GPUs p2p-verify does not know",
                 nl);
        return l.gbps > 0 ? l.gbps : -1;
    }
    pv_link_pcie(&l, &ga, &gb);
    if (l.gbps <= 0) {
        snprintf(desc, dlen, "their PCIe generation and width are not shown: nvidia-smi -q");
        return -1;
    }
    snprintf(desc, dlen, "PCIe gen%d x%d, as p2p-verify computes it", l.gen, l.width);
    return l.gbps;
}

static void cat_text(char *dst, size_t cap, const char *fmt, ...)
{
    size_t l = strlen(dst);
    if (l + 3 >= cap)
        return;
    if (l) {
        memcpy(dst + l, "; ", 3);
        l += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst + l, cap - l, fmt, ap);
    va_end(ap);
}

static void cause_add(dr_finding *f, const char *id, int cert, const char *why)
{
    if (f->ncause >= DR_MAX_CAUSES)
        return;
    int k = f->ncause++;
    while (k > 0 && f->cause[k - 1].certainty < cert) { /* most likely first, in the order found */
        f->cause[k] = f->cause[k - 1];
        k--;
    }
    f->cause[k].id = id;
    f->cause[k].certainty = cert;
    snprintf(f->cause[k].why, sizeof f->cause[k].why, "%s", why);
}

/* A finding id for the pair a-b (a GPU of it, or the machine); a < 0: the machine's. */
static const dr_finding *finding_for(const dr_diag *d, const char *id, int a, int b)
{
    for (int i = 0; i < d->nf; i++) {
        const dr_finding *f = &d->f[i];
        if (strcmp(f->id, id) != 0)
            continue;
        if (f->scope == DR_SCOPE_MACHINE || (a >= 0 && f->scope == DR_SCOPE_GPU && (f->a == a || f->a == b)) ||
            (a >= 0 && f->scope == DR_SCOPE_PAIR && ((f->a == a && f->b == b) || (f->a == b && f->b == a))))
            return f;
    }
    return NULL;
}

static int gpu_under_a_bridge(dr_model *m, int g)
{
    for (int i = 0; i < m->nbridges; i++)
        if (bridge_above(&m->bridges[i], m->gpus[g].busid))
            return 1;
    return 0;
}

/* ACS on the switch ports between a and b: 0 none redirects (or no switch
 * port is between them), -1 not known (a port's ACS not read, or where the
 * GPUs sit not known). */
static int acs_between(ctx *c, int a, int b)
{
    dr_model *m = c->m;
    if (a < 0 || !m->gpus[a].busid[0] || !m->gpus[b].busid[0] || !gpu_under_a_bridge(m, a) ||
        !gpu_under_a_bridge(m, b))
        return -1;
    for (int i = 0; i < m->nbridges; i++) {
        dr_bridge *br = &m->bridges[i];
        if (br->type != 1 && bridge_above(br, m->gpus[a].busid) != bridge_above(br, m->gpus[b].busid) &&
            !br->acs_seen)
            return -1;
    }
    return 0;
}

/* The lowest bridge above both GPUs: a switch port (1), none but both under
 * root ports of one root bus (2), under different root buses (3); 0 unknown. */
static int pair_route(ctx *c, int a, int b)
{
    dr_model *m = c->m;
    int root_a = -1, root_b = -1;
    if (a < 0 || !m->gpus[a].busid[0] || !m->gpus[b].busid[0])
        return 0;
    for (int i = 0; i < m->nbridges; i++) {
        dr_bridge *br = &m->bridges[i];
        int ua = bridge_above(br, m->gpus[a].busid), ub = bridge_above(br, m->gpus[b].busid);
        if (ua && ub && br->type != 1)
            return 1;
        if (br->type == 1 && ua)
            root_a = bus_of(br->busid, NULL);
        if (br->type == 1 && ub)
            root_b = bus_of(br->busid, NULL);
    }
    if (root_a < 0 || root_b < 0)
        return 0;
    return root_a == root_b ? 2 : 3;
}

static void rank_path(ctx *c, dr_finding *f, int a, int b)
{
    const dr_finding *x = finding_for(c->d, "cross-root-complex", a, b);
    if (x) {
        cause_add(f, x->id, x->certainty, x->summary);
        return;
    }
    if ((x = finding_for(c->d, "nvlink-bridged", a, b)))
        cause_add(f, x->id, x->certainty, x->summary);
    const char *t = a < 0 ? "" : (PS(c, a, b)->topo[0] ? PS(c, a, b)->topo : PS(c, b, a)->topo);
    int route = pair_route(c, a, b);
    if (!strcmp(t, "NODE") || route == 3)
        cause_add(f, "cross-root-complex", DR_CERT_POSSIBLE,
                  t[0] ? "the path crosses the interconnect between PCIe root complexes of the CPU (topo NODE)"
                       : "the GPUs sit under root ports of different root complexes (lspci)");
    else if (t[0] || route)
        cat_text(f->ruled_out, sizeof f->ruled_out, "the CPU interconnect (%s%s)", t[0] ? "topo " : "",
                 t[0] ? t : (route == 1 ? "one PCIe switch, lspci" : "one root complex, lspci"));
    else
        cat_text(f->not_shown, sizeof f->not_shown, "how they are connected (nvidia-smi topo -m, lspci -tv)");
}

static void rank_acs_iommu(ctx *c, dr_finding *f, int a, int b)
{
    const dr_finding *x = finding_for(c->d, "acs-redirect", a, b);
    dr_ev *me = NULL;
    if (x)
        cause_add(f, x->id, x->certainty, x->summary);
    else if (acs_between(c, a, b) == 0)
        cat_text(f->ruled_out, sizeof f->ruled_out, "ACS redirect (none on the switch ports between them, lspci)");
    else
        cat_text(f->not_shown, sizeof f->not_shown,
                 "ACS on the bridges between them (sudo lspci -vvv; or lspci -tv and sudo setpci -s <bridge> "
                 "ECAP_ACS+6.w)");
    int t = iommu_mode(c, &me);
    if ((x = finding_for(c->d, "iommu-translated", a, b)))
        cause_add(f, x->id, x->certainty, x->summary);
    else if (t == 1)
        cause_add(f, "iommu-translated", DR_CERT_POSSIBLE, "the IOMMU translates DMA (not passthrough)");
    else if (t == 0)
        cat_text(f->ruled_out, sizeof f->ruled_out, "IOMMU translation (passthrough or off)");
    else
        cat_text(f->not_shown, sizeof f->not_shown, "the IOMMU mode (cat /proc/cmdline; sudo dmesg)");
}

static void rank_vm_link(ctx *c, dr_finding *f, int a, int b)
{
    dr_model *m = c->m;
    const dr_finding *x;
    int vm = m->sys.vm_guest.v == 1;
    for (int g = 0; g < m->ngpus; g++)
        vm |= m->gpus[g].virt_passthrough.v == 1;
    if (vm)
        cause_add(f, "virtual-machine", DR_CERT_POSSIBLE,
                  "a virtual machine: peer traffic also crosses the host's IOMMU and ACS, which the guest's outputs "
                  "do not show");
    else if (kinds_read(m) & DR_K_DMESG)
        cat_text(f->ruled_out, sizeof f->ruled_out, "a virtual machine (no hypervisor in the kernel log)");
    else
        cat_text(f->not_shown, sizeof f->not_shown, "whether this is a virtual machine (sudo dmesg)");
    if ((x = finding_for(c->d, "link-degraded", a, b)))
        cause_add(f, x->id, DR_CERT_POSSIBLE, x->summary);
    else if (a >= 0 && m->gpus[a].width_cur.v > 0 && m->gpus[b].width_cur.v > 0)
        cat_text(f->ruled_out, sizeof f->ruled_out, "a degraded link (both at their full width)");
}

/* A symptom's likely causes from the rest of the evidence, most likely
 * first, with what rules the others out and what would tell. */
static void rank_causes(ctx *c, dr_finding *f, int a, int b)
{
    rank_acs_iommu(c, f, a, b);
    rank_path(c, f, a, b);
    rank_vm_link(c, f, a, b);
    FIX(f, "%s", f->ncause ? "check the causes listed, most likely first (each has its finding and fix); build.sh "
                             "verify measures P2P against host staging and the link's limit again"
                           : "collect what is listed as not shown (build.sh doctor --collect DIR has all of it) and "
                             "diagnose again; build.sh verify measures P2P against host staging and the link's limit");
}

static const char *bw_tool(const dr_ev *e)
{
    if (!strncmp(e->text, "nvbandwidth", 11))
        return "nvbandwidth";
    if (!strncmp(e->text, "performance.", 12) || strstr(e->file, ".json"))
        return "p2p-verify";
    return "p2pBandwidthLatencyTest";
}

/* "GPU0->GPU1 3.1 GB/s with P2P vs 11.9 host-staged; GPU1->GPU0 3.2 vs 12.0
 * (p2pBandwidthLatencyTest, unidirectional)": the slow directions. */
static void slow_numbers(ctx *c, int a, int b, char *out, size_t cap, dr_finding *f)
{
    int dirs[2][2] = {{a, b}, {b, a}};
    const pobs_sum *first = NULL;
    char la[48], lb[48];
    for (int k = 0; k < 2; k++) {
        const pobs_sum *s = PS(c, dirs[k][0], dirs[k][1]);
        if (!dir_slow(s))
            continue;
        dr_gpu_label(c->m, dirs[k][0], la, sizeof la);
        dr_gpu_label(c->m, dirs[k][1], lb, sizeof lb);
        if (first)
            cat_text(out, cap, "%s->%s %.1f vs %.1f", la, lb, s->bw_on, s->bw_off);
        else
            cat_text(out, cap, "%s->%s %.1f GB/s with P2P vs %.1f %s", la, lb, s->bw_on, s->bw_off,
                     s->bw_hostpath ? "on its host path" : "host-staged");
        first = first ? first : s;
        f_ev(f, &s->bw_ev);
    }
    size_t l = strlen(out);
    snprintf(out + l, cap - l, " (%s, %s)", bw_tool(&first->bw_ev),
             first->bw_kind == DR_BW_BI ? "bidirectional" : "unidirectional");
}

static void symptom_slow(ctx *c, int a, int b)
{
    char nums[300] = "", desc[96];
    dr_finding *f = finding(c->d, "p2p-slower-than-host", DR_SCOPE_PAIR, a, b, DR_SEV_DEGRADES,
                            c->m->gpus[a].assumed_index || c->m->gpus[b].assumed_index ? DR_CERT_LIKELY
                                                                                       : DR_CERT_CERTAIN);
    if (!f)
        return;
    slow_numbers(c, a, b, nums, sizeof nums, f);
    double lim = pair_limit(c, a, b, desc, sizeof desc), on = PS(c, a, b)->bw_on;
    if (lim > 0 && on > 0)
        SUMMARY(f, "P2P is slower than copies through host memory: %s; the link's limit is %.1f GB/s per direction "
                   "(%s), P2P reaches %.0f%% of it",
                nums, PS(c, a, b)->bw_kind == DR_BW_BI ? 2 * lim : lim, desc,
                100.0 * on / (PS(c, a, b)->bw_kind == DR_BW_BI ? 2 * lim : lim));
    else
        SUMMARY(f, "P2P is slower than copies through host memory: %s; the link's limit is not known (%s)", nums, desc);
    rank_causes(c, f, a, b);
}

static void symptom_latency(ctx *c, int a, int b)
{
    pobs_sum *s = dir_lat_high(PS(c, a, b)) ? PS(c, a, b) : PS(c, b, a);
    char la[48], lb[48];
    dr_gpu_label(c->m, s == PS(c, a, b) ? a : b, la, sizeof la);
    dr_gpu_label(c->m, s == PS(c, a, b) ? b : a, lb, sizeof lb);
    dr_finding *f = finding(c->d, "p2p-latency-high", DR_SCOPE_PAIR, a, b, DR_SEV_DEGRADES, DR_CERT_CERTAIN);
    if (!f)
        return;
    if (s->lat_off > 0)
        SUMMARY(f, "peer access is reported, but P2P's latency is that of a path through host memory, not a direct "
                   "one: %s->%s %.2f us with P2P, %.2f us without (%s); direct PCIe or NVLink writes take a few us",
                la, lb, s->lat_on, s->lat_off, bw_tool(&s->lat_ev));
    else
        SUMMARY(f, "peer access is reported, but P2P's latency (%s->%s %.2f us, %s) is far above a direct path's "
                   "(a few us)", la, lb, s->lat_on, bw_tool(&s->lat_ev));
    f_ev(f, &s->lat_ev);
    f_ev(f, &s->access_ev);
    rank_causes(c, f, a, b);
}

/* NCCL's all-reduce with P2P slower than with NCCL_P2P_DISABLE=1. */
static void symptom_nccl(ctx *c)
{
    dr_model *m = c->m;
    const dr_busbw *on = &m->sys.nccl_bus[0], *off = &m->sys.nccl_bus[1];
    int avg = on->avg > 0 && off->avg > 0;
    double x = avg ? on->avg : on->peak, y = avg ? off->avg : off->peak;
    if (x <= 0 || y <= 0 || x >= 0.8 * y || (on->ngpus && off->ngpus && on->ngpus != off->ngpus))
        return;
    int a = on->ngpus == 2 ? map_index_at(m, DR_NS_CUDA, on->dev[0], &on->ev) : -1;
    int b = on->ngpus == 2 ? map_index_at(m, DR_NS_CUDA, on->dev[1], &on->ev) : -1;
    if (a < 0 || b < 0 || a == b)
        a = b = -1;
    dr_finding *f = finding(c->d, "p2p-slower-than-host", a < 0 ? DR_SCOPE_MACHINE : DR_SCOPE_PAIR, a < b ? a : b,
                            a < b ? b : a, DR_SEV_DEGRADES, DR_CERT_CERTAIN);
    if (!f)
        return;
    char nums[200];
    snprintf(nums, sizeof nums, "NCCL's all-reduce reaches a bus bandwidth of %.1f GB/s with P2P allowed, %.1f with "
                                "NCCL_P2P_DISABLE=1 (%s, %d GPUs)",
             x, y, avg ? "nccl-tests' average" : "its largest size", on->ngpus);
    f_ev(f, &on->ev);
    f_ev(f, &off->ev);
    if (f->summary[0]) { /* the pair's matrices said it first: the causes are ranked */
        cat_text(f->summary, sizeof f->summary, "%s", nums);
        return;
    }
    SUMMARY(f, "P2P is slower than the path through host memory: %s", nums);
    rank_causes(c, f, a, b);
}

static void rule_symptoms(ctx *c)
{
    for (int a = 0; a < c->m->ngpus; a++)
        for (int b = a + 1; b < c->m->ngpus; b++) {
            if (pair_slow(c, a, b))
                symptom_slow(c, a, b);
            if (pair_lat_high(c, a, b))
                symptom_latency(c, a, b);
        }
    symptom_nccl(c);
}

/* The pair's peer access fails in use: CUDA says no, or a P2P test hit a
 * CUDA error (one that names no pair counts for the only pair). */
static int pair_fails(ctx *c, int a, int b)
{
    dr_sys *s = &c->m->sys;
    pobs_sum *x = PS(c, a, b), *y = PS(c, b, a);
    int err = pair_error(c, a, b);
    if ((x->access == 0 && x->access_src == 4) || (y->access == 0 && y->access_src == 4) || err == 1)
        return 1;
    return c->m->ngpus == 2 && (err == -1 || s->p2p_unavailable.v == 1 || s->simplep2p_failed.v == 1);
}

/* The one open risk of --nvlink keep in 535-570 (patch p2p-0006): GSP
 * firmware gets RMForceP2PType=2 too, and whether it still sets up NVLink
 * peers under that value cannot be read from the source.  If it does not, a
 * bridged pair is reported as NVLink, creating its P2P object fails, and the
 * pair gets no BAR1 fallback. */
static void rule_nvlink_keep(ctx *c)
{
    dr_model *m = c->m;
    dr_sys *s = &m->sys;
    const dr_regkeys *k = s->applied.present ? &s->applied : (s->configured.present ? &s->configured : NULL);
    const char *v = driver_version(c);
    if (c->o->preinstall || !k || key_val(k, "RMBar1P2PKeepNvlink") != 1 || key_val(k, "RMForceP2PType") != 2 ||
        c->d->ours == 0 || (v && (dp_vercmp(v, "535") < 0 || dp_vercmp(v, "575") >= 0)))
        return;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            if (!pair_nvlink(c, a, b) || !pair_fails(c, a, b))
                continue;
            int other = 0;
            for (int i = 0; i < c->d->nf; i++)
                other |= finding_applies(&c->d->f[i], a, b) && is_cause(&c->d->f[i]);
            dr_finding *f = finding(c->d, "nvlink-keep-failed", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                    other ? DR_CERT_POSSIBLE : DR_CERT_LIKELY);
            if (!f)
                continue;
            SUMMARY(f, "this NVLink-bridged pair fails peer access with --nvlink keep in effect on driver %s "
                       "(RMBar1P2PKeepNvlink=1 beside RMForceP2PType=2, patch p2p-0006): GSP firmware gets "
                       "RMForceP2PType=2 too, and whether it still sets up NVLink peers then cannot be read from the "
                       "source; if not, the pair is reported as NVLink, creating its P2P object fails, and it gets no "
                       "BAR1 fallback",
                    v ? v : "535-570");
            FIX(f, "BAR1 P2P for every pair: sudo build.sh install <tag> --nvlink off (RMBar1P2PKeepNvlink=0), sudo "
                   "update-initramfs -u, reboot, then build.sh verify; please report the outcome with the bundle of "
                   "build.sh doctor --collect, so that this risk can be closed");
            f_ev(f, &k->ev);
            f_ev(f, PS(c, a, b)->topo[0] ? &PS(c, a, b)->topo_ev : &PS(c, b, a)->topo_ev);
            f_ev(f, PS(c, a, b)->access == 0 ? &PS(c, a, b)->access_ev : &s->p2p_error.ev);
        }
}

/* P2P already works with the loaded driver: every ordered pair OK in topo
 * -p2p r and w, one model, nothing that stops it. */
static void works_now(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    if (m->ngpus < 2 || has_finding(d, "mixed-gpu-models"))
        return;
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY)
            return;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            pobs_sum *s = PS(c, a, b);
            if (a != b && (s->cap_ok != 3 || s->cap_bad || s->access == 0 || s->corrupt == 1))
                return;
        }
    d->works_now = m->ngpus * (m->ngpus - 1);
}

/* ------------------------------------------------------------ what is missing */

static unsigned kinds_read(dr_model *m)
{
    unsigned k = 0;
    for (int i = 0; i < m->nfiles; i++)
        k |= m->files[i].kinds;
    return k;
}

static void missing(dr_diag *d, const char *what)
{
    if (d->nmissing < DR_MAX_MISSING)
        snprintf(d->missing[d->nmissing++], sizeof d->missing[0], "%s", what);
}

static void list_missing(ctx *c)
{
    unsigned k = kinds_read(c->m);
    dr_diag *d = c->d;
    if (!(k & (DR_K_SMIQ | DR_K_SYSFS | DR_K_LSPCIV)))
        missing(d, "nvidia-smi -q (BAR1 and VRAM size, display, PCIe link of each GPU)");
    if (!(k & DR_K_DMESG))
        missing(d, "the kernel log: sudo dmesg (IOMMU faults, NVRM errors, BAR assignment)");
    if (!(k & (DR_K_CMDLINE | DR_K_IOMMU)))
        missing(d, "cat /proc/cmdline (iommu=pt, intel_iommu, amd_iommu)");
    if (!(k & DR_K_LSPCIV))
        missing(d, "sudo lspci -vvv (ACS on the bridges between the GPUs, Resizable BAR sizes)");
    if (!(k & DR_K_TOPO))
        missing(d, "nvidia-smi topo -m (NVLink, and how the GPUs are connected)");
    if (!(k & DR_K_P2PCAP))
        missing(d, "nvidia-smi topo -p2p r (what the driver allows per pair)");
    if (!(k & (DR_K_VERSION | DR_K_MODINFO)))
        missing(d, "cat /proc/driver/nvidia/version and modinfo nvidia (which module is loaded)");
    if (!(k & DR_K_PARAMS))
        missing(d, "cat /proc/driver/nvidia/params (the registry keys in effect)");
    if (!(k & (DR_K_SIMPLEP2P | DR_K_VERIFY | DR_K_P2PBW)))
        missing(d, "build.sh verify (or simpleP2P): whether peer access works and data arrives intact");
    if (!(k & DR_K_SECBOOT))
        missing(d, "mokutil --sb-state (Secure Boot)");
}

static int is_geforce(const char *name)
{
    char k[96];
    dp_model_key(name, k, sizeof k);
    return strstr(name, "GeForce") != NULL || (!strncmp(k, "rtx ", 4) && atoi(k + 4) >= 2000 && atoi(k + 4) < 10000);
}

/* Identical GeForce cards that CUDA gives no peer access (and no pair any),
 * with no cause in the outputs: the stock driver gives GeForce no PCIe P2P at all, so the
 * likeliest reason is a module without it.  Only "possible": the outputs
 * that would tell (the module's version string, its options) are missing. */
static void rule_stock_guess(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    if (c->o->preinstall || d->ours == 1 || m->sys.module_open.v == 1 || has_finding(d, "stock-module-loaded"))
        return;
    /* a pair with peer access: the loaded module does give these GPUs P2P
     * (older drivers did for some GeForce generations), so the missing
     * pairs have another cause (sockets, switches) */
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++)
            if (a != b && PS(c, a, b)->access == 1)
                return;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = 0; b < m->ngpus; b++) {
            pobs_sum *s = PS(c, a, b);
            if (a == b || s->access != 0 || s->access_src < 4 || !is_geforce(m->gpus[a].name) ||
                !same_model(m->gpus[a].name, m->gpus[b].name) || is_generic_name(m->gpus[a].name) ||
                pair_nvlink(c, a, b))
                continue;
            for (int i = 0; i < d->nf; i++)
                if (finding_applies(&d->f[i], a, b) && is_cause(&d->f[i]))
                    return;
            dr_finding *f = finding(d, "stock-module-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
                                    DR_CERT_POSSIBLE);
            if (!f)
                return;
            SUMMARY(f, "identical GeForce GPUs get no peer access and the outputs show no other cause: NVIDIA's stock "
                       "module gives GeForce cards no PCIe P2P, so the loaded module is probably one without the P2P "
                       "patches (or nvidia-p2p's without its options); /proc/driver/nvidia/version and "
                       "/proc/driver/nvidia/params tell");
            FIX(f, "make sure the patched module is the one loaded: sudo build.sh install <tag> (it removes or "
                   "overrides the other modules), reboot, and check cat /proc/driver/nvidia/version");
            f_ev(f, &s->access_ev);
            if (m->sys.smi_driver_version[0])
                f_ev(f, &m->sys.smi_driver_version_ev);
            return;
        }
}

/* A symptom none of whose causes is more than possible. */
static int symptom_unexplained(const dr_diag *d)
{
    for (int i = 0; i < d->nf; i++) {
        const dr_finding *f = &d->f[i];
        int told = 0;
        if (strcmp(f->id, "p2p-slower-than-host") != 0 && strcmp(f->id, "p2p-latency-high") != 0)
            continue;
        for (int k = 0; k < f->ncause; k++)
            told |= f->cause[k].certainty >= DR_CERT_LIKELY;
        if (!told)
            return 1;
    }
    return 0;
}

/* A test's output that stops before its end: the test hung or died there
 * (or the paste was cut). Peer access reported before it is then no sign
 * that P2P works; what stalls traffic between GPUs is named where the
 * outputs show it. */
static void rule_cut(ctx *c)
{
    dr_sys *s = &c->m->sys;
    for (int k = 0; k < s->ncut; k++) {
        dr_finding *f = finding(c->d, "test-output-cut", DR_SCOPE_MACHINE, -1, -1, DR_SEV_DEGRADES, DR_CERT_LIKELY);
        if (!f)
            return;
        int access = strcmp(s->cut[k].test, "the NCCL test") != 0;
        SUMMARY(f, "the output of %s stops at %s: the test hung or died there (or the paste was cut)%s; a test that "
                   "stalls on peer traffic is most often the IOMMU translating peer DMA or ACS redirecting it",
                s->cut[k].test, s->cut[k].where,
                access ? ", so the peer access it reported before is no sign that P2P works" : "");
        FIX(f, "%s", has_finding(c->d, "iommu-translated") || has_finding(c->d, "acs-redirect")
                         ? "see iommu-translated / acs-redirect above; then run the test again to its end"
                         : "run the test again and keep its whole output; if it stops there again, collect the kernel "
                           "log (IOMMU faults), lspci -vvv (ACS) and /proc/cmdline (build.sh doctor --collect)");
        f_ev(f, &s->cut[k].ev);
    }
}

static void rule_insufficient(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    if (c->node_unmeasured[0]) {
        char what[200];
        snprintf(what, sizeof what, "P2P against host memory, %.95s (topo NODE: P2P is often slower there): build.sh "
                                    "verify",
                 c->node_unmeasured);
        missing(d, what);
    }
    int unexplained = 0, unverified = 0;
    for (int i = 0; i < d->npairs; i++) {
        dr_pairv *v = &d->pairs[i];
        if (v->verdict == DR_V_UNKNOWN || ((v->verdict == DR_V_HOST || v->verdict == DR_V_NONE) && v->ncauses == 0))
            unexplained = 1;
        if ((v->verdict == DR_V_BAR1 || v->verdict == DR_V_NVLINK || v->verdict == DR_V_P2P) &&
            v->basis == DR_BASIS_OBSERVED && PS(c, v->a, v->b)->corrupt != 0)
            unverified++;
        if (pair_symptom(c, v->a, v->b) && v->ncauses == 0)
            unexplained = 1;
    }
    if (m->sys.p2p_error.v == 1 || symptom_unexplained(d))
        unexplained = 1;
    if (m->sys.ncut > 0)
        unexplained = 1; /* a test stopped: whether P2P works is not shown */
    int corrupt = has_finding(d, "p2p-data-corruption") || c->hazard_any;
    int cause = 0;
    for (int i = 0; i < d->nf; i++)
        if (is_cause(&d->f[i]) && d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY)
            cause = 1;
    if (corrupt && !cause)
        unexplained = 1;
    if (m->ngpus < 2 && !cause && (m->sys.p2p_unavailable.v == 1 || m->sys.simplep2p_failed.v == 1 ||
                                   c->corrupt_unpaired || m->sys.nccl_wrong.v == 1 || m->sys.illegal_access.v == 1))
        unexplained = 1;
    if (m->ngpus == 0 && !cause && m->sys.sysfs_gpus.v != 0)
        unexplained = 1; /* (sysfs read and no GPU in it: nothing is missing) */
    int cause_found = 0;
    for (int i = 0; i < d->nf; i++)
        if (is_cause(&d->f[i]) && d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY)
            cause_found = 1;
    if (unexplained && cause_found && m->sys.p2p_error.v == 1) {
        /* the failing pair is explained if a cause applies to every pair */
        unexplained = 0;
        for (int i = 0; i < d->npairs; i++)
            if (d->pairs[i].ncauses == 0 && d->pairs[i].verdict != DR_V_BAR1 && d->pairs[i].verdict != DR_V_NVLINK &&
                d->pairs[i].verdict != DR_V_P2P)
                unexplained = 1;
    }
    if (unverified && !unexplained) {
        /* P2P seen, data never checked: said (it may still be the silent
           kind), but every pair's state is known, which the exit code tells */
        d->unverified = unverified;
        missing(d, "build.sh doctor --verify (or build.sh verify): every byte of peer copies checked; peer access "
                   "and bandwidth alone do not show that data arrives intact");
    }
    c->unexplained = unexplained;
    /* a finding only where the missing outputs limit the verdict: data that
       was never checked is said by the verdict's reasons and 'Collect', and
       leaves every pair's verdict as it is */
    if (!unexplained)
        return;
    list_missing(c);
    dr_finding *f = finding(d, "insufficient-data", DR_SCOPE_MACHINE, -1, -1, DR_SEV_INFO, DR_CERT_CERTAIN);
    if (!f)
        return;
    SUMMARY(f, "%s", d->nmissing ? "the outputs read do not show why P2P fails (or whether it works); what would "
                                   "show it is listed under 'Collect'"
                                 : "every usual output was read and none shows the cause: a case for the maintainers "
                                   "(send the bundle of build.sh doctor --collect)");
    FIX(f, "%s", "run build.sh doctor --collect DIR on the machine (as root for lspci and dmesg) and diagnose DIR "
                 "with build.sh doctor --from DIR");
}

/* ------------------------------------------------------------ inputs */

static int full_list_src(const char *src)
{
    return !strcmp(src, "smi") || !strcmp(src, "smi-q") || !strcmp(src, "topo") || !strcmp(src, "p2pbw") ||
           !strcmp(src, "verify") || !strcmp(src, "sysfs") || !strcmp(src, "lspci");
}

static void check_counts(ctx *c)
{
    dr_model *m = c->m;
    /* per file and output: how many GPUs it lists */
    struct {
        char file[64], src[12];
        int n, addressed; /* addressed: every GPU it lists has its bus address */
    } grp[64];
    int ng = 0;
    for (int r = 0; r < m->nrecs; r++) {
        dr_grec *x = &m->recs[r];
        if (x->anon || !full_list_src(x->src) || m->rec_gpu[r] < 0)
            continue;
        if (!strcmp(x->src, "smi-q") && x->ns != DR_NS_SMI)
            continue; /* an excerpt of -q */
        int k;
        for (k = 0; k < ng; k++)
            if (!strcmp(grp[k].file, x->file) && !strcmp(grp[k].src, x->src))
                break;
        if (k == ng) {
            if (ng >= 64)
                continue;
            snprintf(grp[k].file, sizeof grp[k].file, "%s", x->file);
            snprintf(grp[k].src, sizeof grp[k].src, "%s", x->src);
            grp[k].n = 0;
            grp[k].addressed = 1;
            ng++;
        }
        grp[k].n++;
        if (!x->busid[0])
            grp[k].addressed = 0;
    }
    char counts[200] = "", subsets[200] = "";
    int nmax = 0;
    for (int i = 0; i < ng; i++)
        nmax = grp[i].n > nmax ? grp[i].n : nmax;
    for (int i = 0; i < ng; i++) {
        for (int f = 0; f < m->nfiles; f++)
            if (!strcmp(m->files[f].name, grp[i].file) && grp[i].n > m->files[f].ngpus) {
                m->files[f].ngpus = grp[i].n;
                snprintf(m->files[f].gpu_src, sizeof m->files[f].gpu_src, "%s", grp[i].src);
            }
        /* a CUDA program's run over some of the GPUs, each named by its bus
           address: a subset of the machine, not a disagreement */
        int subset = grp[i].n < nmax && grp[i].addressed && strcmp(grp[i].src, "smi") != 0 &&
                     strcmp(grp[i].src, "smi-q") != 0 && strcmp(grp[i].src, "topo") != 0 &&
                     strcmp(grp[i].src, "sysfs") != 0 && strcmp(grp[i].src, "lspci") != 0;
        if (grp[i].n != nmax && !subset)
            c->d->inconsistent = 1;
        char *out = subset ? subsets : counts;
        size_t l = strlen(out);
        if (l + 48 < sizeof counts)
            snprintf(out + l, sizeof counts - l, "%s%.36s %d", l ? ", " : "", grp[i].file, grp[i].n);
    }
    if (c->d->inconsistent)
        dr_note(m, "the outputs list different numbers of GPUs (%s%s%s): from other machines, other times, or "
                   "excerpts; conclusions about GPUs missing from some outputs are less certain",
                counts, subsets[0] ? "; " : "", subsets);
    else if (subsets[0])
        dr_note(m, "some outputs are runs over part of the %d GPUs (%s), e.g. with CUDA_VISIBLE_DEVICES: each "
                   "names its GPUs by bus address, and its device numbers are read as its own",
                nmax, subsets);
    for (int g = 0; g < m->ngpus; g++) {
        char lab[48];
        dr_gpu_label(m, g, lab, sizeof lab);
        if (m->gpus[g].name_conflict)
            dr_note(m, "%s is named differently by different outputs: they may come from different machines", lab);
    }
    if (m->smi_unplaced) {
        int known = 0;
        for (int g = 0; g < m->ngpus; g++)
            known += m->gpus[g].busid[0] != 0;
        dr_note(m, "%.60s: %d GPUs by number only, %d known by address elsewhere; which number is which cannot be "
                   "told (the PCI order places them only when every address is known), so their facts are left "
                   "out; plain nvidia-smi lists both",
                m->smi_unplaced_files, m->smi_unplaced, known);
    }
    char assumed[200] = "", renum[200] = "";
    for (int g = 0; g < m->ngpus; g++) {
        char lab[48];
        dr_gpu_label(m, g, lab, sizeof lab);
        if (m->gpus[g].assumed_index)
            add_label(assumed, sizeof assumed, lab);
        if (m->gpus[g].cuda_renumbered)
            add_label(renum, sizeof renum, lab);
    }
    if (assumed[0])
        dr_note(m, "GPU numbers of nvidia-smi and of CUDA were taken as equal for %s (CUDA_DEVICE_ORDER=PCI_BUS_ID "
                   "makes them so)",
                assumed);
    if (renum[0] && !subsets[0])
        dr_note(m, "CUDA device numbers differ between outputs for %s (runs with CUDA_VISIBLE_DEVICES): the device "
                   "numbers of each output are matched to GPUs by its own device list (bus addresses)",
                renum);
    if (m->truncated_recs)
        dr_note(m, "more GPUs, bridges or pair observations than p2p-doctor keeps (%d dropped): the report covers the "
                   "first ones",
                m->truncated_recs);
}

/* ------------------------------------------------------------ the whole */

static void finish(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    int blocked = 0;
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY) {
            blocked++;
        }
    int unknown = c->unexplained;
    if (blocked) {
        d->exit_code = DR_EXIT_BLOCKED;
        d->status = "BLOCKED";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0], "%d finding%s stop%s or break%s P2P", blocked,
                 blocked == 1 ? "" : "s", blocked == 1 ? "s" : "", blocked == 1 ? "s" : "");
    } else if (m->ngpus == 0 && unknown) {
        /* nothing read lists the GPUs (sysfs would say 0): how many there
           are, and so the pairs, cannot be told; not "fewer than two" */
        d->exit_code = DR_EXIT_INSUFFICIENT;
        d->status = "INSUFFICIENT-DATA";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                 "no NVIDIA GPU could be identified in what was read: neither the GPUs nor their pairs can be told");
    } else if (m->ngpus < 2) {
        d->exit_code = DR_EXIT_NO_PAIR;
        d->status = "FEWER-THAN-2-GPUS";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                 "%d NVIDIA GPU%s found in what was read: no pair to diagnose", m->ngpus, m->ngpus == 1 ? "" : "s");
    } else if (unknown) {
        d->exit_code = DR_EXIT_INSUFFICIENT;
        d->status = "INSUFFICIENT-DATA";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                 "nothing found that stops P2P, but the outputs cannot show every pair's state, or why P2P fails "
                 "where it does");
    } else {
        d->exit_code = DR_EXIT_OK;
        d->status = "OK";
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0], "%s",
                 c->o->preinstall ? "nothing found that would stop P2P after the install"
                                  : "nothing found that stops P2P, and every GPU pair has a verdict");
        if (d->unverified)
            snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0],
                     "P2P is seen on %d pair%s, but no output checked that its data arrives intact: build.sh doctor "
                     "--verify checks every byte",
                     d->unverified, d->unverified == 1 ? "" : "s");
    }
    int degr = 0;
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].severity == DR_SEV_DEGRADES || (d->f[i].severity == DR_SEV_BLOCKS &&
                                                     d->f[i].certainty == DR_CERT_POSSIBLE))
            degr++;
    if (degr && d->nreasons < 4)
        snprintf(d->reasons[d->nreasons++], sizeof d->reasons[0], "%d more finding%s to check (degrades, or possible)",
                 degr, degr == 1 ? "" : "s");
}

int dr_diagnose(dr_model *m, const dr_opts *o, dr_diag *d)
{
    static const dr_opts none = {0, ""};
    ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.d = d;
    c.o = o ? o : &none;
    c.new_keys = -1;
    memset(d, 0, sizeof(*d));
    c.ps = calloc((size_t)DR_MAX_GPUS * DR_MAX_GPUS, sizeof(pobs_sum));
    if (!c.ps)
        return -1;
    summarize_pobs(&c);
    module_facts(&c);
    check_counts(&c);
    rule_keys(&c);
    rule_options(&c);
    rule_module(&c);
    rule_iommu(&c);
    rule_bar1(&c);
    rule_display(&c);
    apply_setpci(&c);
    rule_acs(&c);
    rule_topology(&c);
    rule_nvlink(&c);
    rule_links(&c);
    rule_models(&c);
    rule_vm(&c);
    rule_nvlink_keep(&c);
    rule_symptoms(&c);
    rule_corruption(&c);
    rule_hazards(&c);
    verdicts(&c);
    rule_stock_guess(&c);
    rule_cut(&c);
    rule_insufficient(&c);
    works_now(&c);
    finish(&c);
    free(c.ps);
    return 0;
}

void dr_diag_free(dr_diag *d)
{
    free(d->pairs);
    d->pairs = NULL;
}
