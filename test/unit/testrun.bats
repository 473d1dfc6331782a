#!/usr/bin/env bats
# test/run, the project's test command: what it says before the heavy tier,
# and its summary line where the output is a file (bats stands in).

load ../test_helper

setup() {
  common_setup
  # a bats that prints TAP for the tier it is given, and fails like bats
  stub bats - <<'SH'
printf '1..3\nok 1 first\nnot ok 2 second\n# (in test file x)\nok 3 third # skip no GPU\n'
exit 1
SH
}

@test "test/run unit into a file ends with its summary line and bats' exit status" {
  run "${REPO_ROOT}/test/run" unit
  assert_failure 1
  assert_line 'unit: 1 passed, 1 failed, 1 skipped'
  assert_line 'ok 3 third # skip no GPU'
  run cat "${STUB_LOG}"
  assert_output --regexp "^bats --timing .*/test/unit$"
}

@test "test/run without a tier says what the real tier costs before it starts, and stops after a failed unit tier" {
  run "${REPO_ROOT}/test/run"
  assert_failure 1
  assert_line --partial 'test/run: all tiers: the hermetic tests (about 20 minutes on 2 cores), then the real ones'
  assert_line --partial 'The hermetic tests alone: test/run unit'
  assert_line 'unit: 1 passed, 1 failed, 1 skipped'
  refute_line --partial 'real:'
  refute_line --partial 'total:'
  run grep -c '^bats ' "${STUB_LOG}"
  assert_output 1
}

@test "test/run with an unknown tier is a usage error" {
  run "${REPO_ROOT}/test/run" heavy
  assert_failure 2
  assert_output --partial 'usage: test/run [unit|real|all]'
}

@test "test/run counts a skipped test as skipped only, and all tiers end with a total line" {
  stub bats - <<'SH'
case "$*" in
*/unit) printf '1..3\nok 1 first\nok 2 second # skip needs two GPUs\nok 3 third\n' ;;
*/real) printf '1..2\nok 1 build\nok 2 load # skip no QEMU here\n' ;;
esac
SH
  run "${REPO_ROOT}/test/run"
  assert_success
  assert_line 'unit: 2 passed, 0 failed, 1 skipped'
  assert_line 'real: 1 passed, 0 failed, 1 skipped'
  assert_line --index -1 'total: 3 passed, 0 failed, 2 skipped'
}
