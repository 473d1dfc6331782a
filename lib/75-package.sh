# shellcheck shell=bash
# lib/75-package.sh: `build.sh package`: a Debian package of the DKMS source,
# built once, installed on many machines with `apt install ./file.deb`.
#
# nvidia-p2p-dkms_<tag>-<rev>_amd64.deb holds:
#   /usr/src/nvidia-p2p-<tag>/           the DKMS payload (lib/10-payload.sh)
#   /usr/lib/modprobe.d/nvidia-p2p.conf  the family's P2P options (not a
#                                        conffile: a file of that name in
#                                        /etc/modprobe.d overrides it)
#   /usr/lib/modprobe.d/nvidia-p2p-load.conf  the install lines that make
#                                        modprobe nvidia load ours (not a
#                                        conffile either)
#   /etc/depmod.d/nvidia-p2p.conf        the depmod override for updates/dkms
#                                        (the only conffile)
#   /usr/share/doc/nvidia-p2p-dkms/      copyright, changelog
# apt remove takes everything of modprobe.d away (deb_tree says why).
# Its maintainer scripts hand the build to DKMS, as Debian's dh_dkms packages
# do: postinst adds the module and builds it for every installed kernel with
# headers, prerm removes it from every kernel; preinst, postinst and postrm
# remove the conffile /etc/modprobe.d/nvidia-p2p.conf of older packages
# (deb_rm_conffile). Architecture amd64: the payload carries x86-64 objects
# (nv-kernel.o_binary). Built with dpkg-deb alone, so any Debian or Ubuntu
# machine can make it.

# The install lines of modprobe_install_lines, in a file that is not a
# conffile (deb_tree). Its name sorts before Debian's nvidia.conf
# (LC_ALL=C: '-' before '.'), as kmod orders the files of /etc, /run and
# /usr/lib/modprobe.d together, by name.
readonly PKG_MODPROBE_LOAD="usr/lib/modprobe.d/nvidia-p2p-load.conf"
# The P2P options (modprobe_conf_text --no-install), not a conffile either;
# an admin's /etc/modprobe.d/nvidia-p2p.conf overrides it as a whole (kmod:
# a file of /etc hides the file of the same name in /usr/lib).
readonly PKG_MODPROBE_OPTS="usr/lib/modprobe.d/nvidia-p2p.conf"
# Where packages built before that shipped the options as a conffile.
readonly PKG_OLD_CONFFILE="/etc/modprobe.d/nvidia-p2p.conf"
# Packages that put NVIDIA kernel modules on the system, which must not be
# loadable beside ours: Debian's DKMS packages (proprietary, open, Tesla;
# nvidia-kernel-dkms-any is the virtual name they provide), the names of
# NVIDIA's own repositories (Debian: nvidia-kernel-open-dkms; Ubuntu from
# 590: nvidia-dkms, nvidia-dkms-open) and the virtual package Ubuntu's
# nvidia-dkms-<branch> provide. No Replaces: no file is shared. No Breaks:
# Conflicts already keeps them apart.
readonly PKG_CONFLICTS="nvidia-kernel-dkms, nvidia-kernel-dkms-any, nvidia-open-kernel-dkms, nvidia-kernel-open-dkms, nvidia-tesla-kernel-dkms, nvidia-dkms-kernel, nvidia-dkms, nvidia-dkms-open"

