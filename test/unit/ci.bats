#!/usr/bin/env bats
# ci/: the generated workflow stays in step with versions.conf; the matrix
# prints a tag x stage table and makes skips visible.

load ../test_helper

setup() {
  common_setup
}

@test "the committed workflow equals what ci/gen-workflow.sh makes from versions.conf" {
  run "${REPO_ROOT}/ci/gen-workflow.sh" --check
  assert_success
  run grep -c -E '^  tag-[0-9_]+:$' "${REPO_ROOT}/.github/workflows/matrix.yml"
  assert_output "$(grep -c -E '^[0-9]{3}\.' "${REPO_ROOT}/versions.conf")"
}

@test "a tag added to versions.conf makes the workflow check fail" {
  export NVP2P_DATA_DIR="${BATS_TEST_TMPDIR}/data"
  mkdir -p "${NVP2P_DATA_DIR}"
  cp -a "${REPO_ROOT}/versions.conf" "${REPO_ROOT}/series" "${REPO_ROOT}/patches" "${NVP2P_DATA_DIR}/"
  sed -n 's/^565\.57\.01 /565.77 /p' "${REPO_ROOT}/versions.conf" >>"${NVP2P_DATA_DIR}/versions.conf"
  run "${REPO_ROOT}/ci/gen-workflow.sh" --check
  assert_failure
  assert_output --partial "+  tag-565_77:"
  assert_output --partial "is out of date"
}

@test "the matrix runs a tag with a source, SKIPs one without (visibly, with the reason)" {
  make_fixture
  mkdir -p "${BATS_TEST_TMPDIR}/sources"
  cp "${FIX}/release.tar.xz" "${BATS_TEST_TMPDIR}/sources/NVIDIA-kernel-module-source-${FIXTURE_TAG}.tar.xz"
  run "${REPO_ROOT}/ci/matrix.sh" --sources "${BATS_TEST_TMPDIR}/sources" --cache-dir "${CACHE}" \
    --work-dir "${WORK}" --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --summary "${BATS_TEST_TMPDIR}/summary"
  assert_success
  assert_line --regexp "^TAG +source +patch +build:${FIXTURE_KREL} *$"
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +PASS *$"
  assert_line --regexp "^999\.20\.01 +SKIP +- +- *$"
  assert_line --partial "SKIP 999.20.01 source: no verified source for 999.20.01 on this machine"
  assert_file_exist "${BATS_TEST_TMPDIR}/summary"
}

@test "the matrix fails when a stage fails, and when a required tag is skipped" {
  make_fixture
  mkdir -p "${BATS_TEST_TMPDIR}/sources"
  cp "${FIX}/release.tar.xz" "${BATS_TEST_TMPDIR}/sources/NVIDIA-kernel-module-source-${FIXTURE_TAG}.tar.xz"
  run "${REPO_ROOT}/ci/matrix.sh" --sources "${BATS_TEST_TMPDIR}/sources" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --require 999.20.01
  assert_failure 1
  assert_output --partial "required tag 999.20.01 did not run"
  FAKE_MAKE_FAIL=1 run "${REPO_ROOT}/ci/matrix.sh" --sources "${FIX}" --cache-dir "${CACHE}" \
    --work-dir "${WORK}.2" --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --tags "${FIXTURE_TAG}"
  assert_failure 1
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +FAIL *$"
  assert_output --partial "fake failure"
}

@test "the matrix's bisect stage builds every prefix of the series" {
  make_fixture
  run "${REPO_ROOT}/ci/matrix.sh" --sources "${FIX}" --cache-dir "${CACHE}" --work-dir "${WORK}" \
    --kernel-src "${ROOT}/usr/src/linux-headers-${FIXTURE_KREL}" --tags "${FIXTURE_TAG}" --bisect
  assert_success
  assert_line --regexp "^${FIXTURE_TAG} +PASS +PASS +PASS +PASS *$"
  assert_output --partial "every prefix of 2 patches builds"
}

@test "matrix.sh rejects unknown arguments (2) and has --help" {
  run "${REPO_ROOT}/ci/matrix.sh" --frob
  assert_failure 2
  run "${REPO_ROOT}/ci/matrix.sh" --help
  assert_success
  assert_output --partial "Usage: ci/matrix.sh"
}

@test "debian-sources.sh verifies size and sha256, and keeps nothing that fails" {
  stub curl - <<'STUB'
out=""; while [[ $# -gt 0 ]]; do [[ $1 == --output ]] && out=$2; shift; done
printf 'not the tarball' >"${out}"
STUB
  run "${REPO_ROOT}/ci/debian-sources.sh" "${BATS_TEST_TMPDIR}/src"
  assert_failure 6
  assert_output --partial "size or sha256 mismatch"
  assert_equal "$(find "${BATS_TEST_TMPDIR}/src" -type f | wc -l)" 0
}

@test "debian-sources.sh: a failed download exits 5 and leaves nothing" {
  stub curl - <<'STUB'
out=""; while [[ $# -gt 0 ]]; do [[ $1 == --output ]] && out=$2; shift; done
printf 'partial' >"${out}"
exit 22
STUB
  run "${REPO_ROOT}/ci/debian-sources.sh" "${BATS_TEST_TMPDIR}/src"
  assert_failure 5
  assert_output --partial "debian-sources.sh: download failed: https://"
  assert_equal "$(find "${BATS_TEST_TMPDIR}/src" -type f | wc -l)" 0
}

@test "debian-sources.conf lists the two tags CI builds from Debian, with pins matching versions.conf's tags" {
  run awk '!/^#/ && NF { print $1 }' "${REPO_ROOT}/ci/debian-sources.conf"
  assert_output $'535.261.03\n555.58.02'
  local t
  for t in 535.261.03 555.58.02; do
    grep -q "^${t} " "${REPO_ROOT}/versions.conf" || fail "${t} not in versions.conf"
  done
}
