#!/usr/bin/env bats
# fetch and verify: every source form, the pins, the cache, the .run.

load ../test_helper

setup() {
  common_setup
  make_fixture
}

assert_cached() {
  assert_file_exist "${CACHE}/src/${FIXTURE_TAG}.pin"
  assert_file_exist "${CACHE}/src/${FIXTURE_TAG}/kernel-open/nvidia/nv-pci.c"
}

@test "fetch --source a git work tree exports the pinned commit" {
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  assert_output --partial "${CACHE}/src/${FIXTURE_TAG}"
  assert_cached
  assert_file_exist "${CACHE}/src/${FIXTURE_TAG}/.github/ISSUE.md"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}/.git"
  assert_file_executable "${CACHE}/src/${FIXTURE_TAG}/kernel-open/conftest.sh"
}

@test "fetch --source a bare git repository" {
  git clone -q --bare "${FIX}/upstream" "${BATS_TEST_TMPDIR}/bare.git"
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/bare.git"
  assert_success
  assert_cached
}

# fixture_bundle FILE [GIT]: a git bundle of every ref of GIT (default: the
# fixture upstream), as `git bundle create` writes it.
fixture_bundle() {
  git -C "${2:-${FIX}/upstream}" bundle create -q "$1" --all
}

@test "fetch --source a git bundle exports the pinned commit, verified against its pin" {
  fixture_bundle "${BATS_TEST_TMPDIR}/upstream.bundle"
  run_build --verbose fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/upstream.bundle"
  assert_success
  assert_output --partial "= pinned tag tree"
  assert_cached
  assert_file_exist "${CACHE}/src/${FIXTURE_TAG}/.github/ISSUE.md"
  assert_file_executable "${CACHE}/src/${FIXTURE_TAG}/kernel-open/conftest.sh"
  assert_file_contains "${CACHE}/src/${FIXTURE_TAG}.pin" "origin=${BATS_TEST_TMPDIR}/upstream.bundle"
  # nothing of the unbundled repository stays in the cache
  assert_equal "$(find "${CACHE}/src" -mindepth 1 -maxdepth 1 -name '.tmp.*' | wc -l)" 0
}

