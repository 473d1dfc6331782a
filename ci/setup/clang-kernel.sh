#!/usr/bin/env bash
# ci/setup/clang-kernel.sh DIR: a kernel tree configured and prepared with clang
# (LLVM=1), for building external modules against it, as CachyOS's kernels
# are built (clang, lld, ThinLTO, IBT): Debian's linux-source-6.1 (the package
# must be installed; its tarball in /usr/src) with the configuration of
# Debian's kernel of the same version (linux-headers-<abi>-amd64, installed),
# switched to clang with CONFIG_LTO_CLANG_THIN and CONFIG_X86_KERNEL_IBT,
# then modules_prepare: all kbuild needs for M= builds. The export list is
# that Debian kernel's Module.symvers (NVIDIA's conftest reads it to know
# which symbols the kernel exports; making one here needs all of vmlinux, an
# hour on 2 cores): the same source and options, another compiler, so the
# modules built against the tree are a compile and link test, never loaded.
# Prints DIR/linux-source-6.1 on stdout, the tree to give build.sh as
# --kernel-src. A tree already prepared from the same inputs is reused.
# Needs clang, lld, llvm, bc, flex, bison, libelf-dev and libssl-dev. Exit 77
# when something is missing.
set -euo pipefail

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

# debian_headers: the directory of Debian's amd64 kernel headers of
# linux-source-6.1's version, or nothing.
debian_headers() {
  local want pkg d
  want=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null) || return 0
  for d in /usr/src/linux-headers-*-amd64; do
    [[ -f ${d}/.config && -f ${d}/Module.symvers ]] || continue
    pkg=$(dpkg-query -S "${d}/Module.symvers" 2>/dev/null | cut -d: -f1) || continue
    [[ "$(dpkg-query -W -f '${Version}' "${pkg}" 2>/dev/null)" == "${want}" ]] && printf '%s\n' "${d}" && return 0
  done
  return 0
}

main() {
  local dir=${1:-} tarball=/usr/src/linux-source-6.1.tar.xz tree stamp want t headers
  case ${dir} in
  -h | --help) usage && return 0 ;;
  "") usage >&2 && exit 2 ;;
  esac
  [[ -r ${tarball} ]] || die 77 "${tarball} is missing (Debian package linux-source-6.1)"
  for t in clang ld.lld llvm-ar bc flex bison; do
    command -v "${t}" >/dev/null 2>&1 || die 77 "${t} is not installed"
  done
  headers=$(debian_headers)
  [[ -n ${headers} ]] || die 77 "no Debian amd64 kernel headers of linux-source-6.1's version $(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null) (linux-headers-amd64)"
  tree="${dir}/linux-source-6.1"
  stamp="${tree}/.nvp2p-prepared"
  want="$(cat "${tarball}" "${BASH_SOURCE[0]}" "${headers}/.config" "${headers}/Module.symvers" | sha256sum | cut -c1-16) $(clang --version | head -n 1)"
  if [[ -f ${stamp} && "$(cat "${stamp}")" == "${want}" ]]; then
    printf '%s\n' "${tree}"
    return 0
  fi
  rm -rf -- "${tree}"
  mkdir -p "${dir}"
  tar -xJf "${tarball}" -C "${dir}"
  cp -- "${headers}/.config" "${tree}/.config"
  # Debian's trusted and signing keys are not in the source; nothing is signed.
  "${tree}/scripts/config" --file "${tree}/.config" --set-str SYSTEM_TRUSTED_KEYS "" \
    --set-str SYSTEM_REVOCATION_KEYS "" -d MODULE_SIG_ALL -d LTO_NONE -e LTO_CLANG_THIN -e X86_KERNEL_IBT
  make -C "${tree}" LLVM=1 olddefconfig >&2
  for t in CC_IS_CLANG LD_IS_LLD LTO_CLANG_THIN X86_KERNEL_IBT; do
    grep -q "^CONFIG_${t}=y" "${tree}/.config" || die 1 "${tree}: CONFIG_${t} is not set"
  done
  make -C "${tree}" LLVM=1 -j"$(nproc)" modules_prepare >&2
  cp -- "${headers}/Module.symvers" "${tree}/Module.symvers"
  printf '%s\n' "${want}" >"${stamp}"
  printf '%s\n' "${tree}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
