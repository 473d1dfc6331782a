#!/usr/bin/env bats
# build.sh package --format arch and --format rpm: the recipes (PKGBUILD,
# spec) built by the distributions' own tools, Debian's makepkg and rpmbuild,
# from the fixture source (the objects come from the fixture's make stub),
# then inspected with pacman and rpm as those distributions' users would.
# makepkg refuses root: it runs in a user namespace as uid 1000, mapped to the
# caller (unshare --map-user: the files stay the caller's; unmapped, make's
# posix_spawn cannot reset its ids and fails with EINVAL).

load ../test_helper

setup() {
  common_setup
  make_fixture
  OUT="${BATS_TEST_TMPDIR}/out"
  T=${FIXTURE_TAG}
  ARCH_PKG="${OUT}/nvidia-p2p-dkms-${T}-1-x86_64.pkg.tar.zst"
  ARCH_DIR="${OUT}/nvidia-p2p-dkms-${T}-1-arch"
  RPM="${OUT}/nvidia-p2p-dkms-${T}-1.x86_64.rpm"
  SRPM="${OUT}/nvidia-p2p-dkms-${T}-1.src.rpm"
}

need_makepkg() {
  command -v makepkg >/dev/null || skip "makepkg not installed (Debian package makepkg)"
  command -v pacman >/dev/null || skip "pacman not installed (Debian package pacman-package-manager)"
  command -v zstd >/dev/null || skip "zstd not installed"
  as_uid_1000 true 2>/dev/null || skip "no user namespaces here (unshare --user --map-user): makepkg cannot run as non-root"
}

# as_uid_1000 CMD...: CMD as uid 1000 in a user namespace mapped to the caller.
as_uid_1000() {
  unshare --user --map-user=1000 --map-group=1000 "$@"
}

need_rpmbuild() {
  command -v rpmbuild >/dev/null || skip "rpmbuild not installed (Debian package rpm)"
}

# arch_package: build.sh package --format arch as a normal user.
arch_package() {
  run as_uid_1000 "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    package "${T}" --format arch --source "${FIX}/upstream" --out "${OUT}"
}

rpm_package() {
  run_build package "${T}" --format rpm --source "${FIX}/upstream" --out "${OUT}"
}

# pkginfo FILE: the package's .PKGINFO (pacman's metadata).
pkginfo() {
  bsdtar -xOf "$1" .PKGINFO
}

@test "package --format arch builds the package and the PKGBUILD directory, and prints both paths" {
  need_makepkg
  arch_package
  assert_success
  assert_equal "$(printf '%s\n' "${output}" | grep -v -e '^\[' -e '^build.sh: log: ')" "$(printf '%s\n%s' "${ARCH_PKG}" "${ARCH_DIR}")"
  assert_file_exist "${ARCH_PKG}"
  assert_file_exist "${ARCH_DIR}/PKGBUILD"
  assert_file_exist "${ARCH_DIR}/NVIDIA-kernel-module-source-${T}.tar.xz"
  assert_file_exist "${ARCH_DIR}/compat-0001-resize.patch"
  assert_file_exist "${ARCH_DIR}/p2p-0001-route.patch"
  # the build's own directories stay out of the recipe and the output
  assert_not_exist "${ARCH_DIR}/src"
  assert_not_exist "${ARCH_DIR}/pkg"
  assert_equal "$(find "${OUT}" -mindepth 1 -maxdepth 1 | wc -l)" 2
}

