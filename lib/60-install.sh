# shellcheck shell=bash
# lib/60-install.sh: stage 6, install; and uninstall. Both are transactions:
# every file they change is saved first, and any failure or Ctrl-C restores
# it, so the driver that was installed before keeps working.
#
# By default install registers the modules with DKMS (lib/65-dkms.sh), so
# every new kernel gets them; --no-dkms keeps the single-kernel install.
# What a --no-dkms install writes (all under --root, default /):
#   /lib/modules/<kver>/updates/nvidia-p2p/*.ko   the patched modules
#   /etc/depmod.d/nvidia-p2p.conf                 makes depmod prefer them over
#                                                 distribution or DKMS copies
#   /etc/modprobe.d/nvidia-p2p.conf               the family's P2P options
#   /var/lib/nvidia-p2p/installed-<kver>          what was installed, for uninstall
# and it reruns depmod and the initramfs generator for <kver>.

readonly P2P_NAME="nvidia-p2p"

help_install() {
  cat <<'EOF'
Usage: build.sh install <tag> [--kernel KVER] [--no-dkms] [--run FILE] [--run-sha256 HEX]
                              [--userspace auto|keep|run] [--nvlink keep|off]
                              [--force-static-bar1 ADDR[,ADDR...]]
                              [--sign-key FILE --sign-cert FILE | --sign-generate]

Install driver <tag> with PCIe P2P and the P2P module options, keeping the
userspace driver your distribution's packages installed, or installing it from
NVIDIA's .run with --no-kernel-modules; rerun depmod and the initramfs
generator. Needs root.

By default the patched source (from `build.sh build <tag>`) is registered
with DKMS as module nvidia-p2p/<tag>: DKMS builds and installs it now for
every installed kernel with headers (only KVER with --kernel), and by itself
for every kernel installed later. Needs dkms 3.0.10 or newer. Another NVIDIA
kernel module installed through DKMS or a package is refused (exit 14) with
the command that removes it. DKMS signs the modules (Secure Boot) with its
key pair (/var/lib/dkms/mok.key and mok.pub, made if missing) or the one given.

  --no-dkms         install the modules built for KVER (default: the running
                    kernel) into /lib/modules/KVER/updates/nvidia-p2p only; a
                    new kernel will not have them
  --sign-key FILE   private key to sign the modules with (PEM)
  --sign-cert FILE  its X.509 certificate (PEM or DER); under DKMS, DKMS signs
                    every module it builds with this pair from then on
  --sign-generate   make a new key pair at /var/lib/dkms/mok.key and mok.pub
                    (kept if it exists) and sign with it; with --no-dkms the
                    modules are signed only with a key: given, generated, or
                    DKMS's when it exists
  --run FILE        a local NVIDIA-Linux-x86_64-<tag>.run (else the cache, or a download)
  --run-sha256 HEX  checksum to require where versions.conf says 'unknown'
  --userspace MODE  who provides the userspace driver (libcuda, libnvidia-ml,
                    nvidia-smi); it must end up at exactly <tag>:
                      auto  (default) keep it when packages (dpkg, rpm) own it
                            and are <tag>; packages of another version are
                            refused (exit 12) with the commands that fix it;
                            NVIDIA's .run when no package owns it
                      keep  keep what is installed (packages or an earlier
                            .run); it must be <tag>, and its GSP firmware
                            (/lib/firmware/nvidia/<tag>/gsp_*.bin) must be
                            there (exit 10 names the package that brings it)
                      run   NVIDIA's .run of <tag>; refused (exit 10) while
                            packages own the userspace libraries
  --no-userspace    the same as --userspace keep
  --nvlink MODE     P2P between GPUs joined by an NVLink bridge (RTX 3090):
                      keep  NVLink for bridged pairs, BAR1 P2P for every other
                            pair (the default)
                      off   BAR1 P2P for every pair, NVLink unused
                    Written into /etc/modprobe.d/nvidia-p2p.conf
                    (RMBar1P2PKeepNvlink, a key of p2p-0006, in families 535 to
                    570; RMForceP2PType from 575 on): switch there and reboot,
                    no rebuild needed.
  --force-static-bar1 ADDR[,ADDR...]
                    opt-in, for GPUs whose BAR1 is no larger than their VRAM
                    (16 GB RTX 5060 Ti / 5070 Ti, 32 GB RTX 5090), which from
                    565 on get no static BAR1 mapping and so no P2P: force it
                    for the GPUs at these PCI addresses (DDDD:BB:DD.F), mapping
                    their client-visible VRAM (RMForceStaticBar1=1 per GPU,
                    NVreg_RegistryDwordsPerDevice). Families 565 and later.
                    Refused (exit 10) for a GPU whose BAR1 is smaller than the
                    VRAM nvidia-smi reports, or that drives a display or the
                    console: RM would fail its initialization.

Secure Boot: refused only when no signing key is available. A key that is not
enrolled yet is used, and build.sh prints the mokutil steps to enroll it.
Every signature is checked against the certificate. A bad key (unreadable,
a certificate of another key, expired) stops the install before anything
changes (exit 15).

The install is a transaction: what it replaces (DKMS's state and module
directories too) is backed up first and restored on any failure or Ctrl-C.
At the end the userspace version must equal the module version, or the
install is rolled back: all but NVIDIA's .run, which cannot be undone (the
error says when it ran). Asks for confirmation unless --yes is given
(without a terminal, --yes is required).
EOF
}

