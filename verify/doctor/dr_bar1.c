/* dr_bar1.c - p2p-doctor's rules about each GPU: BAR1 (its size against
 * VRAM, Resizable BAR, the static mapping), a display on it, GPU models, a
 * virtual machine (pure C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <string.h>

#include "dparse.h"

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
const char *dr_driver_version(ctx *c)
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
    const char *v = dr_driver_version(c);
    if (bar1 - vram >= 1024 || (v && dp_vercmp(v, "565") < 0))
        return;
    if (x->g >= 0 && dr_gpu_observed_ok(c, x->g))
        return;
    dr_finding *f = dr_finding_get(c->d, "bar1-as-large-as-vram", x->g >= 0 ? DR_SCOPE_GPU : DR_SCOPE_MACHINE, x->g, -1,
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
    dr_f_ev(f, &x->bar1->ev);
    dr_f_ev(f, &x->vram->ev);
}

/* BAR1 at its largest and below VRAM (48 GB RTX 4090 D with 32 GiB): no
 * static BAR1. With this project's modules from 580.65.06 on (p2p-0014) its
 * pairs with GPUs that lack static BAR1 too take a BAR1 window per shared
 * allocation; before that (p2p-0007), and with other modules, it has no BAR1
 * P2P. Says which route applies, with the window limits. */
