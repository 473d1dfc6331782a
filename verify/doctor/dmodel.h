/* dmodel.h - what p2p-doctor knows about a machine: the facts its parsers
 * read from command outputs (each with the line it came from), before any
 * rule looks at them (pure C). */
#ifndef P2PD_DMODEL_H
#define P2PD_DMODEL_H

#include <stddef.h>

#define DR_MAX_GPUS 64     /* GPUs per machine (merged list) */
#define DR_MAX_RECS 256    /* GPU records, before merging */
#define DR_MAX_BRIDGES 512 /* PCI bridges seen in lspci -vvv */
#define DR_MAX_POBS 4096   /* pair observations */
#define DR_MAX_FILES 128   /* input files */
#define DR_MAX_KEYS 32     /* registry keys per RegistryDwords string */
#define DR_MAX_SETPCI 64   /* setpci readings and writes */
#define DR_EV_TEXT 200     /* evidence line, cut */

/* Where a fact came from: the file and line, and the line itself. */
typedef struct {
    char file[64];
    long line; /* 1-based; 0 = no evidence */
    char text[DR_EV_TEXT];
} dr_ev;

typedef struct {
    long long v; /* -1 = unknown */
    dr_ev ev;
} dr_num;

/* Index namespaces: nvidia-smi numbers GPUs by PCI order, CUDA by
 * CUDA_DEVICE_ORDER (fastest first unless set), NCCL by rank. */
enum { DR_NS_NONE = 0, DR_NS_SMI, DR_NS_CUDA };

/* One GPU as one output shows it. */
typedef struct {
    int ns;        /* namespace of index */
    int index;     /* -1 unknown */
    int cuda_abs;  /* CUDA index among all GPUs, where the output's CUDA_VISIBLE_DEVICES maps its own
                      index to it; -1 unknown (then index may be relative to a subset) */
    char busid[16]; /* "0000:01:00.0", "" unknown */
    char name[96];
    int anon;      /* an excerpt without any identity: facts only */
    char file[64]; /* the file it came from */
    long line;     /* the line of the file where it was first seen */
    dr_num vram_mib, bar1_mib, bar1_used_mib;
    dr_num rebar_cur_mib, rebar_max_mib; /* lspci Resizable BAR capability */
    dr_num bar1_unassigned;              /* 1 = seen unassigned/invalid */
    dr_num gen_cur, gen_max, gen_host_max, gen_dev_max;
    dr_num width_cur, width_max;
    dr_num width_downgraded, speed_downgraded; /* lspci "(downgraded)" */
    dr_num display;  /* 1 = drives a display (active/attached), 0 = no */
    dr_num boot_vga; /* sysfs boot_vga */
    dr_num nvlinks;  /* active NVLinks */
    dr_num numa;
    dr_num virt_passthrough; /* nvidia-smi -q Virtualization Mode Pass-Through */
    char driver_in_use[32];
    char src[12]; /* the output: smi, smi-q, lspci, topo, p2pbw, ... */
} dr_grec;

/* A merged GPU. */
typedef struct {
    int smi_index, cuda_index; /* -1 unknown */
    char busid[16];
    char name[96];
    int nrecs;
    int assumed_index; /* merged across namespaces by index alone */
    int cuda_renumbered; /* another CUDA index in another output (CUDA_VISIBLE_DEVICES) */
    int cuda_abs;        /* cuda_index is among all GPUs (from CUDA_VISIBLE_DEVICES) */
    dr_num vram_mib, bar1_mib, bar1_used_mib, rebar_cur_mib, rebar_max_mib, bar1_unassigned;
    dr_num gen_cur, gen_max, gen_host_max, gen_dev_max, width_cur, width_max, width_downgraded,
        speed_downgraded;
    dr_num display, boot_vga, nvlinks, numa, virt_passthrough;
    int name_conflict;
} dr_gpu;