help_uninstall() {
  cat <<'EOF'
Usage: build.sh uninstall [--kernel KVER]

Remove what `build.sh install` put in place: the DKMS module nvidia-p2p (all
its kernels) and its source, the modules of a --no-dkms install for KVER
(default: every kernel it was installed for), the depmod, modprobe and DKMS
signing configuration. Then rerun depmod and the initramfs generator, so the
modules that were there before (distribution or DKMS) are used again. Needs
root. Transactional like install. The userspace driver installed from the
.run is left in place; see docs/install.md to remove or replace it. DKMS's key pair
(/var/lib/dkms/mok.*) stays: other DKMS modules and the enrolled key use it.
EOF
}

p2p_moddir() { printf '%s/lib/modules/%s/updates/%s\n' "${P2P_ROOT}" "$1" "${P2P_NAME}"; }
p2p_depmod_conf() { printf '%s/etc/depmod.d/%s.conf\n' "${P2P_ROOT}" "${P2P_NAME}"; }
p2p_modprobe_conf() { printf '%s/etc/modprobe.d/%s.conf\n' "${P2P_ROOT}" "${P2P_NAME}"; }
p2p_state_dir() { printf '%s/var/lib/%s\n' "${P2P_ROOT}" "${P2P_NAME}"; }

cmd_install() {
  local tag=""
  parse_stage_args install tag "$@"
  require_tag "${tag}"
  check_run_sha_arg "${tag}"
  nvlink_mode "${tag}" >/dev/null
  static_bar1_check "${tag}"
  resolve_install_kernel
  cache_lock_if_made
  install_preflight "${tag}"
  install_all "${tag}"
  [[ ${P2P_DRY_PROBLEM} -eq 0 ]] || exit "${P2P_DRY_PROBLEM}"
}

# cache_lock_if_made: install reads what build left in the work directory; a
# build of the same tag must not replace it meanwhile, so install holds the
# cache's lock too (the pipeline's sudo hand-over releases it for this), where
# a build made the lock file.
cache_lock_if_made() {
  [[ ${P2P_DRY_RUN} -eq 1 ]] || lock_acquire "${P2P_CACHE_DIR}" existing
}

resolve_install_kernel() {
  P2P_KREL=${P2P_KERNEL:-$(uname -r)}
}

# install_preflight TAG: refuse before changing anything.
install_preflight() {
  local tag=$1 problem
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    stage preflight "install of ${tag} for kernel ${P2P_KREL} (--no-dkms)"
  else
    stage preflight "install of ${tag} through DKMS"
  fi
  P2P_MODULES_DIR="${P2P_WORK_DIR}/${tag}/modules-${P2P_KREL}"
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    is_root || die "${EX_PREFLIGHT}" "install needs root (try: sudo $0 install ${tag})"
    need_cmd depmod kmod
    problem=$(install_unbuilt "${tag}")
    [[ -z ${problem} ]] || die "${EX_PREFLIGHT}" "${problem}"
    if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
      check_modules "${P2P_MODULES_DIR}" "${tag}" "${P2P_KREL}"
      [[ -d ${P2P_ROOT}/lib/modules/${P2P_KREL} ]] ||
        die "${EX_PREFLIGHT}" "kernel ${P2P_KREL} is not installed (${P2P_ROOT}/lib/modules/${P2P_KREL})"
    else
      dkms_preflight
      dkms_conflicts
      dkms_target_kernels
    fi
  else
    install_preflight_dry "${tag}"
  fi
  sign_resolve
  preflight_secure_boot
  userspace_preflight "${tag}"
  [[ ${P2P_NO_USERSPACE} -eq 1 ]] || fetch_run "${tag}"
}

