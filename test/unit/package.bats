#!/usr/bin/env bats
# build.sh package: the Debian package of the DKMS source, built with the
# real dpkg-deb (the kernel-independent objects come from the fixture's make
# stub). Its maintainer scripts run under real dpkg and dkms in the chroot
# test (test/real/dkms_chroot.bats). Its control fields go through the real
# apt (simulations in a private state) with stand-ins of Debian's driver
# packages (their real relations) and with none (NVIDIA's .run userspace);
# Ubuntu's: test/unit/ubuntu.bats; Debian's real lists: test/real/apt_debian.bats.

load ../test_helper
load ../real/debian_pkg

setup() {
  common_setup
  make_fixture
  command -v dpkg-deb >/dev/null || skip "dpkg-deb not installed"
  OUT="${BATS_TEST_TMPDIR}/out"
  DEB="${OUT}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb"
}

package() {
  run_build package "${FIXTURE_TAG}" --source "${FIX}/upstream" --out "${OUT}" --no-ccache "$@"
}

@test "package builds nvidia-p2p-dkms_<tag>-1_amd64.deb and prints its path" {
  package
  assert_success
  assert_line "${DEB}"
  assert_file_exist "${DEB}"
  run dpkg-deb -f "${DEB}" Package Version Architecture Depends Section
  assert_line "Package: nvidia-p2p-dkms"
  assert_line "Version: ${FIXTURE_TAG}-1"
  assert_line "Architecture: amd64"
  assert_line "Depends: dkms (>= 3.0.10)"
  assert_line "Section: kernel"
}

@test "the package conflicts with the other NVIDIA kernel module packages and provides nvidia-kernel-<tag>" {
  package
  assert_success
  run dpkg-deb -f "${DEB}" Conflicts Provides
  assert_line "Conflicts: nvidia-kernel-dkms, nvidia-kernel-dkms-any, nvidia-open-kernel-dkms, nvidia-kernel-open-dkms, nvidia-tesla-kernel-dkms, nvidia-dkms-kernel, nvidia-dkms, nvidia-dkms-open"
  local b=${FIXTURE_TAG%%.*} t=${FIXTURE_TAG}
  assert_line "Provides: nvidia-kernel-${t}, nvidia-open-kernel-${t}, nvidia-dkms-${b} (= ${t}), nvidia-dkms-${b}-open (= ${t}), nvidia-dkms-${b}-server (= ${t}), nvidia-dkms-${b}-server-open (= ${t})"
}

@test "the package recommends the headers, the GSP firmware of <tag>, and (dkms satisfies them) the distributions' support and userspace packages" {
  package
  assert_success
  local b=${FIXTURE_TAG%%.*} t=${FIXTURE_TAG}
  run dpkg-deb -f "${DEB}" Recommends
  assert_output "linux-headers-amd64 | linux-headers-generic | linux-headers, firmware-nvidia-gsp-${t} | nvidia-firmware-${b}-${t} | nvidia-firmware-${b}-server-${t}, nvidia-kernel-support--v1 | nvidia-open-kernel-support--v1 | nvidia-tesla-${b}-kernel-support--v1 | nvidia-kernel-common-${b} | nvidia-kernel-common-${b}-server | dkms, nvidia-driver (>= ${t}) | nvidia-tesla-${b}-driver (>= ${t}) | libcuda1 (>= ${t}) | libnvidia-tesla-${b}-cuda1 (>= ${t}) | dkms"
  run dpkg-deb -f "${DEB}" Pre-Depends Suggests
  assert_output ""
}

