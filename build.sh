#!/usr/bin/env bash
# build.sh: PCIe P2P for consumer NVIDIA GPUs on NVIDIA's open kernel modules.
# A small dispatcher over lib/, which is in layers: lib/NN-<name>.sh calls
# only files with a smaller NN (ci/helpers/layers.sh checks it; docs/layout.md draws
# them); each command's help sits next to its code (help_<command>).
set -euo pipefail
shopt -s inherit_errexit
# Until install_traps (below, once lib/common.sh is read): a Ctrl-C while the
# library loads is said too, not a silent exit (not where a test sources this).
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  trap 'printf "\nbuild.sh: interrupted\n" >&2; exit 130' INT TERM
fi

P2P_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/lib"
readonly P2P_VERSION="0.1.0"

# shellcheck source=lib/common.sh
source "${P2P_LIB_DIR}/common.sh"
[[ "${BASH_SOURCE[0]}" != "$0" ]] || install_traps
# shellcheck source=lib/versions.sh
source "${P2P_LIB_DIR}/versions.sh"
# shellcheck source=lib/02-cli.sh
source "${P2P_LIB_DIR}/02-cli.sh"
# shellcheck source=lib/03-checksums.sh
source "${P2P_LIB_DIR}/03-checksums.sh"
# shellcheck source=lib/04-cache.sh
source "${P2P_LIB_DIR}/04-cache.sh"
# shellcheck source=lib/05-host.sh
source "${P2P_LIB_DIR}/05-host.sh"
# shellcheck source=lib/06-family.sh
source "${P2P_LIB_DIR}/06-family.sh"
# shellcheck source=lib/07-kernel.sh
source "${P2P_LIB_DIR}/07-kernel.sh"
# shellcheck source=lib/08-state.sh
source "${P2P_LIB_DIR}/08-state.sh"
# shellcheck source=lib/09-modopts.sh
source "${P2P_LIB_DIR}/09-modopts.sh"
# shellcheck source=lib/10-payload.sh
source "${P2P_LIB_DIR}/10-payload.sh"
# shellcheck source=lib/20-fetch.sh
source "${P2P_LIB_DIR}/20-fetch.sh"
# shellcheck source=lib/40-patch.sh
source "${P2P_LIB_DIR}/40-patch.sh"
# shellcheck source=lib/50-build.sh
source "${P2P_LIB_DIR}/50-build.sh"
# shellcheck source=lib/60-sign.sh
source "${P2P_LIB_DIR}/60-sign.sh"
# shellcheck source=lib/62-userspace.sh
source "${P2P_LIB_DIR}/62-userspace.sh"
# shellcheck source=lib/64-static-bar1.sh
source "${P2P_LIB_DIR}/64-static-bar1.sh"
# shellcheck source=lib/66-dkms.sh
source "${P2P_LIB_DIR}/66-dkms.sh"
# shellcheck source=lib/68-install.sh
source "${P2P_LIB_DIR}/68-install.sh"
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
# shellcheck source=lib/80-rebase-lib.sh
source "${P2P_LIB_DIR}/80-rebase-lib.sh"
# shellcheck source=lib/81-rebase-merge.sh
source "${P2P_LIB_DIR}/81-rebase-merge.sh"
# shellcheck source=lib/82-rebase-new.sh
source "${P2P_LIB_DIR}/82-rebase-new.sh"
# shellcheck source=lib/83-rebase.sh
source "${P2P_LIB_DIR}/83-rebase.sh"
# shellcheck source=lib/85-doctor.sh
source "${P2P_LIB_DIR}/85-doctor.sh"
# shellcheck source=lib/88-preflight.sh
source "${P2P_LIB_DIR}/88-preflight.sh"
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
# package: --format deb|arch|rpm, --revision N
P2P_FORMAT="deb"
P2P_REVISION="1"
P2P_UNITS_ONLY=0
P2P_FAMILY=""
# rebase: --new, --list, --commit, and --chroot NAME:DIR (repeatable)
P2P_REBASE_NEW=0
P2P_REBASE_LIST=0
P2P_REBASE_COMMIT=0
P2P_CHROOTS=()
# repo: --key KEYID, --generate-key, --suite NAME, --url URL
P2P_REPO_KEY=""
P2P_REPO_GENERATE=0
P2P_REPO_SUITE=""
P2P_REPO_URL=""
# doctor: --collect DIR, --from DIR, --json, --verify
P2P_DOCTOR_COLLECT=""
P2P_DOCTOR_FROM=""
P2P_DOCTOR_JSON=0
P2P_DOCTOR_VERIFY=0
# verify: --build-only
P2P_VERIFY_BUILD_ONLY=0
P2P_HELP=0
# 1 while the pipeline (build.sh <tag>) runs its stages in this process
P2P_IN_PIPELINE=0
# Set by the stages as they run, read by the files below them: the patched
# tree of this run (patch_tree); the rebase of this run (lib/83-rebase.sh):
# the source's git directory, the work tree, whether a new family was
# written, whether the data directory's change is committed, the base tag.
P2P_PATCHED_DIR=""
RB_GITDIR=""
RB_DIR=""
RB_NEW_FAMILY=""
RB_COMMITTED=1
RB_BASE=""

# dir_option_check OPTION DIR: DIR (given, or the default) is a directory or
# does not exist yet (made when needed); else a usage error, not mkdir's.
dir_option_check() {
  local opt=$1 dir=$2 p=$2
  while [[ ! -e ${p} && ${p} == */* ]]; do
    p=${p%/*}
  done
  [[ -z ${p} || -d ${p} ]] ||
    die "${EX_USAGE}" "${opt} ${dir}: ${p} is not a directory"
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
  dir_option_check --cache-dir "${P2P_CACHE_DIR}"
  dir_option_check --work-dir "${P2P_WORK_DIR}"
  [[ -z ${P2P_ROOT} ]] || dir_option_check --root "${P2P_ROOT}"
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
    P2P_LOG_NOTE=1
  fi
  "cmd_${cmd}" "$@"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