help_package() {
  usage_synopsis package
  cat <<'EOF'

Build a package of the DKMS source of driver <tag> with PCIe P2P, for the
package manager of your distribution, to install on any number of machines.
Runs as a normal user (--format arch: must). Prints the package's path on
stdout (arch and rpm: then the recipe's). The userspace driver is not in it:
your distribution's packages of exactly <tag>, or NVIDIA's .run of <tag>
with --no-kernel-modules; `build.sh preflight` reports a mismatch.
docs/install.md has a section per distribution.

--format deb (the default): nvidia-p2p-dkms_<tag>-<N>_amd64.deb for Debian
and Ubuntu, `apt install ./nvidia-p2p-dkms_<tag>-<N>_amd64.deb`: fetch and
verify the source, patch, build the two kernel-independent objects (no kernel
headers needed), then package them with kernel-open, a dkms.conf, the P2P
module options (/usr/lib/modprobe.d/nvidia-p2p.conf), the install lines that
make modprobe load these modules (/usr/lib/modprobe.d/nvidia-p2p-load.conf)
and the depmod override (the conffile /etc/depmod.d/nvidia-p2p.conf). `apt
remove` takes the modules and both modprobe.d files away, so no P2P option is
left for the distribution's module. To change the options (e.g. switch P2P
off without a rebuild): copy /usr/lib/modprobe.d/nvidia-p2p.conf to
/etc/modprobe.d/ and edit the copy (it overrides the package's file, and
stays yours: delete it before you remove the package), then
update-initramfs -u and reboot. An upgrade from a package built before this
layout removes its conffile /etc/modprobe.d/nvidia-p2p.conf (changed by you:
kept as .dpkg-bak, which modprobe does not read). On each machine apt hands
the build to DKMS: modules for every installed kernel with headers now, and
for every new kernel later, signed with DKMS's key. The package conflicts
with the distributions' NVIDIA kernel module packages (nvidia-kernel-dkms,
nvidia-open-kernel-dkms, Ubuntu's nvidia-dkms-*) and provides
nvidia-kernel-<tag> / nvidia-open-kernel-<tag>, so Debian's driver packages
of <tag> (nvidia-driver, nvidia-tesla-535-driver) take it for their kernel
modules; it recommends the GSP firmware package of <tag>
(firmware-nvidia-gsp-<tag>, Ubuntu's nvidia-firmware-<branch>-<tag>), and
keeps what the distribution's kernel module package kept (its support
package, the driver) from apt-get autoremove without installing them.

--format arch: for Arch Linux and CachyOS, the directory
nvidia-p2p-dkms-<tag>-<N>-arch/ (a PKGBUILD and its sources: NVIDIA's
tarball of <tag> made from the verified source, the family's patches, the
module options and depmod files) and the package makepkg builds from it,
nvidia-p2p-dkms-<tag>-<N>-x86_64.pkg.tar.zst (`pacman -U` it). The PKGBUILD
checks the source's git tree id against the pin before it patches, applies
the series at fuzz 0 and builds the objects, as build.sh does. The package
provides NVIDIA-MODULE and nvidia-open-dkms=<tag>, conflicts with
nvidia-open-dkms and the other module packages, and depends on dkms and
nvidia-utils=<tag>. Needs makepkg, zstd, git, binutils, make and a C
compiler; makepkg refuses to run as root.

--format rpm: for Fedora and RHEL, nvidia-p2p-dkms-<tag>-<N>.src.rpm (a
spec and its sources, as above) and the binary RPM rpmbuild makes from it,
nvidia-p2p-dkms-<tag>-<N>.x86_64.rpm (`dnf install ./...rpm`). It provides
nvidia-kmod = 3:<tag>, which the userspace packages of negativo17, NVIDIA's
repositories and RPM Fusion require, conflicts with their kernel module
packages (akmod-nvidia, kmod-nvidia*, dkms-nvidia*), and its %post has DKMS
build the modules for every kernel with headers. Needs rpmbuild, git,
binutils, make, xz and a C compiler.

  --format FORMAT  deb (default), arch or rpm
  --revision N     the package's revision (default 1): <tag>-N. deb: digits
                   first, then letters, digits, . + ~; arch: digits, one
                   optional .digits; rpm: letters, digits, . + ~ _
  --out DIR        where to write (default: the current directory)
  --source PATH    the upstream source, as for fetch
  --no-ccache      do not use ccache (deb)
  --nvlink MODE    keep: NVLink for GPU pairs joined by a bridge, BAR1 P2P for
                   the others (the default); off: BAR1 P2P for every pair. It
                   goes into /usr/lib/modprobe.d/nvidia-p2p.conf (to change
                   it: a copy in /etc/modprobe.d, as above).
  Maintainer (deb) and packager (arch, rpm): $DEBFULLNAME <$DEBEMAIL> when
  set (Debian's convention).
EOF
}

cmd_package() {
  local tag=""
  parse_stage_args package tag "$@"
  require_tag "${tag}"
  package_check_args
  case ${P2P_FORMAT} in
  deb)
    need_cmd dpkg-deb dpkg
    need_cmd make make
    package_build "${tag}"
    stage finished "${P2P_DEB}"
    printf '%s\n' "${P2P_DEB}"
    ;;
  arch)
    arch_preflight
    arch_userspace_check "${tag}"
    arch_package "${tag}"
    stage finished "${P2P_PKG_NAME} ${tag}-${P2P_REVISION} for Arch"
    ;;
  rpm)
    rpm_preflight
    rpm_userspace_check "${tag}"
    rpm_package "${tag}"
    stage finished "${P2P_PKG_NAME} ${tag}-${P2P_REVISION} RPM"
    ;;
  esac
}