# debian_index TAG: Debian's NVIDIA packages of TAG as a package index: the
# relations of bookworm's 535.261.03-1 packages (nvidia-driver,
# nvidia-kernel-dkms, nvidia-kernel-support and what they bring), read from
# Debian's package lists, at version TAG-1; relations to non-NVIDIA packages
# (libc6, debconf, pciutils, dpkg, the X server) left out. The real lists:
# test/real/apt_debian.bats.
debian_index() {
  local v=$1 r="$1-1"
  cat <<EOF
Package: nvidia-driver
Version: ${r}
Architecture: amd64
Depends: nvidia-alternative (= ${r}), nvidia-kernel-dkms (= ${r}) | nvidia-kernel-${v} | nvidia-open-kernel-${v}, nvidia-support, libcuda1 (= ${r})
Pre-Depends: nvidia-installer-cleanup, nvidia-legacy-check (>= 495)
Suggests: nvidia-kernel-dkms (>= ${v}) | nvidia-kernel-source (>= ${v}) | nvidia-open-kernel-source (>= ${v})

Package: nvidia-kernel-dkms
Version: ${r}
Architecture: amd64
Provides: nvidia-kernel-${v}, nvidia-kernel-dkms-any (= ${v})
Depends: firmware-nvidia-gsp (= ${v}) | firmware-nvidia-gsp-${v}, nvidia-kernel-support--v1, dkms (>= 3.0.3-4~)
Pre-Depends: nvidia-installer-cleanup
Recommends: nvidia-driver (>= ${v}) | libcuda1 (>= ${v})

Package: nvidia-kernel-support
Version: ${r}
Architecture: amd64
Provides: nvidia-kernel-support--v1, nvidia-kernel-support-any
Depends: nvidia-alternative (= ${r}), nvidia-alternative--kmod-alias, nvidia-kernel-common (>= 20151021), nvidia-modprobe (>= 535)

Package: nvidia-alternative
Version: ${r}
Architecture: amd64
Provides: nvidia-alternative--kmod-alias, nvidia-alternative-${v}, nvidia-alternative-any
Depends: glx-alternative-nvidia (>= 1.2)
Pre-Depends: nvidia-legacy-check (>= 495)

Package: libcuda1
Version: ${r}
Architecture: amd64
Depends: nvidia-support, nvidia-alternative (= ${r})
Pre-Depends: nvidia-legacy-check (>= 495)

Package: firmware-nvidia-gsp
Version: ${r}
Architecture: amd64
Provides: firmware-nvidia-gsp (= ${v}), firmware-nvidia-gsp-${v}
Conflicts: firmware-nvidia-gsp-${v}

Package: nvidia-legacy-check
Version: ${r}
Architecture: amd64
Pre-Depends: nvidia-installer-cleanup (>= 20151021)

Package: glx-alternative-nvidia
Version: 1.2.2
Architecture: amd64
Depends: update-glx (= 1.2.2), glx-diversions (= 1.2.2), glx-alternative-mesa

Package: glx-diversions
Version: 1.2.2
Architecture: amd64
Depends: glx-alternative-mesa (= 1.2.2)
Pre-Depends: nvidia-installer-cleanup

Package: glx-alternative-mesa
Version: 1.2.2
Architecture: amd64
Depends: update-glx (= 1.2.2)

EOF
  local p
  for p in update-glx:1.2.2 nvidia-installer-cleanup:20220217+3 nvidia-kernel-common:20220217+3 \
    nvidia-modprobe:535.161.07-1 nvidia-support:20220217+3 dkms:3.0.10-8; do
    printf 'Package: %s\nVersion: %s\nArchitecture: amd64\n\n' "${p%%:*}" "${p#*:}"
  done
}

# debian_apt TAG: a private apt state on debian_index TAG (APT_OPTS; A).
debian_apt() {
  A="${BATS_TEST_TMPDIR}/apt"
  rm -rf "${A}"
  mkdir -p "${A}/repo"
  debian_index "$1" | awk 'BEGIN { RS = ""; FS = "\n"; ORS = "\n\n" }
    { split($1, p, ": "); print $0 "\nFilename: pool/" p[2] ".deb\nSize: 1\nDescription: " p[2] }' >"${A}/repo/Packages"
  apt_local "${A}"
}

@test "apt, Debian's packages (stand-ins): the driver takes the package; after the swap apt-get autoremove removes nothing" {
  command -v apt-get >/dev/null 2>&1 || skip "apt-get is not installed"
  package
  assert_success
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  debian_apt "${FIXTURE_TAG}"
  # a new machine: the driver takes ours for its kernel modules (apt's
  # default: recommendations on)
  run apt-get "${APT_OPTS[@]}" -o APT::Install-Recommends=true -s install nvidia-driver "${DEB}"
  assert_success
  assert_line --regexp "^Inst nvidia-p2p-dkms \(${FIXTURE_TAG}-1 "
  assert_line --regexp "^Inst firmware-nvidia-gsp \(${FIXTURE_TAG}-1 "
  refute_line --regexp '^Inst nvidia-kernel-dkms '
  refute_line --regexp '^Inst nvidia-kernel-support '
  # the support package comes when named (README), still without Debian's
  # kernel module package
  run apt-get "${APT_OPTS[@]}" -o APT::Install-Recommends=true -s install nvidia-driver nvidia-kernel-support "${DEB}"
  assert_success
  assert_line --regexp '^Inst nvidia-kernel-support '
  assert_line --regexp '^Inst nvidia-modprobe '
  refute_line --regexp '^Inst nvidia-kernel-dkms '
  # a machine with the driver and nvidia-kernel-dkms, the rest automatic
  apt-get "${APT_OPTS[@]}" -s install nvidia-driver >"${A}/first.sim"
  apt_applied "${A}" "${A}/first.sim" nvidia-driver "" "${APT_OPTS[@]}"
  run apt-mark "${APT_OPTS[@]}" showauto
  assert_line nvidia-kernel-dkms
  assert_line nvidia-kernel-support
  run apt-get "${APT_OPTS[@]}" -s install "${DEB}"
  assert_success
  assert_line --regexp '^Remv nvidia-kernel-dkms '
  refute_line --regexp '^Remv nvidia-driver '
  printf '%s\n' "${output}" >"${A}/swap.sim"
  apt_applied "${A}" "${A}/swap.sim" nvidia-p2p-dkms "${DEB}" "${APT_OPTS[@]}"
  run apt-get "${APT_OPTS[@]}" -s autoremove
  assert_success
  refute_line --regexp '^Remv '
}

@test "apt, NVIDIA's .run userspace: the package installs with dkms (and the firmware), none of Debian's NVIDIA packages" {
  command -v apt-get >/dev/null 2>&1 || skip "apt-get is not installed"
  package
  assert_success
  debian_apt "${FIXTURE_TAG}"
  # Debian has every package of this version; recommendations on
  run apt-get "${APT_OPTS[@]}" -o APT::Install-Recommends=true -s install "${DEB}"
  assert_success
  assert_line --regexp "^Inst nvidia-p2p-dkms \(${FIXTURE_TAG}-1 "
  assert_line --regexp '^Inst dkms '
  assert_line --regexp '^Inst firmware-nvidia-gsp '
  refute_line --regexp '^Inst (nvidia-installer-cleanup|glx-diversions|nvidia-alternative|nvidia-kernel-support|nvidia-kernel-common|nvidia-modprobe|nvidia-driver|libcuda1) '
}

@test "the package holds the DKMS source, dkms.conf, the options and the install lines (not conffiles), the override as conffile, docs" {
  package
  assert_success
  run dpkg-deb -c "${DEB}"
  assert_output --partial "./usr/src/nvidia-p2p-${FIXTURE_TAG}/dkms.conf"
  assert_output --partial "./usr/src/nvidia-p2p-${FIXTURE_TAG}/nvidia/nv-kernel.o_binary"
  assert_output --partial "./usr/src/nvidia-p2p-${FIXTURE_TAG}/nvidia-modeset/nv-modeset-kernel.o_binary"
  assert_output --partial "./usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_output --partial "./etc/depmod.d/nvidia-p2p.conf"
  assert_output --partial "./usr/lib/modprobe.d/nvidia-p2p-load.conf"
  assert_output --partial "./usr/share/doc/nvidia-p2p-dkms/copyright"
  assert_output --partial "./usr/share/doc/nvidia-p2p-dkms/changelog.Debian.gz"
  refute_output --partial "./etc/modprobe.d"
  refute_output --regexp '\.ko$'
  refute_output --partial "src/nvidia/_out"
  refute_output --regexp '^l'
  local x="${BATS_TEST_TMPDIR}/x"
  dpkg-deb -R "${DEB}" "${x}"
  run cat "${x}/DEBIAN/conffiles"
  assert_output '/etc/depmod.d/nvidia-p2p.conf'
  run cat "${x}/usr/lib/modprobe.d/nvidia-p2p.conf"
  assert_output --partial 'options nvidia NVreg_RegistryDwords="RMForceP2PType=2"'
  run cat "${x}/etc/depmod.d/nvidia-p2p.conf"
  assert_line 'override nvidia * updates/dkms'
  run cat "${x}/usr/src/nvidia-p2p-${FIXTURE_TAG}/dkms.conf"
  assert_line 'PACKAGE_NAME="nvidia-p2p"'
  assert_line "PACKAGE_VERSION=\"${FIXTURE_TAG}\""
  (cd "${x}" && md5sum --quiet -c DEBIAN/md5sums)
}

@test "neither the options nor the install lines are conffiles: apt remove takes both away, the depmod override alone stays" {
  package
  assert_success
  local x="${BATS_TEST_TMPDIR}/x" load=usr/lib/modprobe.d/nvidia-p2p-load.conf opts=usr/lib/modprobe.d/nvidia-p2p.conf m
  dpkg-deb -R "${DEB}" "${x}"
  # the options: no install line; how to change them (a copy in /etc)
  run grep -E '^[[:space:]]*(install|remove)[[:space:]]' "${x}/${opts}"
  assert_failure
  run cat "${x}/${opts}"
  assert_line --regexp '^options nvidia .*NVreg_RegistryDwords="RMForceP2PType=2"'
  assert_line "# The install lines that load these modules: /${load}"
  assert_output --partial "copy this file to /etc/modprobe.d/ and edit"
  refute_output --partial "# Comment out the options line(s) and reboot"
  # the one conffile: the depmod override; nothing of modprobe.d
  run cat "${x}/DEBIAN/conffiles"
  assert_output "/etc/depmod.d/nvidia-p2p.conf"
  # the install lines: all five, in a file of their own
  run cat "${x}/${load}"
  for m in nvidia nvidia-modeset nvidia-drm nvidia-uvm nvidia-peermem; do
    assert_line "install ${m} modprobe -i ${m} \$CMDLINE_OPTS"
  done
  refute_line --regexp '^options '
  assert_line "# Options: /${opts}. To change these lines, copy this file"
  run grep -F -e "${load}" -e "${opts}" "${x}/DEBIAN/md5sums"
  assert_success
  assert_equal "${#lines[@]}" 2
  # its name sorts before Debian's nvidia.conf (kmod: by name, C order)
  run bash -c 'printf "%s\n" nvidia.conf nvidia-p2p-load.conf | LC_ALL=C sort | head -n 1'
  assert_output "nvidia-p2p-load.conf"
}

@test "the real kmod: ours while installed, an /etc copy overrides the options, nothing of ours after apt remove (Debian's nvidia-current, Ubuntu's nvidia) or purge" {
  command -v modprobe >/dev/null 2>&1 || skip "modprobe (kmod) is not installed"
  package
  assert_success
  local x="${BATS_TEST_TMPDIR}/x" k="${BATS_TEST_TMPDIR}/k" debian="${BATS_TEST_TMPDIR}/debian"
  local etc="${BATS_TEST_TMPDIR}/etc" none="${BATS_TEST_TMPDIR}/none"
  dpkg-deb -R "${DEB}" "${x}"
  mkdir -p "${k}/lib/modules/0.0.0-none" "${debian}" "${etc}" "${none}"
  # Debian's nvidia-kernel-support: /etc/modprobe.d/nvidia.conf
  printf 'install nvidia modprobe -i nvidia-current %s\n' "\$CMDLINE_OPTS" >"${debian}/nvidia.conf"
  show() { modprobe -d "${k}" -S 0.0.0-none "$@" --show-depends nvidia; }
  # installed: /etc, /usr/lib, Debian's files read together
  run show -C "${etc}" -C "${x}/usr/lib/modprobe.d" -C "${debian}"
  assert_success
  assert_output "install modprobe -i nvidia \$CMDLINE_OPTS NVreg_RegistryDwords=\"RMForceP2PType=2\" "
  # the admin's copy in /etc/modprobe.d, options commented out: it hides
  # the package's file of that name (P2P off), the install line stays ours
  sed 's/^options /# options /' "${x}/usr/lib/modprobe.d/nvidia-p2p.conf" >"${etc}/nvidia-p2p.conf"
  run show -C "${etc}" -C "${x}/usr/lib/modprobe.d" -C "${debian}"
  assert_success
  assert_output --regexp '^install modprobe -i nvidia [$]CMDLINE_OPTS *$'
  rm -f "${etc}/nvidia-p2p.conf"
  # removed, not purged: the package's files are gone, its conffiles
  # (the depmod override, no modprobe.d file) stay; Debian's install line
  # runs, with no option of ours
  run grep -c '^/etc/modprobe\.d/' "${x}/DEBIAN/conffiles"
  assert_output 0
  run show -C "${etc}" -C "${debian}"
  assert_success
  assert_output --regexp '^install modprobe -i nvidia-current [$]CMDLINE_OPTS *$'
  refute_output --partial "NVreg_"
  # Ubuntu: the stock module is nvidia itself, no install line: no option
  # of module nvidia is configured
  run modprobe -C "${etc}" -C "${none}" -c
  assert_success
  refute_output --regexp '^options nvidia '
  # while installed, it was
  run modprobe -C "${etc}" -C "${x}/usr/lib/modprobe.d" -c
  assert_line --regexp '^options nvidia .*RMForceP2PType=2'
  # purged
  run show -C "${debian}"
  assert_success
  assert_output --regexp '^install modprobe -i nvidia-current [$]CMDLINE_OPTS *$'
}

