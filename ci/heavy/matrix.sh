#!/usr/bin/env bash
# ci/heavy/matrix.sh: the per-tag test matrix. Every selected tag gets its source
# verified and the series applied at fuzz 0; chosen tags also get gate (a)
# (the changed translation units compiled) or the full gate (b) (all modules
# per kernel with the module checks, the QEMU load test, bisect). Prints a
# tag x stage table; skipped stages are listed with the reason.
set -euo pipefail
shopt -s inherit_errexit

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
REPO_DIR="$(dirname "${CI_DIR}")"
# ci/setup/chroot.sh, or a stand-in for the hermetic tests.
CHROOT_SH="${NVP2P_CHROOT_SH:-${CI_DIR}/setup/chroot.sh}"
# Reuse build.sh's parsers (versions.conf, series); its main does not run when sourced.
# shellcheck source=build.sh
source "${REPO_DIR}/build.sh"
P2P_PROG="matrix.sh"

usage() {
  cat <<'EOF'
Usage: ci/heavy/matrix.sh [options]

Sources (the first that has a tag is used; tags with none are SKIPped):
  --git DIR           a git repository (e.g. a bare clone of the upstream bundle)
                      holding the tags; the pinned commit and tree ids are
                      checked in it. Each tag's series is applied to the files
                      its family touches, exported from the pinned commit
                      (about a second a tag); a tag gets its full tree
                      (exported, verified, cached: about 15 s) only when a
                      stage that builds it starts.
  --sources DIR       git repositories holding the tags, or tarballs whose name
                      contains the tag (Debian's ..._<tag>.orig.tar.xz,
                      NVIDIA-kernel-module-source-<tag>.tar.xz, GitHub archives)
Which tags get which stages (LIST: comma-separated tags and keywords: all;
newest / first = the newest / first tag of every family; latest = the newest
tag of all; sample:N = N tags not chosen otherwise, rotating daily):
  --tags LIST         every stage starts with source + apply (default: all)
  --compile LIST      also gate (a): build --units-only on the first kernel
  --full LIST         also gate (b): all modules per kernel, the module checks,
                      the QEMU load test (--qemu) and bisect (--bisect)
  --require LIST      tags that must not be skipped (a SKIP then fails the run)
Kernels (for --compile the first one):
  --kernel KVER       installed headers of KVER (repeatable)
  --kernel-src DIR    a kernel build directory (repeatable)
  --chroot NAME:DIR   the kernel of chroot NAME under DIR (ci/setup/chroot.sh; made
                      before): build.sh runs inside it, for --chroot-tags only
  --chroot-tags LIST  the tags built in the chroots (default: latest, the
                      newest tag of all; they must build there)
  --qemu KREL         boot Debian's KREL kernel in QEMU and insmod the modules
                      built for it (repeatable; see ci/heavy/qemu-smoke.sh)
  --bisect            check that every prefix of the series builds (first kernel)
Other:
  --budget MINUTES    do not start a long stage (compile, build, load, bisect)
                      that would likely end after MINUTES; it is SKIPped with
                      the reason. Estimates: the last run of that stage here,
                      else a conservative default. Stages go in phases:
                      the first kernel for each full tag, then the chroots,
                      the other kernels, QEMU, bisect, then --compile tags;
                      with --history, the stages that ran longest ago first
  --history FILE      when each stage of each tag last ran (PASS or FAIL;
                      this run appends its own): stages that never ran, then
                      the oldest, go first, so a run that cannot fit every
                      stage leaves out other ones than the run before did.
                      A stage a chosen one needs (the build before a load or
                      a bisect) runs just before it
  --sample-seed N     the rotation of sample:N (default: days since 1970-01-01)
  --cache-dir DIR     build.sh's cache (verified sources); default as build.sh
  --work-dir DIR      build.sh's work dir; default: a new temporary directory
  --summary FILE      also write the summary table to FILE
  --results FILE      append one line per stage: tag, stage, result, seconds,
                      reason (tab-separated; ci/workflows/record-tested.sh reads it)
  -h, --help          this text

Exit status: 0 when no stage failed (skips are listed), 1 when one failed or a
--require'd tag was skipped, 2 on a usage error, 3 when another matrix run uses
the work directory or a build.sh run the cache directory (the matrix holds the
cache's lock for its whole run).
EOF
}

M_TAGS_SPEC=all
M_COMPILE_SPEC=""
M_FULL_SPEC=""
M_REQUIRE=()
M_KERNELS=()
M_CHROOTS=()
M_QEMU=()
M_GIT=""
M_SOURCES=""
M_BISECT=0
M_SUMMARY=""
M_RESULTS=""
M_BUDGET=0
M_SEED=""
M_HISTORY=""
M_CHROOT_SPEC=latest
M_TAGS=()
declare -A RESULT=() REASON=() M_IN_COMPILE=() M_IN_FULL=() M_IN_CHROOT=() M_ESTIMATE=()
# M_LAST: TAG|COLUMN -> when (seconds since 1970) --history last saw it run;
# M_BUILDS: TAG -> full builds of TAG started in this run.
# M_FETCH: TAG -> pending (applied from --git on its family's files; its full
# source is fetched when a stage first builds it: full_tree), fetched or
# failed.
declare -A M_LAST=() M_BUILDS=() M_FETCH=()
M_COLUMNS=()

# Conservative stage durations on 2 cores (seconds), until one was measured.
declare -A M_DEFAULT_ESTIMATE=([compile]=300 [build1]=900 [build]=420 [load]=120 [bisect]=600)

main() {
  local tag
  parse_args "$@"
  versions_load
  P2P_WORK_DIR=${P2P_WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/matrix-work.XXXXXX")}
  P2P_CACHE_DIR=${P2P_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/nvidia-p2p}
  mkdir -p "${P2P_WORK_DIR}/logs"
  work_lock
  cache_lock
  [[ ${#M_KERNELS[@]} -gt 0 ]] || M_KERNELS=("kernel:$(uname -r)")
  M_SEED=${M_SEED:-$(($(date -u +%s) / 86400))}
  select_tags
  columns
  printf 'matrix: %s tags; compile: %s; full: %s%s\n' "${#M_TAGS[@]}" "$(joined M_IN_COMPILE)" \
    "$(joined M_IN_FULL)" "$([[ ${M_BUDGET} -gt 0 ]] && printf '; budget %s min' $((M_BUDGET / 60)))" >&2
  for tag in "${M_TAGS[@]}"; do
    run_apply "${tag}"
  done
  history_load
  local -a jobs
  mapfile -t jobs < <(stage_jobs | stalest_first)
  run_jobs "${jobs[@]+"${jobs[@]}"}"
  summary | tee "${M_SUMMARY:-/dev/null}"
  verdict
}

# work_lock: one run per work directory. Its stages (bisect's quilt pushes
# and pops above all) change the trees in place, and the lock build.sh takes
# is on the cache directory, which a second run may not share. Exit 3 when
# another run holds it; the lock goes with this process.
work_lock() {
  exec {M_LOCK_FD}>"${P2P_WORK_DIR}/matrix.lock"
  flock -n "${M_LOCK_FD}" || {
    printf 'matrix.sh: another matrix run uses the work directory %s; wait for it or pass another --work-dir\n' \
      "${P2P_WORK_DIR}" >&2
    exit 3
  }
}

# cache_lock: the cache directory's build.lock, the one every build.sh run
# takes, held for the whole run and handed down to this run's build.sh runs
# (lib/common.sh's lock_register and held_locks_env, as rebase hands its own
# down): a build.sh run started beside the matrix waits for it or exits 11,
# instead of the matrix's stages failing with that 11 one after another.
# Exit 3 when a build.sh run holds it.
cache_lock() {
  local fd
  mkdir -p "${P2P_CACHE_DIR}"
  exec {fd}>"${P2P_CACHE_DIR}/build.lock"
  flock -n "${fd}" || {
    printf 'matrix.sh: a build.sh run uses the cache directory %s; wait for it or pass another --cache-dir\n' \
      "${P2P_CACHE_DIR}" >&2
    exit 3
  }
  lock_register "${P2P_CACHE_DIR}" "${fd}"
  NVP2P_HELD_LOCKS=$(held_locks_env)
  export NVP2P_HELD_LOCKS
}

parse_args() {
  while [[ $# -gt 0 ]]; do
    case $1 in
    --git) M_GIT=$(abs_path "$(need_value "$@")") && shift ;;
    --sources) M_SOURCES=$(abs_path "$(need_value "$@")") && shift ;;
    --tags) M_TAGS_SPEC=$(need_value "$@") && shift ;;
    --compile) M_COMPILE_SPEC=$(need_value "$@") && shift ;;
    --full) M_FULL_SPEC=$(need_value "$@") && shift ;;
    --require) IFS=, read -r -a M_REQUIRE <<<"$(need_value "$@")" && shift ;;
    --kernel) M_KERNELS+=("kernel:$(need_value "$@")") && shift ;;
    --kernel-src) M_KERNELS+=("kernel-src:$(abs_path "$(need_value "$@")")") && shift ;;
    --chroot) M_CHROOTS+=("$(need_value "$@")") && shift ;;
    --chroot-tags) M_CHROOT_SPEC=$(need_value "$@") && shift ;;
    --qemu) M_QEMU+=("$(need_value "$@")") && shift ;;
    --bisect) M_BISECT=1 ;;
    --budget) M_BUDGET=$(($(need_number "$@") * 60)) && shift ;;
    --sample-seed) M_SEED=$(need_number "$@") && shift ;;
    --history) M_HISTORY=$(abs_path "$(need_value "$@")") && shift ;;
    --cache-dir) P2P_CACHE_DIR=$(abs_path "$(need_value "$@")") && shift ;;
    --work-dir) P2P_WORK_DIR=$(abs_path "$(need_value "$@")") && shift ;;
    --summary) M_SUMMARY=$(abs_path "$(need_value "$@")") && shift ;;
    --results) M_RESULTS=$(abs_path "$(need_value "$@")") && shift ;;
    -h | --help) usage && exit 0 ;;
    *) printf 'matrix.sh: unknown argument %s\n' "$1" >&2 && usage >&2 && exit 2 ;;
    esac
    shift
  done
}

