/* dr_module.c - p2p-doctor's rules about the driver: which module is loaded,
 * its registry keys and options, Secure Boot, nouveau, the userspace (pure
 * C).  See drules_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "drules_int.h"

#include <stdio.h>
#include <string.h>

#include "dparse.h"

/* ------------------------------------------------------------ module and keys */

void dr_module_facts(ctx *c)
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

long long dr_key_val(const dr_regkeys *k, const char *name)
{
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->key[i], name))
            return k->val[i];
    return -1;
}

/* The keys that select BAR1 P2P, for the generation. */
static int keys_complete(const dr_regkeys *k, int new_keys, char *why, size_t whylen)
{
    long long force = dr_key_val(k, "ForceP2P"), type = dr_key_val(k, "RMForceP2PType");
    long long pcie = dr_key_val(k, "RMPcieP2PType"), sb = dr_key_val(k, "RMForceStaticBar1");
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

void dr_rule_keys(ctx *c)
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
        long long type = dr_key_val(k, "RMForceP2PType"), pcie = dr_key_val(k, "RMPcieP2PType");
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
        dr_finding *f = dr_finding_get(d, "regkeys-wrong-generation", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
                                       c->new_keys >= 0 ? DR_CERT_CERTAIN : DR_CERT_LIKELY);
        if (!f)
            return;
        SUMMARY(f, "registry keys %s are of another driver generation for %s: %s", where[i], ver, bad);
        FIX(f, "use the keys of the driver's own generation: before 575 \"ForceP2P=0x11;RMForceP2PType=2\"; from "
               "575 on \"ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=1;RMForceStaticBar1=2\" (build.sh writes "
               "the family's own /etc/modprobe.d/nvidia-p2p.conf; the nvidia-p2p-dkms package ships "
               "/usr/lib/modprobe.d/nvidia-p2p.conf, which an /etc/modprobe.d/nvidia-p2p.conf overrides); then "
               "update-initramfs -u and reboot");
        dr_f_ev(f, &k->ev);
    }
}

