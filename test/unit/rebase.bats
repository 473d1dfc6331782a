#!/usr/bin/env bats
# rebase: a release versions.conf does not list, from git: per patch applies /
# left out / upstream / merged (three-way) / superseded (proven by builds) /
# conflict; fits, new family or a person; the mechanism check; bad sources,
# dry-run, a dirty data directory, and nothing half-written.

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

# The route patch's context line "{" changed upstream: fuzz 1, and a
# three-way merge places the hunk.
MOVED='s/^{$/{ \/* moved *\//'
# Upstream changed the line the route patch inserts after: a conflict.
CONFLICT='s/return mailbox();/return mailbox_v2();/'
# Upstream made the route patch's change itself.
UPSTREAM_ROUTE='s/        return mailbox();/        return mailbox();\n    if (type == 2)\n        return bar1();/'
# Upstream changed the line compat-0001 changes, in its own way.
OWN_RESIZE='s/pci_resize_resource(0, 1, 2)/pci_resize_resource(0, 1, 2, NULL)/'

@test "fits: every patch applies at fuzz 0 and compiles: the line is added, pins from git, a per-patch table" {
  fixture_release "${UP}" 999.30.01
  rebase 999.30.01 --source "${UP}"
  assert_success
  assert_output --partial "rebase 999.30.01: family 999 (three-way base 999.20.01), per patch:"
  assert_line --regexp '^  compat-0001-resize\.patch +applies +fuzz 0$'
  assert_line --regexp '^  p2p-0001-route\.patch +applies +fuzz 0$'
  assert_output --partial "rebase 999.30.01: fits family 999: every patch applies at fuzz 0"
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
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.30"
}

@test "fits: the tables made from versions.conf are regenerated in the data directory (ci/workflows/readme-table.sh --update)" {
  fixture_release "${UP}" 999.30.01
  mkdir -p "${NVP2P_DATA_DIR}/ci/workflows"
  # A stand-in that records how it was called and what versions.conf held then.
  cat >"${NVP2P_DATA_DIR}/ci/workflows/readme-table.sh" <<'STUB'
#!/usr/bin/env bash
printf '%s docs=%s\n' "$*" "${NVP2P_DOCS_DIR}" >>"${TABLES_LOG}"
grep -c '^999\.30\.01 ' "${NVP2P_DOCS_DIR}/versions.conf" >>"${TABLES_LOG}"
STUB
  export TABLES_LOG="${BATS_TEST_TMPDIR}/tables.log"
  chmod +x "${NVP2P_DATA_DIR}/ci/workflows/readme-table.sh"
  rebase 999.30.01 --source "${UP}"
  assert_success
  run cat "${BATS_TEST_TMPDIR}/tables.log"
  assert_line "--update docs=${NVP2P_DATA_DIR}"
  assert_line "1"
}

@test "merged: context moved, a three-way merge on the base places the hunk; new family refreshed at fuzz 0, diffed, built" {
  fixture_release "${UP}" 999.30.01 "${MOVED}"
  FAKE_KO_VERSION=999.30.01 rebase 999.30.01 --source "${UP}"
  assert_success
  assert_line --regexp '^  p2p-0001-route\.patch +merged +three-way merge on 999\.20\.01, refreshed by quilt at fuzz 0$'
  assert_output --partial "rebase 999.30.01: family 999 needs changes for 999.30.01 (merged: p2p-0001): new family 999.30"
  assert_output --partial "+++ 999.30/p2p-0001-route.patch"
  assert_output --partial "+ { /* moved */"
  local new="${NVP2P_DATA_DIR}/patches/999.30"
  assert_file_exist "${new}/p2p-0001-route.patch"
  assert_file_exist "${new}/modprobe.conf"
  run grep -c -F ' { /* moved */' "${new}/p2p-0001-route.patch"
  assert_output 1
  run grep '^X-Refreshed-From: family 999, three-way merge on 999\.20\.01, by build.sh rebase 999.30.01$' "${new}/p2p-0001-route.patch"
  assert_success
  # Written by quilt: a/ b/ labels, no index lines, no timestamps.
  run grep -c -E '^(--- a/|\+\+\+ b/)src/nvidia/kern_bus\.c$' "${new}/p2p-0001-route.patch"
  assert_output 2
  # The provenance and per-patch table head dropped.conf; nothing dropped.
  run grep -E '^#: ' "${new}/dropped.conf"
  assert_output --partial "#: Family 999.30: written by build.sh rebase 999.30.01 on"
  assert_output --regexp '#:   p2p-0001-route\.patch +merged'
  # A patch that applied is kept as it was.
  run cmp "${FIX}/data/patches/999/compat-0001-resize.patch" "${new}/compat-0001-resize.patch"
  assert_success
  run grep '^999\.30\.01 ' "${NVP2P_DATA_DIR}/versions.conf"
  assert_output --regexp "^999\.30\.01 +999\.30 .* apply,compile,build:6\.1$"
  assert_file_exist "${WORK}/999.30.01/modules-${FIXTURE_KREL}/nvidia.ko"
  # The old family is untouched and the new one applies at fuzz 0 from now on.
  run diff -r "${FIX}/data/patches/999" "${NVP2P_DATA_DIR}/patches/999"
  assert_success
  run_build patch 999.30.01 --out "${BATS_TEST_TMPDIR}/again"
  assert_success
  run grep -c -F 'return bar1();' "${BATS_TEST_TMPDIR}/again/src/nvidia/kern_bus.c"
  assert_output 1
}