# package_check_args: --format and --revision (its syntax is the format's),
# before anything is fetched or written.
package_check_args() {
  case ${P2P_FORMAT} in
  deb)
    [[ ${P2P_REVISION} =~ ^[0-9][A-Za-z0-9.+~]*$ ]] ||
      die "${EX_USAGE}" "--revision '${P2P_REVISION}' is not a Debian revision (digits first, then letters, digits, . + ~)"
    ;;
  arch)
    [[ ${P2P_REVISION} =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
      die "${EX_USAGE}" "--revision '${P2P_REVISION}' is not an Arch pkgrel (digits, one optional .digits)"
    ;;
  rpm)
    [[ ${P2P_REVISION} =~ ^[A-Za-z0-9._+~]+$ ]] ||
      die "${EX_USAGE}" "--revision '${P2P_REVISION}' is not an RPM release (letters, digits, . + ~ _)"
    ;;
  *) die "${EX_USAGE}" "--format ${P2P_FORMAT}: not a package format (deb, arch or rpm)" ;;
  esac
}

# package_build TAG [OUT]: fetch and verify, patch, the kernel-independent
# objects, the DKMS payload, then the package in OUT (default: --out, else
# the current directory). Sets P2P_DEB to its path.
P2P_DEB=""
package_build() {
  local tag=$1
  pkg_source_ready "${tag}"
  build_objects "${tag}"
  [[ ${P2P_DRY_RUN} -eq 1 ]] ||
    check_endbr "${P2P_OBJECTS_DIR}" "DKMS links them into modules for any kernel, those with IBT (CONFIG_X86_KERNEL_IBT) included"
  make_payload "${tag}" "${P2P_OBJECTS_DIR}"
  P2P_DEB=$(deb_build "${tag}" "${2:-}")
}

# build_objects TAG: the two kernel-independent objects of the patched tree,
# built with upstream's own rules (the top-level Makefile's .o_binary targets)
# in <work>/<tag>/objects, or taken from a kernel build of the same patched
# tree and compilers. Sets P2P_OBJECTS_DIR (a tree holding them).
P2P_OBJECTS_DIR=""
build_objects() {
  local tag=$1 cc fingerprint dir other rc=0
  local -a make_args
  cc=$(kernel_cc "${P2P_SYSOUT:-/nonexistent}")
  fingerprint=$(build_fingerprint "${cc}")
  for other in "${P2P_WORK_DIR}/${tag}"/build-* "${P2P_WORK_DIR}/${tag}/objects"; do
    [[ -f ${other}/${BUILD_STAMP} ]] || continue
    [[ "$(cut -d' ' -f1 "${other}/${BUILD_STAMP}")" == "${fingerprint}" ]] || continue
    objects_present "${other}" || continue
    verbose "kernel-independent objects from ${other}"
    P2P_OBJECTS_DIR=${other}
    return 0
  done
  dir="${P2P_WORK_DIR}/${tag}/objects"
  make_args=(-C "${dir}" "-j$(nproc_or_1)" kernel-open/nvidia/nv-kernel.o_binary
    kernel-open/nvidia-modeset/nv-modeset-kernel.o_binary)
  make_cc "${cc}"
  make_args+=("CC=${P2P_MAKE_CC}")
  stage objects "${tag}: nv-kernel.o and nv-modeset-kernel.o with ${cc}$(ccache_note) (kernel-independent; about 3 minutes on 2 idle cores, empty ccache)"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would run: make %s\n' "$(quote_cmd "${make_args[@]}")"
    P2P_OBJECTS_DIR=${dir}
    return 0
  fi
  rm -rf -- "${dir}"
  mkdir -p "$(dirname "${dir}")"
  cp -a -- "${P2P_PATCHED_DIR}" "${dir}"
  run_logged make "${make_args[@]}" || rc=$?
  if [[ ${rc} -ne 0 ]] || ! objects_present "${dir}"; then
    show_build_errors
    die "${EX_BUILD}" "building the kernel-independent objects of ${tag} failed (make exit ${rc}); full log: ${P2P_LOG_FILE:-none}"
  fi
  printf '%s objects' "${fingerprint}" >"${dir}/${BUILD_STAMP}"
  P2P_OBJECTS_DIR=${dir}
}

objects_present() {
  local obj
  for obj in ${P2P_KERNEL_OBJECTS}; do
    [[ -s $1/${obj} ]] || return 1
  done
}

# deb_version TAG: <tag>-<revision>.
deb_version() { printf '%s-%s\n' "$1" "${P2P_REVISION}"; }

# deb_file VERSION: the package's file name for VERSION.
deb_file() { printf '%s_%s_amd64.deb\n' "${P2P_PKG_NAME}" "$1"; }

