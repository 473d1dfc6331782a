# shellcheck shell=bash
# lib/66-dkms.sh: the DKMS side of install and uninstall. The DKMS payload it
# registers (which `build` assembles and `package` ships) is lib/10-payload.sh.
#
# The patched tree is registered as DKMS module "nvidia-p2p", version = tag
# (never "nvidia": NVIDIA's installer owns that name). The payload is what
# Debian's and NVIDIA's own DKMS packages ship: kernel-open/ plus the two
# kernel-independent objects built from the patched src/ (nv-kernel.o and
# nv-modeset-kernel.o, as nv-kernel.o_binary and nv-modeset-kernel.o_binary).
# DKMS then only runs kbuild in kernel-open/ for each new kernel, which is all
# that depends on the kernel. docs/install.md ("Kernel updates: DKMS") has the
# measurements behind that choice.
#
# What a DKMS install writes (under --root, default /):
#   /usr/src/nvidia-p2p-<tag>/                 the payload and its dkms.conf
#   /var/lib/dkms/nvidia-p2p/                  DKMS's own state (dkms add/install)
#   /lib/modules/<kver>/updates/dkms/*.ko      put there by DKMS (Debian, Ubuntu)
#   /etc/depmod.d/nvidia-p2p.conf              override: these copies win
#   /etc/modprobe.d/nvidia-p2p.conf            the family's P2P options
#   /etc/dkms/framework.conf.d/nvidia-p2p.conf only with --sign-key/--sign-cert
#   /var/lib/nvidia-p2p/dkms-<tag>             what was installed, for uninstall

# The oldest dkms this was tested with (Debian 12's).
readonly DKMS_MIN_VERSION="3.0.10"

P2P_KERNELS=()

dkms_src_dir() { printf '%s/usr/src/%s-%s\n' "${P2P_ROOT}" "${DKMS_MODULE}" "$1"; }
dkms_tree() { printf '%s/var/lib/dkms\n' "${P2P_ROOT}"; }
dkms_state_file() { printf '%s/dkms-%s\n' "$(p2p_state_dir)" "$1"; }

# --- install --------------------------------------------------------------------

# dkms_cmd ARGS...: dkms, pointed at --root's trees when one is given.
dkms_cmd() {
  dkms_argv "$@"
  "${DKMS_ARGV[@]}"
}

# dkms_argv ARGS...: DKMS_ARGV, the dkms command line for ARGS.
DKMS_ARGV=()
dkms_argv() {
  DKMS_ARGV=(dkms "$@")
  if [[ -n ${P2P_ROOT} ]]; then
    DKMS_ARGV+=(--sourcetree "${P2P_ROOT}/usr/src" --dkmstree "$(dkms_tree)" --installtree "${P2P_ROOT}/lib/modules")
  fi
}

# dkms_run ARGS...: a dkms command that changes something (run_logged).
dkms_run() {
  dkms_argv "$@"
  run_logged "${DKMS_ARGV[@]}"
}

# txn_save_all_kernels: DKMS's removal of an older version touches every
# kernel it was built for: their module directories and indexes are saved.
txn_save_all_kernels() {
  local d
  for d in "${P2P_ROOT}"/lib/modules/*; do
    [[ -d ${d} ]] || continue
    txn_save "${d}/${DKMS_DEST}"
    txn_save_index "${d}"
  done
  return 0
}

# dkms_version: the installed dkms's version ("3.0.10"), or nothing.
dkms_version() {
  dkms --version 2>/dev/null | sed -n -E 's/^dkms(-| )([0-9][0-9.]*).*/\2/p' | head -n 1
}

# dkms_problem: why dkms cannot be used (not installed, too old), or nothing.
dkms_problem() {
  local v
  if ! command -v dkms >/dev/null 2>&1; then
    printf 'dkms is not installed: install it (Debian/Ubuntu: apt-get install dkms), or pass --no-dkms for a single-kernel install without it\n'
    return 0
  fi
  v=$(dkms_version)
  if [[ -z ${v} ]]; then
    printf "cannot tell the version of dkms ('dkms --version' printed nothing usable)\n"
  elif ! version_le "${DKMS_MIN_VERSION}" "${v}"; then
    printf 'dkms %s is older than %s, the oldest this was tested with: upgrade dkms, or pass --no-dkms\n' "${v}" "${DKMS_MIN_VERSION}"
  fi
  return 0
}

