#!/usr/bin/env bash
# ci/heavy/debian-userspace.sh: Debian's real NVIDIA driver packages beside
# nvidia-p2p-dkms, inside a throwaway Debian chroot (test/real/
# debian_userspace.bats runs it there with ci/setup/chroot.sh run).
#
#   ci/heavy/debian-userspace.sh candidate DRIVER
#       adds contrib, non-free and non-free-firmware to the chroot's apt
#       sources, updates, and prints the upstream version of DRIVER that apt
#       would install (535.261.03-1 -> 535.261.03)
#   ci/heavy/debian-userspace.sh steps DRIVER KMOD TAG DEB
#       DRIVER (nvidia-driver, nvidia-tesla-535-driver) of TAG from Debian,
#       its kernel module package KMOD (nvidia-kernel-dkms, ...), then DEB
#       (nvidia-p2p-dkms of TAG, built by build.sh package) in KMOD's place
#       (apt-get autoremove would then remove nothing it would not have
#       removed before), then the suite's kernel headers: DKMS builds our
#       modules; then DEB purged and KMOD back
#
#
# Upgrade paths (test/real/apt_upgrade.bats runs them in a throwaway minbase
# chroot that has no kernel, with the kernel packages pinned out: DKMS
# registers the modules and builds nothing):
#
#   ci/heavy/debian-userspace.sh machine DRIVER
#       DRIVER of the chroot's suite with its kernel module package, then
#       nvidia-p2p-dkms from the chroot's nvidia-p2p source in that
#       package's place
#   ci/heavy/debian-userspace.sh move SUITE
#       the Debian sources to SUITE, apt-get update, then apt-get -y
#       full-upgrade; prints apt's summary (what it removes, keeps back)
#   ci/heavy/debian-userspace.sh apt ARGS...
#       apt-get -y ARGS... (--reinstall install DRIVER, remove DRIVER,
#       autoremove), noninteractive, its output printed
#   ci/heavy/debian-userspace.sh state PKG...
#       "PKG STATUS VERSION" for each (dpkg's two letters; "- -": unknown)
#   ci/heavy/debian-userspace.sh dkms-built
#       the make.log of every DKMS build (none expected)
#   ci/heavy/debian-userspace.sh modprobe-install
#       the command `modprobe nvidia` runs by the modprobe.d files now
#       (--show-depends for an empty kernel tree; it loads nothing), then
#       "file: PATH" for each modprobe.d file with an install line for
#       nvidia, in kmod's order (the first one's line is the one it runs)
#
# Kernel headers are absent while Debian's kernel module package is
# installed (its postinst then skips the DKMS build of Debian's own modules:
# minutes this test does not need); they come in once ours has taken its
# place. DKMS's compiler runs through ccache when CCACHE_DIR is set (the
# caller binds a directory kept between runs; ci/setup/ccache-compilers.sh). Prints one "PASS|FAIL step"
# line per step; exit 0 when all pass, 1 when one fails, 2 usage.
set -euo pipefail

STEP_LOG=/tmp/debian-userspace.log
# step, check_modules, loads_ours, loads_stock
# shellcheck source=ci/heavy/chroot-checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/chroot-checks.sh"

# shellcheck source=ci/helpers/usage.sh
source "$(dirname "${BASH_SOURCE[0]}")/../helpers/usage.sh"

# more_components: the chroot's release suite again with contrib, non-free
# and non-free-firmware (Debian's NVIDIA packages and the GSP firmware); not
# -security, -updates or -backports: their driver versions (bookworm-security
# has 535.309.01) are not upstream tags this project lists.
more_components() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f ${f} ]] || continue
    sed -n -E 's/^(deb .* [a-z]+) main$/\1 contrib non-free non-free-firmware/p' "${f}"
  done | sort -u >/etc/apt/sources.list.d/nvidia-components.list
  [[ -s /etc/apt/sources.list.d/nvidia-components.list ]]
}