# deb_build TAG [OUT]: the package from the payload, in OUT (default: --out,
# else the current directory); prints its path.
deb_build() {
  local tag=$1 stagedir out deb
  out=${2:-${P2P_OUT:-$(pwd -P)}}
  deb="${out}/$(deb_file "$(deb_version "${tag}")")"
  stage package "${deb##*/}"
  if [[ ${P2P_DRY_RUN} -eq 1 ]]; then
    printf 'would build %s with dpkg-deb from %s\n' "${deb}" "$(payload_dir "${tag}")" >&2
    printf '%s\n' "${deb}"
    return 0
  fi
  stagedir="${P2P_WORK_DIR}/${tag}/deb"
  rm -rf -- "${stagedir}"
  deb_tree "${tag}" "${stagedir}"
  mkdir -p "${out}"
  mk_temp_file "${out}"
  # dpkg-deb clamps every member's time to SOURCE_DATE_EPOCH: the changelog's date.
  SOURCE_DATE_EPOCH=$(pkg_epoch) run_logged dpkg-deb --root-owner-group -Zxz --build "${stagedir}" "${P2P_TMP}" ||
    die "${EX_BUILD}" "dpkg-deb could not build the package; see ${P2P_LOG_FILE:-the output above}"
  mv -f -- "${P2P_TMP}" "${deb}"
  rm -rf -- "${stagedir}"
  printf '%s\n' "${deb}"
}

