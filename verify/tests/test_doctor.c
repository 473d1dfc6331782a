/* test_doctor.c - unit tests of p2p-doctor's parsers, rules, input reading
 * and JSON reader (plain C, no GPU).  One test per parser; each feeds the
 * output as users paste it (prompts, tabs, journalctl prefixes, excerpts). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dinput.h"
#include "djson.h"
#include "dmodel.h"
#include "dparse.h"
#include "dreport.h"
#include "drules.h"

static dr_model *parse1(const char *name, const char *text)
{
    dr_model *m = dr_model_new();
    dp_parse_text(m, name, text);
    dr_unify(m);
    return m;
}

static const dr_pairv *pair_of(const dr_diag *d, int a, int b);
static int cause_rank(const dr_finding *f, const char *id);

static int has_id(const dr_diag *d, const char *id)
{
    for (int i = 0; i < d->nf; i++)
        if (!strcmp(d->f[i].id, id))
            return 1;
    return 0;
}

static const dr_finding *get_id(const dr_diag *d, const char *id)
{
    for (int i = 0; i < d->nf; i++)
        if (!strcmp(d->f[i].id, id))
            return &d->f[i];
    return NULL;
}

static int gpu_by_bus(const dr_model *m, const char *b)
{
    for (int g = 0; g < m->ngpus; g++)
        if (!strcmp(m->gpus[g].busid, b))
            return g;
    return -1;
}

/* ------------------------------------------------------------ helpers */

