#!/usr/bin/env bats
# build.sh repo: a signed apt repository, made with the real apt-ftparchive
# and gpg (a throwaway GNUPGHOME) and read by the real apt in a private state
# directory, signature checking on: apt accepts it, and refuses it when a
# signature is bad or the key is another. The package of the fixture tag is
# built as `build.sh package` builds it; the second tag's is a stand-in .deb.
# A client installing, upgrading and removing with DKMS builds is
# test/real/dkms_chroot.bats; Debian's driver moving from bookworm to
# trixie with such a repository, test/real/apt_upgrade.bats.

load ../test_helper

setup() {
  common_setup
  make_fixture
  local tool
  for tool in dpkg-deb apt-ftparchive gpg gpgv apt-get; do
    command -v "${tool}" >/dev/null || skip "${tool} is not installed (Debian: apt-utils, gnupg, gpgv)"
  done
  export GNUPGHOME="${BATS_TEST_TMPDIR}/gnupg"
  mkdir -m 0700 "${GNUPGHOME}"
  REPO="${BATS_TEST_TMPDIR}/repo"
  POOL="${REPO}/pool/main/n/nvidia-p2p-dkms"
}

teardown() {
  gpgconf --kill gpg-agent >/dev/null 2>&1 || true
}

# standin TAG REV [PACKAGE [FIELDS]]: a stand-in nvidia-p2p-dkms_TAG-REV_amd64.deb
# (made once a test: the same file again); prints its path.
standin() {
  local d="${BATS_TEST_TMPDIR}/standin-$1-$2" out="${BATS_TEST_TMPDIR}/nvidia-p2p-dkms_$1-$2_amd64.deb"
  [[ -z ${3:-} && -z ${4:-} && -f ${out} ]] && printf '%s\n' "${out}" && return 0
  out="${BATS_TEST_TMPDIR}/${RANDOM}/nvidia-p2p-dkms_$1-$2_amd64.deb"
  [[ -z ${3:-} && -z ${4:-} ]] && out="${BATS_TEST_TMPDIR}/nvidia-p2p-dkms_$1-$2_amd64.deb"
  mkdir -p "${d}/DEBIAN" "$(dirname "${out}")"
  printf 'Package: %s\nVersion: %s-%s\nArchitecture: amd64\nMaintainer: t <t@t.invalid>\nDescription: stand-in\n%s' \
    "${3:-nvidia-p2p-dkms}" "$1" "$2" "${4:-}" >"${d}/DEBIAN/control"
  dpkg-deb --root-owner-group --build "${d}" "${out}" >/dev/null
  printf '%s\n' "${out}"
}

# new_key UID: a secret key without passphrase in GNUPGHOME; prints its fingerprint.
new_key() {
  gpg --batch --pinentry-mode loopback --passphrase '' --quick-generate-key "$1" ed25519 sign never 2>/dev/null
  gpg --batch --with-colons --list-secret-keys "$1" | awk -F: '$1 == "fpr" { print $10; exit }'
}

# apt_client: apt's private state reading the repository through its
# .sources file, with the published key as Signed-By.
apt_client() {
  APT="${BATS_TEST_TMPDIR}/apt"
  mkdir -p "${APT}/lists/partial" "${APT}/cache/archives/partial" "${APT}/sources" "${APT}/prefs"
  : >"${APT}/status"
  # the published source, read from the directory itself whatever its URL
  sed -e "s|^Signed-By: .*|Signed-By: ${1:-${REPO}/nvidia-p2p-archive-keyring.gpg}|" -e "s|^URIs: .*|URIs: file:${REPO}|" \
    "${REPO}/nvidia-p2p.sources" >"${APT}/sources/nvidia-p2p.sources"
  APT_OPTS=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=${APT}/sources"
    -o "Dir::State::Lists=${APT}/lists" -o "Dir::Cache=${APT}/cache" -o "Dir::State::status=${APT}/status"
    -o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=${APT}/prefs"
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o APT::Sandbox::User=root)
}

repo_build() {
  run_build repo "${REPO}" "$@"
}

# tree DIR: every file of DIR with its checksum and inode (a file written
# again, even with the same bytes, is another inode).
tree() {
  (cd "$1" && find . -type f -printf '%p %i ' -exec sha256sum {} \; | sort)
}

