# shellcheck shell=bash
# lib/02-cli.sh: the command line. Which options each command takes, and the
# one parser every command uses (parse_stage_args): it checks each option's
# value and sets the P2P_* variable build.sh declares for it.

# Each command's synopsis: its arguments and options as its help's Usage line
# shows them. It is the one table of options: the parser takes from it which
# options a command accepts and which of them take a value (a word after the
# option that is not an option), the help prints it (usage_synopsis), and the
# pipeline's sudo hand-over walks it (lib/commands.sh). repo, doctor and
# verify parse their own options.
declare -A P2P_CMD_USAGE=(
  [all]="<tag> [--kernel KVER | --kernel-src DIR] [--source PATH] [--run FILE] [--run-sha256 HEX] [--userspace auto|keep|run | --no-userspace] [--no-ccache] [--no-dkms] [--nvlink keep|off] [--force-static-bar1 ADDR[,ADDR...]] [--sign-key FILE --sign-cert FILE | --sign-generate] [global options]"
  [fetch]="<tag> [--source PATH] [--run FILE] [--run-sha256 HEX] [--no-run]"
  [patch]="<tag> [--source PATH] [--out DIR]"
  [build]="<tag> [--kernel KVER | --kernel-src DIR] [--source PATH] [--no-ccache] [--units-only]"
  [install]="<tag> [--kernel KVER] [--no-dkms] [--run FILE] [--run-sha256 HEX] [--userspace auto|keep|run | --no-userspace] [--nvlink keep|off] [--force-static-bar1 ADDR[,ADDR...]] [--sign-key FILE --sign-cert FILE | --sign-generate]"
  [package]="<tag> [--format deb|arch|rpm] [--revision N] [--out DIR] [--source PATH] [--no-ccache] [--nvlink keep|off]"
  [container]="<tag> [--os debian12|debian13|ubuntu22.04|ubuntu24.04] [--precompiled KVER [--kernel-src DIR] [--sign-key FILE --sign-cert FILE]] [--nvlink keep|off] [--out DIR] [--source PATH] [--run FILE] [--run-sha256 HEX] [--no-userspace] [--operator VERSION [--no-validator-workload]] [--mirror URL] [--fresh-base] [--no-ccache]"
  [uninstall]="[--kernel KVER]"
  [preflight]="[<tag>] [--kernel KVER] [--no-dkms]"
  [rebase]="<tag> | --new [--list] [--commit] [--source GIT] [--family NAME] [--kernel KVER | --kernel-src DIR] [--chroot NAME:DIR]... [--run-sha256 HEX] [--units-only] [--no-ccache]"
  [repo]="<dir> <tag|file.deb>... [--key KEYID | --generate-key] [--suite NAME] [--url URL] [--revision N] [--source PATH] [--no-ccache] [--nvlink keep|off]"
  [doctor]="[--collect DIR | --from DIR] [--json] [--verify]"
  [verify]="[--build-only] [p2p-verify options]"
  [list]=""
  [check]="<tag>"
)

# From the table: the options of each command (P2P_CMD_OPTS, space-separated)
# and, for every option, the first word of its value in the first synopsis
# that has it ("" for an option that takes none) (P2P_OPT_VALUE).
declare -A P2P_CMD_OPTS=()
declare -A P2P_OPT_VALUE=()

