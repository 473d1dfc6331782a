#!/usr/bin/env bats
# patch: quilt at fuzz 0, family rules, idempotency, failures leave nothing.

load ../test_helper

setup() {
  common_setup
  make_fixture
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream"
  assert_success
}

@test "patch applies the family's series and prints the tree" {
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  assert_line "${BATS_TEST_TMPDIR}/out"
  run grep -c 'pci_resize_resource(0, 1, 2, 0)' "${BATS_TEST_TMPDIR}/out/kernel-open/nvidia/nv-pci.c"
  assert_output 1
  run grep -c 'return bar1();' "${BATS_TEST_TMPDIR}/out/src/nvidia/kern_bus.c"
  assert_output 1
  assert_file_exist "${BATS_TEST_TMPDIR}/out/.nvidia-p2p-patched"
}

@test "quilt works in the patched tree and in copies of it (series kept inside .pc)" {
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  cp -a "${BATS_TEST_TMPDIR}/out" "${BATS_TEST_TMPDIR}/copy"
  rm -rf "${BATS_TEST_TMPDIR}/out"
  cd "${BATS_TEST_TMPDIR}/copy"
  run env QUILT_PATCHES="${NVP2P_DATA_DIR}/patches/999" quilt --quiltrc - pop -a
  assert_success
  run grep -c 'return bar1();' src/nvidia/kern_bus.c
  assert_output 0
  run grep -c 'pci_resize_resource(0, 1, 2)' kernel-open/nvidia/nv-pci.c
  assert_output 1
}

@test "quilt works in a patched tree after the checkout that patched it moved (no patches path kept in .pc)" {
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  assert_file_not_exist "${BATS_TEST_TMPDIR}/out/.pc/.quilt_patches"
  cp -a "${NVP2P_DATA_DIR}/patches/999" "${BATS_TEST_TMPDIR}/moved"
  mv "${NVP2P_DATA_DIR}/patches/999" "${BATS_TEST_TMPDIR}/gone"
  cp -a "${BATS_TEST_TMPDIR}/out" "${BATS_TEST_TMPDIR}/old"
  # A tree patched before this record was removed: quilt_run ignores it.
  printf '%s\n' "${BATS_TEST_TMPDIR}/gone" >"${BATS_TEST_TMPDIR}/old/.pc/.quilt_patches"
  (cd "${BATS_TEST_TMPDIR}/out" && QUILT_PATCHES="${BATS_TEST_TMPDIR}/moved" quilt --quiltrc - pop -q)
  run grep -c 'return bar1();' "${BATS_TEST_TMPDIR}/out/src/nvidia/kern_bus.c"
  assert_output 0
  rm -rf "${BATS_TEST_TMPDIR}/gone"
  run bash -c 'source "$1" && quilt_run "$2" "$3" nvidia-p2p.series pop -q' _ \
    "${REPO_ROOT}/build.sh" "${BATS_TEST_TMPDIR}/old" "${BATS_TEST_TMPDIR}/moved"
  assert_success
  run grep -c 'return bar1();' "${BATS_TEST_TMPDIR}/old/src/nvidia/kern_bus.c"
  assert_output 0
}

@test "the default output is <work>/<tag>/patched" {
  run_build patch "${FIXTURE_TAG}"
  assert_success
  assert_line "${WORK}/${FIXTURE_TAG}/patched"
}

@test "the cached pristine source is not modified by patching" {
  run_build patch "${FIXTURE_TAG}"
  assert_success
  run grep -c 'return bar1();' "${CACHE}/src/${FIXTURE_TAG}/src/nvidia/kern_bus.c"
  assert_output 0
}

@test "re-running patch with the same series is a no-op" {
  local inode
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  assert_file_exist "${BATS_TEST_TMPDIR}/out/.nvidia-p2p-manifest"
  inode=$(stat -c %i "${BATS_TEST_TMPDIR}/out")
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  assert_output --partial "already patched with this series"
  assert_equal "$(stat -c %i "${BATS_TEST_TMPDIR}/out")" "${inode}"
}

# flip_byte FILE: its first byte changed, its size kept.
flip_byte() {
  printf 'X' | dd of="$1" bs=1 seek=0 count=1 conv=notrunc status=none
}

