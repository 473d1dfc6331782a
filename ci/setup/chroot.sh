#!/usr/bin/env bash
# ci/setup/chroot.sh: Debian chroots to build for kernels the host's userland
# cannot build for (ci/setup/chroots.conf), made with mmdebstrap, kept between runs
# and reused only when verified. Needs root (mounts).
#
#   ci/setup/chroot.sh make NAME DIR      make (or verify and refresh) the chroot
#                                   DIR/NAME; prints its root directory
#   ci/setup/chroot.sh kernel NAME DIR    the kernel release whose headers it holds
#   ci/setup/chroot.sh run NAME DIR [--bind HOST:PATH]... -- CMD...
#                                   run CMD in it, in a private mount
#                                   namespace: /proc, /dev and the binds
#
# Reuse: a chroot made from the same recipe is used again when `dpkg
# --verify` finds every packaged file intact; then apt brings it up to date
# (a newer kernel in the suite is installed; offline, the verified chroot is
# used as it is, with a warning). Anything else: it is made again, into a
# temporary directory renamed into place when complete.
# Exit: 0 ok, 2 usage, 5 mmdebstrap or apt failed, 77 cannot run here
# (not root, no mmdebstrap, no unshare).
set -euo pipefail
shopt -s inherit_errexit

CI_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CONF="${CI_DIR}/setup/chroots.conf"
MIRROR="${NVP2P_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Suites named *-security live in their own archive.
SECURITY_MIRROR="${NVP2P_DEBIAN_SECURITY_MIRROR:-${MIRROR}-security}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
PACKAGES=(gcc g++ make kmod dwarves libc6-dev xz-utils ca-certificates git quilt ccache file bc)

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  if [[ ${1:-} == __inside ]]; then
    shift
    inside "$@"
  fi
  local cmd=${1:-} name=${2:-} dir=${3:-}
  [[ -n ${cmd} && -n ${name} && -n ${dir} ]] || { usage >&2 && exit 2; }
  shift 3
  spec "${name}" >/dev/null
  case ${cmd} in
  make) chroot_make "${name}" "${dir}" ;;
  kernel) chroot_kernel "${dir}/${name}/root" ;;
  run) chroot_run "${dir}/${name}/root" "$@" ;;
  *) usage >&2 && exit 2 ;;
  esac
}

