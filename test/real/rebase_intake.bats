#!/usr/bin/env bats
# The unattended intake of new releases with the real upstream: a project
# repository (this working tree without the releases listed in NEW_TAGS and
# without the family only they use) and an "upstream" repository (the
# bundle's tags without NEW_TAGS) in local bare repositories; upstream gains
# the NEW_TAGS; ci/workflows/intake.sh (the scheduled job) runs `build.sh rebase --new
# --commit` in a clone of the project and pushes the branch intake/upstream.
# (Releases after them, LATER_TAGS, are left out of both.) The round trip:
# the branch holds one commit per release, nothing was pushed
# to main, and the releases reach the families and pins that versions.conf and
# patches/ have for them, the new family tree-for-tree (595.71.05 patched with
# it is the tree patched with the committed family, and it drops the same
# patches); the superseded compat patch is proven by full builds for Debian's
# 7.2 and 7.3 kernels in the chroots, every other release by gate (a).
#
# Heavy (two full builds in the chroots and gate (a) of five releases: about
# 35 minutes cold, 12 with warm ccaches), so it takes turns with the other
# heavy tests (dkms_record.bash): a full pass is recorded with the digest of
# its inputs (build.sh, lib/, ci/workflows/intake.sh, the chroot scripts, this file, the
# series and the families of NEW_TAGS, their pins, the chroots' packages) and,
# for INTAKE_MAX_AGE_DAYS, SKIPs with that pass's date
# (NVP2P_TEST_INTAKE=always runs it); it SKIPs, with the reason, where it
# cannot run (no root, no chroots, no bundle, no kernel headers) or the time
# before NVP2P_TEST_DEADLINE does not hold it.

load ../test_helper
load dkms_record

# The releases taken in by build.sh rebase --new (2026-11-26), oldest first,
# and the family written for them.
NEW_TAGS="535.309.01 580.159.03 580.159.04 595.58.03 595.71.05"
NEW_FAMILY=595.71
# Releases after them (taken in on 2026-11-27, one into family NEW_FAMILY):
# left out of both repositories, so that the round trip stays the one above.
LATER_TAGS="610.43.02 610.43.03 610.57.04"
LATER_FAMILY=610
INTAKE_NEED_MIN=35
INTAKE_MAX_AGE_DAYS=7

setup_file() {
  export REPO_ROOT="${BATS_TEST_DIRNAME}/../.."
  export I_CACHE="${NVP2P_TEST_CACHE:-${BATS_FILE_TMPDIR}/cache}"
  export I_CHROOTS="${NVP2P_TEST_CHROOTS:-${I_CACHE}/chroots}"
  # a fixed path, so that ccache hits from one run to the next
  export I_WORK="${NVP2P_TEST_WORK:-${BATS_FILE_TMPDIR}/work}-intake"
  export I_DIR="${BATS_FILE_TMPDIR}/intake" I_SKIP="" I_RC=0 I_OUT
  I_OUT="${BATS_FILE_TMPDIR}/intake.out"
  mkdir -p "${I_CACHE}" "${I_DIR}"
  intake_cannot_run
  [[ -z ${I_SKIP} ]] || return 0
  intake_run
}

# intake_cannot_run: I_SKIP, why not here, or nothing; I_GIT, I_K61,
# I_RECORD, I_DIGEST.
intake_cannot_run() {
  local turns="${I_CACHE}/heavy-turns" c
  I_SKIP=""
  [[ "$(id -u)" == 0 ]] || { I_SKIP="needs root (the proof builds run in chroots)" && return 0; }
  I_GIT=$(real_git_dir "${I_CACHE}") || { I_SKIP=${I_GIT} && return 0; }
  I_K61=$(find /lib/modules -mindepth 2 -maxdepth 2 -name build -printf '%h\n' 2>/dev/null | xargs -r -n 1 basename | sort -V | head -n 1)
  [[ -n ${I_K61} ]] || { I_SKIP="no kernel headers installed (Debian: linux-headers-amd64)" && return 0; }
  for c in 7.2 7.3; do
    [[ -d ${I_CHROOTS}/${c}/root ]] ||
      { I_SKIP="chroot ${c} not made (ci/setup/chroot.sh make ${c} ${I_CHROOTS}; real_source.bats makes it when time allows)" && return 0; }
  done
  I_RECORD="${I_CACHE}/rebase-intake-passed"
  I_DIGEST=$(intake_digest) || { I_SKIP="a release of NEW_TAGS is not in versions.conf" && return 0; }
  export I_GIT I_K61 I_RECORD I_DIGEST
  I_SKIP=$(heavy_gate "${turns}" rebase-intake "${INTAKE_NEED_MIN}" "${I_RECORD}" "${I_DIGEST}" "${INTAKE_MAX_AGE_DAYS}" NVP2P_TEST_INTAKE)
}