@test "a patched tree changed since it was patched is refused (6), by name: a byte flipped, a file added, a file removed" {
  local out="${WORK}/${FIXTURE_TAG}/patched"
  run_build patch "${FIXTURE_TAG}"
  assert_success
  cp -a "${out}" "${BATS_TEST_TMPDIR}/pristine"
  flip_byte "${out}/kernel-open/nvidia/nv-pci.c"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 6
  assert_output --partial "build.sh: ${out} changed since it was patched (changed: kernel-open/nvidia/nv-pci.c)"
  assert_output --partial "Remove it (rm -rf -- ${out}) and run build.sh patch ${FIXTURE_TAG} again"
  refute_output --partial "already patched"
  # the tree is left as it is, for a person to look at
  run grep -c '^X' "${out}/kernel-open/nvidia/nv-pci.c"
  assert_output 1
  rm -rf "${out}" && cp -a "${BATS_TEST_TMPDIR}/pristine" "${out}"
  printf 'int x;\n' >"${out}/src/nvidia/extra.c"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 6
  assert_output --partial "changed since it was patched (added: src/nvidia/extra.c)"
  rm -rf "${out}" && cp -a "${BATS_TEST_TMPDIR}/pristine" "${out}"
  rm "${out}/src/nvidia/kern_bus.c"
  ln -s nowhere "${out}/src/nvidia/link"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 6
  assert_output --partial "changed since it was patched (added: src/nvidia/link; removed: src/nvidia/kern_bus.c)"
  # the recovery it names
  rm -rf -- "${out}"
  run_build patch "${FIXTURE_TAG}"
  assert_success
  run_build patch "${FIXTURE_TAG}"
  assert_success
  assert_output --partial "already patched with this series"
}

@test "a patched tree without a manifest (an older build.sh's) is patched again" {
  local out="${WORK}/${FIXTURE_TAG}/patched"
  run_build patch "${FIXTURE_TAG}"
  assert_success
  rm "${out}/.nvidia-p2p-manifest"
  flip_byte "${out}/kernel-open/nvidia/nv-pci.c"
  run_build patch "${FIXTURE_TAG}"
  assert_success
  assert_output --partial "has no manifest of its content: patching it again"
  assert_file_exist "${out}/.nvidia-p2p-manifest"
  run grep -c '^X' "${out}/kernel-open/nvidia/nv-pci.c"
  assert_output 0
}

@test "the manifest names every file of the tree with its sha256, and many changes are counted" {
  local out="${BATS_TEST_TMPDIR}/out" i
  run_build patch "${FIXTURE_TAG}" --out "${out}"
  assert_success
  run grep -c $'^kernel-open/nvidia/nv-pci.c\t'"$(sha256sum "${out}/kernel-open/nvidia/nv-pci.c" | cut -c1-64)"'$' "${out}/.nvidia-p2p-manifest"
  assert_output 1
  refute grep -q -e '^\.nvidia-p2p-' "${out}/.nvidia-p2p-manifest"
  for i in 1 2 3 4 5 6 7; do printf '%s\n' "${i}" >"${out}/new ${i}.c"; done
  run_build patch "${FIXTURE_TAG}" --out "${out}"
  assert_failure 6
  assert_output --partial "(added: new 1.c, new 2.c, new 3.c, new 4.c, new 5.c and 2 more)"
}

@test "a changed series redoes a tree this command patched" {
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  touch "${BATS_TEST_TMPDIR}/out/marker"
  printf '# refreshed\n' >>"${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch"
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  assert_not_exist "${BATS_TEST_TMPDIR}/out/marker"
}

@test "--out that exists and was not patched by build.sh is refused (2)" {
  mkdir -p "${BATS_TEST_TMPDIR}/mine"
  touch "${BATS_TEST_TMPDIR}/mine/precious"
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/mine"
  assert_failure 2
  assert_file_exist "${BATS_TEST_TMPDIR}/mine/precious"
}

@test "a patch that does not apply at fuzz 0 exits 7, shows the rejects and writes nothing" {
  # The context line next to the change no longer matches: no fuzz helps.
  sed -i 's/^         return mailbox();$/         return mailbox2();/' "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch"
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_failure 7
  assert_output --partial "p2p-0001-route.patch does not apply at fuzz 0"
  assert_output --partial "rejected hunks in src/nvidia/kern_bus.c"
  assert_output --partial "+        return bar1();"
  assert_not_exist "${BATS_TEST_TMPDIR}/out"
  assert_equal "$(find "${BATS_TEST_TMPDIR}" -maxdepth 1 -name '.tmp.*' | wc -l)" 0
}