static void test_helpers(void)
{
    char b[16], v[24], k[96];
    CHECK_INT(dp_find_busid("nvidia 0000:41:00.0: AMD-Vi: Event logged", b, sizeof b), 0);
    CHECK_STR(b, "0000:41:00.0");
    CHECK_INT(dp_find_busid("GPU 00000000:1A:00.0", b, sizeof b), 0);
    CHECK_STR(b, "0000:1a:00.0");
    CHECK_INT(dp_find_busid("Request device [82:00.0] fault addr", b, sizeof b), 0);
    CHECK_STR(b, "0000:82:00.0");
    CHECK_INT(dp_find_busid("NVRM: BAR1 is 0M @ 0x0 (PCI:0000:41:00.0)", b, sizeof b), 0);
    CHECK_STR(b, "0000:41:00.0");
    CHECK_INT(dp_find_busid("NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.", b, sizeof b), 0);
    CHECK_STR(b, "0000:01:00.0");
    CHECK_INT(dp_find_busid("at 12:30:45.5 nothing", b, sizeof b), -1); /* a time: device 0x45 > 0x1f */
    CHECK_INT(dp_find_busid("no address here", b, sizeof b), -1);
    CHECK_INT(dp_find_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release", v, sizeof v), 0);
    CHECK_STR(v, "550.54.15");
    CHECK_INT(dp_find_version("[  123.456789] NVRM: loading", v, sizeof v), -1); /* a timestamp is no version */
    CHECK_INT(dp_find_version("CUDA Version: 12.4", v, sizeof v), -1);
    CHECK_INT(dp_find_version("NVML library version: 570.124", v, sizeof v), 0);
    CHECK_STR(v, "570.124");
    CHECK(dp_vercmp("575.51.02", "575") >= 0);
    CHECK(dp_vercmp("570.211.01", "575") < 0);
    CHECK(dp_vercmp("580.95.05", "580.95.05") == 0);
    dp_model_key("NVIDIA Corporation AD102 [GeForce RTX 4090]", k, sizeof k);
    CHECK_STR(k, "rtx 4090");
    dp_model_key("NVIDIA GeForce RTX 4090", k, sizeof k);
    CHECK_STR(k, "rtx 4090");
    dp_model_key("NVIDIA GeForce RTX 4090 D", k, sizeof k);
    CHECK_STR(k, "rtx 4090 d");
    char line[] = "\x1b[1mGPU0\x1b[0m\t X \tNV4\r";
    dp_clean_line(line, strlen(line));
    CHECK_STR(line, "GPU0  X  NV4");
}

/* ------------------------------------------------------------ one test per parser */

static void t_smi_table(void)
{
    dr_model *m = parse1("nvidia-smi.txt",
                         "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
                         "|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0  On |                  Off |\n"
                         "| 30%   35C    P8             25W /  450W |     433MiB /  24564MiB |      0%      Default |\n"
                         "|   1  NVIDIA GeForce RTX 4090        Off |   00000000:41:00.0 Off |                  Off |\n"
                         "|  0%   33C    P8             18W /  450W |       2MiB /  24564MiB |      0%      Default |\n");
    CHECK_INT(m->ngpus, 2);
    int g0 = gpu_by_bus(m, "0000:01:00.0"), g1 = gpu_by_bus(m, "0000:41:00.0");
    CHECK(g0 >= 0 && g1 >= 0);
    if (g0 >= 0 && g1 >= 0) {
        CHECK_STR(m->gpus[g0].name, "NVIDIA GeForce RTX 4090");
        CHECK_INT(m->gpus[g0].smi_index, 0);
        CHECK_INT(m->gpus[g0].display.v, 1); /* Disp.A On */
        CHECK_INT(m->gpus[g1].display.v, 0);
        CHECK_INT(m->gpus[g1].vram_mib.v, 24564);
    }
    CHECK_STR(m->sys.smi_driver_version, "550.54.15");
    dr_model_free(m);
    m = parse1("x.txt", "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n");
    CHECK_INT(m->sys.nvml_mismatch.v, 1);
    CHECK_STR(m->sys.userspace_versions[0], "570.124");
    dr_model_free(m);
    m = parse1("x.txt", "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-[removed])\nGPU 1: NVIDIA GeForce RTX 3090 (UUID: GPU-x)\n");
    CHECK_INT(m->ngpus, 2);
    dr_model_free(m);
    /* environment reports: one line for GPUs of one model, the driver version */
    m = parse1("env.txt", "GPU 0,1,2,3: NVIDIA GeForce RTX 4090\nGPU 0,1,2,3 Compute Capability: 8.9\n"
                          "NVIDIA Driver Version: 550.54.14\n");
    CHECK_INT(m->ngpus, 4);
    CHECK_STR(m->gpus[3].name, "NVIDIA GeForce RTX 4090");
    CHECK_STR(m->sys.smi_driver_version, "550.54.14");
    dr_model_free(m);
    m = parse1("env.txt", "Nvidia driver version: 535.183.01\nGPU 0,1: 8.9\nGPU 0,x: RTX\n");
    CHECK_INT(m->ngpus, 0);
    CHECK_STR(m->sys.smi_driver_version, "535.183.01");
    dr_model_free(m);
}

static void t_smi_q(void)
{
    const char *q = "==============NVSMI LOG==============\n"
                    "Driver Version                            : 565.57.01\n"
                    "Attached GPUs                             : 1\n"
                    "GPU 00000000:2B:00.0\n"
                    "    Product Name                          : NVIDIA GeForce RTX 3090\n"
                    "    Display Active                        : Enabled\n"
                    "    PCI\n"
                    "        GPU Link Info\n"
                    "            PCIe Generation\n"
                    "                Max                       : 3\n"
                    "                Current                   : 1\n"
                    "            Link Width\n"
                    "                Max                       : 16x\n"
                    "                Current                   : 8x\n"
                    "    FB Memory Usage\n"
                    "        Total                             : 24576 MiB\n"
                    "    BAR1 Memory Usage\n"
                    "        Total                             : 256 MiB\n"
                    "        Used                              : 3 MiB\n";
    dr_model *m = parse1("nvidia-smi-q.txt", q);
    CHECK_INT(m->ngpus, 1);
    if (m->ngpus == 1) {
        dr_gpu *g = &m->gpus[0];
        CHECK_STR(g->busid, "0000:2b:00.0");
        CHECK_STR(g->name, "NVIDIA GeForce RTX 3090");
        CHECK_INT(g->bar1_mib.v, 256);
        CHECK_INT(g->bar1_used_mib.v, 3);
        CHECK_INT(g->vram_mib.v, 24576);
        CHECK_INT(g->gen_max.v, 3);
        CHECK_INT(g->width_cur.v, 8);
        CHECK_INT(g->display.v, 1);
        CHECK_INT(g->smi_index, 0);
        CHECK_INT(g->bar1_mib.ev.line, 18); /* the evidence is the line itself */
    }
    dr_model_free(m);
    /* an excerpt (grep -A3 bar): facts of an unidentified GPU */
    m = parse1("q.txt", "user@host:~$ nvidia-smi -q | grep -i bar -A 3\n    BAR1 Memory Usage\n"
                        "        Total                                          : 256 MiB\n");
    CHECK_INT(m->ngpus, 0);
    CHECK_INT(m->nrecs, 1);
    CHECK_INT(m->recs[0].anon, 1);
    CHECK_INT(m->recs[0].bar1_mib.v, 256);
    dr_model_free(m);
}

static void t_topo(void)
{
    dr_model *m = parse1("topo.txt", "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
                                     "GPU0\t X \tNV4\tSYS\t0-15\t0\t\tN/A\n"
                                     "GPU1\tNV4\t X \tSYS\t0-15\t0\t\tN/A\n"
                                     "GPU2\tSYS\tSYS\t X \t16-31\t1\t\tN/A\n\nLegend:\n\n  X    = Self\n");
    CHECK_INT(m->ngpus, 3);
    int topo = 0, nv = 0;
    for (int i = 0; i < m->npobs; i++)
        if (m->pobs[i].kind == DR_OBS_TOPO) {
            topo++;
            if (!strcmp(m->pobs[i].text, "NV4"))
                nv++;
        }
    CHECK_INT(topo, 6);
    CHECK_INT(nv, 2);
    int g2 = -1;
    for (int g = 0; g < m->ngpus; g++)
        if (m->gpus[g].smi_index == 2)
            g2 = g;
    CHECK(g2 >= 0 && m->gpus[g2].numa.v == 1);
    CHECK(m->files[0].kinds & DR_K_TOPO);
    dr_model_free(m);
    /* topo -p2p: a row "GPU0 X CNS" is not a header */
    m = parse1("p2p.txt", "nvidia-smi topo -p2p rw\n        GPU0    GPU1\n GPU0   X       CNS\n GPU1   CNS     X\n");
    int cns = 0;
    for (int i = 0; i < m->npobs; i++)
        if (m->pobs[i].kind == DR_OBS_P2PCAP && !strcmp(m->pobs[i].text, "CNS"))
            cns++;
    CHECK_INT(cns, 2);
    CHECK_INT(m->ngpus, 2);
    dr_model_free(m);
}

static void t_nvlink(void)
{
    dr_model *m = parse1("nvlink.txt", "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-a)\n\t Link 0: 14.062 GB/s\n"
                                       "\t Link 1: 14.062 GB/s\n\t Link 2: <inactive>\n"
                                       "GPU 1: NVIDIA GeForce RTX 3090 (UUID: GPU-b)\n\t Link 0: <inactive>\n");
    CHECK_INT(m->ngpus, 2);
    for (int g = 0; g < m->ngpus; g++)
        CHECK_INT(m->gpus[g].nvlinks.v, m->gpus[g].smi_index == 0 ? 2 : 0);
    dr_model_free(m);
}

static void t_lspci(void)
{
    const char *t = "00:01.1 PCI bridge: AMD Starship/Matisse GPP Bridge (prog-if 00 [Normal decode])\n"
                    "\tBus: primary=00, secondary=01, subordinate=02, sec-latency=0\n"
                    "\tCapabilities: [58] Express (v2) Root Port (Slot+), MSI 00\n"
                    "01:00.0 PCI bridge: PLX Technology, Inc. PEX 8747 (rev ca)\n"
                    "\tBus: primary=01, secondary=02, subordinate=02, sec-latency=0\n"
                    "\tCapabilities: [68] Express (v2) Downstream Port (Slot+), MSI 00\n"
                    "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir- UpstreamFwd+ EgressCtrl- DirectTrans-\n"
                    "02:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [GeForce RTX 3090] [10de:2204] (rev a1)\n"
                    "\tRegion 0: Memory at fb000000 (32-bit, non-prefetchable) [size=16M]\n"
                    "\tRegion 1: Memory at <unassigned> (64-bit, prefetchable) [disabled] [size=32G]\n"
                    "\tRegion 3: Memory at 7800000000 (64-bit, prefetchable) [size=32M]\n"
                    "\tCapabilities: [bb0 v1] Physical Resizable BAR\n"
                    "\t\tBAR 1: current size: 256MB, supported: 64MB 128MB 256MB\n"
                    "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L0s L1\n"
                    "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x4 (downgraded)\n"
                    "\tKernel driver in use: nvidia\n"
                    "02:00.1 Audio device: NVIDIA Corporation GA102 High Definition Audio Controller (rev a1)\n";
    dr_model *m = parse1("lspci.txt", t);
    CHECK_INT(m->ngpus, 1); /* the audio function is no GPU */
    CHECK_INT(m->nbridges, 2);
    if (m->ngpus == 1) {
        dr_gpu *g = &m->gpus[0];
        CHECK_STR(g->busid, "0000:02:00.0");
        CHECK_INT(g->bar1_unassigned.v, 1);
        CHECK_INT(g->rebar_cur_mib.v, 256);
        CHECK_INT(g->rebar_max_mib.v, 256);
        CHECK_INT(g->width_cur.v, 4);
        CHECK_INT(g->width_max.v, 16);
        CHECK_INT(g->width_downgraded.v, 1);
        CHECK_INT(g->speed_downgraded.v, 1);
        CHECK_INT(g->gen_dev_max.v, 4);
    }
    CHECK_INT(m->bridges[0].type, 1);
    CHECK_INT(m->bridges[1].type, 2);
    CHECK_INT(m->bridges[1].sec, 2);
    CHECK_INT(m->bridges[1].req_redir, 1);
    CHECK_INT(m->bridges[1].cmplt_redir, 0);
    dr_model_free(m);
    /* lspci -v (no root): "Memory at" without "Region N:" */
    m = parse1("lspci.txt", "52:00.0 VGA compatible controller: NVIDIA Corporation Device 2684 (rev a1)\n"
                            "\tMemory at b8000000 (32-bit, non-prefetchable) [size=16M]\n"
                            "\tMemory at 10ffc0000000 (64-bit, prefetchable) [size=256M]\n"
                            "\tCapabilities: <access denied>\n");
    CHECK_INT(m->ngpus, 1);
    CHECK_INT(m->gpus[0].bar1_mib.v, 256);
    CHECK_INT(m->sys.lspci_denied.v, 1);
    dr_model_free(m);
}

static void t_dmesg(void)
{
    const char *t =
        "Mar 05 10:01:02 box kernel: Command line: BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro amd_iommu=on iommu=pt\n"
        "[    0.500000] iommu: Default domain type: Translated\n"
        "[   10.000000] AMD-Vi: Event logged [IO_PAGE_FAULT device=41:00.0 domain=0x000d address=0xf000 flags=0x0020]\n"
        "[   11.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct 22 23:09:01 UTC 2024\n"
        "[   12.000000] NVRM: API mismatch: the client has the version 550.67, but\n"
        "[   12.000000] NVRM: this kernel module has the version 550.127.05.  Please make sure that this\n"
        "[   13.000000] pci 0000:01:00.0: BAR 1 [mem size 0x800000000 64bit pref]: can't assign; no space\n"
        "[   14.000000] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
        "[   15.000000] Loading of unsigned module is rejected\n"
        "[   16.000000] NVRM: kbusEnableStaticBar1Mapping_GH100: static BAR1 reported error\n"
        "[   17.000000] pci 0000:01:00.0: vgaarb: setting as boot VGA device\n";
    dr_model *m = parse1("dmesg.txt", t);
    dr_sys *s = &m->sys;
    CHECK_INT(s->cmd_iommu_pt.v, 1);
    CHECK_INT(s->iommu_translated.v, 1);
    CHECK_INT(s->iommu_fault.v, 1);
    CHECK_INT(s->nfault_dev, 1);
    CHECK_STR(s->fault_dev[0], "0000:41:00.0");
    CHECK_INT(s->module_open.v, 0);
    CHECK_STR(s->loaded_version, "550.127.05");
    CHECK_INT(s->api_mismatch.v, 1);
    CHECK_STR(s->api_client, "550.67");
    CHECK_STR(s->api_module, "550.127.05");
    CHECK_INT(s->nnospace, 1);
    CHECK_INT(s->nospace[0].bar, 1);
    CHECK_INT(s->init_failed.v, 1);
    CHECK_INT(s->module_rejected.v, 1);
    CHECK_INT(s->static_bar1_error.v, 1);
    CHECK_INT(s->nconsole, 1);
    CHECK(m->files[0].kinds & DR_K_DMESG);
    dr_model_free(m);
    /* nothing in ordinary kernel chatter */
    m = parse1("dmesg.txt", "[    1.0] usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
                            "[    2.0] EXT4-fs (nvme0n1p2): mounted filesystem\n");
    CHECK_INT(m->files[0].kinds, 0);
    CHECK_INT(m->sys.iommu_fault.v, -1);
    dr_model_free(m);
}

static void t_cmdline_options(void)
{
    dr_model *m = parse1("cmdline.txt", "initrd=\\EFI\\debian\\initrd.img root=UUID=1 rw intel_iommu=on\n");
    CHECK_INT(m->sys.cmd_iommu_on.v, 1);
    CHECK_INT(m->sys.cmd_iommu_pt.v, -1);
    dr_model_free(m);
    m = parse1("grub.txt", "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash amd_iommu=on iommu=pt pcie_acs_override=downstream\"\n");
    CHECK_INT(m->sys.cmd_iommu_pt.v, 1);
    CHECK_INT(m->sys.acs_override.v, 1);
    dr_model_free(m);
    m = parse1("modprobe.txt", "/etc/modprobe.d/p2p.conf:options nvidia NVreg_EnableResizableBar=1 "
                               "NVreg_RegistryDwords=\"ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=1\"\n");
    CHECK_INT(m->sys.configured.present, 1);
    CHECK_INT(m->sys.configured.n, 3);
    CHECK_STR(m->sys.configured.key[0], "ForceP2P");
    CHECK_INT(m->sys.configured.val[0], 0x11);
    CHECK_INT(m->sys.configured.val[1], 1);
    CHECK_INT(m->sys.rebar_option_configured.v, 1);
    dr_model_free(m);
    m = parse1("params.txt", "EnableResizableBar: 0\nRegistryDwords: \"\"\n");
    CHECK_INT(m->sys.applied.present, 1);
    CHECK_INT(m->sys.applied.n, 0);
    CHECK_INT(m->sys.rebar_option_applied.v, 0);
    dr_model_free(m);
    /* Talos-style list without the NVreg_ prefix */
    m = parse1("modprobe.txt", "RegistryDwords=\"ForceP2P=17;RMForceP2PType=1\"\n");
    CHECK_INT(m->sys.configured.n, 2);
    CHECK_INT(m->sys.configured.val[0], 17);
    dr_model_free(m);
}

static void t_version_modinfo(void)
{
    dr_model *m = parse1("version.txt",
                         "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  "
                         "(user@box)  Tue Nov 25 09:01:12 UTC 2026\nGCC version:  gcc version 12.2.0\n");
    CHECK_STR(m->sys.module_version, "565.57.01");
    CHECK_INT(m->sys.module_open.v, 1);
    dr_model_free(m);
    m = parse1("modinfo.txt", "filename:       /lib/modules/6.1.0-27-amd64/updates/dkms/nvidia.ko.xz\n"
                              "version:        565.57.01\nlicense:        Dual MIT/GPL\nsrcversion:     ABC\n"
                              "vermagic:       6.1.0-27-amd64 SMP preempt mod_unload modversions\n");
    CHECK_STR(m->sys.modinfo_version, "565.57.01");
    CHECK_INT(m->sys.modinfo_proprietary.v, 0);
    CHECK_INT(m->sys.modinfo_signed.v, 0);
    dr_model_free(m);
    m = parse1("modinfo.txt", "filename:       /lib/modules/6.1/kernel/drivers/video/nvidia.ko\nlicense:        NVIDIA\n"
                              "signer:         DKMS module signing key\n");
    CHECK_INT(m->sys.modinfo_proprietary.v, 1);
    CHECK_INT(m->sys.modinfo_signed.v, 1);
    dr_model_free(m);
    m = parse1("ls.txt", "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15\n");
    CHECK_INT(m->sys.nuserspace, 1);
    CHECK_STR(m->sys.userspace_versions[0], "550.54.15");
    dr_model_free(m);
}

static void t_cuda_samples(void)
{
    dr_model *m = parse1("p2pBandwidthLatencyTest.txt",
                         "Device: 0, NVIDIA GeForce RTX 4090, pciBusID: 1a, pciDeviceID: 0, pciDomainID:0\n"
                         "Device: 1, NVIDIA GeForce RTX 4060 Ti, pciBusID: 68, pciDeviceID: 0, pciDomainID:0\n"
                         "Device=0 CANNOT Access Peer Device=1\n"
                         "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1 \n"
                         "     0 918.31  25.76 \n     1  25.95 923.67 \n"
                         "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n   D\\D     0      1 \n"
                         "     0 919.56  41.38 \n     1  41.38 923.19 \n");
    CHECK_INT(m->ngpus, 2);
    int acc = 0, bw = 0;
    for (int i = 0; i < m->npobs; i++) {
        if (m->pobs[i].kind == DR_OBS_ACCESS && m->pobs[i].val == 0)
            acc++;
        if (m->pobs[i].kind == DR_OBS_BW && m->pobs[i].val == DR_BW_BI) {
            bw++;
            CHECK_NEAR(m->pobs[i].x, m->pobs[i].a == 0 ? 41.38 : 41.38, 0.01);
            CHECK_NEAR(m->pobs[i].y, m->pobs[i].a == 0 ? 25.76 : 25.95, 0.01);
        }
    }
    CHECK_INT(acc, 1);
    CHECK_INT(bw, 2);
    CHECK(gpu_by_bus(m, "0000:1a:00.0") >= 0);
    dr_model_free(m);
    m = parse1("simpleP2P.txt", "> Peer access from NVIDIA GeForce RTX 4090 (GPU0) -> NVIDIA GeForce RTX 4090 (GPU1) : Yes\n"
                                "Enabling peer access between GPU0 and GPU1...\n"
                                "Verification error @ element 1: val = nan, ref = 4.000000\n"
                                "Verification error @ element 2: val = nan, ref = 8.000000\nTest failed!\n");
    int corrupt = 0;
    for (int i = 0; i < m->npobs; i++)
        if (m->pobs[i].kind == DR_OBS_CORRUPT && m->pobs[i].val == 1)
            corrupt++;
    CHECK_INT(corrupt, 2); /* both directions of the pair */
    CHECK_INT(m->sys.simplep2p_failed.v, 1);
    dr_model_free(m);
    m = parse1("simpleP2P.txt", "CUDA error at simpleP2P.cu:130 code=205(cudaErrorMapBufferObjectFailed) "
                                "\"cudaDeviceEnablePeerAccess(gpuid[1], 0)\"\n");
    CHECK_INT(m->sys.p2p_error.v, 1);
    dr_model_free(m);
}

static void t_nccl(void)
{
    dr_model *m = parse1("nccl.txt",
                         "#  Rank  0 Group  0 Pid  11547 on     host device  0 [0x01] NVIDIA GeForce RTX 4090\n"
                         "#  Rank  1 Group  0 Pid  11547 on     host device  1 [0x41] NVIDIA GeForce RTX 4090\n"
                         "host:1:2 [0] NCCL INFO Channel 00/0 : 0[1000] -> 1[41000] via P2P/IPC\n"
                         "host:1:2 [1] NCCL INFO Channel 00/0 : 1[41000] -> 0[1000] via SHM/direct/direct\n"
                         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                         "     8388608       2097152     float     sum      -1    412.3   20.35   20.35      3    410.1   20.45   20.45      0\n"
                         "# Out of bounds values : 3 FAILED\n");
    CHECK_INT(m->ngpus, 2);
    CHECK(gpu_by_bus(m, "0000:41:00.0") >= 0);
    int p2p = 0, shm = 0;
    for (int i = 0; i < m->npobs; i++)
        if (m->pobs[i].kind == DR_OBS_NCCL) {
            if (!strcmp(m->pobs[i].text, "P2P"))
                p2p++;
            else if (!strcmp(m->pobs[i].text, "SHM"))
                shm++;
        }
    CHECK_INT(p2p, 1);
    CHECK_INT(shm, 1);
    CHECK_INT(m->sys.nccl_wrong.v, 1);
    dr_model_free(m);
    /* the end of a run names each rank's GPU as its start does (nccl issue 1817) */
    m = parse1("nccl.txt", "h:1:1 [7] NCCL INFO comm 0x560cae39c8f0 rank 4 nranks 8 cudaDev 4 busId 91000 - "
                           "Destroy COMPLETE\n");
    CHECK(gpu_by_bus(m, "0000:91:00.0") >= 0);
    dr_model_free(m);
}

static void t_verify_text(void)
{
    dr_model *m = parse1("verify.txt",
                         "p2p-verify 1.0.0 - GPU peer-to-peer verification (2026-11-20T23:43:36Z, host vm)\n"
                         "0    NVIDIA H200                0000:00:06.0  256 GiB   gen5 x16  gen5 x16  18 links active\n"
                         "1    NVIDIA H200                0000:00:07.0  256 GiB   gen5 x16  gen5 x16  18 links active\n"
                         "  GPU0->GPU1   cudaMemcpyPeerAsync (CE)           24       1.88 GiB  OK\n"
                         "== VERDICT: PASS (exit 0) ==\n");
    CHECK_INT(m->ngpus, 2);
    CHECK_INT(m->sys.verify_status.v, 0);
    if (m->ngpus == 2)
        CHECK_INT(m->gpus[0].bar1_mib.v, 262144);
    dr_model_free(m);
}

static void t_collect_lines(void)
{
    dr_model *m = parse1("sysfs.txt", "iommu-present: 1\nsysfs-gpu 0000:01:00.0\n  bar1_bytes 34359738368\n"
                                      "  boot_vga 1\n  max_link_width 16\n  current_link_width 8\n"
                                      "  iommu_group_type DMA-FQ\nsysfs-gpu 0000:41:00.0\n  bar1_bytes 0\nsysfs-gpus: 2\n");
    CHECK_INT(m->ngpus, 2);
    int g0 = gpu_by_bus(m, "0000:01:00.0"), g1 = gpu_by_bus(m, "0000:41:00.0");
    CHECK(g0 >= 0 && g1 >= 0);
    if (g0 >= 0 && g1 >= 0) {
        CHECK_INT(m->gpus[g0].bar1_mib.v, 32768);
        CHECK_INT(m->gpus[g0].boot_vga.v, 1);
        CHECK_INT(m->gpus[g0].width_cur.v, 8);
        CHECK_INT(m->gpus[g1].bar1_unassigned.v, 1);
    }
    CHECK_INT(m->sys.ngroup_type, 1);
    CHECK_INT(m->sys.group_type[0].type, 1);
    CHECK_INT(m->sys.sysfs_gpus.v, 2);
    dr_model_free(m);
    m = parse1("nvidia-p2p.txt", "nvidia-p2p-installed: 565.57.01\nnvidia-p2p-srcversion: AAA\nloaded-srcversion: BBB\n");
    CHECK_STR(m->sys.p2p_installed, "565.57.01");
    CHECK_STR(m->sys.p2p_srcversion, "AAA");
    CHECK_STR(m->sys.loaded_srcversion, "BBB");
    dr_model_free(m);
}

static void t_more_forms(void)
{
    /* newer DMAR fault format */
    dr_model *m = parse1("dmesg.txt", "[ 9.0] DMAR: [DMA Read NO_PASID] Request device [0xca:0x00.0] fault addr "
                                      "0x39ffe0000000 [fault reason 0x06] PTE Read access is not set\n");
    CHECK_INT(m->sys.nfault_dev, 1);
    CHECK_STR(m->sys.fault_dev[0], "0000:ca:00.0");
    dr_model_free(m);
    /* topo -p2p n is NVLink capability: NS there is no statement about P2P */
    m = parse1("p2p.txt", "$ nvidia-smi topo -p2p n\n \tGPU0\tGPU1\n GPU0\tX\tNS\n GPU1\tNS\tX\n");
    int cap = 0;
    for (int i = 0; i < m->npobs; i++)
        cap += m->pobs[i].kind == DR_OBS_P2PCAP;
    CHECK_INT(cap, 0);
    CHECK(m->files[0].kinds & DR_K_P2PCAP);
    dr_model_free(m);
    m = parse1("p2p.txt", "$ nvidia-smi topo -p2p r\n \tGPU0\tGPU1\n GPU0\tX\tNS\n GPU1\tNS\tX\n");
    cap = 0;
    for (int i = 0; i < m->npobs; i++)
        cap += m->pobs[i].kind == DR_OBS_P2PCAP;
    CHECK_INT(cap, 2);
    dr_model_free(m);
    /* PyTorch's answer, on the next line */
    m = parse1("other.txt", ">>> torch.cuda.can_device_access_peer(0, 1)\nFalse\n>>> print(torch.cuda.can_device_access_peer(1,0))\nTrue\n");
    int no = 0, yes = 0;
    for (int i = 0; i < m->npobs; i++)
        if (m->pobs[i].kind == DR_OBS_ACCESS) {
            yes += m->pobs[i].val == 1;
            no += m->pobs[i].val == 0;
        }
    CHECK_INT(no, 1);
    CHECK_INT(yes, 1);
    dr_model_free(m);
    /* the command line under its cat, in any file */
    m = parse1("other.txt", "user@box:~$ cat /proc/cmdline\nquiet splash intel_iommu=on\n");
    CHECK_INT(m->sys.cmd_iommu_on.v, 1);
    dr_model_free(m);
    /* a module that loaded unsigned is no Secure Boot refusal */
    m = parse1("dmesg.txt", "[ 0.0] secureboot: Secure boot enabled\n"
                            "[ 5.0] nvidia: module verification failed: signature and/or required key missing - tainting kernel\n");
    dr_diag d;
    dr_opts o;
    memset(&o, 0, sizeof o);
    dr_diagnose(m, &o, &d);
    CHECK(!has_id(&d, "secure-boot-unsigned"));
    dr_diag_free(&d);
    dr_model_free(m);
    m = parse1("x.txt", "SecureBoot enabled\nmodprobe: ERROR: could not insert 'nvidia': Operation not permitted\n");
    dr_diagnose(m, &o, &d);
    CHECK(has_id(&d, "secure-boot-unsigned"));
    dr_diag_free(&d);
    dr_model_free(m);
    /* the driver sees no GPU that lspci lists */
    m = parse1("x.txt", "No devices were found\n01:00.0 VGA compatible controller: NVIDIA Corporation AD102 [GeForce RTX 4090] (rev a1)\n");
    dr_diagnose(m, &o, &d);
    CHECK(has_id(&d, "gpu-init-failed"));
    dr_diag_free(&d);
    dr_model_free(m);
}

/* Diagnose texts given as name, text pairs (NULL-terminated). */
static dr_model *g_m;
static dr_diag g_d;
static void diag(int preinstall, const char *tag, ...)
{
    if (g_m) {
        dr_diag_free(&g_d);
        dr_model_free(g_m);
    }
    g_m = dr_model_new();
    va_list ap;
    va_start(ap, tag);
    const char *name;
    while ((name = va_arg(ap, const char *))) {
        const char *text = va_arg(ap, const char *);
        dp_parse_text(g_m, name, text);
    }
    va_end(ap);
    dr_unify(g_m);
    dr_opts o;
    memset(&o, 0, sizeof o);
    o.preinstall = preinstall;
    if (tag)
        snprintf(o.tag, sizeof o.tag, "%s", tag);
    dr_diagnose(g_m, &o, &g_d);
}

/* ------------------------------------------------------------ readers of symptoms and switches */

/* The observation of kind k about the pair a->b (indices of namespace ns), NULL if none. */
static const dr_pobs *pobs_of(const dr_model *m, int k, int a, int b)
{
    for (int i = 0; i < m->npobs; i++)
        if (m->pobs[i].kind == k && m->pobs[i].a == a && m->pobs[i].b == b)
            return &m->pobs[i];
    return NULL;
}

static int has_note(const dr_model *m, const char *part)
{
    for (int i = 0; i < m->nnotes; i++)
        if (strstr(m->notes[i], part))
            return 1;
    return 0;
}

static void t_nvbw(void)
{
    /* nvbandwidth: write copies row -> column, read copies column -> row; the
     * host path is the slowest copy of the two GPUs to or from host memory */
    dr_model *m = parse1("nvbandwidth.txt",
                         "nvbandwidth Version: v0.7\n\n"
                         "Device 0: NVIDIA GeForce RTX 4090 (00000000:01:00)\n"
                         "Device 1: NVIDIA GeForce RTX 4090 (00000000:41:00)\n\n"
                         "Running host_to_device_memcpy_ce.\n"
                         "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
                         "          0         1\n"
                         "0     25.21     24.80\n\n"
                         "SUM host_to_device_memcpy_ce 50.01\n\n"
                         "Running device_to_host_memcpy_ce.\n"
                         "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)\n"
                         "          0         1\n"
                         "0     26.32     26.29\n\n"
                         "Running device_to_device_memcpy_write_ce.\n"
                         "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
                         "          0         1\n"
                         "0       N/A      5.83\n"
                         "1      3.10       N/A\n\n"
                         "Running device_to_device_memcpy_read_ce.\n"
                         "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
                         "          0         1\n"
                         "0       N/A      4.20\n"
                         "1      5.86       N/A\n\n"
                         "Running device_to_device_bidirectional_memcpy_read_ce.\n"
                         "memcpy CE CPU(row) <-> GPU(column) Read1 bandwidth (GB/s)\n"
                         "          0         1\n"
                         "0       N/A     99.00\n"
                         "1     99.00       N/A\n");
    CHECK_INT(m->ngpus, 2);
    CHECK(gpu_by_bus(m, "0000:41:00.0") >= 0);
    CHECK(m->files[0].kinds & DR_K_NVBW);
    const dr_pobs *o = pobs_of(m, DR_OBS_BW, 0, 1);
    /* 0->1: written 5.83, read by 1 from 0 5.86: the better; bidirectional tests not read */
    CHECK(o && !strcmp(o->text, "nvbw"));
    if (o) {
        CHECK_NEAR(o->x, 5.86, 1e-9);
        CHECK_NEAR(o->y, 24.80, 1e-9);
    }
    o = pobs_of(m, DR_OBS_BW, 1, 0);
    CHECK(o && fabs(o->x - 4.20) < 1e-9);
    dr_model_free(m);
    /* a cut row: its last value is not read, and that is said */
    m = parse1("nvbw.txt", "Running device_to_device_memcpy_write_ce.\n"
                           "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
                           "          0         1         2\n"
                           "0       N/A    391.20    390.80\n"
                           "1    391.90       N/A    39\n");
    CHECK(pobs_of(m, DR_OBS_BW, 1, 0) != NULL);
    CHECK(pobs_of(m, DR_OBS_BW, 1, 2) == NULL);
    CHECK(has_note(m, "1 matrix row cut or wrapped"));
    dr_model_free(m);
    /* before v0.7 the device list has no PCI address; a waived device-to-device test means CUDA grants peer
     * access between no two GPUs (nvbandwidth's filterHasAccessiblePeerPairs) (nvbandwidth issue 13) */
    m = parse1("nvbw.txt", "nvbandwidth Version: v0.2\n\nDevice 0: NVIDIA GeForce RTX 2080 Ti\n"
                           "Device 1: NVIDIA GeForce RTX 2080 Ti\n\nWaiving device_to_device_memcpy_write_ce.\n");
    CHECK_INT(m->ngpus, 2);
    CHECK(m->ngpus == 2 && strstr(m->gpus[1].name, "2080 Ti") != NULL);
    const dr_pobs *w = pobs_of(m, DR_OBS_ACCESS, 1, 0);
    CHECK(w && w->val == 0 && pobs_of(m, DR_OBS_ACCESS, 0, 1) != NULL);
    dr_model_free(m);
    /* ...deviceQuery's quoted names are not nvbandwidth's */
    m = parse1("dq.txt", "Device 0: \"NVIDIA GeForce RTX 3090\"\n");
    CHECK(!(m->files[0].kinds & DR_K_NVBW));
    dr_model_free(m);
    /* an excerpt without the "Running" line: the title tells the test (read: column -> row); after its SUM
     * line the next title is read by its own words (nvbandwidth issue 50) */
    m = parse1("nvbw.txt", "nvbandwidth Version: v0.8\n\n...\n\n"
                           "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
                           "           0         1\n"
                           " 0       N/A     26.34\n"
                           " 1     21.95       N/A\n\n"
                           "SUM device_to_device_memcpy_read_ce 48.29\n\n"
                           "memcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
                           "           0         1\n"
                           " 0       N/A     27.10\n"
                           " 1     20.00       N/A\n");
    CHECK_INT(m->ngpus, 2);
    o = pobs_of(m, DR_OBS_BW, 1, 0);
    CHECK(o && fabs(o->x - 26.34) < 1e-9);
    o = pobs_of(m, DR_OBS_BW, 0, 1);
    CHECK(o && fabs(o->x - 27.10) < 1e-9);
    dr_model_free(m);
}

static void t_setpci(void)
{
    /* a read and its value on the next line, sudo's prompt between */
    dr_model *m = parse1("setpci.txt", "user@box:~$ sudo setpci -s 02:08.0 ECAP_ACS+6.w\n[sudo] password for user: \n001d\n"
                                       "# setpci -s 0000:02:10.0 ecap_acs+0x6.W=0000\n"
                                       "$ sudo setpci -v -s 00:01.1 ECAP_ACS+6.w\n0000:00:01.1 (ecap 000d @2a0) @2a6 = 005d\n"
                                       "$ sudo setpci -s 02:18.0 14e.w\n0010\n"
                                       "$ sudo setpci -s 01:00.0 ECAP_ACS+6.w\n"
                                       "setpci: 0000:01:00.0: Instance #0 of Extended capability 000d not found - there "
                                       "are no capabilities with that id.\n"
                                       "$ sudo setpci -s 02:1d.0 ECAP_ACS+6.w\nbash: setpci: command not found\n4242\n");
    CHECK_INT(m->nsetpci, 5);
    if (m->nsetpci == 5) {
        CHECK_STR(m->setpci[0].busid, "0000:02:08.0");
        CHECK(m->setpci[0].acs && m->setpci[0].reg == 6 && m->setpci[0].width == 2 && m->setpci[0].value == 0x1d &&
              !m->setpci[0].write);
        CHECK(m->setpci[1].write && m->setpci[1].value == 0);
        CHECK(m->setpci[2].acs && m->setpci[2].cap_off == 0x2a0 && m->setpci[2].reg == 6 && m->setpci[2].value == 0x5d);
        CHECK(!m->setpci[3].acs && m->setpci[3].reg == 0x14e && m->setpci[3].value == 0x10);
        CHECK(m->setpci[4].acs && m->setpci[4].value == -1);
    }
    dr_model_free(m);
    /* a loop over bridges, its output "BDF: value" */
    m = parse1("loop.txt", "$ for d in 02:08.0 02:10.0; do echo -n \"$d: \"; sudo setpci -s $d ECAP_ACS+6.w; done\n"
                           "02:08.0: 001d\n0000:02:10.0 0000\n$ echo done\n02:18.0: 001d\n");
    CHECK_INT(m->nsetpci, 2);
    if (m->nsetpci == 2)
        CHECK(!strcmp(m->setpci[1].busid, "0000:02:10.0") && m->setpci[1].value == 0);
    dr_model_free(m);
    /* real pastes (test/fixtures/field-reports 88, 89): setpci -v's writes "BDF (ecap 000d @2a0) @2a6 0000"
     * are writes, a line cut before its value is not read; a write in "for VAR in BDF...; do" goes to each
     * device listed, with $VAR, "$VAR" or ${VAR}; a loop over anything but addresses records nothing */
    m = parse1("setpci.txt", "sudo bash ./acs.sh\n0000:00:07.1 (ecap 000d @2a0) @2a6 0000\n"
                             "0000:c0:08.1 (ecap 000d @2a0) @2a6 0000\n0000:c3:00.0 (ecap 000d @2a0)\n");
    CHECK_INT(m->nsetpci, 2);
    if (m->nsetpci == 2)
        CHECK(m->setpci[1].write && m->setpci[1].value == 0 && m->setpci[1].cap_off == 0x2a0 &&
              m->setpci[1].reg == 6 && !strcmp(m->setpci[1].busid, "0000:c0:08.1"));
    CHECK(m->files[0].kinds & DR_K_SETPCI);
    dr_model_free(m);
    m = parse1("setpci.txt", "  for bdf in 00:03.1 00:03.2 20:01.1 22:03.0; do\n"
                             "      sudo setpci -s \"$bdf\" ECAP_ACS+6.w=0000\n  done\n"
                             "$ for x in 41:00.0; do setpci -s ${x} ecap_acs+6.w=0; done\n"
                             "$ sudo setpci -s \"$bdf\" ECAP_ACS+6.w=0000\n"
                             "$ for b in $(lspci -d 10b5: | cut -c1-7); do setpci -s $b f2a.w=0000; done\n");
    CHECK_INT(m->nsetpci, 5);
    if (m->nsetpci == 5) {
        CHECK_STR(m->setpci[0].busid, "0000:00:03.1");
        CHECK_STR(m->setpci[3].busid, "0000:22:03.0");
        CHECK(m->setpci[3].write && m->setpci[3].acs && m->setpci[3].value == 0 && m->setpci[3].ev.line == 2);
        CHECK_STR(m->setpci[4].busid, "0000:41:00.0");
    }
    CHECK(m->files[0].kinds & DR_K_SETPCI);
    dr_model_free(m);
    /* a loop's values printed alone (field report 91): no device, so no bridge; ACS control with a redirect
     * bit is machine-wide redirection (0xf2a only over PLX ports: grep plx or -d 10b5:, not a variable
     * named plx); 0000, or another register, is not */
    m = parse1("setpci.txt", "$ for plx in $(lspci | grep -i plx | awk '{print $1}'); do sudo setpci -s ${plx} f2a.w; done\n"
                             "[sudo] password for u:\n0000\n001d\n");
    CHECK(m->sys.acs_unknown_ctx.v == 1 && m->sys.acs_unknown_ctx.ev.line == 4 && m->nsetpci == 0);
    CHECK(m->files[0].kinds & DR_K_SETPCI);
    dr_model_free(m);
    m = parse1("setpci.txt", "$ for plx in $(lspci | grep -i nvidia | cut -c1-7); do setpci -s $plx f2a.w; done\n001d\n");
    CHECK(m->sys.acs_unknown_ctx.v != 1);
    dr_model_free(m);
    m = parse1("setpci.txt", "$ for b in $(lspci -d 10b5: | cut -c1-7); do setpci -s $b f2a.w; done\n0000\n0000\n");
    CHECK(m->sys.acs_unknown_ctx.v != 1);
    dr_model_free(m);
    m = parse1("setpci.txt", "$ for b in $(lspci -d 10b5: | cut -c1-7); do setpci -s $b f2a.w; done\n0008\n");
    CHECK(m->sys.acs_unknown_ctx.v == 1);
    dr_model_free(m);
    m = parse1("setpci.txt", "$ for d in $(lspci -d ::0604 | cut -c1-7); do setpci -s $d ECAP_ACS+6.w; done\n005d\n");
    CHECK(m->sys.acs_unknown_ctx.v == 1);
    dr_model_free(m);
    m = parse1("setpci.txt", "$ for d in $(lspci -d ::0604 | cut -c1-7); do setpci -s $d ECAP_ACS+4.w; done\n001d\n");
    CHECK(m->sys.acs_unknown_ctx.v != 1);
    dr_model_free(m);
    /* onto the bridges: a raw offset counts where lspci gave the ACS capability's offset */
    diag(0, NULL, "lspci.txt",
         "02:18.0 PCI bridge: PLX Technology, Inc. PEX 8747 48-Lane, 5-Port PCI Express Gen 3 (8.0 GT/s) Switch\n"
         "\tBus: primary=02, secondary=05, subordinate=05, sec-latency=0\n"
         "\tCapabilities: [148 v1] Access Control Services\n",
         "setpci.txt", "$ sudo setpci -s 02:18.0 14e.w\n001d\n$ sudo setpci -s 02:18.0 150.w\n0000\n", NULL);
    CHECK_INT(g_m->nbridges, 1);
    CHECK(g_m->bridges[0].acs_cap == 0x148 && g_m->bridges[0].req_redir && g_m->bridges[0].cmplt_redir);
    CHECK(has_note(g_m, "register 0x150 of 0000:02:18.0 is not known to be ACS control"));
    /* setpci -v says where the capability is; two readings that disagree keep the redirect, marked */
    diag(0, NULL, "setpci.txt",
         "$ sudo setpci -v -s 02:1c.0 ECAP_ACS+6.w\n0000:02:1c.0 (ecap 000d @148) @14e = 0000\n"
         "$ sudo setpci -s 02:1c.0 14e.w\n001d\n",
         NULL);
    CHECK(g_m->nbridges == 1 && g_m->bridges[0].acs_cap == 0x148 && g_m->bridges[0].req_redir &&
          g_m->bridges[0].acs_conflict);
}

static void t_lstree(void)
{
    dr_model *m = parse1("tree.txt",
                         "$ lspci -tv\n"
                         "-+-[0000:40]-+-00.0  Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex\n"
                         " |           \\-03.1-[41]--+-00.0  NVIDIA Corporation AD102 [GeForce RTX 4090]\n"
                         " |                        \\-00.1  NVIDIA Corporation AD102 High Definition Audio Controller\n"
                         " \\-[0000:00]-+-00.0  Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex\n"
                         "             +-01.1-[01-05]----00.0-[02-05]--+-08.0-[03]----00.0  NVIDIA Corporation AD102 [GeForce RTX 4090]\n"
                         "             |                               \\-10.0-[04]----00.0  NVIDIA Corporation Device 2684\n"
                         "             \\-08.1-[06]----00.3  Advanced Micro Devices, Inc. [AMD] Matisse USB 3.0 Host Controller\n");
    CHECK_INT(m->ngpus, 3);
    CHECK(gpu_by_bus(m, "0000:41:00.0") >= 0 && gpu_by_bus(m, "0000:03:00.0") >= 0 &&
          gpu_by_bus(m, "0000:04:00.0") >= 0);
    CHECK(m->files[0].kinds & DR_K_LSPCIT);
    int root = -1, sw = -1, up = -1;
    for (int i = 0; i < m->nbridges; i++) {
        if (!strcmp(m->bridges[i].busid, "0000:40:03.1"))
            root = i;
        if (!strcmp(m->bridges[i].busid, "0000:02:08.0"))
            sw = i;
        if (!strcmp(m->bridges[i].busid, "0000:01:00.0"))
            up = i;
    }
    CHECK(root >= 0 && m->bridges[root].type == 1 && m->bridges[root].sec == 0x41 && m->bridges[root].sub == 0x41);
    CHECK(sw >= 0 && m->bridges[sw].type != 1 && m->bridges[sw].sec == 3);
    CHECK(up >= 0 && m->bridges[up].sec == 2 && m->bridges[up].sub == 5);
    dr_model_free(m);
    /* a real paste (field report 90): lspci -t without names, indented, its stored copy starting inside a
     * root's branch: the lines before the first root are no root's; the root after them is read */
    m = parse1("lspci.txt", "     |           +-08.2-[84]----00.0\n"
                            "     |           \\-08.3-[85]----00.0\n"
                            "     \\-[0000:c0]-+-00.0\n"
                            "                 +-01.1-[c1]--+-00.0\n"
                            "                 |            \\-00.1\n"
                            "                 \\-08.1-[c3]--+-00.0\n"
                            "                              \\-00.2\n"
                            "\n    # lspci -vvv -s 0000:81:00.0  (GPU function: LnkCap/LnkSta/ACSCap/ACSCtl)\n"
                            "                    LnkSta: Speed 2.5GT/s (downgraded), Width x16\n");
    CHECK_INT(m->ngpus, 0);
    CHECK(m->files[0].kinds & DR_K_LSPCIT);
    root = -1;
    for (int i = 0; i < m->nbridges; i++) {
        CHECK(strncmp(m->bridges[i].busid, "0000:80:", 8) != 0 && strncmp(m->bridges[i].busid, "0000:00:", 8) != 0);
        if (!strcmp(m->bridges[i].busid, "0000:c0:01.1"))
            root = i;
    }
    CHECK(root >= 0 && m->bridges[root].type == 1 && m->bridges[root].sec == 0xc1);
    dr_model_free(m);
    /* a name wrapped by the terminal does not end the tree; the next output after it is not the tree's */
    m = parse1("tree.txt",
               "-[0000:00]-+-00.0  Intel Corporation 8th Gen Core Processor Host Bridge/DRAM Registers\n"
               "           +-01.0-[01]--+-00.0  NVIDIA Corporation GA102 [GeForce RTX 3090]\n"
               "           |            \\-00.1  NVIDIA Corporation GA102 High Definition Audio Co\n"
               "ntroller\n"
               "           \\-01.1-[02]----00.0  NVIDIA Corporation GA102 [GeForce RTX 3090]\n"
               "$ nvidia-smi topo -m\n"
               "\tGPU0\tGPU1\tCPU Affinity\n GPU0\t X \tNV4\t0-11\n GPU1\tNV4\t X \t0-11\n");
    CHECK_INT(m->ngpus, 2);
    CHECK(gpu_by_bus(m, "0000:02:00.0") >= 0);
    CHECK(m->files[0].kinds & DR_K_TOPO);
    CHECK(pobs_of(m, DR_OBS_TOPO, 0, 1) != NULL);
    dr_model_free(m);
}

static void t_nccl_runs(void)
{
    /* nccl-tests twice: NCCL_P2P_DISABLE=1 on the command line of the second */
    const char *hdr = "# nThread 1 nGpus 2 minBytes 8388608 maxBytes 33554432 step: 2(factor) warmup iters: 5 iters: 20 "
                      "agg iters: 1 validation: 1 graph: 0\n"
                      "#  Rank  0 Group  0 Pid   4242 on    box device  0 [0x01] NVIDIA GeForce RTX 4090\n"
                      "#  Rank  1 Group  0 Pid   4242 on    box device  1 [0x41] NVIDIA GeForce RTX 4090\n"
                      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                      "algbw   busbw #wrong\n";
    char text[4096];
    snprintf(text, sizeof text,
             "$ ./build/all_reduce_perf -b 8M -e 32M -f 2 -g 2\n%s"
             "     8388608       2097152     float     sum      -1   1391.2    6.03    6.03      0   1389.8    6.04    6.04      0\n"
             "    33554432       8388608     float     sum      -1   5263.5    6.37    6.37      0   5260.1    6.38    6.38      0\n"
             "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 6.2000 \n#\n"
             "$ NCCL_P2P_DISABLE=1 ./build/all_reduce_perf -b 8M -e 32M -f 2 -g 2\n%s"
             "     8388608       2097152     float     sum      -1    419.2   20.01   20.01      0    420.0   19.97   19.97      0\n"
             "    33554432       8388608     float     sum      -1   1663.5   20.17   20.17      0   1660.1   20.21   20.21      0\n"
             "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 20.0900 \n",
             hdr, hdr);
    dr_model *m = parse1("nccl.txt", text);
    CHECK_NEAR(m->sys.nccl_bus[0].avg, 6.2, 1e-9);
    CHECK_NEAR(m->sys.nccl_bus[0].peak, 6.37, 1e-9);
    CHECK_NEAR(m->sys.nccl_bus[1].avg, 20.09, 1e-9);
    CHECK(m->sys.nccl_bus[1].ngpus == 2 && m->sys.nccl_bus[1].dev[1] == 1);
    dr_model_free(m);
    /* an export holds for every later run, unset ends it; NCCL's own line marks its run and its transports */
    snprintf(text, sizeof text,
             "$ export NCCL_P2P_DISABLE=1\n%s# Avg bus bandwidth    : 20.0 \n$ unset NCCL_P2P_DISABLE\n%s"
             "box:1:2 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n"
             "box:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n"
             "# Avg bus bandwidth    : 19.0 \n",
             hdr, hdr);
    m = parse1("nccl.txt", text);
    CHECK_NEAR(m->sys.nccl_bus[1].avg, 20.0, 1e-9);
    CHECK_NEAR(m->sys.nccl_bus[0].avg, -1, 1e-9);
    const dr_pobs *o = pobs_of(m, DR_OBS_NCCL, 0, 1);
    CHECK(o && !strcmp(o->text, "SHM") && o->val == 1);
    dr_model_free(m);
}

static void t_verify_more(void)
{
    /* p2p-verify's text: the limits of each pair, the NCCL table */
    dr_model *m = parse1("verify.txt",
                         "p2p-verify 1.0.0 - GPU peer-to-peer verification (2026-11-20T23:43:36Z, host vm)\n"
                         "  GPU0<->GPU1  P2P on : NVLink4 x18 links x 25 GB/s = 450.0 GB/s per direction (links from nvidia-smi topo -m)\n"
                         "               P2P off: PCIe gen5 x16 = 63.0 GB/s per direction (32.0 GT/s x16, 128b/130b; slower of the two GPU links)\n"
                         "NCCL 2.28.9 (/x/libnccl.so.2); ncclCommInitAll over GPUs 0,1; float sum, out-of-place;\n"
                         "             | P2P allowed                       | NCCL_P2P_DISABLE=1               \n"
                         "        size |   time(us)      busbw      result |   time(us)      busbw      result\n"
                         "       8 MiB |       50.1     167.43     correct |      319.3      26.27     correct \n"
                         "     512 MiB |     1725.6     311.12     correct |    18977.1      28.29     correct \n"
                         "  (busbw in GB/s)\n");
    const dr_pobs *o = pobs_of(m, DR_OBS_LIMIT, 1, 0);
    CHECK(o && fabs(o->x - 450.0) < 1e-9 && !strcmp(o->text, "nvlink"));
    CHECK_NEAR(m->sys.nccl_bus[0].peak, 311.12, 1e-9);
    CHECK_NEAR(m->sys.nccl_bus[1].peak, 28.29, 1e-9);
    CHECK(m->sys.nccl_bus[0].ngpus == 2 && m->sys.nccl_bus[0].dev[0] == 0);
    dr_model_free(m);
    /* p2p-verify --json: matrices, limits, NCCL runs and nvidia-smi's cells */
    char *js = slurp("../../sample-output-h200x2.json");
    if (!js)
        return;
    m = parse1("p2p-verify.json", js);
    free(js);
    int bw = 0, lat = 0;
    for (int i = 0; i < m->npobs; i++) {
        bw += m->pobs[i].kind == DR_OBS_BW && m->pobs[i].val != DR_BW_LAT && !strcmp(m->pobs[i].text, "verify");
        lat += m->pobs[i].kind == DR_OBS_BW && m->pobs[i].val == DR_BW_LAT;
    }
    CHECK_INT(bw, 4);
    CHECK_INT(lat, 2);
    o = pobs_of(m, DR_OBS_LIMIT, 0, 1);
    CHECK(o && fabs(o->x - 450.0) < 1e-9 && !strcmp(o->text, "nvlink"));
    o = pobs_of(m, DR_OBS_TOPO, 1, 0);
    CHECK(o && !strcmp(o->text, "NV18"));
    o = pobs_of(m, DR_OBS_P2PCAP, 0, 1);
    CHECK(o && !strcmp(o->text, "OK") && (o->val == 'r' || o->val == 'w'));
    CHECK(m->sys.nccl_bus[0].peak > 300 && m->sys.nccl_bus[1].peak > 25 && m->sys.nccl_bus[1].peak < 30);
    dr_model_free(m);
}

static void t_matrix_bad(void)
{
    /* decimal commas are no numbers; a row shorter than the header is cut: its last value is not read */
    dr_model *m = parse1("p2p.txt", "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n"
                                    "   D\\D     0      1      2\n"
                                    "     0 909,92  20,30  20,10\n"
                                    "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n"
                                    "   D\\D     0      1      2\n"
                                    "     0 910.10  25.10  24.90\n"
                                    "     1  25.30 912.88  2\n");
    const dr_pobs *o = pobs_of(m, DR_OBS_BW, 0, 1);
    CHECK(o && fabs(o->x - 25.10) < 1e-9 && o->y < 0);
    CHECK(pobs_of(m, DR_OBS_BW, 1, 2) == NULL);
    CHECK(has_note(m, "2 matrix values are not a number"));
    CHECK(has_note(m, "1 matrix row cut or wrapped"));
    dr_model_free(m);
}

/* s with the first `from` replaced by `to` (malloc'ed). */
static char *replace1(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    size_t n = strlen(s) + strlen(to) + 1;
    char *o = malloc(n);
    if (!p) {
        snprintf(o, n, "%s", s);
        return o;
    }
    snprintf(o, n, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
    return o;
}

/* p2p-verify --json's hazard tests: a failed one is a finding of its own,
 * the pair must not use P2P; a self-test's injection is none. */
static void t_verify_hazards(void)
{
    char *js = slurp("verify-json-hazards.json");
    if (!js)
        return;
    dr_model *m = parse1("p2p-verify.json", js);
    int n = 0;
    for (int i = 0; i < m->npobs; i++)
        n += m->pobs[i].kind == DR_OBS_HAZARD;
    CHECK_INT(n, 2); /* ordering 0->1, stale 1->0: not the refused, not-applicable, skipped or passed ones */
    const dr_pobs *o = pobs_of(m, DR_OBS_HAZARD, 1, 0);
    CHECK(o && !strcmp(o->text, "stale") && strstr(o->ev.text, "hazards: GPU1->GPU0 stale: FAIL: round 1"));
    dr_diag d;
    dr_opts op;
    memset(&op, 0, sizeof op);
    dr_diagnose(m, &op, &d);
    CHECK(has_id(&d, "verify-ordering"));
    CHECK(has_id(&d, "verify-stale"));
    CHECK(!has_id(&d, "verify-atomics-lost") && !has_id(&d, "verify-compressible-corrupt") &&
          !has_id(&d, "verify-managed"));
    CHECK(!has_id(&d, "p2p-data-corruption")); /* the verdict's 21 is the hazards' */
    const dr_finding *f = get_id(&d, "verify-ordering");
    CHECK(f && f->scope == DR_SCOPE_PAIR && f->severity == DR_SEV_BLOCKS && f->certainty == DR_CERT_CERTAIN);
    CHECK(f && f->nev == 1 && strstr(f->fix, "NCCL_P2P_DISABLE=1"));
    CHECK_INT(d.exit_code, DR_EXIT_BLOCKED);
    int none = 0;
    for (int i = 0; i < d.npairs; i++)
        if (d.pairs[i].verdict == DR_V_NONE && strstr(d.pairs[i].why, "hazard test failed ("))
            none++;
    CHECK_INT(none, 2);
    dr_diag_free(&d);
    dr_model_free(m);

    /* a hazard self-test: its failure was injected; nothing is found */
    char *st = replace1(js, "\"self_test\": null,\n    \"tests\"", "\"self_test\": \"stale\",\n    \"tests\"");
    CHECK(strcmp(st, js) != 0);
    m = parse1("p2p-verify.json", st);
    dr_diagnose(m, &op, &d);
    CHECK(!has_id(&d, "verify-ordering") && !has_id(&d, "verify-stale") && !has_id(&d, "p2p-data-corruption"));
    CHECK(has_note(m, "--self-test injected corruption on purpose"));
    dr_diag_free(&d);
    dr_model_free(m);
    free(st);
    /* an injected result is none, even without the self-test named */
    st = replace1(js, "\"bad_bytes_of_a\": 2088820,", "\"bad_bytes_of_a\": 2088820, \"injected\": true,");
    m = parse1("p2p-verify.json", st);
    dr_diagnose(m, &op, &d);
    CHECK(has_id(&d, "verify-ordering") && !has_id(&d, "verify-stale"));
    dr_diag_free(&d);
    dr_model_free(m);
    free(st);
    free(js);
}

void test_doctor_parsers(void)
{
    t_more_forms();
    test_helpers();
    t_smi_table();
    t_smi_q();
    t_topo();
    t_nvlink();
    t_lspci();
    t_dmesg();
    t_cmdline_options();
    t_version_modinfo();
    t_cuda_samples();
    t_nccl();
    t_verify_text();
    t_collect_lines();
    t_nvbw();
    t_setpci();
    t_lstree();
    t_nccl_runs();
    t_verify_more();
    t_matrix_bad();
    t_verify_hazards();
}

/* ------------------------------------------------------------ rules */

static const char *SMI2 =
    "|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |                  Off |\n"
    "|  0%   34C    P8             21W /  450W |       2MiB /  24564MiB |      0%      Default |\n"
    "|   1  NVIDIA GeForce RTX 4090        Off |   00000000:41:00.0 Off |                  Off |\n"
    "|  0%   33C    P8             18W /  450W |       2MiB /  24564MiB |      0%      Default |\n";
static const char *CAN = "Device=0 CAN Access Peer Device=1\nDevice=1 CAN Access Peer Device=0\n";
static const char *CANNOT = "Device=0 CANNOT Access Peer Device=1\nDevice=1 CANNOT Access Peer Device=0\n";

void test_doctor_rules(void)
{
    /* observed access outranks what the configuration suggests */
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CAN, "cmdline.txt", "root=/dev/sda ro intel_iommu=on\n", NULL);
    CHECK(!has_id(&g_d, "iommu-translated"));
    CHECK_INT(g_d.npairs, 2);
    CHECK_INT(g_d.pairs[0].verdict, DR_V_P2P);
    CHECK_INT(g_d.pairs[0].basis, DR_BASIS_OBSERVED);
    /* data integrity never checked: said (a reason and 'Collect'), but every pair has a verdict: exit 0, and no
       insufficient-data finding, which is kept for what limits the verdict */
    CHECK(!has_id(&g_d, "insufficient-data"));
    CHECK(g_d.nmissing == 1 && strstr(g_d.missing[0], "doctor --verify"));
    CHECK_INT(g_d.unverified, 2);
    CHECK_INT(g_d.exit_code, DR_EXIT_OK);
    CHECK(g_d.nreasons == 2 && strstr(g_d.reasons[1], "build.sh doctor --verify checks every byte"));
    /* the same configuration with failing pairs: likely, and blocking */
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CANNOT, "cmdline.txt", "root=/dev/sda ro intel_iommu=on\n", NULL);
    const dr_finding *f = get_id(&g_d, "iommu-translated");
    CHECK(f && f->certainty == DR_CERT_LIKELY && f->severity == DR_SEV_BLOCKS);
    CHECK_INT(g_d.exit_code, DR_EXIT_BLOCKED);
    CHECK_INT(g_d.pairs[0].verdict, DR_V_HOST);
    CHECK(g_d.pairs[0].ncauses == 1 && !strcmp(g_d.pairs[0].causes[0], "iommu-translated"));
    /* iommu=pt wins over intel_iommu=on */
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CANNOT, "cmdline.txt", "root=/dev/sda ro intel_iommu=on iommu=pt\n",
         NULL);
    CHECK(!has_id(&g_d, "iommu-translated"));
    /* identical GeForce cards, no access, no visible cause: stock module only "possible" */
    CHECK(has_id(&g_d, "stock-module-loaded"));
    CHECK_INT(get_id(&g_d, "stock-module-loaded")->certainty, DR_CERT_POSSIBLE);
    CHECK(has_id(&g_d, "insufficient-data"));
    CHECK_INT(g_d.exit_code, DR_EXIT_INSUFFICIENT);
    /* ...nor when another pair of them has peer access (the module gives P2P) */
    diag(0, NULL, "nvidia-smi.txt",
         "GPU 0: NVIDIA GeForce GTX 1080 Ti (UUID: GPU-a)\nGPU 1: NVIDIA GeForce GTX 1080 Ti (UUID: GPU-b)\n"
         "GPU 2: NVIDIA GeForce GTX 1080 Ti (UUID: GPU-c)\n",
         "p.txt",
         "Device=0 CAN Access Peer Device=1\nDevice=0 CANNOT Access Peer Device=2\n"
         "Device=1 CAN Access Peer Device=0\nDevice=1 CANNOT Access Peer Device=2\n"
         "Device=2 CANNOT Access Peer Device=0\nDevice=2 CANNOT Access Peer Device=1\n",
         NULL);
    CHECK(!has_id(&g_d, "stock-module-loaded"));
    CHECK(has_id(&g_d, "insufficient-data"));
    /* ...but not when the open module is known to be loaded */
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CANNOT, "v.txt",
         "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build\n", NULL);
    CHECK(!has_id(&g_d, "stock-module-loaded"));
    /* before the install the loaded module's state is not a finding */
    diag(1, "565.57.01", "v.txt", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct 22\n",
         "nvidia-smi.txt", SMI2, NULL);
    CHECK(!has_id(&g_d, "stock-module-loaded"));
    diag(0, NULL, "v.txt", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct 22\n", "nvidia-smi.txt",
         SMI2, NULL);
    CHECK(has_id(&g_d, "stock-module-loaded"));
    /* registry keys by generation: the tag to be installed counts before the install */
    diag(1, "580.95.05", "modprobe.txt", "options nvidia NVreg_RegistryDwords=\"ForceP2P=0x11;RMForceP2PType=2\"\n", NULL);
    CHECK(has_id(&g_d, "regkeys-wrong-generation"));
    diag(1, "570.211.01", "modprobe.txt", "options nvidia NVreg_RegistryDwords=\"ForceP2P=0x11;RMForceP2PType=2\"\n", NULL);
    CHECK(!has_id(&g_d, "regkeys-wrong-generation"));
    diag(1, "570.211.01", "modprobe.txt",
         "options nvidia NVreg_RegistryDwords=\"ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=1\"\n", NULL);
    CHECK(has_id(&g_d, "regkeys-wrong-generation"));
    /* ours loaded without its keys */
    diag(0, NULL, "nvidia-p2p.txt", "nvidia-p2p-installed: 575.64.05\n", "v.txt",
         "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.64.05  Release Build\n", "params.txt",
         "RegistryDwords: \"ForceP2P=0x11;RMForceP2PType=1\"\n", "nvidia-smi.txt", SMI2, NULL);
    f = get_id(&g_d, "p2p-options-missing");
    CHECK(f && strstr(f->summary, "RMPcieP2PType"));
    /* BAR1: 256 MiB is Resizable BAR off; at its maximum and below VRAM is the other id */
    diag(0, NULL, "q.txt",
         "GPU 00000000:01:00.0\n    FB Memory Usage\n        Total : 24564 MiB\n    BAR1 Memory Usage\n"
         "        Total : 256 MiB\n",
         NULL);
    CHECK(has_id(&g_d, "rebar-off"));
    CHECK(!has_id(&g_d, "bar1-smaller-than-vram"));
    /* a 48 GB GPU whose BAR1 (32 GiB) is at its largest */
