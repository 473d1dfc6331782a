#!/usr/bin/env bats
# Debian's real NVIDIA driver packages beside nvidia-p2p-dkms, installed with
# the real apt, dpkg and dkms in throwaway copies of the chroots that
# ci/setup/chroots.conf describes (bookworm-dkms for bookworm's nvidia-driver; 7.3,
# which is trixie, for trixie's nvidia-driver and nvidia-tesla-535-driver):
# build.sh package makes the real nvidia-p2p-dkms of the version the suite
# offers, and ci/heavy/debian-userspace.sh installs the driver of that version with
# Debian's kernel module package, then ours in its place (apt swaps them; the
# driver stays; apt-get check is clean), then the suite's kernel headers
# (DKMS builds our five modules for them; `modprobe nvidia` loads ours with
# the P2P options; the GSP firmware of that version stays; build.sh
# preflight names Debian's packages as the userspace), then purges ours (apt
# brings Debian's kernel module package back; modprobe is Debian's again;
# nothing of ours is left).
#
# Heavy (a package build and a DKMS build each: about 20 minutes cold, 7
# with a warm ccache), so each case takes turns like the DKMS test
# (dkms_record.bash): a full pass is recorded with the digest of its inputs
# (build.sh, lib/, the scripts, this file, the series and the family's
# patches, the tag's pins, the chroot's packages) and, for
# USERSPACE_MAX_AGE_DAYS, SKIPs with that pass's date
# (NVP2P_TEST_USERSPACE=always runs it); a case that does not fit the time
# left before NVP2P_TEST_DEADLINE (less 20 for the matrix) SKIPs, and the
# next run lets the heavy test left out longest go first. A chroot not made
# yet is made here (5-7 minutes; the DKMS test and the matrix use the same
# ones). No root, no network or a version versions.conf does not list SKIP,
# with the reason.

load ../test_helper
load dkms_record

# Minutes a case needs here (cold: the package's objects and DKMS's build
# with empty ccaches, package downloads).
USERSPACE_NEED_MIN=20
# The PASS lines of a complete run of ci/heavy/debian-userspace.sh steps.
USERSPACE_STEPS=20
USERSPACE_MAX_AGE_DAYS=7

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export U_CACHE="${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}"
  export CHROOTS="${NVP2P_TEST_CHROOTS:-${U_CACHE}/chroots}"
  # a fixed path, so that ccache hits from one run to the next
  export U_WORK="${NVP2P_TEST_WORK:-${BATS_FILE_TMPDIR}/work}-userspace"
  mkdir -p "${U_CACHE}"
}

# real_deb TAG OUT: build.sh package TAG into OUT (its source fetched from
# the upstream repository and verified first); the .deb's path, or why not.
real_deb() {
  local tag=$1 out=$2 git log
  git=$(real_git_dir "${U_CACHE}") || { printf '%s\n' "${git}" && return 1; }
  log="${U_WORK}/package-${tag}.log"
  if ! "${REPO_ROOT}/build.sh" --cache-dir "${U_CACHE}" fetch "${tag}" --source "${git}" --no-run >"${log}" 2>&1; then
    printf 'no verified source of %s: %s\n' "${tag}" "$(tail -n 1 "${log}")"
    return 1
  fi
  "${REPO_ROOT}/build.sh" --cache-dir "${U_CACHE}" --work-dir "${U_WORK}/w" package "${tag}" --out "${out}" >>"${log}" 2>&1 ||
    { printf 'build.sh package %s failed: %s\n' "${tag}" "$(tail -n 1 "${log}")" && return 1; }
  printf '%s\n' "${out}/nvidia-p2p-dkms_${tag}-1_amd64.deb"
}

