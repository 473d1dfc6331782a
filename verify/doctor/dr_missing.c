/* dr_missing.c - p2p-doctor's rules about what was read: the outputs missing
 * for a verdict (insufficient-data), a test cut short, the likely module
 * where nothing else explains it, and outputs that disagree on the GPUs (pure
 * C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dparse.h"

/* ------------------------------------------------------------ what is missing */

unsigned dr_kinds_read(dr_model *m)
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
    unsigned k = dr_kinds_read(c->m);
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
void dr_rule_stock_guess(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    if (c->o->preinstall || d->ours == 1 || m->sys.module_open.v == 1 || dr_has_finding(d, "stock-module-loaded"))
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
                !dr_same_model(m->gpus[a].name, m->gpus[b].name) || dr_is_generic_name(m->gpus[a].name) ||
                dr_pair_nvlink(c, a, b))
                continue;
            for (int i = 0; i < d->nf; i++)
                if (dr_finding_applies(&d->f[i], a, b) && dr_is_cause(&d->f[i]))
                    return;
            dr_finding *f = dr_finding_get(d, "stock-module-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
                                           DR_CERT_POSSIBLE);
            if (!f)
                return;
            SUMMARY(f, "identical GeForce GPUs get no peer access and the outputs show no other cause: NVIDIA's stock "
                       "module gives GeForce cards no PCIe P2P, so the loaded module is probably one without the P2P "
                       "patches (or nvidia-p2p's without its options); /proc/driver/nvidia/version and "
                       "/proc/driver/nvidia/params tell");
            FIX(f, "make sure the patched module is the one loaded: sudo build.sh install <tag> (it removes or "
                   "overrides the other modules), reboot, and check cat /proc/driver/nvidia/version");
            dr_f_ev(f, &s->access_ev);
            if (m->sys.smi_driver_version[0])
                dr_f_ev(f, &m->sys.smi_driver_version_ev);
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
void dr_rule_cut(ctx *c)
{
    dr_sys *s = &c->m->sys;
    for (int k = 0; k < s->ncut; k++) {
        dr_finding *f = dr_finding_get(c->d, "test-output-cut", DR_SCOPE_MACHINE, -1, -1, DR_SEV_DEGRADES, DR_CERT_LIKELY);
        if (!f)
            return;
        int access = strcmp(s->cut[k].test, "the NCCL test") != 0;
        SUMMARY(f, "the output of %s stops at %s: the test hung or died there (or the paste was cut)%s; a test that "
                   "stalls on peer traffic is most often the IOMMU translating peer DMA or ACS redirecting it",
                s->cut[k].test, s->cut[k].where,
                access ? ", so the peer access it reported before is no sign that P2P works" : "");
        FIX(f, "%s", dr_has_finding(c->d, "iommu-translated") || dr_has_finding(c->d, "acs-redirect")
                         ? "see iommu-translated / acs-redirect above; then run the test again to its end"
                         : "run the test again and keep its whole output; if it stops there again, collect the kernel "
                           "log (IOMMU faults), lspci -vvv (ACS) and /proc/cmdline (build.sh doctor --collect)");
        dr_f_ev(f, &s->cut[k].ev);
    }
}

void dr_rule_insufficient(ctx *c)
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
        if (dr_pair_symptom(c, v->a, v->b) && v->ncauses == 0)
            unexplained = 1;
    }
    if (m->sys.p2p_error.v == 1 || symptom_unexplained(d))
        unexplained = 1;
    if (m->sys.ncut > 0)
        unexplained = 1; /* a test stopped: whether P2P works is not shown */
    int corrupt = dr_has_finding(d, "p2p-data-corruption") || c->hazard_any;
    int cause = 0;
    for (int i = 0; i < d->nf; i++)
        if (dr_is_cause(&d->f[i]) && d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY)
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
        if (dr_is_cause(&d->f[i]) && d->f[i].severity == DR_SEV_BLOCKS && d->f[i].certainty >= DR_CERT_LIKELY)
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
    dr_finding *f = dr_finding_get(d, "insufficient-data", DR_SCOPE_MACHINE, -1, -1, DR_SEV_INFO, DR_CERT_CERTAIN);
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

void dr_check_counts(ctx *c)
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
            dr_add_label(assumed, sizeof assumed, lab);
        if (m->gpus[g].cuda_renumbered)
            dr_add_label(renum, sizeof renum, lab);
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