# dkms_preflight: dkms installed and new enough (EX_PREFLIGHT otherwise).
dkms_preflight() {
  local problem
  problem=$(dkms_problem)
  [[ -z ${problem} ]] || die "${EX_PREFLIGHT}" "${problem}"
}

# dkms_target_kernels: P2P_KERNELS, the kernels DKMS builds for now: --kernel
# alone, else every installed kernel that has headers (the others get the
# modules when their headers come, from DKMS's own kernel hooks).
dkms_target_kernels() {
  local d k
  P2P_KERNELS=()
  if [[ -n ${P2P_KERNEL} ]]; then
    have_kernel_headers "${P2P_KERNEL}" ||
      die "${EX_PREFLIGHT}" "no kernel headers for ${P2P_KERNEL}; install them first: $(headers_package_hint "${P2P_KERNEL}")"
    P2P_KERNELS=("${P2P_KERNEL}")
    return 0
  fi
  for d in "${P2P_ROOT}"/lib/modules/*; do
    k=${d##*/}
    [[ -d ${d} ]] || continue
    if have_kernel_headers "${k}"; then
      P2P_KERNELS+=("${k}")
    else
      warn "kernel ${k} has no headers: DKMS cannot build for it (install them: $(headers_package_hint "${k}"); DKMS then builds on its own)"
    fi
  done
  [[ ${#P2P_KERNELS[@]} -gt 0 ]] ||
    die "${EX_PREFLIGHT}" "no installed kernel has its headers; install them first: $(headers_package_hint "$(uname -r)")"
}

# dkms_conflicts: refuse (EX_CONFLICT) when another NVIDIA kernel module can
# load beside ours: another DKMS module named nvidia* (NVIDIA's .run, Debian's
# nvidia-current, Ubuntu's nvidia-dkms-*), or a package shipping one. Ubuntu's
# prebuilt linux-modules-nvidia-* lose to the depmod override (a warning).
dkms_conflicts() {
  local line name ver pkgs="" cmds="" owner
  local -A seen=()
  while IFS= read -r line; do
    name=${line%%/*}
    ver=${line#*/}
    ver=${ver%%[,:]*}
    [[ ${name} == nvidia* && ${name} != "${DKMS_MODULE}" ]] || continue
    [[ -z ${seen[${name}/${ver}]:-} ]] || continue
    seen[${name}/${ver}]=1
    owner=$(package_owning "/usr/src/${name}-${ver}")
    if [[ -n ${owner} ]]; then
      [[ " ${pkgs} " == *" ${owner} "* ]] || pkgs+=" ${owner}"
    else
      cmds+="; sudo dkms remove ${name}/${ver} --all"
    fi
  done < <(dkms_cmd status 2>/dev/null || true)
  while IFS= read -r owner; do
    [[ -n ${owner} && " ${pkgs} " != *" ${owner} "* ]] && pkgs+=" ${owner}"
  done < <(nvidia_kernel_packages dkms)
  if [[ -n ${pkgs} ]]; then
    cmds="; sudo apt-get purge${pkgs}${cmds}"
  fi
  [[ -z ${cmds} ]] ||
    die "${EX_CONFLICT}" "another NVIDIA kernel module is installed through DKMS or a package; two drivers that can load must not be left side by side. Remove it first: ${cmds#; } (a .run installation: sudo nvidia-uninstall), then run this again"
  while IFS= read -r owner; do
    [[ -n ${owner} ]] && warn "package ${owner} ships prebuilt NVIDIA modules; the depmod override makes ours win (to remove it: sudo apt-get purge ${owner})"
  done < <(nvidia_kernel_packages prebuilt)
  return 0
}

# package_owning PATH: the Debian package that owns PATH, or nothing.
package_owning() {
  command -v dpkg-query >/dev/null 2>&1 || return 0
  dpkg-query -S "$1" 2>/dev/null | head -n 1 | cut -d: -f1 | cut -d, -f1 || true
}

# nvidia_kernel_packages dkms|prebuilt: installed packages of NVIDIA kernel
# modules (Debian: nvidia-kernel-dkms, nvidia-open-kernel-dkms, the tesla
# variants; Ubuntu: nvidia-dkms-*; prebuilt: Ubuntu's linux-modules-nvidia-*).
nvidia_kernel_packages() {
  local kind=$1 status pkg
  command -v dpkg-query >/dev/null 2>&1 || return 0
  while read -r status pkg; do
    [[ ${status} == ii* || ${status} == iF* || ${status} == iU* || ${status} == iH* ]] || continue
    case ${kind}:${pkg} in
    dkms:nvidia-p2p-dkms) ;;
    dkms:nvidia*-dkms | dkms:nvidia-dkms-*) printf '%s\n' "${pkg}" ;;
    prebuilt:linux-modules-nvidia-*) printf '%s\n' "${pkg}" ;;
    esac
  done < <(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 'nvidia*' 'linux-modules-nvidia-*' 2>/dev/null || true)
}