@test "upstream: a patch whose result the release already holds is dropped, with the reason, in a new family" {
  fixture_release "${UP}" 999.30.01 "${UPSTREAM_ROUTE}"
  FAKE_KO_VERSION=999.30.01 rebase 999.30.01 --source "${UP}"
  assert_success
  assert_line --regexp '^  p2p-0001-route\.patch +upstream +it reverse-applies at fuzz 0: 999\.30\.01 already holds its result$'
  local new="${NVP2P_DATA_DIR}/patches/999.30"
  assert_not_exist "${new}/p2p-0001-route.patch"
  run grep '^p2p-0001-route\.patch ' "${new}/dropped.conf"
  assert_output "p2p-0001-route.patch  999.30.01 already holds its result (it reverse-applies at fuzz 0); dropped by build.sh rebase 999.30.01"
  run_build list
  assert_success
}

@test "conflict: exit 7, every patch reported, the hunk's file, function and what is gone named, the work tree kept, nothing added" {
  fixture_release "${UP}" 999.30.01 "${CONFLICT}"
  rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_line --regexp '^  compat-0001-resize\.patch +applies +fuzz 0$'
  assert_line --regexp "^  p2p-0001-route\.patch +conflict +does not merge with upstream's changes \(src/nvidia/kern_bus\.c\)$"
  assert_output --partial "a person is needed for p2p-0001-route.patch"
  assert_output --partial "src/nvidia/kern_bus.c, hunk 1: belongs near line 2, in kbus()"
  assert_output --partial "no longer in the file:         return mailbox();"
  assert_output --partial "Nothing was added to versions.conf or patches/."
  assert_file_exist "${WORK}/rebase-999.30.01/rejects/p2p-0001-route.patch/src/nvidia/kern_bus.c.rej"
  assert_file_exist "${WORK}/rebase-999.30.01/family/p2p-0001-route.patch"
  # The patches that applied are pushed in the kept tree.
  run grep -c -F 'pci_resize_resource(0, 1, 2, 0)' "${WORK}/rebase-999.30.01/tree/kernel-open/nvidia/nv-pci.c"
  assert_output 1
  versions_unchanged
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.30"
}