# install_unbuilt TAG: why install has nothing to install for TAG, or nothing
# when build left what it needs (the modules, or the DKMS source).
install_unbuilt() {
  local tag=$1
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    [[ -d ${P2P_MODULES_DIR} ]] ||
      printf 'no modules of %s built for %s in %s; run: build.sh build %s --kernel %s\n' \
        "${tag}" "${P2P_KREL}" "${P2P_MODULES_DIR}" "${tag}" "${P2P_KREL}"
  else
    [[ -f $(payload_dir "${tag}")/dkms.conf ]] ||
      printf 'no DKMS source of %s in %s; run: build.sh build %s\n' "${tag}" "$(payload_dir "${tag}")" "${tag}"
  fi
}

# install_in_pipeline: the install step runs inside build.sh <tag>, after its
# build (install_preflight_dry then checks only what the pipeline leaves).
install_in_pipeline() {
  P2P_IN_PIPELINE=1
}

# install_preflight_dry TAG: what the real install would refuse, as PROBLEM
# lines. In the pipeline's plan the build comes first and the install step
# runs as root (through sudo), so only the kernels are checked there.
install_preflight_dry() {
  local tag=$1 problem
  if [[ ${P2P_IN_PIPELINE} -eq 0 ]]; then
    is_root || preflight_fail "${EX_PREFLIGHT}" "install needs root (try: sudo $0 install ${tag})"
    problem=$(install_unbuilt "${tag}")
    [[ -z ${problem} ]] || preflight_fail "${EX_PREFLIGHT}" "${problem}"
    if [[ ${P2P_NO_DKMS} -eq 0 ]]; then
      problem=$(dkms_problem)
      [[ -z ${problem} ]] || preflight_fail "${EX_PREFLIGHT}" "${problem}"
    fi
  fi
  [[ ${P2P_NO_DKMS} -eq 1 ]] || dkms_target_kernels_dry
}

# dkms_target_kernels_dry: the kernels a DKMS install would build for; under
# --dry-run a missing one is a reported problem, not the end.
dkms_target_kernels_dry() {
  if (dkms_target_kernels) >/dev/null 2>&1; then
    dkms_target_kernels 2>/dev/null
    return 0
  fi
  preflight_fail "${EX_PREFLIGHT}" "no kernel headers for ${P2P_KERNEL:-any installed kernel}; install them first: $(headers_package_hint "${P2P_KREL}")"
  P2P_KERNELS=("${P2P_KREL}")
}

install_all() {
  local tag=$1 m what
  local moddir
  moddir=$(p2p_moddir "${P2P_KREL}")
  [[ ${P2P_DRY_RUN} -eq 1 ]] || lock_acquire "$(p2p_state_dir)"
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    what="for kernel ${P2P_KREL}"
  else
    what="through DKMS (now for ${P2P_KERNELS[*]}, later for every new kernel)"
  fi
  confirm "Install driver ${tag} with PCIe P2P ${what}$([[ ${P2P_NO_USERSPACE} -eq 1 ]] || printf ', and its userspace from %s' "$(basename "${P2P_RUN_PATH}")")?"
  if [[ ${P2P_NO_DKMS} -eq 0 ]]; then
    dkms_install_all "${tag}"
    return 0
  fi
  txn_begin "install ${tag}"
  sign_prepare
  stage install "modules into ${moddir}"
  txn_save "${moddir}"
  run rm -rf -- "${moddir}"
  txn_mkdir "${moddir}"
  for m in ${P2P_MODULES}; do
    run install -m 0644 -- "${P2P_MODULES_DIR}/${m}.ko" "${moddir}/${m}.ko"
    if command -v strip >/dev/null 2>&1; then
      run strip --strip-debug -- "${moddir}/${m}.ko"
    fi
  done
  sign_modules "${P2P_KREL}" "${moddir}"
  write_depmod_conf "updates/${P2P_NAME}"
  write_modprobe_conf "${tag}"
  refresh_module_index "${P2P_KREL}"
  if [[ ${P2P_NO_USERSPACE} -eq 0 ]]; then
    install_userspace "${tag}" "${P2P_RUN_PATH}"
  fi
  stage verify "installed versions"
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    check_modules "${moddir}" "${tag}" "${P2P_KREL}"
    require_userspace_version "${tag}" "after install: "
  fi
  txn_save "$(p2p_state_dir)/installed-${P2P_KREL}"
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    printf 'tag=%s kernel=%s family=%s date=%s\n' "${tag}" "${P2P_KREL}" "${V_FAMILY[${tag}]}" \
      "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$(p2p_state_dir)/installed-${P2P_KREL}"
  fi
  txn_commit
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    dry_run_end "driver ${tag} with PCIe P2P would be installed for ${P2P_KREL}"
    [[ ${P2P_DRY_PROBLEMS} -ne 0 ]] || sign_next_steps
    return 0
  fi
  stage finished "driver ${tag} with PCIe P2P installed for ${P2P_KREL}"
  sign_next_steps
}

# write_depmod_conf SUBDIR: the override making depmod pick the modules in
# /lib/modules/<kver>/SUBDIR over any other copy of the same name.
write_depmod_conf() {
  local subdir=$1 conf
  conf=$(p2p_depmod_conf)
  txn_save "${conf}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would write %s (override entries for %s in %s)\n' "${conf}" "${P2P_MODULES}" "${subdir}"
    return 0
  fi
  if [[ ! -d $(dirname "${conf}") ]]; then
    # Made here: uninstall removes it again (drop_created_dir).
    txn_save "$(created_dir_marker)"
    txn_mkdir "$(dirname "${conf}")"
    printf '%s\n' "$(dirname "${conf}")" >"$(created_dir_marker)"
  fi
  depmod_conf_text "${subdir}" >"${conf}"
}

created_dir_marker() { printf '%s/created-depmod.d\n' "$(p2p_state_dir)"; }

# depmod_conf_text SUBDIR: the depmod.d text (also shipped by `package`).
depmod_conf_text() {
  local m
  printf '# Installed by %s: prefer the P2P modules over other copies.\n' "${P2P_NAME}"
  for m in ${P2P_MODULES}; do
    printf 'override %s * %s\n' "${m//-/_}" "$1"
  done
}

# write_modprobe_conf TAG: the family's module options (patches/<family>/modprobe.conf).
write_modprobe_conf() {
  local tag=$1 conf src mode keep
  conf=$(p2p_modprobe_conf)
  src="$(family_dir "${tag}")/modprobe.conf"
  [[ -r ${src} ]] || die "${EX_DATA}" "missing ${src}"
  mode=$(nvlink_mode "${tag}") || exit "$?"
  keep=$(nvlink_keep_setting "${tag}") || exit "$?"
  # p2p-0006's key (families 535-570): its one open risk, said once
  if [[ ${mode} == keep && ${keep%%=*} == RMBar1P2PKeepNvlink ]]; then
    warn "NVLink kept for bridged pairs (--nvlink keep, ${keep}): in family ${V_FAMILY[${tag}]} GSP firmware also gets RMForceP2PType=2, and whether it still sets up NVLink peers then is not known; if a bridged pair fails peer access (build.sh verify), reinstall with --nvlink off"
  fi
  txn_save "${conf}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would write %s:\n' "${conf}"
    modprobe_conf_text "${tag}" | grep -v '^#' | sed 's/^/  /'
    return 0
  fi
  txn_mkdir "$(dirname "${conf}")"
  modprobe_conf_text "${tag}" >"${conf}"
}

