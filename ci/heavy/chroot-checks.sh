# shellcheck shell=bash
# ci/heavy/chroot-checks.sh: what the chroot tests (ci/heavy/dkms-chroot.sh,
# ci/heavy/debian-userspace.sh) run inside their chroot to report steps and check
# the modules DKMS built. Sourced, never run; it sources lib/60-sign.sh
# beside it. The caller sets STEP_LOG, the file each step's output goes to.

# shellcheck source=lib/60-sign.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib/60-sign.sh"

FAILED=0
STEP_LOG=${STEP_LOG:-/tmp/steps.log}
# where check_modules looks (a fixture tree in the unit tests)
MODULES_DIR=${MODULES_DIR:-/lib/modules}

# step NAME CMD...: run CMD, its output into STEP_LOG; print "PASS NAME (Ts)"
# or "FAIL NAME (Ts, exit N; see LOG)", FAILED=1 on a failure. Always
# returns 0: the next step runs.
step() {
  local name=$1 t0=${SECONDS} rc=0
  shift
  printf '== %s\n' "${name}" >>"${STEP_LOG}"
  "$@" >>"${STEP_LOG}" 2>&1 || rc=$?
  if [[ ${rc} -eq 0 ]]; then
    printf 'PASS %s (%ss)\n' "${name}" $((SECONDS - t0))
  else
    printf 'FAIL %s (%ss, exit %s; see %s)\n' "${name}" $((SECONDS - t0)) "${rc}" "${STEP_LOG_HOST:-${STEP_LOG}}"
    FAILED=1
  fi
  return 0
}

# steps_passed: no step has failed.
steps_passed() { [[ ${FAILED} -eq 0 ]]; }

# check_modules KVER TAG [CERT]: DKMS's modules for KVER: all five, version
# TAG, vermagic KVER, each signature verified against CERT when given; and
# the nvidia.ko depmod picks for `modprobe nvidia` is DKMS's.
check_modules() {
  local kver=$1 tag=$2 cert=${3:-} m f deps
  for m in nvidia nvidia-uvm nvidia-modeset nvidia-drm nvidia-peermem; do
    f=$(find "${MODULES_DIR}/${kver}/updates/dkms" -maxdepth 1 -name "${m}.ko*" 2>/dev/null | head -n 1)
    [[ -f ${f} ]] || { echo "missing ${m}.ko* in ${MODULES_DIR}/${kver}/updates/dkms" && return 1; }
    [[ "$(modinfo -F version "${f}")" == "${tag}" ]] || { echo "${f}: version $(modinfo -F version "${f}")" && return 1; }
    [[ "$(modinfo -F vermagic "${f}")" == "${kver} "* ]] || { echo "${f}: vermagic $(modinfo -F vermagic "${f}")" && return 1; }
    if [[ -n ${cert} ]]; then
      module_sig_verify "${f}" "${cert}" || { echo "${f}: signature does not verify against ${cert}" && return 1; }
      echo "${f}: version ${tag}, vermagic ${kver}, signer $(modinfo -F signer "${f}"), signature verified"
    else
      echo "${f}: version ${tag}, vermagic ${kver}"
    fi
  done
  deps=$(modprobe -S "${kver}" --ignore-install --show-depends nvidia)
  printf '%s\n' "${deps}"
  grep -q "/lib/modules/${kver}/updates/dkms/nvidia.ko" <<<"${deps}"
  du -sh "${MODULES_DIR}/${kver}/updates/dkms"
}

# runs_our_install KVER: `modprobe nvidia` for KVER runs the package's
# install line (modprobe -i nvidia, which wins over a distribution's
# redirect) with the family's options.
runs_our_install() {
  local out
  out=$(modprobe -S "$1" --show-depends nvidia)
  printf '%s: %s\n' "$1" "${out}"
  grep -q '^install modprobe -i nvidia [$]CMDLINE_OPTS .*NVreg_RegistryDwords=' <<<"${out}"
}

# loads_ours: runs_our_install for every kernel of /lib/modules;
# loads_stock: `modprobe nvidia` runs no install line of ours for any.
loads_ours() {
  local k
  for k in /lib/modules/*; do
    runs_our_install "${k##*/}" || return 1
  done
}
loads_stock() {
  local k out
  for k in /lib/modules/*; do
    out=$(modprobe -S "${k##*/}" --show-depends nvidia)
    printf '%s: %s\n' "${k##*/}" "${out}"
    ! grep -q '^install modprobe -i nvidia [$]CMDLINE_OPTS' <<<"${out}" || return 1
  done
}
