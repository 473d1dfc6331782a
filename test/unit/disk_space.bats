#!/usr/bin/env bats
# Disk space: fetch, patch and build refuse a disk without the room they need
# (one line: the directory, the space free, the space needed; exit 17), and a
# disk that fills up anyway ends in one line that says so (exit 17), with the
# errors of cp and tar in the log, not on the terminal, and nothing half-made
# kept. The full disk is real: a 2 MiB tmpfs, with df made to say there is
# room (the check can be wrong).

load ../test_helper

setup() {
  common_setup
  make_fixture
  SMALL=""
}

teardown() {
  [[ -z ${SMALL} ]] || umount -l "${SMALL}" 2>/dev/null || true
}

# stub_df KIB: df reports KIB KiB available on every file system.
stub_df() {
  export STUB_DF_KIB=$1
  stub df - <<'STUB'
printf 'Filesystem 1024-blocks Used Available Capacity Mounted on\n'
printf 'stub %s 0 %s 0%% /\n' "${STUB_DF_KIB}" "${STUB_DF_KIB}"
STUB
}

# small_disk DIR: a 2 MiB tmpfs mounted at DIR (unmounted in teardown); the
# test is skipped, saying why, where it cannot be mounted.
small_disk() {
  mkdir -p "$1"
  mount -t tmpfs -o size=2m tmpfs "$1" 2>/dev/null ||
    skip "cannot mount a tmpfs at $1 (needs root and permission to mount): the full-disk path is not tested here"
  SMALL=$1
}

# fill DIR: the file system of DIR full (a file that takes what is left).
fill() {
  dd if=/dev/zero of="$1/filler" bs=64k 2>/dev/null || true
}

