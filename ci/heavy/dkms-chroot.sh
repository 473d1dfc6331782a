#!/usr/bin/env bash
# ci/heavy/dkms-chroot.sh: the DKMS path with real parts, in a Debian chroot (never
# the host's /lib/modules): real dkms, dpkg/apt, depmod, the kernel's
# sign-file, two kernels' headers.
#
#   ci/heavy/dkms-chroot.sh ROOT TAG CACHE WORK TAG2
#
# ROOT is a Debian chroot with dkms, gcc, g++, make, quilt, openssl, lintian,
# apt-utils, gnupg, initramfs-tools, a kernel image (K1, the oldest) and
# linux-headers for it and a newer kernel (K2), whose headers .deb is in
# /var/cache/apt/archives or in the archive;
# CACHE a build.sh cache holding the verified sources of TAG and TAG2 (a
# later tag); WORK an empty work directory. As root, in a private mount
# namespace, it:
#   1 removes the second kernel's headers (a kernel without headers)
#   2 records the module trees' state (paths, modes, sha256 of each file)
#   3 build.sh package TAG; lintian on its .deb
#   4 build.sh install TAG --kernel K1 --no-userspace, then uninstall: the
#     module trees are as in 2
#   5 build.sh package TAG2; build.sh repo: a signed apt repository of both
#     (a new key); the chroot's apt gets its key and .sources, apt-get
#     update with signature checking on
#   6 apt-get install nvidia-p2p-dkms=TAG-1 from it: DKMS builds for the
#     first kernel; modules: version, vermagic, signature against DKMS's
#     certificate, depmod picks them (modprobe --show-depends)
#   7 installs the second kernel's headers again: DKMS's kernel hook builds
#     for it; the same checks
#   8 apt-get install nvidia-p2p-dkms: the upgrade to TAG2; DKMS removes TAG
#     and builds TAG2 for both kernels; the same checks
#   9 apt-get remove of the first kernel (image, headers): DKMS's hook
#     removes its modules, its initramfs goes; the second kernel keeps its
#     modules, and its initramfs holds the package's modprobe.d files
#  10 apt-get purge: the module trees are as in 2, less the first kernel's
# Prints one "PASS|FAIL step (seconds)" line per step. Exit 0 when all pass,
# 1 when one fails, 2 usage, 77 cannot run here (not root, no unshare).
set -euo pipefail
shopt -s inherit_errexit

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

