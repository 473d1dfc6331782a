#!/usr/bin/env bash
# build.sh: PCIe P2P for consumer NVIDIA GPUs on NVIDIA's open kernel modules.
# A small dispatcher: the stages live in lib/<NN>-<stage>.sh, in flow order;
# each command's help sits next to its code (help_<command>).
set -euo pipefail
shopt -s inherit_errexit

P2P_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib"
readonly P2P_VERSION="0.1.0"

# shellcheck source=lib/common.sh
source "${P2P_LIB_DIR}/common.sh"
# shellcheck source=lib/versions.sh
source "${P2P_LIB_DIR}/versions.sh"
# shellcheck source=lib/10-preflight.sh
source "${P2P_LIB_DIR}/10-preflight.sh"
# shellcheck source=lib/20-fetch.sh
source "${P2P_LIB_DIR}/20-fetch.sh"
# shellcheck source=lib/30-verify.sh
source "${P2P_LIB_DIR}/30-verify.sh"
# shellcheck source=lib/40-patch.sh
source "${P2P_LIB_DIR}/40-patch.sh"
# shellcheck source=lib/50-build.sh
source "${P2P_LIB_DIR}/50-build.sh"
# shellcheck source=lib/60-install.sh
source "${P2P_LIB_DIR}/60-install.sh"
# shellcheck source=lib/61-static-bar1.sh
source "${P2P_LIB_DIR}/61-static-bar1.sh"
# shellcheck source=lib/65-dkms.sh
source "${P2P_LIB_DIR}/65-dkms.sh"
# shellcheck source=lib/66-sign.sh
source "${P2P_LIB_DIR}/66-sign.sh"
# shellcheck source=lib/70-userspace.sh
source "${P2P_LIB_DIR}/70-userspace.sh"
# shellcheck source=lib/72-pkgsrc.sh
source "${P2P_LIB_DIR}/72-pkgsrc.sh"
# shellcheck source=lib/73-arch.sh
source "${P2P_LIB_DIR}/73-arch.sh"
# shellcheck source=lib/74-rpm.sh
source "${P2P_LIB_DIR}/74-rpm.sh"
# shellcheck source=lib/75-package.sh
source "${P2P_LIB_DIR}/75-package.sh"
# shellcheck source=lib/77-repo.sh
source "${P2P_LIB_DIR}/77-repo.sh"
# shellcheck source=lib/78-container.sh
source "${P2P_LIB_DIR}/78-container.sh"
# shellcheck source=lib/80-rebase.sh
source "${P2P_LIB_DIR}/80-rebase.sh"
# shellcheck source=lib/81-rebase-merge.sh
source "${P2P_LIB_DIR}/81-rebase-merge.sh"
# shellcheck source=lib/82-rebase-new.sh
source "${P2P_LIB_DIR}/82-rebase-new.sh"
# shellcheck source=lib/85-doctor.sh
source "${P2P_LIB_DIR}/85-doctor.sh"
# shellcheck source=lib/commands.sh
source "${P2P_LIB_DIR}/commands.sh"

# Where versions.conf, series and patches/ are. NVP2P_DATA_DIR lets tests point
# at fixture data; users have no reason to set it.
P2P_DATA_DIR="${NVP2P_DATA_DIR:-$(dirname "${P2P_LIB_DIR}")}"
# The sysfs to inspect (tests use fixture trees).
P2P_SYSFS="${NVP2P_SYSFS:-/sys}"

P2P_CACHE_DIR=""
P2P_WORK_DIR=""
P2P_ROOT=""
P2P_SOURCE=""
P2P_OUT=""
P2P_KERNEL=""
P2P_KERNEL_SRC=""
P2P_RUN_FILE=""
P2P_RUN_SHA256=""
P2P_NO_RUN=0
P2P_NO_USERSPACE=0
P2P_USERSPACE=auto
P2P_USERSPACE_WHY=""
P2P_NO_DKMS=0
# --nvlink keep|off; empty: the family's default (nvlink_mode)
P2P_NVLINK=""
# --force-static-bar1 ADDR[,ADDR...], normalized (static_bar1_gpus); empty: none
P2P_STATIC_BAR1=""
P2P_NO_CCACHE=0
P2P_UNITS_ONLY=0
P2P_FAMILY=""
# rebase: --new, --list, --commit, and --chroot NAME:DIR (repeatable)
P2P_REBASE_NEW=0
P2P_REBASE_LIST=0
P2P_REBASE_COMMIT=0
P2P_CHROOTS=()
P2P_HELP=0
# 1 while the pipeline (build.sh <tag>) runs its stages in this process
P2P_IN_PIPELINE=0