# spec NAME: "suites headers[ extra]" of NAME from chroots.conf.
spec() {
  local name=$1 n suites headers extra rest
  while read -r n suites headers extra rest; do
    [[ -z ${n} || ${n} == \#* ]] && continue
    [[ -n ${headers} && -z ${rest} ]] || die 2 "${CONF}: malformed line for ${n}"
    [[ ${n} == "${name}" ]] && { printf '%s %s%s\n' "${suites}" "${headers}" "${extra:+ ${extra}}" && return 0; }
  done <"${CONF}"
  die 2 "no chroot '${name}' in ${CONF}"
}

# recipe NAME: everything the chroot is made from (compared before reuse).
recipe() {
  printf 'mirror=%s spec=%s packages=%s\n' "${MIRROR}" "$(spec "$1")" "${PACKAGES[*]}"
}

can_run() {
  [[ "$(id -u)" == 0 ]] || die 77 "needs root (mounts, chroot)"
  command -v mmdebstrap >/dev/null 2>&1 || die 77 "mmdebstrap is not installed (Debian package: mmdebstrap)"
  command -v unshare >/dev/null 2>&1 || die 77 "unshare is not installed (Debian package: util-linux)"
}

chroot_make() {
  local name=$1 dir=$2 base="$2/$1" suites headers extra
  can_run
  read -r suites headers extra < <(spec "${name}")
  mkdir -p "${base}"
  if [[ -d ${base}/root && "$(cat "${base}/recipe" 2>/dev/null)" == "$(recipe "${name}")" ]]; then
    if chroot_verified "${base}/root"; then
      printf 'chroot.sh: %s: reusing %s (every packaged file verified)\n' "${name}" "${base}/root" >&2
      chroot_refresh "${base}/root" "${headers}" || printf 'chroot.sh: warning: %s: apt could not refresh it (offline?); using it as it is\n' "${name}" >&2
      printf '%s\n' "${base}/root"
      return 0
    fi
    printf 'chroot.sh: %s: dpkg --verify found changed files; making it again\n' "${name}" >&2
  fi
  chroot_new "${name}" "${base}" "${suites}" "${headers}${extra:+,${extra}}"
  printf '%s\n' "${base}/root"
}

# chroot_verified ROOT: dpkg's checksums of every installed package file hold.
chroot_verified() {
  local out
  out=$(chroot "$1" dpkg --verify 2>&1) || return 1
  [[ -z ${out} ]]
}

# chroot_refresh ROOT HEADERS: apt's newest of everything, the headers
# package included (a new kernel release comes in beside the old one).
chroot_refresh() {
  local root=$1 headers=$2
  chroot_run "${root}" -- sh -c "apt-get -q update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -q -y dist-upgrade >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get -q -y install '${headers}' >/dev/null"
}

chroot_new() {
  local name=$1 base=$2 suites=$3 headers=$4 tmp suite
  local -a sources=()
  IFS=, read -r -a list <<<"${suites}"
  for suite in "${list[@]}"; do
    case ${suite} in
    *-security) sources+=("deb [signed-by=${KEYRING}] ${SECURITY_MIRROR} ${suite} main") ;;
    *) sources+=("deb [signed-by=${KEYRING}] ${MIRROR} ${suite} main") ;;
    esac
  done
  tmp="${base}/root.new"
  rm -rf -- "${tmp}"
  printf 'chroot.sh: %s: mmdebstrap %s (a few minutes)\n' "${name}" "${list[0]}" >&2
  # Check-Valid-Until: the archive snapshot behind the mirror may be older
  # than its Release files' validity; signatures are still checked.
  if ! mmdebstrap --quiet --variant=minbase --aptopt='Acquire::Check-Valid-Until "false"' \
    --aptopt='APT::Install-Recommends "false"' \
    --include="$(
      IFS=,
      printf '%s' "${PACKAGES[*]},${headers}"
    )" "${list[0]}" "${tmp}" "${sources[@]}" >&2; then
    rm -rf -- "${tmp}"
    die 5 "mmdebstrap failed for ${name}"
  fi
  rm -rf -- "${base}/root"
  mv -- "${tmp}" "${base}/root"
  recipe "${name}" >"${base}/recipe"
}

# chroot_kernel ROOT: the newest kernel release with headers in ROOT.
chroot_kernel() {
  local root=$1 d
  local -a krels=()
  for d in "${root}"/lib/modules/*/build; do
    [[ -e ${d}/Makefile ]] && krels+=("$(basename "$(dirname "${d}")")")
  done
  [[ ${#krels[@]} -gt 0 ]] || die 5 "no kernel headers in ${root}"
  printf '%s\n' "${krels[@]}" | sort -V | tail -n 1
}

# chroot_run ROOT [--bind HOST:PATH]... -- CMD...: this script again, in a
# private mount namespace (the mounts vanish with it), runs inside().
chroot_run() {
  local root=$1 b
  shift
  local -a binds=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    [[ $1 == --bind && $# -ge 2 && $2 == /*:/* ]] || die 2 "run: expected --bind HOST:PATH or --"
    binds+=("$2")
    shift 2
  done
  [[ ${1:-} == -- && $# -ge 2 ]] || die 2 "run: no command"
  shift
  [[ -d ${root} ]] || die 2 "no chroot at ${root} (run: ci/setup/chroot.sh make ...)"
  for b in "${binds[@]+"${binds[@]}"}"; do
    [[ -d ${b%%:*} ]] || die 2 "--bind ${b}: no such directory"
  done
  unshare -m --propagation private -- "${BASH_SOURCE[0]}" __inside "${root}" "${binds[@]+"${binds[@]}"}" -- "$@"
}

# inside ROOT HOST:PATH... -- CMD...: mount /proc, /dev and the binds, then
# run CMD in ROOT with a clean environment.
inside() {
  local root=$1 b
  shift
  mount -t proc proc "${root}/proc"
  mount --rbind /dev "${root}/dev"
  while [[ $1 != -- ]]; do
    b=$1
    mkdir -p "${root}/${b#*:}"
    mount --bind "${b%%:*}" "${root}/${b#*:}"
    shift
  done
  shift
  exec chroot "${root}" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
