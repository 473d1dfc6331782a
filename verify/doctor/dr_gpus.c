/* dr_gpus.c - p2p-doctor's rules: the GPUs' identity.  The records of every
 * output merged into GPUs (by PCI address, then by nvidia-smi's or CUDA's
 * number), an index of an output mapped to its GPU, a GPU's label (pure C).
 * See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dparse.h"

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

int dr_is_generic_name(const char *name)
{
    /* lspci without pci.ids: "NVIDIA Corporation Device 2684" */
    return !name[0] || strstr(name, "Device ") != NULL;
}

/* Same model, or a name unknown. */
int dr_same_model(const char *a, const char *b)
{
    if (dr_is_generic_name(a) || dr_is_generic_name(b))
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
    if (r->name[0] && !dr_is_generic_name(r->name)) {
        /* names from nvidia-smi and CUDA before lspci's chip names */
        int lspci = !strcmp(r->src, "lspci");
        if (!x->name[0] || (dr_is_generic_name(x->name)) || (strchr(x->name, '[') && !lspci)) {
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
                    dr_same_model(m->gpus[h].name, x->name) && cuda_in_pci_order(m)) {
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
                               !dr_same_model(m->gpus[g].name, x->name)))
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

/* dr_add_label LIST CAP LABEL: "a, b" lists of GPU or pair labels for notes;
 * ", ..." once when the next one does not fit. */
void dr_add_label(char *list, size_t cap, const char *label)
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
int dr_map_index_at(dr_model *m, int ns, int idx, const dr_ev *e)
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
