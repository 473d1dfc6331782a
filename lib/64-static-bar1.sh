# shellcheck shell=bash
# lib/64-static-bar1.sh: --force-static-bar1, for GPUs whose BAR1 is no
# larger than their VRAM (16 GiB RTX 5060 Ti / 5070 Ti, 32 GiB RTX 5090).
#
# From 565 RM makes the static BAR1 mapping BAR1 P2P needs only when BAR1
# holds all of FB plus reservations (kbusIsStaticBar1Supported_TU102: FB +
# 128 KiB under ONLY_GPU, FB + USERD + console + mailbox under AUTO), so such
# a GPU gets none and p2p-0007 leaves it out of P2P. RMForceStaticBar1=1
# (ENABLE) maps the client-visible FB instead, which fits, but fails the GPU's
# init where even that does not fit. So it is opt-in, per GPU
# (NVreg_RegistryDwordsPerDevice, whose keys RM takes over the global ones),
# and refused for a GPU whose BAR1 is smaller than its VRAM, or that drives
# the console (its static mapping would start 512 MiB above the console).
# The family's modprobe.conf says which setting does it ("# static-bar1-force:
# KEY=VALUE"); a family without the line refuses the option (exit 3).

# static_bar1_check TAG: refuse --force-static-bar1 where the family has no
# setting (3) or a GPU would fail its init with it (10); nothing without it.
static_bar1_check() {
  local tag=$1 gpu
  [[ -n ${P2P_STATIC_BAR1} ]] || return 0
  [[ -n $(static_bar1_setting "${tag}") ]] ||
    die "${EX_UNSUPPORTED}" "--force-static-bar1: family ${V_FAMILY[${tag}]} (${tag}) has no '# static-bar1-force:' setting: its static BAR1 check already fits a BAR1 as large as VRAM, or the family was not read for it (docs/how-it-works.md, Mixed boxes)"
  for gpu in ${P2P_STATIC_BAR1//,/ }; do
    static_bar1_check_gpu "${gpu}"
  done
}

# static_bar1_check_gpu ADDR: ADDR is an NVIDIA GPU here, not the console's,
# and its BAR1 holds its VRAM (nvidia-smi), else refused (10).
static_bar1_check_gpu() {
  local gpu=$1 dev bar1 vram active
  dev="${P2P_SYSFS}/bus/pci/devices/${gpu}"
  nvidia_gpus | grep -qx "${gpu}" ||
    die "${EX_PREFLIGHT}" "--force-static-bar1: no NVIDIA GPU at ${gpu} (${dev})"
  [[ $(cat "${dev}/boot_vga" 2>/dev/null) != 1 ]] ||
    die "${EX_PREFLIGHT}" "--force-static-bar1: ${gpu} is the boot (console) GPU: its static mapping would start 512 MiB above the console and not fit a BAR1 as large as VRAM, and the GPU would fail to initialize; leave it out"
  bar1=$(pci_bar_mib "${dev}" 1) ||
    die "${EX_PREFLIGHT}" "--force-static-bar1: cannot read the BAR1 size of ${gpu} (${dev}/resource)"
  IFS=, read -r vram active < <(gpu_smi_row "${gpu}") || true
  [[ ${vram:-} =~ ^[0-9]+$ ]] ||
    die "${EX_PREFLIGHT}" "--force-static-bar1: cannot read the VRAM of ${gpu} (nvidia-smi --query-gpu=memory.total needs a loaded driver); install without the option first, or check it by hand"
  [[ ${active:-} != Enabled ]] ||
    die "${EX_PREFLIGHT}" "--force-static-bar1: ${gpu} drives a display: its static mapping would start 512 MiB above the console and not fit; leave it out"
  [[ ${bar1} -ge ${vram} ]] ||
    die "${EX_PREFLIGHT}" "--force-static-bar1: ${gpu}'s BAR1 (${bar1} MiB) is smaller than its VRAM (${vram} MiB): RM could not map it and the GPU would fail to initialize"
}

# pci_bar_mib DEV N: the size of DEV's BAR N in MiB (sysfs resource file).
pci_bar_mib() {
  local start end
  read -r start end _ < <(sed -n "$(($2 + 1))p" "$1/resource" 2>/dev/null) || return 1
  [[ ${start} =~ ^0x[0-9a-fA-F]+$ && ${end} =~ ^0x[0-9a-fA-F]+$ ]] || return 1
  ((end > start)) || return 1
  printf '%s\n' "$(((end - start + 1) >> 20))"
}

# gpu_smi_row ADDR: "VRAM_MIB,DISPLAY_ACTIVE" of the GPU at ADDR, from
# nvidia-smi, or nothing.
gpu_smi_row() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  nvidia-smi --query-gpu=pci.bus_id,memory.total,display_active --format=csv,noheader,nounits 2>/dev/null |
    awk -F', *' -v a="$1" 'tolower(substr($1, length($1) - 11)) == a { print $2 "," $3; exit }'
}