# synopsis_opts CMD: P2P_CMD_OPTS[CMD] and P2P_OPT_VALUE from CMD's synopsis.
synopsis_opts() {
  local cmd=$1 i w next plain
  local -a words
  # brackets and bars end a group: a value is the word after the option within it
  plain=${P2P_CMD_USAGE[${cmd}]//\[/|}
  plain=${plain//\]/|}
  read -r -a words <<<"${plain//|/ | }"
  P2P_CMD_OPTS[${cmd}]=""
  for ((i = 0; i < ${#words[@]}; i++)); do
    w=${words[i]}
    [[ ${w} == --* ]] || continue
    next=${words[i + 1]:-}
    [[ ${next} == -* || ${next} == "|" ]] && next=""
    P2P_CMD_OPTS[${cmd}]+="${P2P_CMD_OPTS[${cmd}]:+ }${w}"
    [[ -n ${P2P_OPT_VALUE[${w}]+x} ]] || P2P_OPT_VALUE[${w}]=${next}
  done
}

for _cmd in "${!P2P_CMD_USAGE[@]}"; do
  synopsis_opts "${_cmd}"
done
unset _cmd

# usage_synopsis CMD: the help's Usage line of CMD, from its synopsis, wrapped
# before 80 columns between bracketed groups.
usage_synopsis() {
  local cmd=$1 head="Usage: build.sh" line group="" w depth=0 no_open no_close
  local -a words
  [[ ${cmd} == all ]] || head+=" ${cmd}"
  line=${head}
  read -r -a words <<<"${P2P_CMD_USAGE[${cmd}]}"
  for w in "${words[@]}"; do
    group+="${group:+ }${w}"
    no_open=${w//\[/}
    no_close=${w//\]/}
    depth=$((depth + ${#no_close} - ${#no_open}))
    [[ ${depth} -eq 0 ]] || continue
    if [[ ${line} != "${head}" && $((${#line} + 1 + ${#group})) -gt 80 ]]; then
      printf '%s\n' "${line}"
      line="$(printf '%*s' "${#head}" '')"
    fi
    line+=" ${group}"
    group=""
  done
  printf '%s\n' "${line}"
}

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
# positional argument (a tag) into the variable named TAGVAR; where TAGVAR
# names an array, every positional argument, in order (repo's <dir> and
# items).
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
    -*)
      allowed_opt "${cmd}" "${opt}"
      if [[ -z ${P2P_OPT_VALUE[${opt}]} ]]; then
        note_opt "${opt}"
        set_opt_flag "${opt}"
        shift
      else
        [[ $# -ge 2 && -n $2 && $2 != -* ]] || die "${EX_USAGE}" "${opt} needs a value"
        note_opt "${opt}" "$2"
        set_opt_value "${opt}" "$2"
        shift 2
      fi
      ;;
    *)
      if [[ $(declare -p "${tagvar}" 2>/dev/null) == "declare -a"* ]]; then
        local -n positionals=${tagvar}
        positionals+=("${opt}")
      else
        [[ -z ${!tagvar} ]] || die "${EX_USAGE}" "unexpected argument '${opt}'"
        printf -v "${tagvar}" '%s' "${opt}"
      fi
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

# allowed_opt CMD OPT: dies (usage) unless CMD's synopsis has OPT.
allowed_opt() {
  [[ $2 =~ ^--[a-z0-9-]+$ && -n ${P2P_OPT_VALUE[$2]+x} ]] ||
    die "${EX_USAGE}" "unknown option '$2' for $1 (see: build.sh help $1)"
  [[ " ${P2P_CMD_OPTS[$1]} " == *" $2 "* ]] ||
    die "${EX_USAGE}" "option $2 does not apply to ${1/all/the pipeline} (see: build.sh help $1)"
}

# set_opt_flag OPTION: what OPTION, which takes no value, sets.
set_opt_flag() {
  # shellcheck disable=SC2034 # the P2P_* options: build.sh declares them, the stages read them
  case $1 in
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
  --generate-key) P2P_REPO_GENERATE=1 ;;
  --json) P2P_DOCTOR_JSON=1 ;;
  --verify) P2P_DOCTOR_VERIFY=1 ;;
  --build-only) P2P_VERIFY_BUILD_ONLY=1 ;;
  *) die "${EX_FAIL}" "internal: option $1 is in a synopsis (lib/02-cli.sh) but sets nothing" ;;
  esac
}

# set_opt_value OPTION VALUE: the checked VALUE into OPTION's P2P_* variable.
set_opt_value() {
  # shellcheck disable=SC2034 # the P2P_* options: build.sh declares them, the stages read them
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
    [[ $2 =~ ^[A-Za-z0-9._-]+:.+$ ]] || die "${EX_USAGE}" "--chroot takes NAME:DIR (a chroot made by ci/setup/chroot.sh), not '$2'"
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
  --key)
    [[ $2 =~ ^[[:print:]]+$ ]] || die "${EX_USAGE}" "--key: a key id, fingerprint or user id in printable characters"
    P2P_REPO_KEY=$2
    ;;
  --suite)
    [[ $2 =~ ^[a-z0-9][a-z0-9.+-]*$ ]] || die "${EX_USAGE}" "--suite '$2': lower-case letters, digits, . + - only"
    P2P_REPO_SUITE=$2
    ;;
  --url)
    [[ $2 =~ ^(https?|file):[^[:space:]]+$ ]] || die "${EX_USAGE}" "--url '$2' is not an http(s):// or file: URL"
    P2P_REPO_URL=${2%/}
    ;;
  --collect) P2P_DOCTOR_COLLECT=$(abs_path "$2") ;;
  --from) P2P_DOCTOR_FROM=$(abs_path "$2") ;;
  *) die "${EX_FAIL}" "internal: option $1 is in a synopsis (lib/02-cli.sh) but sets nothing" ;;
  esac
}

abs_path() {
  case $1 in
  /*) printf '%s\n' "$1" ;;
  *) printf '%s/%s\n' "$(pwd -P)" "$1" ;;
  esac
}

# static_bar1_gpus LIST: the PCI addresses of a --force-static-bar1 value
# (comma-separated, DDDD:BB:DD.F or BB:DD.F), one per line, normalized to
# DDDD:BB:DD.F in lower case; a malformed one is a usage error.
static_bar1_gpus() {
  local a
  local -a list
  IFS=, read -r -a list <<<"$1"
  [[ ${#list[@]} -gt 0 ]] || die "${EX_USAGE}" "--force-static-bar1 needs PCI addresses (e.g. 0000:01:00.0)"
  for a in "${list[@]}"; do
    a=${a,,}
    [[ ${a} =~ ^[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] && a="0000:${a}"
    [[ ${a} =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]] ||
      die "${EX_USAGE}" "--force-static-bar1: '${a}' is not a PCI address (DDDD:BB:DD.F, as lspci -D prints it)"
    printf '%s\n' "${a}"
  done | sort -u
}
