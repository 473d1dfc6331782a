# shellcheck shell=bash
# lib/05-host.sh: what this machine has (its NVIDIA GPUs, Secure Boot, the
# disk space the stages need), and how a stage reports a failed check: die, or
# under --dry-run record it and go on (the run then ends with the first
# failure's exit code).

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

# space_need STAGE: the disk space, in MiB, that STAGE needs beside what it
# reuses (measured on 535 to 610 tags, docs/commands.md "Disk space"): fetch,
# the tarball (about 25 MB) or the unbundled git bundle (about 150 MB) beside
# the unpacked tree (77-130 MB); run, the .run (up to 465 MB); patch, a copy of
# the tree with quilt's backups; build, a copy of the patched tree built
# (410-540 MB), the five modules (85-105 MB) and the DKMS source. One tag
# built: about 1 GiB.
space_need() {
  case $1 in
  fetch) printf '320\n' ;;
  run) printf '500\n' ;;
  patch) printf '160\n' ;;
  build) printf '800\n' ;;
  *) die "${EX_FAIL}" "space_need: no stage $1" ;;
  esac
}

# disk_free_mib DIR: the MiB this user may still write on the file system of
# DIR (or of its nearest parent that exists); fails when df cannot tell.
disk_free_mib() {
  local dir=$1 kib
  while [[ ! -e ${dir} && ${dir} == /?* ]]; do
    dir=$(dirname -- "${dir}")
  done
  kib=$(df -P -k -- "${dir}" 2>/dev/null | awk 'NR == 2 { print $4 }') || return 1
  [[ ${kib} =~ ^[0-9]+$ ]] || return 1
  printf '%s\n' "$((kib / 1024))"
}

# space_check DIR STAGE WHAT: EX_SPACE (a PROBLEM under --dry-run) when the
# disk of DIR has less free than STAGE needs (space_need) for WHAT, before
# anything is written; not checked when df cannot tell.
space_check() {
  local dir=$1 need what=$3 free
  need=$(space_need "$2")
  if ! free=$(disk_free_mib "${dir}"); then
    verbose "cannot tell the free space of ${dir} (df); not checked"
    return 0
  fi
  verbose "${dir}: ${free} MiB free, about ${need} MiB needed for ${what}"
  [[ ${free} -lt ${need} ]] || return 0
  preflight_fail "${EX_SPACE}" "not enough disk space in ${dir} for ${what}: ${free} MiB free, about ${need} MiB needed (a tag takes about 1 GiB built); free some, or choose a larger disk (--cache-dir, --work-dir)"
}

# run_captured CMD...: run CMD (a command, a function or a pipeline's
# function) with its output, errors included, kept in P2P_CAPTURED and the
# log, never on the terminal (a disk that fills up makes cp and tar print a
# line per file); its exit status.
P2P_CAPTURED=""
run_captured() {
  local rc=0
  log_line "RUN $(quote_cmd "$@")"
  P2P_CAPTURED=$("$@" 2>&1) || rc=$?
  [[ -z ${P2P_CAPTURED} ]] || log_line "output (exit ${rc}):"$'\n'"${P2P_CAPTURED}"
  return "${rc}"
}

# write_lines FILE TEXT: the lines of TEXT that are not empty into FILE (for
# run_captured); fails only when FILE cannot be written.
write_lines() {
  local rc=0
  grep . <<<"$2" >"$1" || rc=$?
  [[ ${rc} -le 1 ]]
}

# says_disk_full TEXT: TEXT (a command's errors) says a write found no room:
# ENOSPC or EDQUOT, tar's short write, curl's failed write (23).
says_disk_full() {
  grep -q -i -E -e 'No space left on device|Disk quota exceeded' \
    -e 'Wrote only [0-9]+ of [0-9]+ bytes' -e 'Failure writing output' <<<"$1"
}

# write_failed DIR WHAT CODE MESSAGE [REMOVE...]: after a failed write under
# DIR (the output of run_captured in P2P_CAPTURED): EX_SPACE when the disk is
# full (ENOSPC in that output, or less than 1 MiB left on the disk of DIR),
# else CODE MESSAGE, with the output's first line; either way one line, after
# REMOVE (what was half-made outside a temporary directory) is removed.
write_failed() {
  local dir=$1 what=$2 code=$3 msg=$4 free first full=0
  shift 4
  free=$(disk_free_mib "${dir}") || free=""
  if says_disk_full "${P2P_CAPTURED}" || [[ -n ${free} && ${free} -lt 1 ]]; then
    full=1
  fi
  [[ $# -eq 0 ]] || rm -rf -- "$@"
  if [[ ${full} -eq 1 ]]; then
    die "${EX_SPACE}" "the disk of ${dir} is full (no space left while ${what}; ${free:-an unknown number of} MiB free then); nothing half-made was kept; free some (a tag takes about 1 GiB built), or choose a larger disk (--cache-dir, --work-dir)${P2P_LOG_FILE:+; log: ${P2P_LOG_FILE}}"
  fi
  first=$(grep -m 1 . <<<"${P2P_CAPTURED}" || true)
  die "${code}" "${msg}${first:+ (${first})}"
}