@test "the Arch package takes the place of nvidia-open-dkms of the same version" {
  need_makepkg
  arch_package
  assert_success
  run pkginfo "${ARCH_PKG}"
  assert_line "pkgname = nvidia-p2p-dkms"
  assert_line "pkgver = ${T}-1"
  assert_line "arch = x86_64"
  assert_line "license = MIT OR GPL-2.0-only"
  assert_line "depend = dkms"
  assert_line "depend = nvidia-utils=${T}"
  assert_line "provides = NVIDIA-MODULE"
  assert_line "provides = nvidia-open-dkms=${T}"
  assert_line "conflict = NVIDIA-MODULE"
  assert_line "conflict = nvidia-open-dkms"
  refute_line --partial "replaces ="
  # pacman reads it as Arch's pacman would
  run pacman -Qip "${ARCH_PKG}"
  assert_success
  assert_line --regexp "^Depends On +: dkms +nvidia-utils=${T//./\\.}$"
  assert_line --regexp "^Install Script +: Yes$"
}

@test "the Arch package holds the DKMS tree of the patched source with its objects, the options and the depmod override, under /usr only" {
  need_makepkg
  arch_package
  assert_success
  local s="usr/src/nvidia-p2p-${T}"
  run pacman -Qlp "${ARCH_PKG}"
  assert_success
  assert_line "nvidia-p2p-dkms /${s}/dkms.conf"
  assert_line "nvidia-p2p-dkms /${s}/nvidia/nv-kernel.o_binary"
  assert_line "nvidia-p2p-dkms /${s}/nvidia-modeset/nv-modeset-kernel.o_binary"
  assert_line "nvidia-p2p-dkms /${s}/nvidia/nv-pci.c"
  assert_line "nvidia-p2p-dkms /usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_line "nvidia-p2p-dkms /usr/lib/depmod.d/nvidia-p2p.conf"
  assert_line "nvidia-p2p-dkms /usr/share/licenses/nvidia-p2p-dkms/LICENSE"
  # namcap's rules for paths: nothing outside /usr, nothing in /usr/local
  refute_line --regexp '^nvidia-p2p-dkms /(etc|lib|bin|sbin|var|opt)/'
  refute_line --partial ' /usr/local/'
  local x="${BATS_TEST_TMPDIR}/x"
  mkdir -p "${x}"
  bsdtar -xf "${ARCH_PKG}" -C "${x}"
  # the series was applied (compat-0001 changes nv-pci.c), the objects are
  # regular files of the build, dkms.conf is build.sh's
  run grep -c 'pci_resize_resource(0, 1, 2, 0)' "${x}/${s}/nvidia/nv-pci.c"
  assert_output 1
  assert_equal "$(cat "${x}/${s}/nvidia/nv-kernel.o_binary")" "nv-kernel.o ${T}"
  [[ ! -L ${x}/${s}/nvidia/nv-kernel.o_binary ]]
  run grep -c 'PACKAGE_NAME="nvidia-p2p"' "${x}/${s}/dkms.conf"
  assert_output 1
  run cat "${x}/usr/lib/depmod.d/nvidia-p2p.conf"
  assert_line "override nvidia * updates/dkms"
  run cat "${x}/usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_line --partial "mkinitcpio -P"
  refute_line --regexp '^install '
  # modes as namcap expects: no world-writable file, directories 755
  assert_equal "$(find "${x}/usr" -perm -o+w | wc -l)" 0
  assert_equal "$(find "${x}/usr" -type d ! -perm 755 | wc -l)" 0
}

@test "the PKGBUILD builds again by itself (makepkg in its directory, offline), and refuses a source that is not the pinned one" {
  need_makepkg
  arch_package
  assert_success
  local d="${BATS_TEST_TMPDIR}/again"
  cp -a "${ARCH_DIR}" "${d}"
  cd "${d}"
  run as_uid_1000 env PKGEXT=.pkg.tar.zst makepkg --nodeps --noconfirm --nocolor
  assert_success
  assert_file_exist "${d}/nvidia-p2p-dkms-${T}-1-x86_64.pkg.tar.zst"
  # one file of the tarball changed: prepare() stops before patching
  rm -rf "${d}" && cp -a "${ARCH_DIR}" "${d}" && cd "${d}"
  local top="NVIDIA-kernel-module-source-${T}"
  mkdir t && tar -xJf "${top}.tar.xz" -C t
  printf '/* changed */\n' >>"t/${top}/src/nvidia/kern_bus.c"
  tar -cJf "${top}.tar.xz" -C t "${top}"
  run as_uid_1000 env PKGEXT=.pkg.tar.zst makepkg --nodeps --noconfirm --nocolor
  assert_failure
  assert_output --partial "is not the pinned source"
  assert_output --partial "refusing to build it"
  assert_equal "$(find "${d}" -maxdepth 1 -name '*.pkg.tar.zst' | wc -l)" 0
}

