/* dreport.c - p2p-doctor's text and JSON reports (pure C). */
#include "dreport.h"

#include <string.h>

#include "json.h"

#ifndef PD_VERSION
#define PD_VERSION "1.0.0"
#endif

static const char *kind_name(unsigned k)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {
        {DR_K_SMIQ, "nvidia-smi -q"},      {DR_K_SMI, "nvidia-smi"},
        {DR_K_TOPO, "topo -m"},            {DR_K_P2PCAP, "topo -p2p"},
        {DR_K_NVLINK, "nvlink -s"},        {DR_K_LSPCIV, "lspci -vvv"},
        {DR_K_LSPCI, "lspci"},             {DR_K_DMESG, "kernel log"},
        {DR_K_CMDLINE, "command line"},    {DR_K_MODOPTS, "module options"},
        {DR_K_PARAMS, "driver params"},    {DR_K_VERSION, "driver version"},
        {DR_K_MODINFO, "modinfo"},         {DR_K_SIMPLEP2P, "simpleP2P"},
        {DR_K_P2PBW, "p2pBandwidthLatencyTest"}, {DR_K_NCCL, "NCCL"},
        {DR_K_VERIFY, "p2p-verify"},       {DR_K_SECBOOT, "Secure Boot"},
        {DR_K_IOMMU, "IOMMU state"},       {DR_K_SYSFS, "sysfs"},
        {DR_K_USERSPACE, "userspace libraries"}, {DR_K_P2PSTATE, "nvidia-p2p state"},
        {DR_K_MANIFEST, "bundle manifest"}, {DR_K_CUDAERR, "P2P test result"},
        {DR_K_DEVQUERY, "GPU list"},       {DR_K_NVBW, "nvbandwidth"},
        {DR_K_SETPCI, "setpci"},           {DR_K_LSPCIT, "lspci -t"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (k & names[i].bit)
            return names[i].name;
    return NULL;
}

static void kinds_text(unsigned kinds, char *out, size_t outlen)
{
    size_t o = 0;
    out[0] = '\0';
    for (unsigned bit = 1; bit; bit <<= 1) {
        if (!(kinds & bit))
            continue;
        if ((bit == DR_K_LSPCI && (kinds & DR_K_LSPCIV)) || (bit == DR_K_SMI && (kinds & DR_K_SMIQ)))
            continue;
        const char *n = kind_name(bit);
        if (!n)
            continue;
        int w = snprintf(out + o, outlen - o, "%s%s", o ? ", " : "", n);
        if (w < 0 || (size_t)w >= outlen - o)
            break;
        o += (size_t)w;
    }
}

static void gpu_line(FILE *f, const dr_model *m, int g)
{
    const dr_gpu *x = &m->gpus[g];
    char lab[48];
    dr_gpu_label(m, g, lab, sizeof lab);
    fprintf(f, "  %-11s %-13s %-30s", lab, x->busid[0] ? x->busid : "?", x->name[0] ? x->name : "?");
    if (x->vram_mib.v > 0)
        fprintf(f, "  VRAM %lld MiB", x->vram_mib.v);
    if (x->bar1_mib.v > 0)
        fprintf(f, "  BAR1 %lld MiB", x->bar1_mib.v);
    if (x->bar1_unassigned.v == 1)
        fprintf(f, "  BAR1 unassigned");
    if (x->gen_max.v > 0 || x->width_max.v > 0)
        fprintf(f, "  PCIe max gen%lld x%lld", x->gen_max.v > 0 ? x->gen_max.v : x->gen_dev_max.v, x->width_max.v);
    if (x->display.v >= 0)
        fprintf(f, "  display %s", x->display.v ? "yes" : "no");
    if (x->nvlinks.v > 0)
        fprintf(f, "  NVLink %lld", x->nvlinks.v);
    fputc('\n', f);
}

static void finding_text(FILE *f, const dr_model *m, const dr_finding *x)
{
    char a[48] = "", b[48] = "";
    if (x->a >= 0)
        dr_gpu_label(m, x->a, a, sizeof a);
    if (x->b >= 0)
        dr_gpu_label(m, x->b, b, sizeof b);
    fprintf(f, "  %s", x->id);
    if (x->scope == DR_SCOPE_GPU)
        fprintf(f, " (%s)", a);
    else if (x->scope == DR_SCOPE_PAIR)
        fprintf(f, " (%s-%s)", a, b);
    fprintf(f, " [%s, %s]\n    %s\n", dr_sev_name(x->severity), dr_cert_name(x->certainty), x->summary);
    if (x->ncause)
        fprintf(f, "    likely causes, most likely first:\n");
    else if (x->ruled_out[0] || x->not_shown[0])
        fprintf(f, "    likely causes: none that the outputs read show\n");
    for (int i = 0; i < x->ncause; i++)
        fprintf(f, "      %d. %s [%s]: %s\n", i + 1, x->cause[i].id, dr_cert_name(x->cause[i].certainty), x->cause[i].why);
    if (x->ruled_out[0])
        fprintf(f, "    ruled out: %s\n", x->ruled_out);
    if (x->not_shown[0])
        fprintf(f, "    not shown by the outputs (collect them): %s\n", x->not_shown);
    for (int i = 0; i < x->nev; i++)
        fprintf(f, "    evidence: %s:%ld: %s\n", x->ev[i].file, x->ev[i].line, x->ev[i].text);
    if (x->fix[0])
        fprintf(f, "    fix: %s\n", x->fix);
}

void dr_report_text(FILE *f, const dr_model *m, const dr_diag *d, const char *source, int preinstall)
{
    fprintf(f, "p2p-doctor %s - why GPU peer-to-peer works or not, from %s%s\n", PD_VERSION, source,
            preinstall ? " (before the install: the verdicts are what to expect after it)" : "");
    fprintf(f, "\n== Inputs ==\n");
    for (int i = 0; i < m->nfiles; i++) {
        const dr_file *x = &m->files[i];
        char kinds[200];
        kinds_text(x->kinds, kinds, sizeof kinds);
        fprintf(f, "  %-28s %-10s", x->name, x->status);
        if (!strcmp(x->status, "read") || !strcmp(x->status, "partial"))
            fprintf(f, " %ld line%s: %s", x->lines, x->lines == 1 ? "" : "s", kinds[0] ? kinds : "nothing recognised");
        if (x->ngpus > 0)
            fprintf(f, " (%d GPU%s)", x->ngpus, x->ngpus == 1 ? "" : "s");
        if (x->note[0])
            fprintf(f, "%s%s", (!strcmp(x->status, "read") || !strcmp(x->status, "partial")) ? "; " : " ", x->note);
        fputc('\n', f);
    }
    if (m->nfiles == 0)
        fprintf(f, "  (no file)\n");
    for (int i = 0; i < m->nnotes; i++)
        fprintf(f, "  note: %s\n", m->notes[i]);
    if (d->module_version[0])
    {
        if (d->p2p_pending[0])
            fprintf(f, "  driver: kernel module %s (from %s), not nvidia-p2p-dkms %s: that one loads at the next "
                       "boot\n",
                    d->module_version, d->module_version_src, d->p2p_pending);
        else
            fprintf(f, "  driver: kernel module %s (from %s)%s\n", d->module_version, d->module_version_src,
                    d->ours == 1 ? ", installed by nvidia-p2p" : (d->ours == 0 ? ", not nvidia-p2p's" : ""));
    }

    fprintf(f, "\n== GPUs ==\n");
    if (m->ngpus == 0)
        fprintf(f, "  none identified in the outputs read\n");
    for (int g = 0; g < m->ngpus; g++)
        gpu_line(f, m, g);

    int nm = 0, ng = 0;
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].scope == DR_SCOPE_MACHINE)
            nm++;
        else
            ng++;
    fprintf(f, "\n== Machine-wide findings ==\n");
    if (!nm)
        fprintf(f, "  none\n");
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].scope == DR_SCOPE_MACHINE)
            finding_text(f, m, &d->f[i]);
    fprintf(f, "\n== GPU and pair findings ==\n");
    if (!ng)
        fprintf(f, "  none\n");
    for (int i = 0; i < d->nf; i++)
        if (d->f[i].scope != DR_SCOPE_MACHINE)
            finding_text(f, m, &d->f[i]);

    fprintf(f, "\n== Pairs (row = GPU that accesses, column = peer) ==\n");
    if (d->npairs == 0)
        fprintf(f, "  no pair: fewer than two GPUs identified\n");
    for (int i = 0; i < d->npairs; i++) {
        const dr_pairv *v = &d->pairs[i];
        char a[48], b[48];
        dr_gpu_label(m, v->a, a, sizeof a);
        dr_gpu_label(m, v->b, b, sizeof b);
        fprintf(f, "  %s -> %-8s %-13s %-9s %s", a, b, dr_verdict_name(v->verdict),
                v->basis == DR_BASIS_OBSERVED ? "observed" : (v->basis == DR_BASIS_INFERRED ? "inferred" : "-"),
                v->why);
        if (v->ncauses) {
            fprintf(f, "; causes:");
            for (int k = 0; k < v->ncauses; k++)
                fprintf(f, " %s", v->causes[k]);
        }
        fputc('\n', f);
        if (v->ev.line)
            fprintf(f, "      %s:%ld: %s\n", v->ev.file, v->ev.line, v->ev.text);
    }
    if (d->nmissing) {
        fprintf(f, "\n== Collect ==\n  not in what was read, and would tell more:\n");
        for (int i = 0; i < d->nmissing; i++)
            fprintf(f, "  - %s\n", d->missing[i]);
        fprintf(f, "  (build.sh doctor --collect DIR gathers all of them)\n");
    }
    fprintf(f, "\n== VERDICT: %s (exit %d) ==\n", d->status, d->exit_code);
    for (int i = 0; i < d->nreasons; i++)
        fprintf(f, "  - %s\n", d->reasons[i]);
}