#define Q48G                                                                                                \
    "GPU 00000000:01:00.0\n    FB Memory Usage\n        Total : 49140 MiB\n    BAR1 Memory Usage\n"       \
    "        Total : 32768 MiB\n"
    diag(0, NULL, "q.txt", Q48G, NULL);
    CHECK(has_id(&g_d, "bar1-smaller-than-vram"));
    CHECK(!has_id(&g_d, "rebar-off"));
    /* no driver known: both routes named, blocks */
    f = get_id(&g_d, "bar1-smaller-than-vram");
    CHECK(f && f->severity == DR_SEV_BLOCKS && strstr(f->fix, "580.65.06") && strstr(f->fix, "p2p-0014"));
    /* about to install a tag with BAR1 windows: the window route and its limits */
    diag(1, "595.71.05", "q.txt", Q48G, NULL);
    f = get_id(&g_d, "bar1-smaller-than-vram");
    CHECK(f && f->severity == DR_SEV_DEGRADES && strstr(f->summary, "BAR1 windows") &&
          strstr(f->summary, "32704 MiB") && strstr(f->fix, "NCCL_LOCAL_REGISTER=0") &&
          strstr(f->fix, "cudaDeviceEnablePeerAccess"));
    /* a tag before windows: no P2P for its pairs, and which tags give them */
    diag(1, "575.64.05", "q.txt", Q48G, NULL);
    f = get_id(&g_d, "bar1-smaller-than-vram");
    CHECK(f && f->severity == DR_SEV_BLOCKS && strstr(f->fix, "before 580.65.06") &&
          !strstr(f->summary, "windows"));
    diag(0, NULL, "q.txt",
         "GPU 00000000:01:00.0\n    FB Memory Usage\n        Total : 24564 MiB\n    BAR1 Memory Usage\n"
         "        Total : 32768 MiB\n",
         NULL);
    CHECK(!has_id(&g_d, "bar1-smaller-than-vram") && !has_id(&g_d, "rebar-off"));
    /* models: truncated names of one model are one model */
    diag(0, NULL, "smi.txt",
         "|   0  NVIDIA RTX 6000 Ada Gene...    Off |   00000000:01:00.0 Off |                  Off |\n"
         "|   1  NVIDIA RTX 6000 Ada Gene...    Off |   00000000:41:00.0 Off |                  Off |\n",
         NULL);
    CHECK(!has_id(&g_d, "mixed-gpu-models"));
    diag(0, NULL, "p.txt",
         "Device: 0, NVIDIA GeForce RTX 4090, pciBusID: 1, pciDeviceID: 0, pciDomainID:0\n"
         "Device: 1, NVIDIA GeForce RTX 4060 Ti, pciBusID: 2, pciDeviceID: 0, pciDomainID:0\n",
         NULL);
    f = get_id(&g_d, "mixed-gpu-models");
    CHECK(f && f->certainty == DR_CERT_LIKELY); /* not observed: likely */
    /* a self-test's injected corruption is no fault */
    diag(0, NULL, "v.txt",
         "CORRUPTION GPU0->GPU1 cudaMemcpyPeerAsync size=4096 first bad offset 0x0: expected 0x1a found 0x00\n"
         "    ^ self-test: zero-chunk injected at offset 0x0 (4096 bytes) - caught at exactly that offset\n",
         NULL);
    CHECK(!has_id(&g_d, "p2p-data-corruption"));
    /* ACS redirect on the root ports above two GPUs under different root ports: their peer requests go to
     * the IOMMU; a possible cause unless the IOMMU is off or in passthrough (field report 89) */
    static const char *RP =
        "00:01.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge\n"
        "\tBus: primary=00, secondary=01, subordinate=01, sec-latency=0\n"
        "\tCapabilities: [58] Express (v2) Root Port (Slot+), MSI 00\n"
        "\tCapabilities: [2a0 v1] Access Control Services\n"
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n\n"
        "00:03.1 PCI bridge: Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge\n"
        "\tBus: primary=00, secondary=41, subordinate=41, sec-latency=0\n"
        "\tCapabilities: [58] Express (v2) Root Port (Slot+), MSI 00\n"
        "\tCapabilities: [2a0 v1] Access Control Services\n"
        "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n";
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CANNOT, "lspci.txt", RP, "cmdline.txt",
         "root=/dev/sda ro amd_iommu=on\n", NULL);
    f = get_id(&g_d, "acs-redirect");
    CHECK(f && f->scope == DR_SCOPE_PAIR && f->certainty == DR_CERT_POSSIBLE && f->severity == DR_SEV_BLOCKS);
    CHECK(f && strstr(f->summary, "root port 0000:00:01.1 above GPU0") && strstr(f->fix, "iommu=pt") && f->nev >= 2);
    CHECK(has_id(&g_d, "iommu-translated"));
    /* ...the IOMMU's mode not known: still possible */
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CANNOT, "lspci.txt", RP, NULL);
    CHECK(has_id(&g_d, "acs-redirect"));
    /* ...in passthrough: no matter; the pair seen working: not reported */
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CANNOT, "lspci.txt", RP, "cmdline.txt",
         "root=/dev/sda ro amd_iommu=on iommu=pt\n", NULL);
    CHECK(!has_id(&g_d, "acs-redirect"));
    diag(0, NULL, "nvidia-smi.txt", SMI2, "p.txt", CAN, "lspci.txt", RP, NULL);
    CHECK(!has_id(&g_d, "acs-redirect"));
    /* outputs that disagree on the GPUs are said to */
    diag(0, NULL, "nvidia-smi.txt", SMI2, "topo.txt",
         "\tGPU0\tGPU1\tGPU2\n GPU0\t X \tPHB\tPHB\n GPU1\tPHB\t X \tPHB\n GPU2\tPHB\tPHB\t X \n", NULL);
    CHECK_INT(g_d.inconsistent, 1);
    /* GPU identity across runs over subsets (CUDA_VISIBLE_DEVICES): each run numbers its GPUs from 0, its
       device list names them by address; observations go to the GPUs of the run's own list, one GPU is one GPU */
    const char *smi4 =
        "|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |                  Off |\n"
        "|   1  NVIDIA GeForce RTX 4090        Off |   00000000:02:00.0 Off |                  Off |\n"
        "|   2  NVIDIA GeForce RTX 4090        Off |   00000000:41:00.0 Off |                  Off |\n"
        "|   3  NVIDIA GeForce RTX 4090        Off |   00000000:42:00.0 Off |                  Off |\n";
    const char *run01 = "Device: 0, NVIDIA GeForce RTX 4090, pciBusID: 1, pciDeviceID: 0, pciDomainID:0\n"
                        "Device: 1, NVIDIA GeForce RTX 4090, pciBusID: 2, pciDeviceID: 0, pciDomainID:0\n"
                        "Device=0 CAN Access Peer Device=1\nDevice=1 CAN Access Peer Device=0\n";
    const char *run23 = "Device: 0, NVIDIA GeForce RTX 4090, pciBusID: 41, pciDeviceID: 0, pciDomainID:0\n"
                        "Device: 1, NVIDIA GeForce RTX 4090, pciBusID: 42, pciDeviceID: 0, pciDomainID:0\n"
                        "Device=0 CANNOT Access Peer Device=1\nDevice=1 CANNOT Access Peer Device=0\n";
    diag(0, NULL, "nvidia-smi.txt", smi4, "p01.txt", run01, "p23.txt", run23, NULL);
    CHECK_INT(g_m->ngpus, 4);
    CHECK(pair_of(&g_d, 0, 1) && pair_of(&g_d, 0, 1)->verdict == DR_V_P2P);
    CHECK(pair_of(&g_d, 2, 3) && pair_of(&g_d, 2, 3)->verdict == DR_V_HOST);
    CHECK(pair_of(&g_d, 0, 2) && pair_of(&g_d, 0, 2)->verdict == DR_V_UNKNOWN);
    CHECK_INT(g_d.inconsistent, 0);
    CHECK(has_note(g_m, "runs over part of the 4 GPUs (p01.txt 2, p23.txt 2)"));
    /* both runs in one file: the device list above each observation decides */
    char both[1024];
    snprintf(both, sizeof both, "$ CUDA_VISIBLE_DEVICES=0,1 ./p2pBandwidthLatencyTest\n%s"
                                "$ CUDA_VISIBLE_DEVICES=2,3 ./p2pBandwidthLatencyTest\n%s", run01, run23);
    diag(0, NULL, "nvidia-smi.txt", smi4, "runs.txt", both, NULL);
    CHECK(pair_of(&g_d, 0, 1) && pair_of(&g_d, 0, 1)->verdict == DR_V_P2P);
    CHECK(pair_of(&g_d, 2, 3) && pair_of(&g_d, 2, 3)->verdict == DR_V_HOST);
    /* without nvidia-smi: two GPUs that are both "device 0" are labelled by address, not both GPU0 */
    diag(0, NULL, "p01.txt", run01, "p23.txt", run23, NULL);
    CHECK_INT(g_m->ngpus, 4);
    char lab[48];
    dr_gpu_label(g_m, 2, lab, sizeof lab);
    CHECK_STR(lab, "GPU 41:00.0");
    CHECK(has_note(g_m, "CUDA device numbers differ between outputs"));
    /* topo -m numbers 4 GPUs, the runs name 3 by address: which number is which cannot be told; 3 GPUs, not 7,
       and topo's cells are not put on CUDA's numbers */
    const char *topo4 = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\n GPU0\t X \tSYS\tSYS\tSYS\t0-23\n"
                        " GPU1\tSYS\t X \tSYS\tSYS\t0-23\n GPU2\tSYS\tSYS\t X \tSYS\t0-23\n"
                        " GPU3\tSYS\tSYS\tSYS\t X \t0-23\n";
    const char *run12 = "Device: 0, NVIDIA GeForce RTX 4090, pciBusID: 2, pciDeviceID: 0, pciDomainID:0\n"
                        "Device: 1, NVIDIA GeForce RTX 4090, pciBusID: 41, pciDeviceID: 0, pciDomainID:0\n"
                        "Device=0 CAN Access Peer Device=1\nDevice=1 CAN Access Peer Device=0\n";
    diag(0, NULL, "topo.txt", topo4, "p01.txt", run01, "p12.txt", run12, NULL);
    CHECK_INT(g_m->ngpus, 3);
    CHECK_INT(g_m->smi_unplaced, 4);
    CHECK(has_note(g_m, "topo.txt: 4 GPUs by number only, 3 known by address elsewhere"));
    CHECK(!has_id(&g_d, "cross-root-complex"));
    /* ...with nvidia-smi's list, topo's numbers are placed and judged */
    diag(0, NULL, "nvidia-smi.txt", smi4, "topo.txt", topo4, "p01.txt", run01, "p12.txt", run12, NULL);
    CHECK_INT(g_m->ngpus, 4);
    CHECK_INT(g_m->smi_unplaced, 0);
    CHECK(has_id(&g_d, "cross-root-complex"));
    CHECK_INT(g_d.npairs, 12);
    /* a NODE pair measured through runs over a subset (CUDA_VISIBLE_DEVICES=1,2): NCCL's all-reduce with P2P
       slower than without is put on GPU1-GPU2 of topo -m, with the NODE path among its causes; unmeasured NODE
       pairs are only named under 'Collect' */
    const char *topo_node = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\n GPU0\t X \tSYS\tSYS\tSYS\t0-15\n"
                            " GPU1\tSYS\t X \tNODE\tNODE\t16-31\n GPU2\tSYS\tNODE\t X \tNODE\t16-31\n"
                            " GPU3\tSYS\tNODE\tNODE\t X \t16-31\n";
    const char *nccl_dev = "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5\n"
                           "# Using devices\n#   Rank  0 Pid  97075 on host device  0 [0x86] Tesla T4\n"
                           "#   Rank  1 Pid  97075 on host device  1 [0xaf] Tesla T4\n";
    char on12[512], off12[512], run0[512];
    snprintf(on12, sizeof on12, "# CUDA_VISIBLE_DEVICES=1,2 ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 2\n%s"
                                "# Avg bus bandwidth    : 2.1\n", nccl_dev);
    snprintf(off12, sizeof off12, "# NCCL_P2P_DISABLE=1 CUDA_VISIBLE_DEVICES=1,2 ./build/all_reduce_perf -g 2\n%s"
                                  "# Avg bus bandwidth    : 5.3\n", nccl_dev);
    snprintf(run0, sizeof run0, "# CUDA_VISIBLE_DEVICES=0,1 ./build/all_reduce_perf -g 2\n"
                                "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728\n# Using devices\n"
                                "#   Rank  0 Pid  1 on host device  0 [0x3b] Tesla T4\n"
                                "#   Rank  1 Pid  1 on host device  1 [0x86] Tesla T4\n");
    diag(0, NULL, "topo.txt", topo_node, "on.txt", on12, "off.txt", off12, "r0.txt", run0, NULL);
    CHECK_INT(g_m->ngpus, 4);
    f = get_id(&g_d, "p2p-slower-than-host");
    CHECK(f && f->a == 1 && f->b == 2 && cause_rank(f, "cross-root-complex") >= 0);
    CHECK(g_d.nmissing >= 1 && strstr(g_d.missing[0], "GPU1-GPU3, GPU2-GPU3 (topo NODE") &&
          !strstr(g_d.missing[0], "GPU1-GPU2"));
    /* an exported CUDA_VISIBLE_DEVICES holds for later runs; one without it numbers every GPU again */
    char two[1024];
    snprintf(two, sizeof two, "$ export CUDA_VISIBLE_DEVICES=1,2\n$ ./build/all_reduce_perf -g 2\n%s"
                              "$ unset CUDA_VISIBLE_DEVICES\n", nccl_dev);
    diag(0, NULL, "topo.txt", topo_node, "two.txt", two, NULL);
    CHECK(g_m->nrecs >= 2 && g_m->recs[g_m->nrecs - 1].cuda_abs == 2);
    snprintf(two, sizeof two, "$ CUDA_VISIBLE_DEVICES=1,2 ./x\n$ ./build/all_reduce_perf -g 2\n%s", nccl_dev);
    diag(0, NULL, "two.txt", two, NULL);
    CHECK(g_m->nrecs == 2 && g_m->recs[0].cuda_abs == -1 && g_m->recs[1].cuda_abs == -1);
    /* UUIDs instead of numbers: the numbering stays unknown */
    snprintf(two, sizeof two, "$ CUDA_VISIBLE_DEVICES=GPU-1a2b,GPU-3c4d ./build/all_reduce_perf -g 2\n%s", nccl_dev);
    diag(0, NULL, "two.txt", two, NULL);
    CHECK(g_m->nrecs == 2 && g_m->recs[0].cuda_abs == -1);
    /* no GPU at all: exit 32, unless something stops P2P */
    diag(0, NULL, "sysfs.txt", "iommu-present: 0\nsysfs-gpus: 0\n", NULL);
    CHECK_INT(g_d.exit_code, DR_EXIT_NO_PAIR);
    CHECK(!has_id(&g_d, "insufficient-data"));
    /* no GPU identified, and nothing that lists them read: 31, not "fewer than two" */
    diag(0, NULL, "cmdline.txt", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro iommu=pt\n", NULL);
    CHECK_INT(g_d.exit_code, DR_EXIT_INSUFFICIENT);
    CHECK_STR(g_d.status, "INSUFFICIENT-DATA");
    /* one GPU identified: 32 */
    diag(0, NULL, "nvidia-smi.txt",
         "GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n", NULL);
    CHECK_INT(g_d.exit_code, DR_EXIT_NO_PAIR);
    /* every id the rules can emit is in the published list */
    for (int i = 0; dr_finding_ids[i]; i++)
        CHECK(strlen(dr_finding_ids[i]) > 0);
    dr_diag_free(&g_d);
    dr_model_free(g_m);
    g_m = NULL;
}

