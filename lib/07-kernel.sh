# shellcheck shell=bash
# lib/07-kernel.sh: the target kernel: its release, its headers (or a kernel
# build directory), and the package that would give the headers.

# resolve_kernel: set P2P_KREL, P2P_SYSSRC and P2P_SYSOUT from --kernel or
# --kernel-src (default: the running kernel's installed headers).
P2P_KREL=""
P2P_SYSSRC=""
P2P_SYSOUT=""

resolve_kernel() {
  [[ -n ${P2P_KREL} ]] && return 0
  if [[ -n ${P2P_KERNEL_SRC} ]]; then
    resolve_kernel_src "${P2P_KERNEL_SRC}"
  else
    resolve_kernel_headers "${P2P_KERNEL:-$(uname -r)}"
  fi
  verbose "kernel ${P2P_KREL}: SYSSRC=${P2P_SYSSRC} SYSOUT=${P2P_SYSOUT}"
}

set_kernel_target() {
  P2P_KREL=$1
  P2P_SYSSRC=$2
  P2P_SYSOUT=$3
}

# have_kernel_headers KVER: the headers of kernel KVER are installed.
have_kernel_headers() {
  [[ -e ${P2P_ROOT}/lib/modules/$1/build/Makefile ]]
}

resolve_kernel_headers() {
  local kver=$1 modlib
  modlib="${P2P_ROOT}/lib/modules/${kver}"
  if ! have_kernel_headers "${kver}"; then
    die "${EX_PREFLIGHT}" "no kernel headers for ${kver} (${modlib}/build); install them first: $(headers_package_hint "${kver}")"
  fi
  P2P_SYSOUT=$(readlink -f "${modlib}/build")
  if [[ -e ${modlib}/source/Makefile ]]; then
    P2P_SYSSRC=$(readlink -f "${modlib}/source")
  else
    P2P_SYSSRC=${P2P_SYSOUT}
  fi
  P2P_KREL=$(kernel_release_of "${P2P_SYSOUT}") || P2P_KREL=${kver}
}

# headers_package_hint KVER: how to get the headers of KVER: the package of
# this distribution; for a kernel whose release is no distribution's
# (distro_kernel), no package has them: its own build tree, --kernel-src.
headers_package_hint() {
  local id=""
  if ! distro_kernel "$1"; then
    printf 'no distribution packages headers for %s (not a distribution kernel'"'"'s release): build against the tree it was built in, with its .config and Module.symvers: --kernel-src DIR' "$1"
    return 0
  fi
  if [[ -r ${P2P_ROOT}/etc/os-release ]]; then
    id=$(sed -n -E 's/^ID_LIKE=|^ID=//p' "${P2P_ROOT}/etc/os-release" | tr -d '"' | tr '\n' ' ')
  fi
  case " ${id} " in
  *" debian "* | *" ubuntu "*) printf 'apt-get install linux-headers-%s' "$1" ;;
  *" fedora "* | *" rhel "*) printf 'dnf install kernel-devel-%s' "$1" ;;
  *) printf 'the kernel headers package for %s' "$1" ;;
  esac
}

# distro_kernel KVER: KVER is named as distributions name their kernels:
# Debian and Ubuntu (6.1.0-56-amd64, 6.8.0-45-generic, 6.12.38+deb13-amd64,
# 6.12.12+bpo-amd64), Fedora and RHEL (6.11.4-301.fc41.x86_64,
# 5.14.0-427.13.1.el9_4.x86_64), Arch and its kin (6.10.10-arch1-1,
# 6.12.1-zen1-1-zen, 6.12.1-1-cachyos, 6.6.63-1-lts), openSUSE (6.4.0-150600.23-default).
# A kernel built by hand (6.18.44-fc-v1294) is none of them.
distro_kernel() {
  local v='[0-9]+\.[0-9]+(\.[0-9]+)?'
  [[ $1 =~ ^${v}-[0-9]+(\.[0-9]+)*-[a-z][a-z0-9-]*$ ||
    $1 =~ ^${v}\+(deb[0-9]+(u[0-9]+)?|bpo)-[a-z][a-z0-9-]*$ ||
    $1 =~ ^${v}-[0-9][0-9.]*\.(fc|el)[0-9][0-9_.]*\.(x86_64|aarch64|noarch)(\+[a-z]+)?$ ||
    $1 =~ ^${v}-(arch|zen|hardened|lts)[0-9]*-[0-9]+(-[a-z]+)?$ ||
    $1 =~ ^${v}-[0-9]+-(lts|cachyos|zen|hardened)[a-z0-9-]*$ ]]
}