static void bar1_smaller_than_vram(ctx *c, const bar1_view *x, long long bar1, long long vram, long long rmax)
{
    const char *v = dr_driver_version(c);
    int ours = (c->o->preinstall && c->o->tag[0]) || c->d->ours == 1;
    int windows = v && ours && dp_vercmp(v, "580.65.06") >= 0;
    int scope = x->g >= 0 ? DR_SCOPE_GPU : DR_SCOPE_MACHINE;
    long long budget = bar1 > 64 ? bar1 - 64 : 0;
    dr_finding *f = dr_finding_get(c->d, "bar1-smaller-than-vram", scope, x->g, -1, windows ? DR_SEV_DEGRADES : DR_SEV_BLOCKS,
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
    dr_f_ev(f, &x->bar1->ev);
    dr_f_ev(f, &x->vram->ev);
    dr_f_ev(f, &x->rmax->ev);
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
        f = dr_finding_get(d, "bar1-unassigned", scope, x->g, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "%s's BAR1 got no address space: the firmware (or the kernel) found no MMIO window large "
                       "enough for it",
                    lab);
            dr_f_ev(f, ue);
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
        f = dr_finding_get(d, "rebar-off", scope, x->g, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
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
        dr_f_ev(f, &x->bar1->ev);
        dr_f_ev(f, &x->rmax->ev);
        dr_f_ev(f, &s->rebar_failed.ev);
        dr_f_ev(f, &s->rebar_option_applied.ev);
    } else if (vram > 0) {
        bar1_smaller_than_vram(c, x, bar1, vram, rmax);
    }
}

void dr_rule_bar1(ctx *c)
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
    int tied = dr_has_finding(d, "bar1-unassigned");
    if (!tied && (s->nnospace > 0 || s->nbar1_invalid > 0 ||
                  (s->rebar_failed.v == 1 && strstr(s->rebar_failed.ev.text, "No address space")))) {
        int gpu_dev = 0;
        dr_ev *e = s->nbar1_invalid ? &s->bar1_invalid[0].ev : (s->nnospace ? &s->nospace[0].ev : &s->rebar_failed.ev);
        for (int i = 0; i < s->nnospace; i++) {
            int g;
            if (dr_busid_is_gpu(m, s->nospace[i].busid, &g))
                gpu_dev = 1;
        }
        if (s->nbar1_invalid > 0 || s->rebar_failed.v == 1 || gpu_dev || !dr_gpu_addresses_known(m)) {
            f = dr_finding_get(d, "bar1-unassigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
                               s->nbar1_invalid > 0 ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
            if (f) {
                SUMMARY(f, "a GPU's BAR1 got no (or too little) address space: the kernel log shows the assignment "
                           "failing");
                dr_f_ev(f, e);
                for (int i = 0; i < s->nnospace; i++)
                    dr_f_ev(f, &s->nospace[i].ev);
            }
        }
    }
    if (dr_has_finding(d, "bar1-unassigned")) {
        for (int i = 0; i < d->nf; i++)
            if (!strcmp(d->f[i].id, "bar1-unassigned"))
                FIX(&d->f[i], "enable Above 4G decoding (and Resizable BAR) in the firmware; if it is on, the "
                               "firmware's 64-bit MMIO window is too small (raise its MMIO high size), or boot with "
                               "pci=realloc; a GPU in a slot wired to the chipset may get only a small window: use a "
                               "CPU slot");
    }
    /* static BAR1 */
    dr_flag_rules(c, DR_ONE_STATIC_BAR1);
    /* the static mapping exists, but RM refused to IOMMU-map it for a peer */
    if (s->peer_map_unaligned.v == 1 || s->peer_map_failed.v == 1) {
        char pair[48] = "a GPU pair";
        if (s->peer_map_from >= 0)
            snprintf(pair, sizeof pair, "the pair GPU%d -> GPU%d (RM's numbering)", s->peer_map_from, s->peer_map_to);
        f = dr_finding_get(d, "static-bar1-peer-map-failed", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
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
            dr_f_ev(f, &s->peer_map_unaligned.ev);
            dr_f_ev(f, &s->peer_map_failed.ev);
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
    const char *v = dr_driver_version(c);
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

void dr_rule_display(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    char lab[48];
    for (int i = 0; i < m->sys.nconsole; i++) {
        int g;
        if (dr_busid_is_gpu(m, m->sys.console[i].busid, &g) && m->gpus[g].boot_vga.v < 0) {
            m->gpus[g].boot_vga.v = 1;
            m->gpus[g].boot_vga.ev = m->sys.console[i].ev;
        }
    }
    for (int g = 0; g < m->ngpus; g++) {
        dr_gpu *x = &m->gpus[g];
        if (x->display.v != 1 && !(x->display.v < 0 && x->boot_vga.v == 1 && m->ngpus > 1))
            continue;
        if (dr_gpu_observed_ok(c, g))
            continue;
        dr_gpu_label(m, g, lab, sizeof lab);
        int fails = 0;
        for (int h = 0; h < m->ngpus; h++)
            if (h != g && (PS(c, g, h)->access == 0 || PS(c, h, g)->access == 0 || PS(c, g, h)->corrupt == 1))
                fails = 1;
        int placed = display_placement(c);
        int cert = fails || placed == 1 || dr_has_finding(d, "static-bar1-missing") ? DR_CERT_LIKELY : DR_CERT_POSSIBLE;
        dr_finding *f = dr_finding_get(d, "display-attached", DR_SCOPE_GPU, g, -1, DR_SEV_BLOCKS, cert);
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
        dr_f_ev(f, x->display.v == 1 ? &x->display.ev : &x->boot_vga.ev);
    }
}

void dr_rule_models(ctx *c)
{
    dr_model *m = c->m;
    dr_diag *d = c->d;
    for (int a = 0; a < m->ngpus; a++)
        for (int b = a + 1; b < m->ngpus; b++) {
            const char *na = m->gpus[a].name, *nb = m->gpus[b].name;
            if (dr_same_model(na, nb))
                continue;
            if (dr_pair_observed_ok(c, a, b))
                continue;
            pobs_sum *s = PS(c, a, b);
            int observed_no = s->access == 0 && s->access_src >= 4;
            dr_finding *f = dr_finding_get(d, "mixed-gpu-models", DR_SCOPE_PAIR, a, b, DR_SEV_BLOCKS,
                                           observed_no ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
            if (!f)
                continue;
            SUMMARY(f, "%s and %s are different models: CUDA enables peer access only between GPUs of one model "
                       "(and the BAR1 of many smaller cards cannot cover their VRAM)",
                    na, nb);
            FIX(f, "use P2P within each group of identical GPUs (CUDA_VISIBLE_DEVICES per job); pairs of different "
                   "models copy through host memory");
            if (observed_no)
                dr_f_ev(f, &s->access_ev);
        }
}

void dr_rule_vm(ctx *c)
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
    if (dr_all_observed_ok(c))
        return;
    dr_finding *f = dr_finding_get(c->d, "virtual-machine", DR_SCOPE_MACHINE, -1, -1, DR_SEV_INFO, DR_CERT_LIKELY);
    if (!f)
        return;
    SUMMARY(f, "this is a virtual machine with passed-through GPUs: P2P between them also depends on the host (its "
               "IOMMU, ACS, and the guest's PCIe topology)");
    FIX(f, "on the host: iommu=pt, the GPUs under one switch or root port, ACS off where allowed; in the guest a "
           "PCIe topology that places the GPUs under one root port (q35 with pcie-root-port)");
    dr_f_ev(f, e);
}