@test "a patch that needs fuzz is refused even though GNU patch would take it" {
  # Change the outermost context line: GNU patch applies it with fuzz 1.
  sed -i 's/^ {$/ { \/* moved *\//' "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch"
  grep -q 'moved' "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch"
  (cd "${CACHE}/src/${FIXTURE_TAG}" && patch -p1 --dry-run -F2 <"${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch" >/dev/null)
  run_build patch "${FIXTURE_TAG}"
  assert_failure 7
}

@test "a family lacking a patch it does not name in dropped.conf is malformed (4)" {
  rm "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "lacks p2p-0001-route.patch and does not say why"
}

@test "a family may leave out a patch it names in dropped.conf with the reason" {
  rm "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  printf '# why\ncompat-0001-resize.patch   upstream has the 4-argument call in every tag of this family\n' \
    >"${NVP2P_DATA_DIR}/patches/999/dropped.conf"
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  run grep -c 'pci_resize_resource(0, 1, 2)' "${BATS_TEST_TMPDIR}/out/kernel-open/nvidia/nv-pci.c"
  assert_output 1
  run grep -c 'return bar1();' "${BATS_TEST_TMPDIR}/out/src/nvidia/kern_bus.c"
  assert_output 1
}

@test "dropped.conf: no reason, an unknown name, or a patch both present and dropped is malformed (4)" {
  printf 'compat-0001-resize.patch\n' >"${NVP2P_DATA_DIR}/patches/999/dropped.conf"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "compat-0001-resize.patch is dropped without a reason"
  printf 'p2p-0009-nothing.patch  not in series\n' >"${NVP2P_DATA_DIR}/patches/999/dropped.conf"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "'p2p-0009-nothing.patch' is not named in"
  printf 'p2p-0001-route.patch  upstream does it\n' >"${NVP2P_DATA_DIR}/patches/999/dropped.conf"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "has p2p-0001-route.patch and also names it in dropped.conf"
}

# add_header_field PATCH FIELD: insert a DEP-3 field before the diff.
add_header_field() {
  sed -i "1a $2" "$1"
}

@test "a compat patch is left out for a tag whose source already has the fix (X-Applied-Upstream-If)" {
  add_header_field "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch" \
    'X-Applied-Upstream-If: kernel-open/nvidia/nv-pci.c pci_resize_resource(0,'
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  run grep -c 'pci_resize_resource(0, 1, 2)' "${BATS_TEST_TMPDIR}/out/kernel-open/nvidia/nv-pci.c"
  assert_output 1
  run cat "${BATS_TEST_TMPDIR}/out/.pc/nvidia-p2p.series"
  assert_output "p2p-0001-route.patch"
}

@test "a compat patch is applied where the source lacks the string its X-Applied-Upstream-If names" {
  add_header_field "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch" \
    'X-Applied-Upstream-If: kernel-open/nvidia/nv-pci.c exclude_bars'
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  run grep -c 'pci_resize_resource(0, 1, 2, 0)' "${BATS_TEST_TMPDIR}/out/kernel-open/nvidia/nv-pci.c"
  assert_output 1
}

@test "a compat patch is left out for a tag that has no file its X-Applied-Upstream-If names (nothing to fix)" {
  add_header_field "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch" \
    'X-Applied-Upstream-If: kernel-open/nvidia/libspdm_shash.c NV_CRYPTO_TFM_CTX_ALIGNED_PRESENT'
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  run cat "${BATS_TEST_TMPDIR}/out/.pc/nvidia-p2p.series"
  assert_output "p2p-0001-route.patch"
}

@test "X-Applies-If: a compat patch is left out where the code it changes is not there, applied where it is" {
  add_header_field "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch" \
    'X-Applies-If: kernel-open/nvidia/nv-pci.c nv_resize_v2'
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  run cat "${BATS_TEST_TMPDIR}/out/.pc/nvidia-p2p.series"
  assert_output "p2p-0001-route.patch"
  sed -i 's/^X-Applies-If: .*/X-Applies-If: kernel-open\/nvidia\/nv-pci.c nv_resize(void)/' \
    "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out2"
  assert_success
  run cat "${BATS_TEST_TMPDIR}/out2/.pc/nvidia-p2p.series"
  assert_output $'compat-0001-resize.patch\np2p-0001-route.patch'
  run_build check "${FIXTURE_TAG}"
  assert_output --partial "compat-0001-resize.patch  (applied: kernel-open/nvidia/nv-pci.c has nv_resize(void))"
}