# kernel_release_of DIR: the release modules built against DIR carry in their
# vermagic: UTS_RELEASE (Debian's include/config/kernel.release holds the
# upstream version instead, e.g. 6.1.192 for 6.1.0-56-amd64).
kernel_release_of() {
  local uts="$1/include/generated/utsrelease.h" rel="$1/include/config/kernel.release" r=""
  if [[ -r ${uts} ]]; then
    r=$(sed -n -E 's/^#define UTS_RELEASE "([^"]+)".*/\1/p' "${uts}")
  fi
  if [[ -z ${r} && -r ${rel} ]]; then
    r=$(head -n 1 "${rel}")
  fi
  [[ -n ${r} ]] && printf '%s\n' "${r}"
}

# resolve_kernel_src DIR: a kernel output directory. Debian's -amd64 header
# directory has "include <-common>/Makefile" in its Makefile (on line 1 up to
# 6.12; from 7.x after a "KBUILD_OUTPUT=<itself>" line); when that path does
# not exist (headers extracted from .debs elsewhere) the -common sibling is
# used through a shadow copy of DIR with both lines fixed.
resolve_kernel_src() {
  local dir inc common
  dir=$(readlink -f "$1") || die "${EX_PREFLIGHT}" "--kernel-src $1: no such directory"
  [[ -f ${dir}/Makefile ]] || die "${EX_PREFLIGHT}" "--kernel-src ${dir}: no Makefile; not a kernel build directory"
  P2P_KREL=$(kernel_release_of "${dir}") ||
    die "${EX_PREFLIGHT}" "--kernel-src ${dir}: no include/generated/utsrelease.h or include/config/kernel.release; not a prepared kernel build directory"
  P2P_SYSOUT=${dir}
  P2P_SYSSRC=${dir}
  if [[ -e ${dir}/source/Makefile ]]; then
    P2P_SYSSRC=$(readlink -f "${dir}/source")
    return 0
  fi
  # an absolute path: a kernel's own source tree includes $(srctree)/...
  inc=$(sed -n -E 's/^include[[:space:]]+(\/[^$]*)\/Makefile[[:space:]]*$/\1/p' "${dir}/Makefile" | head -n 1)
  [[ -n ${inc} ]] || return 0
  if [[ -f ${inc}/Makefile ]]; then
    P2P_SYSSRC=${inc}
    return 0
  fi
  common="$(dirname "${dir}")/$(basename "${inc}")"
  [[ -f ${common}/Makefile ]] ||
    die "${EX_PREFLIGHT}" "--kernel-src ${dir}: its Makefile includes ${inc}, which is missing, and so is ${common}"
  P2P_SYSSRC=${common}
  P2P_SYSOUT=$(shadow_sysout "${dir}" "${common}")
}

# shadow_sysout DIR COMMON: copy of DIR whose Makefile includes COMMON (and
# names the copy as its KBUILD_OUTPUT), and whose top-level symlinks (scripts,
# tools) point where the originals do.
shadow_sysout() {
  local dir=$1 common=$2 shadow link
  shadow="${P2P_WORK_DIR}/kernels/$(basename "${dir}")"
  if [[ ${P2P_DRY_RUN} -eq 0 ]]; then
    rm -rf -- "${shadow}"
    mkdir -p "$(dirname "${shadow}")"
    cp -a -- "${dir}" "${shadow}"
    while IFS= read -r link; do
      ln -sfn -- "$(readlink -f "${dir}/${link##*/}")" "${link}"
    done < <(find "${shadow}" -mindepth 1 -maxdepth 1 -type l)
    sed -E -e "s|^include[[:space:]]+.*/Makefile[[:space:]]*\$|include ${common}/Makefile|" \
      -e "s|^KBUILD_OUTPUT[[:space:]]*:?=.*|KBUILD_OUTPUT=${shadow}|" "${dir}/Makefile" >"${shadow}/Makefile"
  fi
  printf '%s\n' "${shadow}"
}