/* ------------------------------------------------------------ symptoms, the NVLink keep risk, works now */

static const dr_pairv *pair_of(const dr_diag *d, int a, int b)
{
    for (int i = 0; i < d->npairs; i++)
        if (d->pairs[i].a == a && d->pairs[i].b == b)
            return &d->pairs[i];
    return NULL;
}

/* p2pBandwidthLatencyTest's two unidirectional matrices of two GPUs, and its latency matrices. */
static const char *p2pbw(char *buf, size_t cap, double on, double off, double lat_on, double lat_off)
{
    snprintf(buf, cap,
             "Device: 0, NVIDIA GeForce RTX 4090, pciBusID: 1, pciDeviceID: 0, pciDomainID:0\n"
             "Device: 1, NVIDIA GeForce RTX 4090, pciBusID: 41, pciDeviceID: 0, pciDomainID:0\n"
             "Device=0 CAN Access Peer Device=1\nDevice=1 CAN Access Peer Device=0\n"
             "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 909.92 %6.2f\n"
             "     1 %6.2f 913.45\n"
             "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1\n"
             "     0 910.10 %6.2f\n     1 %6.2f 912.88\n"
             "P2P=Disabled Latency Matrix (us)\n   GPU     0      1\n     0   1.43 %6.2f\n     1 %6.2f   1.41\n"
             "P2P=Enabled Latency (P2P Writes) Matrix (us)\n   GPU     0      1\n     0   1.42 %6.2f\n     1 %6.2f   1.40\n",
             off, off, on, on, lat_off, lat_off, lat_on, lat_on);
    return buf;
}

