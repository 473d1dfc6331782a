#!/usr/bin/env bash
# ci/matrix.sh: the per-tag test matrix. For each tag in versions.conf whose
# source this machine can get, run source -> patch -> build (per kernel, with
# the module checks) -> module load in QEMU -> bisect, and print a tag x stage
# summary. Tags without a source are SKIPped, visibly, with the reason.
set -euo pipefail
shopt -s inherit_errexit

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_DIR="$(dirname "${CI_DIR}")"
# Reuse build.sh's parsers (versions.conf, series); its main does not run when sourced.
# shellcheck source=build.sh
source "${REPO_DIR}/build.sh"
P2P_PROG="matrix.sh"

usage() {
  cat <<'EOF'
Usage: ci/matrix.sh [options]

  --sources DIR       where to look for local sources: git repositories holding
                      the tags, or tarballs whose name contains the tag (Debian's
                      nvidia-open-gpu-kernel-modules_<tag>.orig.tar.xz,
                      NVIDIA-kernel-module-source-<tag>.tar.xz, GitHub archives)
  --tags LIST         comma-separated tags (default: every tag in versions.conf)
  --require LIST      tags that must not be skipped (a SKIP then fails the run)
  --kernel KVER       build against installed headers of KVER (repeatable)
  --kernel-src DIR    build against a kernel build directory (repeatable)
  --qemu KREL         boot Debian's KREL kernel in QEMU and insmod the modules
                      built for it (repeatable; see ci/qemu-smoke.sh)
  --bisect            check that every prefix of the series builds (on the first kernel)
  --cache-dir DIR     build.sh's cache (verified sources); default as build.sh
  --work-dir DIR      build.sh's work dir; default: a new temporary directory
  --summary FILE      also write the summary table to FILE
  -h, --help          this text

Exit status: 0 when no stage failed (skips are listed), 1 when one failed or a
--require'd tag was skipped, 2 on a usage error.
EOF
}

M_TAGS=()
M_REQUIRE=()
M_KERNELS=()
M_QEMU=()
M_SOURCES=""
M_BISECT=0
M_SUMMARY=""
declare -A RESULT=() REASON=()
M_COLUMNS=()

main() {
  local tag
  parse_args "$@"
  versions_load
  [[ ${#M_TAGS[@]} -gt 0 ]] || M_TAGS=("${V_TAGS[@]}")
  [[ ${#M_KERNELS[@]} -gt 0 ]] || M_KERNELS=("kernel:$(uname -r)")
  P2P_WORK_DIR=${P2P_WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/matrix-work.XXXXXX")}
  P2P_CACHE_DIR=${P2P_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/nvidia-p2p}
  mkdir -p "${P2P_WORK_DIR}/logs"
  columns
  for tag in "${M_TAGS[@]}"; do
    require_tag "${tag}"
    run_tag "${tag}"
  done
  summary | tee "${M_SUMMARY:-/dev/null}"
  verdict
}

parse_args() {
  while [[ $# -gt 0 ]]; do
    case $1 in
    --sources) M_SOURCES=$(abs_path "$(need_value "$@")") && shift ;;
    --tags) IFS=, read -r -a M_TAGS <<<"$(need_value "$@")" && shift ;;
    --require) IFS=, read -r -a M_REQUIRE <<<"$(need_value "$@")" && shift ;;
    --kernel) M_KERNELS+=("kernel:$(need_value "$@")") && shift ;;
    --kernel-src) M_KERNELS+=("kernel-src:$(abs_path "$(need_value "$@")")") && shift ;;
    --qemu) M_QEMU+=("$(need_value "$@")") && shift ;;
    --bisect) M_BISECT=1 ;;
    --cache-dir) P2P_CACHE_DIR=$(abs_path "$(need_value "$@")") && shift ;;
    --work-dir) P2P_WORK_DIR=$(abs_path "$(need_value "$@")") && shift ;;
    --summary) M_SUMMARY=$(abs_path "$(need_value "$@")") && shift ;;
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

# columns: source, patch, one build column per kernel, load per --qemu kernel, bisect.
columns() {
  local k
  M_COLUMNS=(source patch)
  for k in "${M_KERNELS[@]}"; do
    M_COLUMNS+=("build:$(kernel_label "${k}")")
  done
  for k in "${M_QEMU[@]+"${M_QEMU[@]}"}"; do
    M_COLUMNS+=("load:${k}")
  done
  [[ ${M_BISECT} -eq 1 ]] && M_COLUMNS+=(bisect)
  return 0
}

kernel_label() {
  local spec=$1
  case ${spec} in
  kernel:*) printf '%s\n' "${spec#kernel:}" ;;
  kernel-src:*) kernel_release_of "${spec#kernel-src:}" || basename "${spec#kernel-src:}" ;;
  esac
}

# build_sh LOG ARGS...: build.sh with this matrix's cache and work dirs.
build_sh() {
  local log=$1
  shift
  "${REPO_DIR}/build.sh" --cache-dir "${P2P_CACHE_DIR}" --work-dir "${P2P_WORK_DIR}" "$@" >"${log}" 2>&1
}

