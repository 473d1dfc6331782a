#!/usr/bin/env bats
# rebase --new: every tag of the source that versions.conf lacks, oldest
# first, each in a run of its own; the summary; --list; --commit in a git
# data directory; and ci/workflows/intake.sh, the scheduled job, against local bare
# repositories (an "upstream" that gains tags, a project remote that gets
# the branch), with a stand-in for gh.

load ../test_helper

setup() {
  common_setup
  make_fixture
  UP="${BATS_TEST_TMPDIR}/upstream.git"
  git clone -q --bare "${FIX}/upstream" "${UP}"
}

MOVED='s/^{$/{ \/* moved *\//'
CONFLICT='s/return mailbox();/return mailbox_v2();/'

# three_releases: 999.30.01 fits, 999.40.01 needs a merge, 999.50.01 a person.
three_releases() {
  fixture_release "${UP}" 999.30.01
  fixture_release "${UP}" 999.40.01 "${MOVED}"
  fixture_release "${UP}" 999.50.01 "${CONFLICT}"
}

rebase_new() {
  FAKE_KO_VERSION=from-path run_build --root "${ROOT}" rebase --new --source "${UP}" --kernel "${FIXTURE_KREL}" --no-ccache "$@"
}

@test "--new --list: the tags versions.conf lacks, newer than its oldest, oldest first" {
  three_releases
  fixture_release "${UP}" 998.10.01
  run_build rebase --new --list --source "${UP}"
  assert_success
  assert_output $'999.30.01\n999.40.01\n999.50.01'
}

@test "--new --list with nothing new says so on stderr, and lists nothing on stdout" {
  bats_require_minimum_version 1.5.0
  fixture_release "${UP}" 998.10.01
  run --separate-stderr "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${WORK}" rebase --new --list --source "${UP}"
  assert_success
  assert_output ""
  # shellcheck disable=SC2154 # stderr: set by bats' run --separate-stderr
  [[ ${stderr} == *"rebase --new: nothing new in ${UP}: versions.conf lists every tag there from"* ]] ||
    fail "stderr: ${stderr}"
}

@test "--new: each tag in turn, a family written for one is the nearest for the next; the summary; exit 7 for the one that needs a person" {
  three_releases
  rebase_new
  assert_failure 7
  assert_output --partial "rebase --new: 3 tags of ${UP} that versions.conf lacked, oldest first:"
  assert_line --regexp '^  999\.30\.01 +fits +family 999: every patch applies$'
  assert_line --regexp '^  999\.40\.01 +new family +999\.40 \(merged: p2p-0001\)$'
  assert_line --regexp "^  999\.50\.01 +a person +family 999\.40 does not carry over to 999\.50\.01: conflict in p2p-0001-route\.patch$"
  assert_output --partial "fits: 1, new family: 1, needs a person: 1, failed: 0"
  run awk '/^999\./ { print $1, $2 }' "${NVP2P_DATA_DIR}/versions.conf"
  assert_output $'999.10.01 999\n999.20.01 999\n999.30.01 999\n999.40.01 999.40'
  assert_file_exist "${NVP2P_DATA_DIR}/patches/999.40/p2p-0001-route.patch"
  # Run again: only the one left.
  rebase_new
  assert_failure 7
  assert_output --partial "rebase --new: 1 tags of"
}

@test "--new with nothing new says so and exits 0; --dry-run changes nothing" {
  run_build rebase --new --source "${UP}"
  assert_success
  assert_output --partial "nothing new in ${UP}"
  fixture_release "${UP}" 999.30.01
  cp "${NVP2P_DATA_DIR}/versions.conf" "${BATS_TEST_TMPDIR}/before"
  run_build --dry-run rebase --new --source "${UP}"
  assert_success
  assert_output --partial "fits: 1, new family: 0, needs a person: 0, failed: 0 (dry run: nothing was changed)"
  run cmp "${BATS_TEST_TMPDIR}/before" "${NVP2P_DATA_DIR}/versions.conf"
  assert_success
}