/* What one output says about an ordered GPU pair. */
enum {
    DR_OBS_ACCESS = 1, /* peer access yes/no: val 1/0 */
    DR_OBS_TOPO,       /* topo -m cell in text */
    DR_OBS_P2PCAP,     /* topo -p2p cell in text (OK, CNS, NS, GNS, TNS, U); val = the mode:
                          'r', 'w', 'x' (rw), 'p', '?' (no command line seen) */
    DR_OBS_BW,         /* bandwidth: val = kind, x = on, y = off (GB/s; latency us); -1 unknown;
                          text = the tool: "p2pbw", "verify", or "nvbw" (nvbandwidth: y is
                          then the host path's bandwidth, the slower of the two GPUs' copies
                          to and from host memory, not a staged copy) */
    DR_OBS_NCCL,       /* NCCL transport: text = class (P2P, SHM, NET); val 1: in a run with
                          NCCL_P2P_DISABLE=1 */
    DR_OBS_CORRUPT,    /* wrong data: val 1; val 0 = checked and intact */
    DR_OBS_LIMIT,      /* the limit of the P2P path as p2p-verify computed it: x, GB/s per
                          direction; text = the path's type (nvlink, pcie) */
    DR_OBS_HAZARD,     /* a p2p-verify hazard test failed (not a self-test's injection): text =
                          the test (compressible, atomics, ordering, stale, managed); val 1 */
};
enum { DR_BW_UNI = 1, DR_BW_BI, DR_BW_LAT };

typedef struct {
    int kind;
    int ns;
    int a, b;    /* indices in ns (or rec ids when ns == DR_NS_NONE) */
    int val;
    double x, y;
    char text[24];
    dr_ev ev;
} dr_pobs;

/* A PCI bridge from lspci -vvv. */
typedef struct {
    char busid[16];
    int type; /* 1 root port, 2 downstream, 3 upstream, 0 other */
    int sec, sub; /* bus range below it; -1 unknown */
    int acs_seen, req_redir, cmplt_redir, src_valid;
    int acs_cap;      /* offset of its ACS capability (lspci "Capabilities: [148 v1] Access
                         Control Services"); -1 unknown */
    int acs_conflict; /* lspci and setpci disagree about its ACS control */
    dr_ev acs_ev;
    char name[96];
} dr_bridge;

/* A setpci access of a device's configuration space, as pasted. */
typedef struct {
    char busid[16];
    int acs;     /* 1: relative to the ACS capability (ECAP_ACS, ECAP0d, or -v's "(ecap 000d @148)") */
    int cap_off; /* the ACS capability's offset where -v printed it, else -1 */
    int reg;     /* the register: its offset from the capability (acs), else absolute */
    int width;   /* bytes: 1, 2, 4 */
    long value;  /* what was read or written; -1: no ACS capability ("not found") */
    int write;
    dr_ev ev;
} dr_setpci;

/* A RegistryDwords string, parsed. */
typedef struct {
    int present;
    int n;
    char key[DR_MAX_KEYS][40];
    long long val[DR_MAX_KEYS];
    dr_ev ev;
} dr_regkeys;

/* One input file and how it was read. */
typedef struct {
    char name[64];
    char status[16];  /* read, partial, binary, empty, unreadable, skipped */
    char note[160];
    long long bytes;
    long lines;
    long cut_lines;   /* lines cut at the line length limit */
    unsigned kinds;   /* DR_K_* bits: what was recognised in it */
    int ngpus;        /* GPUs it lists (with identity); -1 none */
    char gpu_src[24]; /* the output those GPUs came from */
} dr_file;

enum {
    DR_K_SMI = 1u << 0,      /* nvidia-smi table, -L */
    DR_K_SMIQ = 1u << 1,     /* nvidia-smi -q */
    DR_K_TOPO = 1u << 2,     /* topo -m */
    DR_K_P2PCAP = 1u << 3,   /* topo -p2p */
    DR_K_NVLINK = 1u << 4,   /* nvlink -s */
    DR_K_LSPCI = 1u << 5,    /* lspci */
    DR_K_LSPCIV = 1u << 6,   /* lspci -vvv with capabilities */
    DR_K_DMESG = 1u << 7,    /* kernel log */
    DR_K_CMDLINE = 1u << 8,  /* kernel command line */
    DR_K_MODOPTS = 1u << 9,  /* modprobe options */
    DR_K_PARAMS = 1u << 10,  /* /proc/driver/nvidia/params */
    DR_K_VERSION = 1u << 11, /* /proc/driver/nvidia/version */
    DR_K_MODINFO = 1u << 12, /* modinfo */
    DR_K_SIMPLEP2P = 1u << 13,
    DR_K_P2PBW = 1u << 14, /* p2pBandwidthLatencyTest */
    DR_K_NCCL = 1u << 15,
    DR_K_VERIFY = 1u << 16, /* p2p-verify text or JSON */
    DR_K_SECBOOT = 1u << 17,
    DR_K_IOMMU = 1u << 18,    /* IOMMU groups / state */
    DR_K_SYSFS = 1u << 19,    /* sysfs GPU facts (collect) */
    DR_K_USERSPACE = 1u << 20, /* userspace library versions */
    DR_K_P2PSTATE = 1u << 21,  /* build.sh's own install state */
    DR_K_MANIFEST = 1u << 22,
    DR_K_CUDAERR = 1u << 23, /* a CUDA error of a P2P test */
    DR_K_DEVQUERY = 1u << 24, /* deviceQuery, /proc/driver/nvidia/gpus/ information */
    DR_K_NVBW = 1u << 25,     /* nvbandwidth */
    DR_K_SETPCI = 1u << 26,   /* setpci readings (ACS control) */
    DR_K_LSPCIT = 1u << 27,   /* lspci -t (the PCI tree) */
};

