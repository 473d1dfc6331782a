#!/usr/bin/env bats
# The DKMS path with the real tools, never on this machine's /lib/modules:
# ci/heavy/dkms-chroot.sh in a throwaway copy of a bookworm chroot (ci/setup/chroot.sh
# make bookworm-dkms: mmdebstrap from Debian's archive, reused between runs
# when dpkg --verify finds it intact) with real dkms 3.0.10, dpkg/apt,
# lintian, depmod, update-initramfs and the kernel's sign-file, two kernels
# (6.1 with its image, 6.12 headers as the kernel update). For 565.57.01:
# build.sh package, lintian; build.sh repo with it and 570.211.01's package
# (signed, a new key), the chroot's apt pointed at it (signature checked);
# apt install of 565.57.01 from it (DKMS builds and signs for the first
# kernel), the second kernel's headers (DKMS's hook builds for it), apt's
# upgrade to 570.211.01 (DKMS rebuilds for both), apt-get remove of the
# first kernel (DKMS and the initramfs follow; the second kernel keeps its
# modules), apt purge (nothing left); before those, build.sh install
# --kernel / uninstall (module trees equal to before, byte for byte). Slow:
# it runs before the matrix of real_source.bats, which gets the time left.
#
# Taking turns with the matrix: a run whose DKMS_STEPS steps all pass records, in
# the cache, the digest of what it tested (build.sh, lib/, the chroot
# scripts, this file, the series and its family's patches, the tag's pins,
# the chroot's installed packages). A later run with the same digest, within
# DKMS_MAX_AGE_DAYS of that pass, SKIPs every test with the record's date and
# leaves the time to the matrix; any change to one of them runs it again.
# NVP2P_TEST_DKMS=always runs it regardless.
#
# Environment (.ci/run sets these; see real_source.bats): NVP2P_TEST_GIT or
# NVP2P_UPSTREAM_BUNDLE, NVP2P_TEST_CACHE, NVP2P_TEST_CHROOTS,
# NVP2P_TEST_WORK, NVP2P_TEST_DEADLINE; NVP2P_TEST_DKMS.

load ../test_helper
load dkms_record

DKMS_TAG=565.57.01
# The later tag of the same family the repository's clients upgrade to.
DKMS_TAG2=570.211.01
# The steps ci/heavy/dkms-chroot.sh reports (PASS or FAIL lines) when it runs to the end.
DKMS_STEPS=26
# Minutes it needs here: warm (chroot reused, ccache) about 15, cold (a new
# chroot, empty ccache) about 35; it is skipped when fewer are left before
# the deadline, less 20 for the matrix and the tests after it, and gives its
# turn to a heavy test of debian_userspace.bats that the time budget left
# out since this one last ran when the time left does not hold both
# (dkms_record.bash: heavy_turn).
DKMS_NEED_MIN=35
# A pass with the same inputs is trusted for this long (Debian's updates to
# the chroot change its digest sooner).
DKMS_MAX_AGE_DAYS=7

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export D_STEPS="${BATS_FILE_TMPDIR}/steps.txt"
  export D_SKIP=""
  : >"${D_STEPS}"
  local cache="${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}" git root copy work out tag turns
  turns="${cache}/heavy-turns"
  mkdir -p "${cache}"
  D_SKIP=$(dkms_cannot_run)
  [[ -z ${D_SKIP} ]] || return 0
  # The time check waits for the record (a recent pass needs no time) unless
  # the chroot is not made yet: making it takes minutes of its own.
  D_SKIP=$(new_chroot_fits "${NVP2P_TEST_CHROOTS:-${cache}/chroots}/bookworm-dkms" "${turns}" dkms-chroot "${DKMS_NEED_MIN}")
  [[ -z ${D_SKIP} ]] || return 0
  git=$(real_git_dir "${cache}") || { D_SKIP="${git}" && return 0; }
  for tag in "${DKMS_TAG}" "${DKMS_TAG2}"; do
    if ! out=$("${REPO_ROOT}/build.sh" --cache-dir "${cache}" fetch "${tag}" --source "${git}" --no-run 2>&1); then
      D_SKIP="no verified source of ${tag}: $(tail -n 1 <<<"${out}")"
      return 0
    fi
  done
  if ! root=$("${REPO_ROOT}/ci/setup/chroot.sh" make bookworm-dkms "${NVP2P_TEST_CHROOTS:-${cache}/chroots}" 2>"${BATS_FILE_TMPDIR}/chroot.log"); then
    D_SKIP="chroot bookworm-dkms: $(tail -n 1 "${BATS_FILE_TMPDIR}/chroot.log")"
    return 0
  fi
  export D_RECORD="${cache}/dkms-chroot-passed"
  export D_DIGEST
  D_DIGEST=$(inputs_digest "${REPO_ROOT}" "${DKMS_TAG}" "${root}" "${DKMS_TAG2}")
  D_SKIP=$(heavy_gate "${turns}" dkms-chroot "${DKMS_NEED_MIN}" "${D_RECORD}" "${D_DIGEST}" "${DKMS_MAX_AGE_DAYS}" NVP2P_TEST_DKMS)
  [[ -z ${D_SKIP} ]] || return 0
  copy="${BATS_FILE_TMPDIR}/root"
  work="${NVP2P_TEST_WORK:-${BATS_FILE_TMPDIR}/work}-dkms"
  rm -rf "${work}"
  cp -a "${root}" "${copy}"
  "${REPO_ROOT}/ci/heavy/dkms-chroot.sh" "${copy}" "${DKMS_TAG}" "${cache}" "${work}" "${DKMS_TAG2}" >"${D_STEPS}" 2>&1 || true
  rm -rf "${copy}"
  export D_LOG="${work}/steps.log"
  record_result "${D_RECORD}" "${D_DIGEST}" "${D_STEPS}" "${DKMS_STEPS}"
}