@test "--new: a source that cannot be listed (missing, an empty directory, no tags, offline) fails with exit 5, never \"nothing new\"" {
  local src
  mkdir "${BATS_TEST_TMPDIR}/empty"
  git init -q --bare "${BATS_TEST_TMPDIR}/notags.git"
  for src in "${BATS_TEST_TMPDIR}/missing" "${BATS_TEST_TMPDIR}/empty" "${BATS_TEST_TMPDIR}/notags.git"; do
    run_build rebase --new --source "${src}"
    assert_failure 5
    assert_output --regexp "^build\.sh: .*${src}"
    refute_output --partial "nothing new"
    run_build rebase --new --list --source "${src}"
    assert_failure 5
    refute_output --partial "nothing new"
  done
  # offline: the default upstream (a URL) does not answer
  NVP2P_UPSTREAM_GIT=https://127.0.0.1:1/open-gpu-kernel-modules.git GIT_TERMINAL_PROMPT=0 run_build rebase --new
  assert_failure 5
  assert_output --partial "build.sh: cannot list the tags of https://127.0.0.1:1/open-gpu-kernel-modules.git (offline?"
  refute_output --partial "nothing new"
}

@test "--new: a run that fails otherwise is listed as failed, with its exit code, and the others go on" {
  three_releases
  FAKE_UNIT_FAIL=kern_bus rebase_new
  assert_failure
  assert_line --regexp '^  999\.30\.01 +failed +exit 8'
  assert_output --partial "fits: 0, new family: 0, needs a person: 1, failed: 2"
}

# data_git: the fixture data directory as a git work tree with one commit.
data_git() {
  git -C "${NVP2P_DATA_DIR}" init -q -b main
  git -C "${NVP2P_DATA_DIR}" -c user.name=t -c user.email=t@t add -A
  git -C "${NVP2P_DATA_DIR}" -c user.name=t -c user.email=t@t commit -q -m data
}

@test "--new --commit: one commit per tag added, the per-patch table as its message; nothing for the one that needs a person" {
  three_releases
  data_git
  rebase_new --commit
  assert_failure 7
  run git -C "${NVP2P_DATA_DIR}" log --format=%s
  assert_output $'patches/999.40: new family for 999.40.01 (build.sh rebase)\nversions.conf: 999.30.01 in family 999 (build.sh rebase: fits)\ndata'
  run git -C "${NVP2P_DATA_DIR}" log -1 --format=%b
  assert_output --partial "rebase 999.40.01: family 999 (three-way base 999.30.01), per patch:"
  assert_output --partial "p2p-0001-route.patch"
  run git -C "${NVP2P_DATA_DIR}" status --porcelain
  assert_output ""
}

@test "--new --commit refuses a data directory that is no git work tree, or one with uncommitted changes" {
  fixture_release "${UP}" 999.30.01
  rebase_new --commit
  assert_failure 2
  assert_output --partial "is not a git work tree"
  data_git
  printf '#\n' >>"${NVP2P_DATA_DIR}/versions.conf"
  rebase_new --commit
  assert_failure 10
  assert_output --partial "uncommitted changes where rebase writes"
}

# --- ci/workflows/intake.sh --------------------------------------------------------------------