set_result() {
  RESULT["$1|$2"]=$3
  [[ -n ${4:-} ]] && REASON["$1|$2"]=$4
  printf '%-12s %-36s %s%s\n' "$1" "$2" "$3" "${4:+ ($4)}" >&2
}

run_tag() {
  local tag=$1 src log k label
  log="${P2P_WORK_DIR}/logs/${tag}"
  if [[ -f ${P2P_CACHE_DIR}/src/${tag}.pin ]] && build_sh "${log}-source.log" fetch "${tag}" --no-run; then
    set_result "${tag}" source PASS "verified cache"
  elif src=$(find_source "${tag}") && [[ -n ${src} ]]; then
    if build_sh "${log}-source.log" fetch "${tag}" --source "${src}" --no-run; then
      set_result "${tag}" source PASS "$(basename "${src}")"
    else
      fail_stage "${tag}" source "${log}-source.log"
      return 0
    fi
  else
    set_result "${tag}" source SKIP "no verified source for ${tag} on this machine: none cached, none in --sources"
    return 0
  fi
  if build_sh "${log}-patch.log" patch "${tag}"; then
    set_result "${tag}" patch PASS
  else
    fail_stage "${tag}" patch "${log}-patch.log"
    return 0
  fi
  for k in "${M_KERNELS[@]}"; do
    label=$(kernel_label "${k}")
    if build_sh "${log}-build-${label}.log" build "${tag}" "--${k%%:*}" "${k#*:}"; then
      set_result "${tag}" "build:${label}" PASS "5 modules, version ${tag}, vermagic ${label}"
    else
      fail_stage "${tag}" "build:${label}" "${log}-build-${label}.log"
    fi
  done
  run_qemu "${tag}"
  [[ ${M_BISECT} -eq 1 ]] && run_bisect "${tag}"
  return 0
}

# find_source TAG: a git repository holding the pinned commit, or a tarball
# named after the tag, in --sources.
find_source() {
  local tag=$1 f
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

fail_stage() {
  local tag=$1 stage=$2 log=$3
  set_result "${tag}" "${stage}" FAIL "log: ${log}"
  tail -n 25 "${log}" | sed 's/^/    | /' >&2
}

run_qemu() {
  local tag=$1 krel mods log
  for krel in "${M_QEMU[@]+"${M_QEMU[@]}"}"; do
    mods="${P2P_WORK_DIR}/${tag}/modules-${krel}"
    log="${P2P_WORK_DIR}/logs/${tag}-load-${krel}.log"
    if [[ ! -d ${mods} ]]; then
      set_result "${tag}" "load:${krel}" SKIP "no modules built for ${krel}"
      continue
    fi
    local rc=0 image busybox
    image=$(cached_deb "linux-image-${krel}") || image=""
    busybox=$(cached_deb busybox-static) || busybox=""
    "${CI_DIR}/qemu-smoke.sh" --kernel-release "${krel}" --modules "${mods}" \
      ${image:+--image-deb "${image}"} ${busybox:+--busybox-deb "${busybox}"} >"${log}" 2>&1 || rc=$?
    case ${rc} in
    0) set_result "${tag}" "load:${krel}" PASS "$(grep -o 'NVRM: No NVIDIA GPU found[^)]*' "${log}" | head -n 1)" ;;
    77) set_result "${tag}" "load:${krel}" SKIP "$(tail -n 1 "${log}")" ;;
    *) fail_stage "${tag}" "load:${krel}" "${log}" ;;
    esac
  done
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
  local tag=$1 first bdir series stamp krel syssrc sysout n log
  first=$(kernel_label "${M_KERNELS[0]}")
  bdir="${P2P_WORK_DIR}/${tag}/build-${first}"
  log="${P2P_WORK_DIR}/logs/${tag}-bisect.log"
  if [[ ! -f ${bdir}/${BUILD_STAMP} ]]; then
    set_result "${tag}" bisect SKIP "no build for ${first}"
    return 0
  fi
  read -r _ krel syssrc sysout <"${bdir}/${BUILD_STAMP}" || true # no trailing newline
  rm -rf "${bdir}.bisect"
  cp -a "${bdir}" "${bdir}.bisect"
  series="${P2P_WORK_DIR}/${tag}/series"
  family_series "${tag}" >"${series}"
  n=$(wc -l <"${series}")
  : >"${log}"
  while [[ ${n} -gt 1 ]]; do
    quilt_in "${bdir}.bisect" "${tag}" "${series}" pop -q >>"${log}" 2>&1
    n=$((n - 1))
    printf '== first %s patches: %s\n' "${n}" "$(head -n "${n}" "${series}" | tail -n 1)" >>"${log}"
    if ! make -C "${bdir}.bisect" modules "-j$(nproc_or_1)" "SYSSRC=${syssrc}" "SYSOUT=${sysout}" >>"${log}" 2>&1; then
      fail_stage "${tag}" bisect "${log}"
      return 0
    fi
    check_modules "${bdir}.bisect/kernel-open" "${tag}" "${krel}" >>"${log}" 2>&1 || {
      fail_stage "${tag}" bisect "${log}"
      return 0
    }
  done
  rm -rf "${bdir}.bisect"
  set_result "${tag}" bisect PASS "every prefix of $(wc -l <"${series}") patches builds (${first})"
}

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
