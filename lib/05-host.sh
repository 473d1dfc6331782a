# shellcheck shell=bash
# lib/05-host.sh: what this machine has (its NVIDIA GPUs, Secure Boot), and
# how a stage reports a failed check: die, or under --dry-run record it and
# go on (the run then ends with the first failure's exit code).

P2P_DRY_PROBLEM=0

P2P_DRY_PROBLEMS=0

# preflight_fail CODE MESSAGE: die, or under --dry-run record and continue.
preflight_fail() {
  local code=$1
  shift
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'PROBLEM: %s\n' "$*"
    [[ ${P2P_DRY_PROBLEM} -ne 0 ]] || P2P_DRY_PROBLEM=${code}
    P2P_DRY_PROBLEMS=$((P2P_DRY_PROBLEMS + 1))
    return 0
  fi
  die "${code}" "$*"
}

# dry_run_end WHAT: the last line of a plan: what the real run would end
# with, or, after PROBLEM lines, that it would not get there (and the exit
# code of the first); no next steps then.
dry_run_end() {
  if [[ ${P2P_DRY_PROBLEMS} -eq 0 ]]; then
    stage plan "end: $*; nothing was changed"
    return 0
  fi
  stage plan "end: the real run would stop at the first PROBLEM above (${P2P_DRY_PROBLEMS} in all), exit ${P2P_DRY_PROBLEM}; nothing was changed"
}

report() {
  printf '%-5s %s\n' "$1" "$2"
}

# secure_boot_enabled: the firmware enforces Secure Boot (mokutil, else the
# SecureBoot EFI variable).
secure_boot_enabled() {
  local efivar="${P2P_SYSFS}/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
  if command -v mokutil >/dev/null 2>&1; then
    mokutil --sb-state 2>/dev/null | grep -q 'SecureBoot enabled'
  elif [[ -r ${efivar} ]]; then
    [[ "$(od -An -tu1 -j4 -N1 "${efivar}" 2>/dev/null | tr -d ' ')" == 1 ]]
  else
    return 1
  fi
}

# nvidia_gpus: PCI addresses of NVIDIA display/3D controllers.
nvidia_gpus() {
  local dev
  for dev in "${P2P_SYSFS}"/bus/pci/devices/*; do
    [[ -r ${dev}/vendor && -r ${dev}/class ]] || continue
    [[ "$(cat "${dev}/vendor")" == 0x10de ]] || continue
    [[ "$(cat "${dev}/class")" == 0x03* ]] || continue
    printf '%s\n' "${dev##*/}"
  done
}
