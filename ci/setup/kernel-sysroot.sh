#!/usr/bin/env bash
# ci/setup/kernel-sysroot.sh DIR SERIES: headers of Debian's newest kernel of SERIES
# (e.g. 6.12: bookworm-security's linux-6.12) extracted under DIR, without
# installing anything: apt-get download (verified by apt against the signed
# index) and dpkg-deb -x. Prints the -amd64 header directory, ready for
# `build.sh build --kernel-src`. Exit 77 when the packages cannot be had.
set -euo pipefail

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  [[ $# -eq 2 ]] || usage_error "needs DIR SERIES"
  local dir=$1 series=$2
  local abi deb amd64
  abi=$(newest_abi "${series}") || { printf 'kernel-sysroot.sh: no linux-headers-%s.*-amd64 package known to apt\n' "${series}" >&2 && exit 77; }
  amd64="${dir}/usr/src/linux-headers-${abi}-amd64"
  if [[ -f ${amd64}/include/config/kernel.release ]]; then
    printf '%s\n' "${amd64}"
    return 0
  fi
  mkdir -p "${dir}/debs"
  (cd "${dir}/debs" && apt-get download -q "linux-headers-${abi}-amd64" "linux-headers-${abi}-common" \
    "linux-kbuild-${abi}" >/dev/null 2>&1) ||
    { printf 'kernel-sysroot.sh: apt-get download failed for %s\n' "${abi}" >&2 && exit 77; }
  for deb in "${dir}"/debs/*.deb; do
    dpkg-deb -x "${deb}" "${dir}"
  done
  [[ -f ${amd64}/include/config/kernel.release ]] ||
    { printf 'kernel-sysroot.sh: %s not found after extraction\n' "${amd64}" >&2 && exit 77; }
  printf '%s\n' "${amd64}"
}

# newest_abi SERIES: e.g. 6.12.117+deb12 for 6.12 (6.1 uses 6.1.0-56 style names).
newest_abi() {
  apt-cache pkgnames "linux-headers-$1." 2>/dev/null |
    sed -n -E "s/^linux-headers-($1\.[0-9]+[^-]*)-amd64\$/\1/p" | sort -V | tail -n 1 | grep .
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
