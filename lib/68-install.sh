# shellcheck shell=bash
# lib/68-install.sh: the install stage, and uninstall. Both are transactions:
# every file they change is saved first, and any failure or Ctrl-C restores
# it, so the driver that was installed before keeps working.
#
# By default install registers the modules with DKMS (lib/66-dkms.sh), so
# every new kernel gets them; --no-dkms keeps the single-kernel install.
# What a --no-dkms install writes (all under --root, default /):
#   /lib/modules/<kver>/updates/nvidia-p2p/*.ko   the patched modules
#   /etc/depmod.d/nvidia-p2p.conf                 makes depmod prefer them over
#                                                 distribution or DKMS copies
#   /etc/modprobe.d/nvidia-p2p.conf               the family's P2P options
#   /var/lib/nvidia-p2p/installed-<kver>          what was installed, for uninstall
# and it reruns depmod and the initramfs generator for <kver>.

help_install() {
  usage_synopsis install
  cat <<'EOF'

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
  usage_synopsis uninstall
  cat <<'EOF'

Remove what `build.sh install` put in place (nothing installed: said, exit
0, nothing changed): the DKMS module nvidia-p2p (all
its kernels) and its source, the modules of a --no-dkms install for KVER
(--kernel KVER; default: every kernel it was installed for), the depmod,
modprobe and DKMS signing configuration. Then rerun depmod and the initramfs
generator, so the modules that were there before (distribution or DKMS) are
used again. Needs root. Transactional like install. The userspace driver
installed from the .run is left in place; see docs/install.md to remove or
replace it. DKMS's key pair (/var/lib/dkms/mok.*) stays: other DKMS modules
and the enrolled key use it.
EOF
}

cmd_install() {
  local tag=""
  parse_stage_args install tag "$@"
  require_tag "${tag}"
  check_run_sha_arg "${tag}"
  family_load "${tag}"
  static_bar1_check "${tag}"
  resolve_install_kernel
  cache_lock_if_made
  install_preflight "${tag}"
  install_all "${tag}"
  [[ ${P2P_DRY_PROBLEM} -eq 0 ]] || exit "${P2P_DRY_PROBLEM}"
  if userspace_unstaged; then
    say_next "the system that uses ${P2P_ROOT} needs ${tag}'s userspace driver and GSP firmware; once it has them, boot it and run: $0 verify"
  else
    say_next "reboot (or reload the modules: docs/install.md), then: $0 verify"
  fi
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

# install_all TAG: the install transaction, after install_preflight: the
# modules (through DKMS, or for one kernel with --no-dkms), the options, the
# module index, the userspace .run, the checks and the state file. Any
# failure or Ctrl-C rolls it all back (txn_*).
install_all() {
  local tag=$1 what where k
  local -a kernels
  [[ ${P2P_DRY_RUN} -eq 1 ]] || lock_acquire "$(p2p_state_dir)"
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    what="for kernel ${P2P_KREL}"
  else
    what="through DKMS (now for ${P2P_KERNELS[*]}, later for every new kernel)"
  fi
  confirm "Install driver ${tag} with PCIe P2P ${what}$([[ ${P2P_NO_USERSPACE} -eq 1 ]] || printf ', and its userspace from %s' "$(basename "${P2P_RUN_PATH}")")?"
  txn_begin "install ${tag}"
  sign_prepare
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    install_modules_file
    write_depmod_conf "updates/${P2P_NAME}"
    kernels=("${P2P_KREL}")
    where="installed for ${P2P_KREL}"
  else
    dkms_install_modules "${tag}"
    write_depmod_conf "${DKMS_DEST}"
    kernels=("${P2P_KERNELS[@]}")
    where="registered with DKMS and installed for: ${P2P_KERNELS[*]}"
  fi
  write_modprobe_conf "${tag}"
  for k in "${kernels[@]}"; do
    refresh_module_index "${k}"
  done
  if [[ ${P2P_NO_USERSPACE} -eq 0 ]]; then
    install_userspace "${tag}" "${P2P_RUN_PATH}"
  fi
  install_check "${tag}"
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    install_record_file "${tag}"
  else
    dkms_record "${tag}"
  fi
  txn_commit
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    dry_run_end "driver ${tag} with PCIe P2P would be ${where}"
    [[ ${P2P_DRY_PROBLEMS} -ne 0 ]] || sign_next_steps
    return 0
  fi
  userspace_unstaged && where+="; no userspace driver staged in ${P2P_ROOT} (the system that uses it needs ${tag}'s and its GSP firmware)"
  stage finished "driver ${tag} with PCIe P2P ${where}"
  sign_next_steps
}

# install_modules_file: --no-dkms: the built modules into the kernel's
# module directory of ours, stripped and (where a key is set) signed.
install_modules_file() {
  local m moddir
  moddir=$(p2p_moddir "${P2P_KREL}")
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
}

# install_check TAG: the installed modules (and, through DKMS, signatures)
# and the userspace are of TAG.
install_check() {
  local tag=$1
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    stage verify "installed versions"
  else
    stage verify "installed versions$([[ -z ${P2P_SIGN_CERT} ]] || printf ' and signatures')"
  fi
  [[ ${P2P_DRY_RUN} -eq 0 ]] || return 0
  if [[ ${P2P_NO_DKMS} -eq 1 ]]; then
    check_modules "$(p2p_moddir "${P2P_KREL}")" "${tag}" "${P2P_KREL}"
  else
    dkms_check_installed "${tag}"
  fi
  userspace_unstaged || require_userspace_version "${tag}" "after install: "
}

# install_record_file TAG: --no-dkms: the state file of the kernel installed
# into, which uninstall reads.
install_record_file() {
  local tag=$1
  txn_save "$(p2p_state_dir)/installed-${P2P_KREL}"
  [[ ${P2P_DRY_RUN} -eq 0 ]] || return 0
  printf 'tag=%s kernel=%s family=%s date=%s\n' "${tag}" "${P2P_KREL}" "${V_FAMILY[${tag}]}" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$(p2p_state_dir)/installed-${P2P_KREL}"
}

cmd_uninstall() {
  local tag="" kver dtags
  local -a kernels=()
  parse_stage_args uninstall tag "$@"
  [[ -z ${tag} ]] || die "${EX_USAGE}" "uninstall takes no tag"
  if [[ -n ${P2P_KERNEL} ]]; then
    [[ -e $(p2p_state_dir)/installed-${P2P_KERNEL} ]] && kernels=("${P2P_KERNEL}")
  else
    mapfile -t kernels < <(installed_kernels)
  fi
  dtags=$(dkms_installed_tags | tr '\n' ' ')
  dtags=${dtags% }
  # Nothing installed is the state uninstall makes: said, and a success (a
  # script that uninstalls twice, or before a first install, goes on).
  if [[ ${#kernels[@]} -eq 0 && -z ${dtags} ]]; then
    note "nothing to uninstall: no ${P2P_NAME} install recorded in $(p2p_state_dir)${P2P_KERNEL:+ for kernel ${P2P_KERNEL}} and no DKMS module ${DKMS_MODULE}; nothing was changed"
    return 0
  fi
  [[ ${P2P_DRY_RUN} -eq 1 ]] || is_root || die "${EX_PREFLIGHT}" "uninstall needs root"
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