candidate() {
  local driver=$1 v
  more_components || { echo "no deb line with main in the chroot's sources" >&2 && return 1; }
  apt-get -q update >&2
  v=$(apt-cache policy "${driver}" | sed -n 's/^  Candidate: //p')
  [[ -n ${v} && ${v} != "(none)" ]] || { echo "apt has no ${driver}" >&2 && return 1; }
  v=${v#*:}
  printf '%s\n' "${v%%-*}"
}

# installed PKG: dpkg has PKG installed (ii).
installed() { [[ "$(dpkg-query -W -f '${db:Status-Abbrev}' "$1" 2>/dev/null)" == "ii " ]]; }

# apt_clean: apt-get check finds no broken dependency.
apt_clean() { apt-get check; }

# autoremovable: what apt-get autoremove would remove now (a simulation),
# one name a line, sorted.
autoremovable() { apt-get -s autoremove | sed -n -E 's/^Remv ([^ ]+) .*/\1/p' | sort; }

# swap_in DEB: apt installs DEB in the kernel module package's place; what
# autoremove would have removed before goes to /tmp/autoremovable.before.
swap_in() {
  autoremovable >/tmp/autoremovable.before
  apt-get -y -q install "$1"
}

# apt_clean_kept: apt_clean, and apt-get autoremove would remove nothing
# more than before the swap (issue 27: it removed nvidia-kernel-support,
# nvidia-kernel-common and nvidia-modprobe, which only Debian's kernel
# module package had kept).
apt_clean_kept() {
  local more
  apt_clean || return 1
  more=$(autoremovable | comm -13 /tmp/autoremovable.before -)
  printf 'apt-get autoremove: before the swap %s; now also: %s\n' \
    "$(tr '\n' ' ' </tmp/autoremovable.before)" "$(tr '\n' ' ' <<<"${more:-nothing}")"
  [[ -z ${more} ]]
}

# firmware TAG: the GSP firmware of TAG is on disk.
firmware() { compgen -G "/lib/firmware/nvidia/$1/gsp_*.bin"; }

# preflight_says TAG: build.sh preflight names Debian's packages of TAG as
# the userspace driver, and no version mismatch with the package's modules
# (nvidia-smi --version cannot say it here: without a loaded driver it only
# prints that it could not communicate with one).
preflight_says() {
  local out
  out=$(/lab/repo/build.sh --cache-dir /tmp/nvidia-p2p-cache preflight 2>&1) || true
  printf '%s\n' "${out}"
  grep -q "userspace driver: $1 (packages: " <<<"${out}" && ! grep -q "differs from the nvidia-p2p modules" <<<"${out}"
}

# headers_in: apt installs the suite's kernel headers (linux-headers-amd64
# of the chroot's release: bookworm 6.1, trixie 6.12; not trixie-backports'
# 7.x, for which 535 and 550 do not build); DKMS's kernel hook builds ours.
headers_in() {
  [[ -z ${CCACHE_DIR:-} ]] || /lab/repo/ci/setup/ccache-compilers.sh
  apt-get -y -q install linux-headers-amd64
  built_kernel >/dev/null
}

# built_kernel: the one kernel release whose headers are installed.
built_kernel() {
  local -a k=()
  local d
  for d in /lib/modules/*/build; do
    [[ -e ${d}/Makefile ]] && k+=("$(basename "$(dirname "${d}")")")
  done
  [[ ${#k[@]} -eq 1 ]] || { echo "expected one kernel with headers, found: ${k[*]:-none}" >&2 && return 1; }
  printf '%s\n' "${k[0]}"
}

# dkms_modules TAG: DKMS's status, and check_modules TAG for the one kernel
# with headers.
dkms_modules() {
  dkms status -m nvidia-p2p
  check_modules "$(built_kernel)" "$1"
}

# no_p2p_modules: nothing of nvidia-p2p is left in DKMS or the module trees.
no_p2p_modules() {
  [[ -z "$(dkms status -m nvidia-p2p 2>/dev/null)" ]] || { dkms status -m nvidia-p2p && return 1; }
  ! compgen -G '/lib/modules/*/updates/dkms/nvidia-peermem.ko*'
}

steps() {
  local driver=$1 kmod=$2 tag=$3 deb=$4
  export DEBIAN_FRONTEND=noninteractive
  : >"${STEP_LOG}"
  step "no kernel headers while ${kmod} is in (no DKMS build of Debian's modules)" bash -c "apt-get -y -q remove 'linux-headers-*' && ! compgen -G '/lib/modules/*/build/Makefile'"
  step "apt-get install ${driver} (${tag}, with ${kmod})" apt-get -y -q install "${driver}"
  step "${driver} and ${kmod} installed" bash -c "$(declare -f installed); installed ${driver} && installed ${kmod}"
  step "stock: modprobe nvidia is Debian's" loads_stock
  step "stock: GSP firmware of ${tag}" firmware "${tag}"
  step "apt-get install ./$(basename "${deb}") (in ${kmod}'s place)" swap_in "${deb}"
  step "${driver} stays, ${kmod} removed" bash -c "$(declare -f installed); installed ${driver} && installed nvidia-p2p-dkms && ! installed ${kmod}"
  step "apt-get check; apt-get autoremove would remove nothing more than before" apt_clean_kept
  step "apt-get install linux-headers-amd64: DKMS's hook builds nvidia-p2p ${tag}" headers_in
  step "DKMS's modules: all five, version ${tag}, vermagic of the kernel, depmod picks them" dkms_modules "${tag}"
  step "modprobe nvidia loads ours, with the P2P options" loads_ours
  step "GSP firmware of ${tag} still there" firmware "${tag}"
  step "build.sh preflight: the userspace driver is Debian's ${tag}, as the modules" preflight_says "${tag}"
  step "apt-get check with the headers in; apt-get autoremove would remove nothing more than before" apt_clean_kept
  step "kernel headers out again (${kmod} comes back without a DKMS build)" bash -c "apt-get -y -q remove 'linux-headers-*' && ! compgen -G '/lib/modules/*/build/Makefile'"
  step "apt-get purge nvidia-p2p-dkms (apt brings ${kmod} back)" apt-get -y -q purge nvidia-p2p-dkms
  step "${driver} and ${kmod} installed again" bash -c "$(declare -f installed); installed ${driver} && installed ${kmod} && ! installed nvidia-p2p-dkms"
  step "no nvidia-p2p modules left (DKMS, updates/dkms)" no_p2p_modules
  step "apt-get check after purge" apt_clean
  step "modprobe nvidia is Debian's again" loads_stock
  steps_passed
}

# --- upgrade paths ---------------------------------------------------------

# no_kernels: apt never installs a kernel image or headers here, so no DKMS
# build of Debian's modules or ours can run (DKMS only registers them).
no_kernels() {
  printf 'Package: linux-image-* linux-headers-* linux-kbuild-*\nPin: version *\nPin-Priority: -1\n' \
    >/etc/apt/preferences.d/nvidia-p2p-no-kernels
}

# apt_y ARGS...: apt-get -y ARGS..., noninteractive, keeping changed conffiles.
apt_y() {
  DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confdef \
    -o Dpkg::Options::=--force-confold "$@"
}

# machine DRIVER: DRIVER from Debian with its kernel module package, then
# nvidia-p2p-dkms from the nvidia-p2p source in that package's place.
machine() {
  local driver=$1
  no_kernels
  apt-get -q update
  apt_y install "${driver}"
  apt_y install nvidia-p2p-dkms
}

# move SUITE: Debian's sources (sources.list) to SUITE, then full-upgrade.
move() {
  local suite=$1 from
  from=$(sed -n -E 's|^deb .*debian[/]? ([a-z]+) main.*|\1|p' /etc/apt/sources.list | head -n 1)
  [[ -n ${from} ]] || { echo "no Debian suite in /etc/apt/sources.list" >&2 && return 1; }
  sed -i -E "s/ ${from}( |$)/ ${suite}\1/" /etc/apt/sources.list
  cat /etc/apt/sources.list
  apt-get -q update
  apt_y full-upgrade
}

# state PKG...: dpkg's status and version of each.
state() {
  local p line
  local -a f
  for p in "$@"; do
    line=$(dpkg-query -W -f '${db:Status-Abbrev} ${Version}' "${p}" 2>/dev/null) || line="- -"
    read -r -a f <<<"${line}"
    printf '%s %s %s\n' "${p}" "${f[0]:--}" "${f[1]:--}"
  done
}

# dkms_built: what DKMS built (nothing, in these chroots).
dkms_built() { find /var/lib/dkms -name make.log 2>/dev/null; }

# modprobe_install: the install command of the modprobe.d files that
# `modprobe nvidia` runs (the first one of them, in file name order), then
# "file: PATH" for each file with an install line for nvidia, in kmod's
# order: the files of /etc, /run, /usr/local/lib, /usr/lib and /lib
# modprobe.d sorted together by name, the first directory's file of a name
# hiding the others of that name.
modprobe_install() {
  local kdir=/lib/modules/0.0.0-none rc=0 d f b
  local -A path=()
  [[ ! -e ${kdir} ]] || { echo "${kdir} exists" >&2 && return 1; }
  mkdir -p "${kdir}"
  modprobe -S "${kdir##*/}" --show-depends nvidia || rc=$?
  rmdir "${kdir}"
  rmdir /lib/modules 2>/dev/null || true
  for d in /etc/modprobe.d /run/modprobe.d /usr/local/lib/modprobe.d /usr/lib/modprobe.d /lib/modprobe.d; do
    for f in "${d}"/*.conf; do
      [[ -e ${f} && -z ${path[${f##*/}]:-} ]] || continue
      path[${f##*/}]=${f}
    done
  done
  while IFS= read -r b; do
    [[ -n ${b} ]] || continue
    if grep -q -E '^[[:space:]]*install[[:space:]]+nvidia[[:space:]]' "${path[${b}]}"; then
      printf 'file: %s\n' "${path[${b}]}"
    fi
  done < <(printf '%s\n' "${!path[@]}" | LC_ALL=C sort)
  return "${rc}"
}

main() {
  help_exit "$@"
  case "${1:-}:$#" in
  candidate:2) candidate "$2" ;;
  steps:5) steps "$2" "$3" "$4" "$5" ;;
  machine:2) machine "$2" ;;
  move:2) move "$2" ;;
  apt:*) shift && apt_y "$@" ;;
  state:*) shift && state "$@" ;;
  dkms-built:1) dkms_built ;;
  modprobe-install:1) modprobe_install ;;
  *)
    sed -n '2,48p' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
  esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