static int cause_rank(const dr_finding *f, const char *id)
{
    for (int i = 0; i < f->ncause; i++)
        if (!strcmp(f->cause[i].id, id))
            return i;
    return -1;
}

void test_doctor_symptoms(void)
{
    char p[2048];
    const dr_finding *f;
    /* P2P slower than host staging, nothing else known: the symptom with its numbers, the link's limit, no
     * cause invented, what to collect said; the cause cannot be told: 31 */
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 2.10, 20.30, 0.60, 12.80), "q.txt",
         "GPU 00000000:01:00.0\n    PCIe Generation\n        Max : 4\n    Link Width\n        Max : 16x\n"
         "        Current : 16x\nGPU 00000000:41:00.0\n    PCIe Generation\n        Max : 4\n    Link Width\n"
         "        Max : 16x\n        Current : 16x\n",
         NULL);
    f = get_id(&g_d, "p2p-slower-than-host");
    CHECK(f && f->scope == DR_SCOPE_PAIR && f->severity == DR_SEV_DEGRADES && f->certainty == DR_CERT_CERTAIN);
    if (f) {
        CHECK(strstr(f->summary, "2.1 GB/s with P2P vs 20.3 host-staged") != NULL);
        CHECK(strstr(f->summary, "31.5 GB/s per direction (PCIe gen4 x16, as p2p-verify computes it)") != NULL);
        CHECK_INT(f->ncause, 0);
        CHECK(strstr(f->not_shown, "ACS") && strstr(f->not_shown, "IOMMU") && strstr(f->ruled_out, "degraded link"));
    }
    CHECK(!has_id(&g_d, "p2p-latency-high")); /* 0.6 us: a direct path */
    CHECK_INT(g_d.exit_code, DR_EXIT_INSUFFICIENT);
    /* ...with the IOMMU translating: the likely cause, ranked first; blocked */
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 2.10, 20.30, 0.60, 12.80), "cmdline.txt",
         "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on\n", "dmesg.txt",
         "[ 0.1] DMAR: IOMMU enabled\n[ 0.2] iommu: Default domain type: Translated\n[ 0.3] Hypervisor detected: KVM\n",
         NULL);
    f = get_id(&g_d, "p2p-slower-than-host");
    CHECK(f && f->ncause >= 2 && cause_rank(f, "iommu-translated") == 0 && f->cause[0].certainty == DR_CERT_LIKELY);
    CHECK(f && cause_rank(f, "virtual-machine") > 0);
    CHECK_INT(g_d.exit_code, DR_EXIT_BLOCKED);
    /* ...iommu=pt: ruled out, said so */
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 2.10, 20.30, 0.60, 12.80), "cmdline.txt",
         "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on iommu=pt\n", NULL);
    f = get_id(&g_d, "p2p-slower-than-host");
    CHECK(f && cause_rank(f, "iommu-translated") < 0 && strstr(f->ruled_out, "IOMMU translation"));
    /* as fast as staging with peer access: no symptom (PCIe P2P often is); slower by a fifth: one */
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 19.80, 20.30, 0.60, 12.80), NULL);
    CHECK(!has_id(&g_d, "p2p-slower-than-host"));
    CHECK_INT(g_d.exit_code, DR_EXIT_OK);
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 15.80, 20.30, 0.60, 12.80), NULL);
    CHECK(has_id(&g_d, "p2p-slower-than-host"));
    /* latency: peer access reported, P2P's latency that of a round trip through host memory */
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 25.10, 20.30, 11.90, 12.80), NULL);
    f = get_id(&g_d, "p2p-latency-high");
    CHECK(f && strstr(f->summary, "11.90 us with P2P, 12.80 us without"));
    CHECK(!has_id(&g_d, "p2p-slower-than-host"));
    CHECK_INT(g_d.exit_code, DR_EXIT_INSUFFICIENT);
    /* without CUDA's word on peer access, timings alone: equal P2P and staging is no P2P, not a symptom */
    diag(0, NULL, "p.txt",
         "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 909.92  20.30\n"
         "     1  20.40 913.45\nUnidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1\n"
         "     0 910.10  20.10\n     1  20.20 912.88\n",
         NULL);
    CHECK(!has_id(&g_d, "p2p-slower-than-host"));
    CHECK(g_d.npairs == 2 && g_d.pairs[0].verdict == DR_V_HOST);
    /* ...but several times slower than staging: peer copies do happen (a staged copy is not slower than
     * itself), slowly */
    diag(0, NULL, "p.txt",
         "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 909.92  20.30\n"
         "     1  20.40 913.45\nUnidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1\n"
         "     0 910.10   2.10\n     1   2.20 912.88\n",
         NULL);
    CHECK(has_id(&g_d, "p2p-slower-than-host"));
    CHECK(g_d.npairs == 2 && g_d.pairs[0].verdict == DR_V_P2P && g_d.pairs[0].basis == DR_BASIS_OBSERVED);
    /* ...or at 0.6 of it (nccl issue 814: 12.4 against 20.0): a staged fallback would be as fast as staging */
    diag(0, NULL, "p.txt",
         "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n     0 909.92  20.00\n"
         "     1  20.40 913.45\nUnidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1\n"
         "     0 910.10  12.43\n     1  12.43 912.88\n",
         NULL);
    CHECK(has_id(&g_d, "p2p-slower-than-host"));
    CHECK(g_d.npairs == 2 && g_d.pairs[0].verdict == DR_V_P2P);
    /* NCCL: P2P allowed slower than NCCL_P2P_DISABLE=1, machine-wide for four GPUs */
    diag(0, NULL, "nccl.txt",
         "# nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: "
         "1 graph: 0\n# Avg bus bandwidth    : 4.1 \n"
         "$ NCCL_P2P_DISABLE=1 ./build/all_reduce_perf -g 4\n"
         "# nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: "
         "1 graph: 0\n# Avg bus bandwidth    : 12.3 \n",
         NULL);
    f = get_id(&g_d, "p2p-slower-than-host");
    CHECK(f && f->scope == DR_SCOPE_MACHINE && strstr(f->summary, "4.1 GB/s with P2P allowed, 12.3 with"));
    /* P2P faster than without: nothing */
    diag(0, NULL, "nccl.txt",
         "# nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: "
         "1 graph: 0\n# Avg bus bandwidth    : 14.1 \n"
         "$ export NCCL_P2P_DISABLE=1\n"
         "# nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: "
         "1 graph: 0\n# Avg bus bandwidth    : 12.3 \n",
         NULL);
    CHECK(!has_id(&g_d, "p2p-slower-than-host"));

    /* NCCL's transports per pair: SHM with P2P allowed is said; with NCCL_P2P_DISABLE=1 it is what was asked */
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 25.10, 20.30, 0.60, 12.80), "nccl.txt",
         "box:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n", NULL);
    CHECK(pair_of(&g_d, 0, 1) && strstr(pair_of(&g_d, 0, 1)->why, "NCCL used SHM, not P2P, here with P2P allowed"));
    diag(0, NULL, "p.txt", p2pbw(p, sizeof p, 25.10, 20.30, 0.60, 12.80), "nccl.txt",
         "box:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1\n"
         "box:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct\n",
         NULL);
    CHECK(pair_of(&g_d, 0, 1) && !strstr(pair_of(&g_d, 0, 1)->why, "SHM"));

    /* the NVLink keep risk: bridged pair, keep in effect on 535-570, peer access failing */
    const char *topo = "\tGPU0\tGPU1\tCPU Affinity\n GPU0\t X \tNV4\t0-23\n GPU1\tNV4\t X \t0-23\n";
    const char *keep = "RegistryDwords: \"ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=1\"\n";
    const char *fail = "Device=0 CANNOT Access Peer Device=1\nDevice=1 CANNOT Access Peer Device=0\n";
    const char *v570 = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.211.01  Release Build\n";
    diag(0, NULL, "topo.txt", topo, "params.txt", keep, "p.txt", fail, "v.txt", v570, NULL);
    f = get_id(&g_d, "nvlink-keep-failed");
    CHECK(f && f->severity == DR_SEV_BLOCKS && f->certainty == DR_CERT_LIKELY && strstr(f->fix, "--nvlink off"));
    CHECK(pair_of(&g_d, 0, 1) && pair_of(&g_d, 0, 1)->ncauses == 1);
    CHECK_INT(g_d.exit_code, DR_EXIT_BLOCKED);
    /* not with the key off, not from 575 on (no such key there), not before the install, not when it works */
    diag(0, NULL, "topo.txt", topo, "params.txt", "RegistryDwords: \"ForceP2P=0x11;RMForceP2PType=2;RMBar1P2PKeepNvlink=0\"\n",
         "p.txt", fail, "v.txt", v570, NULL);
    CHECK(!has_id(&g_d, "nvlink-keep-failed"));
    diag(0, NULL, "topo.txt", topo, "params.txt", keep, "p.txt", fail, "v.txt",
         "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.64.05  Release Build\n", NULL);
    CHECK(!has_id(&g_d, "nvlink-keep-failed"));
    diag(1, "570.211.01", "topo.txt", topo, "params.txt", keep, "p.txt", fail, "v.txt", v570, NULL);
    CHECK(!has_id(&g_d, "nvlink-keep-failed"));
    diag(0, NULL, "topo.txt", topo, "params.txt", keep, "p.txt", CAN, "v.txt", v570, NULL);
    CHECK(!has_id(&g_d, "nvlink-keep-failed"));
    /* ...another cause for the pair: only possible */
    diag(0, NULL, "topo.txt", topo, "params.txt", keep, "p.txt", fail, "v.txt", v570, "dmesg.txt",
         "[ 9.0] nvidia 0000:01:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0d address=0x0 flags=0x20]\n", NULL);
    f = get_id(&g_d, "nvlink-keep-failed");
    CHECK(f && f->certainty == DR_CERT_POSSIBLE);

    /* P2P works now with the loaded driver: every pair OK in topo -p2p r and w */
    const char *p2p_rw = "nvidia-smi topo -p2p r\n \tGPU0\tGPU1\n GPU0\tX\tOK\n GPU1\tOK\tX\n"
                         "nvidia-smi topo -p2p w\n \tGPU0\tGPU1\n GPU0\tX\tOK\n GPU1\tOK\tX\n";
    diag(1, "565.57.01", "p2p.txt", p2p_rw, "nvidia-smi.txt", SMI2, NULL);
    CHECK_INT(g_d.works_now, 2);
    diag(1, "565.57.01", "p2p.txt", "nvidia-smi topo -p2p r\n \tGPU0\tGPU1\n GPU0\tX\tOK\n GPU1\tOK\tX\n", "nvidia-smi.txt",
         SMI2, NULL);
    CHECK_INT(g_d.works_now, 0); /* writes not shown */
    diag(1, "565.57.01", "p2p.txt",
         "nvidia-smi topo -p2p r\n \tGPU0\tGPU1\n GPU0\tX\tOK\n GPU1\tOK\tX\n"
         "nvidia-smi topo -p2p w\n \tGPU0\tGPU1\n GPU0\tX\tNS\n GPU1\tNS\tX\n",
         "nvidia-smi.txt", SMI2, NULL);
    CHECK_INT(g_d.works_now, 0);
    diag(1, "565.57.01", "p2p.txt", p2p_rw, "q.txt",
         "GPU 00000000:01:00.0\n    FB Memory Usage\n        Total : 24564 MiB\n    BAR1 Memory Usage\n"
         "        Total : 256 MiB\n",
         "nvidia-smi.txt", SMI2, NULL);
    CHECK_INT(g_d.works_now, 0); /* a finding stops it */
    dr_diag_free(&g_d);
    dr_model_free(g_m);
    g_m = NULL;
}