@test "the PKGBUILD applies only the patches build.sh applies, in series order, at fuzz 0" {
  need_makepkg
  arch_package
  assert_success
  run grep -E '^\s*patch ' "${ARCH_DIR}/PKGBUILD"
  assert_line --index 0 --partial "patch -Np1 -F0 --no-backup-if-mismatch -i \"\$srcdir/compat-0001-resize.patch\""
  assert_line --index 1 --partial "\"\$srcdir/p2p-0001-route.patch\""
  assert_equal "${#lines[@]}" 2
  # each local source has its sha256; NVIDIA's tarball is checked by tree id
  local core
  core=$(awk -v t="${T}" '$1 == t { print $5 }' "${NVP2P_DATA_DIR}/versions.conf")
  [[ ${core} =~ ^[0-9a-f]{40}$ ]]
  run grep -c -x "_core=${core}" "${ARCH_DIR}/PKGBUILD"
  assert_output 1
  run sed -n '/^sha256sums=/,/)/p' "${ARCH_DIR}/PKGBUILD"
  assert_line --index 0 "sha256sums=('SKIP'"
  assert_line --partial "'$(sha256sum "${ARCH_DIR}/p2p-0001-route.patch" | cut -d' ' -f1)'"
}

@test "package --format arch as root is refused (10) before anything is fetched or written" {
  as_root
  run_build package "${T}" --format arch --source "${FIX}/upstream" --out "${OUT}"
  assert_failure 10
  assert_output --partial "makepkg does not run as root"
  assert_not_exist "${OUT}"
  assert_not_exist "${CACHE}/src/${T}"
}

@test "package --format arch without makepkg is refused (10); a revision that is no pkgrel (2); nothing written" {
  as_user
  PATH=$(path_hiding makepkg) run_build package "${T}" --format arch --source "${FIX}/upstream" --out "${OUT}"
  assert_failure 10
  assert_output --partial "'makepkg' is required but not installed (Debian package: makepkg)"
  run_build package "${T}" --format arch --revision 1a --source "${FIX}/upstream" --out "${OUT}"
  assert_failure 2
  assert_output --partial "is not an Arch pkgrel"
  assert_not_exist "${OUT}"
}

@test "a failing build inside makepkg stops with 8 and leaves no package and no recipe" {
  need_makepkg
  FAKE_OBJECTS_FAIL=1 arch_package
  assert_failure 8
  assert_output --partial "makepkg could not build nvidia-p2p-dkms ${T}"
  # makepkg's own error line is among the build errors shown
  assert_output --partial "==> ERROR: A failure occurred in build()."
  assert_equal "$(find "${OUT}" -mindepth 1 | wc -l)" 0
}

@test "package --format rpm builds the binary and the source RPM, and prints both paths" {
  need_rpmbuild
  rpm_package
  assert_success
  assert_equal "$(printf '%s\n' "${output}" | grep -v -e '^\[' -e '^build.sh: log: ')" "$(printf '%s\n%s' "${RPM}" "${SRPM}")"
  assert_file_exist "${RPM}"
  assert_file_exist "${SRPM}"
  assert_equal "$(find "${OUT}" -mindepth 1 -maxdepth 1 | wc -l)" 2
  run rpm -qp --qf '%{NAME} %{VERSION} %{RELEASE} %{ARCH} %{LICENSE}\n' "${RPM}"
  assert_output "nvidia-p2p-dkms ${T} 1 x86_64 MIT OR GPL-2.0-only"
  # the source RPM: the spec, NVIDIA's tarball, the patches, the files
  run rpm -qlp "${SRPM}"
  assert_line "nvidia-p2p-dkms.spec"
  assert_line "NVIDIA-kernel-module-source-${T}.tar.xz"
  assert_line "compat-0001-resize.patch"
  assert_line "p2p-0001-route.patch"
  assert_line "dkms.conf"
}