@test "lintian's concerns: maintainer, copyright notice, no VCS files, overrides with their reasons" {
  package
  assert_success
  run dpkg-deb -f "${DEB}" Maintainer
  assert_output "nvidia-p2p local build <nvidia-p2p@local-build.invalid>"
  # upstream's kernel-open/.gitignore stays out of the package
  printf '*.o\n' >"${WORK}/${FIXTURE_TAG}/patched/kernel-open/.gitignore"
  rerecord_patched "${WORK}/${FIXTURE_TAG}/patched"
  DEBEMAIL=ann@example.org DEBFULLNAME="Ann Example" package --revision 2
  assert_success
  assert_file_exist "${WORK}/${FIXTURE_TAG}/dkms-src/.gitignore"
  run dpkg-deb -f "${OUT}/nvidia-p2p-dkms_${FIXTURE_TAG}-2_amd64.deb" Maintainer
  assert_output "Ann Example <ann@example.org>"
  run dpkg-deb -c "${OUT}/nvidia-p2p-dkms_${FIXTURE_TAG}-2_amd64.deb"
  refute_output --partial ".gitignore"
  local x="${BATS_TEST_TMPDIR}/x"
  dpkg-deb -R "${DEB}" "${x}"
  run cat "${x}/usr/share/lintian/overrides/nvidia-p2p-dkms"
  assert_line "nvidia-p2p-dkms: unstripped-binary-or-object [usr/src/nvidia-p2p-${FIXTURE_TAG}/nvidia/nv-kernel.o_binary]"
  assert_line "nvidia-p2p-dkms: initial-upload-closes-no-bugs *"
  assert_line "nvidia-p2p-dkms: obsolete-command-in-modprobe.d-file install [usr/lib/modprobe.d/nvidia-p2p-load.conf]"
  refute_output --partial "[etc/modprobe.d/"
  assert_line "nvidia-p2p-dkms: maintainer-script-should-not-use-dpkg-maintscript-helper *"
  run grep -c '^#' "${x}/usr/share/lintian/overrides/nvidia-p2p-dkms"
  assert_output 10
  run bash -c "zcat '${x}/usr/share/doc/nvidia-p2p-dkms/changelog.Debian.gz' | awk 'length > 80 && !/^ -- /' | wc -l"
  assert_output 0
}

@test "the real lintian: no error or warning (the chroot test runs it on a real tag's package too)" {
  command -v lintian >/dev/null || skip "lintian not installed (ci/setup/deps.sh installs it)"
  package
  assert_success
  # upstream's COPYING, whose notice the copyright file takes (the fixture
  # has none)
  printf 'MIT:\n\n    Copyright (c) 2021 NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n' \
    >"${WORK}/${FIXTURE_TAG}/patched/COPYING"
  rerecord_patched "${WORK}/${FIXTURE_TAG}/patched"
  package
  assert_success
  run lintian --fail-on error,warning "${DEB}"
  assert_success
  refute_output --regexp '^[EW]: '
  # the check bites: a description line over 80 columns is a warning
  local x="${BATS_TEST_TMPDIR}/x"
  dpkg-deb -R "${DEB}" "${x}"
  sed -i -E 's/^( \.)$/ '"$(printf 'w%.0s' {1..81})"'\n\1/' "${x}/DEBIAN/control"
  dpkg-deb --root-owner-group --build "${x}" "${BATS_TEST_TMPDIR}/long.deb" >/dev/null
  run lintian --fail-on error,warning "${BATS_TEST_TMPDIR}/long.deb"
  assert_failure
  assert_output --partial "extended-description-line-too-long"
}

@test "the maintainer scripts hand the build to DKMS and are valid sh" {
  package
  assert_success
  local x="${BATS_TEST_TMPDIR}/x"
  dpkg-deb -R "${DEB}" "${x}"
  sh -n "${x}/DEBIAN/preinst"
  sh -n "${x}/DEBIAN/postinst"
  sh -n "${x}/DEBIAN/prerm"
  sh -n "${x}/DEBIAN/postrm"
  run cat "${x}/DEBIAN/postinst"
  assert_output --partial "dkms add -m \"\$NAME\" -v \"\$VERSION\""
  assert_output --partial "dkms install -m \"\$NAME\" -v \"\$VERSION\" -k \"\$kver\""
  assert_line "VERSION=${FIXTURE_TAG}"
  run cat "${x}/DEBIAN/prerm"
  assert_output --partial "dkms remove -m \"\$NAME\" -v \"\$VERSION\" --all"
  assert_equal "$(stat -c %a "${x}/DEBIAN/postinst")" 755
}