# Options each command accepts (besides the global ones).
declare -A P2P_CMD_OPTS=(
  [all]="--source --kernel --kernel-src --run --run-sha256 --userspace --no-userspace --no-ccache --no-dkms --nvlink --force-static-bar1 --sign-key --sign-cert --sign-generate"
  [fetch]="--source --run --run-sha256 --no-run"
  [patch]="--source --out"
  [build]="--source --kernel --kernel-src --no-ccache --units-only"
  [install]="--kernel --run --run-sha256 --userspace --no-userspace --no-dkms --nvlink --force-static-bar1 --sign-key --sign-cert --sign-generate"
  [package]="--source --out --format --revision --no-ccache --nvlink"
  [container]="--source --out --os --precompiled --kernel-src --run --run-sha256 --no-userspace --no-ccache --nvlink --sign-key --sign-cert --mirror --fresh-base --operator --no-validator-workload"
  [uninstall]="--kernel"
  [preflight]="--kernel"
  [rebase]="--source --family --kernel --kernel-src --chroot --run-sha256 --units-only --no-ccache --new --list --commit"
  [list]=""
  [check]=""
)

# Each option given, as the user wrote it ("--userspace run"), by what it
# sets (--no-userspace sets --userspace): one that is given twice must say
# the same both times (note_opt).
declare -A P2P_OPT_SEEN=()

# note_opt OPT [VALUE]: dies (usage) when OPT contradicts what an earlier
# option said: another value for it, or --no-userspace against --userspace
# auto or run. --chroot is repeatable.
note_opt() {
  local opt=$1 value=${2:-} key spelled prev
  [[ ${opt} == --chroot ]] && return 0
  spelled="${opt}${value:+ ${value}}"
  key=${opt}
  [[ ${opt} == --no-userspace ]] && key=--userspace value=keep
  if [[ -n ${P2P_OPT_SEEN[${key}]+x} ]]; then
    prev=${P2P_OPT_SEEN[${key}]}
    [[ ${prev%%$'\t'*} == "${value}" ]] ||
      die "${EX_USAGE}" "${prev#*$'\t'} and ${spelled} contradict each other: give one"
  fi
  P2P_OPT_SEEN[${key}]="${value}"$'\t'"${spelled}"
}