# modprobe_conf_text TAG [--no-install [REGEN]|--container]: the options file's text, with the
# NVLink mode (nvlink_mode) applied to the options line, then the install
# lines (modprobe_install_lines). --no-install leaves them out (`package`
# ships the options in /usr/lib/modprobe.d/nvidia-p2p.conf and the install
# lines in a file of their own, neither a conffile: apt remove takes both
# away) and says how to change the package's options (REGEN: the command
# that rebuilds the initramfs, default update-initramfs -u); --container leaves
# them out too and says what the image's entrypoint does with the options.
modprobe_conf_text() {
  local tag=$1 src mode keep text
  src="$(family_dir "${tag}")/modprobe.conf"
  [[ -r ${src} ]] || die "${EX_DATA}" "missing ${src}"
  mode=$(nvlink_mode "${tag}") || exit "$?"
  text=$(cat "${src}")
  if [[ ${mode} == keep ]]; then
    keep=$(nvlink_keep_setting "${tag}") || exit "$?"
    text=$(options_with "${keep}" <<<"${text}") || die "${EX_DATA}" "${src}: its options line has no ${keep%%=*} for '# nvlink-keep: ${keep}'"
  fi
  printf '# Installed by %s for driver %s (family %s).\n' "${P2P_NAME}" "${tag}" "${V_FAMILY[${tag}]}"
  if [[ ${2:-} == --container ]]; then
    printf '# The image'"'"'s options: nvidia-driver init writes them, with the GPU\n'
    printf '# Operator'"'"'s kernelModuleConfig files on top, to\n'
    printf '# /etc/modprobe.d/nvidia-p2p.conf (docs/kubernetes.md, "Which options win").\n'
  elif [[ ${2:-} == --no-install ]]; then
    # shellcheck disable=SC2153 # PKG_NAME: lib/72-pkgsrc.sh
    printf '# Shipped by the package %s, removed with it (not a conffile). To\n' "${PKG_NAME}"
    printf '# change the options (to switch P2P off without rebuilding: comment\n'
    printf '# out the options line(s)), copy this file to /etc/modprobe.d/ and edit\n'
    printf '# the copy: it overrides this file as a whole. It stays when the package\n'
    printf '# is removed: delete it first. Then %s and reboot; see\n' "${3:-update-initramfs -u}"
    printf '# docs/how-it-works.md, "Switching P2P off".\n'
  else
    printf '# Comment out the options line(s) and reboot to switch P2P off without\n'
    printf '# rebuilding: see docs/how-it-works.md, "Switching P2P off".\n'
  fi
  nvlink_note "${tag}" "${mode}"
  printf '%s\n' "${text}"
  static_bar1_lines "${tag}"
  [[ ${2:-} == --no-install || ${2:-} == --container ]] || modprobe_install_lines
}

# nvlink_keep_setting TAG: the registry setting that keeps NVLink for bridged
# pairs in TAG's family ("KEY=VALUE" from the "# nvlink-keep:" line of its
# modprobe.conf), or nothing where the family cannot keep it.
nvlink_keep_setting() {
  family_setting "$1" nvlink-keep
}

# family_setting TAG NAME: the "KEY=VALUE" of the "# NAME:" line of TAG's
# family's modprobe.conf, or nothing; anything else there is a data error.
family_setting() {
  local src v
  src="$(family_dir "$1")/modprobe.conf"
  v=$(sed -n -E "s/^#[[:space:]]*$2:[[:space:]]*//p" "${src}" | head -n 1)
  [[ -z ${v} || ${v} =~ ^[A-Za-z0-9_]+=(0x)?[0-9A-Fa-f]+$ ]] || die "${EX_DATA}" "${src}: '# $2:' needs KEY=VALUE, not '${v}'"
  printf '%s' "${v}"
}

# nvlink_mode TAG: keep or off: --nvlink, else keep where the family can
# (nvlink_keep_setting), else off. --nvlink keep in a family that cannot is
# refused (exit 3).
nvlink_mode() {
  local keep
  keep=$(nvlink_keep_setting "$1") || exit "$?"
  case ${P2P_NVLINK:-} in
  off) echo off ;;
  keep)
    [[ -n ${keep} ]] || die "${EX_UNSUPPORTED}" "--nvlink keep: family ${V_FAMILY[$1]} ($1) cannot keep NVLink for bridged pairs: its options have no '# nvlink-keep:' setting (see docs/how-it-works.md, Mixed boxes); use --nvlink off"
    echo keep
    ;;
  *) if [[ -n ${keep} ]]; then echo keep; else echo off; fi ;;
  esac
}

# nvlink_note TAG MODE: the comment lines saying what MODE does for TAG.
nvlink_note() {
  if [[ $2 == keep ]]; then
    printf '# NVLink: kept (--nvlink keep): GPU pairs joined by an NVLink bridge use\n'
    printf '# NVLink, every other pair BAR1 P2P (%s below; the\n' "$(nvlink_keep_setting "$1")"
    printf '# family'"'"'s comment says what --nvlink off writes instead).\n'
  else
    if [[ -n $(nvlink_keep_setting "$1") ]]; then
      printf '# NVLink: off (--nvlink off): BAR1 P2P for every pair, NVLink bridges\n'
      printf '# unused (--nvlink keep writes %s instead).\n' "$(nvlink_keep_setting "$1")"
    else
      printf '# NVLink: off (the only mode of family %s): BAR1 P2P for every pair,\n' "${V_FAMILY[$1]}"
      printf '# NVLink bridges unused.\n'
    fi
  fi
}