@test "preinst, postinst and postrm remove the options conffile of older packages as debhelper's rm_conffile does, prior version <this version>~" {
  package --revision 3
  assert_success
  local x="${BATS_TEST_TMPDIR}/x" f line
  dpkg-deb -R "${OUT}/nvidia-p2p-dkms_${FIXTURE_TAG}-3_amd64.deb" "${x}"
  line="dpkg-maintscript-helper rm_conffile /etc/modprobe.d/nvidia-p2p.conf ${FIXTURE_TAG}-3~ -- \"\$@\""
  for f in preinst postinst postrm; do
    sh -n "${x}/DEBIAN/${f}"
    assert_equal "$(stat -c %a "${x}/DEBIAN/${f}")" 755
    run grep -c -F -x "${line}" "${x}/DEBIAN/${f}"
    assert_output 1
    # after set -e, before anything else can exit
    run grep -v -E '^(#|$)' "${x}/DEBIAN/${f}"
    assert_line --index 0 "set -e"
    assert_line --index 1 "${line}"
  done
  run grep -c 'dpkg-maintscript-helper' "${x}/DEBIAN/prerm"
  assert_output 0
  # postinst: a changed conffile (kept as .dpkg-bak) is said, with the way
  # to keep the changes
  run cat "${x}/DEBIAN/postinst"
  assert_output --partial "/etc/modprobe.d/nvidia-p2p.conf.dpkg-bak"
  assert_output --partial "dpkg --compare-versions -- \"\$2\" le-nl \"${FIXTURE_TAG}-3~\""
  # dpkg's own helper: the prior version is one dpkg takes, lower than the
  # package's own and higher than the revisions before it
  if command -v dpkg >/dev/null 2>&1; then
    dpkg --validate-version "${FIXTURE_TAG}-3~"
    dpkg --compare-versions "${FIXTURE_TAG}-2" lt "${FIXTURE_TAG}-3~"
    dpkg --compare-versions "${FIXTURE_TAG}-3~" lt "${FIXTURE_TAG}-3"
  fi
}

@test "preinst and postrm hand dpkg-maintscript-helper rm_conffile their own arguments" {
  package
  assert_success
  local x="${BATS_TEST_TMPDIR}/x"
  dpkg-deb -R "${DEB}" "${x}"
  stub dpkg-maintscript-helper - <<'STUB'
exit 0
STUB
  run sh "${x}/DEBIAN/preinst" upgrade "${FIXTURE_TAG}-0"
  assert_success
  run sh "${x}/DEBIAN/postrm" abort-upgrade "${FIXTURE_TAG}-0"
  assert_success
  run cat "${STUB_LOG}"
  assert_line "dpkg-maintscript-helper rm_conffile /etc/modprobe.d/nvidia-p2p.conf ${FIXTURE_TAG}-1~ -- upgrade ${FIXTURE_TAG}-0"
  assert_line "dpkg-maintscript-helper rm_conffile /etc/modprobe.d/nvidia-p2p.conf ${FIXTURE_TAG}-1~ -- abort-upgrade ${FIXTURE_TAG}-0"
}

@test "prerm: after dkms remove, a kernel with headers only and no module keeps no index files; others keep them" {
  package
  assert_success
  local x="${BATS_TEST_TMPDIR}/x" m="${BATS_TEST_TMPDIR}/root/lib/modules"
  dpkg-deb -R "${DEB}" "${x}"
  mkdir -p "${m}/6.1.0-1-amd64/kernel" "${m}/6.12.0-1-amd64/updates/dkms"
  touch "${m}/6.1.0-1-amd64/modules.builtin" "${m}/6.1.0-1-amd64/modules.dep" \
    "${m}/6.12.0-1-amd64/modules.dep" "${m}/6.12.0-1-amd64/modules.alias.bin"
  # Headers only, but another DKMS module built there: its index stays.
  mkdir -p "${m}/6.13.0-1-amd64/updates/dkms"
  touch "${m}/6.13.0-1-amd64/updates/dkms/other.ko.xz" "${m}/6.13.0-1-amd64/modules.dep"
  sed "s|/lib/modules|${m}|g" "${x}/DEBIAN/prerm" >"${BATS_TEST_TMPDIR}/prerm"
  stub dkms - <<'STUB'
[ "$1" = status ] && echo "nvidia-p2p/x: added"
exit 0
STUB
  run sh "${BATS_TEST_TMPDIR}/prerm" remove
  assert_success
  run grep -c '^dkms remove' "${STUB_LOG}"
  assert_output 1
  assert_file_exist "${m}/6.1.0-1-amd64/modules.dep"
  assert_not_exist "${m}/6.12.0-1-amd64"
  assert_file_exist "${m}/6.13.0-1-amd64/modules.dep"
}

