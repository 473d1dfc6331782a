/* dp_driver.c - p2p-doctor's readers of what says which driver is there:
 * deviceQuery's and /proc/driver/nvidia/gpus' GPU lists,
 * /proc/driver/nvidia/version, modinfo nvidia, the userspace libraries, and
 * the lines build.sh doctor --collect writes itself (pure C).  See
 * dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ versions, modinfo, userspace */

/* deviceQuery: "Device 0: "NVIDIA GeForce RTX 4090"" then "Device PCI Domain ID / Bus
 * ID / location ID: 0 / 1 / 0"; /proc/driver/nvidia/gpus/X/information:
 * "Model: NVIDIA ..." then "Bus Location: 0000:01:00.0". */
void dp_gpulist(dp_ctx *c, const char *line)
{
    const char *p = dp_skip_ws(line);
    if (!strncmp(p, "Device ", 7) && isdigit((unsigned char)p[7]) && strstr(p, ": \"")) {
        const char *q = strchr(p, '"'), *e = q ? strchr(q + 1, '"') : NULL;
        if (q && e) {
            dp_trim_copy(c->gl_name, sizeof c->gl_name, q + 1, e);
            c->gl_idx = atoi(p + 7);
            dp_rec_get(c, "devquery", DR_NS_CUDA, c->gl_idx, NULL, c->gl_name);
            dp_kind(c, DR_K_DEVQUERY);
        }
        return;
    }
    if (strstr(p, "Device PCI Domain ID / Bus ID") && c->gl_idx >= 0) {
        const char *q = strrchr(p, ':');
        unsigned dom, bus, dev;
        if (q && sscanf(q + 1, " %u / %u / %u", &dom, &bus, &dev) == 3) {
            char b[16];
            snprintf(b, sizeof b, "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff, dev & 0x1f);
            int r = dp_rec_get(c, "devquery", DR_NS_CUDA, c->gl_idx, NULL, NULL);
            if (r >= 0 && !c->m->recs[r].busid[0])
                snprintf(c->m->recs[r].busid, sizeof c->m->recs[r].busid, "%s", b);
        }
        return;
    }
    if (!strncmp(p, "Model:", 6)) {
        dp_trim_copy(c->gl_name, sizeof c->gl_name, p + 6, p + strlen(p));
        c->gl_idx = -1;
        return;
    }
    if (!strncmp(p, "Bus Location:", 13) && c->gl_name[0]) {
        char b[16];
        if (dp_find_busid(p + 13, b, sizeof b) == 0) {
            dp_rec_get(c, "devquery", DR_NS_NONE, -1, b, c->gl_name);
            dp_kind(c, DR_K_DEVQUERY);
        }
        c->gl_name[0] = '\0';
    }
}

void dp_version(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "NVRM version:");
    if (!p)
        return;
    dr_sys *s = &c->m->sys;
    char v[24];
    if (dp_find_version(p, v, sizeof v) == 0) {
        snprintf(s->module_version, sizeof s->module_version, "%s", v);
        dp_ev(c, &s->module_version_ev);
    }
    dp_setn_force(c, &s->module_open, strstr(p, "Open Kernel Module") ? 1 : 0);
    dp_kind(c, DR_K_VERSION);
}

void dp_mi_close(dp_ctx *c)
{
    if (!c->mi_on)
        return;
    dr_sys *s = &c->m->sys;
    dr_set(&s->modinfo_signed, c->mi_signed, &c->mi_ev);
    c->mi_on = 0;
}