@test "the RPM's %changelog entry has SOURCE_DATE_EPOCH's date, not the build's" {
  need_rpmbuild
  SOURCE_DATE_EPOCH=1700000000 rpm_package
  assert_success
  run rpm -qp --changelog "${RPM}"
  assert_line --index 0 --regexp "^\* Tue Nov 14 2023 .* - ${T}-1$"
}

@test "the RPM provides nvidia-kmod = 3:<tag>, requires dkms, conflicts with the other module packages, recommends the userspace of <tag>" {
  need_rpmbuild
  rpm_package
  assert_success
  run rpm -qp --provides "${RPM}"
  assert_line "nvidia-kmod = 3:${T}"
  assert_line "nvidia-p2p-dkms = ${T}-1"
  run rpm -qp --requires "${RPM}"
  assert_line "dkms"
  refute_line --partial "nvidia-driver"
  run rpm -qp --conflicts "${RPM}"
  assert_line "akmod-nvidia"
  assert_line "kmod-nvidia"
  assert_line "dkms-nvidia"
  assert_line "dkms-nvidia-open"
  assert_line "kmod-nvidia-open-dkms"
  run rpm -qp --recommends "${RPM}"
  assert_output "(nvidia-driver-cuda-libs = 3:${T} or xorg-x11-drv-nvidia-cuda-libs = 3:${T})"
}

@test "the RPM holds the DKMS tree (NO_WEAK_MODULES), the options and the depmod override; its scripts hand the build to DKMS" {
  need_rpmbuild
  rpm_package
  assert_success
  local s="/usr/src/nvidia-p2p-${T}"
  run rpm -qlp "${RPM}"
  assert_line "${s}/dkms.conf"
  assert_line "${s}/nvidia/nv-kernel.o_binary"
  assert_line "${s}/nvidia-modeset/nv-modeset-kernel.o_binary"
  assert_line "/usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_line "/usr/lib/depmod.d/nvidia-p2p.conf"
  assert_line --regexp "^/usr/share/licenses/nvidia-p2p-dkms(-${T//./\\.})?/COPYING$"
  refute_line --regexp '^/(etc|lib|bin|sbin|var|opt)/'
  local x="${BATS_TEST_TMPDIR}/x"
  mkdir -p "${x}"
  (cd "${x}" && rpm2archive - <"${RPM}" | tar -xzf -)
  run grep -x 'NO_WEAK_MODULES="yes"' "${x}${s}/dkms.conf"
  assert_success
  run grep -c 'pci_resize_resource(0, 1, 2, 0)' "${x}${s}/nvidia/nv-pci.c"
  assert_output 1
  run cat "${x}/usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_line --partial "dracut -f"
  run rpm -qp --scripts "${RPM}"
  assert_output --partial "dkms add -m nvidia-p2p -v ${T}"
  assert_output --partial "dkms install -m nvidia-p2p -v ${T}"
  assert_output --partial "dkms remove -m nvidia-p2p -v ${T} -q --all --rpm_safe_upgrade"
}