@test "package of a tag not in versions.conf is refused (3) and writes nothing" {
  run_build package 999.99.99 --out "${OUT}"
  assert_failure 3
  assert_not_exist "${OUT}"
}

@test "--format other than deb, arch or rpm is a usage error (2); --revision sets the Debian revision, a bad one is refused (2)" {
  package --format msi
  assert_failure 2
  assert_output --partial "--format msi: not a package format (deb, arch or rpm)"
  assert_not_exist "${OUT}"
  package --revision a1
  assert_failure 2
  assert_output --partial "is not a Debian revision"
  package --revision 'x;1'
  assert_failure 2
  assert_output --partial "is not a package revision"
  package --revision 3
  assert_success
  assert_file_exist "${OUT}/nvidia-p2p-dkms_${FIXTURE_TAG}-3_amd64.deb"
}

@test "a failing build of the objects stops the package (8) and leaves no .deb" {
  FAKE_OBJECTS_FAIL=1 package
  assert_failure 8
  assert_output --partial "building the kernel-independent objects of ${FIXTURE_TAG} failed"
  assert_equal "$(find "${OUT}" -name '*.deb' 2>/dev/null | wc -l)" 0
}

@test "objects without ENDBR64 stop the package (8): DKMS may build them for a kernel with IBT" {
  FAKE_NO_ENDBR=1 package
  assert_failure 8
  assert_output --partial "nv-kernel.o has no ENDBR64 instruction"
  assert_output --partial "DKMS links them into modules for any kernel"
  assert_equal "$(find "${OUT}" -name '*.deb' 2>/dev/null | wc -l)" 0
}

@test "package --dry-run plans and builds nothing" {
  run_build --dry-run package "${FIXTURE_TAG}" --out "${OUT}"
  assert_success
  assert_output --partial "would run: make"
  assert_output --partial "nv-kernel.o_binary"
  assert_output --partial "would build ${DEB} with dpkg-deb"
  assert_not_exist "${OUT}"
  assert_not_exist "${CACHE}"
}

@test "the objects of an earlier kernel build of the same tree are reused, not rebuilt" {
  run_build build "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache --root "${ROOT}"
  assert_success
  : >"${STUB_LOG}"
  package
  assert_success
  run grep -c '^make .*o_binary' "${STUB_LOG}"
  assert_output 0
}