# deb_tree TAG DIR: the package's file tree and DEBIAN/ control area.
# The options go into PKG_MODPROBE_OPTS, the install lines
# (modprobe_install_lines) into PKG_MODPROBE_LOAD: neither is a conffile.
# `apt remove nvidia-p2p-dkms` (which apt also runs itself when a
# distribution upgrade installs the distribution's kernel module package in
# its place) leaves the conffiles, and kmod hands the options of module
# nvidia to whichever install line runs for it ($CMDLINE_OPTS): an options
# conffile left there put ForceP2P and RMForceP2PType on Debian's `install
# nvidia modprobe -i nvidia-current $CMDLINE_OPTS` (stock module, no P2P
# patches; Ubuntu's stock module is nvidia itself), and an install line
# left there would keep winning over Debian's (in /etc/modprobe.d/nvidia.conf,
# which sorts after both), so modprobe nvidia would look for an nvidia.ko
# that is gone. The one conffile left, /etc/depmod.d/nvidia-p2p.conf, is
# harmless after remove: an override only ranks copies of a module of the
# same name, updates/dkms is first anyway (kmod's default search, Ubuntu's
# "search updates ubuntu built-in"), and Debian's nvidia-current is not
# named in it.
deb_tree() {
  local tag=$1 d=$2 doc conf
  doc="${d}/usr/share/doc/${P2P_PKG_NAME}"
  conf=$(basename "$(p2p_modprobe_conf)")
  mkdir -p "${d}/DEBIAN" "${d}/usr/src" "${d}/etc/depmod.d" "${doc}" \
    "${d}/usr/share/lintian/overrides" "${d}/$(dirname "${PKG_MODPROBE_LOAD}")"
  cp -a -- "$(payload_dir "${tag}")" "${d}/usr/src/${DKMS_MODULE}-${tag}"
  # Reproducible and lintian-friendly modes: directories 755, files 644,
  # scripts that kbuild runs 755.
  find "${d}/usr/src" -type d -exec chmod 0755 {} +
  find "${d}/usr/src" -type f -exec chmod 0644 {} +
  find "${d}/usr/src" -type f -name '*.sh' -exec chmod 0755 {} +
  find "${d}/usr/src" -name '.gitignore' -delete
  deb_lintian_overrides "${tag}" >"${d}/usr/share/lintian/overrides/${P2P_PKG_NAME}"
  modprobe_conf_text "${tag}" --no-install >"${d}/${PKG_MODPROBE_OPTS}"
  printf '\n# The install lines that load these modules: /%s\n' "${PKG_MODPROBE_LOAD}" >>"${d}/${PKG_MODPROBE_OPTS}"
  deb_modprobe_load_text "${tag}" >"${d}/${PKG_MODPROBE_LOAD}"
  depmod_conf_text "${DKMS_DEST}" >"${d}/etc/depmod.d/${conf}"
  deb_copyright "${tag}" >"${doc}/copyright"
  deb_changelog "${tag}" | gzip -9n >"${doc}/changelog.Debian.gz"
  deb_control "${tag}" "${d}" >"${d}/DEBIAN/control"
  printf '/etc/depmod.d/%s\n' "${conf}" >"${d}/DEBIAN/conffiles"
  deb_preinst "${tag}" >"${d}/DEBIAN/preinst"
  deb_postinst "${tag}" >"${d}/DEBIAN/postinst"
  deb_prerm "${tag}" >"${d}/DEBIAN/prerm"
  deb_postrm "${tag}" >"${d}/DEBIAN/postrm"
  printf 'activate-noawait update-initramfs\n' >"${d}/DEBIAN/triggers"
  chmod 0755 "${d}/DEBIAN/preinst" "${d}/DEBIAN/postinst" "${d}/DEBIAN/prerm" "${d}/DEBIAN/postrm"
  chmod 0644 "${d}/DEBIAN/control" "${d}/DEBIAN/conffiles" "${d}/DEBIAN/triggers" \
    "${d}/${PKG_MODPROBE_OPTS}" "${d}/etc/depmod.d/${conf}" "${doc}/copyright" "${doc}/changelog.Debian.gz" \
    "${d}/usr/share/lintian/overrides/${P2P_PKG_NAME}" "${d}/${PKG_MODPROBE_LOAD}"
  (cd "${d}" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"${d}/DEBIAN/md5sums"
  chmod 0644 "${d}/DEBIAN/md5sums"
}

# deb_modprobe_load_text TAG: PKG_MODPROBE_LOAD's text: the install lines.
deb_modprobe_load_text() {
  printf '# Installed by %s %s; removed with it (not a conffile).\n' "${P2P_PKG_NAME}" "$1"
  printf '# Options: /%s. To change these lines, copy this file\n' "${PKG_MODPROBE_OPTS}"
  printf '# to /etc/modprobe.d/%s: a file there overrides this one\n' "${PKG_MODPROBE_LOAD##*/}"
  printf '# (and stays when the package is removed).\n'
  modprobe_install_lines
}

# deb_control TAG DIR: DEBIAN/control. Conflicts with the distributions'
# NVIDIA kernel module packages (PKG_CONFLICTS), Provides the virtual
# packages Debian's userspace packages of the same version depend on
# (nvidia-kernel-<tag>, nvidia-open-kernel-<tag>) and, versioned, Ubuntu's
# kernel module package names (deb_provides_ubuntu); Recommends: see
# deb_recommends.
#
# The package takes the place of the distribution's kernel module package,
# so it carries that package's relations, or apt forgets what only they kept
# (apt-get autoremove after the swap removed nvidia-kernel-support,
# nvidia-kernel-common and nvidia-modprobe: the nouveau blacklist, the udev
# rules that make /dev/nvidia*, the setuid helper CUDA uses as non-root).
# It also has to install, and upgrade from a repository, beside NVIDIA's
# .run userspace, where no distribution package of the driver exists. The
# relations of Debian's nvidia-kernel-dkms (bookworm 535.261.03-1, trixie
# 550.163.01-2; nvidia-open-kernel-dkms and trixie's
# nvidia-tesla-535-kernel-dkms 535.274.02 alike, with their own names) and
# of Ubuntu's nvidia-dkms-<branch>[-server][-open] (test/fixtures/ubuntu/),
# one by one:
#   Depends: firmware-nvidia-gsp (= V) | firmware-nvidia-gsp-V (Ubuntu's
#     closed flavour: nvidia-firmware-<branch>[-server]-V): Recommends
#     firmware-nvidia-gsp-<tag> | nvidia-firmware-<branch>[-server]-<tag>.
#     The GSP firmware of exactly the tag; the virtual name covers Debian's
#     both flavours (firmware-nvidia-tesla-535-gsp provides it too). Not
#     Depends: most tags have no such package, and a .run brings its own, so
#     a Depends would make the package uninstallable there. apt installs
#     recommendations by default, and autoremove keeps what a Recommends
#     names (APT::AutoRemove::RecommendsImportant, true by default).
#   Depends: nvidia-kernel-support--v1 (nvidia-open-kernel-support--v1,
#     nvidia-tesla-<branch>-kernel-support--v1; Ubuntu:
#     nvidia-kernel-common-<branch>[-server]): Recommends the same names
#     with "| dkms" last. Installing any of them brings nvidia-alternative,
#     glx-diversions and nvidia-installer-cleanup, whose pre-install hook
#     (/usr/lib/nvidia/pre-install) kills NVIDIA's installer and whose
#     postinst asks to uninstall a .run driver already there (and fails
#     without a terminal): with a plain Depends or Recommends, `apt install`
#     of this package (or an upgrade from a repository that adds the
#     relation) breaks the .run userspace. dkms is always installed
#     (Depends), so the group is always satisfied and apt installs none of
#     them; apt's autoremove follows every alternative of a group, so those
#     installed stay. Not Suggests: autoremove follows it only while
#     APT::AutoRemove::SuggestsImportant is true, which Docker's Debian
#     images turn off (/etc/apt/apt.conf.d/docker-autoremove-suggests).
#     On a new machine the support package comes only when named (README).
#   Recommends: nvidia-driver (>= V) | libcuda1 (>= V) (tesla:
#     nvidia-tesla-<branch>-driver | libnvidia-tesla-<branch>-cuda1): the
#     same names, "| dkms" last, for the same reason: where the driver came
#     with Debian's kernel module package (`apt install nvidia-kernel-dkms`),
#     autoremove would take it after the swap; a .run userspace gets none.
#   Pre-Depends: nvidia-installer-cleanup: not mirrored (its hook above
#     stops the .run); Debian's driver packages pre-depend on it themselves.
#   Depends: dkms (>= 3.0.3-4~ bookworm, >= 3.0.11 trixie): ours, dkms (>=
#     DKMS_MIN_VERSION), the oldest this project tested.
#   Provides: nvidia-kernel-dkms-any (= V): not provided (it is in
#     PKG_CONFLICTS; nothing in bookworm or trixie depends on it).
#   Ubuntu's Depends: nvidia-kernel-source-<branch>[-server][-open]: not
#     mirrored: the source of the modules this package replaces; Ubuntu's
#     nvidia-driver-* and nvidia-headless-no-dkms-* depend on it themselves.
deb_control() {
  local tag=$1 d=$2 size
  size=$(du -sk --exclude=DEBIAN "${d}" | cut -f1)
  cat <<EOF
Package: ${P2P_PKG_NAME}
Version: $(deb_version "${tag}")
Architecture: amd64
Maintainer: $(pkg_maintainer)
Installed-Size: ${size}
Depends: dkms (>= ${DKMS_MIN_VERSION})
Recommends: $(deb_recommends "${tag}")
Provides: nvidia-kernel-${tag}, nvidia-open-kernel-${tag}, $(deb_provides_ubuntu "${tag}")
Conflicts: ${PKG_CONFLICTS}
Section: kernel
Priority: optional
Homepage: https://github.com/NVIDIA/open-gpu-kernel-modules
Description: NVIDIA open kernel modules ${tag} with PCIe P2P (DKMS source)
 NVIDIA's open GPU kernel modules, driver ${tag}, with the nvidia-p2p patch
 series (family ${V_FAMILY[${tag}]}): PCIe BAR1 peer-to-peer for consumer GPUs
 (RTX 3090, RTX 4090). The DKMS module nvidia-p2p builds and installs
 nvidia, nvidia-uvm, nvidia-modeset, nvidia-drm and nvidia-peermem for every
 kernel with headers, now and after kernel updates, signed with DKMS's key.
 .
 /usr/lib/modprobe.d/nvidia-p2p.conf sets the driver options that switch
 P2P on (a copy in /etc/modprobe.d overrides it);
 /usr/lib/modprobe.d/nvidia-p2p-load.conf makes modprobe load these
 modules. The userspace driver of exactly ${tag} is needed beside it: the
 distribution's packages of ${tag}, or NVIDIA's .run with
 --no-kernel-modules.
EOF
}

# deb_recommends TAG: the Recommends field (see deb_control): the kernel
# headers, the GSP firmware of TAG, then two groups apt never installs from
# (dkms, a dependency, satisfies them) that keep from autoremove what the
# distribution's kernel module package kept: its support package and the
# userspace driver of TAG.
deb_recommends() {
  local tag=$1 b=${1%%.*}
  local firmware="firmware-nvidia-gsp-${tag} | nvidia-firmware-${b}-${tag} | nvidia-firmware-${b}-server-${tag}"
  local support="nvidia-kernel-support--v1 | nvidia-open-kernel-support--v1 | nvidia-tesla-${b}-kernel-support--v1 | nvidia-kernel-common-${b} | nvidia-kernel-common-${b}-server"
  local userspace="nvidia-driver (>= ${tag}) | nvidia-tesla-${b}-driver (>= ${tag}) | libcuda1 (>= ${tag}) | libnvidia-tesla-${b}-cuda1 (>= ${tag})"
  printf '%s\n' "linux-headers-amd64 | linux-headers-generic | linux-headers, ${firmware}, ${support} | dkms, ${userspace} | dkms"
}

# deb_provides_ubuntu TAG: Ubuntu's nvidia-driver-<branch>[-server][-open]
# of TAG depend on nvidia-dkms-<branch>[-server][-open] (>= TAG) and
# (<= TAG-1), no alternative (canonical/nvidia-graphics-drivers, 570 to 595;
# Ubuntu's prebuilt linux-modules-nvidia-* satisfy it the same way, with a
# versioned Provides). Provided at exactly TAG, a userspace of another
# version never takes this package.
deb_provides_ubuntu() {
  local tag=$1 b=${1%%.*} flavour out=""
  for flavour in "" -open -server -server-open; do
    out+="${out:+, }nvidia-dkms-${b}${flavour} (= ${tag})"
  done
  printf '%s\n' "${out}"
}

# deb_lintian_overrides TAG: what lintian reports of this package that is
# intended, each with the reason (README.md, "The Debian package").
deb_lintian_overrides() {
  local src="usr/src/${DKMS_MODULE}-$1"
  cat <<EOF
# Objects DKMS links into nvidia.ko and nvidia-modeset.ko (Debian's own
# nvidia-kernel-dkms ships them the same way); the link needs their symbols.
${P2P_PKG_NAME}: unstripped-binary-or-object [${src}/nvidia/nv-kernel.o_binary]
${P2P_PKG_NAME}: unstripped-binary-or-object [${src}/nvidia-modeset/nv-modeset-kernel.o_binary]
# A local build for apt install ./file.deb, never uploaded to an archive.
${P2P_PKG_NAME}: initial-upload-closes-no-bugs *
# 'install' lines load our modules where Debian's driver packages redirect
# modprobe nvidia to nvidia-current with theirs; only an earlier 'install'
# line can win over that (a softdep cannot). (Lintian of bookworm checks
# only etc/modprobe.d and calls this override unused; later ones check
# usr/lib/modprobe.d too.)
${P2P_PKG_NAME}: obsolete-command-in-modprobe.d-file install [${PKG_MODPROBE_LOAD}]
# Built without debhelper: these are the rm_conffile lines dh_installdeb
# writes for a debian/maintscript entry, in preinst, postinst and postrm.
${P2P_PKG_NAME}: maintainer-script-should-not-use-dpkg-maintscript-helper *
EOF
}

# deb_rm_conffile TAG: the line debhelper's dh_installdeb puts into preinst,
# postinst and postrm for an rm_conffile entry of debian/maintscript: the
# options conffile of the packages built before PKG_MODPROBE_OPTS goes on
# an upgrade from a version lower than this one, or an install over one
# removed but not purged (the conffile removed: dpkg then forgets it).
# Prior version: this package's version with "~" (dpkg-maintscript-helper(1)):
# the tag is the version, so an old-layout package of the same or a higher
# version (a rebuild of one tag, a downgrade) keeps the conffile, obsolete,
# until purge: take a new --revision. A conffile the admin changed is kept
# as <file>.dpkg-bak (modprobe reads only *.conf): deb_postinst says so.
deb_rm_conffile() {
  printf 'dpkg-maintscript-helper rm_conffile %s %s~ -- "$@"\n' "${PKG_OLD_CONFFILE}" "$(deb_version "$1")"
}

# deb_preinst TAG: preinst: only the rm_conffile of deb_rm_conffile.
deb_preinst() {
  local tag=$1
  cat <<EOF
#!/bin/sh
# preinst of ${P2P_PKG_NAME} ${tag}: the options conffile of older packages
# (${PKG_OLD_CONFFILE}) goes: the options are in /${PKG_MODPROBE_OPTS} now.
set -e
$(deb_rm_conffile "${tag}")
exit 0
EOF
}

# deb_postrm TAG: postrm: only the rm_conffile of deb_rm_conffile (it puts
# the conffile back on an aborted upgrade, and purge deletes its .dpkg-bak).
deb_postrm() {
  local tag=$1
  cat <<EOF
#!/bin/sh
# postrm of ${P2P_PKG_NAME} ${tag}: finishes or undoes the removal of the
# options conffile of older packages (${PKG_OLD_CONFFILE}).
set -e
$(deb_rm_conffile "${tag}")
exit 0
EOF
}

deb_postinst() {
  local tag=$1 prior
  prior="$(deb_version "${tag}")~"
  cat <<EOF
#!/bin/sh
# postinst of ${P2P_PKG_NAME} ${tag}: DKMS builds the modules for every installed
# kernel that has headers (DKMS's kernel hooks do it for later kernels).
set -e
$(deb_rm_conffile "${tag}")
NAME=${DKMS_MODULE}
VERSION=${tag}
if [ "\$1" = configure ] && [ -n "\$2" ] && [ -e ${PKG_OLD_CONFFILE}.dpkg-bak ] &&
	dpkg --compare-versions -- "\$2" le-nl "${prior}"; then
	echo "${P2P_PKG_NAME}: your changes to ${PKG_OLD_CONFFILE} are in ${PKG_OLD_CONFFILE}.dpkg-bak, which modprobe does not read: the P2P options are now those of /${PKG_MODPROBE_OPTS}. To keep your changes, copy that file to ${PKG_OLD_CONFFILE}, edit it (it overrides the package's file), then run update-initramfs -u" >&2
fi
if [ "\$1" = configure ]; then
	if [ -z "\$(dkms status -m "\$NAME" -v "\$VERSION")" ]; then
		dkms add -m "\$NAME" -v "\$VERSION"
	fi
	failed=""
	for dir in /lib/modules/*; do
		[ -d "\$dir" ] || continue
		kver=\${dir##*/}
		if [ ! -e "\$dir/build/Makefile" ]; then
			echo "${P2P_PKG_NAME}: no headers for kernel \$kver: DKMS builds \$NAME when they are installed" >&2
			continue
		fi
		if ! dkms install -m "\$NAME" -v "\$VERSION" -k "\$kver"; then
			failed="\$failed \$kver"
		fi
	done
	if [ -n "\$failed" ]; then
		echo "${P2P_PKG_NAME}: DKMS could not build \$NAME/\$VERSION for:\$failed (see /var/lib/dkms/\$NAME/\$VERSION/build/make.log)" >&2
		exit 1
	fi
fi
exit 0
EOF
}

