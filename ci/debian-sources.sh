#!/usr/bin/env bash
# ci/debian-sources.sh DIR: download the tarballs listed in
# ci/debian-sources.conf into DIR (kept when already there and intact):
# https, curl --fail --retry, to a temporary name, sha256 and size checked,
# then renamed. Prints DIR. Exit 5 when a download fails, 6 on a checksum
# mismatch.
set -euo pipefail

CONF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/debian-sources.conf"

main() {
  local dir=${1:?usage: ci/debian-sources.sh DIR} tag size sha url rest
  mkdir -p "${dir}"
  while read -r tag size sha url rest; do
    [[ -z ${tag} || ${tag} == \#* ]] && continue
    [[ -z ${rest} && ${sha} =~ ^[0-9a-f]{64}$ && ${size} =~ ^[0-9]+$ && ${url} == https://* ]] ||
      { printf 'debian-sources.sh: malformed line for %s in %s\n' "${tag}" "${CONF}" >&2 && exit 4; }
    fetch_one "${dir}" "${size}" "${sha}" "${url}"
  done <"${CONF}"
  printf '%s\n' "${dir}"
}

fetch_one() {
  local dir=$1 size=$2 sha=$3 url=$4 file
  file="${dir}/${url##*/}"
  if [[ -f ${file} ]] && [[ "$(sha256sum "${file}" | cut -d' ' -f1)" == "${sha}" ]]; then
    return 0
  fi
  rm -f "${file}" "${file}.part"
  if ! curl --fail --location --silent --show-error --retry 3 --proto '=https' \
    --output "${file}.part" -- "${url}"; then
    rm -f "${file}.part"
    printf 'debian-sources.sh: download failed: %s\n' "${url}" >&2
    exit 5
  fi
  if [[ "$(stat -c %s "${file}.part")" != "${size}" || "$(sha256sum "${file}.part" | cut -d' ' -f1)" != "${sha}" ]]; then
    rm -f "${file}.part"
    printf 'debian-sources.sh: %s: size or sha256 mismatch; discarded\n' "${url}" >&2
    exit 6
  fi
  mv "${file}.part" "${file}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