need_value() {
  if [[ $# -lt 2 || -z $2 || $2 == -* ]]; then
    printf 'matrix.sh: %s needs a value\n' "$1" >&2
    exit 2
  fi
  printf '%s\n' "$2"
}

need_number() {
  [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || { printf 'matrix.sh: %s needs a number\n' "$1" >&2 && exit 2; }
  printf '%s\n' "$2"
}

# --- which tags get which stages ------------------------------------------------

# select_tags: M_TAGS from --tags; M_IN_COMPILE / M_IN_FULL (tag -> order)
# from --compile / --full, restricted to M_TAGS.
select_tags() {
  local tag n=0
  mapfile -t M_TAGS < <(expand_list "${M_TAGS_SPEC}" "")
  for tag in $(expand_list "${M_FULL_SPEC}" "${M_TAGS[*]}"); do
    M_IN_FULL[${tag}]=$((n++))
  done
  for tag in $(expand_list "${M_COMPILE_SPEC}" "${M_TAGS[*]}"); do
    [[ -n ${M_IN_FULL[${tag}]+x} ]] || M_IN_COMPILE[${tag}]=$((n++))
  done
  if [[ ${#M_CHROOTS[@]} -gt 0 ]]; then
    for tag in $(expand_list "${M_CHROOT_SPEC}" "${M_TAGS[*]}"); do
      M_IN_CHROOT[${tag}]=$((n++))
    done
  fi
  return 0
}

# expand_list SPEC WITHIN: the tags SPEC names, in its order, without repeats,
# each checked against versions.conf; only those in WITHIN (all when empty).
expand_list() {
  local spec=$1 within=$2 item tag
  local -a out=() items=()
  local -A seen=()
  IFS=, read -r -a items <<<"${spec}"
  for item in "${items[@]+"${items[@]}"}"; do
    case ${item} in
    all) out+=("${V_TAGS[@]}") ;;
    latest) out+=("$(printf '%s\n' "${V_TAGS[@]}" | sort -V | tail -n 1)") ;;
    newest | first) mapfile -t -O "${#out[@]}" out < <(family_ends "${item}") ;;
    sample:[0-9]*) mapfile -t -O "${#out[@]}" out < <(sample "${item#sample:}" "${out[*]-}" "${within}") ;;
    *)
      require_tag "${item}"
      out+=("${item}")
      ;;
    esac
  done
  for tag in "${out[@]+"${out[@]}"}"; do
    [[ -n ${seen[${tag}]+x} ]] && continue
    seen[${tag}]=1
    [[ -z ${within} || " ${within} " == *" ${tag} "* ]] && printf '%s\n' "${tag}"
  done
  return 0
}

# sample N CHOSEN WITHIN: N tags of WITHIN (all) not in CHOSEN nor the
# newest/first of a family, from position (seed * N) on, wrapping: each day
# another slice, so every tag is sampled in turn.
sample() {
  local n=$1 chosen=" $2 " within=$3 tag start i
  local -a pool=()
  local ends
  ends=" $(family_ends newest | tr '\n' ' ') $(family_ends first | tr '\n' ' ') "
  for tag in ${within:-${V_TAGS[*]}}; do
    [[ ${chosen} == *" ${tag} "* || ${ends} == *" ${tag} "* ]] || pool+=("${tag}")
  done
  [[ ${#pool[@]} -gt 0 ]] || return 0
  start=$(((M_SEED * n) % ${#pool[@]}))
  for ((i = 0; i < n && i < ${#pool[@]}; i++)); do
    printf '%s\n' "${pool[$(((start + i) % ${#pool[@]}))]}"
  done
}

# ordered ASSOC: its keys by their value (the order they were chosen in).
ordered() {
  local -n map=$1
  local k
  for k in "${!map[@]}"; do
    printf '%s %s\n' "${map[${k}]}" "${k}"
  done | sort -n | cut -d' ' -f2
}

joined() {
  local list
  list=$(ordered "$1" | tr '\n' ' ')
  printf '%s' "${list:-none}"
}

# columns: source, apply, compile (if any), one build column per kernel,
# load per --qemu kernel, bisect.
columns() {
  local k
  M_COLUMNS=(source apply)
  [[ ${#M_IN_COMPILE[@]} -gt 0 ]] && M_COLUMNS+=(compile)
  if [[ ${#M_IN_FULL[@]} -gt 0 ]]; then
    for k in "${M_KERNELS[@]}"; do
      M_COLUMNS+=("build:$(kernel_label "${k}")")
    done
    for k in "${M_QEMU[@]+"${M_QEMU[@]}"}"; do
      M_COLUMNS+=("load:${k}")
    done
    [[ ${M_BISECT} -eq 1 ]] && M_COLUMNS+=(bisect)
  fi
  for k in "${M_CHROOTS[@]+"${M_CHROOTS[@]}"}"; do
    [[ ${#M_IN_CHROOT[@]} -gt 0 ]] && M_COLUMNS+=("build:$(chroot_krel "${k}")")
  done
  return 0
}

# chroot_krel NAME:DIR: the kernel release of that chroot's headers.
chroot_krel() {
  "${CHROOT_SH}" kernel "${1%%:*}" "${1#*:}"
}

# --- which stage runs when -------------------------------------------------------

# stage_jobs: one line per long stage to run, in phase order: TAG, COLUMN,
# FUNCTION, ARGUMENT (tab-separated). The chroot builds come before the
# other kernels: they are the only check of the 7.x compat patches, where a
# second 6.x kernel repeats much of the first.
stage_jobs() {
  local tag k
  local -a full compile chroot
  mapfile -t full < <(ordered M_IN_FULL)
  mapfile -t compile < <(ordered M_IN_COMPILE)
  mapfile -t chroot < <(ordered M_IN_CHROOT)
  for tag in "${full[@]+"${full[@]}"}"; do
    job "${tag}" "build:$(kernel_label "${M_KERNELS[0]}")" run_build "${M_KERNELS[0]}"
  done
  for k in "${M_CHROOTS[@]+"${M_CHROOTS[@]}"}"; do
    for tag in "${chroot[@]+"${chroot[@]}"}"; do
      job "${tag}" "build:$(chroot_krel "${k}")" run_build_chroot "${k}"
    done
  done
  for k in "${M_KERNELS[@]:1}"; do
    for tag in "${full[@]+"${full[@]}"}"; do
      job "${tag}" "build:$(kernel_label "${k}")" run_build "${k}"
    done
  done
  for k in "${M_QEMU[@]+"${M_QEMU[@]}"}"; do
    for tag in "${full[@]+"${full[@]}"}"; do
      job "${tag}" "load:${k}" run_qemu "${k}"
    done
  done
  if [[ ${M_BISECT} -eq 1 ]]; then
    for tag in "${full[@]+"${full[@]}"}"; do
      job "${tag}" bisect run_bisect -
    done
  fi
  for tag in "${compile[@]+"${compile[@]}"}"; do
    job "${tag}" compile run_compile -
  done
}

job() {
  printf '%s\t%s\t%s\t%s\n' "$@"
}

# stalest_first: the jobs on stdin, those --history saw run longest ago
# first (never: first of all), otherwise in their order.
stalest_first() {
  local n=0 tag col rest
  while IFS=$'\t' read -r tag col rest; do
    printf '%s\t%s\t%s\t%s\t%s\n' "${M_LAST["${tag}|${col}"]:-0}" "$((n++))" "${tag}" "${col}" "${rest}"
  done | sort -t $'\t' -k1,1n -k2,2n | cut -f3-
}

# run_jobs JOB...: each job of a tag whose series applied, unless it already
# has a result (a stage run earlier as another's prerequisite).
run_jobs() {
  local line tag col fn arg
  for line in "$@"; do
    IFS=$'\t' read -r tag col fn arg <<<"${line}"
    [[ ${RESULT["${tag}|apply"]:-} == PASS && -z ${RESULT["${tag}|${col}"]+x} ]] || continue
    [[ -z ${M_HISTORY} ]] || printf 'next: %s %s (last run: %s)\n' "${tag}" "${col}" "$(last_run "${tag}" "${col}")" >&2
    "${fn}" "${tag}" "${arg}"
  done
}

last_run() {
  local when=${M_LAST["$1|$2"]:-0}
  if [[ ${when} -eq 0 ]]; then
    printf 'never'
  else
    date -u -d "@${when}" '+%Y-%m-%d %H:%M UTC'
  fi
}

# history_load: M_LAST from --history (a missing file is an empty history;
# lines that are not WHEN TAG COLUMN PASS|FAIL SECONDS are ignored).
history_load() {
  local when tag col result
  [[ -n ${M_HISTORY} && -f ${M_HISTORY} ]] || return 0
  while IFS=$'\t' read -r when tag col result _; do
    [[ ${when} =~ ^[0-9]+$ && ${result} =~ ^(PASS|FAIL)$ && -n ${tag} && -n ${col} ]] || continue
    M_LAST["${tag}|${col}"]=${when}
  done <"${M_HISTORY}"
}

# history_add TAG COLUMN RESULT SECONDS: a line for --history (long stages
# that ran; not source and apply, which run every time, nor SKIPs).
history_add() {
  [[ -n ${M_HISTORY} && $3 =~ ^(PASS|FAIL)$ && $2 != source && $2 != apply ]] || return 0
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%s)" "$1" "$2" "$3" "$4" >>"${M_HISTORY}"
}

kernel_label() {
  local spec=$1
  case ${spec} in
  kernel:*) printf '%s\n' "${spec#kernel:}" ;;
  kernel-src:*) kernel_release_of "${spec#kernel-src:}" || basename "${spec#kernel-src:}" ;;
  esac
}

# --- stages -----------------------------------------------------------------------

# build_sh LOG ARGS...: build.sh with this matrix's cache and work dirs.
build_sh() {
  local log=$1
  shift
  "${REPO_DIR}/build.sh" --cache-dir "${P2P_CACHE_DIR}" --work-dir "${P2P_WORK_DIR}" "$@" >"${log}" 2>&1
}

# set_result TAG COLUMN RESULT [REASON [SECONDS]]
set_result() {
  RESULT["$1|$2"]=$3
  [[ -n ${4:-} ]] && REASON["$1|$2"]=$4
  printf '%-12s %-36s %s%s\n' "$1" "$2" "$3" "${4:+ ($4)}" >&2
  if [[ -n ${M_RESULTS} ]]; then
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${5:-0}" "${4:-}" >>"${M_RESULTS}"
  fi
  history_add "$1" "$2" "$3" "${5:-0}"
}

# skip_reason TAG STAGE WHY: WHY, or, when STAGE of TAG (the stage this one
# needs) was left out by the time budget, a reason that says so.
skip_reason() {
  local reason=${REASON["$1|$2"]:-}
  if [[ ${RESULT["$1|$2"]:-} == SKIP && ${reason} == "time budget"* ]]; then
    printf 'time budget: %s (%s was left out)' "$3" "$2"
  else
    printf '%s' "$3"
  fi
}

fail_stage() {
  local tag=$1 stage=$2 log=$3 seconds=${4:-0}
  set_result "${tag}" "${stage}" FAIL "log: ${log}" "${seconds}"
  tail -n 25 "${log}" | sed 's/^/    | /' >&2
}

# budget_allows TAG COLUMN KIND: false (and the stage SKIPped, with the
# reason) when a stage of KIND would likely end after --budget.
budget_allows() {
  local est=${M_ESTIMATE[$3]:-${M_DEFAULT_ESTIMATE[$3]}}
  [[ ${M_BUDGET} -eq 0 || $((SECONDS + est)) -le ${M_BUDGET} ]] && return 0
  set_result "$1" "$2" SKIP "time budget: $((SECONDS / 60)) of $((M_BUDGET / 60)) min used, this stage takes about $(((est + 59) / 60)) min"
  return 1
}

# timed KIND LOG CMD...: run CMD (in a subshell, output to LOG); LAST_SECONDS
# and the estimate for KIND become how long it took. Returns its status.
LAST_SECONDS=0
timed() {
  local kind=$1 log=$2 start=${SECONDS} rc=0
  shift 2
  ("$@") >"${log}" 2>&1 || rc=$?
  LAST_SECONDS=$((SECONDS - start))
  M_ESTIMATE[${kind}]=${LAST_SECONDS}
  return "${rc}"
}

# run_apply TAG: source and apply columns. From git, every tag is checked on
# the files its family touches only; one that a later stage builds gets its
# full tree then (full_tree), so a run whose budget leaves its builds out
# spends no time exporting and verifying it (20-odd tags, about 15 s each).
run_apply() {
  local tag=$1
  local log="${P2P_WORK_DIR}/logs/${tag}"
  if [[ -n ${M_GIT} ]] && { light_only "${tag}" || git_holds "${tag}"; }; then
    apply_light "${tag}"
    light_only "${tag}" || M_FETCH[${tag}]=pending
    return 0
  fi
  if ! full_source "${tag}" "${log}-source.log"; then
    return 0
  fi
  if build_sh "${log}-patch.log" patch "${tag}"; then
    set_result "${tag}" apply PASS "$(grep -c . "${P2P_WORK_DIR}/${tag}/patched/.pc/nvidia-p2p.series" 2>/dev/null || echo 0) patches"
  else
    fail_stage "${tag}" apply "${log}-patch.log"
  fi
}

# light_only TAG: no stage of this run builds TAG.
light_only() {
  [[ -z ${M_IN_FULL[$1]+x} && -z ${M_IN_COMPILE[$1]+x} && -z ${M_IN_CHROOT[$1]+x} ]]
}

git_holds() {
  git -c safe.directory='*' --git-dir="${M_GIT}" cat-file -e "${V_COMMIT[$1]}^{commit}" 2>/dev/null
}

# full_tree TAG COLUMN: before COLUMN builds TAG, its verified full source in
# the cache (cache_source, once, for a tag whose apply phase was light). When
# that fails, COLUMN fails with its log.
full_tree() {
  local tag=$1 log="${P2P_WORK_DIR}/logs/$1-source.log"
  if [[ ${M_FETCH[${tag}]:-} == pending ]]; then
    if cache_source "${tag}" "${log}" >/dev/null; then
      M_FETCH[${tag}]=fetched
    else
      M_FETCH[${tag}]=failed
    fi
  fi
  [[ ${M_FETCH[${tag}]:-fetched} == fetched ]] && return 0
  fail_stage "${tag}" "$2" "${log}"
  return 1
}

# cache_source TAG LOG: the tag's verified source in the cache: the cached
# copy verified again, else fetched from where find_source finds it. Prints
# where it came from ("verified cache" or the source's name). Status 1: the
# fetch failed (LOG says why); 2: nothing here has the tag.
cache_source() {
  local tag=$1 log=$2 src
  if [[ -f ${P2P_CACHE_DIR}/src/${tag}.pin ]] && build_sh "${log}" fetch "${tag}" --no-run; then
    printf 'verified cache\n'
  elif src=$(find_source "${tag}") && [[ -n ${src} ]]; then
    build_sh "${log}" fetch "${tag}" --source "${src}" --no-run || return 1
    basename "${src}"
  else
    return 2
  fi
}

# full_source TAG LOG: the verified source in the cache (source column).
full_source() {
  local tag=$1 log=$2 how rc=0
  how=$(cache_source "${tag}" "${log}") || rc=$?
  case ${rc} in
  0) set_result "${tag}" source PASS "${how}" ;;
  1) fail_stage "${tag}" source "${log}" ;;
  *) set_result "${tag}" source SKIP "no verified source for ${tag} on this machine: none cached, none in --git/--sources" ;;
  esac
  [[ ${rc} -eq 0 ]]
}

# apply_light TAG: pins checked in --git, the family's files exported from
# the pinned commit, the tag's series applied at fuzz 0 with quilt.
apply_light() {
  local tag=$1 dir tree rc=0
  local log="${P2P_WORK_DIR}/logs/${tag}-apply.log"
  local -a g=(git -c safe.directory='*' --git-dir="${M_GIT}") files
  if ! tree=$("${g[@]}" rev-parse -q --verify "${V_COMMIT[${tag}]}^{tree}" 2>/dev/null); then
    set_result "${tag}" source SKIP "$(basename "${M_GIT}") does not hold commit ${V_COMMIT[${tag}]}"
    return 0
  fi
  if [[ ${tree} != "${V_TREE[${tag}]}" ]]; then
    set_result "${tag}" source FAIL "commit ${V_COMMIT[${tag}]} has tree ${tree}, pinned ${V_TREE[${tag}]}"
    return 0
  fi
  set_result "${tag}" source PASS "git ${V_COMMIT[${tag}]:0:12}, tree = pin"
  dir="${P2P_WORK_DIR}/${tag}/light"
  rm -rf -- "${dir}"
  mkdir -p "${dir}/tree"
  # Only the files the tag has: git archive exports nothing when one path is
  # missing (535.54.03 has no libspdm_shash.c, a check file of compat-0008).
  mapfile -t files < <(family_files "${tag}")
  mapfile -t files < <("${g[@]}" ls-tree -r --name-only "${V_COMMIT[${tag}]}" -- "${files[@]}" 2>/dev/null)
  "${g[@]}" archive "${V_COMMIT[${tag}]}" -- "${files[@]}" 2>/dev/null | tar -x -C "${dir}/tree" 2>/dev/null || true
  timed apply "${log}" light_quilt "${tag}" "${dir}" || rc=$?
  if [[ ${rc} -eq 0 ]]; then
    set_result "${tag}" apply PASS "$(grep -c . "${dir}/series" || true) patches"
    rm -rf -- "${dir}"
  else
    fail_stage "${tag}" apply "${log}"
  fi
}

# light_quilt TAG DIR: the checks of the patch stage and quilt at fuzz 0 on
# DIR/tree (every step checked: this runs where errexit does not apply).
light_quilt() {
  local tag=$1 dir=$2 series unmet
  series=$(tag_series "${tag}" "${dir}/tree") || return 1
  printf '%s\n' "${series}" | grep . >"${dir}/series" || true
  unmet=$(family_requires_unmet "${tag}" "${dir}/tree") || return 1
  if [[ -n ${unmet} ]]; then
    printf 'family %s does not fit %s: %s\n' "${V_FAMILY[${tag}]}" "${tag}" "${unmet}"
    return 1
  fi
  [[ ! -s ${dir}/series ]] || quilt_in "${dir}/tree" "${tag}" "${dir}/series" push -a --fuzz=0
}

# find_source TAG: --git, a git repository holding the pinned commit, or a
# tarball named after the tag, in --sources.
find_source() {
  local tag=$1 f
  if [[ -n ${M_GIT} ]] && git_holds "${tag}"; then
    printf '%s\n' "${M_GIT}"
    return 0
  fi
  [[ -n ${M_SOURCES} && -d ${M_SOURCES} ]] || return 1
  for f in "${M_SOURCES}"/*; do
    if is_git_repo "${f}" && git -c safe.directory='*' -C "${f}" cat-file -e "${V_COMMIT[${tag}]}^{commit}" 2>/dev/null; then
      printf '%s\n' "${f}"
      return 0
    fi
  done
  for f in "${M_SOURCES}"/*"${tag}"*.tar.* "${M_SOURCES}/${V_COMMIT[${tag}]}.tar.gz"; do
    [[ -f ${f} ]] && printf '%s\n' "${f}" && return 0
  done
  return 1
}

first_kernel_args() {
  local k=${M_KERNELS[0]}
  printf '%s\n%s\n' "--${k%%:*}" "${k#*:}"
}

# run_compile TAG: gate (a) on the first kernel.
run_compile() {
  local tag=$1 rc=0
  local log="${P2P_WORK_DIR}/logs/${tag}-compile.log"
  local -a kargs
  mapfile -t kargs < <(first_kernel_args)
  budget_allows "${tag}" compile compile || return 0
  full_tree "${tag}" compile || return 0
  timed compile "${log}" "${REPO_DIR}/build.sh" --cache-dir "${P2P_CACHE_DIR}" --work-dir "${P2P_WORK_DIR}" \
    build "${tag}" "${kargs[@]}" --units-only || rc=$?
  if [[ ${rc} -eq 0 ]]; then
    set_result "${tag}" compile PASS "$(grep -c '^ok ' "${log}" || true) units (${LAST_SECONDS} s)" "${LAST_SECONDS}"
  else
    fail_stage "${tag}" compile "${log}" "${LAST_SECONDS}"
  fi
}

# run_build TAG KERNELSPEC: one full build, its column PASS or FAIL. The
# first build of a tag in a run compiles the kernel-independent part, the
# next ones reuse it (their estimates differ).
run_build() {
  local tag=$1 k=$2 kind=build label rc=0 log
  label=$(kernel_label "${k}")
  log="${P2P_WORK_DIR}/logs/${tag}-build-${label}.log"
  [[ ${M_BUILDS[${tag}]:-0} -gt 0 ]] || kind=build1
  budget_allows "${tag}" "build:${label}" "${kind}" || return 0
  full_tree "${tag}" "build:${label}" || return 0
  M_BUILDS[${tag}]=$((${M_BUILDS[${tag}]:-0} + 1))
  timed "${kind}" "${log}" "${REPO_DIR}/build.sh" --cache-dir "${P2P_CACHE_DIR}" \
    --work-dir "${P2P_WORK_DIR}" build "${tag}" "--${k%%:*}" "${k#*:}" || rc=$?
  build_result "${tag}" "${label}" "${rc}" "${log}"
}

# run_build_chroot TAG NAME:DIR: gate (b) inside chroot NAME, with the
# repository, the cache and the work directory bound at the same paths
# (results land where the host's would); a ccache directory of its own.
run_build_chroot() {
  local tag=$1 k=$2 name dir label rc=0 log
  name=${k%%:*}
  dir=${k#*:}
  label=$(chroot_krel "${k}")
  log="${P2P_WORK_DIR}/logs/${tag}-build-${label}.log"
  budget_allows "${tag}" "build:${label}" build1 || return 0
  full_tree "${tag}" "build:${label}" || return 0
  timed build1 "${log}" "${CHROOT_SH}" run "${name}" "${dir}" \
    --bind "${REPO_DIR}:${REPO_DIR}" --bind "${P2P_CACHE_DIR}:${P2P_CACHE_DIR}" \
    --bind "${P2P_WORK_DIR}:${P2P_WORK_DIR}" -- \
    env "CCACHE_DIR=${P2P_CACHE_DIR}/ccache-chroot-${name}" "NVP2P_HELD_LOCKS=${NVP2P_HELD_LOCKS}" "${REPO_DIR}/build.sh" \
    --cache-dir "${P2P_CACHE_DIR}" --work-dir "${P2P_WORK_DIR}" build "${tag}" --kernel "${label}" || rc=$?
  build_result "${tag}" "${label}" "${rc}" "${log}"
}

# needs_build TAG KERNELSPEC: the build a later stage of TAG needs, run now
# when this run has not tried it yet.
needs_build() {
  [[ -n ${RESULT["$1|build:$(kernel_label "$2")"]+x} ]] || run_build "$1" "$2"
}

build_result() {
  local tag=$1 label=$2 rc=$3 log=$4
  if [[ ${rc} -eq 0 ]]; then
    set_result "${tag}" "build:${label}" PASS "5 modules, version ${tag}, vermagic ${label} (${LAST_SECONDS} s)" "${LAST_SECONDS}"
  else
    fail_stage "${tag}" "build:${label}" "${log}" "${LAST_SECONDS}"
  fi
}

# run_qemu TAG KREL: boot Debian's KREL in QEMU and load the modules built
# for it (that build first, when this run has not tried it).
run_qemu() {
  local tag=$1 krel=$2 k mods log rc=0 image busybox
  for k in "${M_KERNELS[@]}"; do
    [[ $(kernel_label "${k}") == "${krel}" ]] && needs_build "${tag}" "${k}"
  done
  mods="${P2P_WORK_DIR}/${tag}/modules-${krel}"
  log="${P2P_WORK_DIR}/logs/${tag}-load-${krel}.log"
  if [[ ! -d ${mods} ]]; then
    set_result "${tag}" "load:${krel}" SKIP "$(skip_reason "${tag}" "build:${krel}" "no modules built for ${krel}")"
    return 0
  fi
  budget_allows "${tag}" "load:${krel}" load || return 0
  image=$(cached_deb "linux-image-${krel}") || image=""
  busybox=$(cached_deb busybox-static) || busybox=""
  timed load "${log}" "${CI_DIR}/heavy/qemu-smoke.sh" --kernel-release "${krel}" --modules "${mods}" \
    ${image:+--image-deb "${image}"} ${busybox:+--busybox-deb "${busybox}"} || rc=$?
  case ${rc} in
  0) set_result "${tag}" "load:${krel}" PASS "$(grep -o 'NVRM: No NVIDIA GPU found[^)]*' "${log}" | head -n 1)" "${LAST_SECONDS}" ;;
  77) set_result "${tag}" "load:${krel}" SKIP "$(tail -n 1 "${log}")" ;;
  *) fail_stage "${tag}" "load:${krel}" "${log}" "${LAST_SECONDS}" ;;
  esac
}

# cached_deb PACKAGE: a .deb of PACKAGE kept in the cache between runs and
# used only while its sha256 equals the one in apt's (signed) index; otherwise
# it is downloaded again (apt-get download keeps an existing file of the right
# size unchecked, so the old one is removed first). Prints its path.
cached_deb() {
  local pkg=$1 dir="${P2P_CACHE_DIR}/debs" want f
  want=$(apt-cache show --no-all-versions "${pkg}" 2>/dev/null | sed -n 's/^SHA256: //p' | head -n 1)
  [[ -n ${want} ]] || return 1
  mkdir -p "${dir}"
  for f in "${dir}/${pkg}"_*.deb; do
    [[ -f ${f} ]] || continue
    [[ "$(sha256_of "${f}")" == "${want}" ]] && printf '%s\n' "${f}" && return 0
    rm -f -- "${f}"
  done
  (cd "${dir}" && apt-get download -q "${pkg}" >&2) || return 1
  for f in "${dir}/${pkg}"_*.deb; do
    [[ -f ${f} && "$(sha256_of "${f}")" == "${want}" ]] && printf '%s\n' "${f}" && return 0
  done
  return 1
}

# run_bisect TAG: every prefix of the series must build. Starting from the
# full build for the first kernel, pop one patch at a time and rebuild
# incrementally.
run_bisect() {
  local tag=$1 first bdir log rc=0
  needs_build "${tag}" "${M_KERNELS[0]}"
  first=$(kernel_label "${M_KERNELS[0]}")
  bdir="${P2P_WORK_DIR}/${tag}/build-${first}"
  log="${P2P_WORK_DIR}/logs/${tag}-bisect.log"
  if [[ ! -f ${bdir}/${BUILD_STAMP} ]]; then
    set_result "${tag}" bisect SKIP "$(skip_reason "${tag}" "build:${first}" "no build for ${first}")"
    return 0
  fi
  budget_allows "${tag}" bisect bisect || return 0
  timed bisect "${log}" bisect_tree "${tag}" "${bdir}" || rc=$?
  if [[ ${rc} -eq 0 ]]; then
    set_result "${tag}" bisect PASS "every prefix of $(grep -c . "${P2P_WORK_DIR}/${tag}/series") patches builds (${first}, ${LAST_SECONDS} s)" "${LAST_SECONDS}"
  else
    fail_stage "${tag}" bisect "${log}" "${LAST_SECONDS}"
  fi
}

# bisect_tree TAG BDIR: pop the patches of a copy of BDIR one by one,
# rebuilding (with the compiler of the build) and checking the modules after
# each. Runs in a subshell (timed), where errexit does not apply: every step
# is checked.
bisect_tree() {
  local tag=$1 bdir=$2 series krel syssrc sysout n cc
  read -r _ krel syssrc sysout _ <"${bdir}/${BUILD_STAMP}" || true # no trailing newline
  rm -rf "${bdir}.bisect"
  cp -a "${bdir}" "${bdir}.bisect" || return 1
  series="${P2P_WORK_DIR}/${tag}/series"
  tag_series "${tag}" >"${series}" || return 1
  P2P_KREL=${krel}
  cc=$(kernel_cc "${sysout}")
  make_cc "${cc}"
  n=$(wc -l <"${series}")
  while [[ ${n} -gt 1 ]]; do
    quilt_in "${bdir}.bisect" "${tag}" "${series}" pop -q || return 1
    n=$((n - 1))
    printf '== first %s patches: %s\n' "${n}" "$(head -n "${n}" "${series}" | tail -n 1)"
    make -C "${bdir}.bisect" modules "-j$(nproc_or_1)" "SYSSRC=${syssrc}" "SYSOUT=${sysout}" "CC=${P2P_MAKE_CC}" || return 1
    check_modules "${bdir}.bisect/kernel-open" "${tag}" "${krel}" || return 1
  done
  rm -rf "${bdir}.bisect"
}

# --- report -----------------------------------------------------------------------

summary() {
  local tag c r w=12
  printf '\n%-12s' TAG
  for c in "${M_COLUMNS[@]}"; do
    w=$(((${#c} > 6 ? ${#c} : 6) + 2))
    printf "%-${w}s" "${c}"
  done
  printf '\n'
  for tag in "${M_TAGS[@]}"; do
    printf '%-12s' "${tag}"
    for c in "${M_COLUMNS[@]}"; do
      w=$(((${#c} > 6 ? ${#c} : 6) + 2))
      r=${RESULT["${tag}|${c}"]:-"-"}
      printf "%-${w}s" "${r}"
    done
    printf '\n'
  done
  for tag in "${M_TAGS[@]}"; do
    for c in "${M_COLUMNS[@]}"; do
      r=${RESULT["${tag}|${c}"]:-}
      if [[ ${r} == SKIP || ${r} == FAIL ]]; then
        printf '%s %s %s: %s\n' "${r}" "${tag}" "${c}" "${REASON["${tag}|${c}"]:-}"
      fi
    done
  done
}

verdict() {
  local key tag failed=0
  for key in "${!RESULT[@]}"; do
    [[ ${RESULT[${key}]} == FAIL ]] && failed=1
  done
  for tag in "${M_REQUIRE[@]+"${M_REQUIRE[@]}"}"; do
    if [[ ${RESULT["${tag}|source"]:-SKIP} != PASS ]]; then
      printf 'matrix.sh: required tag %s did not run\n' "${tag}" >&2
      failed=1
    fi
  done
  return "${failed}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