@test "check says of a compat patch what patch does with the cached source: applied, or left out and why" {
  local p="${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch"
  add_header_field "${p}" 'X-Applied-Upstream-If: kernel-open/nvidia/nv-pci.c exclude_bars'
  # not fetched yet: what decides
  run "${BUILD_SH}" --cache-dir "${BATS_TEST_TMPDIR}/empty" check "${FIXTURE_TAG}"
  assert_success
  assert_line "  compat-0001-resize.patch  (source not fetched yet: left out where kernel-open/nvidia/nv-pci.c has exclude_bars (upstream has the fix))"
  # the source lacks the fix: applied, and check says so
  run_build patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  run cat "${BATS_TEST_TMPDIR}/out/.pc/nvidia-p2p.series"
  assert_line compat-0001-resize.patch
  run_build check "${FIXTURE_TAG}"
  assert_success
  assert_line "  compat-0001-resize.patch  (applied: kernel-open/nvidia/nv-pci.c lacks exclude_bars, the fix upstream gets later)"
  refute_output --partial "left out where upstream has it"
  # the source has the fix: left out
  sed -i 's/^X-Applied-Upstream-If: .*/X-Applied-Upstream-If: kernel-open\/nvidia\/nv-pci.c pci_resize_resource(0,/' "${p}"
  run_build check "${FIXTURE_TAG}"
  assert_line "  compat-0001-resize.patch  (left out: upstream has the fix, kernel-open/nvidia/nv-pci.c has pci_resize_resource(0,)"
  # no such file: nothing to fix
  sed -i 's/^X-Applied-Upstream-If: .*/X-Applied-Upstream-If: kernel-open\/nvidia\/libspdm_shash.c X/' "${p}"
  run_build check "${FIXTURE_TAG}"
  assert_line "  compat-0001-resize.patch  (left out: the source has no kernel-open/nvidia/libspdm_shash.c, nothing to fix)"
  # X-Applies-If whose code is not there
  sed -i 's/^X-Applied-Upstream-If: .*/X-Applies-If: kernel-open\/nvidia\/nv-pci.c nv_resize_v2/' "${p}"
  run_build check "${FIXTURE_TAG}"
  assert_line "  compat-0001-resize.patch  (left out: kernel-open/nvidia/nv-pci.c lacks nv_resize_v2, the code it changes)"
}

@test "X-Applies-If on a p2p patch is refused (4)" {
  add_header_field "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch" 'X-Applies-If: src/nvidia/kern_bus.c mailbox'
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "X-Applies-If is for compat patches only"
}

@test "X-Applied-Upstream-If on a p2p patch, or malformed, is refused (4)" {
  add_header_field "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch" \
    'X-Applied-Upstream-If: src/nvidia/kern_bus.c mailbox'
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "X-Applied-Upstream-If is for compat patches only"
  cp "${FIX}/data/patches/999/p2p-0001-route.patch" "${NVP2P_DATA_DIR}/patches/999/"
  add_header_field "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch" 'X-Applied-Upstream-If: nv-pci.c'
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "needs '<file> <string>'"
}

@test "a patch file not named in series is malformed (4)" {
  cp "${NVP2P_DATA_DIR}/patches/999/p2p-0001-route.patch" "${NVP2P_DATA_DIR}/patches/999/p2p-0002-stray.patch"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "p2p-0002-stray.patch is not named in"
}

@test "a badly named entry in series is malformed (4)" {
  printf 'Fix-Stuff.diff\n' >>"${NVP2P_DATA_DIR}/series"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "bad patch name 'Fix-Stuff.diff'"
}

@test "a tag whose family directory is missing is malformed (4)" {
  sed -i 's/^999.10.01 999 /999.10.01 998 /' "${NVP2P_DATA_DIR}/versions.conf"
  run_build patch "${FIXTURE_TAG}"
  assert_failure 4
  assert_output --partial "no patch directory"
}

@test "patch --dry-run lists the series and changes nothing" {
  run_build --dry-run patch "${FIXTURE_TAG}" --out "${BATS_TEST_TMPDIR}/out"
  assert_success
  assert_output --partial "compat-0001-resize.patch"
  assert_output --partial "p2p-0001-route.patch"
  assert_not_exist "${BATS_TEST_TMPDIR}/out"
}

# --- the real series --------------------------------------------------------------