main() {
  help_exit "$@"
  if [[ ${1:-} == __inside ]]; then
    shift
    inside "$@"
    return
  fi
  [[ $# -eq 5 ]] || usage_error "needs ROOT TAG CACHE WORK TAG2"
  local root=$1 tag=$2 cache=$3 work=$4 tag2=$5 repo
  [[ "$(id -u)" == 0 ]] || die 77 "needs root (mounts, chroot)"
  command -v unshare >/dev/null 2>&1 || die 77 "unshare is not installed (util-linux)"
  [[ -x ${root}/usr/sbin/dkms ]] || die 2 "${root}: no dkms in the chroot"
  repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
  mkdir -p "${work}"
  unshare -m --propagation private -- "${BASH_SOURCE[0]}" __inside "${root}" "${repo}" "${cache}" "${work}" "${tag}" "${tag2}"
}

# inside ROOT REPO CACHE WORK TAG TAG2: mounts, then the steps in the chroot.
inside() {
  local root=$1 repo=$2 cache=$3 work=$4 tag=$5 tag2=$6 d
  mount -t proc proc "${root}/proc"
  mount --rbind /dev "${root}/dev"
  for d in repo cache work; do
    mkdir -p "${root}/lab/${d}"
  done
  mount --bind "${repo}" "${root}/lab/repo"
  mount --bind "${cache}" "${root}/lab/cache"
  mount --bind "${work}" "${root}/lab/work"
  # CCACHE_DIR: the cache's; steps() puts the chroot's compilers behind
  # ccache (ci/setup/ccache-compilers.sh), so a rerun recompiles only what changed.
  exec chroot "${root}" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CCACHE_DIR=/lab/cache/ccache \
    STEP_LOG_HOST="${work}/steps.log" \
    PATH=/usr/lib/ccache:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash /lab/repo/ci/heavy/dkms-chroot.sh __steps "${tag}" "${tag2}"
}

# Inside the chroot: where inside() bound the work directory.
readonly IN_WORK=/lab/work
STEP_LOG="${IN_WORK}/steps.log"
# step, check_modules, runs_our_install (and lib/60-sign.sh)
# shellcheck source=ci/heavy/chroot-checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/chroot-checks.sh"

# tree_state: paths, types, modes and link targets under the trees DKMS and
# build.sh change, and each file's sha256; DKMS's signing key pair aside
# (DKMS makes it at its first build and keeps it, by design).
tree_state() {
  local d
  local -a dirs=()
  for d in /lib/modules /usr/src /var/lib/dkms /etc/modprobe.d /etc/depmod.d /etc/dkms; do
    [[ -d ${d} ]] && dirs+=("${d}")
  done
  find "${dirs[@]}" -path /var/lib/dkms/mok.key -o -path /var/lib/dkms/mok.pub -o -printf '%p %y %m %l\n' | LC_ALL=C sort
  find "${dirs[@]}" -type f ! -name mok.key ! -name mok.pub -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
}

# dkms_modules KVER TAG: check_modules with DKMS's certificate, and
# `modprobe nvidia` runs our install line.
dkms_modules() {
  check_modules "$1" "$2" "${DKMS_MOK_CERT}" && runs_our_install "$1"
}

# other_kernel K1: the newest kernel other than K1 whose headers are
# installed, else (a run that stopped after removing them) whose headers
# .deb apt keeps.
other_kernel() {
  local k1=$1 d
  {
    for d in /lib/modules/*/build; do
      [[ -e ${d}/Makefile ]] && basename "$(dirname "${d}")"
    done
    find /var/cache/apt/archives -maxdepth 1 -name 'linux-headers-[0-9]*-amd64_*.deb' -printf '%f\n' |
      sed -E 's/^linux-headers-([^_]+)_.*/\1/'
  } | { grep -E '^[0-9]+\.[0-9]+\.[0-9]' | grep -v -x -F "${k1}" || true; } | sort -V | tail -n 1
}

# headers_deb KVER: the .deb of linux-headers-KVER in apt's cache (fetched
# from the archive when missing: mmdebstrap leaves the cache empty, and a new
# chroot without package lists, so apt-get update first when the download
# cannot find the version).
headers_deb() {
  local f
  f=$(find /var/cache/apt/archives -name "linux-headers-$1_*.deb" | head -n 1)
  if [[ -z ${f} ]]; then
    if ! (cd /var/cache/apt/archives && apt-get -q download "linux-headers-$1" >&2); then
      apt-get -q update >&2 || return 0
      (cd /var/cache/apt/archives && apt-get -q download "linux-headers-$1" >&2) || return 0
    fi
    f=$(find /var/cache/apt/archives -name "linux-headers-$1_*.deb" | head -n 1)
  fi
  printf '%s\n' "${f}"
}

same_state() {
  local before=$1
  tree_state >"${IN_WORK}/state-now.txt"
  diff -u "${before}" "${IN_WORK}/state-now.txt"
}

# make_repo DIR DEB...: build.sh repo DIR with the DEBs, signed with a new
# key in a GNUPGHOME of the work directory.
make_repo() {
  local dir=$1
  shift
  mkdir -p "${IN_WORK}/gnupg"
  chmod 0700 "${IN_WORK}/gnupg"
  GNUPGHOME="${IN_WORK}/gnupg" /lab/repo/build.sh --cache-dir /lab/cache --work-dir "${IN_WORK}/w" repo "${dir}" "$@" --generate-key
  GNUPGHOME="${IN_WORK}/gnupg" gpgconf --kill gpg-agent || true
}

# apt_source REPO: the chroot's apt takes the repository build.sh repo made
# in REPO (its key as Signed-By, its .sources), then updates with every
# signature checked (a failure is an error).
apt_source() {
  cp "$1/nvidia-p2p-archive-keyring.gpg" /usr/share/keyrings/
  cp "$1/nvidia-p2p.sources" /etc/apt/sources.list.d/
  cat /etc/apt/sources.list.d/nvidia-p2p.sources
  apt-get update --error-on=any
  apt-cache policy nvidia-p2p-dkms
}

# only_version TAG: DKMS knows nvidia-p2p in version TAG and no other.
only_version() {
  local st
  st=$(dkms status -m nvidia-p2p)
  printf '%s\n' "${st}"
  [[ -n ${st} ]] && ! grep -v -q "^nvidia-p2p/$1" <<<"${st}"
}

# kernel_gone GONE KEPT TAG: after the removal of kernel GONE's packages,
# DKMS lists nothing for GONE, GONE has no module tree of ours and no
# initramfs; KEPT still has DKMS's modules of TAG (dkms_modules) and its
# initramfs, which holds the package's modprobe.d files (the trigger
# updated it).
kernel_gone() {
  local gone=$1 kept=$2 tag=$3 st list f
  st=$(dkms status -m nvidia-p2p)
  printf '%s\n' "${st}"
  ! grep -q -F ", ${gone}, " <<<"${st}" || { echo "DKMS still lists ${gone}" && return 1; }
  grep -q -F ", ${kept}, " <<<"${st}" || { echo "DKMS lists nothing for ${kept}" && return 1; }
  [[ ! -e /lib/modules/${gone}/updates/dkms ]] || { ls -lR "/lib/modules/${gone}" && return 1; }
  [[ ! -e /boot/initrd.img-${gone} ]] || { echo "/boot/initrd.img-${gone} is still there" && return 1; }
  ls -l /boot /lib/modules
  dkms_modules "${kept}" "${tag}" || return 1
  list=$(lsinitramfs "/boot/initrd.img-${kept}") || return 1
  for f in nvidia-p2p.conf nvidia-p2p-load.conf; do
    grep -E "(^|/)lib/modprobe\.d/${f//./\\.}\$" <<<"${list}" || { echo "initrd.img-${kept} has no modprobe.d/${f}" && return 1; }
  done
}

# after_purge GONE KEPT: KEPT's headers removed again (as at the start), the
# module trees are those of the start less the removed kernel GONE's (its
# module tree and headers).
after_purge() {
  local gone=$1 kept=$2
  DEBIAN_FRONTEND=noninteractive apt-get remove -y "linux-headers-${kept}" >/dev/null
  without_kernel "${gone}" <"${IN_WORK}/state-before.txt" >"${IN_WORK}/state-before-less.txt"
  same_state "${IN_WORK}/state-before-less.txt"
}

# without_kernel KVER: tree_state's lines on stdin, less those of KVER's
# module tree and headers.
without_kernel() {
  awk -v m="/lib/modules/$1" -v h="/usr/src/linux-headers-$1" '
    { p = (substr($0, 1, 1) == "/") ? $1 : $2 }
    p == m || p == h || index(p, m "/") == 1 || index(p, h "/") == 1 { next }
    { print }'
}

steps() {
  local tag=$1 tag2=$2 k1 k2 hdr2 deb repo="${IN_WORK}/repo"
  : >"${STEP_LOG}"
  # K1: the oldest kernel whose image is installed (update-initramfs needs
  # one; bookworm's 6.12 headers now pull in their image too); K2: the newest
  # other one (the kernel update), whose headers come and go.
  k1=$(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | head -n 1)
  k2=$(other_kernel "${k1}")
  [[ -n ${k1} && -n ${k2} ]] || { echo "need a kernel image and a second kernel's headers" >&2 && return 1; }
  hdr2=$(headers_deb "${k2}")
  [[ -n ${hdr2} ]] || { echo "no .deb of linux-headers-${k2} (apt-get download failed)" >&2 && return 1; }
  printf 'kernels: %s and %s (headers .deb %s); dkms %s\n' "${k1}" "${k2}" "${hdr2}" "$(dkms --version)"
  # not a step: a speed-up of this throwaway chroot, not something under test
  /lab/repo/ci/setup/ccache-compilers.sh >>"${IN_WORK}/steps.log" 2>&1 || true
  step "configure the chroot" dpkg --configure -a
  step "remove the headers of ${k2}" env DEBIAN_FRONTEND=noninteractive apt-get remove -y "linux-headers-${k2}"
  step "a userspace driver of ${tag} and its GSP firmware (stand-in files)" bash -c "mkdir -p /usr/lib/x86_64-linux-gnu /lib/firmware/nvidia/${tag} && : >/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.${tag} && : >/lib/firmware/nvidia/${tag}/gsp_ga10x.bin"
  tree_state >"${IN_WORK}/state-before.txt"
  step "build.sh package ${tag}" /lab/repo/build.sh --cache-dir /lab/cache --work-dir "${IN_WORK}/w" package "${tag}" --out "${IN_WORK}/out"
  deb="${IN_WORK}/out/nvidia-p2p-dkms_${tag}-1_amd64.deb"
  step "lintian (errors and warnings fail; overrides in the package say why)" lintian --fail-on error,warning --info --display-info "${deb}"
  step "build.sh install ${tag} --kernel ${k1} (real dkms, depmod, initramfs)" /lab/repo/build.sh --cache-dir /lab/cache --work-dir "${IN_WORK}/w" --yes install "${tag}" --kernel "${k1}" --no-userspace
  step "modules of ${k1} after build.sh install" dkms_modules "${k1}" "${tag}"
  step "build.sh uninstall" /lab/repo/build.sh --cache-dir /lab/cache --work-dir "${IN_WORK}/w" --yes uninstall
  step "after uninstall the module trees are as before" same_state "${IN_WORK}/state-before.txt"
  step "build.sh package ${tag2}" /lab/repo/build.sh --cache-dir /lab/cache --work-dir "${IN_WORK}/w" package "${tag2}" --out "${IN_WORK}/out"
  step "build.sh repo: a signed apt repository of ${tag} and ${tag2}" make_repo "${repo}" "${deb}" "${IN_WORK}/out/nvidia-p2p-dkms_${tag2}-1_amd64.deb"
  step "apt source: the repository's key and .sources; apt-get update checks its signature" apt_source "${repo}"
  step "apt-get install nvidia-p2p-dkms=${tag}-1 from the repository (DKMS builds for ${k1})" env DEBIAN_FRONTEND=noninteractive apt-get install -y "nvidia-p2p-dkms=${tag}-1"
  step "modules of ${k1}: version, vermagic, signature, depmod's choice" dkms_modules "${k1}" "${tag}"
  step "no modules for ${k2} (no headers)" bash -c "! ls /lib/modules/${k2}/updates/dkms/nvidia.ko* 2>/dev/null"
  step "install the headers of ${k2}: DKMS's hook builds for it" dpkg -i "${hdr2}"
  step "modules of ${k2}: version, vermagic, signature, depmod's choice" dkms_modules "${k2}" "${tag}"
  step "modules of ${k1} still there" dkms_modules "${k1}" "${tag}"
  step "apt-get install nvidia-p2p-dkms: the upgrade to ${tag2} (DKMS rebuilds for both kernels)" env DEBIAN_FRONTEND=noninteractive apt-get install -y nvidia-p2p-dkms
  step "modules of ${k1} after the upgrade: version ${tag2}" dkms_modules "${k1}" "${tag2}"
  step "modules of ${k2} after the upgrade: version ${tag2}" dkms_modules "${k2}" "${tag2}"
  step "DKMS holds ${tag2} only (the upgrade removed ${tag})" only_version "${tag2}"
  step "apt-get remove the first kernel ${k1} (image and headers)" env DEBIAN_FRONTEND=noninteractive apt-get remove -y "linux-image-${k1}" "linux-headers-${k1}"
  step "kernel ${k1} removed: DKMS, its module tree and its initramfs follow; ${k2} keeps its modules and its initramfs our modprobe.d files" kernel_gone "${k1}" "${k2}" "${tag2}"
  step "apt-get purge nvidia-p2p-dkms" env DEBIAN_FRONTEND=noninteractive apt-get purge -y nvidia-p2p-dkms
  step "after purge the module trees are as before, less ${k1}'s (headers of ${k2} back)" after_purge "${k1}" "${k2}"
  steps_passed
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  if [[ ${1:-} == __steps ]]; then
    shift
    steps "$@"
  else
    main "$@"
  fi
fi