# dkms_cannot_run: why this machine cannot run the test, or nothing.
dkms_cannot_run() {
  if [[ "$(id -u)" != 0 ]]; then
    echo "needs root (mounts, chroot)"
  elif ! command -v mmdebstrap >/dev/null 2>&1; then
    echo "mmdebstrap is not installed (Debian package: mmdebstrap)"
  fi
}

setup() {
  [[ -z ${D_SKIP} ]] || skip "${D_SKIP}"
}

# passed PREFIX...: the steps whose names start with each PREFIX passed
# (the whole step list and, on a failure, the log's tail are shown).
passed() { passed_in "${D_STEPS}" "${D_LOG:-}" "$@"; }

@test "dkms chroot: the run names two kernels and real dkms" {
  run grep -E '^kernels: ' "${D_STEPS}"
  assert_output --regexp '^kernels: [^ ]+ and [^ ]+ .*; dkms dkms-[0-9]'
}

@test "dkms chroot: build.sh package ${DKMS_TAG}; lintian reports no error or warning" {
  passed "build.sh package" "lintian"
}

@test "dkms chroot: build.sh repo of ${DKMS_TAG} and ${DKMS_TAG2}; apt takes it with its key, signature checked" {
  passed "build.sh package ${DKMS_TAG2}" "build.sh repo" "apt source"
}

@test "dkms chroot: apt install nvidia-p2p-dkms=${DKMS_TAG}-1 from the repository: DKMS builds signed modules that depmod picks" {
  passed "apt-get install nvidia-p2p-dkms=" "modules of [^ ]+: version"
}

@test "dkms chroot: headers of a second kernel arrive: DKMS builds for it; the first kernel keeps its modules" {
  passed "no modules for" "install the headers of" "modules of [^ ]+ still there"
  run grep -c -E '^PASS modules of [^ ]+: version' "${D_STEPS}"
  assert_output 2
}

@test "dkms chroot: apt upgrades to ${DKMS_TAG2} from the repository: DKMS rebuilds for both kernels, ${DKMS_TAG} is gone" {
  passed "apt-get install nvidia-p2p-dkms: the upgrade" "modules of [^ ]+ after the upgrade" "DKMS holds ${DKMS_TAG2} only"
  run grep -c -E '^PASS modules of [^ ]+ after the upgrade: version' "${D_STEPS}"
  assert_output 2
}

@test "dkms chroot: the first kernel removed (apt-get remove of its image and headers): DKMS drops its modules, its initramfs goes; the second kernel keeps its modules, its initramfs our modprobe.d files" {
  passed "apt-get remove the first kernel" "kernel [^ ]+ removed: DKMS, its module tree and its initramfs follow"
}

@test "dkms chroot: apt purge leaves the module trees as before" {
  passed "apt-get purge" "after purge the module trees are as before"
}

@test "dkms chroot: build.sh install through DKMS, then uninstall restores the module trees byte for byte" {
  passed "build.sh install" "modules of [^ ]+ after build.sh install" "build.sh uninstall" "after uninstall the module trees are as before"
}

@test "dkms chroot: all ${DKMS_STEPS} steps ran and passed" {
  run grep -c '^FAIL' "${D_STEPS}"
  assert_output 0
  run grep -c '^PASS' "${D_STEPS}"
  assert_output "${DKMS_STEPS}"
}
