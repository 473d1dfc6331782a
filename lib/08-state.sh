# shellcheck shell=bash
# lib/08-state.sh: what an install leaves on the machine and how it changes
# it: the state directory (one entry per kernel installed into), the module
# directory, the module index, and the install transaction (txn_*), which
# backs up each path before it changes and restores them all on failure.

readonly P2P_NAME="nvidia-p2p"
# Set once the .run has started (lib/62-userspace.sh), so a rollback can say
# that it was not undone.
P2P_USERSPACE_TOUCHED=""

p2p_moddir() { printf '%s/lib/modules/%s/updates/%s\n' "${P2P_ROOT}" "$1" "${P2P_NAME}"; }

p2p_state_dir() { printf '%s/var/lib/%s\n' "${P2P_ROOT}" "${P2P_NAME}"; }

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

# kernel_has_modules KVER: the tree of KVER holds modules to index (the
# image's modules.builtin, or any .ko); one with headers only and none of
# ours left holds none.
kernel_has_modules() {
  local d="${P2P_ROOT}/lib/modules/$1"
  [[ -e ${d}/modules.builtin || -n $(find "${d}" -name '*.ko*' -print -quit 2>/dev/null) ]]
}

initramfs_path() {
  if [[ -e ${P2P_ROOT}/boot/initramfs-$1.img ]]; then
    printf '%s/boot/initramfs-%s.img\n' "${P2P_ROOT}" "$1"
  else
    printf '%s/boot/initrd.img-%s\n' "${P2P_ROOT}" "$1"
  fi
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

created_dir_marker() { printf '%s/created-depmod.d\n' "$(p2p_state_dir)"; }

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

# The transaction.
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