# options_with KEY=VALUE: stdin with KEY's value in the NVreg_RegistryDwords
# of its "options nvidia" line set to VALUE (status 1: no such key there).
options_with() {
  local kv=$1 line out="" found=0 re
  re="([\";])${kv%%=*}=[^\";]*"
  while IFS= read -r line; do
    if [[ ${line} == "options nvidia "* && ${line} =~ ${re} ]]; then
      line=${line/"${BASH_REMATCH[0]}"/"${BASH_REMATCH[1]}${kv}"}
      found=1
    fi
    out+="${line}"$'\n'
  done
  [[ ${found} -eq 1 ]] || return 1
  printf '%s' "${out}"
}

# modprobe_install_lines: make `modprobe nvidia` (and the other four) load the
# modules of that name, ours. Debian's driver packages redirect it with
# 'install nvidia modprobe -i nvidia-current ...' (their renamed modules) in
# /etc/modprobe.d/nvidia.conf; modprobe takes a module's first 'install' line
# in its files' order, and nvidia-p2p.conf sorts before nvidia.conf (the
# package's /usr/lib/modprobe.d/nvidia-p2p-load.conf too: deb_tree).
modprobe_install_lines() {
  local m
  printf '\n# Load these modules, also where Debian'"'"'s driver packages would redirect\n'
  printf '# modprobe to their nvidia-current* modules (keep these lines).\n'
  local opts="\$CMDLINE_OPTS" # expanded by modprobe, not here
  for m in nvidia nvidia-modeset nvidia-drm nvidia-uvm nvidia-peermem; do
    printf 'install %s modprobe -i %s %s\n' "${m}" "${m}" "${opts}"
  done
}

# kernel_has_modules KVER: the tree of KVER holds modules to index (the
# image's modules.builtin, or any .ko); one with headers only and none of
# ours left holds none.
kernel_has_modules() {
  local d="${P2P_ROOT}/lib/modules/$1"
  [[ -e ${d}/modules.builtin || -n $(find "${d}" -name '*.ko*' -print -quit 2>/dev/null) ]]
}

# clear_module_index KVER: for a kernel with no modules left, what depmod
# made when ours were there (index files, empty updates directories) goes,
# instead of a new depmod run that would leave an index of nothing.
clear_module_index() {
  local d="${P2P_ROOT}/lib/modules/$1" f sub
  stage depmod "none for $1 (headers only, no modules left): its index files removed"
  for f in "${d}"/modules.*; do
    [[ -e ${f} ]] || continue
    txn_save "${f}"
    run rm -f -- "${f}"
  done
  for sub in updates/dkms updates; do
    [[ -d ${d}/${sub} && -z $(ls -A "${d}/${sub}") ]] || continue
    txn_save "${d}/${sub}"
    run rmdir -- "${d}/${sub}"
  done
}

# refresh_module_index KVER: depmod, then the initramfs (which may carry the
# nvidia modules and their options). Both outputs are saved first.
refresh_module_index() {
  local kver=$1 f initrd
  local -a depmod_cmd=(depmod -a)
  # depmod -b does not move the configuration directory; -C does.
  [[ -n ${P2P_ROOT} ]] && depmod_cmd+=(-b "${P2P_ROOT}" -C "${P2P_ROOT}/etc/depmod.d")
  txn_save_index "${P2P_ROOT}/lib/modules/${kver}"
  stage depmod "${kver}"
  run "${depmod_cmd[@]}" "${kver}" || die "${EX_INSTALL}" "depmod failed for ${kver}"
  initrd=$(initramfs_path "${kver}")
  if [[ ! -e ${initrd} ]]; then
    # A kernel with headers but no initramfs (not booted from this machine's
    # images): nothing to regenerate.
    stage initramfs "none for ${kver} (${initrd}): nothing to update"
  elif command -v update-initramfs >/dev/null 2>&1; then
    txn_save "${initrd}"
    stage initramfs "update-initramfs -u -k ${kver}"
    run_logged update-initramfs -u -k "${kver}" || die "${EX_INSTALL}" "update-initramfs failed for ${kver}"
  elif command -v dracut >/dev/null 2>&1; then
    txn_save "${initrd}"
    stage initramfs "dracut --force --kver ${kver}"
    run_logged dracut --force --kver "${kver}" || die "${EX_INSTALL}" "dracut failed for ${kver}"
  else
    note "no update-initramfs or dracut found; if your initramfs loads nvidia, regenerate it yourself"
  fi
}