@test "conflict: after a manual port, --family adopts the hand-made family" {
  fixture_release "${UP}" 999.30.01 "${CONFLICT}"
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

@test "mechanism: a function a P2P patch changes is no longer called where it was: a person, before anything is tried" {
  fixture_release "${UP}" 999.30.01 's/return kbus(regRead(NV_REG_STR_RM_FORCE_P2P_TYPE));/return regRead(NV_REG_STR_RM_FORCE_P2P_TYPE);/' src/nvidia/p2p_caps.c
  rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "the P2P mechanism family 999 relies on moved between 999.20.01 and 999.30.01:"
  assert_output --partial "kbus (changed by p2p-0001-route) is no longer referenced in src/nvidia/p2p_caps.c, as it was in 999.20.01"
  refute_output --partial "per patch:"
  versions_unchanged
}

@test "mechanism: a registry key no longer read where it was, or read nowhere, stops the rebase" {
  fixture_release "${UP}" 999.30.01 's/NV_REG_STR_RM_FORCE_P2P_TYPE)/NV_REG_STR_RM_OTHER)/' src/nvidia/p2p_caps.c
  rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "NV_REG_STR_RM_FORCE_P2P_TYPE (registry key of NV_REG_STR_RM_FORCE_P2P_TYPE_BAR1P2P) is no longer referenced in src/nvidia/p2p_caps.c"
  fixture_release "${UP}" 999.40.01 's/"RMForceP2PType"/"RMForceP2PKind"/' src/nvidia/interface/nvrm_registry.h
  rebase 999.40.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "registry key RMForceP2PType (set by modprobe.conf) is read nowhere in 999.40.01"
  versions_unchanged
}

@test "mechanism: a renumbered registry key (# requires:) stops the rebase" {
  fixture_release "${UP}" 999.30.01 's/BAR1P2P 0x00000002/BAR1P2P 0x00000003/' src/nvidia/interface/nvrm_registry.h
  rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_output --partial 'family 999 does not fit 999.30.01: src/nvidia/interface/nvrm_registry.h has no "#define NV_REG_STR_RM_FORCE_P2P_TYPE_BAR1P2P 0x00000002"'
  versions_unchanged
}

# compat_since SINCE: the fixture's compat patch says it is needed from SINCE on.
compat_since() {
  sed -i "s/^Last-Update: /X-Kernel-Since: $1\n&/" "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  cp "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch" "${BATS_TEST_TMPDIR}/compat.orig"
}

@test "superseded: upstream changed a compat patch's lines itself; dropped once the release builds without it for a kernel of its range" {
  compat_since 6.1
  fixture_release "${UP}" 999.30.01 "${OWN_RESIZE}" kernel-open/nvidia/nv-pci.c
  FAKE_KO_VERSION=999.30.01 rebase 999.30.01 --source "${UP}"
  assert_success
  assert_line --regexp '^  compat-0001-resize\.patch +superseded +upstream changed the same lines itself \(kernel-open/nvidia/nv-pci\.c\)$'
  assert_output --partial "prove     999.30.01 without compat-0001-resize.patch for ${FIXTURE_KREL}"
  local new="${NVP2P_DATA_DIR}/patches/999.30"
  assert_not_exist "${new}/compat-0001-resize.patch"
  run grep '^compat-0001-resize\.patch ' "${new}/dropped.conf"
  assert_output --regexp "^compat-0001-resize\.patch  superseded in 999\.30\.01: upstream changed the same lines itself \(kernel-open/nvidia/nv-pci\.c\); proven: without it 999\.30\.01 builds all five modules for ${FIXTURE_KREL} \(kernels 6\.1\+ at hand\) and the kernels\.conf rules pass \(build\.sh rebase 999\.30\.01, [0-9-]{10}\)$"
  # The proof was a build with the new family, through a run of build.sh.
  run grep -c '^make .*SYSOUT=' "${STUB_LOG}"
  assert_output --regexp '^[1-9]'
  run grep '^999\.30\.01 ' "${NVP2P_DATA_DIR}/versions.conf"
  assert_output --regexp " apply,compile,build:6\.1$"
  # dropped.conf's per-patch table says what the proof found
  run grep -E '^#:   compat-0001-resize\.patch' "${new}/dropped.conf"
  assert_output --partial "superseded upstream changed the same lines itself (kernel-open/nvidia/nv-pci.c); proven: "
}

@test "superseded: without a kernel of the patch's range at hand it cannot be proven: a person" {
  compat_since 7.0
  fixture_release "${UP}" 999.30.01 "${OWN_RESIZE}" kernel-open/nvidia/nv-pci.c
  rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "no kernel 7.0 or later at hand to prove it superseded (pass --chroot NAME:DIR or --kernel-src DIR)"
  versions_unchanged
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.30"
  # --dry-run says so before anything is built.
  run_build --root "${ROOT}" --dry-run rebase 999.30.01 --source "${UP}" --kernel "${FIXTURE_KREL}"
  assert_success
  assert_output --partial "would need a person: no kernel 7.0 or later at hand to prove compat-0001-resize.patch superseded"
}

@test "superseded: a chroot's kernel proves it (the build runs inside, the lock handed down); the tested column says so" {
  compat_since 7.0
  chroot_standin 7.2.0-99-test
  fixture_kernel "${ROOT}" 7.2.0-99-test
  fixture_release "${UP}" 999.30.01 "${OWN_RESIZE}" kernel-open/nvidia/nv-pci.c
  FAKE_KO_VERSION=999.30.01 NVP2P_CHROOT_SH="${BATS_TEST_TMPDIR}/chroot-standin" \
    rebase 999.30.01 --source "${UP}" --chroot "7.2:${BATS_TEST_TMPDIR}/chroots"
  assert_success
  assert_output --partial "proven: without it 999.30.01 builds all five modules for 7.2.0-99-test (kernels 7.0+ at hand)"
  run grep '^chroot.sh run 7.2 ' "${STUB_LOG}"
  assert_output --regexp "NVP2P_HELD_LOCKS=([^ ]*:)?${CACHE}(:[^ ]*)? "
  assert_output --regexp "build 999\.30\.01 (--no-ccache )?--kernel 7\.2\.0-99-test"
  run grep '^999\.30\.01 ' "${NVP2P_DATA_DIR}/versions.conf"
  assert_output --regexp " apply,compile,build:6\.1,build:7\.2$"
}

@test "superseded: a release that fails to build without it, or breaks a kernels.conf rule, keeps it a conflict" {
  compat_since 6.1
  fixture_release "${UP}" 999.30.01 "${OWN_RESIZE}" kernel-open/nvidia/nv-pci.c
  FAKE_MAKE_FAIL=1 rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "without it 999.30.01 fails for ${FIXTURE_KREL}"
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.30"
  printf '6.1 kernel-open/nvidia/nv-pci.c forbids NULL\\) the fixture reason\n' >"${NVP2P_DATA_DIR}/kernels.conf"
  FAKE_KO_VERSION=999.30.01 rebase 999.30.01 --source "${UP}"
  assert_failure 7
  assert_output --partial "cannot be built for kernel ${FIXTURE_KREL}: Linux 6.1+: the fixture reason"
  versions_unchanged
}

@test "left out: a compat fix the release has (X-Applied-Upstream-If) keeps it in the family; dropped.conf names it in a new family" {
  sed -i 's/^Last-Update: /X-Applied-Upstream-If: kernel-open\/nvidia\/nv-pci.c NULL)\n&/' "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  fixture_release "${UP}" 999.30.01 "${OWN_RESIZE}" kernel-open/nvidia/nv-pci.c
  run bash -c "cd '${BATS_TEST_TMPDIR}' && git clone -q '${UP}' wt && cd wt && git checkout -q 999.30.01 && sed -i 's/^{\$/{ \\/* moved *\\//' src/nvidia/kern_bus.c &&
    sed -i 's/999.30.01/999.40.01/' version.mk && git -c user.name=t -c user.email=t@t commit -q -a -m x && git -c user.name=t -c user.email=t@t tag -a -m x 999.40.01 && git push -q origin refs/tags/999.40.01"
  assert_success
  rebase 999.30.01 --source "${UP}"
  assert_success
  assert_line --regexp "^  compat-0001-resize\.patch +left out +999\.30\.01 already has the fix: kernel-open/nvidia/nv-pci\.c has 'NULL\)' \(X-Applied-Upstream-If\)$"
  assert_output --partial "fits family 999"
  FAKE_KO_VERSION=999.40.01 rebase 999.40.01 --source "${UP}"
  assert_success
  run grep '^compat-0001-resize\.patch ' "${NVP2P_DATA_DIR}/patches/999.40/dropped.conf"
  assert_output --partial "upstream has it in 999.40.01: kernel-open/nvidia/nv-pci.c has 'NULL)' (X-Applied-Upstream-If); dropped by build.sh rebase 999.40.01"
}

@test "--dry-run prints the same per-patch table and changes nothing" {
  fixture_release "${UP}" 999.30.01
  fixture_release "${UP}" 999.40.01 "${MOVED}"
  fixture_release "${UP}" 999.50.01 "${CONFLICT}"
  run_build --dry-run rebase 999.30.01 --source "${UP}"
  assert_success
  assert_output --partial "would compile the changed units and add 999.30.01"
  run_build --dry-run rebase 999.40.01 --source "${UP}"
  assert_success
  assert_line --regexp '^  p2p-0001-route\.patch +merged '
  assert_output --partial "would write patches/999.40"
  run_build --dry-run rebase 999.50.01 --source "${UP}"
  assert_failure 7
  assert_line --regexp '^  p2p-0001-route\.patch +conflict '
  versions_unchanged
  assert_not_exist "${CACHE}/src"
  assert_not_exist "${WORK}"
  assert_not_exist "${NVP2P_DATA_DIR}/patches/999.40"
}

@test "a data directory that is a git work tree with uncommitted changes where rebase writes is refused (10)" {
  fixture_release "${UP}" 999.30.01
  git -C "${NVP2P_DATA_DIR}" init -q
  git -C "${NVP2P_DATA_DIR}" -c user.name=t -c user.email=t@t add -A
  git -C "${NVP2P_DATA_DIR}" -c user.name=t -c user.email=t@t commit -q -m data
  printf '# local edit\n' >>"${NVP2P_DATA_DIR}/patches/999/modprobe.conf"
  rebase 999.30.01 --source "${UP}"
  assert_failure 10
  assert_output --partial "uncommitted changes where rebase writes"
  assert_output --partial "patches/999/modprobe.conf"
  git -C "${NVP2P_DATA_DIR}" checkout -q -- patches
  rebase 999.30.01 --source "${UP}"
  assert_success
}

@test "a bundle file is a source; a tarball or tree is not (the pins need the git tag)" {
  fixture_release "${UP}" 999.30.01
  git --git-dir="${UP}" bundle create -q "${BATS_TEST_TMPDIR}/up.bundle" --all
  rebase 999.30.01 --source "${BATS_TEST_TMPDIR}/up.bundle"
  assert_success
  # The base tag came along for the three-way merge.
  assert_output --partial "three-way base 999.20.01"
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
  # an older tag the source lacks is no future release
  run_build rebase 999.15.01 --source "${UP}"
  assert_failure 5
  assert_output --partial "has no tag 999.15.01 (newest there: 999.30.01; no release 999.15.01 among the older ones)"
  refute_output --partial "not released yet"
  versions_unchanged
  # no workspace is left behind for a tag that never came
  assert_not_exist "${WORK}/rebase-999.15.01"
  assert_not_exist "${WORK}/rebase-999.90.01"
}

@test "without --source the tag and its base are fetched (from GitHub, here a stand-in) into the cache's repository" {
  fixture_release "${UP}" 999.30.01
  NVP2P_UPSTREAM_GIT="${UP}" rebase 999.30.01
  assert_success
  assert_output --partial "three-way base 999.20.01"
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
  run_build rebase 999.30.01 --chroot nocolon
  assert_failure 2
  assert_output --partial "--chroot takes NAME:DIR"
  run_build rebase 999.30.01 --commit
  assert_failure 2
  assert_output --partial "--list and --commit go with --new"
  run_build rebase
  assert_failure 2
}

@test "two rebases at once: the second exits 11 while the first holds the data directory; nothing changed" {
  fixture_release "${UP}" 999.30.01
  (
    exec 9<"${NVP2P_DATA_DIR}"
    flock 9
    touch "${BATS_TEST_TMPDIR}/locked"
    sleep 5
  ) &
  local holder=$!
  while [[ ! -e ${BATS_TEST_TMPDIR}/locked ]]; do sleep 0.1; done
  rebase 999.30.01 --source "${UP}"
  kill "${holder}" 2>/dev/null || true
  assert_failure 11
  assert_output --partial "another rebase holds the lock ${NVP2P_DATA_DIR}"
  versions_unchanged
}

@test "interrupted between writing the new family and versions.conf: the family is removed again" {
  fixture_release "${UP}" 999.30.01 "${MOVED}"
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
