# shellcheck shell=bash
# lib/common.sh: messages, exit codes, logging, dry-run, locking and temp files
# shared by every command of build.sh. Sourced, never executed.

# Exit codes: the one table. Each row is NAME CODE MEANING; EX_<NAME> is
# defined from it (readonly), `build.sh help exit-codes` prints it
# (exit_code_table) and docs/commands.md carries that output (test/unit/cli.bats
# keeps the docs in step, and checks that every EX_* the code names is a row).
P2P_EXIT_CODES=(
  "OK 0 success"
  "FAIL 1 internal or unexpected error"
  "USAGE 2 bad command line"
  "UNSUPPORTED 3 tag not in versions.conf, or not a valid tag string; or an option the tag's family does not support (--nvlink keep, --force-static-bar1); container: an --os it does not know, a tag below the GPU Operator validator's minimum branch (--operator), or --no-userspace"
  "DATA 4 versions.conf, series or a patch family is malformed"
  "FETCH 5 source or .run could not be obtained (download, unpack, missing file)"
  "CHECKSUM 6 source tree does not match its pin, a patched tree changed since it was patched (the file is named), or .run checksum mismatch (or none pinned to check against)"
  "PATCH 7 a patch does not apply at fuzz 0 (nothing was written); rebase: rejects, or the registry keys moved"
  "BUILD 8 kbuild failed, or the built modules failed their checks; container: mmdebstrap, umoci or skopeo failed; verify: verify/p2p-verify does not compile"
  "INSTALL 9 install or uninstall failed; the previous state was restored"
  "PREFLIGHT 10 preflight refused: not root, a tool missing (git, g++, quilt, ...; verify: nvcc), headers missing, dkms missing or too old, Secure Boot without a signing key, nothing built..."
  "LOCKED 11 another build.sh run holds the lock (still, after --lock-wait SECONDS)"
  "MISMATCH 12 userspace driver version would differ from the module version, or cannot be told"
  "KERNEL 13 the tag cannot be built for this kernel (kernels.conf says why), or the kernel was built with clang and its clang (of the kernel's major version) or lld is not installed here"
  "CONFLICT 14 another NVIDIA kernel module (DKMS, package, .run) is installed; the error names the command that removes it"
  "SIGN 15 module signing: key unreadable, certificate not matching the key or expired, sign-file missing or a signature not verifying"
  "REPO 16 repo: the signing key is missing or not the repository's, gpg failed, a package of the same version with other content, or the new indexes failed their own check (nothing was published)"
  "SPACE 17 not enough disk space: refused before fetch, patch or build (the directory, the space free and the space needed are named), or the disk filled up while writing (nothing half-made was kept)"
  "DOCTOR_BLOCKED 30 doctor: a finding stops or breaks P2P (certain or likely)"
  "DOCTOR_INSUFFICIENT 31 doctor: insufficient data: nothing found that stops P2P, but a pair's state, or why P2P fails or is slower than host staging, cannot be told; the report lists what to collect (pairs seen working whose data no output checked exit 0, said)"
  "DOCTOR_NO_PAIR 32 doctor: fewer than two NVIDIA GPUs (one, or none where the sysfs read lists the GPUs), and nothing found that stops P2P; no GPU identified in outputs that do not list them is 31"
  "DOCTOR_UNREADABLE 33 doctor: nothing readable to diagnose (--from), or the --collect directory cannot be written"
  "SKIP 77 ci/heavy/matrix.sh only: a tag was skipped (no verified source on this machine)"
  "INTERRUPTED 130 interrupted (Ctrl-C, SIGTERM); the previous state was restored"
)
for _row in "${P2P_EXIT_CODES[@]}"; do
  read -r _name _code _ <<<"${_row}"
  declare -gr "EX_${_name}=${_code}"
done
unset _row _name _code

# exit_code_table: CODE<TAB>MEANING, a line per exit code.
exit_code_table() {
  local row name code meaning
  for row in "${P2P_EXIT_CODES[@]}"; do
    read -r name code meaning <<<"${row}"
    printf '%s\t%s\n' "${code}" "${meaning}"
  done
}

P2P_PROG="build.sh"
P2P_VERBOSE=0
P2P_DRY_RUN=0
P2P_YES=0
P2P_LOG_FILE=""
P2P_START_SECONDS=${SECONDS}