deb_prerm() {
  local tag=$1
  cat <<EOF
#!/bin/sh
# prerm of ${P2P_PKG_NAME} ${tag}: DKMS removes the modules from every kernel.
set -e
NAME=${DKMS_MODULE}
VERSION=${tag}
case "\$1" in
remove | upgrade | deconfigure)
	if [ -n "\$(dkms status -m "\$NAME" -v "\$VERSION")" ]; then
		dkms remove -m "\$NAME" -v "\$VERSION" --all
	fi
	# A kernel DKMS built for with only its headers installed (no image:
	# no modules.builtin) and no other module is left with nothing but
	# depmod's index files.
	for dir in /lib/modules/*; do
		[ -d "\$dir" ] && [ ! -e "\$dir/modules.builtin" ] || continue
		[ -z "\$(find "\$dir" -name '*.ko*' -print -quit)" ] || continue
		rm -f "\$dir"/modules.*
		rmdir "\$dir/updates/dkms" "\$dir/updates" "\$dir" 2>/dev/null || true
	done
	;;
esac
exit 0
EOF
}

deb_changelog() {
  local tag=$1
  cat <<EOF
${P2P_PKG_NAME} ($(deb_version "${tag}")) unstable; urgency=medium

  * Built by nvidia-p2p build.sh ${P2P_VERSION} from the verified upstream
    source of ${tag} and patch family ${V_FAMILY[${tag}]}.
  * Upstream tree ${V_TREE[${tag}]}.

 -- $(pkg_maintainer)  $(LC_ALL=C date -u -R -d "@$(pkg_epoch)")
EOF
}

# deb_copyright: debian/copyright, with upstream's notice from its COPYING.
deb_copyright() {
  local notice
  notice=$(sed -n -E 's/^[[:space:]]*Copyright \([cC]\) ([0-9].*NVIDIA.*)$/\1/p' "${P2P_PATCHED_DIR}/COPYING" 2>/dev/null | head -n 1) || notice=""
  cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: open-gpu-kernel-modules
Source: https://github.com/NVIDIA/open-gpu-kernel-modules

Files: *
Copyright: ${notice:-NVIDIA CORPORATION & AFFILIATES}
EOF
  cat <<'EOF'
License: MIT or GPL-2
 The NVIDIA open GPU kernel modules are dual-licensed MIT / GPL-2.0; the
 nvidia-p2p patch series is under the same terms.
 .
 On Debian systems the GPL-2 is in /usr/share/common-licenses/GPL-2.
 .
 Permission is hereby granted, free of charge, to any person obtaining a
 copy of this software and associated documentation files (the "Software"),
 to deal in the Software without restriction, including without limitation
 the rights to use, copy, modify, merge, publish, distribute, sublicense,
 and/or sell copies of the Software, and to permit persons to whom the
 Software is furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL
 THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
 DEALINGS IN THE SOFTWARE.
EOF
}
