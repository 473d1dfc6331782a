# shellcheck shell=bash
# lib/70-userspace.sh: stage 7, userspace. Runs NVIDIA's .run installer with
# --no-kernel-modules (the kernel modules are ours) and makes sure the
# userspace libraries end up at exactly the module's version: a
# "Driver/library version mismatch" must not be left behind.

# Set once the .run has started, so a rollback can say that it was not undone.
P2P_USERSPACE_TOUCHED=""

# install_userspace TAG RUN: run the verified installer.
install_userspace() {
  local tag=$1 runfile=$2 expected
  stage userspace "$(basename "${runfile}") --silent --no-kernel-modules"
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    # Checked again right before it runs: it may have been verified minutes ago.
    expected=$(run_expected_sha "${tag}")
    verify_run_file "${tag}" "${runfile}" "${expected}"
  fi
  P2P_USERSPACE_TOUCHED="$(basename "${runfile}") (its log: /var/log/nvidia-installer.log)"
  log_line "userspace installer starting: ${P2P_USERSPACE_TOUCHED}"
  run_logged sh "${runfile}" --silent --no-kernel-modules ||
    die "${EX_INSTALL}" "the userspace installer $(basename "${runfile}") failed; see /var/log/nvidia-installer.log"
}

# userspace_versions: the versions of the installed NVIDIA userspace driver, one
# per line, from the versioned names of libnvidia-ml and libcuda.
userspace_versions() {
  local d f
  for d in usr/lib/x86_64-linux-gnu usr/lib64 usr/lib lib/x86_64-linux-gnu lib64; do
    for f in "${P2P_ROOT}/${d}"/libnvidia-ml.so.[0-9]*.* "${P2P_ROOT}/${d}"/libcuda.so.[0-9]*.*; do
      [[ -e ${f} ]] || continue
      f=${f##*/}
      printf '%s\n' "${f#*.so.}"
    done
  done | sort -u
}

# require_userspace_version TAG PREFIX: exactly TAG is installed, or EX_MISMATCH.
require_userspace_version() {
  local tag=$1 prefix=$2 found
  found=$(userspace_versions | tr '\n' ' ')
  found=${found% }
  if [[ ${found} != "${tag}" ]]; then
    die "${EX_MISMATCH}" "${prefix}userspace driver version is '${found:-none}', modules are ${tag}; that would be a \"Driver/library version mismatch\" (install the matching .run, or drop --no-userspace)"
  fi
}

# preflight_userspace_conflicts: a packaged NVIDIA userspace driver would fight
# with the .run installer (and survive it in other library directories).
preflight_userspace_conflicts() {
  local owners=""
  [[ ${P2P_DRY_RUN} -eq 1 ]] && return 0
  if command -v dpkg-query >/dev/null 2>&1; then
    owners=$(dpkg-query -S 'libnvidia-ml.so.1' 'libcuda.so.1' 2>/dev/null | cut -d: -f1 | sort -u | tr '\n' ' ' || true)
  elif command -v rpm >/dev/null 2>&1; then
    owners=$(rpm -qf /usr/lib64/libnvidia-ml.so.1 /usr/lib64/libcuda.so.1 2>/dev/null | grep -v 'not owned' | sort -u | tr '\n' ' ' || true)
  fi
  if [[ -n ${owners// /} ]]; then
    die "${EX_PREFLIGHT}" "the NVIDIA userspace driver is installed by packages (${owners% }); remove them first, or install their matching driver version with --no-userspace"
  fi
}
