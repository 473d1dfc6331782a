/* dr_findings.c - p2p-doctor's rules: the finding machinery (a finding per id
 * and scope, its evidence and texts, a symptom's causes) and the rules of one
 * flag, a table (pure C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ findings */

dr_finding *dr_finding_get(dr_diag *d, const char *id, int scope, int a, int b, int sev, int cert)
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

void dr_f_ev(dr_finding *f, const dr_ev *e)
{
    if (!f || !e || e->line == 0)
        return;
    for (int i = 0; i < f->nev; i++)
        if (f->ev[i].line == e->line && !strcmp(f->ev[i].file, e->file))
            return;
    if (f->nev < DR_FIND_EV)
        f->ev[f->nev++] = *e;
}

void dr_f_text(char *dst, size_t cap, const char *fmt, ...)
{
    if (dst[0])
        return; /* the first wording stays */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

int dr_has_finding(const dr_diag *d, const char *id)
{
    for (int i = 0; i < d->nf; i++)
        if (!strcmp(d->f[i].id, id))
            return 1;
    return 0;
}

/* ------------------------------------------------------------ rules of one flag */

/* The rules whose whole logic is one fact of the machine: where the flag (a
 * dr_num of dr_sys) is 1, one finding of the machine with fixed texts and the
 * flag's line as its evidence.  Each is applied where it stands among the
 * other rules (at: the rule function calls dr_flag_rules there), which keeps
 * the findings in the order they are reported. */
static const struct {
    int at;             /* DR_ONE_* */
    size_t flag;        /* offsetof(dr_sys, the flag) */
    int not_preinstall; /* a fact of the driver loaded now: not with --preinstall */
    const char *id;
    int severity, certainty;
    const char *summary, *fix; /* fix NULL: the rule adds it (one for every such finding) */
} k_flag[] = {
    {DR_ONE_DRIVER_NOT_LOADED, offsetof(dr_sys, driver_not_loaded), 1, "driver-not-loaded", DR_SEV_BLOCKS,
     DR_CERT_CERTAIN, "nvidia-smi cannot talk to the NVIDIA kernel module: it is not loaded (or failed to load)",
     "sudo modprobe nvidia and read its error (dmesg | grep -i nvrm); build.sh doctor names the cause "
     "when the kernel log shows it"},
    {DR_ONE_NOUVEAU, offsetof(dr_sys, nouveau), 0, "nouveau-loaded", DR_SEV_BLOCKS, DR_CERT_CERTAIN,
     "nouveau drives an NVIDIA GPU: the nvidia module cannot bind it",
     "blacklist nouveau (echo 'blacklist nouveau' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf), "
     "sudo update-initramfs -u, reboot"},
    {DR_ONE_STATIC_BAR1, offsetof(dr_sys, static_bar1_error), 0, "static-bar1-missing", DR_SEV_BLOCKS,
     DR_CERT_CERTAIN, "the driver could not map VRAM statically into BAR1; BAR1 P2P needs that mapping",
     "check that BAR1 covers VRAM (rebar-off, bar1-smaller-than-vram) and that no display uses the GPU "
     "(display-attached); the kernel log line names the GPU"},
    {DR_ONE_NCCL_WRONG, offsetof(dr_sys, nccl_wrong), 0, "p2p-data-corruption", DR_SEV_BLOCKS, DR_CERT_CERTAIN,
     "NCCL's collective results were wrong (nccl-tests #wrong or out-of-bounds values)", NULL},
};

void dr_flag_rules(ctx *c, int at)
{
    for (size_t i = 0; i < sizeof k_flag / sizeof k_flag[0]; i++) {
        const dr_num *n = (const dr_num *)((const char *)&c->m->sys + k_flag[i].flag);
        if (k_flag[i].at != at || n->v != 1 || (k_flag[i].not_preinstall && c->o->preinstall))
            continue;
        dr_finding *f = dr_finding_get(c->d, k_flag[i].id, DR_SCOPE_MACHINE, -1, -1, k_flag[i].severity,
                                       k_flag[i].certainty);
        if (!f)
            continue;
        SUMMARY(f, "%s", k_flag[i].summary);
        if (k_flag[i].fix)
            FIX(f, "%s", k_flag[i].fix);
        dr_f_ev(f, &n->ev);
    }
}

/* ------------------------------------------------------------ the causes of a symptom */

void dr_cat_text(char *dst, size_t cap, const char *fmt, ...)
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

void dr_cause_add(dr_finding *f, const char *id, int cert, const char *why)
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
const dr_finding *dr_finding_for(const dr_diag *d, const char *id, int a, int b)
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