@test "rpmlint, with the rpmlintrc the source RPM carries, reports nothing on the spec and both RPMs; without it, what each filter is for" {
  need_rpmbuild
  command -v rpmlint >/dev/null || skip "rpmlint not installed (Debian package rpmlint)"
  rpm_package
  assert_success
  local x="${BATS_TEST_TMPDIR}/srpm"
  mkdir -p "${x}"
  (cd "${x}" && rpm2archive - <"${SRPM}" | tar -xzf -)
  assert_file_exist "${x}/nvidia-p2p-dkms.rpmlintrc"
  run rpm -qp --qf '%{PACKAGER}\n' "${RPM}"
  assert_output "nvidia-p2p local build <nvidia-p2p@local-build.invalid>"
  run rpmlint -r "${x}/nvidia-p2p-dkms.rpmlintrc" "${x}/nvidia-p2p-dkms.spec" "${RPM}" "${SRPM}"
  assert_success
  assert_line --regexp "^ ?2 packages and 1 specfiles checked; 0 errors, 0 warnings"
  # the filters are what keeps it quiet: without them rpmlint reports the
  # DKMS layout (and an unused filter would be an error above)
  run rpmlint "${x}/nvidia-p2p-dkms.spec" "${RPM}" "${SRPM}"
  assert_line --partial "E: no-binary"
  assert_line --partial "W: devel-file-in-non-devel-package /usr/src/nvidia-p2p-${T}/"
  assert_line --partial "E: hardcoded-library-path in %{_prefix}/lib/modprobe.d/nvidia-p2p.conf"
  refute_line --partial "mixed-use-of-spaces-and-tabs"
  refute_line --partial "use-of-RPM_SOURCE_DIR"
  refute_line --partial "no-changelogname-tag"
  refute_line --partial "packager-tag"
}

@test "the source RPM rebuilds by itself (rpmbuild --rebuild, offline)" {
  need_rpmbuild
  rpm_package
  assert_success
  local top="${BATS_TEST_TMPDIR}/rpmtop"
  run rpmbuild --rebuild --nodeps --define "_topdir ${top}" "${SRPM}"
  assert_success
  assert_file_exist "${top}/RPMS/x86_64/nvidia-p2p-dkms-${T}-1.x86_64.rpm"
}

@test "package --format rpm without rpmbuild is refused (10); a bad release (2); a failing build (8); nothing written" {
  PATH=$(path_hiding rpmbuild) run_build package "${T}" --format rpm --source "${FIX}/upstream" --out "${OUT}"
  assert_failure 10
  assert_output --partial "'rpmbuild' is required but not installed (Debian package: rpm)"
  run_build package "${T}" --format rpm --revision 'a-1' --source "${FIX}/upstream" --out "${OUT}"
  assert_failure 2
  assert_not_exist "${OUT}"
  need_rpmbuild
  FAKE_OBJECTS_FAIL=1 rpm_package
  assert_failure 8
  assert_output --partial "rpmbuild could not build nvidia-p2p-dkms ${T}"
  assert_equal "$(find "${OUT}" -mindepth 1 | wc -l)" 0
}

@test "a machine whose userspace is another version: refused (12) before anything is fetched or written" {
  as_user
  stub pacman - <<'STUB'
[[ "$*" == "-Q nvidia-utils" ]] && echo "nvidia-utils 570.86.16-1" && exit 0
exit 1
STUB
  stub makepkg <<<''
  run_build package "${T}" --format arch --source "${FIX}/upstream" --out "${OUT}"
  assert_failure 12
  assert_output --partial "this machine has nvidia-utils 570.86.16, and the nvidia-p2p-dkms ${T} package needs the userspace of exactly ${T}"
  assert_output --partial "archive.archlinux.org/packages/n/nvidia-utils/nvidia-utils-${T}-1-x86_64.pkg.tar.zst"
  stub rpm - <<'STUB'
[[ "$*" == *" xorg-x11-drv-nvidia-cuda-libs" ]] && echo "570.86.16" && exit 0
echo "package ${@: -1} is not installed"
exit 1
STUB
  stub rpmbuild <<<''
  run_build package "${T}" --format rpm --source "${FIX}/upstream" --out "${OUT}"
  assert_failure 12
  assert_output --partial "this machine has xorg-x11-drv-nvidia-cuda-libs 570.86.16"
  assert_not_exist "${OUT}"
  assert_not_exist "${CACHE}/src/${T}"
}