void dr_rule_options(ctx *c)
{
    dr_sys *s = &c->m->sys;
    dr_diag *d = c->d;
    if (c->o->preinstall || dr_has_finding(d, "regkeys-wrong-generation"))
        return;
    char why[160];
    /* configured but not in effect */
    if (s->configured.present && s->applied.present && keys_complete(&s->configured, c->new_keys, why, sizeof why) &&
        !keys_complete(&s->applied, c->new_keys, why, sizeof why)) {
        dr_finding *f = dr_finding_get(d, "p2p-options-missing", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "the P2P registry keys are configured but not in effect in the loaded module (%s): the "
                       "module was loaded before the options were written, or from an initramfs without them",
                    why);
            FIX(f, "sudo update-initramfs -u (dracut -f on Fedora), then reboot; "
                   "/proc/driver/nvidia/params must then show them under RegistryDwords");
            dr_f_ev(f, &s->configured.ev);
            dr_f_ev(f, &s->applied.ev);
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
    dr_finding *f = dr_finding_get(d, "p2p-options-missing", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS,
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
        dr_f_ev(f, &k->ev);
    dr_f_ev(f, &s->p2p_installed_ev);
}

void dr_rule_module(ctx *c)
{
    dr_sys *s = &c->m->sys;
    dr_diag *d = c->d;
    dr_finding *f;
    if (s->module_rejected.v == 1) {
        f = dr_finding_get(d, "secure-boot-unsigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "the kernel refused to load an unsigned (or wrongly signed) module: Secure Boot (kernel "
                       "lockdown) requires signatures by an enrolled key");
            dr_f_ev(f, &s->module_rejected.ev);
            dr_f_ev(f, &s->secure_boot.ev);
        }
    } else if (s->secure_boot.v == 1 && (s->modinfo_signed.v == 0 || s->insert_eperm.v == 1) &&
               s->unsigned_loaded.v != 1) {
        f = dr_finding_get(d, "secure-boot-unsigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_LIKELY);
        if (f) {
            SUMMARY(f, "Secure Boot is enabled and the nvidia module %s", s->insert_eperm.v == 1
                                                                             ? "was refused (Operation not permitted)"
                                                                             : "is not signed: it will not load");
            dr_f_ev(f, &s->secure_boot.ev);
            dr_f_ev(f, &s->modinfo_signed.ev);
            dr_f_ev(f, &s->insert_eperm.ev);
        }
    }
    if ((f = NULL, dr_has_finding(d, "secure-boot-unsigned"))) {
        f = dr_finding_get(d, "secure-boot-unsigned", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
        FIX(f, "sign the modules with an enrolled key: sudo build.sh install <tag> signs them (DKMS's key, or "
               "--sign-key/--sign-cert), then sudo mokutil --import /var/lib/dkms/mok.pub, reboot and enroll "
               "it in MOK Manager; or turn Secure Boot off");
    }
    dr_flag_rules(c, DR_ONE_DRIVER_NOT_LOADED);
    if (s->no_gpu_found.v == 1 && c->m->ngpus > 0 && s->init_failed.v != 1) {
        f = dr_finding_get(d, "gpu-init-failed", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_LIKELY);
        if (f) {
            SUMMARY(f, "the driver found no usable GPU, although the outputs list %d", c->m->ngpus);
            FIX(f, "read the NVRM lines of dmesg (BAR assignment, RmInitAdapter, nouveau bound to the GPUs)");
            dr_f_ev(f, &s->no_gpu_found.ev);
        }
    }
    if (s->init_failed.v == 1 || s->fell_off_bus.v == 1) {
        f = dr_finding_get(d, "gpu-init-failed", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "a GPU failed in the driver (%s): it cannot take part in P2P",
                    s->fell_off_bus.v == 1 ? "it fell off the bus (Xid 79)" : "RmInitAdapter failed");
            FIX(f, "read the NVRM lines around it in dmesg; check power and seating, risers, and that BAR1 got "
                   "address space (bar1-unassigned)");
            dr_f_ev(f, &s->init_failed.ev);
            dr_f_ev(f, &s->fell_off_bus.ev);
        }
    }
    dr_flag_rules(c, DR_ONE_NOUVEAU);
    /* userspace */
    if (s->api_mismatch.v == 1 || s->nvml_mismatch.v == 1) {
        f = dr_finding_get(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            if (s->api_client[0])
                SUMMARY(f, "the userspace driver (%s) and the kernel module (%s) are different versions",
                        s->api_client, s->api_module);
            else
                SUMMARY(f, "the userspace driver (NVML%s%s) and the kernel module%s%s are different versions",
                        s->nuserspace ? " " : "", s->nuserspace ? s->userspace_versions[0] : "",
                        d->module_version[0] ? " " : "", d->module_version);
            dr_f_ev(f, &s->api_mismatch.ev);
            dr_f_ev(f, &s->nvml_mismatch.ev);
            dr_f_ev(f, &s->userspace_ev);
        }
    } else if (d->module_version[0] && s->nuserspace > 0 && !c->o->preinstall) {
        for (int i = 0; i < s->nuserspace; i++) {
            char *u = s->userspace_versions[i];
            /* NVML prints "570.124": a prefix of the module's version matches */
            size_t ul = strlen(u);
            if (!strncmp(u, d->module_version, ul) &&
                (d->module_version[ul] == '\0' || d->module_version[ul] == '.'))
                continue;
            f = dr_finding_get(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
            if (f) {
                SUMMARY(f, "userspace driver libraries %s beside kernel module %s", u, d->module_version);
                dr_f_ev(f, &s->userspace_ev);
                dr_f_ev(f, &s->module_version_ev);
            }
            break;
        }
    } else if (s->cuda_driver_mismatch.v == 1) {
        f = dr_finding_get(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_LIKELY);
        if (f) {
            SUMMARY(f, "CUDA reports an unsupported display driver / CUDA driver combination");
            dr_f_ev(f, &s->cuda_driver_mismatch.ev);
        }
    }
    if (dr_has_finding(d, "userspace-mismatch") && d->p2p_pending[0]) {
        f = dr_finding_get(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
        FIX(f, "reboot (or unload and reload the nvidia modules): nvidia-p2p-dkms %s is installed but %s is still "
               "loaded (p2p-module-upgraded-not-loaded)",
            d->p2p_pending, d->module_version);
    } else if (dr_has_finding(d, "userspace-mismatch")) {
        f = dr_finding_get(d, "userspace-mismatch", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_POSSIBLE);
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
        f = dr_finding_get(d, "p2p-module-upgraded-not-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
        if (f) {
            SUMMARY(f, "nvidia-p2p-dkms was %s to %s; the open module %s is still loaded (no other NVIDIA kernel "
                       "module package is installed)",
                    dp_vercmp(d->p2p_pending, d->module_version) > 0 ? "upgraded" : "downgraded", d->p2p_pending,
                    d->module_version);
            FIX(f, "reboot (or unload and reload the modules: sudo modprobe -r nvidia_drm nvidia_modeset nvidia_uvm "
                   "nvidia && sudo modprobe nvidia); /proc/driver/nvidia/version then shows %s",
                d->p2p_pending);
            dr_f_ev(f, &s->p2p_deb.ev);
            dr_f_ev(f, &s->other_kmod_packages.ev);
            dr_f_ev(f, &s->module_version_ev);
            dr_f_ev(f, &s->loaded_version_ev);
        }
    } else if (d->ours == 0 && s->p2p_installed[0]) {
        why = "the loaded nvidia module is not the one nvidia-p2p installed";
        e1 = &s->p2p_installed_ev;
        e2 = &s->module_version_ev;
    }
    if (why) {
        f = dr_finding_get(d, "stock-module-loaded", DR_SCOPE_MACHINE, -1, -1, DR_SEV_BLOCKS, DR_CERT_CERTAIN);
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
            dr_f_ev(f, e1);
            dr_f_ev(f, e2);
            dr_f_ev(f, &s->other_kmod_packages.ev);
        }
    }
}