@test "every real patch has a DEP-3 header: Description, Author, Forwarded: not-needed, Last-Update" {
  local p
  for p in "${REPO_ROOT}"/patches/*/*.patch; do
    run sed -n '1,/^--- /p' "${p}"
    assert_line --regexp '^Description: .{10,}'
    assert_line --regexp '^Author: .+'
    assert_line 'Forwarded: not-needed'
    assert_line --regexp '^Last-Update: [0-9]{4}-[0-9]{2}-[0-9]{2}$'
  done
}

@test "real patches use a/ b/ paths without timestamps or index lines" {
  local p
  for p in "${REPO_ROOT}"/patches/*/*.patch; do
    run grep -E '^(--- |\+\+\+ )' "${p}"
    # a file the patch adds is "--- /dev/null", as quilt writes it
    refute_line --regexp '^--- [^a/]'
    refute_line --regexp '^--- /(.*[^l]|.{0,7}|.{9,})$'
    refute_line --regexp '^--- /[^d]'
    refute_line --regexp '^\+\+\+ [^b]'
    refute_line --regexp $'\t'
    run awk '/^--- \/dev\/null$/ { getline nxt; if (nxt !~ /^\+\+\+ b\//) print FILENAME ": " nxt }' "${p}"
    assert_output ""
    run grep -c -E '^--- /dev/null$' "${p}"
    if [[ ${output} -gt 0 ]]; then
      # only hunks that create the file: "@@ -0,0 +1,N @@"
      run awk '/^--- \/dev\/null$/ { getline; getline h; if (h !~ /^@@ -0,0 \+1(,[0-9]+)? @@/) print h }' "${p}"
      assert_output ""
    fi
    run grep -c -E '^(Index:|====)' "${p}"
    assert_output 0
  done
}

@test "real patches add no commented-out code blocks" {
  run grep -n -E '^\+.*(/\*.*(if|return|\{)|^\+\s*//\s*(if|return|nv|kbus|status)\b)' "${REPO_ROOT}"/patches/*/*.patch
  assert_failure
}

@test "every real family provides, or drops with a reason, every series patch, and has a modprobe.conf" {
  local fam name
  for fam in "${REPO_ROOT}"/patches/*/; do
    assert_file_exist "${fam}/modprobe.conf"
    while read -r name; do
      [[ -f ${fam}/${name} ]] && continue
      run grep -E "^${name//./\\.}[[:space:]]+[^[:space:]]" "${fam}/dropped.conf"
      assert_success
    done < <(grep -v -E '^\s*(#|$)' "${REPO_ROOT}/series")
  done
}

@test "p2p-0007 of every family tests the key that family's options select BAR1 P2P with" {
  local fam conf patch n=0
  for fam in "${REPO_ROOT}"/patches/*/; do
    conf="${fam}modprobe.conf"
    patch="${fam}p2p-0007-no-p2p-without-static-bar1.patch"
    assert_file_exist "${patch}"
    n=$((n + 1))
    if grep -q '^options nvidia .*[";]RMPcieP2PType=1[;"]' "${conf}"; then
      run grep -c -e '->pcieP2PType !=$' -e '^+        NV_REG_STR_RM_PCIEP2P_TYPE_BAR1)$' "${patch}"
      assert_output 2
      run grep -c 'forceP2PType' "${patch}"
      assert_output 0
    elif grep -q '^options nvidia .*[";]RMForceP2PType=2[;"]' "${conf}"; then
      run grep -c -e '->forceP2PType !=$' -e '^+        NV_REG_STR_RM_FORCE_P2P_TYPE_BAR1P2P)$' "${patch}"
      assert_output 2
      run grep -c 'pcieP2PType' "${patch}"
      assert_output 0
    else
      fail "${conf}: its options select BAR1 P2P with neither RMPcieP2PType=1 nor RMForceP2PType=2"
    fi
  done
  assert_equal "${n}" "$(awk '!/^#/ && NF { print $2 }' "${REPO_ROOT}/versions.conf" | sort -u | wc -l)"
}

@test "p2p-0008 in 570 and 575 maps the static BAR1 at the 512 MiB boundary above console and mailbox, and the size check counts it" {
  local fam patch
  for fam in 570 575; do
    patch="${REPO_ROOT}/patches/${fam}/p2p-0008-display-gpu-static-bar1-aligned.patch"
    assert_file_exist "${patch}"
    # kbusInitBar1_GM107 records the offset, kbusEnableStaticBar1Mapping_TU102 maps there, fixed
    run grep -c -e '^+        pKernelBus->bar1\[gfid\].staticBar1.startOffset =$' \
      -e '^+            RM_ALIGN_UP(consoleSize + pKernelBus->p2pPcie.writeMailboxTotalSize,$' \
      -e '^+    NvU64 bar1Offset = pKernelBus->bar1\[gfid\].staticBar1.startOffset;$' \
      -e '^+    NvU32 mapFlags = BUS_MAP_FB_FLAGS_MAP_UNICAST | BUS_MAP_FB_FLAGS_MAP_OFFSET_FIXED;$' \
      -e '^+            mapFlags,$' "${patch}"
    assert_output 5
    # kbusIsStaticBar1Supported_TU102: the same offset in AUTO (and 570's ONLY_GPU)
    run grep -c -e '^+    NvU64 staticBar1Offset  = RM_ALIGN_UP(consoleSize + mailboxSize, RM_PAGE_SIZE_512M);$' \
      -e '^+ *requiredAutoBar1Size += staticBar1Offset;$' "${patch}"
    assert_output 2
    run grep -c '^- *requiredAutoBar1Size += consoleSize;$' "${patch}"
    assert_output 1
  done
  run grep -c '^+        ((bar1VASize - (doorbellAndMmioPrivSize + staticBar1Offset)) < fbSizeAligned))$' \
    "${REPO_ROOT}/patches/570/p2p-0008-display-gpu-static-bar1-aligned.patch"
  assert_output 1
  # every other family leaves it out with a reason
  for fam in "${REPO_ROOT}"/patches/*/; do
    [[ -f ${fam}p2p-0008-display-gpu-static-bar1-aligned.patch ]] && continue
    run grep -c '^p2p-0008-display-gpu-static-bar1-aligned.patch  not needed: ' "${fam}dropped.conf"
    assert_output 1
  done
}