static void json_ev(pv_json *j, const char *key, const dr_ev *e)
{
    pvj_obj(j, key);
    pvj_str(j, "file", e->file);
    pvj_int(j, "line", e->line);
    pvj_str(j, "text", e->text);
    pvj_end_obj(j);
}

static void json_num(pv_json *j, const char *key, const dr_num *n)
{
    if (n->v < 0)
        pvj_null(j, key);
    else
        pvj_int(j, key, n->v);
}

void dr_report_json(FILE *f, const dr_model *m, const dr_diag *d, const char *source, int preinstall)
{
    pv_json j;
    pvj_init(&j, f);
    pvj_obj(&j, NULL);
    pvj_str(&j, "tool", "p2p-doctor");
    pvj_str(&j, "version", PD_VERSION);
    pvj_int(&j, "schema", DR_SCHEMA);
    pvj_str(&j, "source", source);
    pvj_bool(&j, "preinstall", preinstall);
    pvj_arr(&j, "inputs");
    for (int i = 0; i < m->nfiles; i++) {
        const dr_file *x = &m->files[i];
        pvj_obj(&j, NULL);
        pvj_str(&j, "file", x->name);
        pvj_str(&j, "status", x->status);
        pvj_int(&j, "bytes", x->bytes);
        pvj_int(&j, "lines", x->lines);
        pvj_arr(&j, "recognised");
        for (unsigned bit = 1; bit; bit <<= 1)
            if ((x->kinds & bit) && kind_name(bit))
                pvj_str(&j, NULL, kind_name(bit));
        pvj_end_arr(&j);
        if (x->ngpus >= 0)
            pvj_int(&j, "gpus", x->ngpus);
        else
            pvj_null(&j, "gpus");
        pvj_str(&j, "note", x->note[0] ? x->note : NULL);
        pvj_end_obj(&j);
    }
    pvj_end_arr(&j);
    pvj_arr(&j, "notes");
    for (int i = 0; i < m->nnotes; i++)
        pvj_str(&j, NULL, m->notes[i]);
    pvj_end_arr(&j);
    pvj_bool(&j, "inputs_consistent", !d->inconsistent);
    pvj_obj(&j, "driver");
    pvj_str(&j, "module_version", d->module_version[0] ? d->module_version : NULL);
    pvj_str(&j, "module_version_from", d->module_version_src);
    if (d->ours < 0)
        pvj_null(&j, "nvidia_p2p_module");
    else
        pvj_bool(&j, "nvidia_p2p_module", d->ours);
    pvj_end_obj(&j);
    pvj_arr(&j, "gpus");
    for (int g = 0; g < m->ngpus; g++) {
        const dr_gpu *x = &m->gpus[g];
        char lab[48];
        dr_gpu_label(m, g, lab, sizeof lab);
        pvj_obj(&j, NULL);
        pvj_int(&j, "id", g);
        pvj_str(&j, "label", lab);
        if (x->smi_index >= 0)
            pvj_int(&j, "nvidia_smi_index", x->smi_index);
        else
            pvj_null(&j, "nvidia_smi_index");
        if (x->cuda_index >= 0)
            pvj_int(&j, "cuda_index", x->cuda_index);
        else
            pvj_null(&j, "cuda_index");
        pvj_str(&j, "pci_bus_id", x->busid[0] ? x->busid : NULL);
        pvj_str(&j, "name", x->name[0] ? x->name : NULL);
        json_num(&j, "vram_mib", &x->vram_mib);
        json_num(&j, "bar1_mib", &x->bar1_mib);
        json_num(&j, "bar1_used_mib", &x->bar1_used_mib);
        if (x->bar1_unassigned.v == 1)
            pvj_bool(&j, "bar1_unassigned", 1);
        else
            pvj_null(&j, "bar1_unassigned");
        json_num(&j, "pcie_gen_max", &x->gen_max);
        json_num(&j, "pcie_width_current", &x->width_cur);
        json_num(&j, "pcie_width_max", &x->width_max);
        if (x->display.v < 0)
            pvj_null(&j, "display");
        else
            pvj_bool(&j, "display", (int)x->display.v);
        json_num(&j, "nvlinks", &x->nvlinks);
        json_num(&j, "numa_node", &x->numa);
        pvj_end_obj(&j);
    }
    pvj_end_arr(&j);
    pvj_arr(&j, "findings");
    for (int i = 0; i < d->nf; i++) {
        const dr_finding *x = &d->f[i];
        pvj_obj(&j, NULL);
        pvj_str(&j, "id", x->id);
        pvj_str(&j, "scope", x->scope == DR_SCOPE_MACHINE ? "machine" : (x->scope == DR_SCOPE_GPU ? "gpu" : "pair"));
        pvj_arr(&j, "gpus");
        if (x->a >= 0)
            pvj_int(&j, NULL, x->a);
        if (x->b >= 0)
            pvj_int(&j, NULL, x->b);
        pvj_end_arr(&j);
        pvj_str(&j, "severity", dr_sev_name(x->severity));
        pvj_str(&j, "certainty", dr_cert_name(x->certainty));
        pvj_str(&j, "summary", x->summary);
        pvj_arr(&j, "evidence");
        for (int k = 0; k < x->nev; k++)
            json_ev(&j, NULL, &x->ev[k]);
        pvj_end_arr(&j);
        pvj_str(&j, "fix", x->fix[0] ? x->fix : NULL);
        pvj_arr(&j, "causes");
        for (int k = 0; k < x->ncause; k++) {
            pvj_obj(&j, NULL);
            pvj_str(&j, "id", x->cause[k].id);
            pvj_str(&j, "certainty", dr_cert_name(x->cause[k].certainty));
            pvj_str(&j, "why", x->cause[k].why);
            pvj_end_obj(&j);
        }
        pvj_end_arr(&j);
        pvj_str(&j, "ruled_out", x->ruled_out[0] ? x->ruled_out : NULL);
        pvj_str(&j, "not_shown", x->not_shown[0] ? x->not_shown : NULL);
        pvj_end_obj(&j);
    }
    pvj_end_arr(&j);
    pvj_arr(&j, "pairs");
    for (int i = 0; i < d->npairs; i++) {
        const dr_pairv *v = &d->pairs[i];
        pvj_obj(&j, NULL);
        pvj_int(&j, "from", v->a);
        pvj_int(&j, "to", v->b);
        pvj_str(&j, "verdict", dr_verdict_name(v->verdict));
        pvj_str(&j, "basis", v->basis == DR_BASIS_OBSERVED ? "observed"
                                                            : (v->basis == DR_BASIS_INFERRED ? "inferred" : "none"));
        pvj_str(&j, "why", v->why);
        pvj_arr(&j, "causes");
        for (int k = 0; k < v->ncauses; k++)
            pvj_str(&j, NULL, v->causes[k]);
        pvj_end_arr(&j);
        if (v->ev.line)
            json_ev(&j, "evidence", &v->ev);
        else
            pvj_null(&j, "evidence");
        pvj_end_obj(&j);
    }
    pvj_end_arr(&j);
    pvj_arr(&j, "collect");
    for (int i = 0; i < d->nmissing; i++)
        pvj_str(&j, NULL, d->missing[i]);
    pvj_end_arr(&j);
    pvj_obj(&j, "verdict");
    pvj_str(&j, "status", d->status);
    pvj_int(&j, "exit_code", d->exit_code);
    pvj_arr(&j, "reasons");
    for (int i = 0; i < d->nreasons; i++)
        pvj_str(&j, NULL, d->reasons[i]);
    pvj_end_arr(&j);
    pvj_end_obj(&j);
    pvj_end_obj(&j);
    pvj_finish(&j);
}