# dkms_install TAG: register the payload and let DKMS build and install it
# for P2P_KERNELS. Everything it changes is saved first (the caller's
# transaction restores it on failure).
dkms_install() {
  local tag=$1 src k old
  src=$(dkms_src_dir "${tag}")
  txn_save "$(dkms_tree)/${DKMS_MODULE}"
  txn_save "${src}"
  # Another version of ours goes first (an upgrade): its source and state.
  for old in "${P2P_ROOT}/usr/src/${DKMS_MODULE}"-*; do
    [[ -e ${old} ]] && txn_save "${old}"
  done
  txn_save_all_kernels
  dkms_remove_all
  stage dkms "register ${DKMS_MODULE}/${tag} (${src})"
  run rm -rf -- "${src}"
  run mkdir -p -- "$(dirname "${src}")"
  run cp -a -- "$(payload_dir "${tag}")" "${src}"
  dkms_run add -m "${DKMS_MODULE}" -v "${tag}" ||
    die "${EX_INSTALL}" "dkms add ${DKMS_MODULE}/${tag} failed"
  for k in "${P2P_KERNELS[@]}"; do
    stage dkms "build and install ${DKMS_MODULE}/${tag} for ${k} (kbuild of kernel-open: measured 3.7-3.9 minutes on 2 idle cores)"
    dkms_run install -m "${DKMS_MODULE}" -v "${tag}" -k "${k}" ||
      die "${EX_INSTALL}" "DKMS could not build or install ${DKMS_MODULE}/${tag} for ${k}; its log: $(dkms_tree)/${DKMS_MODULE}/${tag}/build/make.log"
  done
}

# dkms_remove_all: unregister every version of ours (their files were saved).
dkms_remove_all() {
  local ver d
  for d in "$(dkms_tree)/${DKMS_MODULE}"/*; do
    ver=${d##*/}
    [[ -d ${d} && ${ver} =~ ^[0-9] ]] || continue
    stage dkms "remove ${DKMS_MODULE}/${ver}"
    dkms_run remove -m "${DKMS_MODULE}" -v "${ver}" --all ||
      die "${EX_INSTALL}" "dkms remove ${DKMS_MODULE}/${ver} --all failed"
    run rm -rf -- "$(dkms_src_dir "${ver}")"
  done
}

# dkms_check_installed TAG: every module of TAG is where DKMS put it for each
# kernel, with the tag's version, and signed when a key is in use.
dkms_check_installed() {
  local tag=$1 k m f version
  for k in "${P2P_KERNELS[@]}"; do
    for m in ${P2P_MODULES}; do
      f=""
      for f in "${P2P_ROOT}/lib/modules/${k}/${DKMS_DEST}/${m}".ko*; do
        [[ -f ${f} ]] && break
      done
      [[ -f ${f} ]] || die "${EX_INSTALL}" "DKMS reported success but ${m}.ko is not in ${P2P_ROOT}/lib/modules/${k}/${DKMS_DEST}"
      version=$(modinfo -F version "${f}" 2>/dev/null) || version=""
      [[ ${version} == "${tag}" ]] ||
        die "${EX_INSTALL}" "${f} has version '${version}', expected ${tag}"
      [[ -z ${P2P_SIGN_CERT} ]] || sign_check_module "${f}"
    done
  done
}

