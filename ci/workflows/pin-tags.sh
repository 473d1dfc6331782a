#!/usr/bin/env bash
# ci/workflows/pin-tags.sh: versions.conf's pins, computed from an upstream git
# repository (never typed by hand).
#
#   ci/workflows/pin-tags.sh add GIT FAMILY FIRST LAST [--run-sums FILE]
#       add every tag of GIT from FIRST to LAST (version order) that
#       versions.conf does not list yet, with FAMILY, the commit, tree and core
#       ids computed from the tag, the .run checksum from FILE (lines
#       "<tag> <sha256> <url>", or 'unknown'), tested '-'
#   ci/workflows/pin-tags.sh check GIT
#       recompute the pins of every listed tag that GIT holds; exit 1 on any
#       difference, listing it
#   ci/workflows/pin-tags.sh run-sum TAG SHA256 SOURCE SOURCE...
#       the .run checksum of a listed tag whose checksum is 'unknown', from
#       two or more published sources that agree (each SOURCE a URL or a
#       citation, printed, not stored); one already pinned is kept when it
#       is the same, and refused (checksum mismatch) when it differs
#
# versions.conf is rewritten by renaming a complete file into place.
set -euo pipefail
shopt -s inherit_errexit

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
REPO_DIR="$(dirname "${CI_DIR}")"
# shellcheck source=build.sh
source "${REPO_DIR}/build.sh"
P2P_PROG="pin-tags.sh"

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  local cmd=${1:-}
  [[ $# -gt 0 ]] && shift
  install_traps
  case ${cmd} in
  add) pin_add "$@" ;;
  check) pin_check "$@" ;;
  run-sum) pin_run_sum "$@" ;;
  -h | --help) usage ;;
  *) usage >&2 && exit "${EX_USAGE}" ;;
  esac
}

# tags_between GIT FIRST LAST: the release tags of GIT in [FIRST, LAST].
tags_between() {
  local git=$1 first=$2 last=$3 t
  while IFS= read -r t; do
    valid_tag_string "${t}" || continue
    version_le "${first}" "${t}" && version_le "${t}" "${last}" && printf '%s\n' "${t}"
  done < <(git -c safe.directory='*' --git-dir="${git}" tag -l | sort -V)
}

pin_add() {
  [[ $# -ge 4 ]] || die "${EX_USAGE}" "add needs GIT FAMILY FIRST LAST"
  local git=$1 family=$2 first=$3 last=$4 sums="" tag pins sha url conf tmp n=0
  shift 4
  if [[ ${1:-} == --run-sums ]]; then
    sums=${2:?--run-sums needs a file}
  fi
  [[ ${family} =~ ${FAMILY_RE} && -d ${P2P_DATA_DIR}/patches/${family} ]] ||
    die "${EX_DATA}" "no family directory patches/${family}"
  versions_load
  conf=$(versions_file)
  mk_temp_file "$(dirname "${conf}")"
  tmp=${P2P_TMP:?}
  cp -- "${conf}" "${tmp}"
  while IFS= read -r tag; do
    [[ -z ${V_FAMILY[${tag}]+x} ]] || continue
    pins=$(git_pins "${git}" "${tag}") || die "${EX_FETCH}" "cannot compute the pins of ${tag} in ${git}"
    read -r V_COMMIT["${tag}"] V_TREE["${tag}"] V_CORE["${tag}"] <<<"${pins}"
    sha=unknown
    url=""
    # read empties its variables when it finds no line: the defaults come after.
    if [[ -n ${sums} ]] && read -r _ sha url < <(awk -v t="${tag}" '$1 == t' "${sums}"); then
      [[ ${sha} =~ ${SHA256_RE} || ${sha} == unknown ]] || die "${EX_DATA}" "${sums}: bad checksum for ${tag}"
    fi
    [[ -n ${sha} ]] || sha=unknown
    [[ ${url} == https://* ]] || url="${RUN_URL_BASE}/${tag}/NVIDIA-Linux-x86_64-${tag}.run"
    V_FAMILY["${tag}"]=${family}
    V_RUN_SHA["${tag}"]=${sha}
    V_RUN_URL["${tag}"]=${url}
    V_TESTED["${tag}"]="-"
    versions_with_line "${tag}" <"${tmp}" >"${tmp}.new"
    mv -- "${tmp}.new" "${tmp}"
    n=$((n + 1))
  done < <(tags_between "${git}" "${first}" "${last}")
  chmod --reference="${conf}" "${tmp}"
  mv -- "${tmp}" "${conf}"
  printf '%s: %s tags added to family %s\n' "${P2P_PROG}" "${n}" "${family}" >&2
}

pin_run_sum() {
  [[ $# -ge 4 ]] || die "${EX_USAGE}" "run-sum needs TAG SHA256 and two or more SOURCEs that published it"
  local tag=$1 sha=${2,,} conf tmp
  [[ ${sha} =~ ${SHA256_RE} ]] || die "${EX_USAGE}" "'$2' is not a sha256 (64 hex digits)"
  shift 2
  versions_load
  [[ -n ${V_FAMILY[${tag}]+x} ]] || die "${EX_UNSUPPORTED}" "tag ${tag} is not in versions.conf"
  if [[ ${V_RUN_SHA[${tag}]} == "${sha}" ]]; then
    printf '%s: %s: already pinned to %s\n' "${P2P_PROG}" "${tag}" "${sha}" >&2
    return 0
  fi
  [[ ${V_RUN_SHA[${tag}]} == unknown ]] ||
    die "${EX_CHECKSUM}" "${tag}: versions.conf pins ${V_RUN_SHA[${tag}]}, not ${sha}: a pinned checksum is not replaced"
  conf=$(versions_file)
  mk_temp_file "$(dirname "${conf}")"
  tmp=${P2P_TMP:?}
  V_RUN_SHA["${tag}"]=${sha}
  versions_relined "${tag}" <"${conf}" >"${tmp}"
  chmod --reference="${conf}" "${tmp}"
  mv -- "${tmp}" "${conf}"
  printf '%s: %s: .run sha256 %s, as published by:\n' "${P2P_PROG}" "${tag}" "${sha}" >&2
  printf '  %s\n' "$@" >&2
}

pin_check() {
  [[ $# -eq 1 ]] || die "${EX_USAGE}" "check needs GIT"
  local git=$1 tag pins commit tree core bad=0 n=0
  versions_load
  for tag in "${V_TAGS[@]}"; do
    pins=$(git_pins "${git}" "${tag}") || { printf 'SKIP %s: not in %s\n' "${tag}" "${git}" >&2 && continue; }
    read -r commit tree core <<<"${pins}"
    n=$((n + 1))
    if [[ ${commit} != "${V_COMMIT[${tag}]}" || ${tree} != "${V_TREE[${tag}]}" || ${core} != "${V_CORE[${tag}]}" ]]; then
      printf 'MISMATCH %s: git has %s %s %s, versions.conf %s %s %s\n' "${tag}" "${commit}" "${tree}" "${core}" \
        "${V_COMMIT[${tag}]}" "${V_TREE[${tag}]}" "${V_CORE[${tag}]}"
      bad=1
    fi
  done
  printf '%s: %s tags checked against %s\n' "${P2P_PROG}" "${n}" "${git}" >&2
  return "${bad}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