@test "a dry run before the source is fetched lists every patch of the family and marks the ones the source decides" {
  add_header_field "${NVP2P_DATA_DIR}/patches/999/compat-0001-resize.patch" \
    'X-Applied-Upstream-If: kernel-open/nvidia/nv-pci.c pci_resize_resource(0,'
  rm -rf "${CACHE}/src"
  run_build patch "${FIXTURE_TAG}" --dry-run
  assert_success
  assert_output --partial "(not fetched yet)"
  assert_line "  compat-0001-resize.patch  (decided once the source is fetched: left out where upstream has the fix)"
  assert_line "  p2p-0001-route.patch"
  # once fetched, the source decides: this one has the fix
  run_build fetch "${FIXTURE_TAG}" --source "${FIX}/upstream" --no-run
  assert_success
  run_build patch "${FIXTURE_TAG}" --dry-run
  assert_success
  refute_output --partial "not fetched yet"
  refute_line --partial "compat-0001-resize.patch"
  assert_line "  p2p-0001-route.patch"
}

@test "Ctrl-C or SIGTERM at any point of patch is said (interrupted, 130) or the run completed; no temp tree is left" {
  local quilt d sig pid rc
  quilt=$(command -v quilt)
  # a slower quilt, so that signals land before, during and after it
  stub quilt - <<STUB
sleep 0.3
exec $(printf '%q' "${quilt}") "\$@"
STUB
  for sig in INT TERM; do
    for d in 0.03 0.08 0.15 0.3 0.5 0.7 0.9 1.2; do
      rm -rf "${WORK}"
      # a terminal's Ctrl-C: SIGINT to the whole process group, which a
      # background job of bats would otherwise ignore
      setsid env --default-signal=INT "${BUILD_SH}" --cache-dir "${CACHE}" --work-dir "${WORK}" \
        patch "${FIXTURE_TAG}" >"${BATS_TEST_TMPDIR}/out" 2>&1 &
      pid=$!
      sleep "${d}"
      kill "-${sig}" -- "-${pid}" 2>/dev/null || true
      rc=0
      wait "${pid}" || rc=$?
      run cat "${BATS_TEST_TMPDIR}/out"
      if [[ ${rc} -eq 130 ]]; then
        assert_output --partial "build.sh: interrupted"
        assert_not_exist "${WORK}/${FIXTURE_TAG}/patched"
      else
        assert_equal "${rc}" 0
        assert_line "${WORK}/${FIXTURE_TAG}/patched"
      fi
      assert_equal "$(find "${WORK}" -name '.tmp.*' 2>/dev/null | wc -l)" 0
    done
  done
}
