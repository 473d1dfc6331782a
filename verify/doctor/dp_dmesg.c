/* dp_dmesg.c - p2p-doctor's reader of the kernel log (dmesg, journalctl -k)
 * and of the error lines of CUDA programs and nvidia-smi found there (pure
 * C).  See dparse_int.h. */
#define _POSIX_C_SOURCE 200809L
#include "dparse_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ kernel log */

static void fault_dev(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    char b[16], buf[160];
    const char *d = strstr(line, "device=");
    if (!d)
        d = strstr(line, "device [");
    if (!d)
        d = strstr(line, "Request device");
    /* newer kernels: "Request device [0xca:0x00.0]" */
    size_t o = 0;
    for (const char *q = d ? d : line; *q && o + 1 < sizeof buf; q++) {
        if (q[0] == '0' && q[1] == 'x' && isxdigit((unsigned char)q[2]) && (q == line || !isalnum((unsigned char)q[-1]))) {
            q++;
            continue;
        }
        buf[o++] = *q;
    }
    buf[o] = '\0';
    if (dp_find_busid(buf, b, sizeof b) != 0)
        return;
    for (int i = 0; i < s->nfault_dev; i++)
        if (!strcmp(s->fault_dev[i], b))
            return;
    if (s->nfault_dev < 8) {
        snprintf(s->fault_dev[s->nfault_dev], 16, "%s", b);
        dp_ev(c, &s->fault_dev_ev[s->nfault_dev]);
        s->nfault_dev++;
    }
}

static void p_api_mismatch(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    if (strstr(line, "API mismatch")) {
        c->api_left = 4;
        c->api_nv = 0;
        dp_setn(c, &s->api_mismatch, 1);
        dp_kind(c, DR_K_DMESG);
    }
    if (c->api_left <= 0)
        return;
    c->api_left--;
    char v[3][24];
    int n = dp_find_versions(line, v, 3);
    for (int i = 0; i < n && c->api_nv < 2; i++)
        memcpy(c->api_v[c->api_nv++], v[i], 24);
    if (c->api_nv == 2) {
        snprintf(s->api_client, sizeof s->api_client, "%s", c->api_v[0]);
        snprintf(s->api_module, sizeof s->api_module, "%s", c->api_v[1]);
        c->api_left = 0;
    }
}