void dp_modinfo(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p = dp_skip_ws(line);
    if (!strncmp(p, "filename:", 9)) {
        dp_mi_close(c);
        const char *f = dp_skip_ws(p + 9);
        const char *base = strrchr(f, '/');
        base = base ? base + 1 : f;
        if (!strncmp(base, "nvidia.ko", 9)) {
            c->mi_on = 1;
            c->mi_signed = 0;
            dp_ev(c, &c->mi_ev);
            snprintf(s->modinfo_filename, sizeof s->modinfo_filename, "%s", f);
            dp_kind(c, DR_K_MODINFO);
        }
        return;
    }
    if (!c->mi_on) {
        char v[24];
        if (!strncmp(p, "version:", 8) && dp_find_version(p + 8, v, sizeof v) == 0 && !s->modinfo_version[0]) {
            snprintf(s->modinfo_version, sizeof s->modinfo_version, "%s", v);
            dp_kind(c, DR_K_MODINFO);
        }
        return;
    }
    if (!strncmp(p, "version:", 8)) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0)
            snprintf(s->modinfo_version, sizeof s->modinfo_version, "%s", v);
    } else if (!strncmp(p, "license:", 8)) {
        dp_setn_force(c, &s->modinfo_proprietary, strstr(p, "MIT") || strstr(p, "GPL") ? 0 : 1);
    } else if (!strncmp(p, "signer:", 7) || !strncmp(p, "sig_id:", 7)) {
        c->mi_signed = 1;
    } else if (!*p || !strchr(p, ':')) {
        dp_mi_close(c);
    }
}

void dp_userspace(dp_ctx *c, const char *line)
{
    const char *p = strstr(line, "libnvidia-ml.so.");
    if (!p)
        p = strstr(line, "libcuda.so.");
    if (!p)
        return;
    p = strstr(p, ".so.") + 4;
    char v[24];
    if (dp_find_version(p, v, sizeof v) != 0 || p != strstr(p, v))
        return;
    dr_sys *s = &c->m->sys;
    for (int i = 0; i < s->nuserspace; i++)
        if (!strcmp(s->userspace_versions[i], v))
            return;
    if (s->nuserspace < 4) {
        snprintf(s->userspace_versions[s->nuserspace++], 24, "%s", v);
        dp_ev(c, &s->userspace_ev);
        dp_kind(c, DR_K_USERSPACE);
    }
}