# dkms_install_modules TAG: the DKMS part of install's transaction: our
# --no-dkms installs go, DKMS builds and installs TAG for P2P_KERNELS, and
# signs where DKMS's key is ours to use.
dkms_install_modules() {
  dkms_replace_file_installs
  dkms_install "$1"
  sign_after_dkms
}

# dkms_record TAG: the state file of the DKMS install, which uninstall and
# doctor read.
dkms_record() {
  local tag=$1
  txn_save "$(dkms_state_file "${tag}")"
  [[ ${P2P_DRY_RUN} -eq 0 ]] || return 0
  printf 'tag=%s kernels=%s family=%s cert=%s date=%s\n' "${tag}" "${P2P_KERNELS[*]}" "${V_FAMILY[${tag}]}" \
    "${P2P_SIGN_CERT:-none}" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$(dkms_state_file "${tag}")"
}

# dkms_replace_file_installs: a single-kernel (--no-dkms) install of ours
# would win over the DKMS copies; it goes, in this transaction.
dkms_replace_file_installs() {
  local k
  while IFS= read -r k; do
    [[ -n ${k} ]] || continue
    note "replacing the --no-dkms install for ${k} by the DKMS one"
    txn_save "$(p2p_moddir "${k}")"
    run rm -rf -- "$(p2p_moddir "${k}")"
    txn_save "$(p2p_state_dir)/installed-${k}"
    run rm -f -- "$(p2p_state_dir)/installed-${k}"
    [[ " ${P2P_KERNELS[*]} " == *" ${k} "* ]] || P2P_KERNELS+=("${k}")
  done < <(installed_kernels)
}

# installed_module_tags: the tags of the nvidia-p2p modules installed here
# (DKMS installs and --no-dkms installs of build.sh, the nvidia-p2p-dkms
# package), one per line.
installed_module_tags() {
  local f v
  {
    dkms_installed_tags
    for f in "$(p2p_state_dir)"/installed-*; do
      [[ -f ${f} ]] && sed -n -E 's/^tag=([^ ]+) .*/\1/p' "${f}"
    done
    if command -v dpkg-query >/dev/null 2>&1; then
      v=$(dpkg-query -W -f '${db:Status-Abbrev} ${Version}\n' "${P2P_PKG_NAME}" 2>/dev/null | sed -n -E 's/^ii +([^ ]+)-[^-]+$/\1/p') || v=""
      if [[ -n ${v} ]]; then
        printf '%s\n' "${v}"
      fi
    fi
  } | sort -u
}

# --- uninstall ------------------------------------------------------------------

dkms_installed_tags() { state_entries dkms-; }

# dkms_state_kernels TAG: the kernels the state file of TAG lists.
dkms_state_kernels() {
  sed -n -E 's/^.*kernels=([^=]*) [a-z]+=.*$/\1/p' "$(dkms_state_file "$1")" | tr ' ' '\n' | sed '/^$/d'
}

# dkms_uninstall: remove every DKMS install of ours, in the open
# transaction; P2P_KERNELS gets the kernels whose index must be rebuilt.
dkms_uninstall() {
  local tag d
  local -a tags=()
  mapfile -t tags < <(dkms_installed_tags)
  [[ ${#tags[@]} -gt 0 ]] || return 0
  txn_save "$(dkms_tree)/${DKMS_MODULE}"
  txn_save "${P2P_ROOT}/etc/dkms/framework.conf.d/${P2P_NAME}.conf"
  txn_save_all_kernels
  for tag in "${tags[@]}"; do
    txn_save "$(dkms_src_dir "${tag}")"
    txn_save "$(dkms_state_file "${tag}")"
  done
  for d in "${P2P_ROOT}"/lib/modules/*; do
    [[ -d ${d} && " ${P2P_KERNELS[*]-} " != *" ${d##*/} "* ]] && P2P_KERNELS+=("${d##*/}")
  done
  dkms_remove_all
  run rm -f -- "${P2P_ROOT}/etc/dkms/framework.conf.d/${P2P_NAME}.conf"
  for tag in "${tags[@]}"; do
    run rm -rf -- "$(dkms_src_dir "${tag}")"
    run rm -f -- "$(dkms_state_file "${tag}")"
  done
}
