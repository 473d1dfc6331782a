#!/usr/bin/env bash
# ci/setup/debian-run.sh: NVIDIA's userspace of a tag, from Debian's packages of
# that version, as an installer that stands in for NVIDIA's .run (which CI
# cannot download): the real nvidia-smi and libnvidia-ml of the tag, laid out
# as the .run installs them, for tests that need real userspace files (the
# GPU Operator's probe and validator against build.sh container's image).
#
#   ci/setup/debian-run.sh TAG SUITE OUT [--mirror URL]
#
# apt (on this machine, with its own sources and state in a temporary
# directory: the machine's apt is not touched) fetches nvidia-smi and
# libnvidia-ml1 of version TAG-* from SUITE's non-free (its updates and
# security too), verified by apt against the archive's signed Release files
# (debian-archive-keyring). OUT is a shell archive like the .run: `OUT
# --info` prints its "Identification: NVIDIA Accelerated Graphics Driver for
# Linux-x86_64 TAG"; run with any of the .run's options it installs, under
# $STANDIN_ROOT (default /):
#   /usr/bin/nvidia-smi                                (Debian: /usr/lib/nvidia/current/nvidia-smi)
#   /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.TAG      (Debian: .../nvidia/current/)
#   /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 -> libnvidia-ml.so.TAG
# and records its arguments in $STUB_LOG as the stand-in does. The packages'
# names, versions and sha256 are printed.
#
# Exit: 0 made, 1 apt could not fetch them (no network, no such version), 2
# usage.
set -euo pipefail
shopt -s inherit_errexit

PKGS=(nvidia-smi libnvidia-ml1)
TMP=""

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

cleanup() {
  [[ -z ${TMP} ]] || rm -rf -- "${TMP}"
}

main() {
  help_exit "$@"
  [[ $# -ge 3 ]] || usage_error "needs TAG SUITE OUT"
  local tag=$1 suite=$2 out=$3 mirror=http://deb.debian.org/debian tmp
  shift 3
  if [[ ${1:-} == --mirror ]]; then
    [[ -n ${2:-} ]] || die 2 "--mirror needs a URL"
    mirror=${2%/}
  fi
  [[ ${tag} =~ ^[0-9]+(\.[0-9]+)+$ ]] || die 2 "'${tag}' is not a driver version"
  [[ ${suite} =~ ^[a-z]+$ ]] || die 2 "'${suite}' is not a Debian suite"
  tmp=$(mktemp -d)
  TMP=${tmp}
  trap cleanup EXIT
  fetch "${tag}" "${suite}" "${mirror}" "${tmp}"
  layout "${tag}" "${tmp}/deb" "${tmp}/root"
  archive "${tag}" "${tmp}/root" "${out}"
}

# apt_opts TMP: apt's options for its own sources and state under TMP.
apt_opts() {
  printf '%s\n' -o "Dir::Etc::SourceList=$1/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o "Dir::State::Lists=$1/lists" -o "Dir::Cache::Archives=$1/archives" -o Dir::Cache::pkgcache= \
    -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root -o Debug::NoLocking=1
}

# fetch TAG SUITE MIRROR TMP: the packages of TAG into TMP/deb.
fetch() {
  local tag=$1 suite=$2 m=$3 tmp=$4 p v
  local -a opts want=()
  mkdir -p -- "${tmp}/lists/partial" "${tmp}/archives/partial" "${tmp}/deb"
  {
    printf 'deb %s %s non-free\n' "${m}" "${suite}" "${m}" "${suite}-updates"
    printf 'deb %s-security %s-security non-free\n' "${m}" "${suite}"
  } >"${tmp}/sources.list"
  mapfile -t opts < <(apt_opts "${tmp}")
  apt-get "${opts[@]}" -q update >&2 || die 1 "apt-get update of ${suite} (${m}) failed"
  for p in "${PKGS[@]}"; do
    v=$(apt-cache "${opts[@]}" madison "${p}" | awk -v t="${tag}" '{ v = $3; sub(/-[^-]*$/, "", v) } v == t { print $3; exit }')
    [[ -n ${v} ]] || die 1 "${suite} has no ${p} of version ${tag} ($(apt-cache "${opts[@]}" madison "${p}" | awk '{ print $3 }' | paste -sd ' '))"
    want+=("${p}=${v}")
  done
  (cd "${tmp}/deb" && apt-get "${opts[@]}" -q download "${want[@]}") >&2 ||
    die 1 "apt-get download ${want[*]} failed"
  (cd "${tmp}/deb" && for p in *.deb; do
    printf '%s %s %s\n' "$(dpkg-deb -f "${p}" Package)" "$(dpkg-deb -f "${p}" Version)" "$(sha256sum <"${p}" | cut -d' ' -f1)"
  done)
}

# layout TAG DEBS ROOT: the packages' files where the .run puts them.
layout() {
  local tag=$1 x="$2/x" root=$3 lib deb
  mkdir -p -- "${x}" "${root}/usr/bin" "${root}/usr/lib/x86_64-linux-gnu"
  for deb in "$2"/*.deb; do
    dpkg-deb -x "${deb}" "${x}"
  done
  lib="${x}/usr/lib/x86_64-linux-gnu/nvidia/current/libnvidia-ml.so.${tag}"
  [[ -f ${lib} && -f ${x}/usr/lib/nvidia/current/nvidia-smi ]] ||
    die 1 "the packages lack libnvidia-ml.so.${tag} or nvidia-smi where Debian puts them"
  install -m 0755 -- "${x}/usr/lib/nvidia/current/nvidia-smi" "${root}/usr/bin/nvidia-smi"
  install -m 0644 -- "${lib}" "${root}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${tag}"
  ln -s -- "libnvidia-ml.so.${tag}" "${root}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
}

# archive TAG ROOT OUT: the installer (a shell header, then ROOT as a base64 tar).
archive() {
  local tag=$1 root=$2 out=$3
  {
    cat <<EOF
#!/bin/sh
# NVIDIA's userspace of ${tag} from Debian's packages (nvidia-smi, libnvidia-ml1), made
# by ci/setup/debian-run.sh to stand in for NVIDIA-Linux-x86_64-${tag}.run in tests.
label="NVIDIA Accelerated Graphics Driver for Linux-x86_64 ${tag}"
printf 'debian-run %s\n' "\$*" >>"\${STUB_LOG:-/dev/null}"
[ "\${1:-}" = --info ] && { printf 'Identification: %s\n' "\${label}"; exit 0; }
root=\${STANDIN_ROOT:-/}
sed '1,/^__PAYLOAD__\$/d' "\$0" | base64 -d | tar -C "\${root}" -xzf - || exit 1
exit 0
__PAYLOAD__
EOF
    tar -C "${root}" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -czf - usr | base64
  } >"${out}.new"
  chmod 0755 "${out}.new"
  mv -f -- "${out}.new" "${out}"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi
