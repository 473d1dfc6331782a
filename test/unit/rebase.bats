#!/usr/bin/env bats
# rebase: a release versions.conf does not list, from git: fits / fuzz /
# rejects, bad sources, dry-run, and nothing half-written.

load ../test_helper

setup() {
  common_setup
  make_fixture
  UP="${BATS_TEST_TMPDIR}/upstream.git"
  git clone -q --bare "${FIX}/upstream" "${UP}"
  cp "${NVP2P_DATA_DIR}/versions.conf" "${BATS_TEST_TMPDIR}/versions.before"
}

rebase() {
  run_build --root "${ROOT}" rebase "$@" --kernel "${FIXTURE_KREL}" --no-ccache
}

versions_unchanged() {
  assert_equal "$(cat "${NVP2P_DATA_DIR}/versions.conf")" "$(cat "${BATS_TEST_TMPDIR}/versions.before")"
}

@test "fits: a release the nearest family applies to at fuzz 0 and compiles gets its line, pins from git" {
  fixture_release "${UP}" 999.30.01
  rebase 999.30.01 --source "${UP}"
  assert_success
  assert_output --partial "rebase 999.30.01: fits family 999: applies at fuzz 0"
  assert_output --partial "ok    src/nvidia/kern_bus.c"
  local commit tree
  commit=$(git --git-dir="${UP}" rev-parse '999.30.01^{commit}')
  tree=$(git --git-dir="${UP}" rev-parse '999.30.01^{tree}')
  run grep '^999\.30\.01 ' "${NVP2P_DATA_DIR}/versions.conf"
  assert_output --regexp "^999\.30\.01 +999 +${commit} ${tree} [0-9a-f]{40} unknown +https://us\.download\.nvidia\.com/XFree86/Linux-x86_64/999\.30\.01/NVIDIA-Linux-x86_64-999\.30\.01\.run apply,compile$"
  # In version order, after 999.20.01; the source is in the verified cache.
  assert_equal "$(grep -E '^999\.' "${NVP2P_DATA_DIR}/versions.conf" | cut -d' ' -f1 | tr '\n' ' ')" "999.10.01 999.20.01 999.30.01 "
  assert_file_exist "${CACHE}/src/999.30.01.pin"
  run_build check 999.30.01
  assert_success
  assert_not_exist "${WORK}/rebase-999.30.01"
}

@test "fuzz: a new family with the refreshed patches is written, diffed, built, and the line added" {
  # Upstream changed the outermost context line of the route hunk: fuzz 1.
  fixture_release "${UP}" 999.30.01 's/^{$/{ \/* 999.30 *\//'
  FAKE_KO_VERSION=999.30.01 rebase 999.30.01 --source "${UP}"
  assert_success
  assert_output --partial "family 999 applies only with fuzz (p2p-0001-route.patch): new family 999.30"
  assert_output --partial "+++ 999.30/p2p-0001-route.patch"
  assert_output --partial "+ { /* 999.30 */"
  refute_output --partial "compat-0001-resize.patch\n+++"
  assert_file_exist "${NVP2P_DATA_DIR}/patches/999.30/p2p-0001-route.patch"
  assert_file_exist "${NVP2P_DATA_DIR}/patches/999.30/modprobe.conf"
  run grep -c -F ' { /* 999.30 */' "${NVP2P_DATA_DIR}/patches/999.30/p2p-0001-route.patch"
  assert_output 1
  run grep '^X-Refreshed-From: family 999, by build.sh rebase 999.30.01$' "${NVP2P_DATA_DIR}/patches/999.30/p2p-0001-route.patch"
  assert_success
  # A patch the refresh did not change is kept as it was.
  run cmp "${FIX}/data/patches/999/compat-0001-resize.patch" "${NVP2P_DATA_DIR}/patches/999.30/compat-0001-resize.patch"
  assert_success
  run grep '^999\.30\.01 ' "${NVP2P_DATA_DIR}/versions.conf"
  assert_output --regexp "^999\.30\.01 +999\.30 .* apply,compile,build:6\.1$"
  assert_file_exist "${WORK}/999.30.01/modules-${FIXTURE_KREL}/nvidia.ko"
  # The old family is untouched and the new one applies at fuzz 0 from now on.
  run diff -r "${FIX}/data/patches/999" "${NVP2P_DATA_DIR}/patches/999"
  assert_success
  run_build patch 999.30.01 --out "${BATS_TEST_TMPDIR}/again"
  assert_success
}

@test "rejects: exit 7, the work tree kept, the hunk's function and what is gone named, nothing added" {
  fixture_release "${UP}" 999.30.01 's/return mailbox();/return mailbox_v2();/'
  rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "p2p-0001-route.patch is rejected even with fuzz"
  assert_output --partial "src/nvidia/kern_bus.c, hunk 1: belongs near line"
  assert_output --partial "in kbus()"
  assert_output --partial "no longer in the file:         return mailbox();"
  assert_output --partial "Nothing was added to versions.conf or patches/."
  assert_file_exist "${WORK}/rebase-999.30.01/tree/src/nvidia/kern_bus.c.rej"
  assert_file_exist "${WORK}/rebase-999.30.01/patches/p2p-0001-route.patch"
  versions_unchanged
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.30"
}

@test "rejects: after a manual port, --family adopts the hand-made family" {
  fixture_release "${UP}" 999.30.01 's/return mailbox();/return mailbox_v2();/'
  rebase 999.30.01 --source "${UP}"
  assert_failure 7
  local port="${NVP2P_DATA_DIR}/patches/999.30"
  cp -a "${NVP2P_DATA_DIR}/patches/999" "${port}"
  sed -i 's/return mailbox();/return mailbox_v2();/' "${port}/p2p-0001-route.patch"
  rebase 999.30.01 --source "${UP}" --family 999.30
  assert_success
  assert_output --partial "fits family 999.30"
  run grep -E '^999\.30\.01 +999\.30 ' "${NVP2P_DATA_DIR}/versions.conf"
  assert_success
}

@test "--dry-run says which of the three would happen and changes nothing" {
  fixture_release "${UP}" 999.30.01
  fixture_release "${UP}" 999.40.01 's/^{$/{ \/* 999.40 *\//'
  fixture_release "${UP}" 999.50.01 's/return mailbox();/return mailbox_v2();/'
  run_build --dry-run rebase 999.30.01 --source "${UP}"
  assert_success
  assert_output --partial "would compile the changed units and add 999.30.01"
  run_build --dry-run rebase 999.40.01 --source "${UP}"
  assert_success
  assert_output --partial "would write patches/999.40"
  run_build --dry-run rebase 999.50.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "rejected even with fuzz"
  versions_unchanged
  assert_not_exist "${CACHE}/src"
  assert_not_exist "${WORK}"
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.40"
}

@test "a bundle file is a source; a tarball or tree is not (the pins need the git tag)" {
  fixture_release "${UP}" 999.30.01
  git --git-dir="${UP}" bundle create -q "${BATS_TEST_TMPDIR}/up.bundle" --all
  rebase 999.30.01 --source "${BATS_TEST_TMPDIR}/up.bundle"
  assert_success
  run grep -c '^999\.30\.01 ' "${NVP2P_DATA_DIR}/versions.conf"
  assert_output 1
  run_build rebase 999.40.01 --source "${FIX}/release.tar.xz"
  assert_failure 2
  assert_output --partial "a tarball or tree alone cannot be pinned"
}

@test "a tag in no source, or not released yet, exits 5 and names the newest there" {
  fixture_release "${UP}" 999.30.01
  run_build rebase 999.90.01 --source "${UP}"
  assert_failure 5
  assert_output --partial "has no tag 999.90.01 (newest there: 999.30.01; not released yet?)"
  versions_unchanged
  NVP2P_UPSTREAM_GIT="${UP}" run_build rebase 999.90.01
  assert_failure 5
  assert_output --partial "tag 999.90.01 does not exist in ${UP} (newest there: 999.30.01; not released yet?)"
  versions_unchanged
}

@test "without --source the tag is fetched (from GitHub, here a stand-in) into the cache's repository" {
  fixture_release "${UP}" 999.30.01
  NVP2P_UPSTREAM_GIT="${UP}" rebase 999.30.01
  assert_success
  run git --git-dir="${CACHE}/upstream.git" rev-parse '999.30.01^{commit}'
  assert_output "$(git --git-dir="${UP}" rev-parse '999.30.01^{commit}')"
  NVP2P_UPSTREAM_GIT="http://example.invalid/x.git" run_build rebase 999.40.01
  assert_failure 2
  assert_output --partial "https:// or a local path only"
}

@test "a source whose tag is not the release it claims (version.mk) is refused (6), nothing changed" {
  local wt="${BATS_TEST_TMPDIR}/wt"
  git clone -q "${UP}" "${wt}"
  git -C "${wt}" checkout -q "${FIXTURE_TAG}"
  git -C "${wt}" -c user.name=t -c user.email=t@t tag -a -m fake 999.60.01
  git -C "${wt}" push -q origin refs/tags/999.60.01
  run_build rebase 999.60.01 --source "${UP}"
  assert_failure 6
  assert_output --partial "declares version '${FIXTURE_TAG}' in version.mk, not 999.60.01"
  versions_unchanged
  assert_not_exist "${CACHE}/src/999.60.01"
}

@test "a listed tag needs no rebase; bad tags and options are refused" {
  run_build rebase "${FIXTURE_TAG}" --source "${UP}"
  assert_success
  assert_output --partial "already supported (family 999)"
  run_build rebase '../x' --source "${UP}"
  assert_failure 3
  run_build rebase 999.30.01 --family nosuch --source "${UP}"
  assert_failure 2
  assert_output --partial "--family nosuch: no such family directory"
}

@test "interrupted between writing the new family and versions.conf: the family is removed again" {
  fixture_release "${UP}" 999.30.01 's/^{$/{ \/* 999.30 *\//'
  # SIGTERM arrives just before versions.conf would be replaced.
  stub mv - <<'STUB'
[[ ${*: -1} == */versions.conf ]] && kill -TERM "${PPID}" && exit 1
exec /bin/mv "$@"
STUB
  FAKE_KO_VERSION=999.30.01 rebase 999.30.01 --source "${UP}"
  assert_failure 130
  assert_output --partial "interrupted: patches/999.30 removed again; versions.conf is unchanged"
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.30"
  versions_unchanged
}