# parse_stage_args CMD TAGVAR ARGS...: the command's options, and its one
# positional argument (a tag) into the variable named TAGVAR.
parse_stage_args() {
  local cmd=$1 tagvar=$2 opt value
  shift 2
  while [[ $# -gt 0 ]]; do
    opt=$1
    case ${opt} in
    --*=*)
      value=${opt#*=}
      opt=${opt%%=*}
      set -- "${opt}" "${value}" "${@:2}"
      ;;
    esac
    case ${opt} in
    --no-run | --no-userspace | --no-ccache | --units-only | --no-dkms | --sign-generate | --new | --list | --commit | --fresh-base | --no-validator-workload)
      allowed_opt "${cmd}" "${opt}"
      note_opt "${opt}"
      case ${opt} in
      --new) P2P_REBASE_NEW=1 ;;
      --list) P2P_REBASE_LIST=1 ;;
      --commit) P2P_REBASE_COMMIT=1 ;;
      --fresh-base) P2P_CTR_FRESH_BASE=1 ;;
      --no-validator-workload) P2P_CTR_NO_WORKLOAD=1 ;;
      --no-run) P2P_NO_RUN=1 ;;
      --no-dkms) P2P_NO_DKMS=1 ;;
      --sign-generate) P2P_SIGN_GENERATE=1 ;;
      --no-userspace) P2P_USERSPACE=keep ;;
      --no-ccache) P2P_NO_CCACHE=1 ;;
      --units-only) P2P_UNITS_ONLY=1 ;;
      esac
      shift
      ;;
    --source | --out | --kernel | --kernel-src | --run | --run-sha256 | --userspace | --nvlink | --force-static-bar1 | --family | --sign-key | --sign-cert | --format | --revision | --chroot | --os | --precompiled | --mirror | --operator)
      allowed_opt "${cmd}" "${opt}"
      [[ $# -ge 2 && -n $2 && $2 != -* ]] || die "${EX_USAGE}" "${opt} needs a value"
      note_opt "${opt}" "$2"
      set_opt_value "${opt}" "$2"
      shift 2
      ;;
    -*)
      die "${EX_USAGE}" "unknown option '${opt}' for ${cmd} (see: build.sh help ${cmd})"
      ;;
    *)
      [[ -z ${!tagvar} ]] || die "${EX_USAGE}" "unexpected argument '${opt}'"
      printf -v "${tagvar}" '%s' "${opt}"
      shift
      ;;
    esac
  done
  if [[ -n ${P2P_KERNEL} && -n ${P2P_KERNEL_SRC} ]]; then
    die "${EX_USAGE}" "--kernel and --kernel-src exclude each other"
  fi
  if [[ ${P2P_NO_RUN} -eq 1 && -n ${P2P_RUN_FILE}${P2P_RUN_SHA256} ]]; then
    opt=--run-sha256
    [[ -z ${P2P_RUN_FILE} ]] || opt=--run
    die "${EX_USAGE}" "--no-run and ${opt} contradict each other: give one"
  fi
}

allowed_opt() {
  [[ " ${P2P_CMD_OPTS[$1]} " == *" $2 "* ]] ||
    die "${EX_USAGE}" "option $2 does not apply to ${1/all/the pipeline} (see: build.sh help $1)"
}

set_opt_value() {
  case $1 in
  --source) P2P_SOURCE=$(abs_path "$2") ;;
  --out) P2P_OUT=$(abs_path "$2") ;;
  --kernel)
    [[ $2 =~ ^[A-Za-z0-9._+~-]+$ ]] || die "${EX_USAGE}" "--kernel '$2' is not a kernel release"
    P2P_KERNEL=$2
    ;;
  --kernel-src) P2P_KERNEL_SRC=$(abs_path "$2") ;;
  --family) P2P_FAMILY=$2 ;;
  --chroot)
    [[ $2 =~ ^[A-Za-z0-9._-]+:.+$ ]] || die "${EX_USAGE}" "--chroot takes NAME:DIR (a chroot made by ci/chroot.sh), not '$2'"
    P2P_CHROOTS+=("${2%%:*}:$(abs_path "${2#*:}")")
    ;;
  --sign-key) P2P_SIGN_KEY=$(abs_path "$2") ;;
  --sign-cert) P2P_SIGN_CERT=$(abs_path "$2") ;;
  --format) P2P_FORMAT=$2 ;;
  --os) P2P_CTR_OS=$2 ;;
  --precompiled)
    [[ $2 =~ ^[A-Za-z0-9._+~-]+$ ]] || die "${EX_USAGE}" "--precompiled '$2' is not a kernel release"
    P2P_CTR_PRECOMPILED=$2
    ;;
  --operator)
    [[ $2 =~ ^v?[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || die "${EX_USAGE}" "--operator takes the GPU Operator's release (26.7.0, v25.10.1), not '$2'"
    P2P_CTR_OPERATOR=${2#v}
    ;;
  --mirror)
    [[ $2 =~ ^https?://[^[:space:]]+$ ]] || die "${EX_USAGE}" "--mirror takes an http(s) URL, not '$2'"
    P2P_CTR_MIRROR=${2%/}
    ;;
  --revision)
    # each format's own syntax: package_check_args
    [[ $2 =~ ^[A-Za-z0-9][A-Za-z0-9.+~_]*$ ]] || die "${EX_USAGE}" "--revision '$2' is not a package revision (letters, digits, . + ~ _)"
    P2P_REVISION=$2
    ;;
  --run) P2P_RUN_FILE=$(abs_path "$2") ;;
  --userspace)
    [[ $2 == auto || $2 == keep || $2 == run ]] || die "${EX_USAGE}" "--userspace takes auto, keep or run, not '$2'"
    P2P_USERSPACE=$2
    ;;
  --nvlink)
    [[ $2 == keep || $2 == off ]] || die "${EX_USAGE}" "--nvlink takes keep or off, not '$2'"
    P2P_NVLINK=$2
    ;;
  --force-static-bar1)
    P2P_STATIC_BAR1=$(static_bar1_gpus "$2" | paste -sd, -)
    ;;
  --run-sha256)
    [[ $2 =~ ^[0-9a-fA-F]{64}$ ]] || die "${EX_USAGE}" "--run-sha256 needs 64 hex digits"
    P2P_RUN_SHA256=${2,,}
    ;;
  esac
}

