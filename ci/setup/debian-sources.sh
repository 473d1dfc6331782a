#!/usr/bin/env bash
# ci/setup/debian-sources.sh DIR: download the tarballs listed in
# ci/setup/debian-sources.conf into DIR (kept when already there and intact), with
# build.sh's download (https, curl --fail --retry, temporary name), then size
# and sha256 checked before the rename. Prints DIR. Exit 4 on a malformed
# line, 5 when a download fails, 6 on a checksum mismatch.
set -euo pipefail
shopt -s inherit_errexit

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
REPO_DIR="$(dirname "${CI_DIR}")"
CONF="${CI_DIR}/setup/debian-sources.conf"
# Reuse build.sh's download, sha256_of and die; its main does not run when sourced.
# shellcheck source=build.sh
source "${REPO_DIR}/build.sh"
P2P_PROG="debian-sources.sh"

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  [[ $# -eq 1 ]] || usage_error "needs DIR"
  local dir=$1 tag size sha url rest
  mkdir -p "${dir}"
  while read -r tag size sha url rest; do
    [[ -z ${tag} || ${tag} == \#* ]] && continue
    [[ -z ${rest} && ${sha} =~ ^[0-9a-f]{64}$ && ${size} =~ ^[0-9]+$ && ${url} == https://* ]] ||
      die "${EX_DATA}" "malformed line for ${tag} in ${CONF}"
    fetch_one "${dir}" "${size}" "${sha}" "${url}"
  done <"${CONF}"
  printf '%s\n' "${dir}"
}

fetch_one() {
  local dir=$1 size=$2 sha=$3 url=$4 file
  file="${dir}/${url##*/}"
  if [[ -f ${file} && "$(sha256_of "${file}")" == "${sha}" ]]; then
    return 0
  fi
  rm -f -- "${file}" "${file}.new"
  download "${url}" "${file}.new"
  if [[ "$(stat -c %s -- "${file}.new")" != "${size}" || "$(sha256_of "${file}.new")" != "${sha}" ]]; then
    rm -f -- "${file}.new"
    die "${EX_CHECKSUM}" "${url}: size or sha256 mismatch; discarded"
  fi
  mv -- "${file}.new" "${file}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