# project_remote: a bare "project" repository whose main holds the fixture
# data (with ci/workflows/intake.sh's build.sh: the data directory is the clone).
project_remote() {
  local wt="${BATS_TEST_TMPDIR}/project-wt"
  mkdir -p "${wt}"
  cp -a "${REPO_ROOT}/build.sh" "${REPO_ROOT}/lib" "${wt}/"
  mkdir -p "${wt}/ci/workflows"
  cp -a "${REPO_ROOT}/ci/workflows/intake.sh" "${wt}/ci/workflows/"
  cp -a "${NVP2P_DATA_DIR}/." "${wt}/"
  git -C "${wt}" init -q -b main
  git -C "${wt}" -c user.name=t -c user.email=t@t add -A
  git -C "${wt}" -c user.name=t -c user.email=t@t commit -q -m project
  git clone -q --bare "${wt}" "${BATS_TEST_TMPDIR}/project.git"
  PROJECT="${BATS_TEST_TMPDIR}/project.git"
  MAIN_BEFORE=$(git --git-dir="${PROJECT}" rev-parse main)
  # gh: records its calls; "pr list" answers with PR_NUMBER when set.
  stub gh - <<'STUB'
if [[ $1 == pr && $2 == list ]]; then printf '%s\n' "${PR_NUMBER:-}"; fi
if [[ $1 == pr && ( $2 == create || $2 == edit ) ]]; then
  while [[ $# -gt 0 ]]; do [[ $1 == --body-file ]] && cp "$2" "${STUB_LOG}.body"; shift; done
fi
exit 0
STUB
}

intake() {
  unset NVP2P_DATA_DIR
  FAKE_KO_VERSION=from-path run "${REPO_ROOT}/ci/workflows/intake.sh" --upstream "${UP}" --remote "${PROJECT}" \
    --cache-dir "${CACHE}" --work-dir "${WORK}" "$@" -- --root "${ROOT}" --kernel "${FIXTURE_KREL}" --no-ccache
}

@test "intake: the upstream gains tags; the branch with one commit per tag arrives in the remote, main untouched; the PR is opened with the summary" {
  project_remote
  three_releases
  intake --pr
  assert_failure 7
  assert_output --partial "intake: pushed intake/upstream (2 commits on main"
  run git --git-dir="${PROJECT}" log --format=%s main..intake/upstream
  assert_output $'patches/999.40: new family for 999.40.01 (build.sh rebase)\nversions.conf: 999.30.01 in family 999 (build.sh rebase: fits)'
  assert_equal "$(git --git-dir="${PROJECT}" rev-parse main)" "${MAIN_BEFORE}"
  run grep '^gh pr create ' "${STUB_LOG}"
  assert_output --partial "--head intake/upstream --base main --title Upstream intake: 999.30.01, 999.40.01 added; 999.50.01 needs a person"
  run cat "${STUB_LOG}.body"
  assert_output --partial "  999.50.01   a person    family 999.40 does not carry over to 999.50.01: conflict in p2p-0001-route.patch"
  assert_output --partial "fits: 1, new family: 1, needs a person: 1, failed: 0"
  assert_output --partial "Nothing here was pushed to main"
}

@test "intake: a later run updates the same branch and PR (force-pushed, gh pr edit); with nothing new it pushes nothing" {
  project_remote
  fixture_release "${UP}" 999.30.01
  intake --pr
  assert_success
  fixture_release "${UP}" 999.40.01 "${MOVED}"
  PR_NUMBER=12 intake --pr
  assert_success
  run grep '^gh pr edit 12 ' "${STUB_LOG}"
  assert_success
  run git --git-dir="${PROJECT}" log --format=%s main..intake/upstream
  assert_output $'patches/999.40: new family for 999.40.01 (build.sh rebase)\nversions.conf: 999.30.01 in family 999 (build.sh rebase: fits)'
  # Once main has them, nothing new: no push, no PR.
  git --git-dir="${PROJECT}" update-ref refs/heads/main refs/heads/intake/upstream
  : >"${STUB_LOG}"
  intake --pr
  assert_success
  assert_output --partial "nothing new"
  run grep -c '^gh pr (create|edit)' "${STUB_LOG}"
  assert_output 0
}

@test "intake: an upstream that cannot be listed (missing, an empty directory) fails the intake, pushes nothing, never \"nothing new\"" {
  project_remote
  mkdir "${BATS_TEST_TMPDIR}/empty"
  for UP in "${BATS_TEST_TMPDIR}/missing" "${BATS_TEST_TMPDIR}/empty"; do
    intake --pr
    assert_failure 5
    assert_output --partial "build.sh rebase --new failed (exit 5); nothing was pushed"
    refute_output --partial "nothing new"
    run git --git-dir="${PROJECT}" rev-parse --verify -q refs/heads/intake/upstream
    assert_failure
  done
  run grep -c '^gh ' "${STUB_LOG}"
  assert_output 0
}

@test "intake: refuses to push to main, and an unknown option" {
  project_remote
  intake --branch main
  assert_failure 2
  assert_output --partial "refusing to push to main"
  intake --frobnicate
  assert_failure 2
}