abs_path() {
  case $1 in
  /*) printf '%s\n' "$1" ;;
  *) printf '%s/%s\n' "$(pwd -P)" "$1" ;;
  esac
}

# main ARGS: global options anywhere; then a command, or a tag for the pipeline.
main() {
  local -a rest=()
  local cmd
  while [[ $# -gt 0 ]]; do
    case $1 in
    --cache-dir | --work-dir | --root)
      [[ $# -ge 2 && -n $2 && $2 != -* ]] || die "${EX_USAGE}" "$1 needs a value"
      case $1 in
      --cache-dir) P2P_CACHE_DIR=$(abs_path "$2") ;;
      --work-dir) P2P_WORK_DIR=$(abs_path "$2") ;;
      --root) P2P_ROOT=$(abs_path "$2") ;;
      esac
      shift 2
      ;;
    --cache-dir=* | --work-dir=* | --root=*)
      set -- "${1%%=*}" "${1#*=}" "${@:2}"
      ;;
    --lock-wait)
      [[ $# -ge 2 && $2 =~ ^[0-9]{1,6}$ ]] || die "${EX_USAGE}" "--lock-wait needs a number of seconds"
      P2P_LOCK_WAIT=$((10#$2))
      shift 2
      ;;
    --lock-wait=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
    --dry-run) P2P_DRY_RUN=1 && shift ;;
    --yes | -y) P2P_YES=1 && shift ;;
    --verbose | -v) P2P_VERBOSE=1 && shift ;;
    --help | -h) P2P_HELP=1 && shift ;;
    --version)
      printf 'build.sh %s\n' "${P2P_VERSION}"
      return 0
      ;;
    --) shift && rest+=("$@") && break ;;
    *) rest+=("$1") && shift ;;
    esac
  done
  P2P_ROOT=${P2P_ROOT%/}
  P2P_CACHE_DIR=${P2P_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/nvidia-p2p}
  P2P_WORK_DIR=${P2P_WORK_DIR:-${P2P_CACHE_DIR}/work}
  set -- "${rest[@]+"${rest[@]}"}"
  cmd=${1:-}
  if [[ -z ${cmd} ]]; then
    usage
    [[ ${P2P_HELP} -eq 1 ]] && return "${EX_OK}"
    return "${EX_USAGE}"
  fi
  if [[ ${cmd} == help ]]; then
    cmd_help "${2:-}"
    return 0
  fi
  case ${cmd} in
  fetch | patch | build | install | uninstall | preflight | list | check | verify | rebase | package | container | repo | doctor) shift ;;
  [0-9]*) cmd=all ;;
  *) die "${EX_USAGE}" "unknown command '${cmd}' (see: build.sh --help)" ;;
  esac
  if [[ ${P2P_HELP} -eq 1 ]]; then
    cmd_help "${cmd}"
    return 0
  fi
  install_traps
  if [[ ${P2P_DRY_RUN} -eq 0 && ${cmd} != list && ${cmd} != check && ${cmd} != preflight && ${cmd} != doctor ]]; then
    log_open "${P2P_CACHE_DIR}/logs"
    log_line "build.sh ${P2P_VERSION}: ${cmd} $*"
  fi
  "cmd_${cmd}" "$@"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