# die [CODE] MESSAGE...: print "build.sh: MESSAGE" on stderr and exit.
die() {
  local code=${EX_FAIL}
  if [[ $# -gt 1 && $1 =~ ^[0-9]+$ ]]; then
    code=$1
    shift
  fi
  # a usage error did no work: its log is not named
  [[ ${code} -eq ${EX_USAGE:-2} ]] || log_note_pending
  printf '%s: %s\n' "${P2P_PROG}" "$*" >&2
  log_line "ERROR($code): $*"
  exit "${code}"
}

# The log's path, said once, before the first stage line, warning or error of
# a run that opened a log (main sets P2P_LOG_NOTE=1 after log_open): the
# first line of every run that does work, and none for a usage error.
P2P_LOG_NOTE=0
log_note_pending() {
  [[ ${P2P_LOG_NOTE} -eq 1 && -n ${P2P_LOG_FILE:-} ]] || return 0
  P2P_LOG_NOTE=0
  printf '%s: log: %s\n' "${P2P_PROG}" "${P2P_LOG_FILE}" >&2
}

warn() {
  log_note_pending
  printf '%s: warning: %s\n' "${P2P_PROG}" "$*" >&2
  log_line "WARNING: $*"
}

# note MESSAGE: information for the user, on stderr (stdout carries results).
note() {
  log_note_pending
  printf '%s: %s\n' "${P2P_PROG}" "$*" >&2
  log_line "$*"
}

verbose() {
  log_line "$*"
  if [[ ${P2P_VERBOSE} -eq 1 ]]; then
    printf '%s: %s\n' "${P2P_PROG}" "$*" >&2
  fi
}

# Colour only on a terminal, and never with NO_COLOR set (https://no-color.org).
use_color() {
  [[ -z ${NO_COLOR:-} && -t 2 ]]
}

# stage NAME TEXT: a progress line with the time since the run started.
stage() {
  log_note_pending
  stage_print "$@"
  log_line "STAGE $1: ${*:2}"
}

# stage_print NAME TEXT: stage's line on stderr, not logged (the progress
# lines of a long command, whose own output the log holds).
stage_print() {
  local name=$1
  shift
  local elapsed=$((SECONDS - P2P_START_SECONDS))
  local stamp
  stamp=$(printf '[%02d:%02d]' $((elapsed / 60)) $((elapsed % 60)))
  if use_color; then
    printf '\033[1m%s %-9s\033[0m %s\n' "${stamp}" "${name}" "$*" >&2
  else
    printf '%s %-9s %s\n' "${stamp}" "${name}" "$*" >&2
  fi
}

# say_next CMD...: the "next:" line after a stage command (fetch, patch,
# build, install) that did its work: the command to run next; nothing under
# --dry-run, which did nothing to go on from.
say_next() {
  [[ ${P2P_DRY_RUN} -eq 0 ]] || return 0
  note "next: $*"
}

# next_cmd [--sudo] WORDS...: the build.sh command line WORDS as this run
# would go on to it: with this run's --root, and its --cache-dir and
# --work-dir where they are not the defaults; with --sudo, prefixed by sudo
# unless root, and with both directories always (sudo's HOME is root's, so
# its default cache would not be this one).
next_cmd() {
  local sudo=0 out
  if [[ $1 == --sudo ]]; then
    sudo=1
    shift
  fi
  out=$(quote_cmd "$0" "$@")
  [[ ${sudo} -eq 0 ]] || is_root || out="sudo ${out}"
  if [[ ${sudo} -eq 1 || ${P2P_CACHE_DIR} != "${XDG_CACHE_HOME:-${HOME}/.cache}/nvidia-p2p" ]]; then
    out+=" --cache-dir $(printf '%q' "${P2P_CACHE_DIR}")"
  fi
  if [[ ${sudo} -eq 1 || ${P2P_WORK_DIR} != "${P2P_CACHE_DIR}/work" ]]; then
    out+=" --work-dir $(printf '%q' "${P2P_WORK_DIR}")"
  fi
  [[ -z ${P2P_ROOT} ]] || out+=" --root $(printf '%q' "${P2P_ROOT}")"
  printf '%s\n' "${out}"
}

log_line() {
  if [[ -n ${P2P_LOG_FILE} ]]; then
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"${P2P_LOG_FILE}" 2>/dev/null || true
  fi
}

# log_open DIR: start this run's log file under DIR (one file per run).
log_open() {
  local dir=$1
  mkdir -p "${dir}" 2>/dev/null || return 0
  P2P_LOG_FILE="${dir}/$(date -u +%Y%m%dT%H%M%SZ)-$$.log"
  : >"${P2P_LOG_FILE}" 2>/dev/null || { P2P_LOG_FILE=""; return 0; }
  log_give_to_sudo_user "${dir}"
}

# log_give_to_sudo_user DIR: the install step runs through sudo but logs into
# the calling user's cache; the log then belongs to that user, not to root.
log_give_to_sudo_user() {
  local dir=$1
  [[ -n ${SUDO_UID:-} && ${SUDO_UID} =~ ^[0-9]+$ ]] || return 0
  is_root || return 0
  [[ "$(stat -c %u -- "${dir}" 2>/dev/null)" == "${SUDO_UID}" ]] || return 0
  chown -- "${SUDO_UID}:${SUDO_GID:-${SUDO_UID}}" "${P2P_LOG_FILE}" 2>/dev/null || true
}

# run CMD...: run a command that changes something; with --dry-run only print it.
run() {
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would run: %s\n' "$(quote_cmd "$@")"
    return 0
  fi
  log_line "RUN $(quote_cmd "$@")"
  "$@"
}

# run_logged CMD...: like run, output into the log file (and on stderr with --verbose).
run_logged() {
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would run: %s\n' "$(quote_cmd "$@")"
    return 0
  fi
  log_line "RUN $(quote_cmd "$@")"
  if [[ -z ${P2P_LOG_FILE} ]]; then
    "$@"
  elif [[ ${P2P_VERBOSE} -eq 1 ]]; then
    "$@" 2>&1 | tee -a "${P2P_LOG_FILE}" >&2
  else
    "$@" >>"${P2P_LOG_FILE}" 2>&1
  fi
}

quote_cmd() {
  local out="" arg
  for arg in "$@"; do
    out+="${out:+ }$(printf '%q' "${arg}")"
  done
  printf '%s' "${out}"
}

# need_cmd NAME [PACKAGE]: die with EX_PREFLIGHT if a required program is missing.
need_cmd() {
  command -v "$1" >/dev/null 2>&1 ||
    die "${EX_PREFLIGHT}" "'$1' is required but not installed${2:+ (Debian package: $2)}"
}

is_root() {
  [[ "$(id -u)" == 0 ]]
}

nproc_or_1() {
  nproc 2>/dev/null || echo 1
}

# mk_temp_dir PARENT: create a temp directory under PARENT, removed at exit,
# and set P2P_TMP to it (not printed: a command substitution would lose the
# registration).
P2P_TEMPS=()
P2P_TMP=""
mk_temp_dir() {
  local parent=$1
  mkdir -p "${parent}"
  P2P_TMP=$(mktemp -d "${parent}/.tmp.XXXXXX")
  P2P_TEMPS+=("${P2P_TMP}")
}

# mk_temp_file DIR: like mk_temp_dir, a temp file in DIR (for a rename into place).
mk_temp_file() {
  P2P_TMP=$(mktemp "$1/.tmp.XXXXXX")
  P2P_TEMPS+=("${P2P_TMP}")
}

cleanup_temps() {
  local t
  for t in "${P2P_TEMPS[@]+"${P2P_TEMPS[@]}"}"; do
    [[ -n ${t} && -e ${t} ]] && rm -rf -- "${t}"
  done
  P2P_TEMPS=()
}

# Exit hooks run in reverse order of registration (the install transaction adds
# its rollback here).
P2P_EXIT_HOOKS=()
on_exit() {
  P2P_EXIT_HOOKS+=("$1")
}

# run_exit_hooks: at exit, the hooks (a rollback), then the temp files. A
# Ctrl-C or SIGTERM meanwhile neither cuts them short (a rollback half done, a
# temp tree left) nor goes unsaid: it is noted, and said once they are done.
P2P_LATE_SIGNAL=0
run_exit_hooks() {
  local rc=$? i
  trap - EXIT
  trap 'P2P_LATE_SIGNAL=1' INT TERM
  for ((i = ${#P2P_EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
    "${P2P_EXIT_HOOKS[i]}" "${rc}" || true
  done
  cleanup_temps
  if [[ ${P2P_LATE_SIGNAL} -eq 1 ]]; then
    if [[ ${rc} -eq 0 ]]; then
      printf '\n%s: interrupted as it ended: the run had completed (exit 0)\n' "${P2P_PROG}" >&"${P2P_STDERR}"
    else
      printf '\n%s: interrupted while ending: its cleanup was finished first (exit %s)\n' "${P2P_PROG}" "${rc}" >&"${P2P_STDERR}"
    fi
    log_line "INTERRUPTED while ending (exit ${rc})"
  fi
  exit "${rc}"
}

# on_signal: Ctrl-C, SIGTERM. Said on the run's own stderr (P2P_STDERR): the
# signal may come while a command's output, stderr too, goes into a file
# (quilt's log in a temp directory, removed at exit), and it was said there.
on_signal() {
  printf '\n%s: interrupted\n' "${P2P_PROG}" >&"${P2P_STDERR}"
  log_line "INTERRUPTED"
  exit "${EX_INTERRUPTED}"
}

# The descriptor of the run's stderr, as it started (install_traps).
P2P_STDERR=2
install_traps() {
  [[ ${P2P_STDERR} != 2 ]] || exec {P2P_STDERR}>&2
  trap run_exit_hooks EXIT
  trap on_signal INT TERM
}

# Seconds a run waits for a lock another run holds (--lock-wait); 0: exit 11
# at once.
P2P_LOCK_WAIT=0

# lock_fd FD FILE WHO: the exclusive lock on FD (open on FILE), waiting up to
# P2P_LOCK_WAIT seconds, with a progress line; exit 11 naming WHO while held.
lock_fd() {
  local fd=$1 file=$2 who=$3
  flock -n "${fd}" && return 0
  [[ ${P2P_LOCK_WAIT} -gt 0 ]] ||
    die "${EX_LOCKED}" "${who} holds the lock ${file}; wait for it to finish, or pass --lock-wait SECONDS"
  stage lock "${who} holds ${file}; waiting up to ${P2P_LOCK_WAIT} s"
  flock -w "${P2P_LOCK_WAIT}" "${fd}" ||
    die "${EX_LOCKED}" "${who} holds the lock ${file} still, after ${P2P_LOCK_WAIT} s (--lock-wait)"
}

# The locks this run holds: directory -> descriptor of its build.lock.
declare -gA P2P_LOCKS=()

# lock_acquire DIR [existing]: one build.sh run at a time per DIR (the cache
# directory, the install state directory). A lock this run holds already is
# kept. With "existing", only a build.lock that is there, opened read-only:
# root makes nothing in a user's cache.
lock_acquire() {
  local dir=$1 fd
  [[ -n ${P2P_LOCKS[${dir}]:-} ]] && return 0
  lock_inherited "${dir}" && return 0
  if [[ ${2:-} == existing ]]; then
    [[ -f ${dir}/build.lock ]] || return 0
    { exec {fd}<"${dir}/build.lock"; } 2>/dev/null || return 0
  else
    mkdir -p "${dir}"
    exec {fd}>"${dir}/build.lock"
  fi
  P2P_LOCKS[${dir}]=${fd}
  lock_fd "${fd}" "${dir}/build.lock" "another build.sh run"
}

# lock_register KEY FD: a lock this run took itself on FD (rebase's lock on
# the data directory), so that held_locks_env hands it down.
lock_register() {
  P2P_LOCKS[$1]=$2
}

# lock_inherited DIR: the build.sh run that started this one holds DIR's lock
# and waits for this one (rebase's proof builds, rebase --new's runs per tag):
# NVP2P_HELD_LOCKS lists such directories, separated by ':'. The inherited
# descriptor keeps the lock held; taking it again would wait for ourselves.
lock_inherited() {
  [[ -n ${NVP2P_HELD_LOCKS:-} && ":${NVP2P_HELD_LOCKS}:" == *":$1:"* ]]
}

# held_locks_env: NVP2P_HELD_LOCKS for a child run: the directories whose
# lock this run holds (or inherited).
held_locks_env() {
  local dir out=${NVP2P_HELD_LOCKS:-}
  for dir in "${!P2P_LOCKS[@]}"; do
    [[ -n ${P2P_LOCKS[${dir}]} ]] && out+="${out:+:}${dir}"
  done
  printf '%s\n' "${out}"
}

# lock_release DIR: give DIR's lock up (the pipeline's hand-over to sudo).
lock_release() {
  local fd=${P2P_LOCKS[$1]:-}
  [[ -n ${fd} ]] || return 0
  exec {fd}>&-
  P2P_LOCKS[$1]=""
}

confirm() {
  local question=$1 answer
  [[ ${P2P_YES} -eq 1 || ${P2P_DRY_RUN} -eq 1 ]] && return 0
  if [[ ! -t 0 ]]; then
    die "${EX_PREFLIGHT}" "${question} Not a terminal; pass --yes to proceed"
  fi
  read -r -p "${P2P_PROG}: ${question} [y/N] " answer
  [[ ${answer} == [yY] || ${answer} == [yY][eE][sS] ]] ||
    die "${EX_PREFLIGHT}" "cancelled"
}

# sha256_of FILE: the file's sha256 in lowercase hex.
sha256_of() {
  sha256sum -- "$1" | cut -d' ' -f1
}