# intake_digest: the inputs digest (see the header).
intake_digest() {
  {
    tree_digest "${REPO_ROOT}" "${I_CHROOTS}/7.2/root" "${NEW_TAGS}" ci/workflows/intake.sh test/real/rebase_intake.bats || return 1
    sha256sum <"${I_CHROOTS}/7.3/root/var/lib/dpkg/status"
  } | sha256sum | cut -d' ' -f1
}

# intake_run: the repositories, upstream gaining NEW_TAGS, ci/workflows/intake.sh.
intake_run() {
  local wt="${I_DIR}/wt" t
  rm -rf "${I_DIR:?}"/* "${I_WORK}"
  mkdir -p "${wt}"
  # The project: this working tree, without NEW_TAGS and their new family.
  (cd "${REPO_ROOT}" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "${wt}")
  for t in ${NEW_TAGS} ${LATER_TAGS}; do sed -i "/^${t//./\\.} /d" "${wt}/versions.conf"; done
  rm -rf "${wt}/patches/${NEW_FAMILY}" "${wt}/patches/${LATER_FAMILY}"
  "${wt}/ci/workflows/gen-workflow.sh"
  git -C "${wt}" init -q -b main
  git -C "${wt}" -c user.name=t -c user.email=t@t add -A
  git -C "${wt}" -c user.name=t -c user.email=t@t commit -q -m "project without ${NEW_TAGS}"
  git clone -q --bare "${wt}" "${I_DIR}/project.git"
  git --git-dir="${I_DIR}/project.git" rev-parse main >"${I_DIR}/main.before"
  # Upstream without NEW_TAGS, then NVIDIA publishes them.
  git clone -q --bare "${I_GIT}" "${I_DIR}/upstream.git"
  for t in ${NEW_TAGS} ${LATER_TAGS}; do git --git-dir="${I_DIR}/upstream.git" tag -d "${t}" >/dev/null; done
  for t in ${NEW_TAGS}; do
    git --git-dir="${I_DIR}/upstream.git" fetch -q "${I_GIT}" "refs/tags/${t}:refs/tags/${t}"
  done
  I_RC=0
  "${REPO_ROOT}/ci/workflows/intake.sh" --upstream "${I_DIR}/upstream.git" --remote "${I_DIR}/project.git" \
    --cache-dir "${I_CACHE}" --work-dir "${I_WORK}" -- --kernel "${I_K61}" --units-only \
    --chroot "7.2:${I_CHROOTS}" --chroot "7.3:${I_CHROOTS}" >"${I_OUT}" 2>&1 || I_RC=$?
  export I_RC
  git clone -q --branch intake/upstream "${I_DIR}/project.git" "${I_DIR}/result" 2>/dev/null || true
  # Recorded once every check below passed (the last test writes it).
}

setup() {
  [[ -z ${I_SKIP} ]] || skip "${I_SKIP}"
}

# checked NAME: this check passed (the last test counts them).
checked() {
  printf '%s\n' "$1" >>"${I_DIR}/checked"
}

# patch_names DIR: the .patch files of a family directory.
patch_names() {
  find "$1" -maxdepth 1 -name '*.patch' -printf '%f\n' | sort
}

@test "intake: ci/workflows/intake.sh took in every new release (exit 0) and pushed one commit per release to intake/upstream, main untouched" {
  [[ ${I_RC} -eq 0 ]] || fail "ci/workflows/intake.sh exit ${I_RC}: $(tail -n 40 "${I_OUT}")"
  run git --git-dir="${I_DIR}/project.git" log --reverse --format=%s main..intake/upstream
  assert_output "$(for t in ${NEW_TAGS}; do
    case ${t} in
    595.71.05) echo "patches/${NEW_FAMILY}: new family for ${t} (build.sh rebase)" ;;
    *) echo "versions.conf: ${t} in family $(awk -v t="${t}" '$1 == t { print $2 }' "${REPO_ROOT}/versions.conf") (build.sh rebase: fits)" ;;
    esac
  done)"
  assert_equal "$(git --git-dir="${I_DIR}/project.git" rev-parse main)" "$(cat "${I_DIR}/main.before")"
  checked commits
}

@test "intake: the summary names each release's outcome" {
  run cat "${I_OUT}"
  assert_output --partial "rebase --new: 5 tags of ${I_DIR}/upstream.git that versions.conf lacked, oldest first:"
  assert_line --regexp '^  535\.309\.01 +fits +family 535: '
  assert_line --regexp '^  580\.159\.04 +fits +family 580-590: '
  assert_line --regexp '^  595\.58\.03 +fits +family 595: '
  assert_line --regexp "^  595\.71\.05 +new family +${NEW_FAMILY//./\\.} \(superseded: compat-0006; left-out: compat-0003\)$"
  assert_output --partial "fits: 4, new family: 1, needs a person: 0, failed: 0"
  assert_output --partial "intake: pushed intake/upstream (5 commits on main)"
  checked summary
}

@test "intake: each release has the family and the pins (commit, tree, core) versions.conf has for it" {
  local t
  for t in ${NEW_TAGS}; do
    assert_equal "$(awk -v t="${t}" '$1 == t { print $1, $2, $3, $4, $5 }' "${I_DIR}/result/versions.conf")" \
      "$(awk -v t="${t}" '$1 == t { print $1, $2, $3, $4, $5 }' "${REPO_ROOT}/versions.conf")"
  done
  checked pins
}

@test "intake: compat-0006 proven superseded by full builds for 7.2 and 7.3 in the chroots" {
  run grep '^compat-0006-pahole-gen-btf\.patch ' "${I_DIR}/result/patches/${NEW_FAMILY}/dropped.conf"
  assert_output --regexp "proven: without it 595\.71\.05 builds all five modules for 7\.2\.[^ ]+, 7\.3\.[^ ]+ \(kernels 7\.0\+ at hand\)"
  run awk '$1 == "595.71.05" { print $8 }' "${I_DIR}/result/versions.conf"
  assert_output "apply,compile,build:7.2,build:7.3"
  checked proof
}

@test "intake: the new family is the committed one tree for tree: 595.71.05 patched with either is the same, the same patches dropped" {
  local a="${BATS_TEST_TMPDIR}/a" b="${BATS_TEST_TMPDIR}/b"
  NVP2P_DATA_DIR="${I_DIR}/result" run "${REPO_ROOT}/build.sh" --cache-dir "${I_CACHE}" --work-dir "${BATS_TEST_TMPDIR}/w1" \
    patch 595.71.05 --out "${a}"
  assert_success
  run "${REPO_ROOT}/build.sh" --cache-dir "${I_CACHE}" --work-dir "${BATS_TEST_TMPDIR}/w2" patch 595.71.05 --out "${b}"
  assert_success
  run diff -r -q -x .pc -x .nvidia-p2p-patched -x .nvidia-p2p-manifest "${a}" "${b}"
  assert_success
  assert_equal "$(patch_names "${I_DIR}/result/patches/${NEW_FAMILY}")" "$(patch_names "${REPO_ROOT}/patches/${NEW_FAMILY}")"
  assert_equal "$(awk '!/^#/ && NF { print $1 }' "${I_DIR}/result/patches/${NEW_FAMILY}/dropped.conf" | sort)" \
    "$(awk '!/^#/ && NF { print $1 }' "${REPO_ROOT}/patches/${NEW_FAMILY}/dropped.conf" | sort)"
  checked family
}

@test "intake: every check passed: the pass is recorded with its inputs digest" {
  run sort -u "${I_DIR}/checked"
  if [[ "${output}" != $'commits\nfamily\npins\nproof\nsummary' ]]; then
    rm -f -- "${I_RECORD}"
    fail "not every check passed (passed: ${output//$'\n'/ }); no pass recorded"
  fi
  printf '%s %s\n' "$(date +%s)" "${I_DIGEST}" >"${I_RECORD}"
}