# scenario CHROOT DRIVER KMOD: the steps for DRIVER in a copy of CHROOT.
scenario() {
  local name=$1 driver=$2 kmod=$3 dir="${BATS_TEST_TMPDIR}/chroots" work="${BATS_TEST_TMPDIR}/work" tag deb why
  local turn="userspace-${name}-${driver}" turns="${U_CACHE}/heavy-turns" record digest
  [[ "$(id -u)" == 0 ]] || skip "needs root (chroot, mounts)"
  why=$(new_chroot_fits "${CHROOTS}/${name}" "${turns}" "${turn}" "${USERSPACE_NEED_MIN}")
  [[ -z ${why} ]] || skip "${why}"
  mkdir -p "${dir}/${name}" "${work}" "${U_WORK}" "${U_CACHE}/ccache-userspace"
  # verified (dpkg --verify) and brought up to date, or made (a few minutes
  # the DKMS test and the matrix, which use the same chroots, then save)
  "${REPO_ROOT}/ci/setup/chroot.sh" make "${name}" "${CHROOTS}" >/dev/null 2>"${work}/make.log" ||
    skip "chroot ${name}: $(tail -n 1 "${work}/make.log")"
  cp -a "${CHROOTS}/${name}/root" "${dir}/${name}/root"
  mkdir -p "${dir}/${name}/root/lab/repo" "${dir}/${name}/root/lab/work" "${dir}/${name}/root/lab/ccache"
  local -a run=("${REPO_ROOT}/ci/setup/chroot.sh" run "${name}" "${dir}" --bind "${REPO_ROOT}:/lab/repo" --bind "${work}:/lab/work"
    --bind "${U_CACHE}/ccache-userspace:/lab/ccache" --)
  tag=$("${run[@]}" /lab/repo/ci/heavy/debian-userspace.sh candidate "${driver}" 2>"${work}/candidate.log") ||
    skip "no ${driver} from Debian's archive in ${name} (offline?): $(tail -n 1 "${work}/candidate.log")"
  digest=$(userspace_digest "${REPO_ROOT}" "${tag}" "${CHROOTS}/${name}/root") ||
    skip "${name}'s ${driver} is ${tag}, which versions.conf does not list"
  record="${U_CACHE}/${turn}-passed"
  why=$(heavy_gate "${turns}" "${turn}" "${USERSPACE_NEED_MIN}" "${record}" "${digest}" "${USERSPACE_MAX_AGE_DAYS}" NVP2P_TEST_USERSPACE)
  [[ -z ${why} ]] || skip "${why}"
  deb=$(real_deb "${tag}" "${work}") || fail "${deb}"
  run "${run[@]}" /usr/bin/env CCACHE_DIR=/lab/ccache /lab/repo/ci/heavy/debian-userspace.sh steps "${driver}" "${kmod}" "${tag}" "/lab/work/${deb##*/}"
  printf '%s\n' "${output}" >"${work}/steps.txt"
  record_result "${record}" "${digest}" "${work}/steps.txt" "${USERSPACE_STEPS}"
  if [[ ${status} -ne 0 ]]; then
    cat "${work}/steps.txt"
    tail -n 40 "${dir}/${name}/root/tmp/debian-userspace.log" 2>/dev/null || true
  fi
  rm -rf "${dir:?}/${name}"
  assert_success
  assert_line --partial "PASS apt-get install linux-headers-amd64: DKMS's hook builds nvidia-p2p ${tag} ("
  assert_line --partial "PASS DKMS's modules: all five, version ${tag}, vermagic of the kernel, depmod picks them ("
  assert_line --partial "PASS modprobe nvidia loads ours, with the P2P options ("
  assert_line --partial "PASS build.sh preflight: the userspace driver is Debian's ${tag}, as the modules ("
  assert_line --partial "PASS apt-get purge nvidia-p2p-dkms (apt brings ${kmod} back) ("
  assert_line --partial "PASS no nvidia-p2p modules left (DKMS, updates/dkms) ("
  refute_line --regexp '^FAIL '
  run grep -c '^PASS ' "${work}/steps.txt"
  assert_output "${USERSPACE_STEPS}"
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