/* ------------------------------------------------------------ input */

static char g_dir[256];

static void put(const char *name, const char *data, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

static const dr_file *file_named(const dr_model *m, const char *name)
{
    for (int i = 0; i < m->nfiles; i++)
        if (!strcmp(m->files[i].name, name))
            return &m->files[i];
    return NULL;
}

void test_doctor_input(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/p2pd-test-XXXXXX");
    if (!mkdtemp(g_dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    put("empty.txt", "", 0);
    static const char bin[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\x01\0\0\0";
    put("binary.txt", bin, sizeof bin);
    put("truncated.txt", "|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:0", 57);
    char *longline = malloc(20000);
    memset(longline, 'x', 19999);
    longline[19999] = '\0';
    memcpy(longline + 19000, "\nIO_PAGE_FAULT device=01:00.0\n", 30);
    put("long.txt", longline, strlen(longline));
    free(longline);
    put("source.txt", "IO_PAGE_FAULT in prose: never read\n", 35);
    char p[512];
    snprintf(p, sizeof p, "%s/link.txt", g_dir);
    CHECK_INT(symlink("/dev/zero", p), 0);
    snprintf(p, sizeof p, "%s/fifo.txt", g_dir);
    CHECK_INT(mkfifo(p, 0600), 0);
    snprintf(p, sizeof p, "%s/subdir", g_dir);
    CHECK_INT(mkdir(p, 0700), 0);
    dr_model *m = dr_model_new();
    dr_limits lim = {1 << 20, 4 << 20};
    int n = dr_read_dir(m, g_dir, &lim);
    CHECK_INT(n, 2); /* truncated.txt and long.txt */
    const dr_file *f;
    CHECK((f = file_named(m, "empty.txt")) && !strcmp(f->status, "empty"));
    CHECK((f = file_named(m, "binary.txt")) && !strcmp(f->status, "skipped") && strstr(f->note, "binary"));
    CHECK((f = file_named(m, "link.txt")) && !strcmp(f->status, "skipped") && strstr(f->note, "link"));
    CHECK((f = file_named(m, "fifo.txt")) && !strcmp(f->status, "skipped"));
    CHECK((f = file_named(m, "subdir")) && !strcmp(f->status, "skipped"));
    CHECK(file_named(m, "source.txt") == NULL);
    CHECK((f = file_named(m, "long.txt")) && f->cut_lines == 1 && strstr(f->note, "cut"));
    CHECK_INT(m->sys.iommu_fault.v, 1); /* the line after the long one is read */
    CHECK((f = file_named(m, "truncated.txt")) && !strcmp(f->status, "read"));
    dr_model_free(m);
    /* the per-file limit: partial, and said */
    m = dr_model_new();
    dr_limits small = {16, 64};
    dr_read_dir(m, g_dir, &small);
    CHECK((f = file_named(m, "long.txt")) && !strcmp(f->status, "partial"));
    dr_model_free(m);
    /* a directory that is not there */
    m = dr_model_new();
    CHECK_INT(dr_read_dir(m, "/nonexistent/p2pd", &lim), -1);
    dr_model_free(m);
    const char *names[] = {"empty.txt", "binary.txt", "truncated.txt", "long.txt", "source.txt", "link.txt", "fifo.txt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/subdir", g_dir);
    rmdir(p);
    rmdir(g_dir);
}

/* ------------------------------------------------------------ JSON reader */

void test_doctor_json_reader(void)
{
    dj_doc d;
    const char *ok = "{\"a\": [1, 2.5, true, null, \"x\\\"y\"], \"b\": {\"c\": false}}";
    CHECK_INT(dj_parse(&d, ok, strlen(ok), 1000), 0);
    int a = dj_get(&d, 0, "a");
    CHECK_INT(d.nodes[a].nchild, 5);
    CHECK_NEAR(dj_num(&d, dj_at(&d, a, 1), -1), 2.5, 1e-9);
    CHECK_INT(dj_bool(&d, dj_at(&d, a, 2)), 1);
    char s[16];
    dj_str(&d, dj_at(&d, a, 4), s, sizeof s);
    CHECK_STR(s, "x\"y");
    CHECK_INT(dj_bool(&d, dj_get(&d, dj_get(&d, 0, "b"), "c")), 0);
    CHECK_INT(dj_get(&d, 0, "missing"), -1);
    dj_free(&d);
    const char *bad[] = {"", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "[1] 2", "\"unterminated", "[tru]", "{\"a\":01x}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(dj_parse(&d, bad[i], strlen(bad[i]), 1000), -1);
        CHECK(d.err[0] != '\0');
        dj_free(&d);
    }
    /* nesting and size limits */
    char deep[300];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 99);
    deep[299] = '\0';
    CHECK_INT(dj_parse(&d, deep, strlen(deep), 100000), -1);
    dj_free(&d);
    CHECK_INT(dj_parse(&d, "[1,2,3,4,5]", 11, 3), -1);
    dj_free(&d);
}