# one_line CODE: the run failed with CODE, printed exactly one build.sh: line
# besides the first, which names the log ("build.sh: log: FILE"), as the last,
# and fewer than 7 lines in all (the stages' progress lines before it).
one_line() {
  assert_failure "$1"
  assert_equal "$(grep '^build.sh:' <<<"${output}" | grep -c -v '^build.sh: log: ')" 1
  assert_line --index -1 --regexp '^build\.sh: '
  refute_line --index -1 --regexp '^build\.sh: log: '
  [[ ${#lines[@]} -lt 7 ]] || fail "${#lines[@]} lines of output: ${output}"
}

# a source of the fixture tag with 3 MiB more than the tmpfs holds
big_tree() {
  cp -a "${FIX}/rel/NVIDIA-kernel-module-source-${FIXTURE_TAG}" "$1"
  head -c 3M /dev/zero >"$1/big.bin"
}

@test "fetch on a disk without the room is refused first: one line with the directory, the space free and needed (17)" {
  stub_df 102400
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  one_line 17
  assert_output --partial "not enough disk space in ${CACHE} for the source of ${FIXTURE_TAG}: 100 MiB free, about 320 MiB needed"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "fetch --dry-run names the missing space as a PROBLEM and exits 17" {
  stub_df 102400
  run_build --dry-run fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_failure 17
  assert_output --partial "PROBLEM: not enough disk space in ${CACHE}"
}

@test "patch on a disk without the room is refused first (17), naming the work directory" {
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  stub_df 51200
  run_build patch "${FIXTURE_TAG}"
  one_line 17
  assert_output --partial "not enough disk space in ${WORK}/${FIXTURE_TAG} for the patched tree of ${FIXTURE_TAG}: 50 MiB free, about 160 MiB needed"
  assert_not_exist "${WORK}/${FIXTURE_TAG}/patched"
}

@test "build on a disk without the room is refused first (17): a tag takes about 1 GiB built" {
  run_build patch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  stub_df 512000
  run_build --root "${ROOT}" build "${FIXTURE_TAG}" --no-ccache
  one_line 17
  assert_output --partial "500 MiB free, about 800 MiB needed (a tag takes about 1 GiB built)"
  assert_not_exist "${WORK}/${FIXTURE_TAG}/build-${FIXTURE_KREL}"
}

@test "fetch of a directory onto a disk that fills up: one line saying the disk is full (17), nothing cached" {
  small_disk "${BATS_TEST_TMPDIR}/small"
  big_tree "${BATS_TEST_TMPDIR}/big"
  stub_df 10485760
  run "${BUILD_SH}" --cache-dir "${SMALL}/cache" --work-dir "${WORK}" fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/big"
  one_line 17
  assert_output --partial "build.sh: the disk of ${SMALL}/cache/src/.tmp."
  assert_output --partial "is full (no space left while copying ${BATS_TEST_TMPDIR}/big"
  refute_output --partial "cp:"
  assert_equal "$(find "${SMALL}/cache/src" -mindepth 1 | wc -l)" 0
}

@test "fetch of a tarball onto a disk that fills up: tar's errors are not shown, one line says the disk is full (17)" {
  small_disk "${BATS_TEST_TMPDIR}/small"
  big_tree "${BATS_TEST_TMPDIR}/big"
  tar -C "${BATS_TEST_TMPDIR}" -czf "${BATS_TEST_TMPDIR}/big.tar.gz" big
  stub_df 10485760
  run "${BUILD_SH}" --cache-dir "${SMALL}/cache" --work-dir "${WORK}" fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/big.tar.gz"
  one_line 17
  assert_output --partial "is full (no space left while unpacking"
  refute_output --partial "tar:"
  refute_output --partial "not a tarball"
  assert_equal "$(find "${SMALL}/cache/src" -mindepth 1 | wc -l)" 0
}

@test "fetch of a git repository onto a disk that fills up blames the disk, not the repository (17)" {
  small_disk "${BATS_TEST_TMPDIR}/small"
  git clone -q "${FIX}/upstream" "${BATS_TEST_TMPDIR}/bigrepo"
  head -c 3M /dev/urandom >"${BATS_TEST_TMPDIR}/bigrepo/big.bin"
  git -C "${BATS_TEST_TMPDIR}/bigrepo" add big.bin
  git -C "${BATS_TEST_TMPDIR}/bigrepo" -c user.name=t -c user.email=t@t commit -q -m big
  # the pin is the big commit's here: the export is what fails
  sed -i "s/$(git -C "${FIX}/upstream" rev-parse HEAD)/$(git -C "${BATS_TEST_TMPDIR}/bigrepo" rev-parse HEAD)/" "${NVP2P_DATA_DIR}/versions.conf"
  git -C "${BATS_TEST_TMPDIR}/bigrepo" tag -d "${FIXTURE_TAG}" >/dev/null
  stub_df 10485760
  run "${BUILD_SH}" --cache-dir "${SMALL}/cache" --work-dir "${WORK}" fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/bigrepo"
  one_line 17
  assert_output --partial "is full (no space left while exporting commit"
  refute_output --partial "tar:"
  assert_equal "$(find "${SMALL}/cache/src" -mindepth 1 | wc -l)" 0
}

@test "patch onto a full disk: the errors go to the log, one line says the disk is full (17), no patched tree" {
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  small_disk "${BATS_TEST_TMPDIR}/small"
  fill "${SMALL}"
  stub_df 10485760
  run "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${SMALL}/work" patch "${FIXTURE_TAG}"
  one_line 17
  assert_output --partial "build.sh: the disk of ${SMALL}/work/${FIXTURE_TAG}/.tmp."
  assert_output --partial "is full (no space left while"
  assert_output --partial "log: ${CACHE}/logs/"
  refute_output --partial "cp:"
  run grep -l 'No space left on device' "${CACHE}"/logs/*.log
  assert_success
  assert_not_exist "${SMALL}/work/${FIXTURE_TAG}/patched"
  assert_equal "$(find "${SMALL}/work" -name '.tmp.*' | wc -l)" 0
}

@test "build onto a full disk: one line says the disk is full (17), no half-copied build tree is kept" {
  small_disk "${BATS_TEST_TMPDIR}/small"
  stub_df 10485760
  run "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${SMALL}/work" patch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  fill "${SMALL}"
  run "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${SMALL}/work" --root "${ROOT}" build "${FIXTURE_TAG}" --no-ccache
  one_line 17
  assert_output --partial "is full (no space left while copying the patched tree"
  assert_not_exist "${SMALL}/work/${FIXTURE_TAG}/build-${FIXTURE_KREL}"
}