# upgrade_bundle DIR MODULE INSTALLED USERSPACE [OTHERS]: a doctor bundle (the files
# build.sh doctor --collect writes) of a machine after Debian's driver moved
# to a new version: /proc/driver/nvidia/version of MODULE ("open 535.261.03"
# or "proprietary 550.163.01"), what dpkg says of nvidia-p2p-dkms
# (INSTALLED: a version or none), the userspace libraries' version, and
# the other NVIDIA kernel module packages dpkg lists (OTHERS, default none).
upgrade_bundle() {
  local d=$1 kind=${2%% *} v=${2#* } name="Open Kernel Module for x86_64"
  [[ ${kind} == open ]] || name="Kernel Module"
  mkdir -p "${d}"
  printf 'NVRM version: NVIDIA UNIX %s  %s  Release Build  (dvs-builder@U16-I3-B03-4-3)  Wed Jun 25 08:33:51 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n' \
    "${name}" "${v}" >"${d}/nvidia-version.txt"
  printf 'nvidia-p2p-installed: %s\nnvidia-p2p-dkms: %s\nother-nvidia-kernel-packages: %s\nloaded-version: %s\n' \
    "$3" "$3" "${5:-none}" "${v}" >"${d}/nvidia-p2p.txt"
  printf 'libnvidia-ml.so.%s\nuserspace in charge: Debian packages %s\n' "$4" "$4" >"${d}/userspace.txt"
}

@test "doctor after apt full-upgrade moved Debian's driver (test/real/apt_upgrade.bats): before the reboot, the old module beside the new userspace; without our package of the new version, Debian's module" {
  # ours upgraded with the driver (535.261.03 -> 550.163.01), not rebooted
  upgrade_bundle "${BATS_TEST_TMPDIR}/with" "open 535.261.03" 550.163.01 550.163.01
  run_build doctor --from "${BATS_TEST_TMPDIR}/with"
  assert_failure 30
  assert_output --partial "userspace-mismatch [blocks, certain]"
  assert_output --partial "userspace driver libraries 550.163.01 beside kernel module 535.261.03"
  assert_output --partial "nvidia-p2p-dkms was upgraded to 550.163.01; the open module 535.261.03 is still loaded"
  refute_output --partial "stock-module-loaded ["
  # apt replaced ours by nvidia-kernel-dkms 550.163.01, purged, rebooted
  upgrade_bundle "${BATS_TEST_TMPDIR}/without" "proprietary 550.163.01" none 550.163.01 nvidia-kernel-dkms
  run_build doctor --from "${BATS_TEST_TMPDIR}/without"
  assert_failure 30
  assert_output --partial "stock-module-loaded [blocks, certain]"
  assert_output --partial "NVIDIA's proprietary one"
  refute_output --partial "userspace-mismatch ["
  # the same machine before the upgrade: nothing of this
  upgrade_bundle "${BATS_TEST_TMPDIR}/before" "open 535.261.03" 535.261.03 535.261.03
  run_build doctor --from "${BATS_TEST_TMPDIR}/before"
  refute_output --partial "stock-module-loaded ["
  refute_output --partial "userspace-mismatch ["
}

@test "the changelog's date and the files' times are SOURCE_DATE_EPOCH's, else the series' time (no checkout here), never the build's" {
  SOURCE_DATE_EPOCH=1700000000 package
  assert_success
  local x="${BATS_TEST_TMPDIR}/x"
  dpkg-deb -R "${DEB}" "${x}"
  run bash -c "zcat '${x}/usr/share/doc/nvidia-p2p-dkms/changelog.Debian.gz' | grep '^ -- '"
  assert_output --regexp ' -- .*  Tue, 14 Nov 2023 22:13:20 \+0000$'
  rm -rf "${OUT}" "${x}"
  unset SOURCE_DATE_EPOCH
  touch -d @1600000000 "${NVP2P_DATA_DIR}/series"
  package
  assert_success
  dpkg-deb -R "${DEB}" "${x}"
  run bash -c "zcat '${x}/usr/share/doc/nvidia-p2p-dkms/changelog.Debian.gz' | grep '^ -- '"
  assert_output --regexp ' -- .*  Sun, 13 Sep 2020 12:26:40 \+0000$'
  run bash -c "TZ=UTC dpkg-deb -c '${DEB}' | awk '{print \$4, \$5}' | sort -u"
  assert_output "2020-09-13 12:26"
}

@test "pkg_epoch: SOURCE_DATE_EPOCH, else the commit time of the checkout tracking the series, else the series' time, else 0" {
  local outer="${BATS_TEST_TMPDIR}/outer" d="${BATS_TEST_TMPDIR}/outer/epoch-data"
  mkdir -p "${d}"
  git -C "${outer}" init -q
  : >"${outer}/other"
  git -C "${outer}" add other
  GIT_COMMITTER_DATE="@1550000000 +0000" git -C "${outer}" -c user.name=t -c user.email=t@t commit -qm o
  epoch() {
    run env -u SOURCE_DATE_EPOCH ${1:+"SOURCE_DATE_EPOCH=$1"} NVP2P_DATA_DIR="${d}" \
      bash -c "source '${BUILD_SH}' && pkg_epoch"
  }
  epoch
  assert_success
  assert_output 0
  touch -d @1600000000 "${d}/series"
  # Unpacked inside another checkout that does not track it: not that
  # checkout's time.
  epoch
  assert_output 1600000000
  git -C "${d}" init -q
  git -C "${d}" add series
  # Tracked, but no commit yet: still the series' time.
  epoch
  assert_output 1600000000
  GIT_COMMITTER_DATE="@1650000000 +0000" git -C "${d}" -c user.name=t -c user.email=t@t commit -qm s
  epoch
  assert_output 1650000000
  epoch 1700000000
  assert_output 1700000000
  epoch not-a-number
  assert_output 1650000000
}
