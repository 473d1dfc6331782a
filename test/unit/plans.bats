#!/usr/bin/env bats
# The whole --dry-run plan of the pipeline, line by line, against the expected
# text in test/fixtures/plans/ (times, the job count and this run's temporary
# paths normalised), as dkms tests its output. A change to any message of the
# plan shows here; when it is meant, regenerate the expected text with
# NVP2P_UPDATE_PLANS=1 bats test/unit/plans.bats and review the diff.

load ../test_helper

setup() {
  common_setup
  make_fixture
  export STANDIN_ROOT="${ROOT}"
  stub_dkms
}

# normalised: the output with [MM:SS] times, -jN, the fixture's commit id
# (its git repository is made per run) and the temporary paths of this run
# replaced by fixed words.
normalised() {
  sed -E -e 's/^\[[0-9]{2}:[0-9]{2}\]/[mm:ss]/' -e 's/-j[0-9]+/-jN/g' -e 's|/archive/[0-9a-f]{40}\.|/archive/<commit>.|' \
    -e "s|${FIX}|<fixture>|g" -e "s|${BATS_TEST_TMPDIR}|<tmp>|g" <<<"${output}"
}

# plan_is NAME: the normalised output equals test/fixtures/plans/NAME.txt
# (NVP2P_UPDATE_PLANS=1 writes it instead).
plan_is() {
  local expected="${REPO_ROOT}/test/fixtures/plans/$1.txt"
  if [[ ${NVP2P_UPDATE_PLANS:-0} == 1 ]]; then
    normalised >"${expected}"
  fi
  assert_file_exist "${expected}"
  diff -u "${expected}" <(normalised) || fail "the plan differs from test/fixtures/plans/$1.txt (diff above)"
}

@test "plan: build.sh <tag> --dry-run as a normal user (DKMS, install through sudo)" {
  as_user
  stub sudo
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --no-ccache
  assert_success
  plan_is pipeline-user-dkms
}

@test "plan: build.sh <tag> --dry-run --no-dkms as root, with a .run given" {
  as_root
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --no-ccache --no-dkms \
    --run "${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  assert_success
  plan_is pipeline-root-no-dkms
}

@test "plan: a problem in the plan (no headers for the kernel) is in its place, and the plan's end says so" {
  as_root
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --kernel 6.1.0-77-amd64 --no-ccache
  assert_failure 10
  plan_is pipeline-no-headers
}

@test "plan comparison fails on a changed line (the test can fail)" {
  as_user
  stub sudo
  run_build --root "${ROOT}" --dry-run "${FIXTURE_TAG}" --no-ccache
  output=${output/would run: depmod/would run: DEPMOD}
  run plan_is pipeline-user-dkms
  assert_failure
  assert_output --partial "+would run: DEPMOD"
}
