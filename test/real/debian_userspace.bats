#!/usr/bin/env bats
# Debian's real NVIDIA driver packages beside nvidia-p2p-dkms, installed with
# the real apt and dpkg in throwaway copies of the chroots that
# ci/chroots.conf describes (bookworm-dkms for bookworm's nvidia-driver; 7.3,
# which is trixie, for trixie's nvidia-driver and nvidia-tesla-535-driver):
# ci/debian-userspace.sh installs the driver of the version the suite offers
# with Debian's kernel module package, then nvidia-p2p-dkms of that version in
# its place (apt swaps them; the driver stays; apt-get check is clean;
# `modprobe nvidia` loads ours with the P2P options for every kernel; the GSP
# firmware of that version stays), then purges ours (apt brings Debian's
# kernel module package back; modprobe is Debian's again).
#
# nvidia-p2p-dkms here is a stand-in: the control file, conffiles and
# modprobe/depmod files `build.sh package` writes for that tag, without the
# DKMS source; the kernel headers are removed so that no DKMS build runs
# (test/real/dkms_chroot.bats builds and installs the real package). A chroot
# not made yet is made here (5-7 minutes; the DKMS test and the matrix use
# the same ones). No root, no network or a version versions.conf does not
# list SKIP, with the reason. About 2-4 minutes a case (package downloads and
# installs).

load ../test_helper
load debian_pkg

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export CHROOTS="${NVP2P_TEST_CHROOTS:-${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}/chroots}"
}

# standin_deb TAG OUT: OUT/nvidia-p2p-dkms_TAG-1_amd64.deb: the control
# file, the two conffiles and their texts as build.sh package writes them.
standin_deb() {
  local tag=$1 out=$2 pkg="${BATS_TEST_TMPDIR}/pkg" text
  mkdir -p "${pkg}/DEBIAN" "${pkg}/etc/modprobe.d" "${pkg}/etc/depmod.d"
  text=$(control_text "${tag}" "${pkg}") || return $?
  printf '%s\n' "${text}" >"${pkg}/DEBIAN/control"
  text=$(conf_text modprobe "${tag}")
  printf '%s\n' "${text}" >"${pkg}/etc/modprobe.d/nvidia-p2p.conf"
  text=$(conf_text depmod "${tag}")
  printf '%s\n' "${text}" >"${pkg}/etc/depmod.d/nvidia-p2p.conf"
  printf '/etc/modprobe.d/nvidia-p2p.conf\n/etc/depmod.d/nvidia-p2p.conf\n' >"${pkg}/DEBIAN/conffiles"
  dpkg-deb --root-owner-group --build "${pkg}" "${out}/nvidia-p2p-dkms_${tag}-1_amd64.deb" >/dev/null
}

# scenario CHROOT DRIVER KMOD: the steps for DRIVER in a copy of CHROOT.
scenario() {
  local name=$1 driver=$2 kmod=$3 dir="${BATS_TEST_TMPDIR}/chroots" work="${BATS_TEST_TMPDIR}/work" tag rc=0
  [[ "$(id -u)" == 0 ]] || skip "needs root (chroot, mounts)"
  mkdir -p "${dir}/${name}" "${work}"
  # verified (dpkg --verify) and brought up to date, or made (a few minutes
  # the DKMS test and the matrix, which use the same chroots, then save)
  "${REPO_ROOT}/ci/chroot.sh" make "${name}" "${CHROOTS}" >/dev/null 2>"${work}/make.log" ||
    skip "chroot ${name}: $(tail -n 1 "${work}/make.log")"
  cp -a "${CHROOTS}/${name}/root" "${dir}/${name}/root"
  mkdir -p "${dir}/${name}/root/lab/repo" "${dir}/${name}/root/lab/work"
  local -a run=("${REPO_ROOT}/ci/chroot.sh" run "${name}" "${dir}" --bind "${REPO_ROOT}:/lab/repo" --bind "${work}:/lab/work" --)
  tag=$("${run[@]}" /lab/repo/ci/debian-userspace.sh candidate "${driver}" 2>"${work}/candidate.log") ||
    skip "no ${driver} from Debian's archive in ${name} (offline?): $(tail -n 1 "${work}/candidate.log")"
  standin_deb "${tag}" "${work}" || rc=$?
  [[ ${rc} -ne 3 ]] || skip "${name}'s ${driver} is ${tag}, which versions.conf does not list"
  [[ ${rc} -eq 0 ]] || fail "the stand-in package of ${tag} could not be made"
  run "${run[@]}" /lab/repo/ci/debian-userspace.sh steps "${driver}" "${kmod}" "${tag}" "/lab/work/nvidia-p2p-dkms_${tag}-1_amd64.deb"
  printf '%s\n' "${output}" >"${work}/steps.txt"
  if [[ ${status} -ne 0 ]]; then
    cat "${work}/steps.txt"
    tail -n 30 "${dir}/${name}/root/tmp/debian-userspace.log" 2>/dev/null || true
  fi
  rm -rf "${dir:?}/${name}"
  assert_success
  assert_line "PASS modprobe nvidia loads ours, with the P2P options"
  assert_line "PASS build.sh preflight: the userspace driver is Debian's ${tag}, as the modules"
  assert_line "PASS apt-get purge nvidia-p2p-dkms (apt brings ${kmod} back)"
  refute_line --regexp '^FAIL '
}

@test "Debian bookworm: nvidia-driver, then nvidia-p2p-dkms in nvidia-kernel-dkms's place, then back to stock" {
  scenario bookworm-dkms nvidia-driver nvidia-kernel-dkms
}

@test "Debian trixie: nvidia-driver, then nvidia-p2p-dkms in nvidia-kernel-dkms's place, then back to stock" {
  scenario 7.3 nvidia-driver nvidia-kernel-dkms
}

@test "Debian trixie: nvidia-tesla-535-driver, then nvidia-p2p-dkms in nvidia-tesla-535-kernel-dkms's place, then back" {
  scenario 7.3 nvidia-tesla-535-driver nvidia-tesla-535-kernel-dkms
}