@test "fetch --source a git bundle whose tree differs from the pin exits 6 and caches nothing" {
  fixture_bundle "${BATS_TEST_TMPDIR}/upstream.bundle"
  sed -i -E "s/^(${FIXTURE_TAG//./\\.} +[^ ]+ +[^ ]+ +)[0-9a-f]{40} +[0-9a-f]{40}/\1$(printf '1%.0s' {1..40}) $(printf '2%.0s' {1..40})/" \
    "${NVP2P_DATA_DIR}/versions.conf"
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/upstream.bundle"
  assert_failure 6
  assert_output --partial "does not match its pin"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "fetch --source a git bundle whose tag points elsewhere exits 6" {
  git clone -q "${FIX}/upstream" "${BATS_TEST_TMPDIR}/moved"
  (cd "${BATS_TEST_TMPDIR}/moved" && echo x >x && git -c user.name=t -c user.email=t@t add x &&
    git -c user.name=t -c user.email=t@t commit -q -m x && git tag -f "${FIXTURE_TAG}" >/dev/null 2>&1)
  fixture_bundle "${BATS_TEST_TMPDIR}/moved.bundle" "${BATS_TEST_TMPDIR}/moved"
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/moved.bundle"
  assert_failure 6
  assert_output --partial "pinned is"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "fetch --source a git bundle without the tag's commit exits 5" {
  git init -q "${BATS_TEST_TMPDIR}/other"
  (cd "${BATS_TEST_TMPDIR}/other" && echo x >x && git -c user.name=t -c user.email=t@t add x &&
    git -c user.name=t -c user.email=t@t commit -q -m x)
  fixture_bundle "${BATS_TEST_TMPDIR}/other.bundle" "${BATS_TEST_TMPDIR}/other"
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/other.bundle"
  assert_failure 5
  assert_output --partial "does not contain commit"
}

@test "fetch --source a truncated git bundle exits 5 and leaves nothing behind" {
  fixture_bundle "${BATS_TEST_TMPDIR}/upstream.bundle"
  head -c 400 "${BATS_TEST_TMPDIR}/upstream.bundle" >"${BATS_TEST_TMPDIR}/trunc.bundle"
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/trunc.bundle"
  assert_failure 5
  assert_output --regexp "(not a complete git bundle|cannot read the git bundle).*truncated"
  assert_equal "$(find "${CACHE}/src" -mindepth 1 2>/dev/null | wc -l)" 0
}

@test "patch --source a git bundle: fetched, verified and patched in one run" {
  fixture_bundle "${BATS_TEST_TMPDIR}/upstream.bundle"
  run_build patch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/upstream.bundle"
  assert_success
  assert_cached
  assert_file_exist "${WORK}/${FIXTURE_TAG}/patched/.nvidia-p2p-patched"
}

@test "fetch --source a git repository whose tag points elsewhere exits 6" {
  git clone -q "${FIX}/upstream" "${BATS_TEST_TMPDIR}/moved"
  (cd "${BATS_TEST_TMPDIR}/moved" && echo x >x && git -c user.name=t -c user.email=t@t add x &&
    git -c user.name=t -c user.email=t@t commit -q -m x && git tag -f "${FIXTURE_TAG}" >/dev/null 2>&1)
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/moved"
  assert_failure 6
  assert_output --partial "pinned is"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "fetch --source a git repository without the commit exits 5" {
  git init -q "${BATS_TEST_TMPDIR}/empty"
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/empty"
  assert_failure 5
  assert_output --partial "does not contain commit"
}

@test "fetch --source a GitHub-style tarball matches the full tree id" {
  run_build --verbose fetch "${FIXTURE_TAG}" --source "${FIX}/github.tar.gz"
  assert_success
  assert_output --partial "= pinned tag tree"
  assert_cached
}

@test "fetch --source a release tarball (no .github, other CHANGELOG) matches the core tree id" {
  run_build --verbose fetch "${FIXTURE_TAG}" --source "${FIX}/release.tar.xz"
  assert_success
  assert_output --partial "release tarball form"
  assert_cached
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}/.github"
}

@test "fetch --source an unpacked tree" {
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/rel/NVIDIA-kernel-module-source-${FIXTURE_TAG}"
  assert_success
  assert_cached
}

@test "one changed byte in the source is refused with 6 and nothing is cached" {
  local t="${BATS_TEST_TMPDIR}/tampered"
  cp -a "${FIX}/rel/NVIDIA-kernel-module-source-${FIXTURE_TAG}" "${t}"
  sed -i 's/return -1;/return -2;/' "${t}/src/nvidia/kern_bus.c"
  run_build fetch "${FIXTURE_TAG}" --source "${t}"
  assert_failure 6
  assert_output --partial "does not match its pin"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
  assert_equal "$(find "${CACHE}/src" -mindepth 1 | wc -l)" 0
}

@test "a changed file mode (lost executable bit) is refused with 6" {
  local t="${BATS_TEST_TMPDIR}/mode"
  cp -a "${FIX}/rel/NVIDIA-kernel-module-source-${FIXTURE_TAG}" "${t}"
  chmod -x "${t}/kernel-open/conftest.sh"
  run_build fetch "${FIXTURE_TAG}" --source "${t}"
  assert_failure 6
}

@test "an extra file in the source is refused with 6" {
  local t="${BATS_TEST_TMPDIR}/extra"
  cp -a "${FIX}/rel/NVIDIA-kernel-module-source-${FIXTURE_TAG}" "${t}"
  echo evil >"${t}/kernel-open/evil.c"
  run_build fetch "${FIXTURE_TAG}" --source "${t}"
  assert_failure 6
}

@test "a truncated tarball exits 5 and leaves nothing behind" {
  head -c 300 "${FIX}/release.tar.xz" >"${BATS_TEST_TMPDIR}/trunc.tar.xz"
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/trunc.tar.xz"
  assert_failure 5
  assert_output --partial "cannot unpack"
  assert_equal "$(find "${CACHE}/src" -mindepth 1 2>/dev/null | wc -l)" 0
}

@test "a missing --source path exits 5" {
  run_build fetch "${FIXTURE_TAG}" --source "${BATS_TEST_TMPDIR}/nope"
  assert_failure 5
  assert_output --partial "no such file or directory"
}

@test "a cached source is verified again on every use: tampering is caught" {
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  echo "/* injected */" >>"${CACHE}/src/${FIXTURE_TAG}/kernel-open/nvidia/nv-pci.c"
  run_build fetch "${FIXTURE_TAG}" --no-run
  assert_failure 6
  assert_output --partial "does not match its pin"
}

# --- online fetch through a stub curl ------------------------------------------------

# curl stub: serves fixture files for the URLs build.sh asks for.
stub_curl() {
  export FIX FIXTURE_TAG
  stub curl - <<'STUB'
out="" url=""
while [[ $# -gt 0 ]]; do case $1 in --output) out=$2; shift ;; --) url=$2; shift ;; esac; shift; done
[[ -n ${FAKE_CURL_FAIL:-} ]] && { echo "curl: (6) Could not resolve host" >&2; exit 6; }
case ${url} in
  https://github.com/NVIDIA/open-gpu-kernel-modules/archive/*.tar.gz) src="${FIX}/github.tar.gz" ;;
  https://example.invalid/NVIDIA-Linux-x86_64-*.run) src="${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run" ;;
  *) echo "curl: (22) 404 ${url}" >&2; exit 22 ;;
esac
if [[ -n ${FAKE_CURL_TRUNCATE:-} ]]; then head -c 200 "${src}" >"${out}"; else cp "${src}" "${out}"; fi
STUB
}

@test "online fetch downloads the pinned commit's archive and the .run, over https only" {
  stub_curl
  run_build fetch "${FIXTURE_TAG}"
  assert_success
  assert_cached
  assert_file_exist "${CACHE}/run/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  run grep -c -- "--proto =https" "${STUB_LOG}"
  assert_output 2
  run grep -F "archive/$(git -C "${FIX}/upstream" rev-parse HEAD).tar.gz" "${STUB_LOG}"
  assert_success
  run grep -c -- "--fail" "${STUB_LOG}"
  assert_output 2
}

@test "a failed download exits 5 and leaves nothing behind" {
  stub_curl
  FAKE_CURL_FAIL=1 run_build fetch "${FIXTURE_TAG}"
  assert_failure 5
  assert_output --partial "download failed"
  assert_equal "$(find "${CACHE}/src" -mindepth 1 2>/dev/null | wc -l)" 0
}

@test "a truncated download exits 5 and is never cached" {
  stub_curl
  FAKE_CURL_TRUNCATE=1 run_build fetch "${FIXTURE_TAG}"
  assert_failure 5
  assert_equal "$(find "${CACHE}/src" -mindepth 1 2>/dev/null | wc -l)" 0
}

@test "a downloaded .run with the wrong checksum exits 6 and is never cached" {
  stub_curl
  sed -i "s/ [0-9a-f]\{64\} https/ $(printf '0%.0s' {1..64}) https/" "${NVP2P_DATA_DIR}/versions.conf"
  run_build fetch "${FIXTURE_TAG}"
  assert_failure 6
  assert_output --partial "refusing to run it"
  assert_not_exist "${CACHE}/run/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
}

@test "a truncated .run download fails its checksum (6)" {
  stub_curl
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-run
  assert_success
  FAKE_CURL_TRUNCATE=1 run_build fetch "${FIXTURE_TAG}"
  assert_failure 6
  assert_not_exist "${CACHE}/run/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
}

@test "a cached .run that changed is refused (6)" {
  stub_curl
  run_build fetch "${FIXTURE_TAG}"
  assert_success
  echo "# changed" >>"${CACHE}/run/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run"
  run_build fetch "${FIXTURE_TAG}"
  assert_failure 6
}

@test "a local --run is checked against the pin (6 on mismatch)" {
  cp "${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run" "${BATS_TEST_TMPDIR}/my.run"
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${BATS_TEST_TMPDIR}/my.run"
  assert_success
  echo "# changed" >>"${BATS_TEST_TMPDIR}/my.run"
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --run "${BATS_TEST_TMPDIR}/my.run"
  assert_failure 6
}

@test "a tag whose .run checksum is unknown needs --run-sha256 or --run: never trust on first use" {
  stub_curl
  run_build fetch 999.20.01
  assert_failure 6
  assert_output --partial "checksum for 999.20.01 is unknown"
  assert_output --partial "--run-sha256"
}

@test "an unknown checksum given with --run-sha256 is enforced" {
  stub_curl
  local good bad
  good=$(sha256sum "${FIX}/NVIDIA-Linux-x86_64-${FIXTURE_TAG}.run" | cut -d' ' -f1)
  bad=$(printf 'a%.0s' {1..64})
  run_build fetch 999.20.01 --run-sha256 "${bad}"
  assert_failure 6
  # the right checksum, but the installer says it is 999.10.01, not 999.20.01
  run_build fetch 999.20.01 --run-sha256 "${good}"
  assert_failure 12
  assert_output --partial "installs driver ${FIXTURE_TAG}, not 999.20.01"
}

@test "--run-sha256 that contradicts the pin is refused (6)" {
  run_build fetch "${FIXTURE_TAG}" --run-sha256 "$(printf 'b%.0s' {1..64})"
  assert_failure 6
  assert_output --partial "differs from the pin"
}

@test "a .run for another driver version is refused (12)" {
  sed 's/@VERSION@/999.10.02/' "${REPO_ROOT}/test/fixtures/standin.run.in" >"${BATS_TEST_TMPDIR}/other.run"
  run_build fetch 999.20.01 --source "${FIX}/upstream" --run "${BATS_TEST_TMPDIR}/other.run"
  assert_failure 12
  assert_output --partial "installs driver 999.10.02, not 999.20.01"
}

@test "fetch --dry-run prints the plan and creates nothing" {
  run_build --dry-run fetch "${FIXTURE_TAG}"
  assert_success
  assert_output --partial "would fetch ${FIXTURE_TAG}"
  assert_output --partial "would download https://example.invalid/"
  assert_not_exist "${CACHE}"
}

@test "each run writes a log file" {
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  run find "${CACHE}/logs" -name '*.log'
  assert_success
  assert_equal "$(wc -l <<<"${output}")" 1
  run cat "${output}"
  assert_output --partial "STAGE verify"
}

@test "under sudo, the log in the calling user's cache is given to that user" {
  as_root
  stub chown
  mkdir -p "${CACHE}/logs"
  local owner
  owner="$(stat -c %u "${CACHE}/logs")"
  SUDO_UID="${owner}" SUDO_GID=4343 run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  run grep -c "^chown -- ${owner}:4343 ${CACHE}/logs/.*\.log\$" "${STUB_LOG}"
  assert_output 1
}

@test "under sudo, a log dir the calling user does not own is left alone" {
  as_root
  stub chown
  mkdir -p "${CACHE}/logs"
  local other
  other=$(( $(stat -c %u "${CACHE}/logs") + 1 ))
  SUDO_UID="${other}" SUDO_GID=4343 run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
  run grep -c '^chown' "${STUB_LOG}"
  assert_output 0
}

@test "a second concurrent run is refused by the lock (11)" {
  hold_lock "${CACHE}/build.lock" 5
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  release_lock
  assert_failure 11
  assert_output --partial "another build.sh run holds the lock"
  assert_output --partial "or pass --lock-wait SECONDS"
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "--lock-wait: the second run waits for the first, says so, then runs" {
  hold_lock "${CACHE}/build.lock" 2
  run_build --lock-wait 30 fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  release_lock
  assert_success
  assert_output --partial "another build.sh run holds ${CACHE}/build.lock; waiting up to 30 s"
  assert_dir_exist "${CACHE}/src/${FIXTURE_TAG}"
}

@test "--lock-wait: still held when the wait ends: 11, nothing fetched; a bad value is a usage error" {
  hold_lock "${CACHE}/build.lock" 10
  SECONDS=0
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --lock-wait=1
  local took=${SECONDS}
  release_lock
  assert_failure 11
  assert_output --partial "holds the lock ${CACHE}/build.lock still, after 1 s (--lock-wait)"
  [[ ${took} -lt 8 ]]
  assert_not_exist "${CACHE}/src/${FIXTURE_TAG}"
  run_build --lock-wait soon fetch "${FIXTURE_TAG}"
  assert_failure 2
  assert_output --partial "--lock-wait needs a number of seconds"
}

@test "a dry run of a tag whose .run checksum is unknown says so as a PROBLEM and goes on to the end of its plan (6)" {
  stub_curl
  run_build --dry-run fetch 999.20.01
  assert_failure 6
  assert_output --partial "PROBLEM: the .run checksum for 999.20.01 is unknown"
  assert_output --partial "--run-sha256 HEX, --run FILE or --userspace keep"
  # the real fetch still refuses, with the same code
  run_build fetch 999.20.01
  assert_failure 6
}

@test "fetch without git says git is not installed, with its package (10), not that the source is bad" {
  PATH="$(path_hiding git)" run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-run
  assert_failure 10
  assert_output --partial "build.sh: 'git' is required but not installed (Debian package: git)"
  refute_output --partial "not a usable git repository"
  PATH="$(path_hiding git)" run_build fetch "${FIXTURE_TAG}" --source "${FIX}/release.tar.xz" --no-run
  assert_failure 10
  refute_output --partial "cannot compute the tree id"
  # a dry run says it as its PROBLEM line, and goes on
  PATH="$(path_hiding git)" run_build --dry-run fetch "${FIXTURE_TAG}" --no-run
  assert_failure 10
  assert_output --partial "PROBLEM: 'git' is required but not installed (Debian package: git)"
}