initramfs_path() {
  if [[ -e ${P2P_ROOT}/boot/initramfs-$1.img ]]; then
    printf '%s/boot/initramfs-%s.img\n' "${P2P_ROOT}" "$1"
  else
    printf '%s/boot/initrd.img-%s\n' "${P2P_ROOT}" "$1"
  fi
}

# drop_created_dir DIR: remove DIR when install made it (its marker says so;
# no package ships /etc/depmod.d on Debian) and it is empty, so the trees are
# as before the install.
drop_created_dir() {
  local dir=$1 marker
  marker=$(created_dir_marker)
  [[ ${P2P_DRY_RUN} -eq 0 && -f ${marker} && "$(cat "${marker}")" == "${dir}" ]] || return 0
  txn_save "${marker}"
  run rm -f -- "${marker}"
  [[ -d ${dir} && -z $(ls -A -- "${dir}") ]] || return 0
  run rmdir -- "${dir}"
}

cmd_uninstall() {
  local tag="" kver dtags
  local -a kernels=()
  parse_stage_args uninstall tag "$@"
  [[ -z ${tag} ]] || die "${EX_USAGE}" "uninstall takes no tag"
  [[ ${P2P_DRY_RUN} -eq 1 ]] || is_root || die "${EX_PREFLIGHT}" "uninstall needs root"
  if [[ -n ${P2P_KERNEL} ]]; then
    [[ -e $(p2p_state_dir)/installed-${P2P_KERNEL} ]] && kernels=("${P2P_KERNEL}")
  else
    mapfile -t kernels < <(installed_kernels)
  fi
  dtags=$(dkms_installed_tags | tr '\n' ' ')
  dtags=${dtags% }
  [[ ${#kernels[@]} -gt 0 || -n ${dtags} ]] ||
    die "${EX_PREFLIGHT}" "nothing to uninstall: no ${P2P_NAME} install recorded in $(p2p_state_dir)"
  [[ ${P2P_DRY_RUN} -eq 1 ]] || lock_acquire "$(p2p_state_dir)"
  confirm "Remove ${P2P_NAME}${dtags:+ (DKMS module ${DKMS_MODULE}/${dtags})}${kernels[*]:+ for kernel(s) ${kernels[*]}}?"
  txn_begin "uninstall"
  P2P_KERNELS=()
  dkms_uninstall
  for kver in "${kernels[@]+"${kernels[@]}"}"; do
    stage uninstall "${P2P_NAME} modules for ${kver}"
    txn_save "$(p2p_moddir "${kver}")"
    run rm -rf -- "$(p2p_moddir "${kver}")"
    txn_save "$(p2p_state_dir)/installed-${kver}"
    run rm -f -- "$(p2p_state_dir)/installed-${kver}"
    [[ " ${P2P_KERNELS[*]-} " == *" ${kver} "* ]] || P2P_KERNELS+=("${kver}")
  done
  if [[ -z $(installed_kernels_except "${kernels[@]+"${kernels[@]}"}") ]]; then
    txn_save "$(p2p_depmod_conf)"
    run rm -f -- "$(p2p_depmod_conf)"
    drop_created_dir "$(dirname "$(p2p_depmod_conf)")"
    txn_save "$(p2p_modprobe_conf)"
    run rm -f -- "$(p2p_modprobe_conf)"
  fi
  for kver in "${P2P_KERNELS[@]+"${P2P_KERNELS[@]}"}"; do
    if [[ ! -d ${P2P_ROOT}/lib/modules/${kver} ]]; then
      continue
    elif kernel_has_modules "${kver}"; then
      refresh_module_index "${kver}"
    else
      clear_module_index "${kver}"
    fi
  done
  txn_commit
  stage finished "${P2P_NAME} removed for: ${P2P_KERNELS[*]-}; reboot to load the previous driver"
  uninstall_userspace_note
}

# state_entries PREFIX: what follows PREFIX in the names of the state
# directory's files PREFIX* (installed-<kver>, dkms-<tag>).
state_entries() {
  local f
  for f in "$(p2p_state_dir)/$1"*; do
    [[ -e ${f} ]] && printf '%s\n' "${f##*/"$1"}"
  done
  return 0
}

installed_kernels() { state_entries installed-; }

installed_kernels_except() {
  local k skip
  while IFS= read -r k; do
    for skip in "$@"; do
      [[ ${k} == "${skip}" ]] && continue 2
    done
    printf '%s\n' "${k}"
  done < <(installed_kernels)
}

# --- transaction ------------------------------------------------------------
# txn_save PATH records PATH's current state (a copy, or "absent") once per
# transaction; rollback restores every recorded path in reverse order.

TXN_DIR=""
TXN_ACTIVE=0
TXN_NAME=""
declare -ga TXN_PATHS=()

txn_begin() {
  TXN_NAME=$1
  TXN_PATHS=()
  TXN_ACTIVE=1
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    return 0
  fi
  mkdir -p "$(p2p_state_dir)"
  TXN_DIR=$(mktemp -d "$(p2p_state_dir)/txn.XXXXXX")
  on_exit txn_on_exit
}

txn_save() {
  local path=$1 n p
  [[ ${P2P_DRY_RUN} -eq 1 ]] && return 0
  for p in "${TXN_PATHS[@]+"${TXN_PATHS[@]}"}"; do
    [[ ${p} == "${path}" ]] && return 0
  done
  n=${#TXN_PATHS[@]}
  TXN_PATHS+=("${path}")
  if [[ -e ${path} || -L ${path} ]]; then
    cp -a -- "${path}" "${TXN_DIR}/${n}" || die "${EX_INSTALL}" "cannot back up ${path}"
  fi
}

# txn_mkdir DIR: mkdir -p DIR; the topmost directory it makes is saved as
# absent, so a rollback removes what it made.
txn_mkdir() {
  local dir=$1 top=""
  [[ ${P2P_DRY_RUN} -eq 1 ]] && return 0
  while [[ ! -e ${dir} && ${dir} == /* && ${dir} != / ]]; do
    top=${dir}
    dir=$(dirname "${dir}")
  done
  [[ -z ${top} ]] || txn_save "${top}"
  mkdir -p -- "$1"
}

# The files depmod (kmod 30-34) writes into /lib/modules/<kver>.
DEPMOD_FILES="modules.dep modules.dep.bin modules.alias modules.alias.bin modules.softdep modules.weakdep
modules.symbols modules.symbols.bin modules.builtin.bin modules.builtin.alias.bin modules.devname"

# txn_save_index DIR: the module index of the kernel directory DIR as it is,
# the depmod files it lacks included (a rollback removes them again).
txn_save_index() {
  local dir=$1 f
  for f in "${dir}"/modules.*; do
    [[ -e ${f} ]] && txn_save "${f}"
  done
  for f in ${DEPMOD_FILES}; do
    txn_save "${dir}/${f}"
  done
}

# Restoring the saved modules.* files and initramfs restores the module index
# exactly, so rollback needs no depmod run.
txn_rollback() {
  local i path
  for ((i = ${#TXN_PATHS[@]} - 1; i >= 0; i--)); do
    path=${TXN_PATHS[i]}
    rm -rf -- "${path}"
    if [[ -e ${TXN_DIR}/${i} || -L ${TXN_DIR}/${i} ]]; then
      mkdir -p "$(dirname "${path}")"
      cp -a -- "${TXN_DIR}/${i}" "${path}"
    fi
  done
}

txn_commit() {
  TXN_ACTIVE=0
  [[ -n ${TXN_DIR} ]] && rm -rf -- "${TXN_DIR}"
  TXN_DIR=""
  return 0
}

txn_on_exit() {
  local rc=$1
  [[ ${TXN_ACTIVE} -eq 1 && -n ${TXN_DIR} ]] || return 0
  printf '%s: %s failed (exit %s); restoring the previous state\n' "${P2P_PROG}" "${TXN_NAME}" "${rc}" >&2
  log_line "ROLLBACK ${TXN_NAME} after exit ${rc}"
  txn_rollback
  rm -rf -- "${TXN_DIR}"
  TXN_ACTIVE=0
  printf '%s: rolled back: the files changed by %s are as they were before\n' "${P2P_PROG}" "${TXN_NAME}" >&2
  if [[ -n ${P2P_USERSPACE_TOUCHED} ]]; then
    printf '%s: the userspace installer ran and was not undone: %s\n' "${P2P_PROG}" "${P2P_USERSPACE_TOUCHED}" >&2
  fi
}