@test "repo: a new repository from a tag, with a new key: pool, indexes, signatures, public key, .sources on stdout" {
  repo_build "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache --generate-key
  assert_success
  assert_output --partial "signing key "
  assert_line "${REPO}/nvidia-p2p.sources"
  assert_file_exist "${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb"
  # everything published is readable by a web server's user
  run find "${REPO}/pool" "${REPO}/dists" "${REPO}/nvidia-p2p.sources" "${REPO}/nvidia-p2p-archive-keyring.gpg" ! -perm -o+r
  assert_output ""
  run dpkg-deb -f "${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb" Package Version
  assert_line "Version: ${FIXTURE_TAG}-1"
  run gpgv --keyring "${REPO}/nvidia-p2p-archive-keyring.gpg" "${REPO}/dists/stable/InRelease"
  assert_success
  run gpgv --keyring "${REPO}/nvidia-p2p-archive-keyring.gpg" "${REPO}/dists/stable/Release.gpg" "${REPO}/dists/stable/Release"
  assert_success
  run grep -E '^(Suite|Codename|Components|Architectures|Origin): ' "${REPO}/dists/stable/Release"
  assert_line "Suite: stable"
  assert_line "Components: main"
  assert_line "Architectures: amd64"
  run cat "${REPO}/dists/stable/main/binary-amd64/Packages"
  assert_line "Filename: pool/main/n/nvidia-p2p-dkms/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb"
  assert_line "SHA256: $(sha256sum <"${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb" | cut -d' ' -f1)"
  run cat "${REPO}/nvidia-p2p.sources"
  assert_line "URIs: file:${REPO}"
  assert_line "Suites: stable"
  assert_line "Signed-By: /usr/share/keyrings/nvidia-p2p-archive-keyring.gpg"
  # the secret key stays in gpg's home, nothing of it in the repository
  run find "${REPO}" -name '*.key' -o -name 'private-keys-v1.d' -o -name '*.tmp*'
  assert_output ""
  run gpg --batch --list-packets "${REPO}/nvidia-p2p-archive-keyring.gpg"
  refute_output --partial "secret key packet"
}

@test "repo: apt accepts it with signature checking on; a bad signature or another key is refused" {
  repo_build "$(standin 999.20.01 1)" --generate-key
  assert_success
  apt_client
  run apt-get "${APT_OPTS[@]}" update --error-on=any
  assert_success
  run apt-cache "${APT_OPTS[@]}" policy nvidia-p2p-dkms
  assert_line "  Candidate: 999.20.01-1"
  # a client trusting another key
  local other
  other=$(new_key "other <other@example.invalid>")
  gpg --batch --export "${other}" >"${BATS_TEST_TMPDIR}/other.gpg"
  apt_client "${BATS_TEST_TMPDIR}/other.gpg"
  rm -rf "${APT}/lists"/*_stable_*
  run apt-get "${APT_OPTS[@]}" update --error-on=any
  assert_failure
  assert_output --partial "NO_PUBKEY"
  # an index changed after signing
  apt_client
  sed -i 's/^Label: nvidia-p2p$/Label: changed/' "${REPO}/dists/stable/InRelease"
  run apt-get "${APT_OPTS[@]}" update --error-on=any
  assert_failure
  assert_output --partial "BADSIG"
}

@test "repo: a second run adds another tag, keeps the first package byte for byte, signs with the same key; apt sees both" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  local sum key
  sum=$(sha256sum <"${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb")
  key=$(sha256sum <"${REPO}/nvidia-p2p-archive-keyring.gpg")
  repo_build "$(standin 999.20.01 1)" "$(standin "${FIXTURE_TAG}" 1)"
  assert_success
  assert_output --partial "nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb is in the repository already: kept"
  assert_output --partial "999.10.01-1, 999.20.01-1 published"
  [[ "$(sha256sum <"${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb")" == "${sum}" ]]
  [[ "$(sha256sum <"${REPO}/nvidia-p2p-archive-keyring.gpg")" == "${key}" ]]
  apt_client
  run apt-get "${APT_OPTS[@]}" update --error-on=any
  assert_success
  run apt-cache "${APT_OPTS[@]}" madison nvidia-p2p-dkms
  assert_output --partial "999.20.01-1"
  assert_output --partial "999.10.01-1"
  run apt-cache "${APT_OPTS[@]}" policy nvidia-p2p-dkms
  assert_line "  Candidate: 999.20.01-1"
}

@test "repo: a tag already in the pool is kept, not rebuilt; --revision builds a new one" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  repo_build "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache
  assert_success
  assert_output --partial "in the repository already: kept (a new build needs --revision)"
  run dpkg-deb -f "${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb" Description
  assert_output "stand-in"
  repo_build "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache --revision 2
  assert_success
  assert_file_exist "${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-2_amd64.deb"
  assert_output --partial "999.10.01-1, 999.10.01-2 published"
}

@test "repo: a package of a version the repository holds, with other content, is refused (16); nothing changes" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  local before
  before=$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)
  # the new package before it is not added either
  repo_build "$(standin 999.20.01 1)" "$(standin "${FIXTURE_TAG}" 1 nvidia-p2p-dkms $'Depends: dkms\n')"
  assert_failure 16
  assert_output --partial "with other content"
  assert_output --partial "--revision"
  [[ "$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)" == "${before}" ]]
}

@test "repo: a build that fails (8) takes out what the run added; a repository it began is removed" {
  FAKE_OBJECTS_FAIL=1 repo_build "$(standin 999.20.01 1)" "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache --generate-key
  assert_failure 8
  assert_not_exist "${REPO}"
  repo_build "$(standin 999.20.01 1)" --generate-key
  assert_success
  local before
  before=$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)
  FAKE_OBJECTS_FAIL=1 repo_build "$(standin 999.20.01 2)" "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache
  assert_failure 8
  [[ "$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)" == "${before}" ]]
}

@test "repo: the repository's key decides: another --key is refused (16), a key missing from the keyring too, --key with the same key works" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  local fpr other before
  fpr=$(gpg --batch --with-colons --show-keys "${REPO}/nvidia-p2p-archive-keyring.gpg" | awk -F: '$1 == "fpr" { print $10; exit }')
  other=$(new_key "other <other@example.invalid>")
  before=$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)
  repo_build "$(standin 999.20.01 1)" --key "${other}"
  assert_failure 16
  assert_output --partial "is signed by key ${fpr}"
  [[ "$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)" == "${before}" ]]
  repo_build "$(standin 999.20.01 1)" --key "${fpr}"
  assert_success
  mkdir -m 0700 "${BATS_TEST_TMPDIR}/empty"
  GNUPGHOME="${BATS_TEST_TMPDIR}/empty" run_build repo "${REPO}" "$(standin 999.20.01 1)"
  assert_failure 16
  assert_output --partial "is not in gpg's secret keyring"
  repo_build "$(standin 999.20.01 1)" --generate-key
  assert_failure 2
  assert_output --partial "already has its signing key"
}

@test "repo: --key names an existing secret key for a new repository; one that is not there is refused (16)" {
  local fpr
  fpr=$(new_key "fleet <fleet@example.invalid>")
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --key "fleet@example.invalid" --suite p2p --url https://apt.example.org/p2p/
  assert_success
  run gpg --batch --with-colons --show-keys "${REPO}/nvidia-p2p-archive-keyring.gpg"
  assert_output --partial ":${fpr}:"
  run cat "${REPO}/nvidia-p2p.sources"
  assert_line "URIs: https://apt.example.org/p2p"
  assert_line "Suites: p2p"
  assert_file_exist "${REPO}/dists/p2p/InRelease"
  run_build repo "${BATS_TEST_TMPDIR}/repo2" "$(standin "${FIXTURE_TAG}" 1)" --key nobody@example.invalid
  assert_failure 16
  assert_output --partial "no secret key 'nobody@example.invalid'"
  assert_not_exist "${BATS_TEST_TMPDIR}/repo2"
}

@test "repo: usage errors (2) and unknown tags (3) stop before anything is written" {
  repo_build "${FIXTURE_TAG}"
  assert_failure 2
  assert_output --partial "a new repository needs a signing key"
  repo_build
  assert_failure 2
  assert_output --partial "at least one tag or .deb"
  repo_build "${FIXTURE_TAG}" --key a --generate-key
  assert_failure 2
  repo_build "${FIXTURE_TAG}" --generate-key --suite Bad/Suite
  assert_failure 2
  repo_build "${FIXTURE_TAG}" --generate-key --url ftp://x
  assert_failure 2
  repo_build "${FIXTURE_TAG}" --generate-key --revision x
  assert_failure 2
  repo_build "$(standin "${FIXTURE_TAG}" 1 nvidia-kernel-dkms)" --generate-key
  assert_failure 2
  assert_output --partial "not nvidia-p2p-dkms"
  printf 'not a deb\n' >"${BATS_TEST_TMPDIR}/junk.deb"
  repo_build "${BATS_TEST_TMPDIR}/junk.deb" --generate-key
  assert_failure 2
  assert_output --partial "not a Debian package"
  repo_build 1.2.3 --generate-key
  assert_failure 3
  repo_build "$(standin 1.2.3 1)" --generate-key
  assert_failure 3
  assert_not_exist "${REPO}"
  # no key was made
  run find "${GNUPGHOME}" -name '*.key'
  assert_output ""
  GNUPGHOME="${BATS_TEST_TMPDIR}/none" repo_build "${FIXTURE_TAG}" --key a
  assert_failure 16
  assert_output --partial "GNUPGHOME=${BATS_TEST_TMPDIR}/none is not a directory"
}

@test "repo --dry-run plans and writes nothing; help documents the options and the client's commands" {
  run_build --dry-run repo "${REPO}" "${FIXTURE_TAG}" --generate-key
  assert_success
  assert_line --partial "would build nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb"
  assert_line --partial "a new ed25519 key"
  assert_not_exist "${REPO}"
  run_build help repo
  assert_success
  local opt
  for opt in --key --generate-key --suite --url --revision --source --no-ccache; do
    assert_output --partial "  ${opt}"
  done
  assert_output --partial "apt install nvidia-p2p-dkms"
  run_build --help
  assert_output --partial "repo <dir> <tag>..."
}

@test "repo: what it cannot work with stops it: a file for the directory (2), an unreadable published key (16), a second run (11)" {
  : >"${BATS_TEST_TMPDIR}/file"
  run_build repo "${BATS_TEST_TMPDIR}/file" "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_failure 2
  assert_output --partial "exists and is not a directory"
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  exec {fd}>"${REPO}/.lock"
  flock -n "${fd}"
  repo_build "$(standin 999.20.01 1)"
  assert_failure 11
  assert_output --partial "${REPO}/.lock"
  exec {fd}>&-
  assert_not_exist "${POOL}/nvidia-p2p-dkms_999.20.01-1_amd64.deb"
  printf 'not a key\n' >"${REPO}/nvidia-p2p-archive-keyring.gpg"
  repo_build "$(standin 999.20.01 1)"
  assert_failure 16
  assert_output --partial "holds no public key gpg can read"
}

@test "repo: indexes that fail their own check are not published (16); the package the run added goes again" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  local before
  before=$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)
  stub gpgv - <<'STUB'
exit 1
STUB
  repo_build "$(standin 999.20.01 1)"
  assert_failure 16
  assert_output --partial "do not verify against the exported public key; nothing was published"
  [[ "$(cd "${REPO}" && find . -type f -exec sha256sum {} + | sort)" == "${before}" ]]
}

@test "repo <dir> <newtag>: the distribution's new driver version joins the repository; older packages stay, the repository's key re-signs, suite and URL as published; pinned clients still resolve the old tag" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key --suite p2p --url https://apt.example.org/p2p
  assert_success
  local old inrelease
  old=$(sha256sum <"${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb")
  inrelease=$(stat -c %i "${REPO}/dists/p2p/InRelease")
  # the documented command: no --key, --suite or --url
  repo_build "$(standin 999.20.01 1)"
  assert_success
  assert_output --partial "nvidia-p2p-dkms_999.20.01-1_amd64.deb added"
  assert_output --partial "999.10.01-1, 999.20.01-1 published in ${REPO}, suite p2p"
  assert_line "${REPO}/nvidia-p2p.sources"
  [[ "$(sha256sum <"${POOL}/nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb")" == "${old}" ]]
  # signed again (a new file), with the published key, for the published suite and URL
  [[ "$(stat -c %i "${REPO}/dists/p2p/InRelease")" != "${inrelease}" ]]
  run gpgv --keyring "${REPO}/nvidia-p2p-archive-keyring.gpg" "${REPO}/dists/p2p/InRelease"
  assert_success
  assert_not_exist "${REPO}/dists/stable"
  run cat "${REPO}/nvidia-p2p.sources"
  assert_line "Suites: p2p"
  assert_line "URIs: https://apt.example.org/p2p"
  apt_client
  run apt-get "${APT_OPTS[@]}" update --error-on=any
  assert_success
  run apt-cache "${APT_OPTS[@]}" policy nvidia-p2p-dkms
  assert_line "  Candidate: 999.20.01-1"
  # a machine held on the old tag: an exact version, or a preferences pin
  run apt-get "${APT_OPTS[@]}" -s install nvidia-p2p-dkms=999.10.01-1
  assert_success
  assert_line --regexp '^Inst nvidia-p2p-dkms \(999\.10\.01-1 '
  printf 'Package: nvidia-p2p-dkms\nPin: version 999.10.01-*\nPin-Priority: 1001\n' >"${APT}/prefs/nvidia-p2p"
  run apt-cache "${APT_OPTS[@]}" policy nvidia-p2p-dkms
  assert_line "  Candidate: 999.10.01-1"
}

@test "repo: a package already in the repository is said and kept; with nothing new the run changes no file (exit 0); a new --url publishes again" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  local before
  before=$(tree "${REPO}")
  repo_build "$(standin "${FIXTURE_TAG}" 1)"
  assert_success
  assert_output --partial "nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb is in the repository already: kept"
  assert_output --partial "nothing new: ${FIXTURE_TAG}-1 published in ${REPO}, suite stable; the repository is unchanged"
  assert_line "${REPO}/nvidia-p2p.sources"
  [[ "$(tree "${REPO}")" == "${before}" ]]
  # a tag, not rebuilt
  repo_build "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache
  assert_success
  assert_output --partial "in the repository already: kept"
  assert_output --partial "the repository is unchanged"
  [[ "$(tree "${REPO}")" == "${before}" ]]
  # what clients read changes: published again
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --url https://apt.example.org/p2p
  assert_success
  refute_output --partial "unchanged"
  run grep '^URIs: ' "${REPO}/nvidia-p2p.sources"
  assert_output "URIs: https://apt.example.org/p2p"
  # another suite: said, and the .sources file names it
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --suite p2p
  assert_success
  assert_output --partial "names suite stable; this run publishes suite p2p"
  run grep '^Suites: ' "${REPO}/nvidia-p2p.sources"
  assert_output "Suites: p2p"
  assert_file_exist "${REPO}/dists/p2p/InRelease"
}

@test "repo: adding to a repository: an unsupported tag (3), a key not in gpg's keyring (16), a package with other content (16) change nothing" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  local before
  before=$(tree "${REPO}")
  repo_build 1.2.3
  assert_failure 3
  repo_build "$(standin 999.20.01 1)" 1.2.3
  assert_failure 3
  repo_build "$(standin 1.2.3 1)"
  assert_failure 3
  [[ "$(tree "${REPO}")" == "${before}" ]]
  mkdir -m 0700 "${BATS_TEST_TMPDIR}/empty"
  GNUPGHOME="${BATS_TEST_TMPDIR}/empty" run_build repo "${REPO}" "$(standin 999.20.01 1)"
  assert_failure 16
  assert_output --partial "is not in gpg's secret keyring"
  [[ "$(tree "${REPO}")" == "${before}" ]]
  repo_build "$(standin 999.20.01 1)" "$(standin "${FIXTURE_TAG}" 1 nvidia-p2p-dkms $'Depends: dkms\n')"
  assert_failure 16
  [[ "$(tree "${REPO}")" == "${before}" ]]
}

@test "repo: a directory that is not an nvidia-p2p repository is refused (2), nothing written into it; an empty one takes a new repository, and is emptied again when the run fails" {
  local other="${BATS_TEST_TMPDIR}/other" before
  mkdir -p "${other}/dists/stable"
  printf 'someone else\n' >"${other}/README"
  before=$(tree "${other}")
  run_build repo "${other}" "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_failure 2
  assert_output --partial "${other} is not an nvidia-p2p repository (no nvidia-p2p-archive-keyring.gpg) and not empty"
  [[ "$(tree "${other}")" == "${before}" ]]
  assert_not_exist "${other}/pool"
  run find "${GNUPGHOME}" -name '*.key'
  assert_output ""
  run_build --dry-run repo "${other}" "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_failure 2
  # an empty directory (a mount point, say): the repository goes into it
  mkdir "${REPO}"
  FAKE_OBJECTS_FAIL=1 repo_build "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-ccache --generate-key
  assert_failure 8
  assert_dir_exists "${REPO}"
  run find "${REPO}" -mindepth 1
  assert_output ""
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key
  assert_success
  assert_file_exist "${REPO}/dists/stable/InRelease"
}

@test "repo --dry-run on an existing repository: what is there is kept, what is new would be added; nothing changes" {
  repo_build "$(standin "${FIXTURE_TAG}" 1)" --generate-key --suite p2p
  assert_success
  local before
  before=$(tree "${REPO}")
  run_build --dry-run repo "${REPO}" "$(standin "${FIXTURE_TAG}" 1)" "$(standin 999.20.01 1)"
  assert_success
  assert_line "Plan for the repository ${REPO} (suite p2p), changing nothing:"
  assert_line "nvidia-p2p-dkms_${FIXTURE_TAG}-1_amd64.deb is in the repository already: kept"
  assert_line --partial "would add ${BATS_TEST_TMPDIR}/nvidia-p2p-dkms_999.20.01-1_amd64.deb"
  assert_line --partial "(the packages already there stay)"
  [[ "$(tree "${REPO}")" == "${before}" ]]
  run_build help repo
  assert_output --partial "build.sh repo <dir> <newtag>"
  assert_output --partial "apt update && apt full-upgrade"
}