/* The bus bandwidth of an NCCL all-reduce run (nccl-tests, p2p-verify). */
typedef struct {
    double avg;  /* nccl-tests' "Avg bus bandwidth" (GB/s), -1 unknown */
    double peak; /* the largest busbw of its rows (p2p-verify: the largest size's) */
    int ngpus;   /* ranks, 0 unknown */
    int dev[2];  /* the CUDA devices of a two-GPU run, -1 unknown */
    dr_ev ev;
} dr_busbw;

/* Machine-wide facts. */
typedef struct {
    /* IOMMU */
    dr_num iommu_fault;      /* IO_PAGE_FAULT / DMAR fault lines (count) */
    dr_num iommu_fault_gpu;  /* ... naming an NVIDIA GPU */
    dr_num iommu_translated; /* 1 translated, 0 passthrough/off */
    dr_num iommu_present;    /* an IOMMU initialised */
    dr_num iommu_off;        /* disabled on the command line */
    dr_num cmd_iommu_pt;     /* iommu=pt / iommu.passthrough=1 */
    dr_num cmd_iommu_on;     /* intel_iommu=on / amd_iommu=on(force) */
    dr_num acs_override;     /* pcie_acs_override on the command line */
    /* driver */
    char module_version[24];
    dr_ev module_version_ev;
    dr_num module_open;       /* 1 open kernel module, 0 proprietary */
    char loaded_version[24];  /* from dmesg "loading" lines */
    dr_ev loaded_version_ev;
    char smi_driver_version[24];
    dr_ev smi_driver_version_ev;
    char userspace_versions[4][24];
    int nuserspace;
    dr_ev userspace_ev;
    dr_num api_mismatch; /* 1 seen */
    char api_client[24], api_module[24];
    dr_num nvml_mismatch;
    dr_num cuda_driver_mismatch; /* error 803 */
    dr_num driver_not_loaded;    /* nvidia-smi cannot talk to the driver */
    dr_num init_failed;          /* RmInitAdapter failed */
    dr_num fell_off_bus;         /* Xid 79 */
    dr_num no_gpu_found;         /* NVRM: No NVIDIA GPU found */
    dr_num static_bar1_error;    /* RM's static BAR1 errors */
    dr_num peer_map_unaligned;   /* "The peer DMA address 0x.. is not aligned at 0x20000000" */
    char peer_map_addr[24];      /* that address, "0x6000400000" */
    dr_num peer_map_failed;      /* "IOMMU mapping failed from GPU0 to GPU1" */
    int peer_map_from, peer_map_to; /* its GPU numbers (RM's instances), -1 */
    dr_num rebar_failed;         /* NVRM could not resize BAR1 */
    dr_num bar_no_space;         /* pci: BAR 1: no space / failed to assign */
    char bar_no_space_dev[16];
    /* options */
    dr_regkeys configured; /* modprobe.d */
    dr_regkeys applied;    /* /proc/driver/nvidia/params */
    dr_num rebar_option_configured, rebar_option_applied; /* NVreg_EnableResizableBar */
    /* module file */
    dr_num modinfo_signed; /* 1 signer present, 0 none */
    char modinfo_filename[160];
    char modinfo_version[24];
    dr_num modinfo_proprietary;
    char loaded_srcversion[40], p2p_srcversion[40];
    /* Secure Boot */
    dr_num secure_boot;    /* 1 enabled, 0 disabled */
    dr_num module_rejected; /* unsigned module rejected */
    dr_num unsigned_loaded; /* "module verification failed ... tainting": loaded anyway */
    dr_num insert_eperm;    /* modprobe nvidia: Operation not permitted */
    /* ours */
    char p2p_installed[24]; /* build.sh's installed tag, "" none */
    dr_ev p2p_installed_ev;
    dr_num p2p_state_seen;
    dr_num p2p_deb;              /* package nvidia-p2p-dkms: 1 installed, 0 not, -1 unknown (no dpkg) */
    char p2p_deb_version[24];    /* its version, without the Debian revision */
    dr_num other_kmod_packages;  /* other packages of NVIDIA kernel modules: 1 some, 0 none, -1 unknown */
    char other_kmod_names[96];   /* their names */
    /* verification outputs */
    dr_num selftest; /* p2p-verify --self-test ran: corruption is injected */
    dr_num verify_status; /* p2p-verify exit code */
    dr_ev verify_ev;
    dr_num nccl_wrong; /* nccl-tests #wrong > 0 or out of bounds FAILED */
    dr_num nccl_ok;    /* nccl-tests out of bounds OK */
    dr_num illegal_access;
    dr_busbw nccl_bus[2]; /* all-reduce with P2P allowed [0], with NCCL_P2P_DISABLE=1 [1] */
    dr_num p2p_error; /* a P2P test failed with a CUDA error (illegal access, map buffer failed) */
    int p2p_error_a, p2p_error_b; /* the pair, CUDA numbering, -1 unknown */
    dr_num simplep2p_failed, simplep2p_passed;
    /* test outputs that stop before their end (a hang, a crash, or a cut
     * paste): which test, and the last line read of it */
    int ncut;
    struct {
        char test[32];
        char where[64];
        dr_ev ev;
    } cut[4];
    dr_num p2p_unavailable; /* "Peer to Peer access is not available" */
    dr_num vm_guest;        /* a hypervisor was detected */
    dr_num nouveau;         /* nouveau bound to a GPU */
    dr_num lspci_denied;    /* capabilities not readable (not root) */
    dr_num acs_unknown_ctx; /* ACSCtl lines without device context */
    dr_num acs_redir_any;   /* some ACSCtl has ReqRedir+/CmpltRedir+ */
    dr_num p2p_cnsrow;      /* a p2p status cell CNS */
    dr_num sysfs_gpus;      /* NVIDIA GPUs sysfs lists (a bundle of --collect) */
    /* facts about a PCI address, tied to GPUs by the rules */
    char fault_dev[8][16]; /* devices named by IOMMU faults */
    dr_ev fault_dev_ev[8];
    int nfault_dev;
    struct {
        char busid[16];
        int bar;
        dr_ev ev;
    } nospace[8]; /* pci: BAR n: no space / can't assign */
    int nnospace;
    struct {
        char busid[16];
        dr_ev ev;
    } bar1_invalid[8]; /* NVRM: BAR1 is 0M */
    int nbar1_invalid;
    struct {
        char busid[16];
        long long type; /* 1 translated (DMA, DMA-FQ), 0 identity */
        dr_ev ev;
    } group_type[DR_MAX_GPUS]; /* sysfs iommu group type per GPU */
    int ngroup_type;
    struct {
        char busid[16];
        dr_ev ev;
    } console[8]; /* the boot VGA / console framebuffer device */
    int nconsole;
} dr_sys;