static void brief_text(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\t' || *s == '\n' ? ' ' : *s, f);
}

void dr_report_brief(FILE *f, const dr_model *m, const dr_diag *d)
{
    char a[48], b[48];
    for (int g = 0; g < m->ngpus; g++) {
        const dr_gpu *x = &m->gpus[g];
        dr_gpu_label(m, g, a, sizeof a);
        fprintf(f, "gpu\t%s\t%s\t%s\t", a, x->busid[0] ? x->busid : "-", x->name[0] ? x->name : "-");
        if (x->bar1_unassigned.v == 1)
            fprintf(f, "BAR1 unassigned");
        else if (x->bar1_mib.v > 0)
            fprintf(f, "BAR1 %lld MiB", x->bar1_mib.v);
        else
            fprintf(f, "BAR1 unknown");
        if (x->vram_mib.v > 0)
            fprintf(f, ", VRAM %lld MiB", x->vram_mib.v);
        fputc('\n', f);
    }
    for (int i = 0; i < d->nf; i++) {
        const dr_finding *x = &d->f[i];
        a[0] = b[0] = '\0';
        if (x->a >= 0)
            dr_gpu_label(m, x->a, a, sizeof a);
        if (x->b >= 0)
            dr_gpu_label(m, x->b, b, sizeof b);
        fprintf(f, "finding\t%s\t%s\t%s\t%s%s%s\t", x->id, dr_sev_name(x->severity), dr_cert_name(x->certainty),
                a[0] ? a : "machine", b[0] ? "-" : "", b);
        brief_text(f, x->summary);
        fputc('\n', f);
    }
    for (int i = 0; i < d->npairs; i++) {
        const dr_pairv *v = &d->pairs[i];
        dr_gpu_label(m, v->a, a, sizeof a);
        dr_gpu_label(m, v->b, b, sizeof b);
        fprintf(f, "pair\t%s\t%s\t%s\t%s\t", a, b, dr_verdict_name(v->verdict),
                v->basis == DR_BASIS_OBSERVED ? "observed" : (v->basis == DR_BASIS_INFERRED ? "inferred" : "none"));
        brief_text(f, v->why);
        fputc('\n', f);
    }
    if (d->works_now)
        fprintf(f, "works\t%d\t%s\n", d->works_now, d->module_version[0] ? d->module_version : "-");
    fprintf(f, "verdict\t%s\t%d\n", d->status, d->exit_code);
}