void dp_dmesg(dp_ctx *c, const char *line)
{
    dr_sys *s = &c->m->sys;
    p_api_mismatch(c, line);
    /* "nvidia 0000:84:00.0: ...": the kernel names a device the nvidia
     * driver is bound to, an NVIDIA GPU */
    const char *nv = strstr(line, "nvidia 0000:");
    char nb[16];
    if (nv && dp_find_busid(nv + 7, nb, sizeof nb) == 0 && !strncmp(nv + 7, nb, 12))
        dp_rec_get(c, "dmesg", DR_NS_NONE, -1, nb, NULL);
    if (strstr(line, "IO_PAGE_FAULT") || strstr(line, "DMAR: [DMA") || strstr(line, "DMAR:[DMA") ||
        strstr(line, "PTE Read access is not set") || strstr(line, "PTE Write access is not set") ||
        (strstr(line, "smmu") && strstr(line, "Unhandled context fault"))) {
        s->iommu_fault.v = s->iommu_fault.v < 0 ? 1 : s->iommu_fault.v + 1;
        if (s->iommu_fault.ev.line == 0)
            dp_ev(c, &s->iommu_fault.ev);
        fault_dev(c, line);
        dp_setn(c, &s->iommu_present, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "Default domain type:")) {
        /* the kernel's policy, printed with or without IOMMU hardware */
        if (strstr(line, "Translated"))
            dp_setn_force(c, &s->iommu_translated, 1);
        else if (strstr(line, "Passthrough"))
            dp_setn_force(c, &s->iommu_translated, 0);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "DMAR: IOMMU enabled") || strstr(line, "AMD-Vi: Interrupt remapping enabled") ||
        strstr(line, "AMD-Vi: Found IOMMU") || strstr(line, "Adding to iommu group") ||
        strstr(line, "AMD IOMMUv2") || strstr(line, "DMAR-IR: Enabled IRQ remapping") ||
        strstr(line, "perf/amd_iommu: Detected AMD IOMMU")) {
        dp_setn(c, &s->iommu_present, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "DMAR: IOMMU disabled") || strstr(line, "AMD-Vi: AMD IOMMU disabled")) {
        dp_setn(c, &s->iommu_off, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "Hypervisor detected") || strstr(line, "Booting paravirtualized kernel on")) {
        if (!strstr(line, "bare hardware"))
            dp_setn(c, &s->vm_guest, 1);
        return;
    }
    const char *p;
    if ((p = strstr(line, "NVRM: loading NVIDIA UNIX"))) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0) {
            snprintf(s->loaded_version, sizeof s->loaded_version, "%s", v);
            dp_ev(c, &s->loaded_version_ev);
        }
        dp_setn_force(c, &s->module_open, strstr(p, "Open Kernel Module") ? 1 : 0);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "rm_init_adapter failed") || strstr(line, "None of the NVIDIA devices were initialized") ||
        strstr(line, "The NVIDIA probe routine failed")) {
        dp_setn(c, &s->init_failed, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "No devices were found")) {
        dp_setn(c, &s->no_gpu_found, 1);
        return;
    }
    if (strstr(line, "peer access is not supported between these two devices") ||
        strstr(line, "lacks GPU P2P capability")) {
        dp_setn(c, &s->p2p_unavailable, 1);
        dp_kind(c, DR_K_CUDAERR);
        return;
    }
    if (strstr(line, "could not insert 'nvidia'") && strstr(line, "Operation not permitted")) {
        dp_setn(c, &s->insert_eperm, 1);
        return;
    }
    if (strstr(line, "RmInitAdapter failed")) {
        dp_setn(c, &s->init_failed, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "fallen off the bus")) {
        dp_setn(c, &s->fell_off_bus, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "NVRM: No NVIDIA GPU found")) {
        dp_setn(c, &s->no_gpu_found, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if ((p = strstr(line, "NVRM: BAR")) && strstr(line, "M @ 0x")) {
        int bar = atoi(p + 9);
        long mb = atol(p + 11);
        char b[16];
        if (bar == 1 && mb == 0 && dp_find_busid(line, b, sizeof b) == 0 && s->nbar1_invalid < 8) {
            snprintf(s->bar1_invalid[s->nbar1_invalid].busid, 16, "%s", b);
            dp_ev(c, &s->bar1_invalid[s->nbar1_invalid].ev);
            s->nbar1_invalid++;
        }
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "No address space to allocate resized BAR1") || strstr(line, "BAR resizing failed") ||
        strstr(line, "BAR resize resource not supported") || strstr(line, "Fatal Error while attempting to resize") ||
        strstr(line, "Not resizing BAR because the firmware forbids")) {
        dp_setn(c, &s->rebar_failed, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    /* RM's static BAR1 peer mapping (_kbusCreateStaticBar1IOMMUMapping and
     * ..ForGpuPair, kern_bus_gh100.c), as pasted with or without timestamps */
    if ((p = strstr(line, "peer DMA address 0x")) && strstr(line, "is not aligned")) {
        size_t n = strspn(p + 17, "0123456789abcdefABCDEFx");
        snprintf(s->peer_map_addr, sizeof s->peer_map_addr, "%.*s", (int)(n < 23 ? n : 23), p + 17);
        dp_setn(c, &s->peer_map_unaligned, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if ((p = strstr(line, "IOMMU mapping failed from GPU"))) {
        int a = -1, b = -1;
        if (sscanf(p, "IOMMU mapping failed from GPU%d to GPU%d", &a, &b) == 2 && s->peer_map_from < 0) {
            s->peer_map_from = a;
            s->peer_map_to = b;
        }
        dp_setn(c, &s->peer_map_failed, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "is not large enough to map FB") || dp_ci_find(line, "staticbar1") ||
        (dp_ci_find(line, "static bar1") && (dp_ci_find(line, "fail") || dp_ci_find(line, "error")))) {
        if (!strstr(line, "is not large enough to map FB") && !dp_ci_find(line, "fail") && !dp_ci_find(line, "error"))
            return;
        dp_setn(c, &s->static_bar1_error, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if ((p = strstr(line, "BAR ")) && (strstr(line, "no space") || strstr(line, "failed to assign") ||
                                       strstr(line, "can't assign"))) {
        char b[16];
        if (dp_find_busid(line, b, sizeof b) == 0 && s->nnospace < 8) {
            int bar = atoi(p + 4);
            for (int i = 0; i < s->nnospace; i++)
                if (!strcmp(s->nospace[i].busid, b) && s->nospace[i].bar == bar)
                    return;
            snprintf(s->nospace[s->nnospace].busid, 16, "%s", b);
            s->nospace[s->nnospace].bar = bar;
            dp_ev(c, &s->nospace[s->nnospace].ev);
            s->nnospace++;
            dp_kind(c, DR_K_DMESG);
        }
        return;
    }
    if (strstr(line, "Loading of unsigned module is rejected") || strstr(line, "Key was rejected by service") ||
        strstr(line, "Loading of module with unavailable key is rejected") ||
        strstr(line, "Required key not available") ||
        (strstr(line, "Lockdown:") && strstr(line, "unsigned module"))) {
        dp_setn(c, &s->module_rejected, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (strstr(line, "module verification failed: signature and/or required key missing") &&
        dp_ci_find(line, "nvidia")) {
        /* the kernel loaded it anyway (tainted): nothing is enforced */
        dp_setn(c, &s->unsigned_loaded, 1);
        dp_kind(c, DR_K_DMESG);
        return;
    }
    if (dp_ci_find(line, "secure boot enabled") || strstr(line, "SecureBoot enabled") ||
        dp_ci_find(line, "secure boot: enabled") ||
        strstr(line, "locked down from EFI Secure Boot")) {
        dp_setn_force(c, &s->secure_boot, 1);
        dp_kind(c, DR_K_SECBOOT);
        return;
    }
    if (dp_ci_find(line, "secure boot disabled") || strstr(line, "SecureBoot disabled") ||
        dp_ci_find(line, "secure boot: disabled") ||
        strstr(line, "EFI variables are not supported")) {
        dp_setn_force(c, &s->secure_boot, 0);
        dp_kind(c, DR_K_SECBOOT);
        return;
    }
    if (strstr(line, "unsupported display driver / cuda driver combination") ||
        strstr(line, "cudaErrorSystemDriverMismatch")) {
        dp_setn(c, &s->cuda_driver_mismatch, 1);
        return;
    }
    if (strstr(line, "Driver/library version mismatch")) {
        dp_setn(c, &s->nvml_mismatch, 1);
        return;
    }
    if ((p = strstr(line, "NVML library version:"))) {
        char v[24];
        if (dp_find_version(p, v, sizeof v) == 0 && s->nuserspace < 4) {
            snprintf(s->userspace_versions[s->nuserspace++], 24, "%s", v);
            dp_ev(c, &s->userspace_ev);
            dp_kind(c, DR_K_USERSPACE);
        }
        return;
    }
    if (strstr(line, "couldn't communicate with the NVIDIA driver") ||
        strstr(line, "NVIDIA driver is not loaded")) {
        dp_setn(c, &s->driver_not_loaded, 1);
        return;
    }
    if (strstr(line, "illegal memory access") || strstr(line, "cudaErrorMapBufferObjectFailed") ||
        strstr(line, "mapping of buffer object failed") || strstr(line, "cudaErrorIllegalAddress") ||
        strstr(line, "cudaErrorPeerAccessUnsupported")) {
        if (strstr(line, "illegal memory access"))
            dp_setn(c, &s->illegal_access, 1);
        if (s->p2p_error.v < 0 && c->sp_a >= 0 && c->sp_b >= 0) {
            s->p2p_error_a = c->sp_a;
            s->p2p_error_b = c->sp_b;
        }
        dp_setn(c, &s->p2p_error, 1);
        dp_kind(c, DR_K_CUDAERR);
        return;
    }
    if ((strstr(line, "vgaarb: setting as boot VGA device") || strstr(line, "nvidia-drmdrmfb frame buffer device") ||
         (strstr(line, "fbcon:") && strstr(line, "nvidia-drm") && strstr(line, "primary device"))) &&
        s->nconsole < 8) {
        char b[16];
        if (dp_find_busid(line, b, sizeof b) == 0) {
            snprintf(s->console[s->nconsole].busid, 16, "%s", b);
            dp_ev(c, &s->console[s->nconsole].ev);
            s->nconsole++;
            dp_kind(c, DR_K_DMESG);
        }
        return;
    }
    /* NCCL: "Could not enable P2P between dev 1(=41000) and dev 0(=1000)" */
    if ((p = strstr(line, "Could not enable P2P between dev "))) {
        int a = atoi(p + 33);
        const char *q = strstr(p + 33, " and dev ");
        if (q)
            dp_pobs_add(c, DR_OBS_ACCESS, DR_NS_CUDA, a, atoi(q + 9), 0, 0, 0, NULL, NULL);
        dp_kind(c, DR_K_NCCL);
        return;
    }
    if ((p = strstr(line, "nouveau ")) && dp_find_busid(p, (char[16]){0}, 16) == 0) {
        dp_setn(c, &s->nouveau, 1);
        return;
    }
}