/* build.sh doctor --collect's own lines (nvidia-p2p.txt, sysfs.txt) */
void dp_collect(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    const char *p = dp_skip_ws(line);
    if (!strncmp(p, "nvidia-p2p-installed:", 21)) {
        char v[24] = "";
        dp_find_version(p + 21, v, sizeof v);
        snprintf(s->p2p_installed, sizeof s->p2p_installed, "%s", v);
        dp_ev(c, &s->p2p_installed_ev);
        dp_setn(c, &s->p2p_state_seen, 1);
        dp_kind(c, DR_K_P2PSTATE);
    } else if (!strncmp(p, "nvidia-p2p-dkms:", 16)) {
        /* "none", or the version dpkg gives ("550.163.01-1"); nothing else (dpkg -S lines) */
        const char *q = dp_skip_ws(p + 16);
        char v[24] = "";
        if (!strncmp(q, "none", 4)) {
            s->p2p_deb_version[0] = '\0';
            dp_setn_force(c, &s->p2p_deb, 0);
        } else if (isdigit((unsigned char)*q) && dp_find_version(q, v, sizeof v) == 0) {
            snprintf(s->p2p_deb_version, sizeof s->p2p_deb_version, "%s", v);
            dp_setn_force(c, &s->p2p_deb, 1);
        }
        dp_kind(c, DR_K_P2PSTATE);
    } else if (!strncmp(p, "other-nvidia-kernel-packages:", 29)) {
        const char *q = dp_skip_ws(p + 29);
        int none = !strncmp(q, "none", 4);
        dp_setn_force(c, &s->other_kmod_packages, none ? 0 : 1);
        dp_trim_copy(s->other_kmod_names, sizeof s->other_kmod_names, q, none ? q : q + strlen(q));
        dp_kind(c, DR_K_P2PSTATE);
    } else if (!strncmp(p, "nvidia-p2p-srcversion:", 22)) {
        dp_trim_copy(s->p2p_srcversion, sizeof s->p2p_srcversion, p + 22, p + strlen(p));
    } else if (!strncmp(p, "loaded-version:", 15)) {
        char v[24];
        if (dp_find_version(p + 15, v, sizeof v) == 0 && !s->loaded_version[0]) {
            snprintf(s->loaded_version, sizeof s->loaded_version, "%s", v);
            dp_ev(c, &s->loaded_version_ev);
        }
    } else if (!strncmp(p, "loaded-srcversion:", 18)) {
        dp_trim_copy(s->loaded_srcversion, sizeof s->loaded_srcversion, p + 18, p + strlen(p));
    } else if (!strncmp(p, "nouveau-loaded: 1", 17)) {
        dp_setn(c, &s->nouveau, 1);
        dp_kind(c, DR_K_SYSFS);
    } else if (!strncmp(p, "userspace-libraries: none", 25)) {
        dp_kind(c, DR_K_USERSPACE);
    } else if (!strncmp(p, "modprobe-options: none", 22)) {
        dp_kind(c, DR_K_MODOPTS);
    } else if (!strncmp(p, "sysfs-gpus:", 11)) {
        dp_setn(c, &s->sysfs_gpus, strtol(dp_skip_ws(p + 11), NULL, 10));
        dp_kind(c, DR_K_SYSFS);
    } else if (!strncmp(p, "iommu-present:", 14)) {
        long v = strtol(dp_skip_ws(p + 14), NULL, 10);
        dp_setn_force(c, &s->iommu_present, v ? 1 : 0);
        if (!v)
            dp_setn(c, &s->iommu_off, 1);
        dp_kind(c, DR_K_IOMMU);
    } else if (!strncmp(p, "sysfs-gpu ", 10)) {
        char b[16];
        c->sf_rec = -1;
        if (dp_find_busid(p + 10, b, sizeof b) == 0) {
            c->sf_rec = dp_rec_get(c, "sysfs", DR_NS_NONE, -1, b, NULL);
            snprintf(c->sf_busid, sizeof c->sf_busid, "%s", b);
            dp_kind(c, DR_K_SYSFS);
        }
    } else if (c->sf_rec >= 0 && (!strncmp(p, "resource ", 9) || !strncmp(p, "bar1_bytes ", 11))) {
        dr_grec *g = &c->m->recs[c->sf_rec];
        if (!strncmp(p, "bar1_bytes ", 11)) {
            long long b = strtoll(p + 11, NULL, 0);
            if (b > 0)
                dp_setn(c, &g->bar1_mib, b >> 20);
            else
                dp_setn(c, &g->bar1_unassigned, 1);
        }
    } else if (c->sf_rec >= 0) {
        dr_grec *g = &c->m->recs[c->sf_rec];
        if (!strncmp(p, "boot_vga ", 9))
            dp_setn(c, &g->boot_vga, atoi(p + 9) ? 1 : 0);
        else if (!strncmp(p, "current_link_width ", 19))
            dp_setn(c, &g->width_cur, atoi(p + 19));
        else if (!strncmp(p, "max_link_width ", 15))
            dp_setn(c, &g->width_max, atoi(p + 15));
        else if (!strncmp(p, "current_link_speed ", 19))
            dp_setn(c, &g->gen_cur, dp_gts_to_gen(atof(p + 19)));
        else if (!strncmp(p, "max_link_speed ", 15))
            dp_setn(c, &g->gen_max, dp_gts_to_gen(atof(p + 15)));
        else if (!strncmp(p, "numa_node ", 10))
            dp_setn(c, &g->numa, atoi(p + 10));
        else if (!strncmp(p, "driver ", 7)) {
            snprintf(g->driver_in_use, sizeof g->driver_in_use, "%s", dp_skip_ws(p + 7));
            if (!strcmp(g->driver_in_use, "nouveau"))
                dp_setn(c, &s->nouveau, 1);
        }
        else if (!strncmp(p, "iommu_group_type ", 17) && s->ngroup_type < DR_MAX_GPUS) {
            const char *t = dp_skip_ws(p + 17);
            long long tr = !strncmp(t, "identity", 8) ? 0 : (!strncmp(t, "DMA", 3) ? 1 : -1);
            if (tr >= 0) {
                snprintf(s->group_type[s->ngroup_type].busid, 16, "%s", c->sf_busid);
                s->group_type[s->ngroup_type].type = tr;
                dp_ev(c, &s->group_type[s->ngroup_type].ev);
                s->ngroup_type++;
                dp_kind(c, DR_K_IOMMU);
            }
        }
    }
}