typedef struct {
    dr_file files[DR_MAX_FILES];
    int nfiles;
    dr_grec recs[DR_MAX_RECS];
    int nrecs;
    dr_gpu gpus[DR_MAX_GPUS];
    int ngpus;
    int rec_gpu[DR_MAX_RECS]; /* rec -> merged GPU (-1 anon or dropped) */
    dr_pobs pobs[DR_MAX_POBS];
    int npobs;
    dr_bridge bridges[DR_MAX_BRIDGES];
    int nbridges;
    dr_setpci setpci[DR_MAX_SETPCI];
    int nsetpci;
    dr_sys sys;
    int truncated_recs; /* records or observations dropped at the limits */
    int smi_unplaced;   /* GPUs numbered by nvidia-smi alone (topo -m...) that could not be matched to the
                           GPUs known by bus address: how many, their files in smi_unplaced_files */
    char smi_unplaced_files[96];
    char notes[16][320];
    int nnotes;
} dr_model;

/* Allocate an empty model (all numbers unknown). NULL when out of memory. */
dr_model *dr_model_new(void);
void dr_model_free(dr_model *m);
/* A GPU record with every number unknown. */
void dr_grec_reset(dr_grec *r);
/* Set an unknown number to v with its evidence; a known one is kept
 * (the first output that says it wins) unless force. */
void dr_set(dr_num *n, long long v, const dr_ev *ev);
/* The bridge at busid (found, or new with nothing known); -1 when full. */
int dr_bridge_get(dr_model *m, const char *busid);
/* Evidence from file/line/text (text cut and made printable ASCII). */
void dr_ev_make(dr_ev *ev, const char *file, long line, const char *text);
/* A note about the inputs (shown under Inputs). */
void dr_note(dr_model *m, const char *fmt, ...);

#endif
