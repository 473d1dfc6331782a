#!/usr/bin/env bash
# ci/workflows/record-tested.sh RESULTS...: record in versions.conf's "tested" column
# what ci/heavy/matrix.sh runs passed (its --results files: tag, stage, result,
# seconds, reason, tab-separated). A PASS adds the stage's token, a FAIL
# removes it, a SKIP changes nothing. Tokens: apply, compile, bisect,
# build:<series>, load:<series> (series: 6.1, 6.12, 7.2...); a passing full
# build implies compile. versions.conf is rewritten by renaming a complete
# file into place.
# ci/workflows/record-tested.sh --series-changed FAMILY... [RESULTS...]: the series of
# those families (or 'all') changed, so what their tags passed before no
# longer counts: their tested column becomes '-' first, then the RESULTS
# (of runs with the new series) are recorded as above.
set -euo pipefail
shopt -s inherit_errexit

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
REPO_DIR="$(dirname "${CI_DIR}")"
# shellcheck source=build.sh
source "${REPO_DIR}/build.sh"
P2P_PROG="record-tested.sh"

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  case ${1:-} in
  -h | --help) usage && return 0 ;;
  "") usage_error "needs RESULTS files" ;;
  esac
  local file tag stage result token conf tmp line changed=0
  local -A add=() del=() reset=() before=()
  install_traps
  versions_load
  for tag in "${V_TAGS[@]}"; do before[${tag}]=${V_TESTED[${tag}]}; done
  if [[ $1 == --series-changed ]]; then
    shift
    local -A families=()
    for tag in "${V_TAGS[@]}"; do families[${V_FAMILY[${tag}]}]=1; done
    while [[ $# -gt 0 && ( $1 == all || -n ${families[$1]+x} ) ]]; do
      reset[$1]=1
      shift
    done
    [[ ${#reset[@]} -gt 0 ]] || die "${EX_USAGE}" "--series-changed needs a family of versions.conf or 'all'"
    for tag in "${V_TAGS[@]}"; do
      if [[ -n ${reset[all]+x} || -n ${reset[${V_FAMILY[${tag}]}]+x} ]]; then
        V_TESTED["${tag}"]=-
      fi
    done
  fi
  for file in "$@"; do
    [[ -r ${file} ]] || die "${EX_USAGE}" "cannot read ${file}"
    while IFS=$'\t' read -r tag stage result _; do
      [[ -n ${V_FAMILY[${tag}]+x} ]] || continue
      token=$(stage_token "${stage}") || continue
      case ${result} in
      PASS)
        add["${tag} ${token}"]=1
        unset 'del["${tag} ${token}"]'
        [[ ${token} == build:* ]] && add["${tag} compile"]=1 && unset 'del["${tag} compile"]'
        ;;
      FAIL)
        del["${tag} ${token}"]=1
        unset 'add["${tag} ${token}"]'
        ;;
      esac
    done <"${file}"
  done
  for tag in "${V_TAGS[@]}"; do
    line=$(merged_tokens "${tag}")
    V_TESTED["${tag}"]=${line}
    [[ ${line} == "${before[${tag}]}" ]] || changed=$((changed + 1))
  done
  conf=$(versions_file)
  mk_temp_file "$(dirname "${conf}")"
  tmp=${P2P_TMP:?}
  versions_relined "${V_TAGS[@]}" <"${conf}" >"${tmp}"
  chmod --reference="${conf}" "${tmp}"
  mv -- "${tmp}" "${conf}"
  printf '%s: tested column changed for %s tags\n' "${P2P_PROG}" "${changed}" >&2
}

# stage_token STAGE: the tested token of a matrix stage (none for source).
stage_token() {
  case $1 in
  apply | compile | bisect) printf '%s\n' "$1" ;;
  build:* | load:*) printf '%s:%s\n' "${1%%:*}" "$(kernel_series "${1#*:}")" ;;
  *) return 1 ;;
  esac
}

# merged_tokens TAG: the tag's tokens, old ones kept unless a FAIL removed
# them, new PASSes added, in a fixed order.
merged_tokens() {
  local tag=$1 t
  local -a tokens=()
  local -A have=()
  IFS=, read -r -a tokens <<<"${V_TESTED[${tag}]/#-/}"
  for t in "${tokens[@]+"${tokens[@]}"}"; do
    [[ -n ${del["${tag} ${t}"]+x} ]] || have[${t}]=1
  done
  for t in "${!add[@]}"; do
    [[ ${t%% *} == "${tag}" ]] && have[${t#* }]=1
  done
  [[ ${#have[@]} -gt 0 ]] || { printf -- '-\n' && return 0; }
  printf '%s\n' "${!have[@]}" | tested_sorted | paste -sd, -
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
