#!/usr/bin/env bash
# ci/setup/upstream-git.sh BUNDLE DIR: a bare git repository DIR holding every tag
# of BUNDLE (a git bundle of NVIDIA's open-gpu-kernel-modules), made by
# cloning it, or brought up to date by fetching its tags when DIR exists.
# When BUNDLE has a SHA256SUMS file beside it, its checksum must match. (The
# trees are checked against versions.conf's pins again when used.) Prints DIR.
# Exit 5 when the bundle is missing or broken, 6 on a checksum mismatch.
set -euo pipefail

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  [[ $# -eq 2 ]] || usage_error "needs BUNDLE DIR"
  local bundle=$1 dir=$2 sums want
  [[ -f ${bundle} ]] || fail 5 "no bundle at ${bundle}"
  sums="$(dirname "${bundle}")/SHA256SUMS"
  if [[ -f ${sums} ]]; then
    want=$(awk -v f="$(basename "${bundle}")" '$2 == f || $2 == "*" f { print $1 }' "${sums}")
    [[ -n ${want} ]] || fail 6 "${sums} has no line for $(basename "${bundle}")"
    [[ "$(sha256sum -- "${bundle}" | cut -d' ' -f1)" == "${want}" ]] || fail 6 "${bundle}: sha256 does not match ${sums}"
  fi
  git bundle verify -q "${bundle}" >/dev/null 2>&1 || fail 5 "${bundle} is not a complete git bundle"
  if [[ -d ${dir}/objects ]]; then
    git --git-dir="${dir}" fetch -q --tags -- "${bundle}" '+refs/tags/*:refs/tags/*' || fail 5 "cannot fetch from ${bundle}"
  else
    rm -rf -- "${dir}.new"
    git clone -q --bare -- "${bundle}" "${dir}.new" || fail 5 "cannot clone ${bundle}"
    mv -- "${dir}.new" "${dir}"
  fi
  printf '%s\n' "${dir}"
}

fail() {
  printf 'upstream-git.sh: %s\n' "$2" >&2
  exit "$1"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
